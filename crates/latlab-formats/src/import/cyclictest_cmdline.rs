//! cyclictest's command line, read back from its JSON (`"cmdline:"`) the way cyclictest
//! itself reads it: `getopt_long` with the option string and long options of
//! `process_options` in rt-tests `src/cyclictest/cyclictest.c` (V 2.x), and the same
//! defaults and corrections. It yields the settings the JSON does not repeat: interval,
//! scheduling policy, memory locking, the histogram's range, the sleep method.

use super::getopt::{self, atoi, parse_time_string, Arg, Long, OptionError};
use latlab_model::spec::SchedSpec;
use latlab_model::Nanos;

/// `getopt_long` option string of cyclictest 2.x (`n` is accepted by later versions as an
/// obsolete no-op).
const SHORT: &str = "a::A::b:c:d:D:F:h:H:i:l:MNo:p:mnqrRsSt::uvD:x";

/// Long options (`-` for the long-only ones whose values are not needed; `P` and `Y`
/// stand for `--priospread` and `--policy`).
const LONG: &[Long] = &[
    ("affinity", Arg::Optional, 'a'),
    ("aligned", Arg::Optional, 'A'),
    ("breaktrace", Arg::Required, 'b'),
    ("clock", Arg::Required, 'c'),
    ("default-system", Arg::No, '-'),
    ("distance", Arg::Required, 'd'),
    ("duration", Arg::Required, 'D'),
    ("latency", Arg::Required, '-'),
    ("fifo", Arg::Required, 'F'),
    ("histogram", Arg::Required, 'h'),
    ("histofall", Arg::Required, 'H'),
    ("histfile", Arg::Required, '-'),
    ("interval", Arg::Required, 'i'),
    ("json", Arg::Required, '-'),
    ("laptop", Arg::No, '-'),
    ("loops", Arg::Required, 'l'),
    ("mainaffinity", Arg::Required, '-'),
    ("mlockall", Arg::No, 'm'),
    ("refresh_on_max", Arg::No, 'M'),
    ("nsecs", Arg::No, 'N'),
    ("oscope", Arg::Required, 'o'),
    ("priority", Arg::Required, 'p'),
    ("quiet", Arg::No, 'q'),
    ("priospread", Arg::No, 'P'),
    ("relative", Arg::No, 'r'),
    ("resolution", Arg::No, 'R'),
    ("secaligned", Arg::Optional, '-'),
    ("system", Arg::No, 's'),
    ("smi", Arg::No, '-'),
    ("smp", Arg::No, 'S'),
    ("spike", Arg::Required, '-'),
    ("spike-nodes", Arg::Required, '-'),
    ("threads", Arg::Optional, 't'),
    ("tracemark", Arg::No, '-'),
    ("unbuffered", Arg::No, 'u'),
    ("verbose", Arg::No, 'v'),
    ("dbg_cyclictest", Arg::No, '-'),
    ("policy", Arg::Required, 'Y'),
    ("help", Arg::No, '?'),
    ("posix_timers", Arg::No, 'x'),
    ("deepest-idle-state", Arg::Required, '-'),
    ("delay", Arg::Required, '-'),
];

/// cyclictest's largest histogram (`HIST_MAX`).
const HIST_MAX: i64 = 1_000_000;

/// The settings cyclictest derived from its command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Options {
    interval_us: i64,
    distance_us: i64,
    priority: i32,
    policy: Policy,
    priospread: bool,
    /// `-h`/`-H`: how many buckets the histogram has (of 1 µs, or 1 ns with `-N`).
    pub(super) histogram_us: Option<i64>,
    /// `-m`.
    pub(super) mlockall: bool,
    method: &'static str,
    /// `-D`, in seconds.
    pub(super) duration_s: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Policy {
    Other,
    Batch,
    Idle,
    Fifo,
    Rr,
}

impl Options {
    /// Thread `i`'s period: cyclictest adds the distance (`-d`, 500 µs) per thread,
    /// except with a histogram.
    pub(super) fn period(&self, thread: usize) -> Nanos {
        let distance = if self.histogram_us.is_some() {
            0
        } else {
            self.distance_us
        };
        Nanos((self.interval_us + thread as i64 * distance) * 1_000)
    }

    /// Thread `i`'s policy, as cyclictest sets it for `threads` threads.
    pub(super) fn policy(&self, thread: usize, threads: usize) -> SchedSpec {
        let mut priority = self.priority;
        if matches!(self.policy, Policy::Fifo | Policy::Rr) && priority == 0 {
            priority = threads as i32 + 1;
        }
        if self.priospread {
            priority -= thread as i32;
        }
        match self.policy {
            Policy::Fifo if priority > 0 => SchedSpec::Fifo { priority },
            Policy::Rr if priority > 0 => SchedSpec::Rr { priority },
            Policy::Batch => SchedSpec::Batch { nice: 0 },
            Policy::Idle => SchedSpec::Idle,
            _ => SchedSpec::Other { nice: 0 },
        }
    }

    /// latlab's name of the sleep method.
    pub(super) fn method(&self) -> &'static str {
        self.method
    }
}

/// A command line cyclictest would not have run with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum ArgsError {
    /// An option `getopt_long` refuses.
    #[error(transparent)]
    Option(#[from] OptionError),
    /// `-h 0` or `-H -1`: cyclictest refuses a histogram without buckets.
    #[error("-{0} needs a positive range")]
    NoRange(char),
    /// `-?`: cyclictest printed its help and measured nothing.
    #[error("--help")]
    Help,
}

/// Parses cyclictest's arguments (without the program name); the error names the
/// argument cyclictest would not have accepted.
pub(super) fn parse(args: &[&str]) -> Result<Options, ArgsError> {
    let mut o = Options {
        interval_us: 1_000,
        distance_us: 500,
        priority: 0,
        policy: Policy::Other,
        priospread: false,
        histogram_us: None,
        mlockall: false,
        method: "abs",
        duration_s: None,
    };
    let (mut relative, mut posix_timers, mut system) = (false, false, false);
    for (opt, value) in getopt::options(args, SHORT, LONG)? {
        let value = value.unwrap_or_default();
        match opt {
            'd' => o.distance_us = atoi(&value),
            'D' => o.duration_s = Some(parse_time_string(&value)),
            'h' | 'H' => {
                let range = atoi(&value);
                if range <= 0 {
                    return Err(ArgsError::NoRange(opt));
                }
                o.histogram_us = Some(range.min(HIST_MAX));
            }
            'i' => o.interval_us = atoi(&value),
            'm' => o.mlockall = true,
            'p' => {
                o.priority = atoi(&value) as i32;
                if !matches!(o.policy, Policy::Fifo | Policy::Rr) {
                    o.policy = Policy::Fifo;
                }
            }
            'P' => o.priospread = true,
            'r' => relative = true,
            's' => system = true,
            'x' => posix_timers = true,
            'Y' => o.policy = policy_named(&value),
            '?' => return Err(ArgsError::Help),
            _ => {}
        }
    }
    // process_options: a priority makes the policy real-time.
    if o.priority != 0 && !matches!(o.policy, Policy::Fifo | Policy::Rr) {
        o.policy = Policy::Fifo;
    }
    // -s needs clock_nanosleep, so it overrides -x.
    o.method = if posix_timers && !system {
        "posix-timer"
    } else if relative || system {
        "rel"
    } else {
        "abs"
    };
    Ok(o)
}

/// `handlepolicy`: the name's prefix decides; anything else is `other`.
fn policy_named(name: &str) -> Policy {
    let name = name.to_ascii_lowercase();
    if name.starts_with("batch") {
        Policy::Batch
    } else if name.starts_with("idle") {
        Policy::Idle
    } else if name.starts_with("fifo") {
        Policy::Fifo
    } else if name.starts_with("rr") {
        Policy::Rr
    } else {
        Policy::Other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_line(line: &str) -> Result<Options, ArgsError> {
        parse(&line.split(' ').collect::<Vec<_>>())
    }

    #[test]
    fn reads_settings_as_cyclictest_does() {
        let o = parse_line("-mp95 -i 250 -t2 -a1 -l 500 -q -h 100 --json=/tmp/x.json").unwrap();
        assert!(o.mlockall);
        assert_eq!(o.histogram_us, Some(100));
        assert_eq!(o.period(0), Nanos(250_000));
        assert_eq!(o.period(1), Nanos(250_000), "no distance with a histogram");
        assert_eq!(o.policy(1, 2), SchedSpec::Fifo { priority: 95 });
        assert_eq!(o.method(), "abs");
    }

    #[test]
    fn defaults_and_corrections() {
        let o = parse_line("-t2 --int=200 -r").unwrap();
        assert_eq!(o.period(1), Nanos(700_000), "default distance 500 µs");
        assert_eq!(o.policy(0, 2), SchedSpec::Other { nice: 0 });
        assert_eq!(o.method(), "rel");
        let o = parse_line("--policy=rr -t 3").unwrap();
        assert_eq!(o.policy(0, 3), SchedSpec::Rr { priority: 4 });
        let o = parse_line("--priospread -p 90 -D 2m").unwrap();
        assert_eq!(o.policy(2, 3), SchedSpec::Fifo { priority: 88 });
        assert_eq!(o.duration_s, Some(120));
    }

    #[test]
    fn refuses_what_cyclictest_refuses() {
        assert!(parse_line("-Z").is_err());
        assert!(parse_line("--bogus").is_err());
        assert!(parse_line("-i").is_err());
        assert_eq!(parse_line("-h 0").unwrap_err(), ArgsError::NoRange('h'));
        assert!(
            parse_line("--h 5").is_err(),
            "ambiguous: histogram, histofall, ..."
        );
    }
}
