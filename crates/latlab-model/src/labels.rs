//! What a user gives a run to tell it apart from the others: a name (`--name`), tags
//! (`--tag key=value`) and a note (`--note`). Checked here once, for `latlab run`,
//! `latlab import` and Run files alike, so that a name can always stand where a run
//! reference is asked for and every label prints safely on a terminal.

/// The longest name, in characters.
pub const NAME_MAX: usize = 64;
/// The longest tag key, in characters.
pub const TAG_KEY_MAX: usize = 64;
/// The longest tag value, in characters.
pub const TAG_VALUE_MAX: usize = 200;
/// The longest note, in characters.
pub const NOTE_MAX: usize = 2000;

/// Why a name, tag or note is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LabelError {
    /// An empty name.
    #[error("the name is empty: give one word, such as baseline or rt-6.18")]
    EmptyName,
    /// A name past [`NAME_MAX`].
    #[error("{0:?} is longer than {NAME_MAX} characters: choose a shorter name")]
    NameTooLong(String),
    /// A name with a space or a control character.
    #[error("{0:?} holds a space or a control character: a name is one word (baseline, rt-6.18, before_bios)")]
    NameNotOneWord(String),
    /// `last`, `last~N`: references by position.
    #[error(
        "{0:?} is how latlab refers to runs by position (last, last~1, ...): choose another name"
    )]
    NameIsPosition(String),
    /// A name with the shape of a run id.
    #[error("{0:?} has the shape of a run id: choose a name that is not one")]
    NameIsId(String),
    /// A name that would read as a flag.
    #[error("{0:?} starts with '-', so it would be taken for a flag: choose a name that does not")]
    NameIsFlag(String),
    /// A tag without `=`.
    #[error("{0:?} is not KEY=VALUE: write a tag as env=lab")]
    TagNotKeyValue(String),
    /// A tag key of other characters, empty or too long.
    #[error("tag key {0:?}: use 1 to {TAG_KEY_MAX} letters, digits, '_', '-' or '.'")]
    BadTagKey(String),
    /// A tag value too long or with a control character.
    #[error(
        "tag {0}: the value must be at most {TAG_VALUE_MAX} characters without control characters"
    )]
    BadTagValue(String),
    /// A note too long or with control characters other than line breaks and tabs.
    #[error("the note must be at most {NOTE_MAX} characters, without control characters other than line breaks and tabs")]
    BadNote,
}

/// Whether `reference` names a run by its position: `last`, `last~N`.
pub fn is_position(reference: &str) -> bool {
    reference == "last" || reference.starts_with("last~")
}

/// Checks a run's name: one word that cannot be taken for a position, a run id or a
/// flag.
pub fn check_name(name: &str) -> Result<(), LabelError> {
    if name.is_empty() {
        return Err(LabelError::EmptyName);
    }
    if name.chars().count() > NAME_MAX {
        return Err(LabelError::NameTooLong(name.to_string()));
    }
    if name.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(LabelError::NameNotOneWord(name.to_string()));
    }
    if is_position(name) {
        return Err(LabelError::NameIsPosition(name.to_string()));
    }
    if crate::stamp::is_run_id(name) {
        return Err(LabelError::NameIsId(name.to_string()));
    }
    if name.starts_with('-') {
        return Err(LabelError::NameIsFlag(name.to_string()));
    }
    Ok(())
}

/// Checks one tag.
pub fn check_tag(key: &str, value: &str) -> Result<(), LabelError> {
    let key_ok = !key.is_empty()
        && key.chars().count() <= TAG_KEY_MAX
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if !key_ok {
        return Err(LabelError::BadTagKey(key.to_string()));
    }
    if value.chars().count() > TAG_VALUE_MAX || value.chars().any(char::is_control) {
        return Err(LabelError::BadTagValue(key.to_string()));
    }
    Ok(())
}

/// Reads `key=value` (the value may be empty) and checks it.
pub fn parse_tag(text: &str) -> Result<(String, String), LabelError> {
    let (key, value) = text
        .split_once('=')
        .ok_or_else(|| LabelError::TagNotKeyValue(text.to_string()))?;
    check_tag(key, value)?;
    Ok((key.to_string(), value.to_string()))
}

/// Checks a note.
pub fn check_note(note: &str) -> Result<(), LabelError> {
    let bad_char = note
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t');
    if bad_char || note.chars().count() > NOTE_MAX {
        return Err(LabelError::BadNote);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_one_word_that_is_no_reference_of_another_kind() {
        for good in ["baseline", "rt-6.18", "before_bios", "ü", "a/b"] {
            assert_eq!(check_name(good), Ok(()), "{good}");
        }
        let bad = [
            ("", LabelError::EmptyName),
            ("two words", LabelError::NameNotOneWord("two words".into())),
            (
                "red\u{1b}[31m",
                LabelError::NameNotOneWord("red\u{1b}[31m".into()),
            ),
            ("last", LabelError::NameIsPosition("last".into())),
            ("last~2", LabelError::NameIsPosition("last~2".into())),
            (
                "20261121T001012Z-3f9a2c",
                LabelError::NameIsId("20261121T001012Z-3f9a2c".into()),
            ),
            ("-q", LabelError::NameIsFlag("-q".into())),
        ];
        for (name, error) in bad {
            assert_eq!(check_name(name), Err(error), "{name:?}");
        }
        assert!(check_name(&"x".repeat(NAME_MAX)).is_ok());
        assert!(check_name(&"x".repeat(NAME_MAX + 1)).is_err());
    }

    #[test]
    fn tags_are_key_equals_value() {
        assert_eq!(parse_tag("env=lab"), Ok(("env".into(), "lab".into())));
        assert_eq!(
            parse_tag("a.b-c_d=x=y"),
            Ok(("a.b-c_d".into(), "x=y".into()))
        );
        assert_eq!(parse_tag("empty="), Ok(("empty".into(), String::new())));
        assert_eq!(
            parse_tag("env"),
            Err(LabelError::TagNotKeyValue("env".into()))
        );
        assert_eq!(parse_tag("=lab"), Err(LabelError::BadTagKey(String::new())));
        assert_eq!(
            parse_tag("my key=lab"),
            Err(LabelError::BadTagKey("my key".into()))
        );
        assert_eq!(
            parse_tag("env=a\u{7}b"),
            Err(LabelError::BadTagValue("env".into()))
        );
    }

    #[test]
    fn a_note_may_span_lines_but_holds_no_escapes() {
        assert_eq!(check_note("before the BIOS update\n\tsecond line"), Ok(()));
        assert_eq!(check_note("\u{1b}[2J"), Err(LabelError::BadNote));
        assert_eq!(
            check_note(&"x".repeat(NOTE_MAX + 1)),
            Err(LabelError::BadNote)
        );
    }
}
