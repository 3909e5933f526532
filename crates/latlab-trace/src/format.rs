//! An event's `events/<sys>/<name>/format` file, as a typed description.
//!
//! Only the `name:`, `ID:` and `field:` lines are read: the `print fmt` C expression is
//! needed to pretty-print, not to decode (libtraceevent's `event-parse.c` reads the same
//! lines first).

use crate::TraceError;

/// How a field's bytes are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldKind {
    /// An integer of the field's size (1, 2, 4 or 8 bytes), host byte order.
    Integer {
        /// Whether the kernel declares it signed.
        signed: bool,
    },
    /// A fixed `char name[N]` array holding a NUL-terminated string (`prev_comm`).
    Chars,
    /// A `__data_loc` string: a `u32` whose low half is the offset in the record and
    /// high half the length.
    DataLoc,
    /// A `__rel_loc` string: like [`FieldKind::DataLoc`], offset counted from the end
    /// of this field.
    RelLoc,
    /// Any other array, kept as raw bytes.
    Bytes,
}

/// One field of an event record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// The field's name, without array brackets (`prev_comm`).
    pub name: String,
    /// The C declaration as tracefs prints it (`char prev_comm[16]`).
    pub declaration: String,
    /// Offset from the start of the record, bytes.
    pub offset: usize,
    /// Size in the record, bytes.
    pub size: usize,
    /// How the bytes are read.
    pub kind: FieldKind,
}

/// The decoded `format` file of one event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventFormat {
    /// The event's name (`sched_switch`).
    pub name: String,
    /// The id the first `u16` of every record of this event carries.
    pub id: u16,
    /// Every field, the `common_*` ones first, in file order.
    pub fields: Vec<Field>,
}

impl EventFormat {
    /// Parses the text of a `format` file.
    pub fn parse(text: &str) -> Result<EventFormat, TraceError> {
        let mut name = None;
        let mut id = None;
        let mut fields = Vec::new();
        for line in text.lines().map(str::trim) {
            if let Some(value) = line.strip_prefix("name:") {
                name = Some(value.trim().to_owned());
            } else if let Some(value) = line.strip_prefix("ID:") {
                let value = value.trim();
                let problem = || description(&name, format!("ID {value:?} is not a u16"));
                id = Some(value.parse::<u16>().map_err(|_| problem())?);
            } else if line.starts_with("field:") {
                fields.push(parse_field(line).map_err(|problem| description(&name, problem))?);
            }
        }
        let missing = |what: &str| description(&name, format!("no {what} line"));
        let id = id.ok_or_else(|| missing("ID:"))?;
        if fields.is_empty() {
            return Err(missing("field:"));
        }
        let Some(name) = name else {
            return Err(missing("name:"));
        };
        Ok(EventFormat { name, id, fields })
    }

    /// The field of that name, if the event has one.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|field| field.name == name)
    }
}

fn description(event: &Option<String>, problem: String) -> TraceError {
    let event = event.as_deref().unwrap_or("an unnamed event");
    TraceError::Description {
        file: format!("format of {event}"),
        problem,
    }
}

/// Parses `field:<declaration>; offset:N; size:N; signed:N;`, also used for
/// `header_page`, whose lines have the same shape.
pub(crate) fn parse_field(line: &str) -> Result<Field, String> {
    let mut declaration = None;
    let (mut offset, mut size, mut signed) = (None, None, None);
    for part in line
        .split(';')
        .map(str::trim)
        .filter(|part| !part.is_empty())
    {
        let (key, value) = part
            .split_once(':')
            .ok_or_else(|| format!("{part:?} in {line:?} is not key:value"))?;
        let number = || {
            value
                .trim()
                .parse::<usize>()
                .map_err(|_| format!("{key} {value:?} in {line:?} is not a number"))
        };
        match key.trim() {
            "field" => declaration = Some(value.trim().to_owned()),
            "offset" => offset = Some(number()?),
            "size" => size = Some(number()?),
            "signed" => signed = Some(number()? != 0),
            _ => {}
        }
    }
    let declaration = declaration.ok_or_else(|| format!("no declaration in {line:?}"))?;
    let name = declaration
        .split_whitespace()
        .last()
        .map(|last| last.split('[').next().unwrap_or(last).to_owned())
        .filter(|name| !name.is_empty())
        .ok_or_else(|| format!("no field name in {line:?}"))?;
    let offset = offset.ok_or_else(|| format!("no offset in {line:?}"))?;
    let size = size.ok_or_else(|| format!("no size in {line:?}"))?;
    let kind = if declaration.starts_with("__data_loc") {
        FieldKind::DataLoc
    } else if declaration.starts_with("__rel_loc") {
        FieldKind::RelLoc
    } else if declaration.contains('[') || !matches!(size, 1 | 2 | 4 | 8) {
        if declaration.starts_with("char ") {
            FieldKind::Chars
        } else {
            FieldKind::Bytes
        }
    } else {
        FieldKind::Integer {
            signed: signed.unwrap_or(false),
        }
    };
    Ok(Field {
        name,
        declaration,
        offset,
        size,
        kind,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCHED_SWITCH: &str = include_str!("../tests/fixtures/sched_sched_switch.format");
    const IRQ_ENTRY: &str = include_str!("../tests/fixtures/irq_irq_handler_entry.format");

    #[test]
    fn sched_switch_fields_keep_offset_size_and_sign() {
        let format = EventFormat::parse(SCHED_SWITCH).unwrap();
        assert_eq!((format.name.as_str(), format.id), ("sched_switch", 372));
        assert_eq!(format.fields.len(), 11);
        let comm = format.field("prev_comm").unwrap();
        assert_eq!(
            (comm.offset, comm.size, comm.kind),
            (8, 16, FieldKind::Chars)
        );
        let state = format.field("prev_state").unwrap();
        assert_eq!(
            (state.offset, state.size, state.kind),
            (32, 8, FieldKind::Integer { signed: true })
        );
        let common_type = format.field("common_type").unwrap();
        assert_eq!(common_type.kind, FieldKind::Integer { signed: false });
    }

    #[test]
    fn data_loc_string_is_recognised() {
        let format = EventFormat::parse(IRQ_ENTRY).unwrap();
        let name = format.field("name").unwrap();
        assert_eq!(
            (name.offset, name.size, name.kind),
            (12, 4, FieldKind::DataLoc)
        );
    }

    #[test]
    fn missing_id_names_the_event_and_the_line() {
        let text = SCHED_SWITCH.replace("ID: 372", "");
        let error = EventFormat::parse(&text).unwrap_err().to_string();
        assert!(
            error.contains("sched_switch") && error.contains("ID:"),
            "{error}"
        );
    }

    #[test]
    fn bad_offset_is_an_error_not_a_panic() {
        let text = SCHED_SWITCH.replace("offset:24;", "offset:x;");
        let error = EventFormat::parse(&text).unwrap_err().to_string();
        assert!(error.contains("offset"), "{error}");
    }
}
