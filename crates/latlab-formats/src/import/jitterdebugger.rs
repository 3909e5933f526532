//! jitterdebugger's results (github.com/igaw/jitterdebugger, `dump_stats` in
//! `jitterdebugger.c`): `{"version": 1, "cpu": {"0": {"histogram": {"3": 3678, ...},
//! "count": N, "min": µs, "max": µs, "avg": %.2f}, ...}}` (the first releases have no
//! `version`). Samples are wake-up latencies truncated to whole µs; the histogram has one
//! bucket per µs below 1000 µs (`HIST_MAX_ENTRIES`) and no overflow count, so samples at
//! 1000 µs or more are `count` minus the histogram's total. A thread without samples has
//! `min` 4294967295 and `avg` `-nan`.
//!
//! With `-o DIR` jitterdebugger saves `results.json` and, beside it, what `jd_sysinfo.c`
//! collects of the host: `cpuinfo` (the CPU model), `config.gz` (the kernel
//! configuration: tick rate, preemption), `cmdline`, `uname`, `interrupts`, `dmesg`.
//! Given the directory ([`ImportContext::directory`]), the importer keeps the first two
//! as host facts.

use super::binned::{self, Binned, Disagreement, TooManySamples};
use super::build::{self, Source, StreamSource, Values};
use super::printf_json::{self, line_of};
use super::provenance::Provenance;
use super::{rt_json, ImportContext, ImportError};
use latlab_model::run::{HostFacts, MemoryLockPlan, Run};
use latlab_model::Nanos;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// jitterdebugger's histogram range: `HIST_MAX_ENTRIES` buckets of 1 µs.
const RANGE_US: i64 = 1_000;

#[derive(Deserialize)]
struct File {
    version: Option<u32>,
    /// Version 3 (`dump_stats` with `sysinfo`): uname, the online CPUs and the unit.
    sysinfo: Option<SysInfo>,
    cpu: BTreeMap<String, Cpu>,
}

#[derive(Deserialize)]
struct SysInfo {
    #[serde(flatten)]
    uname: rt_json::SysInfo,
    cpus_online: Option<usize>,
    resolution_in_ns: Option<u64>,
}

#[derive(Deserialize)]
struct Cpu {
    histogram: BTreeMap<u64, u64>,
    count: u64,
    min: u64,
    max: u64,
    avg: Option<f64>,
}

/// Imports jitterdebugger JSON.
pub(super) fn import(input: impl BufRead, ctx: &ImportContext) -> Result<Run, ImportError> {
    let text = printf_json::read_text(input, &ctx.file)?;
    let parsed = printf_json::parse::<File>(&text, &ctx.file, "jitterdebugger JSON")?;
    let file = parsed.value;
    let mut p = Provenance::default();
    for repair in parsed.repairs {
        p.lack(format!("not valid JSON as written ({repair})"));
    }
    if let Some(v) = file.version.filter(|&v| v != 1 && v != 3) {
        p.lack(format!(
            "results version {v} (this importer follows versions 1 and 3)"
        ));
    }
    if let Some(resolution) = file
        .sysinfo
        .as_ref()
        .and_then(|s| s.resolution_in_ns)
        .filter(|&r| r != 1_000)
    {
        let line = line_of(&text, "\"resolution_in_ns\"", 1).unwrap_or(1);
        return Err(ImportError::at(
            &ctx.file,
            line,
            format!(
                "resolution_in_ns is {resolution}: values in ns (jitterdebugger -N) are not \
                 read yet; import a run made without -N"
            ),
        ));
    }
    let cpus_line = line_of(&text, "\"cpu\"", 1).unwrap_or(1);
    let mut streams = Vec::with_capacity(file.cpu.len());
    for i in 0..file.cpu.len() {
        let line = line_of(&text, &format!("\"{i}\": {{"), cpus_line as usize).unwrap_or(cpus_line);
        let c = file.cpu.get(&i.to_string()).ok_or_else(|| {
            ImportError::at(
                &ctx.file,
                cpus_line,
                format!("entries are numbered from 0, but {i} is missing: the file is damaged"),
            )
        })?;
        let b =
            binned(c).map_err(|e| ImportError::at(&ctx.file, line, format!("thread {i}: {e}")))?;
        streams.push(StreamSource {
            probe: "timer",
            method: None,
            thread: i,
            cpu: None,
            policy: None,
            period: None,
            elapsed: None,
            values: Values::Binned(b),
        });
    }
    p.lack("no CPU numbers (jitterdebugger numbers its threads; they are its CPUs only when it ran on every CPU)");
    p.lack("values truncated to whole µs by jitterdebugger: buckets are recorded at their lower edge, so percentiles are to the 1 µs bucket width, lower edge");
    let host = file.sysinfo.map(|s| {
        let mut host = rt_json::host_facts(s.uname);
        host.cpus_online = s.cpus_online;
        let beside = ctx
            .directory
            .as_deref()
            .filter(|_| Path::new(&ctx.file).file_name() == Some("results.json".as_ref()));
        if let Some(dir) = beside {
            read_saved_sysinfo(dir, &mut host);
        }
        let mut missing = vec!["virtualization", "clocksource"];
        if host.cpu_model.is_none() {
            missing.insert(0, "CPU model");
        }
        if host.hz.is_none() {
            missing.push("tick rate");
        }
        p.lack(format!(
            "host facts only from what jitterdebugger saved: no {}",
            missing.join(", ")
        ));
        host
    });
    let source = Source {
        tool: "jitterdebugger",
        memory_lock: Some(MemoryLockPlan::All),
        host,
        ..Source::default()
    };
    build::assemble(super::Format::Jitterdebugger, ctx, source, streams, p)
}

/// The CPU model (`cpuinfo`) and the kernel configuration's tick rate and preemption
/// model (`config.gz`) jitterdebugger saved in `dir`; a file absent or unreadable adds
/// nothing.
fn read_saved_sysinfo(dir: &Path, host: &mut HostFacts) {
    if let Ok(cpuinfo) = std::fs::read_to_string(dir.join("cpuinfo")) {
        host.cpu_model = cpuinfo.lines().find_map(|l| {
            let (key, value) = l.split_once(':')?;
            (key.trim() == "model name").then(|| value.trim().to_string())
        });
    }
    let Ok(file) = std::fs::File::open(dir.join("config.gz")) else {
        return;
    };
    // Only the few lines needed are kept; a configuration is some 10 000 lines.
    let mut config = Vec::new();
    let reader = BufReader::new(flate2::read::GzDecoder::new(file).take(16 << 20));
    for line in reader.lines() {
        let Ok(line) = line else { return };
        if line.starts_with("CONFIG_HZ=") || line.starts_with("CONFIG_PREEMPT") {
            config.push(line);
        }
    }
    let set = |key: &str| config.iter().any(|l| *l == format!("{key}=y"));
    host.hz = config
        .iter()
        .find_map(|l| l.strip_prefix("CONFIG_HZ=")?.parse().ok());
    let preemption = &mut host.preemption;
    if preemption.model == "dynamic" && preemption.dynamic_mode.is_none() {
        // The mode booted: `preempt=` on the saved command line, else the configured one.
        let cmdline = std::fs::read_to_string(dir.join("cmdline")).unwrap_or_default();
        let (mode, evidence) = match cmdline
            .split_whitespace()
            .find_map(|w| w.strip_prefix("preempt="))
        {
            Some(mode) => (
                Some(mode),
                format!("cmdline saved by jitterdebugger has preempt={mode}"),
            ),
            None => {
                let default = [
                    ("CONFIG_PREEMPT_NONE", "none"),
                    ("CONFIG_PREEMPT_VOLUNTARY", "voluntary"),
                    ("CONFIG_PREEMPT_LAZY", "lazy"),
                    ("CONFIG_PREEMPT", "full"),
                ]
                .into_iter()
                .find(|(key, _)| set(key));
                (
                    default.map(|d| d.1),
                    default.map_or(String::new(), |(key, mode)| {
                        format!(
                            "config.gz saved by jitterdebugger has {key}=y and its cmdline no \
                             preempt=: boot default {mode}"
                        )
                    }),
                )
            }
        };
        if let Some(mode) = mode {
            preemption.dynamic_mode = Some(mode.to_string());
            preemption.evidence.push(evidence);
        }
    }
    if preemption.model == "unknown" {
        let model = [
            ("CONFIG_PREEMPT_RT", "PREEMPT_RT"),
            ("CONFIG_PREEMPT_NONE", "none"),
            ("CONFIG_PREEMPT_VOLUNTARY", "voluntary"),
        ]
        .into_iter()
        .find(|(key, _)| set(key));
        if let Some((key, model)) = model {
            preemption.model = model.to_string();
            preemption
                .evidence
                .push(format!("config.gz saved by jitterdebugger has {key}=y"));
        }
    }
}

/// Why a thread's histogram and figures cannot be taken together.
#[derive(Debug, thiserror::Error)]
enum ThreadError {
    #[error(transparent)]
    Counts(#[from] TooManySamples),
    #[error(
        "the histogram holds {in_buckets} samples but count is {count}: the file is inconsistent"
    )]
    MoreThanCount { in_buckets: u64, count: u64 },
    #[error(
        "bucket {0} lies beyond jitterdebugger's 1000 µs histogram: not jitterdebugger's file"
    )]
    BeyondRange(u64),
    #[error("avg is not a number although count is not 0: the file is damaged")]
    AvgNotANumber,
    #[error("{0}: the file is inconsistent")]
    Disagreement(#[from] Disagreement),
}

/// One thread's histogram and figures, checked against each other.
fn binned(c: &Cpu) -> Result<Binned, ThreadError> {
    let in_buckets = binned::sum_counts(c.histogram.values().copied())?;
    if in_buckets > c.count {
        return Err(ThreadError::MoreThanCount {
            in_buckets,
            count: c.count,
        });
    }
    if let Some(k) = c.histogram.keys().find(|&&k| k >= RANGE_US as u64) {
        return Err(ThreadError::BeyondRange(*k));
    }
    let mut b = Binned {
        histogram: true,
        buckets: c
            .histogram
            .iter()
            .map(|(&k, &n)| (Nanos(k as i64 * 1_000), n))
            .collect(),
        width: Nanos::MICROSECOND,
        overflow: c.count - in_buckets,
        overflow_from: Nanos(RANGE_US * 1_000),
        min: None,
        max: None,
        mean: None,
    };
    if c.count == 0 {
        return Ok(b);
    }
    let avg = c
        .avg
        .filter(|a| a.is_finite())
        .ok_or(ThreadError::AvgNotANumber)?;
    b.min = Some(Nanos(c.min as i64 * 1_000));
    b.max = Some(Nanos(c.max as i64 * 1_000));
    b.mean = Some(binned::rounded_mean(&b, avg, 1_000));
    b.check()?;
    Ok(b)
}
