//! Imports: other tools' result files as Runs, so reports, comparisons and the store work
//! on results latlab did not measure.
//!
//! One file per format, each parsing the exact layout the tool's source prints (cited in
//! the file), refusing anything else with the file, the line and the fix. Whatever the
//! source does not have is never invented: the fields it would fill are `null`, and the
//! Run's [`import`](latlab_model::run::Run::import) record says in sentences what it lacked
//! (`lacks`).
//!
//! ```
//! use latlab_formats::import::{self, Format, ImportContext};
//! let text = concat!(
//!     "# Histogram\n000003 000002\n000004 000001\n# Total: 000000003\n",
//!     "# Min Latencies: 00003\n# Avg Latencies: 00003\n# Max Latencies: 00004\n",
//!     "# Histogram Overflows: 00000\n# Histogram Overflow at cycle number:\n# Thread 0:\n",
//! );
//! let format = import::detect(text.as_bytes()).unwrap();
//! assert_eq!(format, Format::CyclictestHist);
//! let ctx = ImportContext::new("hist.txt", "20261121T000000Z-abcdef", "2026-11-21T00:00:00.000Z");
//! let run = import::import(format, text.as_bytes(), &ctx).unwrap();
//! assert_eq!(run.streams[0].samples, 3);
//! ```

mod binned;
mod build;
mod cyclictest_cmdline;
mod cyclictest_hist;
mod cyclictest_json;
mod cyclictest_status;
mod cyclictest_verbose;
mod error;
mod getopt;
mod jitterdebugger;
mod lines;
mod oslat_json;
mod oslat_text;
mod plausible;
mod printf_json;
mod provenance;
mod rt_json;
mod rtla_timerlat;
pub(crate) mod time;

pub use error::ImportError;

use latlab_model::hist::Edge;
use latlab_model::run::Run;
use latlab_model::Nanos;
use std::fmt;
use std::io::BufRead;
use std::path::PathBuf;

/// A foreign result format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// `cyclictest --json=FILE`.
    CyclictestJson,
    /// `cyclictest -h N` histogram text, with or without zero rows and `# Total`.
    CyclictestHist,
    /// `cyclictest -v` log: one `thread:cycle:value` line per sample.
    CyclictestVerbose,
    /// `rtla timerlat hist` text.
    RtlaTimerlatHist,
    /// `oslat` text summary.
    Oslat,
    /// `oslat --json=FILE`.
    OslatJson,
    /// jitterdebugger's JSON (`-f FILE`, or `results.json` of `-o DIR`).
    Jitterdebugger,
}

impl Format {
    /// Every format.
    pub const ALL: [Format; 7] = [
        Format::CyclictestJson,
        Format::CyclictestHist,
        Format::CyclictestVerbose,
        Format::RtlaTimerlatHist,
        Format::Oslat,
        Format::OslatJson,
        Format::Jitterdebugger,
    ];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::CyclictestJson => "cyclictest-json",
            Format::CyclictestHist => "cyclictest-hist",
            Format::CyclictestVerbose => "cyclictest-verbose",
            Format::RtlaTimerlatHist => "rtla-timerlat-hist",
            Format::Oslat => "oslat",
            Format::OslatJson => "oslat-json",
            Format::Jitterdebugger => "jitterdebugger",
        }
    }

    /// The format named `name` ([`Format::name`]).
    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == name)
    }

    /// Which value of a histogram bucket stands for its samples in a Run imported
    /// from this format: a `-v` log's samples are recorded at their own values, every
    /// other format's at the lower edges of the source's buckets.
    pub fn bucket_edge(self) -> Edge {
        match self {
            Format::CyclictestVerbose => Edge::Highest,
            _ => Edge::Lowest,
        }
    }

    /// One line on what produces it.
    pub fn describe(self) -> &'static str {
        match self {
            Format::CyclictestJson => "cyclictest --json=FILE",
            Format::CyclictestHist => "cyclictest -h N output (histogram text)",
            Format::CyclictestVerbose => "cyclictest -v output (one line per sample)",
            Format::RtlaTimerlatHist => "rtla timerlat hist output",
            Format::Oslat => "oslat output (text summary)",
            Format::OslatJson => "oslat --json=FILE",
            Format::Jitterdebugger => "jitterdebugger JSON (-f FILE, or results.json of -o DIR)",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The unit of a file's values, for formats whose files do not say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    /// Microseconds (cyclictest's default).
    Microseconds,
    /// Nanoseconds (cyclictest `-N`).
    Nanoseconds,
}

impl TimeUnit {
    /// Nanoseconds in one unit.
    pub fn nanos(self) -> i64 {
        match self {
            TimeUnit::Microseconds => 1_000,
            TimeUnit::Nanoseconds => 1,
        }
    }

    /// `us` or `ns`.
    pub fn name(self) -> &'static str {
        match self {
            TimeUnit::Microseconds => "us",
            TimeUnit::Nanoseconds => "ns",
        }
    }

    /// Parses `us` (or `µs`) and `ns`.
    pub fn from_name(name: &str) -> Option<TimeUnit> {
        match name {
            "us" | "µs" => Some(TimeUnit::Microseconds),
            "ns" => Some(TimeUnit::Nanoseconds),
            _ => None,
        }
    }
}

/// What an import needs besides the file's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportContext {
    /// The file as the user named it: in messages and in the Run's provenance.
    pub file: String,
    /// The Run's id, made by the caller.
    pub id: String,
    /// When the import happens (RFC 3339 UTC), by the caller's clock.
    pub imported_at: String,
    /// The unit of the values, for formats whose files do not say it (cyclictest `-h`
    /// text and `-v` logs: µs unless cyclictest ran with `-N`). `None` reads them as µs
    /// and says so in the provenance. For a file that states its unit, a different unit
    /// here is an error.
    pub unit: Option<TimeUnit>,
    /// The measuring period, for formats whose files do not state it unambiguously (a
    /// single-thread cyclictest `-v` log): it places the log's samples in time for the
    /// timeline and spikes, and counts missed periods. A period the file does state
    /// differently is an error.
    pub period: Option<Nanos>,
    /// The directory holding the file, for tools that save other files beside their
    /// results (jitterdebugger `-o DIR`: `cpuinfo`, `config.gz`), which give host facts.
    /// `None` reads the file alone.
    pub directory: Option<PathBuf>,
}

impl ImportContext {
    /// A context without unit or period overrides.
    pub fn new(file: &str, id: &str, imported_at: &str) -> ImportContext {
        ImportContext {
            file: file.to_string(),
            id: id.to_string(),
            imported_at: imported_at.to_string(),
            unit: None,
            period: None,
            directory: None,
        }
    }
}

/// How many leading bytes of a file [`detect`] looks at, at most.
pub const DETECT_BYTES: usize = 64 * 1024;

/// The format of a file from its first bytes (up to [`DETECT_BYTES`]), or `None` when it
/// is none of them (a latlab Run is none of them either).
pub fn detect(head: &[u8]) -> Option<Format> {
    let head = &head[..head.len().min(DETECT_BYTES)];
    // A cut in the middle of a UTF-8 sequence at the end is not a reason to give up.
    let text = match std::str::from_utf8(head) {
        Ok(t) => t,
        Err(e) if e.error_len().is_none() => {
            std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or_default()
        }
        Err(_) => return None,
    };
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') {
        return detect_json(trimmed);
    }
    if text.contains("# RTLA timerlat histogram") {
        return Some(Format::RtlaTimerlatHist);
    }
    if text
        .lines()
        .any(|l| l.starts_with("oslat V ") || l.contains("Counter Freq:"))
    {
        return Some(Format::Oslat);
    }
    // A -v log may end with a histogram (-v -h), so samples first decide. Without -q,
    // cyclictest's live status lines come before the histogram, and a long run's fill
    // more than the head: they show a -h file (-v prints samples instead).
    let mut complete = text.lines().collect::<Vec<_>>();
    if !text.ends_with('\n') {
        complete.pop();
    }
    complete.iter().find_map(|l| {
        if cyclictest_verbose::is_sample_line(l.as_bytes()) {
            Some(Format::CyclictestVerbose)
        } else if *l == "# Histogram"
            || l.starts_with("# Min Latencies:")
            || cyclictest_status::is_status_line(l)
        {
            Some(Format::CyclictestHist)
        } else {
            None
        }
    })
}

/// Which JSON result a document starting with `{` is.
fn detect_json(text: &str) -> Option<Format> {
    if Run::looks_like_run(text.as_bytes()) {
        return None;
    }
    // jitterdebugger's results are per `cpu` with a `count` each (its version 3 also
    // has `resolution_in_ns`, in `sysinfo`); cyclictest writes `resolution_in_ns` before
    // its threads (whose histograms can be long) and `cycles` in each; oslat writes
    // `freq` first in each thread.
    if text.contains("\"cpu\"") && text.contains("\"count\"") && !text.contains("\"thread\"") {
        return Some(Format::Jitterdebugger);
    }
    if text.contains("\"resolution_in_ns\"")
        || (text.contains("\"thread\"") && text.contains("\"cycles\""))
    {
        return Some(Format::CyclictestJson);
    }
    if text.contains("\"thread\"") && text.contains("\"freq\"") {
        return Some(Format::OslatJson);
    }
    None
}

/// Imports one file in `format`. Nothing is half-imported: a problem anywhere in the file
/// gives an error naming the file and the line, and no Run. Give `input` a large buffer
/// (`BufReader::with_capacity(1 << 20, file)`): cyclictest `-v` logs are read straight
/// from it and can be gigabytes.
pub fn import(
    format: Format,
    input: impl BufRead,
    ctx: &ImportContext,
) -> Result<Run, ImportError> {
    match format {
        Format::CyclictestJson => cyclictest_json::import(input, ctx),
        Format::CyclictestHist => cyclictest_hist::import(input, ctx),
        Format::CyclictestVerbose => cyclictest_verbose::import(input, ctx),
        Format::RtlaTimerlatHist => rtla_timerlat::import(input, ctx),
        Format::Oslat => oslat_text::import(input, ctx),
        Format::OslatJson => oslat_json::import(input, ctx),
        Format::Jitterdebugger => jitterdebugger::import(input, ctx),
    }
}

/// A file's unit: the context's override, or µs (the default of the tools that do not
/// say), noted as assumed.
fn unit_or_default(
    ctx: &ImportContext,
    provenance: &mut provenance::Provenance,
    what: &str,
) -> TimeUnit {
    ctx.unit.unwrap_or_else(|| {
        provenance.lack(format!(
            "the file does not state its unit: read as µs ({what}'s default; import with \
             the unit ns if it ran with -N)"
        ));
        TimeUnit::Microseconds
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for f in Format::ALL {
            assert_eq!(Format::from_name(f.name()), Some(f));
            assert!(!f.describe().is_empty());
        }
        assert_eq!(Format::from_name("csv"), None);
        assert_eq!(TimeUnit::from_name("ns"), Some(TimeUnit::Nanoseconds));
    }

    /// What the model reads from an imported Run's format name is what each format
    /// records.
    #[test]
    fn the_models_bucket_edge_is_each_formats() {
        for f in Format::ALL {
            let mut run = latlab_model::fixture::run();
            run.import = Some(latlab_model::run::ImportRecord {
                format: f.name().to_string(),
                file: "f".to_string(),
                imported_at: "2026-11-21T00:00:00.000Z".to_string(),
                lacks: Vec::new(),
            });
            assert_eq!(run.bucket_edge(), f.bucket_edge(), "{}", f.name());
        }
    }

    #[test]
    fn detect_refuses_what_is_none_of_them() {
        assert_eq!(detect(b""), None);
        assert_eq!(detect(b"hello\nworld\n"), None);
        assert_eq!(detect(b"{\"schema\": \"latlab.run/1\"}"), None);
        assert_eq!(detect(&[0xff, 0xfe, 0x00]), None);
        let oslat = "{\n  \"thread\": {\n    \"0\": {\n      \"cpu\": 1,\n      \"freq\": 2604,";
        assert_eq!(detect(oslat.as_bytes()), Some(Format::OslatJson));
    }
}
