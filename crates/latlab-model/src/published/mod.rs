//! Published figures as reference runs: the tables of the papers latlab's methods come
//! from (Rapid Reaction Linux Tables 1–5, Realfeel, the Loongson and Geode RT-preempt
//! reports, McKenney's nanosleep figures), shipped in `references/*.toml` and turned into
//! Runs that compare, report and show take beside this machine's runs.
//!
//! A reference Run is marked as what it is: its [`published`](crate::run::Run::published)
//! record names the paper, the table, the machine, kernel, load, the unit the figures are
//! printed in, the rows as printed, and what the table lacks; its id is `ref:NAME`. Every
//! figure the paper does not give is unknown (`null`), never 0: no histogram, so no
//! percentiles; no deviation unless printed. A row without a published sample count is
//! no stream (a stream's count is a number): its figures stay in the record's rows.

mod build;
mod table;
pub mod tick;

pub use crate::run::{
    is_reference_id, PublishedRecord, PublishedRow, NOT_MEASURED_HERE, REFERENCE_PREFIX,
};
pub use build::reference_run;
pub use table::{PublishedTable, RowFigures, TableError};

/// The shipped data files, by name.
const FILES: [(&str, &str); 10] = [
    ("rr-table1", include_str!("../../references/rr-table1.toml")),
    ("rr-table2", include_str!("../../references/rr-table2.toml")),
    ("rr-table3", include_str!("../../references/rr-table3.toml")),
    ("rr-table4", include_str!("../../references/rr-table4.toml")),
    ("rr-table5", include_str!("../../references/rr-table5.toml")),
    (
        "realfeel-table1",
        include_str!("../../references/realfeel-table1.toml"),
    ),
    (
        "loongson-table2",
        include_str!("../../references/loongson-table2.toml"),
    ),
    (
        "geode-cyclictest-1min",
        include_str!("../../references/geode-cyclictest-1min.toml"),
    ),
    (
        "geode-cyclictest-24h",
        include_str!("../../references/geode-cyclictest-24h.toml"),
    ),
    (
        "mckenney-nanosleep",
        include_str!("../../references/mckenney-nanosleep.toml"),
    ),
];

/// Why a reference cannot be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PublishedError {
    /// No shipped table has the name.
    #[error(
        "no published reference named '{name}': the references are {} (latlab runs \
         --references lists them)",
        names().join(", ")
    )]
    Unknown {
        /// The name asked for.
        name: String,
    },
    /// A shipped table does not read: a defect of latlab.
    #[error("{0}; the reference data shipped with latlab is damaged: report this")]
    Table(TableError),
}

/// The names of the shipped references, in order.
pub fn names() -> Vec<&'static str> {
    FILES.iter().map(|(name, _)| *name).collect()
}

/// The shipped table named `name`.
pub fn table_named(name: &str) -> Result<PublishedTable, PublishedError> {
    let (_, text) =
        FILES
            .iter()
            .find(|(n, _)| *n == name)
            .ok_or_else(|| PublishedError::Unknown {
                name: name.to_string(),
            })?;
    let table: PublishedTable = toml::from_str(text).map_err(|e| {
        PublishedError::Table(TableError {
            table: name.to_string(),
            row: String::new(),
            field: "file",
            problem: e.to_string(),
        })
    })?;
    Ok(table)
}

/// Every shipped table, in order.
pub fn catalogue() -> Result<Vec<PublishedTable>, PublishedError> {
    names().into_iter().map(table_named).collect()
}

/// The reference name in `text` (`rr-table3` of `ref:rr-table3`), `None` when it does
/// not name a reference.
pub fn reference_name(text: &str) -> Option<&str> {
    text.trim().strip_prefix(REFERENCE_PREFIX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_parses_with_its_name_unit_and_figures() {
        let tables = catalogue().unwrap();
        assert_eq!(tables.len(), FILES.len());
        for table in &tables {
            assert!(names().contains(&table.name.as_str()), "{}", table.name);
            assert!(
                table.unit_ns().is_some(),
                "{}: unit {}",
                table.name,
                table.unit
            );
            assert!(
                !table.row.is_empty() && !table.lacks.is_empty(),
                "{}",
                table.name
            );
            for row in &table.row {
                let f = table.figures(row).unwrap();
                assert!(
                    f.min.is_some() || f.mean.is_some() || f.max.is_some(),
                    "{}: {} has no figure",
                    table.name,
                    row.label
                );
                if let (Some(min), Some(max)) = (f.min, f.max) {
                    assert!(min <= max, "{}: {}", table.name, row.label);
                }
            }
        }
    }

    #[test]
    fn the_tables_have_the_rows_and_counts_the_papers_print() {
        let rows = |name| table_named(name).unwrap().row;
        let samples = |name| -> Vec<Option<u64>> { rows(name).iter().map(|r| r.samples).collect() };
        for name in ["rr-table1", "rr-table2"] {
            assert_eq!(samples(name), vec![Some(1000); 6], "{name}");
        }
        for name in ["rr-table3", "rr-table4"] {
            assert_eq!(samples(name), vec![Some(1000); 8], "{name}");
        }
        assert_eq!(samples("rr-table5"), vec![None; 3]);
        assert_eq!(samples("realfeel-table1"), vec![Some(3_500_000); 6]);
        assert_eq!(samples("loongson-table2"), vec![None; 7]);
        assert_eq!(samples("geode-cyclictest-1min"), vec![Some(50_000); 8]);
        assert_eq!(
            samples("geode-cyclictest-24h"),
            vec![Some(65_512_035), Some(65_543_590)]
        );
        assert_eq!(samples("mckenney-nanosleep"), vec![None]);
        // Tables 3 and 4 sweep the same periods: the period-sweep scenario's.
        let periods =
            |name| -> Vec<Option<String>> { rows(name).into_iter().map(|r| r.period).collect() };
        assert_eq!(periods("rr-table3"), periods("rr-table4"));
        let t4 = table_named("rr-table4").unwrap();
        let f = t4.figures(&t4.row[7]).unwrap();
        assert_eq!(f.period, Some(crate::Nanos(53_350_000)));
        assert_eq!(
            (f.min, f.mean, f.max),
            (
                Some(crate::Nanos(8_900_000)),
                Some(16_600_000.0),
                Some(crate::Nanos(16_700_000))
            )
        );
    }

    #[test]
    fn an_unknown_name_lists_the_references() {
        let e = table_named("rr-table9").unwrap_err().to_string();
        assert!(e.contains("rr-table9") && e.contains("rr-table3"), "{e}");
        assert_eq!(reference_name("ref:rr-table3"), Some("rr-table3"));
        assert_eq!(reference_name("last"), None);
    }
}
