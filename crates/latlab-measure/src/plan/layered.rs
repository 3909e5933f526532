//! A setting's value with where it came from: the flag if given, else the scenario's
//! field, else the default. Errors name that origin, so a bad value in a scenario
//! points at the field and not at a flag the user never wrote.

use super::ResolveError;
use std::fmt;

/// Where a setting's value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A command-line flag (`--period`; with its value where the flag repeats, as in
    /// `--threshold p99=80us`).
    Flag(String),
    /// A scenario's field (`osadl: timer.period`).
    Scenario {
        /// The scenario's name.
        scenario: String,
        /// The field (`timer.period`, `phase idle: duration`).
        field: String,
    },
    /// Nothing was given: the default, which the flag changes.
    Default(&'static str),
}

impl Origin {
    /// A flag.
    pub fn flag(flag: impl Into<String>) -> Origin {
        Origin::Flag(flag.into())
    }

    /// A field of scenario `scenario`.
    pub fn field(scenario: &str, field: impl Into<String>) -> Origin {
        Origin::Scenario {
            scenario: scenario.to_string(),
            field: field.into(),
        }
    }

    /// Whether the user gave the value (by flag or scenario), rather than the default.
    pub fn is_given(&self) -> bool {
        !matches!(self, Origin::Default(_))
    }

    /// An error about a value from here that is out of range, or does not fit another
    /// setting.
    pub fn out_of_range(&self, why: impl fmt::Display) -> ResolveError {
        ResolveError::OutOfRange {
            origin: self.clone(),
            why: why.to_string(),
        }
    }

    /// An error about a value from here that does not parse.
    pub fn invalid(&self, why: impl fmt::Display) -> ResolveError {
        ResolveError::Invalid {
            origin: self.clone(),
            why: why.to_string(),
        }
    }
}

impl fmt::Display for Origin {
    /// The flag, or `scenario: field`; a default is named by the flag that changes it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Flag(flag) => f.write_str(flag),
            Origin::Scenario { scenario, field } => write!(f, "{scenario}: {field}"),
            Origin::Default(flag) => f.write_str(flag),
        }
    }
}

/// A value and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layered<T> {
    /// The value.
    pub value: T,
    /// Where it came from.
    pub origin: Origin,
}

impl<T: Copy> Layered<Option<T>> {
    /// The flag's value if `given`, else the first of the scenario's `fields` that has
    /// one (the most specific first: a phase's field before the `[timer]` table's),
    /// else none.
    pub fn pick(
        flag: &'static str,
        given: Option<T>,
        scenario: &str,
        fields: &[(&str, Option<T>)],
    ) -> Self {
        if let Some(value) = given {
            return Layered {
                value: Some(value),
                origin: Origin::flag(flag),
            };
        }
        match fields.iter().find_map(|(field, v)| v.map(|v| (field, v))) {
            Some((field, value)) => Layered {
                value: Some(value),
                origin: Origin::field(scenario, *field),
            },
            None => Layered {
                value: None,
                origin: Origin::Default(flag),
            },
        }
    }

    /// The value, or `default` when none was given.
    pub fn or(self, default: T) -> Layered<T> {
        Layered {
            value: self.value.unwrap_or(default),
            origin: self.origin,
        }
    }
}

impl Layered<Option<&str>> {
    /// The value parsed by `parse`, if there is one; its error names the origin.
    pub fn parse_with<T, E: fmt::Display>(
        self,
        parse: impl FnOnce(&str) -> Result<T, E>,
    ) -> Result<Layered<Option<T>>, ResolveError> {
        let value = match self.value {
            Some(text) => Some(parse(text).map_err(|e| self.origin.invalid(e))?),
            None => None,
        };
        Ok(Layered {
            value,
            origin: self.origin,
        })
    }
}

impl Layered<&str> {
    /// The value parsed by `parse`; its error names the origin.
    pub fn parse_with<T, E: fmt::Display>(
        self,
        parse: impl FnOnce(&str) -> Result<T, E>,
    ) -> Result<Layered<T>, ResolveError> {
        let value = parse(self.value).map_err(|e| self.origin.invalid(e))?;
        Ok(Layered {
            value,
            origin: self.origin,
        })
    }
}

impl<T> Layered<T> {
    /// An error about this value: out of range, or not fitting another setting.
    pub fn refuse(&self, why: impl fmt::Display) -> ResolveError {
        self.origin.out_of_range(why)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flag_wins_over_the_scenario_and_the_scenario_over_the_default() {
        let fields = [("phase x: period", None), ("timer.period", Some("2ms"))];
        let flag = Layered::pick("--period", Some("1ms"), "s", &fields);
        assert_eq!(flag.value, Some("1ms"));
        assert_eq!(flag.origin.to_string(), "--period");
        let field = Layered::pick("--period", None, "s", &fields);
        assert_eq!(field.value, Some("2ms"));
        assert_eq!(field.origin.to_string(), "s: timer.period");
        let default = Layered::pick("--period", None, "s", &[]).or("1ms");
        assert_eq!(default.value, "1ms");
        assert!(!default.origin.is_given());
        assert_eq!(default.origin.to_string(), "--period");
    }

    #[test]
    fn the_most_specific_scenario_field_wins() {
        let fields = [
            ("phase x: period", Some("3ms")),
            ("timer.period", Some("2ms")),
        ];
        let picked = Layered::pick("--period", None, "s", &fields);
        assert_eq!(picked.value, Some("3ms"));
        assert_eq!(picked.origin.to_string(), "s: phase x: period");
    }

    #[test]
    fn a_parse_error_names_the_origin() {
        let e = Layered::pick("--top", None, "s", &[("timer.top", Some("many"))])
            .parse_with(|t| t.parse::<usize>())
            .unwrap_err();
        assert!(e.to_string().starts_with("s: timer.top: "), "{e}");
    }
}
