//! The command line: raw arguments as clap parses them.
//!
//! Values stay text here; `latlab run`'s options become a [`RunInput`], which the
//! plan (`latlab_measure::plan`) turns into a validated request naming the flag in
//! every error.

use crate::error::CliError;
use crate::store::StoreLocation;
use clap::builder::{PossibleValue, PossibleValuesParser};
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use latlab_measure::plan::RunInput;
use latlab_report::compare::Tolerance;
use latlab_session::labels::Labels;
use std::ffi::OsString;
use std::path::PathBuf;

/// A real-time latency laboratory for Linux.
#[derive(Debug, Parser)]
#[command(name = "latlab", version, about, long_about = None, max_term_width = 100)]
pub struct Cli {
    /// Colour the output: auto (on a terminal, unless NO_COLOR is set), always, never.
    #[arg(
        long,
        value_name = "WHEN",
        global = true,
        default_value = "auto",
        display_order = 900
    )]
    pub color: ColorWhen,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// `--color`: when to colour output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorWhen {
    // Plain comments, not doc comments: clap would list these lines under every
    // subcommand's --help, as the flag is global.
    // When the output is a terminal and `NO_COLOR` is not set (no-color.org).
    Auto,
    // Always, also into files and pipes (`less -R`).
    Always,
    // Never.
    Never,
}

/// The command line's definition: the derived one, completed with what is only known
/// at run time (the export formats, each with its one line). Parsing, help, the
/// completions and the manual page all come from it, so they cannot disagree.
pub fn command() -> clap::Command {
    let formats: Vec<PossibleValue> = latlab_formats::export::exporters()
        .into_iter()
        .map(|e| PossibleValue::new(e.name()).help(e.describe()))
        .collect();
    Cli::command().mut_subcommand("export", |export| {
        export.mut_arg("format", |format| {
            format.value_parser(PossibleValuesParser::new(formats))
        })
    })
}

/// Parses the arguments (program name first) with [`command`].
pub fn parse(args: &[OsString]) -> Result<Cli, clap::Error> {
    let matches = command().try_get_matches_from(args)?;
    Cli::from_arg_matches(&matches).map_err(|e| e.format(&mut command()))
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Measure periodic wake-up latency (the cyclictest / Wilshire test).
    Run(Box<RunArgs>),
    /// `latlab run` written with cyclictest's flags (-m -p -i -a -t -S -n -r -D -l -h
    /// -q -b -N, --policy, --json, --laptop): says the latlab command, then runs it.
    Cyclictest(CyclictestArgs),
    /// List the runs in the store, newest added first, with filters.
    Runs(RunsArgs),
    /// One stored run's summary (RUN: an id, a unique prefix, a name, last, last~1, ...).
    Show(ShowArgs),
    /// What got in the way of a run's spikes (runs measured with --explain): the
    /// catalogue of causes, then the largest spikes part by part.
    Explain(ExplainArgs),
    /// Remove runs from the store.
    Rm(RmArgs),
    /// Remove the runs added to the store before a time.
    Prune(PruneArgs),
    /// Send the runs kept locally while their central (PostgreSQL) store could not be
    /// reached to that store; a run pushed twice is stored once.
    Push(PushArgs),
    /// A stored run in a format other tools read (`latlab help export` lists them).
    Export(ExportArgs),
    /// Runs side by side, with a regression verdict (exit 1 on regression).
    Compare(CompareArgs),
    /// A report of one or several runs: HTML with plots, Markdown, text, or one plot as SVG.
    Report(ReportArgs),
    /// A figure of many runs over time, per host, kernel, scenario or tag (OSADL's
    /// long-term view): a table per group, and the plot with -o.
    Trend(TrendArgs),
    /// The store's runs, reports, comparisons and trends as web pages (read-only,
    /// loopback unless --listen-any), until stopped.
    Serve(ServeArgs),
    /// Other tools' result files into the store: cyclictest, rtla, oslat, jitterdebugger.
    Import(ImportArgs),
    /// Watch an application's own periodic loop (latlab_rt::periodic or
    /// <latlab/periodic.h>) live: its wake-up latency (the system) and compute time (its
    /// code); at the end a Run of it, stored like any other.
    Attach(AttachArgs),
    /// Real-time readiness audit: each check's verdict, evidence and fix (exit 1 if any fails).
    Check(CheckArgs),
    /// List the timer probe's sleep methods.
    Methods(LayoutArgs),
    /// List the primitive probes (--long: what each sample spans, and the parameters).
    Probes(ProbesArgs),
    /// List the background loads, with their parameters.
    Loads(LayoutArgs),
    /// List the built-in scenarios, or print one (scenarios show NAME).
    Scenarios(ScenariosArgs),
    /// A shell's completion script, on standard output.
    #[command(after_help = "\
Install, e.g.:
  latlab completions bash > /etc/bash_completion.d/latlab
  latlab completions zsh > /usr/local/share/zsh/site-functions/_latlab
  latlab completions fish > ~/.config/fish/completions/latlab.fish")]
    Completions(CompletionsArgs),
    /// The manual page (roff) on standard output, or every page into a directory.
    #[command(after_help = "\
Read it with `latlab man | man -l -`; install with
`latlab man --dir /usr/local/share/man/man1`.")]
    Man(ManArgs),
}

impl Command {
    /// The layout asked for: `--format`, or `report --wide`; fit for the others.
    pub fn layout(&self) -> Layout {
        match self {
            Command::Run(a) => a.layout.format,
            Command::Runs(RunsArgs { layout, .. })
            | Command::Show(ShowArgs { layout, .. })
            | Command::Explain(ExplainArgs { layout, .. })
            | Command::Compare(CompareArgs { layout, .. })
            | Command::Check(CheckArgs { layout, .. })
            | Command::Probes(ProbesArgs { layout, .. })
            | Command::Scenarios(ScenariosArgs { layout, .. })
            | Command::Methods(layout)
            | Command::Loads(layout) => layout.format,
            Command::Report(a) if a.wide => Layout::Wide,
            _ => Layout::Fit,
        }
    }
}

/// `--format` of the commands that print tables.
#[derive(Debug, Args)]
pub struct LayoutArgs {
    /// fit: tables and lines fit the terminal's width (its own, else COLUMNS; into a
    /// pipe or file nothing is narrowed); wide: every table whole, whatever the width.
    #[arg(long = "format", value_name = "fit|wide", default_value = "fit")]
    pub format: Layout,
}

/// `--format`: how wide tables and lines are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Layout {
    // Plain comments: `--format`'s help says both.
    // To the terminal's width.
    Fit,
    // Whole, whatever the width.
    Wide,
}

/// `latlab completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

/// `latlab man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write latlab.1 and a page per subcommand (latlab-run.1, ...) into DIR instead.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// `latlab probes`.
#[derive(Debug, Args)]
pub struct ProbesArgs {
    /// Each probe's definition and parameters.
    #[arg(long)]
    pub long: bool,
    /// How wide.
    #[command(flatten)]
    pub layout: LayoutArgs,
}

/// `latlab scenarios`.
#[derive(Debug, Args)]
pub struct ScenariosArgs {
    /// `show NAME` prints a built-in scenario's TOML.
    #[arg(value_name = "show NAME", num_args = 0..=2)]
    pub words: Vec<String>,
    /// How wide.
    #[command(flatten)]
    pub layout: LayoutArgs,
}

/// `latlab run`.
#[derive(Debug, Args)]
#[command(after_help = "\
Durations and periods take units: 250us, 1.5ms, 30s, 10m, 2h, 1h30m.
Thresholds: --max 100us, or any percentile as --p99 50us, --p99.9 80us, --p99.999 120us.
Exit codes: 0 passed (or no thresholds), 1 a threshold failed, 2 usage or configuration
error or a threshold that cannot be judged, 3 could not measure, 4 measured less than
asked (incomplete), 5 measured under degraded conditions (untrusted); --accept lets 4
and 5 through.")]
pub struct RunArgs {
    /// A built-in scenario (latlab scenarios lists them) or a scenario file. Flags
    /// given with it override its values; --load adds to every phase.
    #[arg(value_name = "SCENARIO")]
    pub scenario: Option<String>,
    /// CPUs to measure, one thread each: 'all', 3, 0-3,5 [default: the CPUs the
    /// kernel isolates (isolcpus, nohz_full) if any, else those latlab was started on].
    #[arg(short = 'c', long = "cpus", value_name = "LIST")]
    pub cpus: Option<String>,
    /// Scheduling policy: f:95 (fifo), r:50 (rr), o:0 (other), b:0, i, d:RUNTIME:PERIOD
    /// [default: f:95].
    #[arg(short = 'P', long = "priority", value_name = "POLICY")]
    pub priority: Option<String>,
    /// Period between wake-ups [default: 1ms].
    #[arg(short = 'p', long, value_name = "DURATION")]
    pub period: Option<String>,
    /// How long to measure (each phase of a scenario); 0 = until Ctrl-C [default: 30s].
    #[arg(short = 'd', long, value_name = "DURATION")]
    pub duration: Option<String>,
    /// Sleep method: abs, rel, timerfd, posix-timer, spin, hybrid [default: abs].
    #[arg(long, value_name = "METHOD")]
    pub method: Option<String>,
    /// Clock to read and sleep on: monotonic, realtime, boottime, tai [default: monotonic].
    #[arg(long, value_name = "CLOCK")]
    pub clock: Option<String>,
    /// Discard this span before measuring, in each phase [default: 0].
    #[arg(long, value_name = "DURATION")]
    pub warm_up: Option<String>,
    /// Hold /dev/cpu_dma_latency at this many µs while measuring (keeps CPUs out of deep C-states).
    #[arg(long, value_name = "US", default_value_t = 0)]
    pub dma_latency: i32,
    /// Leave the system alone: no /dev/cpu_dma_latency request.
    #[arg(long)]
    pub no_tune: bool,
    /// Do not sample the measured CPUs' interrupts, softirqs, steal, frequency, C-states
    /// and SMIs beside the timeline (sampled by default, from a housekeeping CPU).
    #[arg(long)]
    pub no_telemetry: bool,
    /// Do not lock memory (mlockall). The run is then not a real-time measurement.
    #[arg(long, conflicts_with = "mlock_all")]
    pub no_mlock: bool,
    /// Lock every mapped page, used or not (cyclictest -m), instead of every page the
    /// measurement touches after rehearsing it.
    #[arg(long)]
    pub mlock_all: bool,
    /// Timer slack of the measuring threads (default: as inherited).
    #[arg(long, value_name = "DURATION")]
    pub timer_slack: Option<String>,
    /// For --method hybrid: sleep until this long before the deadline, then spin
    /// [default: 50us].
    #[arg(long, value_name = "DURATION")]
    pub hybrid_margin: Option<String>,
    /// Stop the run (and ftrace, writing a trace marker) when a sample exceeds this.
    #[arg(short = 'b', long, value_name = "DURATION")]
    pub breaktrace: Option<String>,
    /// Keep every sample above this, with its time (bounded by --spike-nodes).
    #[arg(long, value_name = "DURATION")]
    pub spike: Option<String>,
    /// How many samples above --spike to keep per thread.
    #[arg(long, value_name = "N", default_value_t = 1024)]
    pub spike_nodes: usize,
    /// Explain every sample above --spike (default 100us with this flag) from kernel
    /// trace events: what got in the way. --explain=deep traces more (hrtimers, every
    /// wake-up, workqueue functions). Needs tracefs (root).
    #[arg(
        long,
        value_name = "MODE",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "default"
    )]
    pub explain: Option<String>,
    /// How many of the largest samples to keep per thread, with their times [default: 10].
    #[arg(long, value_name = "N")]
    pub top: Option<usize>,
    /// Timeline interval (per-interval max and count) [default: 1s].
    #[arg(long, value_name = "DURATION")]
    pub interval: Option<String>,
    /// Fail (exit 1) if any sample exceeds this.
    #[arg(long, value_name = "DURATION")]
    pub max: Option<String>,
    /// Fail (exit 1) if a metric exceeds a limit: METRIC=LIMIT, e.g. p99.9=80us, mean=20us.
    #[arg(long = "threshold", value_name = "METRIC=LIMIT")]
    pub thresholds: Vec<String>,
    /// The percentile flags (`--p99 50us`) as `p99=50us`, kept apart from --threshold so
    /// that errors name the flag the user wrote.
    #[arg(long = "percentile-limit", value_name = "PNN=LIMIT", hide = true)]
    pub percentile_limits: Vec<String>,
    /// Let a run that measured less than asked (incomplete: stopped before its
    /// duration) or under degraded conditions (untrusted: e.g. without real-time
    /// priority) pass on its thresholds; otherwise it exits 4 or 5.
    #[arg(long, value_name = "incomplete,untrusted")]
    pub accept: Option<String>,
    /// Run a background load while measuring (repeatable): NAME, NAME:key=value,...,
    /// or 'exec:COMMAND'. `latlab loads` lists them.
    #[arg(long = "load", value_name = "SPEC")]
    pub loads: Vec<String>,
    /// Measure an OS primitive instead of timer wake-ups (repeatable, one phase each):
    /// NAME or NAME:key=value,... `latlab probes` lists them.
    #[arg(long = "probe", value_name = "SPEC")]
    pub probes: Vec<String>,
    /// CPUs the loads run on [default: all].
    #[arg(long, value_name = "LIST")]
    pub load_cpus: Option<String>,
    /// Directory for the loads' temporary files (default: the system's temporary
    /// directory).
    #[arg(long, value_name = "DIR")]
    pub load_dir: Option<PathBuf>,
    /// Write the Run as JSON to FILE ('-' for stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// No live display (the summary is still printed).
    #[arg(short, long)]
    pub quiet: bool,
    /// Run store: a SQLite file, a postgres:// URL or service=NAME [default:
    /// $LATLAB_STORE, else ~/.local/share/latlab/runs.sqlite].
    #[arg(long, value_name = "PATH|URL", value_parser = StoreLocation::parse)]
    pub store: Option<StoreLocation>,
    /// Do not save the run in the store.
    #[arg(long, conflicts_with = "store")]
    pub no_store: bool,
    /// Serve live metrics at http://ADDR/metrics while the run goes (HOST:PORT, port 0
    /// for any free one): OpenMetrics, or Prometheus text unless asked for OpenMetrics.
    /// Loopback only unless --listen-any. The run's id is then stamped when the
    /// endpoint starts, so the live series and the kept run share it.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// Let --listen bind an address other than loopback (anyone who can reach it can
    /// read the metrics).
    #[arg(long, requires = "listen")]
    pub listen_any: bool,
    /// Keep the run in the store from its start and extend it every D (and rewrite the
    /// --json file), so a crash, a kill or a reboot loses at most D of it; 0 or off:
    /// keep it only when it ends.
    #[arg(long, value_name = "D", default_value = "10s")]
    pub checkpoint: String,
    /// Do not audit the configuration (latlab check) before measuring: the run then has
    /// no audit, and its peak memory is that of the measurement alone.
    #[arg(long)]
    pub no_audit: bool,
    /// The user's name, tags and note for the run.
    #[command(flatten)]
    pub labels: LabelArgs,
    /// How wide.
    #[command(flatten)]
    pub layout: LayoutArgs,
}

/// What a user gives a run to tell it apart (`latlab run`, `latlab import`).
#[derive(Debug, Args)]
pub struct LabelArgs {
    /// A name for the run, unique in the store; it stands for the run wherever a RUN is
    /// asked for (one word: baseline, rt-6.18).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// A tag KEY=VALUE, for finding runs with `latlab runs --tag` (repeatable).
    #[arg(long = "tag", value_name = "KEY=VALUE")]
    pub tags: Vec<String>,
    /// A note kept with the run.
    #[arg(long, value_name = "TEXT")]
    pub note: Option<String>,
}

impl LabelArgs {
    /// The labels, checked.
    pub fn checked(&self) -> Result<Labels, CliError> {
        Labels::checked(self.name.as_deref(), &self.tags, self.note.as_deref())
    }
}

impl RunArgs {
    /// The options the plan is resolved from; the rest (`--json`, `--store`, `-q`,
    /// `--no-audit`) say where the run goes and how it is shown.
    pub fn input(&self) -> RunInput {
        RunInput {
            scenario: self.scenario.clone(),
            cpus: self.cpus.clone(),
            priority: self.priority.clone(),
            period: self.period.clone(),
            duration: self.duration.clone(),
            method: self.method.clone(),
            clock: self.clock.clone(),
            warm_up: self.warm_up.clone(),
            dma_latency_us: self.dma_latency,
            no_tune: self.no_tune,
            no_mlock: self.no_mlock,
            mlock_all: self.mlock_all,
            timer_slack: self.timer_slack.clone(),
            hybrid_margin: self.hybrid_margin.clone(),
            breaktrace: self.breaktrace.clone(),
            spike: self.spike.clone(),
            spike_nodes: self.spike_nodes,
            top: self.top,
            interval: self.interval.clone(),
            max: self.max.clone(),
            thresholds: self.thresholds.clone(),
            percentile_limits: self.percentile_limits.clone(),
            accept: self.accept.clone(),
            loads: self.loads.clone(),
            probes: self.probes.clone(),
            load_cpus: self.load_cpus.clone(),
            load_dir: self.load_dir.clone(),
            explain: self.explain.clone(),
            no_telemetry: self.no_telemetry,
        }
    }
}

/// `latlab cyclictest` (-h is cyclictest's histogram flag: help is --help only).
#[derive(Debug, Args)]
#[command(
    disable_help_flag = true,
    after_help = "\
latlab's own flags go after --: latlab cyclictest -p 80 -D 10 -- --no-store --explain"
)]
pub struct CyclictestArgs {
    /// Print help.
    #[arg(long, action = clap::ArgAction::Help)]
    pub help: Option<bool>,
    /// cyclictest's flags, as cyclictest takes them.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

/// `latlab check`.
#[derive(Debug, Args)]
#[command(after_help = "\
Verdicts: ok (ready), info (worth knowing), unknown (could not be read: the reason is
given), warn (likely to add latency), fail (rules out bounded low latency).
Exit codes: 0 no check failed, 1 a check failed, 2 bad input.")]
pub struct CheckArgs {
    /// CPUs the task will run on, judged for: 'all', 3, 0-3,5 [default: those latlab
    /// run measures without -c: the isolated ones if any, else every CPU].
    #[arg(short = 'c', long = "cpus", value_name = "LIST")]
    pub cpus: Option<String>,
    /// The task's scheduling policy: real-time threads at or above it on its CPUs are
    /// reported, and the right to it is checked [default: f:95].
    #[arg(short = 'P', long = "priority", value_name = "POLICY")]
    pub priority: Option<String>,
    /// Write the audit as JSON: to standard output without FILE (no table then), or to
    /// FILE.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
    pub json: Option<PathBuf>,
    /// Read /proc and /sys under PATH instead of / (a copy or fixture of another system).
    #[arg(long, value_name = "PATH", default_value = "/")]
    pub root: PathBuf,
    /// How wide.
    #[command(flatten)]
    pub layout: LayoutArgs,
}

/// `latlab show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The run: an id, a unique prefix of one, its id's random suffix, its name, last,
    /// last~1, ...
    #[arg(default_value = "last")]
    pub run: String,
    /// Write the Run as JSON to FILE ('-' for standard output, instead of the summary).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Run store: a SQLite file, a postgres:// URL or service=NAME [default:
    /// $LATLAB_STORE, else ~/.local/share/latlab/runs.sqlite].
    #[arg(long, value_name = "PATH|URL", value_parser = StoreLocation::parse)]
    pub store: Option<StoreLocation>,
    /// How wide.
    #[command(flatten)]
    pub layout: LayoutArgs,
}

/// `latlab explain`.
#[derive(Debug, Args)]
#[command(after_help = "\
Exit codes: 0 shown, 1 the run was not measured with --explain, 2 bad input (a run not in
the store, a --spike beyond the spikes kept).")]
pub struct ExplainArgs {
    /// The run: an id, a unique prefix of one, its id's random suffix, its name, last,
    /// last~1, ...
    #[arg(default_value = "last")]
    pub run: String,
    /// Show the N-th largest spike (1 = the largest) event by event, with its parts.
    #[arg(long, value_name = "N")]
    pub spike: Option<usize>,
    /// How many of the largest spikes to show after the catalogue.
    #[arg(long, value_name = "K", default_value_t = 5)]
    pub top: usize,
    /// Write the explanation (with --spike: the one spike) as JSON: to standard output
    /// without FILE, or to FILE.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
    pub json: Option<PathBuf>,
    /// Run store: a SQLite file, a postgres:// URL or service=NAME [default:
    /// $LATLAB_STORE, else ~/.local/share/latlab/runs.sqlite].
    #[arg(long, value_name = "PATH|URL", value_parser = StoreLocation::parse)]
    pub store: Option<StoreLocation>,
    /// How wide.
    #[command(flatten)]
    pub layout: LayoutArgs,
}

/// `latlab rm`.
#[derive(Debug, Args)]
pub struct RmArgs {
    /// The runs: ids, unique prefixes, id suffixes, names, last, last~1, ...
    #[arg(value_name = "RUN", required = true, num_args = 1..)]
    pub runs: Vec<String>,
    /// Remove without asking (needed when standard input is not a terminal).
    #[arg(short, long)]
    pub yes: bool,
    /// Run store: a SQLite file, a postgres:// URL or service=NAME [default:
    /// $LATLAB_STORE, else ~/.local/share/latlab/runs.sqlite].
    #[arg(long, value_name = "PATH|URL", value_parser = StoreLocation::parse)]
    pub store: Option<StoreLocation>,
}

/// `latlab push`.
#[derive(Debug, Args)]
pub struct PushArgs {
    /// The central store to push to (a postgres:// URL, its password too if it needs
    /// one) [default: each owed run to the store it is owed to, with the password of
    /// PGPASSWORD or ~/.pgpass].
    #[arg(long, value_name = "URL", value_parser = StoreLocation::parse)]
    pub store: Option<StoreLocation>,
}

/// `latlab prune`.
#[derive(Debug, Args)]
pub struct PruneArgs {
    /// Remove the runs added before this: an age (30d, 12h) or a UTC date (2026-11-01).
    #[arg(long, value_name = "AGE|DATE", required = true)]
    pub older_than: String,
    /// Remove without asking (needed when standard input is not a terminal).
    #[arg(short, long)]
    pub yes: bool,
    /// Run store: a SQLite file, a postgres:// URL or service=NAME [default:
    /// $LATLAB_STORE, else ~/.local/share/latlab/runs.sqlite].
    #[arg(long, value_name = "PATH|URL", value_parser = StoreLocation::parse)]
    pub store: Option<StoreLocation>,
}

/// `latlab compare`.
#[derive(Debug, Args)]
#[command(after_help = "\
Exit codes: 0 no regression, 1 a regression or a new run without samples, 2 bad input,
runs that measured different things (without --force), or a verdict that cannot be reached.")]
pub struct CompareArgs {
    /// The base run and the runs to judge against it (ids, prefixes, id suffixes, names, last,
    /// last~1, or ref:NAME for published figures: latlab runs --references).
    #[arg(required = true, num_args = 2..)]
    pub runs: Vec<String>,
    /// Figures to judge: p99.9, p99, p50, mean, max, missed-rate (missed periods /
    /// periods elapsed), or spike-rate, spike-rate:LEVEL (samples above LEVEL per hour; the base
    /// run's spike level when none is given) (repeatable) [default: p99.9].
    #[arg(long = "metric", value_name = "METRIC")]
    pub metrics: Vec<String>,
    /// Change allowed before a significant difference is a regression: a percentage
    /// (10%) or a latency (5us, which the missed-period rate is judged without).
    #[arg(long, value_name = "10%|5us", default_value = Tolerance::DEFAULT_TEXT)]
    pub tolerance: String,
    /// Compare runs that measured different things (probe, method, period, policy,
    /// CPUs, clock, phases); without it such runs are refused.
    #[arg(long)]
    pub force: bool,
    /// The tick rate (CONFIG_HZ) of the tick model, Linux 2.4's jiffies nanosleep, shown
    /// beside published periods [default: the measured run's kernel's].
    #[arg(long, value_name = "HZ", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub hz: Option<u32>,
    /// Write the comparison as JSON: to standard output without FILE (no table then),
    /// or to FILE.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
    pub json: Option<PathBuf>,
    /// Run store: a SQLite file, a postgres:// URL or service=NAME [default:
    /// $LATLAB_STORE, else ~/.local/share/latlab/runs.sqlite].
    #[arg(long, value_name = "PATH|URL", value_parser = StoreLocation::parse)]
    pub store: Option<StoreLocation>,
    /// How wide.
    #[command(flatten)]
    pub layout: LayoutArgs,
}

/// `latlab report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The runs (ids, unique prefixes, id suffixes, names, last, last~1, ...); several are overlaid and compared.
    #[arg(required = true, num_args = 1..)]
    pub runs: Vec<String>,
    /// html, markdown, text, summary (what `latlab run` prints), or one plot:
    /// svg-histogram, svg-profile, svg-timeline, png-histogram, png-profile,
    /// png-timeline [default: from the --output file's extension (.html, .md, .txt),
    /// else text].
    #[arg(short, long, value_name = "KIND")]
    pub format: Option<String>,
    /// The plots' latency axis: log when the largest sample exceeds 10 × p99 (auto),
    /// linear, or log (labelled at every power of ten) [default: auto].
    #[arg(long, value_name = "auto|linear|log")]
    pub latency_axis: Option<String>,
    /// Write to FILE instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Instead of the report, the trend of this figure over the runs given (as
    /// `latlab trend` draws it): p50 ... p99.999, max or missed; html, markdown, text or
    /// svg (--format, or the --output file's extension).
    #[arg(long, value_name = "METRIC")]
    pub trend: Option<String>,
    /// Text and summary: every table whole, whatever the terminal's width (what
    /// --format wide is elsewhere: here --format names the kind).
    #[arg(long)]
    pub wide: bool,
    /// With --trend: one line per series (runs that measured the same thing on one
    /// rig), or group by host, kernel, scenario and tag:KEY, comma-separated; a group
    /// never mixes probes.
    #[arg(
        long,
        value_name = "KEYS",
        default_value = "series",
        requires = "trend"
    )]
    pub by: String,
    /// Run store: a SQLite file, a postgres:// URL or service=NAME [default:
    /// $LATLAB_STORE, else ~/.local/share/latlab/runs.sqlite].
    #[arg(long, value_name = "PATH|URL", value_parser = StoreLocation::parse)]
    pub store: Option<StoreLocation>,
}

/// `latlab attach`.
#[derive(Debug, Args)]
pub struct AttachArgs {
    /// The application's process id.
    #[arg(value_name = "PID")]
    pub pid: u32,
    /// Which of its periodic tasks, when it runs several: a thread id or a task's name.
    #[arg(long, value_name = "TID|NAME")]
    pub task: Option<String>,
    /// Detach after this long (the task goes on) [default: until the task ends, or
    /// Ctrl-C].
    #[arg(short, long, value_name = "DURATION")]
    pub duration: Option<String>,
    /// How often the live view prints a line [default: 1s].
    #[arg(long, value_name = "DURATION")]
    pub interval: Option<String>,
    /// Write the Run as JSON to FILE ('-' for stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// No live view (the summary is still printed).
    #[arg(short, long)]
    pub quiet: bool,
    /// Run store: a SQLite file, a postgres:// URL or service=NAME [default:
    /// $LATLAB_STORE, else ~/.local/share/latlab/runs.sqlite].
    #[arg(long, value_name = "PATH|URL", value_parser = StoreLocation::parse)]
    pub store: Option<StoreLocation>,
    /// Do not save the run in the store.
    #[arg(long, conflicts_with = "store")]
    pub no_store: bool,
    /// Let a Run that measured less than asked or under degraded conditions (a task
    /// without real-time priority or locked memory) pass, as `latlab run --accept`.
    #[arg(long, value_name = "incomplete,untrusted")]
    pub accept: Option<String>,
    /// The user's name, tags and note for the run.
    #[command(flatten)]
    pub labels: LabelArgs,
}

/// `latlab import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Result files: cyclictest --json, -h and -v output, rtla timerlat hist, oslat
    /// text or --json, jitterdebugger JSON, or latlab's own Run JSON.
    #[arg(required = true, num_args = 1..)]
    pub files: Vec<PathBuf>,
    /// The files' format, when detecting it is not enough: cyclictest-json, cyclictest-hist, cyclictest-verbose,
    /// rtla-timerlat-hist, oslat, oslat-json, jitterdebugger.
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<String>,
    /// The unit of files that do not state it (cyclictest -h and -v): us, or ns when
    /// cyclictest ran with -N [default: us, noted in the run].
    #[arg(long, value_name = "us|ns")]
    pub unit: Option<String>,
    /// The measuring period of files that do not state it (a one-thread cyclictest -v
    /// log): places samples in time and counts missed periods.
    #[arg(long, value_name = "DURATION")]
    pub period: Option<String>,
    /// Run store: a SQLite file, a postgres:// URL or service=NAME [default:
    /// $LATLAB_STORE, else ~/.local/share/latlab/runs.sqlite].
    #[arg(long, value_name = "PATH|URL", value_parser = StoreLocation::parse)]
    pub store: Option<StoreLocation>,
    /// The user's name (with one file only), tags and note for the imported runs.
    #[command(flatten)]
    pub labels: LabelArgs,
}

/// `latlab export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The run: an id, a unique prefix of one, its id suffix, its name, last, last~1, ...
    pub run: String,
    /// The format (`latlab help export` says what reads each).
    #[arg(short, long, value_name = "FORMAT")]
    pub format: String,
    /// Write to FILE instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// For cyclictest and cyclictest-json, which hold one phase: the phase to write
    /// (a run of several phases is refused without it).
    #[arg(long, value_name = "NAME")]
    pub phase: Option<String>,
    /// For cyclictest and cyclictest-json, which hold one probe: the probe whose
    /// streams to write (e.g. timerlat-thread of an rtla import).
    #[arg(long, value_name = "NAME")]
    pub probe: Option<String>,
    /// Run store: a SQLite file, a postgres:// URL or service=NAME [default:
    /// $LATLAB_STORE, else ~/.local/share/latlab/runs.sqlite].
    #[arg(long, value_name = "PATH|URL", value_parser = StoreLocation::parse)]
    pub store: Option<StoreLocation>,
}

/// `latlab runs`.
#[derive(Debug, Args)]
#[command(after_help = "\
Runs are listed newest added first: `last` is the run added to the store most recently.
HOST, KERNEL and SCENARIO match exactly, or as patterns with * (--kernel '*-rt*').")]
pub struct RunsArgs {
    /// Run store: a SQLite file, a postgres:// URL or service=NAME [default:
    /// $LATLAB_STORE, else ~/.local/share/latlab/runs.sqlite].
    #[arg(long, value_name = "PATH|URL", value_parser = StoreLocation::parse)]
    pub store: Option<StoreLocation>,
    /// How many runs to list (0: all) [default: 20 in the table; --json lists all].
    #[arg(short = 'n', long)]
    pub limit: Option<usize>,
    /// Which runs.
    #[command(flatten)]
    pub filter: RunFilterArgs,
    /// Write the list as JSON: to standard output without FILE (no table then), or to FILE.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
    pub json: Option<PathBuf>,
    /// List the published reference runs latlab ships (ref:NAME: papers' tables, for
    /// compare and report) instead of the store's runs.
    #[arg(long, conflicts_with = "limit")]
    pub references: bool,
    /// How wide.
    #[command(flatten)]
    pub layout: LayoutArgs,
}

/// The filters of `latlab runs`, for every command that looks at many runs.
#[derive(Debug, Args, Default)]
pub struct RunFilterArgs {
    /// Only runs on this host.
    #[arg(long, value_name = "HOST")]
    pub host: Option<String>,
    /// Only runs on this kernel release.
    #[arg(long, value_name = "KERNEL")]
    pub kernel: Option<String>,
    /// Only runs of this scenario.
    #[arg(long, value_name = "SCENARIO")]
    pub scenario: Option<String>,
    /// Only runs with this tag, KEY=VALUE or KEY with any value (repeatable: all must hold).
    #[arg(long = "tag", value_name = "KEY[=VALUE]")]
    pub tags: Vec<String>,
    /// Only runs added since: an age (30d, 2h) or a UTC date (2026-11-01, 2026-11-01T12:00).
    #[arg(long, value_name = "AGE|DATE")]
    pub since: Option<String>,
    /// Only runs added before: an age or a UTC date, as for --since.
    #[arg(long, value_name = "AGE|DATE")]
    pub before: Option<String>,
}

/// `latlab serve`.
#[derive(Debug, Args)]
#[command(after_help = "\
Pages: / (the runs, with the filters of latlab runs), /run/RUN (its report; a running run
reloads from its last checkpoint), /compare?base=RUN&new=RUN and
/trend?metric=p99.9&by=host,kernel (with the same filters). Nothing is ever written.
Ctrl-C or SIGTERM stops it.")]
pub struct ServeArgs {
    /// Run store: a SQLite file, a postgres:// URL or service=NAME [default:
    /// $LATLAB_STORE, else ~/.local/share/latlab/runs.sqlite].
    #[arg(long, value_name = "PATH|URL", value_parser = StoreLocation::parse)]
    pub store: Option<StoreLocation>,
    /// Where to serve: HOST:PORT, loopback only unless --listen-any (port 0: any free one).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    pub listen: String,
    /// Let --listen bind an address other than loopback (anyone who can reach it can
    /// read every stored run).
    #[arg(long)]
    pub listen_any: bool,
}

/// `latlab trend`.
#[derive(Debug, Args)]
#[command(after_help = "\
A run's figure is its worst stream's; a bound is shown as one (≥ x), and a run whose
figure or start time is unknown is listed but not drawn. Times are the runs' starts (UTC).
Examples:
  latlab trend --metric p99.9 --by host,kernel --since 30d
  latlab trend --metric max --by tag:board -o trend.html")]
pub struct TrendArgs {
    /// Run store: a SQLite file, a postgres:// URL or service=NAME [default:
    /// $LATLAB_STORE, else ~/.local/share/latlab/runs.sqlite].
    #[arg(long, value_name = "PATH|URL", value_parser = StoreLocation::parse)]
    pub store: Option<StoreLocation>,
    /// The figure: p50, p90, p99, p99.9, p99.99, p99.999, max, missed (missed
    /// periods per million), or spike-rate, spike-rate:LEVEL (samples above LEVEL per hour; each
    /// run's spike level when none is given).
    #[arg(long, value_name = "METRIC", default_value = "p99.9")]
    pub metric: String,
    /// One line per series (runs that measured the same thing on one rig: probe,
    /// settings, CPUs, load; imports apart), or group by host, kernel, scenario and
    /// tag:KEY, comma-separated; a group never mixes probes.
    #[arg(long, value_name = "KEYS", default_value = "series")]
    pub by: String,
    /// Which runs.
    #[command(flatten)]
    pub filter: RunFilterArgs,
    /// The plot's latency axis: auto (log when the highest value exceeds 10 × the
    /// median), linear or log [default: auto].
    #[arg(long, value_name = "auto|linear|log")]
    pub latency_axis: Option<String>,
    /// Write the trend as JSON: to standard output without FILE (no table then), or to FILE.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
    pub json: Option<PathBuf>,
    /// Write the plot to FILE: .svg (the plot), .html (the plot and the tables), .md or .txt.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Rewrites percentile shorthands so any percentile works as a flag: `--p99 50us`,
/// `--p99.9=80us` and `--p50 5us` become `--percentile-limit p99=50us` and so on.
/// Arguments need not be valid Unicode (file names); only flags are inspected.
pub fn expand_percentile_flags<A: Into<OsString>>(
    args: impl IntoIterator<Item = A>,
) -> Vec<OsString> {
    let mut out: Vec<OsString> = Vec::new();
    let mut args = args.into_iter().map(Into::into);
    while let Some(arg) = args.next() {
        if arg == "--" {
            out.push(arg);
            out.extend(args);
            break;
        }
        let Some(flag) = arg.to_str().and_then(|a| a.strip_prefix("--p")) else {
            out.push(arg);
            continue;
        };
        let (rank, inline) = match flag.split_once('=') {
            Some((r, v)) => (r, Some(v.to_string())),
            None => (flag, None),
        };
        let is_rank = !rank.is_empty()
            && rank.starts_with(|c: char| c.is_ascii_digit())
            && rank.chars().all(|c| c.is_ascii_digit() || c == '.');
        if !is_rank {
            out.push(arg.clone());
            continue;
        }
        let value = inline
            .or_else(|| args.next().map(|v| v.to_string_lossy().into_owned()))
            .unwrap_or_default();
        out.push("--percentile-limit".into());
        out.push(format!("p{rank}={value}").into());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand(args: &[&str]) -> Vec<String> {
        expand_percentile_flags(args.iter().copied())
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect()
    }

    #[test]
    fn percentile_flags_become_thresholds() {
        assert_eq!(
            expand(&["latlab", "run", "--p99", "50us", "--p99.9=80us", "-q"]),
            vec![
                "latlab",
                "run",
                "--percentile-limit",
                "p99=50us",
                "--percentile-limit",
                "p99.9=80us",
                "-q"
            ]
        );
    }

    #[test]
    fn other_flags_are_untouched() {
        assert_eq!(
            expand(&[
                "latlab",
                "run",
                "--period",
                "1ms",
                "-p",
                "2ms",
                "--priority",
                "f:1"
            ]),
            vec![
                "latlab",
                "run",
                "--period",
                "1ms",
                "-p",
                "2ms",
                "--priority",
                "f:1"
            ]
        );
        assert_eq!(
            expand(&["latlab", "--", "--p99"]),
            vec!["latlab", "--", "--p99"]
        );
    }

    #[test]
    fn no_store_with_a_store_is_refused() {
        let e = Cli::try_parse_from(["latlab", "run", "--no-store", "--store", "x.sqlite"])
            .unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::ArgumentConflict);
        assert_eq!(e.exit_code(), 2);
    }

    /// The plan of `latlab run` with `extra`, on CPUs 0 and 1.
    fn plan_of(extra: &[&str]) -> Result<latlab_measure::plan::RunPlan, String> {
        let mut argv = vec!["latlab", "run"];
        argv.extend_from_slice(extra);
        let cli = Cli::try_parse_from(expand(&argv)).map_err(|e| e.to_string())?;
        match cli.command {
            Command::Run(r) => {
                let cpus = latlab_measure::cpus::CpuInventory::plain(&[0, 1]);
                latlab_measure::plan::resolve(&r.input(), &cpus).map_err(|e| e.to_string())
            }
            _ => Err("not a run".to_string()),
        }
    }

    #[test]
    fn every_run_option_reaches_the_plan() {
        let p = plan_of(&[
            "-c",
            "1",
            "-P",
            "r:50",
            "-p",
            "2ms",
            "-d",
            "1s",
            "--method",
            "rel",
            "--warm-up",
            "10ms",
            "--dma-latency",
            "5",
            "--mlock-all",
            "--spike",
            "1ms",
            "--spike-nodes",
            "7",
            "--top",
            "3",
            "--interval",
            "10ms",
            "--max",
            "1s",
            "--p99",
            "500us",
            "--threshold",
            "mean=1ms",
            "--load-cpus",
            "0",
        ])
        .unwrap();
        let phase = &p.phases[0];
        assert_eq!(phase.request.cpus, [1]);
        assert_eq!(phase.request.policy.to_string(), "rr:50");
        assert_eq!(phase.setup.period.0, 2_000_000);
        assert_eq!(phase.request.duration.map(|d| d.0), Some(1_000_000_000));
        assert_eq!(phase.spec.to_string(), "timer:method=rel");
        assert_eq!(phase.request.warm_up.0, 10_000_000);
        assert_eq!(p.dma_latency_us, Some(5));
        assert_eq!(p.memory_lock, latlab_model::run::MemoryLockPlan::All);
        assert_eq!(phase.setup.spike_threshold.map(|n| n.0), Some(1_000_000));
        assert_eq!((phase.setup.spike_capacity, phase.setup.top_spikes), (7, 3));
        assert_eq!(phase.setup.timeline_interval.0, 10_000_000);
        assert_eq!(p.thresholds.len(), 3);
        assert_eq!(p.load_cpus, [0]);
    }

    #[test]
    fn bad_values_name_their_flag() {
        let cases: &[(&[&str], &str)] = &[
            (&["-c", "7"], "--cpus: CPU 7"),
            (&["-p", "0"], "--period"),
            (&["-d", "5 fortnights"], "--duration"),
            (&["-P", "f:120"], "--priority"),
            (&["--max", "100"], "--max"),
            (&["--p99.9", "abc"], "--p99.9"),
            (
                &["--threshold", "foo=1ms"],
                "--threshold: unknown metric 'foo'",
            ),
            (&["--threshold", "p99=abc"], "--threshold: limit for p99"),
            (
                &["--max", "1ms", "--threshold", "p100=2ms"],
                "--threshold p100=2ms: --max already limits max",
            ),
            (&["--top", "5000"], "--top"),
            (&["--probe", "noise", "-p", "2ms"], "--period: probe noise"),
        ];
        for (args, flag) in cases {
            let e = plan_of(args).unwrap_err();
            assert!(e.starts_with(flag), "{args:?}: {e}");
        }
    }

    #[test]
    fn clap_definition_is_consistent() {
        command().debug_assert();
    }

    #[test]
    fn help_export_lists_every_format_with_its_line() {
        // Unwrapped, so each format's line is whole.
        let help = command()
            .find_subcommand("export")
            .unwrap()
            .clone()
            .max_term_width(1000)
            .term_width(1000)
            .render_long_help()
            .to_string();
        for exporter in latlab_formats::export::exporters() {
            let name = exporter.name();
            let line = help
                .lines()
                .find(|l| l.trim_start().starts_with(&format!("- {name}:")))
                .unwrap_or_else(|| panic!("no line for {name} in\n{help}"));
            assert!(line.ends_with(exporter.describe()), "{line}");
        }
    }

    #[test]
    fn an_unknown_export_format_is_a_usage_error() {
        let e = parse(&[
            "latlab".into(),
            "export".into(),
            "last".into(),
            "-f".into(),
            "xml".into(),
        ])
        .unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::InvalidValue);
        assert_eq!(e.exit_code(), 2);
    }
}
