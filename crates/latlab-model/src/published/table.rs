//! A published table as shipped in `references/*.toml`: its figures as printed (text, in
//! the table's unit), read into exact nanoseconds.

use crate::run::PublishedRecord;
pub use crate::run::PublishedRow;
use crate::units::parse_duration;
use crate::Nanos;
use serde::Deserialize;

/// One table of a paper, as its data file holds it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PublishedTable {
    /// The reference's name (`rr-table3`): `ref:rr-table3` names it.
    pub name: String,
    /// What the table shows, in a line.
    pub title: String,
    /// The paper: authors, title, where it appeared.
    pub source: String,
    /// The table or passage in it (`Table 3`).
    pub table: String,
    /// The machine it was measured on.
    pub machine: String,
    /// The kernel (or `per row`).
    pub kernel: String,
    /// The load (or `per row`).
    pub load: String,
    /// The program that measured.
    pub tool: String,
    /// latlab's probe name for what it measured (`timer`, or the benchmark's own).
    pub probe: String,
    /// The sleep method, when the paper says (`rel` for a relative `nanosleep`).
    #[serde(default)]
    pub method: Option<String>,
    /// The unit the figures are printed in: `ms` or `us`.
    pub unit: String,
    /// What one sample is, in the paper's words.
    pub figure: String,
    /// What the table does not have, one sentence each.
    pub lacks: Vec<String>,
    /// Its rows, in the paper's order.
    pub row: Vec<PublishedRow>,
}

/// Why a shipped table does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("reference {table}, row '{row}', {field}: {problem}")]
pub struct TableError {
    /// The table's name.
    pub table: String,
    /// The row's label.
    pub row: String,
    /// The field.
    pub field: &'static str,
    /// What is wrong.
    pub problem: String,
}

/// A row's figures in nanoseconds: extremes exact, mean and deviation as printed.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RowFigures {
    /// The period.
    pub period: Option<Nanos>,
    /// Smallest sample.
    pub min: Option<Nanos>,
    /// Mean.
    pub mean: Option<f64>,
    /// Largest sample.
    pub max: Option<Nanos>,
    /// Standard deviation.
    pub stddev: Option<f64>,
    /// The 99.999th percentile.
    pub p99_999: Option<Nanos>,
}

impl PublishedTable {
    /// Nanoseconds per unit of the table's figures.
    pub fn unit_ns(&self) -> Option<i64> {
        unit_ns(&self.unit)
    }

    /// A row's figures in nanoseconds, each checked.
    pub fn figures(&self, row: &PublishedRow) -> Result<RowFigures, TableError> {
        row_figures(&self.name, &self.unit, row)
    }
}

impl PublishedRecord {
    /// A row's figures in nanoseconds, each checked, as [`PublishedTable::figures`].
    pub fn figures(&self, row: &PublishedRow) -> Result<RowFigures, TableError> {
        row_figures(&self.name, &self.unit, row)
    }
}

/// Nanoseconds per `unit` (`ms`, `us`).
fn unit_ns(unit: &str) -> Option<i64> {
    match unit {
        "ms" => Some(1_000_000),
        "us" => Some(1_000),
        _ => None,
    }
}

/// The figures of `row` of the table `table`, printed in `unit`, in nanoseconds.
fn row_figures(table: &str, unit: &str, row: &PublishedRow) -> Result<RowFigures, TableError> {
    let error = |field: &'static str, problem: String| TableError {
        table: table.to_string(),
        row: row.label.clone(),
        field,
        problem,
    };
    let unit = unit_ns(unit).ok_or_else(|| error("unit", format!("'{unit}' is not ms or us")))?;
    let exact = |field: &'static str, text: &Option<String>| {
        text.as_deref()
            .map(|t| decimal_ns(t, unit).map_err(|p| error(field, p)))
            .transpose()
    };
    let real = |field: &'static str, text: &Option<String>| {
        text.as_deref()
            // Exact where the printed digits are whole nanoseconds (16.6 ms is
            // 16600000 ns, not 16.6 × 10⁶ in floating point).
            .map(|t| match (decimal_ns(t, unit), t.parse::<f64>()) {
                (Ok(ns), _) => Ok(ns.0 as f64),
                (_, Ok(v)) if v.is_finite() => Ok(v * unit as f64),
                _ => Err(error(field, format!("'{t}' is not a number"))),
            })
            .transpose()
    };
    let period = row
        .period
        .as_deref()
        .map(|p| parse_duration(p).map_err(|e| error("period", e.to_string())))
        .transpose()?;
    Ok(RowFigures {
        period,
        min: exact("min", &row.min)?,
        mean: real("mean", &row.mean)?,
        max: exact("max", &row.max)?,
        stddev: real("stddev", &row.stddev)?,
        p99_999: exact("p99_999", &row.p99_999)?,
    })
}

/// A printed decimal (`-0.0046`) in a unit of `unit` ns, as whole nanoseconds; refused
/// when it has more digits than nanoseconds resolve.
fn decimal_ns(text: &str, unit: i64) -> Result<Nanos, String> {
    let refuse = || format!("'{text}' is not a decimal number of whole nanoseconds");
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !all_digits(whole) || !all_digits(fraction) {
        return Err(refuse());
    }
    let places = unit.ilog10() as usize;
    if fraction.len() > places {
        return Err(refuse());
    }
    let padded = format!("{fraction:0<places$}");
    let whole: i64 = whole.parse().map_err(|_| refuse())?;
    let fraction: i64 = if padded.is_empty() {
        0
    } else {
        padded.parse().map_err(|_| refuse())?
    };
    let ns = whole
        .checked_mul(unit)
        .and_then(|w| w.checked_add(fraction))
        .ok_or_else(refuse)?;
    Ok(Nanos(if negative { -ns } else { ns }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printed_decimals_become_exact_nanoseconds() {
        assert_eq!(decimal_ns("-0.0046", 1_000_000), Ok(Nanos(-4_600)));
        assert_eq!(decimal_ns("0.00086", 1_000_000), Ok(Nanos(860)));
        assert_eq!(decimal_ns("16.7", 1_000_000), Ok(Nanos(16_700_000)));
        assert_eq!(decimal_ns("110", 1_000_000), Ok(Nanos(110_000_000)));
        assert_eq!(decimal_ns("41.36", 1_000), Ok(Nanos(41_360)));
        for bad in ["", "-", "1.2.3", "1e3", "0.0000001", " 1", "+1"] {
            assert!(decimal_ns(bad, 1_000_000).is_err(), "{bad:?}");
        }
    }
}
