//! Records turned into events: id to name, fields read by name.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::{EventFormat, Field, FieldKind, RawRecord, TraceError};

/// A field's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value<'a> {
    /// A signed integer field, sign-extended.
    Signed(i64),
    /// An unsigned integer field.
    Unsigned(u64),
    /// A `char[N]` or `__data_loc`/`__rel_loc` string, up to its first NUL.
    Str(Cow<'a, str>),
    /// Any other array, raw.
    Bytes(&'a [u8]),
}

/// The formats of the events a buffer may hold, by id.
#[derive(Debug, Clone, Default)]
pub struct EventTable {
    formats: HashMap<u16, EventFormat>,
}

impl EventTable {
    /// A table of these formats.
    pub fn new(formats: impl IntoIterator<Item = EventFormat>) -> EventTable {
        EventTable {
            formats: formats
                .into_iter()
                .map(|format| (format.id, format))
                .collect(),
        }
    }

    /// The format of that event id.
    pub fn format(&self, id: u16) -> Option<&EventFormat> {
        self.formats.get(&id)
    }

    /// Decodes a record read from `cpu`'s buffer. Every field is checked to lie within
    /// the record here, so looking one up later cannot fail.
    pub fn decode<'a>(
        &'a self,
        cpu: usize,
        record: &RawRecord<'a>,
    ) -> Result<Event<'a>, TraceError> {
        let payload = record.payload;
        let id = payload
            .get(..2)
            .map(|bytes| u16::from_ne_bytes([bytes[0], bytes[1]]))
            .ok_or_else(|| {
                TraceError::Page(format!("a record of {} bytes has no id", payload.len()))
            })?;
        let format = self.formats.get(&id).ok_or(TraceError::UnknownEvent(id))?;
        for field in &format.fields {
            if field_bytes(field, payload).is_none() {
                return Err(TraceError::Page(format!(
                    "field {} of {} lies outside its {}-byte record",
                    field.name,
                    format.name,
                    payload.len()
                )));
            }
        }
        Ok(Event {
            timestamp: record.timestamp,
            cpu,
            format,
            payload,
        })
    }
}

/// One event as the kernel recorded it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event<'a> {
    /// Timestamp in the instance's `trace_clock` (ns for `mono`).
    pub timestamp: u64,
    /// The CPU whose buffer held it.
    pub cpu: usize,
    /// The event's format: name, id and fields.
    pub format: &'a EventFormat,
    payload: &'a [u8],
}

impl<'a> Event<'a> {
    /// The event's name (`sched_switch`).
    pub fn name(&self) -> &'a str {
        &self.format.name
    }

    /// The field of that name, or `None` if the event has none.
    pub fn field(&self, name: &str) -> Option<Value<'a>> {
        let field = self.format.field(name)?;
        let bytes = field_bytes(field, self.payload)?;
        Some(match field.kind {
            FieldKind::Integer { signed } => integer(bytes, signed)?,
            FieldKind::Chars | FieldKind::DataLoc | FieldKind::RelLoc => {
                let text = bytes.split(|&byte| byte == 0).next().unwrap_or_default();
                Value::Str(String::from_utf8_lossy(text))
            }
            FieldKind::Bytes => Value::Bytes(bytes),
        })
    }

    /// An integer field as `i64` (unsigned ones above `i64::MAX` give `None`).
    pub fn integer(&self, name: &str) -> Option<i64> {
        match self.field(name)? {
            Value::Signed(value) => Some(value),
            Value::Unsigned(value) => i64::try_from(value).ok(),
            _ => None,
        }
    }

    /// A string field.
    pub fn string(&self, name: &str) -> Option<Cow<'a, str>> {
        match self.field(name)? {
            Value::Str(text) => Some(text),
            _ => None,
        }
    }

    /// The thread that was running when the event fired (`common_pid`).
    pub fn pid(&self) -> Option<i64> {
        self.integer("common_pid")
    }
}

/// The bytes a field's value occupies: in place, or where its `__data_loc` points.
fn field_bytes<'a>(field: &Field, payload: &'a [u8]) -> Option<&'a [u8]> {
    let own = payload.get(field.offset..field.offset.checked_add(field.size)?)?;
    let location = match field.kind {
        FieldKind::DataLoc | FieldKind::RelLoc => u32::from_ne_bytes(own.try_into().ok()?),
        _ => return Some(own),
    };
    let mut offset = (location & 0xffff) as usize;
    let length = (location >> 16) as usize;
    if field.kind == FieldKind::RelLoc {
        offset += field.offset + field.size;
    }
    payload.get(offset..offset + length)
}

fn integer(bytes: &[u8], signed: bool) -> Option<Value<'static>> {
    Some(match (bytes.len(), signed) {
        (1, true) => Value::Signed(i64::from(bytes[0] as i8)),
        (1, false) => Value::Unsigned(u64::from(bytes[0])),
        (2, true) => Value::Signed(i64::from(i16::from_ne_bytes(bytes.try_into().ok()?))),
        (2, false) => Value::Unsigned(u64::from(u16::from_ne_bytes(bytes.try_into().ok()?))),
        (4, true) => Value::Signed(i64::from(i32::from_ne_bytes(bytes.try_into().ok()?))),
        (4, false) => Value::Unsigned(u64::from(u32::from_ne_bytes(bytes.try_into().ok()?))),
        (8, true) => Value::Signed(i64::from_ne_bytes(bytes.try_into().ok()?)),
        (8, false) => Value::Unsigned(u64::from_ne_bytes(bytes.try_into().ok()?)),
        _ => return None,
    })
}
