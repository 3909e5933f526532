//! The text of metric families in either exposition format.

use std::fmt::Write as _;

/// The two ways of writing the same families.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// OpenMetrics 1.0.0: `# TYPE`, `# UNIT`, `# HELP`; a counter's family named
    /// without `_total`; `# EOF` at the end.
    OpenMetrics,
    /// The Prometheus text format 0.0.4: `# HELP`, `# TYPE`; a counter's family named
    /// as its sample, with `_total`; no units, no end marker.
    Prometheus,
}

impl Dialect {
    /// The dialect a scraper asks for with its `Accept` header: OpenMetrics when it
    /// accepts it (Prometheus does), the text format otherwise (`curl`, `promtool`).
    pub fn accepted_by(accept: Option<&str>) -> Dialect {
        match accept.is_some_and(|a| a.contains("application/openmetrics-text")) {
            true => Dialect::OpenMetrics,
            false => Dialect::Prometheus,
        }
    }

    /// Its HTTP content type.
    pub fn content_type(self) -> &'static str {
        match self {
            Dialect::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Dialect::Prometheus => "text/plain; version=0.0.4; charset=utf-8",
        }
    }
}

/// A metric family's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Histogram,
    Summary,
    Counter,
    Gauge,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Histogram => "histogram",
            Kind::Summary => "summary",
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
        }
    }

    /// The suffix of a single-valued family's sample: a counter's `_total`.
    pub(super) fn suffix(self) -> &'static str {
        match self {
            Kind::Counter => "_total",
            _ => "",
        }
    }
}

/// One metric family and its samples.
pub(super) struct Family {
    /// Its OpenMetrics name: a counter's without `_total`.
    pub(super) name: &'static str,
    pub(super) kind: Kind,
    /// The unit, which the name ends with; empty for none.
    pub(super) unit: &'static str,
    pub(super) help: &'static str,
    pub(super) samples: Vec<Sample>,
}

/// One sample line: the family's name plus `suffix`, its labels, its value.
pub(super) struct Sample {
    pub(super) suffix: &'static str,
    pub(super) labels: String,
    pub(super) value: String,
}

/// The families as text in `dialect`.
pub(super) fn write(families: &[Family], dialect: Dialect) -> String {
    let mut out = String::new();
    for f in families {
        let (name, kind) = (f.name, f.kind.name());
        let help = escape_help(f.help, dialect);
        match dialect {
            Dialect::OpenMetrics => {
                let _ = writeln!(out, "# TYPE {name} {kind}");
                if !f.unit.is_empty() {
                    let _ = writeln!(out, "# UNIT {name} {}", f.unit);
                }
                let _ = writeln!(out, "# HELP {name} {help}");
            }
            Dialect::Prometheus => {
                // The text format names a counter's family as its sample: with `_total`.
                let total = f.kind.suffix();
                let _ = writeln!(out, "# HELP {name}{total} {help}");
                let _ = writeln!(out, "# TYPE {name}{total} {kind}");
            }
        }
        for sample in &f.samples {
            let _ = writeln!(
                out,
                "{}{}{{{}}} {}",
                f.name, sample.suffix, sample.labels, sample.value
            );
        }
    }
    if dialect == Dialect::OpenMetrics {
        out.push_str("# EOF\n");
    }
    out
}

/// Seconds from nanoseconds, in plain decimals (to the ns).
pub(super) fn seconds(ns: f64) -> String {
    let s = format!("{:.9}", ns / 1e9);
    let s = s.trim_end_matches('0');
    if s.ends_with('.') {
        format!("{s}0")
    } else {
        s.to_string()
    }
}

/// A label value, escaped as both formats escape it.
pub(super) fn escape_label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A help text, escaped as `dialect` escapes it (OpenMetrics escapes quotes too).
fn escape_help(help: &str, dialect: Dialect) -> String {
    match dialect {
        Dialect::OpenMetrics => escape_label(help),
        Dialect::Prometheus => help.replace('\\', "\\\\").replace('\n', "\\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_written_without_exponents() {
        assert_eq!(seconds(2_000.0), "0.000002");
        assert_eq!(seconds(1_023.0), "0.000001023");
        assert_eq!(seconds(2_500_000_000.0), "2.5");
        assert_eq!(seconds(-40.0), "-0.00000004");
        assert_eq!(seconds(0.0), "0.0");
    }

    #[test]
    fn openmetrics_is_served_to_whoever_accepts_it() {
        let prometheus = "application/openmetrics-text;version=1.0.0,text/plain;q=0.5";
        assert_eq!(Dialect::accepted_by(Some(prometheus)), Dialect::OpenMetrics);
        assert_eq!(Dialect::accepted_by(Some("*/*")), Dialect::Prometheus);
        assert_eq!(Dialect::accepted_by(None), Dialect::Prometheus);
    }
}
