//! A run's row in the store's index, built once for every back-end (SQLite and
//! PostgreSQL): the columns listing and trend queries read, beside the Run's own JSON.
//! The index's text columns hold "" for what an imported Run does not know (the Run
//! itself holds null); a percentile known only as a bound is flagged as one.

use crate::summary::Listing;
use latlab_model::run::{Percentile, Run, Stream};
use latlab_model::series::SeriesFigures;

/// A [`Listing`] as the store's columns hold it: lists and tags as JSON text, `NULL`
/// for unknown (and for no tags).
pub(crate) struct ListingColumns {
    pub(crate) name: Option<String>,
    pub(crate) tags: Option<String>,
    pub(crate) note: Option<String>,
    pub(crate) probes: Option<String>,
    pub(crate) periods: Option<String>,
    pub(crate) cpus: Option<String>,
    pub(crate) duration_ns: Option<i64>,
    pub(crate) loads: Option<String>,
}

impl ListingColumns {
    pub(crate) fn of(listing: &Listing) -> ListingColumns {
        let text = |v: serde_json::Value| v.to_string();
        ListingColumns {
            name: listing.name.clone(),
            tags: (!listing.tags.is_empty()).then(|| text(serde_json::json!(listing.tags))),
            note: listing.note.clone(),
            probes: listing.probes.as_ref().map(|v| text(serde_json::json!(v))),
            periods: listing
                .periods_ns
                .as_ref()
                .map(|v| text(serde_json::json!(v))),
            cpus: listing.cpus.as_ref().map(|v| text(serde_json::json!(v))),
            duration_ns: listing.duration_ns,
            loads: listing.loads.as_ref().map(|v| text(serde_json::json!(v))),
        }
    }

    /// Reads the columns back; a value that is not what latlab writes reads as unknown.
    pub(crate) fn listing(&self) -> Listing {
        // Each column's type is known where it is read, so serde_json infers it.
        macro_rules! parse {
            ($column:expr) => {
                $column
                    .as_deref()
                    .and_then(|t| serde_json::from_str(t).ok())
            };
        }
        Listing {
            name: self.name.clone(),
            tags: parse!(self.tags).unwrap_or_default(),
            note: self.note.clone(),
            probes: parse!(self.probes),
            periods_ns: parse!(self.periods),
            cpus: parse!(self.cpus),
            duration_ns: self.duration_ns,
            loads: parse!(self.loads),
        }
    }
}

/// A run's progress as the store's columns hold it: `NULL` for a run that ended.
pub(crate) struct ProgressColumns {
    pub(crate) state: Option<&'static str>,
    pub(crate) json: Option<String>,
}

impl ProgressColumns {
    pub(crate) fn of(run: &Run) -> ProgressColumns {
        ProgressColumns {
            state: run.progress.as_ref().map(|p| p.state.name()),
            json: run
                .progress
                .as_ref()
                .map(|p| serde_json::to_string(p).expect("a Progress always serialises")),
        }
    }
}

pub(crate) fn worst(run: &Run, f: impl Fn(&Stream) -> Option<i64>) -> Option<i64> {
    run.streams.iter().filter_map(f).max()
}

/// The worst p99.9 over the run's streams: a bound when any stream's is one (its sample
/// may lie above every other stream's).
pub(crate) fn worst_p99_9(run: &Run) -> Option<Percentile> {
    Percentile::worst_of(run.streams.iter().filter_map(|s| s.stats.percentile(99.9)))
}

/// `run`'s figures per series as the index keeps them.
pub(crate) fn series_json(run: &Run) -> String {
    serde_json::to_string(&SeriesFigures::of_run(run)).expect("figures always serialise")
}

/// What a run's row holds beside its id, scenario and degraded flag: the same for
/// every back-end.
pub(crate) struct IndexRow {
    pub(crate) started_at: String,
    pub(crate) host: String,
    pub(crate) kernel: String,
    pub(crate) p99_9_ns: Option<i64>,
    pub(crate) p99_9_bound: bool,
    pub(crate) max_ns: Option<i64>,
    pub(crate) verdict: String,
    pub(crate) json: String,
    pub(crate) listing: ListingColumns,
    pub(crate) progress: ProgressColumns,
    /// Its figures per series ([`SeriesFigures`]) as JSON: what the farm view reads
    /// instead of the whole Run.
    pub(crate) series: String,
}

impl IndexRow {
    pub(crate) fn of(run: &Run) -> IndexRow {
        let p99_9 = worst_p99_9(run);
        IndexRow {
            // The index's columns hold "" for what an imported Run does not know.
            started_at: run.started_at.clone().unwrap_or_default(),
            host: run
                .host
                .as_ref()
                .map_or(String::new(), |h| h.hostname.clone()),
            kernel: run
                .host
                .as_ref()
                .map_or(String::new(), |h| h.kernel_release.clone()),
            p99_9_ns: p99_9.map(|p| p.value().0),
            p99_9_bound: p99_9.is_some_and(Percentile::is_bound),
            max_ns: worst(run, |s| s.stats.max_ns.map(|n| n.0)),
            // The outcome, as every view shows it (rows stored before it was kept say
            // the thresholds' verdict: pass, fail, undecided, none).
            verdict: run
                .exit_status()
                .word()
                .to_ascii_lowercase()
                .replace(' ', "-"),
            json: serde_json::to_string(run).expect("a Run always serialises"),
            listing: ListingColumns::of(&Listing::of(run)),
            progress: ProgressColumns::of(run),
            series: series_json(run),
        }
    }
}
