//! Time in integer nanoseconds, and parsing of durations with units.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A signed span of time in integer nanoseconds.
///
/// Signed because a wake-up latency can be negative: the kernel woke the task early.
/// Serialised as a bare integer; JSON fields holding one end in `_ns`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Nanos(pub i64);

impl Nanos {
    /// Zero.
    pub const ZERO: Nanos = Nanos(0);
    /// One microsecond.
    pub const MICROSECOND: Nanos = Nanos(1_000);
    /// One millisecond.
    pub const MILLISECOND: Nanos = Nanos(1_000_000);
    /// One second.
    pub const SECOND: Nanos = Nanos(1_000_000_000);

    /// From whole milliseconds.
    pub const fn from_millis(ms: i64) -> Nanos {
        Nanos(ms * 1_000_000)
    }

    /// From whole seconds.
    pub const fn from_secs(s: i64) -> Nanos {
        Nanos(s * 1_000_000_000)
    }

    /// The value in nanoseconds.
    pub const fn as_ns(self) -> i64 {
        self.0
    }

    /// The value in microseconds, as a float for display.
    pub fn as_micros_f64(self) -> f64 {
        self.0 as f64 / 1_000.0
    }

    /// The value in seconds, as a float for display.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }

    /// Formats in microseconds with three decimals, e.g. `12.345 µs`.
    pub fn display_us(self) -> String {
        format!("{:.3} µs", self.as_micros_f64())
    }
}

impl std::iter::Sum for Nanos {
    fn sum<I: Iterator<Item = Nanos>>(iter: I) -> Nanos {
        Nanos(iter.map(|n| n.0).sum())
    }
}

impl fmt::Display for Nanos {
    /// Human form with the largest unit that keeps the number readable.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0;
        let abs = ns.unsigned_abs();
        let (value, unit) = match abs {
            0..=999 => return write!(f, "{ns} ns"),
            1_000..=999_999 => (ns as f64 / 1e3, "µs"),
            1_000_000..=999_999_999 => (ns as f64 / 1e6, "ms"),
            _ => (ns as f64 / 1e9, "s"),
        };
        let text = format!("{value:.3}");
        let text = text.trim_end_matches('0').trim_end_matches('.');
        write!(f, "{text} {unit}")
    }
}

/// Why a duration could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Nothing was given.
    #[error("empty value: give a number with a unit, e.g. 250us, 1.5ms, 30s, 10m, 2h")]
    Empty,
    /// A number without a unit.
    #[error("'{0}' has no unit: write it with one, e.g. {0}us, {0}ms or {0}s")]
    NoUnit(String),
    /// A unit that is not known.
    #[error(
        "'{text}': unknown unit '{unit}' (use ns, us, µs, ms, s, m, h or d, or several \
         in a row: 1h30m)"
    )]
    UnknownUnit {
        /// The whole text.
        text: String,
        /// The unit part.
        unit: String,
    },
    /// The number part is not a number.
    #[error("'{0}' is not a number with a unit (e.g. 250us, 1.5ms, 2h)")]
    BadNumber(String),
    /// Below one nanosecond or otherwise not representable.
    #[error("'{0}' is not a whole number of nanoseconds")]
    SubNanosecond(String),
    /// Too large.
    #[error("'{0}' is too large (at most 100 days)")]
    TooLarge(String),
}

/// Parses a non-negative duration with a unit: `250us`, `1.5ms`, `30s`, `10m`, `2h`,
/// `1d`, `100ns`, `1µs`, or several whole ones in a row as humantime reads them
/// (`1h30m`, `2m 30s`). A bare `0` is accepted (it means "zero" in every unit).
pub fn parse_duration(text: &str) -> Result<Nanos, DurationError> {
    match parse_one_duration(text) {
        Err(e @ DurationError::UnknownUnit { .. }) => {
            parse_compound_duration(text.trim()).ok_or(e)?
        }
        other => other,
    }
}

/// `1h30m` and the like (humantime's syntax); `None` when it is not one.
fn parse_compound_duration(text: &str) -> Option<Result<Nanos, DurationError>> {
    let duration = humantime::parse_duration(text).ok()?;
    Some(
        i64::try_from(duration.as_nanos())
            .ok()
            .filter(|&ns| ns <= MAX_DURATION_NS)
            .map(Nanos)
            .ok_or_else(|| DurationError::TooLarge(text.to_string())),
    )
}

/// The longest duration accepted: 100 days.
const MAX_DURATION_NS: i64 = 100 * 86_400_000_000_000;

/// One number with one unit.
fn parse_one_duration(text: &str) -> Result<Nanos, DurationError> {
    let t = text.trim();
    if t.is_empty() {
        return Err(DurationError::Empty);
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let unit = unit.trim();
    let number: String = number.chars().filter(|&c| c != '_').collect();
    if number.is_empty() {
        return Err(DurationError::BadNumber(t.to_string()));
    }
    let scale: i128 = match unit {
        "" if number.chars().all(|c| c == '0' || c == '.') => 1,
        "" => return Err(DurationError::NoUnit(t.to_string())),
        "ns" | "nsec" => 1,
        "us" | "µs" | "μs" | "usec" => 1_000,
        "ms" | "msec" => 1_000_000,
        "s" | "sec" | "secs" => 1_000_000_000,
        "m" | "min" | "mins" => 60_000_000_000,
        "h" | "hr" | "hour" | "hours" => 3_600_000_000_000,
        "d" | "day" | "days" => 86_400_000_000_000,
        other => {
            return Err(DurationError::UnknownUnit {
                text: t.to_string(),
                unit: other.to_string(),
            })
        }
    };
    let (int_part, frac_part) = match number.split_once('.') {
        Some((i, f)) => (i, f),
        None => (number.as_str(), ""),
    };
    if frac_part.contains('.') || (int_part.is_empty() && frac_part.is_empty()) {
        return Err(DurationError::BadNumber(t.to_string()));
    }
    let too_large = || DurationError::TooLarge(t.to_string());
    let int: i128 = if int_part.is_empty() {
        0
    } else {
        int_part.parse().map_err(|_| too_large())?
    };
    let mut total = int.checked_mul(scale).ok_or_else(too_large)?;
    if !frac_part.is_empty() {
        if frac_part.len() > 18 {
            return Err(DurationError::SubNanosecond(t.to_string()));
        }
        let frac: i128 = frac_part.parse().map_err(|_| too_large())?;
        let denom = 10i128.pow(frac_part.len() as u32);
        let scaled = frac * scale;
        if scaled % denom != 0 {
            return Err(DurationError::SubNanosecond(t.to_string()));
        }
        total += scaled / denom;
    }
    if total > MAX_DURATION_NS as i128 {
        return Err(too_large());
    }
    Ok(Nanos(total as i64))
}

/// Why a size (`32M`) could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    /// It does not start with a whole number.
    #[error("'{0}' is not a size: write e.g. 4096, 64K, 32M or 1G")]
    NotANumber(String),
    /// The unit is not one of B, K, M, G.
    #[error("'{text}': unknown size unit '{unit}' (use K, M or G)")]
    UnknownUnit {
        /// The size as given.
        text: String,
        /// The unit as given.
        unit: String,
    },
    /// It does not fit in 64 bits.
    #[error("'{0}' is too large: give at most 16E bytes, e.g. 64G")]
    TooLarge(String),
}

/// Parses a size in bytes: `4096`, `64K`, `32M`, `1G` (binary multiples; `KiB`,
/// `MB` and lower case accepted too).
pub fn parse_size(text: &str) -> Result<u64, SizeError> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let too_large = || SizeError::TooLarge(text.to_string());
    let n: u64 = match number.parse() {
        Ok(n) => n,
        // All digits, yet not a u64: too many of them.
        Err(_) if !number.is_empty() => return Err(too_large()),
        Err(_) => return Err(SizeError::NotANumber(text.to_string())),
    };
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        other => {
            return Err(SizeError::UnknownUnit {
                text: text.to_string(),
                unit: other.to_string(),
            })
        }
    };
    n.checked_mul(scale).ok_or_else(too_large)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("32M"), Ok(32 << 20));
        assert_eq!(parse_size("64k"), Ok(64 << 10));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert!(parse_size("12X")
            .unwrap_err()
            .to_string()
            .contains("unknown size unit"));
        assert!(parse_size("M")
            .unwrap_err()
            .to_string()
            .contains("not a size"));
        assert_eq!(
            parse_size("99999999999999999999"),
            Err(SizeError::TooLarge("99999999999999999999".into()))
        );
        assert_eq!(
            parse_size("17179869184G"),
            Err(SizeError::TooLarge("17179869184G".into()))
        );
    }

    #[test]
    fn parses_every_unit() {
        assert_eq!(parse_duration("250us"), Ok(Nanos(250_000)));
        assert_eq!(parse_duration("250µs"), Ok(Nanos(250_000)));
        assert_eq!(parse_duration("1.5ms"), Ok(Nanos(1_500_000)));
        assert_eq!(parse_duration("30s"), Ok(Nanos::from_secs(30)));
        assert_eq!(parse_duration("10m"), Ok(Nanos::from_secs(600)));
        assert_eq!(parse_duration("2h"), Ok(Nanos::from_secs(7200)));
        assert_eq!(parse_duration("1d"), Ok(Nanos::from_secs(86_400)));
        assert_eq!(parse_duration("100ns"), Ok(Nanos(100)));
        assert_eq!(parse_duration(".5s"), Ok(Nanos(500_000_000)));
        assert_eq!(parse_duration("13.35ms"), Ok(Nanos(13_350_000)));
        assert_eq!(parse_duration("0"), Ok(Nanos(0)));
        assert_eq!(parse_duration("1_000us"), Ok(Nanos(1_000_000)));
    }

    #[test]
    fn compound_durations_add_up() {
        assert_eq!(parse_duration("1h30m"), Ok(Nanos::from_secs(5_400)));
        assert_eq!(parse_duration("2m 30s"), Ok(Nanos::from_secs(150)));
        assert_eq!(parse_duration("1s500ms"), Ok(Nanos(1_500_000_000)));
        assert_eq!(parse_duration("1w"), Ok(Nanos::from_secs(7 * 86_400)));
        assert!(matches!(
            parse_duration("99d 2d"),
            Err(DurationError::TooLarge(_))
        ));
        // Not one: the single unit's error stands.
        assert!(matches!(
            parse_duration("1h30x"),
            Err(DurationError::UnknownUnit { .. })
        ));
    }

    #[test]
    fn rejects_what_it_cannot_read() {
        assert_eq!(
            parse_duration("1000"),
            Err(DurationError::NoUnit("1000".into()))
        );
        assert!(matches!(
            parse_duration("5 fortnights"),
            Err(DurationError::UnknownUnit { .. })
        ));
        assert!(matches!(
            parse_duration("1.2.3ms"),
            Err(DurationError::BadNumber(_))
        ));
        assert!(matches!(
            parse_duration("1.5ns"),
            Err(DurationError::SubNanosecond(_))
        ));
        assert!(matches!(
            parse_duration("-1ms"),
            Err(DurationError::BadNumber(_))
        ));
        assert!(matches!(
            parse_duration("999999999999d"),
            Err(DurationError::TooLarge(_))
        ));
        assert_eq!(parse_duration(""), Err(DurationError::Empty));
        assert!(parse_duration("ms").is_err());
    }

    #[test]
    fn displays_with_a_unit() {
        assert_eq!(Nanos(512).to_string(), "512 ns");
        assert_eq!(Nanos(12_345).to_string(), "12.345 µs");
        assert_eq!(Nanos(1_500_000).to_string(), "1.5 ms");
        assert_eq!(Nanos::from_secs(30).to_string(), "30 s");
        assert_eq!(Nanos(-2_000).to_string(), "-2 µs");
        assert_eq!(Nanos(12_345).display_us(), "12.345 µs");
    }
}
