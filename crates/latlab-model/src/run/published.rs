//! The record of a reference Run: where its published figures come from, the table as
//! printed, and what it lacks ([`crate::published`] builds such Runs).

use serde::{Deserialize, Serialize};

/// What `ref:NAME` starts with, and a reference Run's id.
pub const REFERENCE_PREFIX: &str = "ref:";

/// What a reference Run's record says of its figures.
pub const NOT_MEASURED_HERE: &str = "published figures, not measured here";

/// Where a reference Run's figures come from: the paper, the table, and the table as
/// printed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PublishedRecord {
    /// Always [`NOT_MEASURED_HERE`].
    pub note: String,
    /// The reference's name (`rr-table3`).
    pub name: String,
    /// What the table shows.
    pub title: String,
    /// The paper.
    pub source: String,
    /// The table or passage in it.
    pub table: String,
    /// The machine measured.
    pub machine: String,
    /// The kernel (or `per row`).
    pub kernel: String,
    /// The load (or `per row`).
    pub load: String,
    /// The program that measured.
    pub tool: String,
    /// What one sample is, in the paper's words.
    pub figure: String,
    /// The unit the figures are printed in (`ms`, `us`); the Run's are in ns.
    pub unit: String,
    /// What the table does not have, one sentence each; the fields it would fill are
    /// `null` in the Run.
    pub lacks: Vec<String>,
    /// The rows as printed, in the table's unit.
    pub rows: Vec<PublishedRow>,
}

impl PublishedRecord {
    /// Where the figures were printed: the paper and its table.
    pub fn citation(&self) -> String {
        format!("{}, {}", self.source, self.table)
    }

    /// The load the row labelled `label` was measured under, in the paper's words: the
    /// row's own, else the table's unless the table gives it per row; `None` when the
    /// paper does not say (never "none" in its stead).
    pub fn load_of(&self, label: &str) -> Option<&str> {
        let row = self.rows.iter().find(|r| r.label == label)?;
        match &row.load {
            Some(load) => Some(load),
            None if self.load.starts_with("per row") => None,
            None => Some(&self.load),
        }
    }
}

/// One row (or column) of a published table, its figures as printed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PublishedRow {
    /// The row's label as printed.
    pub label: String,
    /// The row's kernel, when the table compares kernels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// The row's load, when the table compares loads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<String>,
    /// The period, as a duration (`3.25ms`); absent when the paper gives none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period: Option<String>,
    /// The number of samples, when the paper gives it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<u64>,
    /// Smallest sample, as printed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<String>,
    /// Mean, as printed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean: Option<String>,
    /// Largest sample, as printed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<String>,
    /// Standard deviation, as printed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stddev: Option<String>,
    /// The 99.999th percentile, as printed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_999: Option<String>,
}

/// Whether `id` is the id of the reference named `name`: `ref:` and the name, of
/// lowercase letters, digits and dashes only (an id names files and URLs).
pub fn is_reference_id(id: &str, name: &str) -> bool {
    let plain = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    plain && id.strip_prefix(REFERENCE_PREFIX) == Some(name)
}

#[cfg(test)]
mod tests {
    use crate::published::reference_run;

    #[test]
    fn a_rows_load_is_its_own_else_the_tables_else_unknown() {
        let table1 = reference_run("rr-table1").unwrap();
        let record = table1.published.unwrap();
        assert_eq!(record.load_of("A Linux 2.2.13"), Some(record.load.as_str()));
        let loongson = reference_run("loongson-table2").unwrap();
        let mut record = loongson.published.unwrap();
        assert_eq!(record.load_of("ping"), Some("ping"));
        // A table that gives the load per row, and a row that does not say.
        record.rows[1].load = None;
        assert_eq!(record.load_of("ping"), None);
        assert_eq!(record.load_of("no such row"), None);
    }
}
