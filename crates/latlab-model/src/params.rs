//! `NAME[:key=value,...]`: how the command line names a probe or a load with its
//! parameters, parsed by one function for both.
//!
//! Each probe and each load describes its parameters in a constant ([`ParamInfo`]);
//! [`parse`] checks a specification against the list of known names with their
//! parameters, fills in the defaults, and says what is accepted when the text is wrong.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// One parameter of a probe or a load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamInfo {
    /// The key (`transport`).
    pub key: &'static str,
    /// The values accepted; empty when any value is checked by its user itself.
    pub choices: &'static [&'static str],
    /// The value when not given.
    pub default: &'static str,
    /// One line on what it does.
    pub help: &'static str,
}

/// Parameters by key, every declared key present (defaults filled in by [`parse`]).
pub type Params = BTreeMap<String, String>;

/// A parameter's value (`""` for a key that is not declared).
pub fn param<'a>(params: &'a Params, key: &str) -> &'a str {
    params.get(key).map_or("", String::as_str)
}

/// Something the command line names with parameters: a probe, a load.
pub trait Described {
    /// Its name (`msg`, `hackbench`).
    fn name(&self) -> &'static str;
    /// Its parameters.
    fn params(&self) -> &'static [ParamInfo];
}

/// What kind of thing is named, for messages: `probe`, listed by `latlab probes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kind {
    /// The word for one (`probe`).
    pub noun: &'static str,
    /// The command that lists them all (`latlab probes`).
    pub listed_by: &'static str,
}

/// Why a `NAME[:key=value,...]` specification was refused. Each message names the text
/// at fault and what is accepted instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParamsError {
    /// The name is not a known one.
    #[error("unknown {noun} '{name}': choose one of {known} ({listed_by} lists them)")]
    UnknownName {
        /// `probe` or `load`.
        noun: &'static str,
        /// The name as given.
        name: String,
        /// The known names, comma-separated.
        known: String,
        /// The command listing them.
        listed_by: &'static str,
    },
    /// A parameter was not written as `key=value`.
    #[error("'{pair}' in {noun} '{text}' needs the form key=value, e.g. {example}")]
    NotKeyValue {
        /// `probe` or `load`.
        noun: &'static str,
        /// The whole specification.
        text: String,
        /// The part without `=`.
        pair: String,
        /// A valid specification for the same name.
        example: String,
    },
    /// The key is not one of the parameters.
    #[error("{noun} {name} has no parameter '{key}': it takes {takes}")]
    UnknownKey {
        /// `probe` or `load`.
        noun: &'static str,
        /// The name.
        name: &'static str,
        /// The key as given.
        key: String,
        /// The parameters it takes, with their defaults and what they do.
        takes: String,
    },
    /// The value is not one of the parameter's choices.
    #[error("{noun} {name}: {key}={value} is not one of {choices}")]
    NotAChoice {
        /// `probe` or `load`.
        noun: &'static str,
        /// The name.
        name: &'static str,
        /// The key.
        key: &'static str,
        /// The value as given.
        value: String,
        /// The values accepted, comma-separated.
        choices: String,
    },
    /// A key was given twice.
    #[error("{noun} '{text}' gives {key} twice: keep one")]
    Twice {
        /// `probe` or `load`.
        noun: &'static str,
        /// The whole specification.
        text: String,
        /// The repeated key.
        key: String,
    },
}

/// Parses `NAME[:key=value,...]` against `known`: checks the name, the keys and the
/// values (against their choices, when a parameter has some), and fills in the
/// defaults. Returns the entry named and every one of its parameters.
pub fn parse<'a, T: Described>(
    text: &str,
    kind: Kind,
    known: &'a [T],
) -> Result<(&'a T, Params), ParamsError> {
    let text = text.trim();
    let (name, rest) = text.split_once(':').unwrap_or((text, ""));
    let name = name.trim();
    let entry =
        known
            .iter()
            .find(|k| k.name() == name)
            .ok_or_else(|| ParamsError::UnknownName {
                noun: kind.noun,
                name: name.to_string(),
                known: known
                    .iter()
                    .map(|k| k.name())
                    .collect::<Vec<_>>()
                    .join(", "),
                listed_by: kind.listed_by,
            })?;
    let mut params: Params = entry
        .params()
        .iter()
        .map(|p| (p.key.to_string(), p.default.to_string()))
        .collect();
    let mut given = BTreeSet::new();
    for pair in rest.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| ParamsError::NotKeyValue {
                noun: kind.noun,
                text: text.to_string(),
                pair: pair.to_string(),
                example: example(entry),
            })?;
        let (key, value) = (key.trim(), value.trim());
        let info = entry
            .params()
            .iter()
            .find(|p| p.key == key)
            .ok_or_else(|| ParamsError::UnknownKey {
                noun: kind.noun,
                name: entry.name(),
                key: key.to_string(),
                takes: takes(entry.params()),
            })?;
        if !info.choices.is_empty() && !info.choices.contains(&value) {
            return Err(ParamsError::NotAChoice {
                noun: kind.noun,
                name: entry.name(),
                key: info.key,
                value: value.to_string(),
                choices: info.choices.join(", "),
            });
        }
        if !given.insert(key) {
            return Err(ParamsError::Twice {
                noun: kind.noun,
                text: text.to_string(),
                key: key.to_string(),
            });
        }
        params.insert(key.to_string(), value.to_string());
    }
    Ok((entry, params))
}

/// `size=32M (working set), threads=1 (thrashing threads)`: each key with its default
/// and what it does, or `no parameters`.
pub fn takes(params: &[ParamInfo]) -> String {
    if params.is_empty() {
        return "no parameters".to_string();
    }
    params
        .iter()
        .map(|p| format!("{}={} ({})", p.key, p.default, p.help))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A valid specification for `entry`: `msg:transport=pipe`, or the bare name.
pub fn example(entry: &impl Described) -> String {
    match entry.params().first() {
        Some(p) => format!("{}:{}={}", entry.name(), p.key, p.default),
        None => entry.name().to_string(),
    }
}

/// `NAME:key=value,...` with every parameter of `entry`, in declared order.
pub struct Spec<'a, T: Described> {
    /// What is named.
    pub entry: &'a T,
    /// Its parameters (every declared key present).
    pub params: &'a Params,
}

impl<T: Described> fmt::Display for Spec<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.entry.name())?;
        for (i, p) in self.entry.params().iter().enumerate() {
            let sep = if i == 0 { ':' } else { ',' };
            write!(f, "{sep}{}={}", p.key, param(self.params, p.key))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Thing(&'static str, &'static [ParamInfo]);

    impl Described for Thing {
        fn name(&self) -> &'static str {
            self.0
        }
        fn params(&self) -> &'static [ParamInfo] {
            self.1
        }
    }

    const KIND: Kind = Kind {
        noun: "gadget",
        listed_by: "latlab gadgets",
    };

    const KNOWN: &[Thing] = &[
        Thing("bare", &[]),
        Thing(
            "pipe",
            &[
                ParamInfo {
                    key: "mode",
                    choices: &["fast", "slow"],
                    default: "fast",
                    help: "how",
                },
                ParamInfo {
                    key: "size",
                    choices: &[],
                    default: "4",
                    help: "how much",
                },
            ],
        ),
    ];

    fn parsed(text: &str) -> Result<(&'static str, Params), ParamsError> {
        parse(text, KIND, KNOWN).map(|(t, p)| (t.name(), p))
    }

    #[test]
    fn defaults_are_filled_in_and_given_values_kept() {
        let (name, params) = parsed("pipe").unwrap();
        assert_eq!(name, "pipe");
        assert_eq!(param(&params, "mode"), "fast");
        assert_eq!(param(&params, "size"), "4");
        let (_, params) = parsed(" pipe: size = 9 , mode=slow ").unwrap();
        assert_eq!(param(&params, "mode"), "slow");
        assert_eq!(param(&params, "size"), "9");
        assert_eq!(param(&params, "nosuch"), "");
        let (name, params) = parsed("bare:").unwrap();
        assert_eq!((name, params.len()), ("bare", 0));
    }

    #[test]
    fn a_spec_prints_back_to_what_parses_to_it() {
        let (entry, params) = parse("pipe:size=9", KIND, KNOWN).unwrap();
        let text = Spec {
            entry,
            params: &params,
        }
        .to_string();
        assert_eq!(text, "pipe:mode=fast,size=9");
        assert_eq!(parse(&text, KIND, KNOWN).unwrap().1, params);
    }

    #[test]
    fn each_mistake_is_named_with_what_is_accepted() {
        let message = |text| parsed(text).unwrap_err().to_string();
        assert_eq!(
            message("tap"),
            "unknown gadget 'tap': choose one of bare, pipe (latlab gadgets lists them)"
        );
        assert_eq!(
            message("pipe:size"),
            "'size' in gadget 'pipe:size' needs the form key=value, e.g. pipe:mode=fast"
        );
        assert_eq!(
            message("pipe:colour=red"),
            "gadget pipe has no parameter 'colour': it takes mode=fast (how), size=4 (how much)"
        );
        assert_eq!(
            message("bare:x=1"),
            "gadget bare has no parameter 'x': it takes no parameters"
        );
        assert_eq!(
            message("pipe:mode=warp"),
            "gadget pipe: mode=warp is not one of fast, slow"
        );
        assert_eq!(
            message("pipe:size=1,size=2"),
            "gadget 'pipe:size=1,size=2' gives size twice: keep one"
        );
    }
}
