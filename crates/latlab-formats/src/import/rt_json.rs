//! The header rt-tests' `rt_write_json` (`src/lib/rt-utils.c`) writes before a test's
//! own results (cyclictest's, oslat's): `file_version`, the command line under the key
//! `"cmdline:"` (argv joined with spaces, not escaped), the version under
//! `"rt_test_version:"`, `start_time` and `end_time` (local time, RFC 2822),
//! `return_code`, and `sysinfo` (`uname`, and `realtime` from `/sys/kernel/realtime`).

use super::build::Source;
use super::printf_json;
use super::provenance::Provenance;
use super::{time, ImportContext, ImportError};
use latlab_model::run::{HostFacts, Preemption, Warning};
use latlab_model::seal::WarningCode;
use latlab_model::Nanos;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use std::io::BufRead;

/// The header's fields (a test's own struct holds it with `#[serde(flatten)]`).
#[derive(Deserialize)]
pub(super) struct Header {
    file_version: Option<u32>,
    #[serde(rename = "cmdline:", alias = "cmdline")]
    cmdline: Option<String>,
    #[serde(rename = "rt_test_version:", alias = "rt_test_version")]
    version: Option<String>,
    start_time: Option<String>,
    end_time: Option<String>,
    return_code: Option<i64>,
    sysinfo: Option<SysInfo>,
}

#[derive(Deserialize)]
pub(super) struct SysInfo {
    nodename: String,
    release: String,
    version: String,
    machine: String,
    realtime: Option<u8>,
}

/// A whole file: its text, as the test's struct `T`, with the repairs it needed noted.
pub(super) fn read<T: DeserializeOwned>(
    input: impl BufRead,
    ctx: &ImportContext,
    what: &str,
    p: &mut Provenance,
) -> Result<(String, T), ImportError> {
    let text = printf_json::read_text(input, &ctx.file)?;
    let parsed = printf_json::parse::<T>(&text, &ctx.file, what)?;
    for repair in parsed.repairs {
        p.lack(format!("not valid JSON as written ({repair})"));
    }
    Ok((text, parsed.value))
}

impl Header {
    /// The command line's words (`[""]` without one).
    pub(super) fn argv(&self) -> Vec<&str> {
        self.cmdline.as_deref().unwrap_or("").split(' ').collect()
    }

    /// The program's name, without its directory (`""` without a command line).
    pub(super) fn program(&self) -> &str {
        let first = self
            .cmdline
            .as_deref()
            .unwrap_or("")
            .split(' ')
            .next()
            .unwrap_or("");
        first.rsplit('/').next().unwrap_or("")
    }

    /// What the header tells of the run, for `tool`.
    pub(super) fn source(self, tool: &'static str, p: &mut Provenance) -> Source {
        if let Some(v) = self.file_version.filter(|&v| v != 1) {
            p.lack(format!(
                "file_version {v}: read as version 1, the one this importer follows"
            ));
        }
        let seconds = |t: &Option<String>| t.as_deref().and_then(time::rfc2822_seconds);
        let elapsed = match (seconds(&self.start_time), seconds(&self.end_time)) {
            (Some(start), Some(end)) => {
                p.lack("elapsed time only to the second (from start_time and end_time)");
                Some(Nanos::from_secs(end - start))
            }
            _ => None,
        };
        let program = self.program().to_string();
        let warnings = self
            .return_code
            .filter(|&c| c != 0)
            .map(|code| {
                Warning::new(
                    WarningCode::SourceFailed,
                    format!(
                        "{program} ended with return code {code}: its results may be incomplete"
                    ),
                )
            })
            .into_iter()
            .collect();
        if self.cmdline.is_some() {
            p.lack("the command line as rt-tests joined it: arguments holding spaces cannot be told apart");
        }
        Source {
            tool,
            version: self.version,
            started_at: self
                .start_time
                .as_deref()
                .and_then(time::rfc2822_to_rfc3339),
            ended_at: self.end_time.as_deref().and_then(time::rfc2822_to_rfc3339),
            command_line: self
                .cmdline
                .map(|c| c.split(' ').map(String::from).collect()),
            host: self.sysinfo.map(|s| {
                p.lack("host facts only from uname: no CPU model, CPU count, virtualization, clocksource or tick rate");
                host_facts(s)
            }),
            elapsed,
            warnings,
            ..Source::default()
        }
    }
}

/// Host facts from `sysinfo` (uname): the CPU model, CPU count, virtualization,
/// clocksource and tick rate unknown.
pub(super) fn host_facts(s: SysInfo) -> HostFacts {
    // What `uname -v` and /sys/kernel/realtime say of the preemption model.
    let words: Vec<&str> = s.version.split_whitespace().collect();
    let model = if s.realtime == Some(1) || words.contains(&"PREEMPT_RT") {
        "PREEMPT_RT"
    } else if words.contains(&"PREEMPT_DYNAMIC") {
        "dynamic"
    } else if words.contains(&"PREEMPT") {
        "full"
    } else {
        "unknown"
    };
    let mut evidence = vec![format!("uname -v = {}", s.version)];
    if let Some(r) = s.realtime {
        evidence.push(format!("sysinfo.realtime = {r} (/sys/kernel/realtime)"));
    }
    HostFacts {
        hostname: s.nodename,
        rig: None,
        kernel_release: s.release,
        kernel_version: s.version,
        architecture: s.machine,
        preemption: Preemption {
            model: model.to_string(),
            dynamic_mode: None,
            evidence,
        },
        // uname says nothing of these: unknown.
        cpu_model: None,
        cpus_online: None,
        cpus_online_list: None,
        virtualization: None,
        clocksource: None,
        hz: None,
        isolated_cpus: None,
        nohz_full_cpus: None,
    }
}
