//! `latlab cyclictest ARGS`: cyclictest's common flags, as the people who type them
//! every day write them, turned into the `latlab run` that measures the same thing.
//!
//! cyclictest (rt-tests) parses with getopt: short flags bundle (`-mq`), a value
//! follows its flag or is glued to it (`-p80`, `-p 80`), and `-a`, `-t` and `-h`... take
//! an optional value only when glued or given as the next word that is a number. What
//! latlab does anyway (`-m` locks memory, `-n` sleeps with clock_nanosleep, `-h` keeps
//! a histogram) is accepted and said; what it cannot do is refused, naming the flag.

use latlab_model::spec::{format_cpu_list, CpuSelection};

/// The `latlab run` arguments for cyclictest's `args`, and what was said about them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Translation {
    /// The arguments of `latlab run`.
    pub run: Vec<String>,
    /// Flags latlab does anyway or takes otherwise, one line each.
    pub notes: Vec<String>,
}

impl Translation {
    /// `latlab run …`, as a person would type it.
    pub fn command(&self) -> String {
        let quoted: Vec<String> = self
            .run
            .iter()
            .map(|a| {
                match a
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.:,/=".contains(c))
                {
                    true => a.clone(),
                    false => format!("'{}'", a.replace('\'', r"'\''")),
                }
            })
            .collect();
        format!("latlab run {}", quoted.join(" "))
    }
}

/// cyclictest's duration: a number of seconds, or with `m`, `h` or `d` (its `-D`).
fn duration(text: &str) -> Result<String, String> {
    let (number, unit) = match text.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => text.split_at(i),
        None => (text, "s"),
    };
    let n: u64 = number
        .parse()
        .map_err(|_| format!("-D {text}: give seconds, or a number with m, h or d (-D 10m)"))?;
    match unit {
        "s" | "m" | "h" => Ok(format!("{n}{unit}")),
        "d" => Ok(format!("{}h", n * 24)),
        _ => Err(format!(
            "-D {text}: give seconds, or a number with m, h or d (-D 10m)"
        )),
    }
}

/// A number given to `flag`.
fn number(flag: &str, text: &str) -> Result<u64, String> {
    text.parse()
        .map_err(|_| format!("{flag} {text}: give a whole number"))
}

/// Turns cyclictest's `args` (after `cyclictest`) into `latlab run`'s.
pub fn translate(args: &[String]) -> Result<Translation, String> {
    let mut run: Vec<String> = Vec::new();
    let mut notes = Vec::new();
    let (mut priority, mut policy) = (None::<u64>, "f".to_string());
    let (mut interval_us, mut loops, mut threads, mut affinity) = (1000u64, None, None, None);
    let mut all_cpus = false;
    let mut words = args.iter().peekable();
    let mut own = Vec::new();
    while let Some(word) = words.next() {
        // latlab's own flags, after `--`, go to `latlab run` as they are.
        if word == "--" {
            own.extend(words.by_ref().cloned());
            break;
        }
        // Long options: --name=value or --name value.
        if let Some(long) = word.strip_prefix("--") {
            let (name, glued) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            let mut value = || -> Result<String, String> {
                glued
                    .clone()
                    .or_else(|| words.next().cloned())
                    .ok_or_else(|| format!("--{name} needs a value"))
            };
            match name {
                "json" => {
                    let file = value()?;
                    notes.push(format!(
                        "--json={file}: written as latlab's Run; `latlab export last --format \
                         cyclictest-json` writes cyclictest's"
                    ));
                    run.extend(["--json".to_string(), file]);
                }
                "policy" => {
                    policy = match value()?.as_str() {
                        "fifo" => "f".to_string(),
                        "rr" => "r".to_string(),
                        "other" | "normal" => "o".to_string(),
                        "batch" => "b".to_string(),
                        "idle" => "i".to_string(),
                        other => return Err(format!("--policy {other}: give fifo, rr, other, batch or idle")),
                    }
                }
                "mlockall" => notes.push("--mlockall: latlab locks its memory anyway".to_string()),
                "nanosleep" => notes.push("--nanosleep: latlab sleeps with clock_nanosleep anyway".to_string()),
                "quiet" => run.push("-q".to_string()),
                "relative" => run.extend(["--method".to_string(), "rel".to_string()]),
                "laptop" => run.push("--no-tune".to_string()),
                "priority" => priority = Some(number("--priority", &value()?)?),
                "interval" => interval_us = number("--interval", &value()?)?,
                "duration" => run.extend(["-d".to_string(), duration(&value()?)?]),
                "breaktrace" => run.extend(["-b".to_string(), format!("{}us", number("--breaktrace", &value()?)?)]),
                "histogram" | "histofall" => {
                    let _ = value();
                    notes.push(format!("--{name}: latlab keeps a histogram of every run"));
                }
                other => return Err(format!("--{other}: not one of the cyclictest flags latlab takes (latlab cyclictest --help lists them)")),
            }
            continue;
        }
        let Some(flags) = word.strip_prefix('-').filter(|f| !f.is_empty()) else {
            return Err(format!("'{word}': cyclictest takes flags only"));
        };
        for (i, flag) in flags.char_indices() {
            let glued = &flags[i + flag.len_utf8()..];
            // A flag's value: glued to it (-p80), else the next word (-p 80).
            let mut value = |optional: bool| -> Result<Option<String>, String> {
                if !glued.is_empty() {
                    return Ok(Some(glued.to_string()));
                }
                match words.peek() {
                    Some(next)
                        if !optional
                            || next.parse::<u64>().is_ok()
                            || next.contains(',') && !next.starts_with('-') =>
                    {
                        Ok(words.next().cloned())
                    }
                    Some(_) | None if optional => Ok(None),
                    _ => Err(format!("-{flag} needs a value")),
                }
            };
            let takes_value = "pihHDlbta".contains(flag);
            match flag {
                'm' => notes.push("-m: latlab locks its memory anyway".to_string()),
                'n' => notes.push("-n: latlab sleeps with clock_nanosleep anyway".to_string()),
                'q' => run.push("-q".to_string()),
                'r' => run.extend(["--method".to_string(), "rel".to_string()]),
                'N' => notes.push(
                    "-N: latlab reports in µs with three decimals (ns in its files)".to_string(),
                ),
                'S' => all_cpus = true,
                'p' => priority = Some(number("-p", &value(false)?.unwrap_or_default())?),
                'i' => interval_us = number("-i", &value(false)?.unwrap_or_default())?,
                'D' => run.extend([
                    "-d".to_string(),
                    duration(&value(false)?.unwrap_or_default())?,
                ]),
                'l' => loops = Some(number("-l", &value(false)?.unwrap_or_default())?),
                'b' => {
                    let us = number("-b", &value(false)?.unwrap_or_default())?;
                    run.extend(["-b".to_string(), format!("{us}us")]);
                }
                'h' | 'H' => {
                    let _ = value(true)?;
                    notes.push(format!("-{flag}: latlab keeps a histogram of every run"));
                }
                't' => threads = Some(value(true)?),
                'a' => affinity = Some(value(true)?),
                other => {
                    return Err(format!(
                        "-{other}: not one of the cyclictest flags latlab takes (-m -p -i -a -t \
                         -S -n -r -D -l -h -q -b -N, --policy, --json, --laptop); latlab's own \
                         go after --"
                    ))
                }
            }
            if takes_value && (!glued.is_empty()) {
                break;
            }
        }
    }
    // Threads and CPUs, as cyclictest places them: -S, or -t and -a without values, one
    // thread per CPU; -a LIST the threads in turn on its CPUs (one thread without -t,
    // every CPU of the list with a bare -t, the first N with -t N); -t N alone, the
    // first N CPUs.
    let cpus = match (all_cpus, &threads, &affinity) {
        (true, _, _) => Some("all".to_string()),
        (_, _, Some(Some(list))) => {
            let listed = match CpuSelection::parse(list).map_err(|e| format!("-a {list}: {e}"))? {
                CpuSelection::List(cpus) => cpus,
                CpuSelection::All => {
                    return Err(format!(
                        "-a {list}: give CPU numbers, or -a alone for every CPU"
                    ))
                }
            };
            let take = match &threads {
                None => 1,
                Some(None) => listed.len(),
                Some(Some(n)) => number("-t", n)?.max(1) as usize,
            };
            if take > listed.len() {
                return Err(format!(
                    "-t {take} with -a {list}: latlab measures one thread per CPU; give as \
                     many CPUs as threads"
                ));
            }
            Some(format_cpu_list(&listed[..take]))
        }
        (_, Some(None), _) => Some("all".to_string()),
        (_, Some(Some(n)), _) => {
            let n = number("-t", n)?.max(1);
            Some(format!("0-{}", n - 1))
        }
        (_, None, Some(None)) => Some("all".to_string()),
        (false, None, None) => {
            notes.push(
                "no -t or -S: one thread, as cyclictest measures, pinned to CPU 0 \
                 (cyclictest leaves it unpinned without -a)"
                    .to_string(),
            );
            Some("0".to_string())
        }
    };
    if let Some(cpus) = cpus {
        run.extend(["-c".to_string(), cpus]);
    }
    run.extend(["-p".to_string(), format!("{interval_us}us")]);
    match (priority, policy.as_str()) {
        (Some(p), "f" | "r") => run.extend(["-P".to_string(), format!("{policy}:{p}")]),
        (None, "f" | "r") => {
            // cyclictest's default priority is 0: SCHED_OTHER.
            run.extend(["-P".to_string(), "o:0".to_string()]);
            notes.push(
                "no -p: cyclictest measures at SCHED_OTHER, and so does this run".to_string(),
            );
        }
        (_, other) => run.extend(["-P".to_string(), format!("{other}:0")]),
    }
    if let Some(loops) = loops {
        if run.iter().any(|a| a == "-d") {
            return Err("-l and -D: give one of them".to_string());
        }
        run.extend(["-d".to_string(), format!("{}us", loops * interval_us)]);
    }
    if !run.iter().any(|a| a == "-d") {
        // cyclictest runs until stopped without -D or -l.
        run.extend(["-d".to_string(), "0".to_string()]);
    }
    run.extend(own);
    Ok(Translation { run, notes })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(args: &str) -> Result<Translation, String> {
        translate(
            &args
                .split_whitespace()
                .map(str::to_string)
                .collect::<Vec<_>>(),
        )
    }

    #[test]
    fn the_common_habits_become_one_run() {
        let run = t("-m -p 80 -i 200 -D 3 -q").unwrap();
        assert_eq!(run.command(), "latlab run -d 3s -q -c 0 -p 200us -P f:80");
        assert!(run.notes.iter().any(|n| n.starts_with("-m:")));
        let run = t("-mSp99 -i100 -l 1000 -h400 -q").unwrap();
        assert_eq!(
            run.command(),
            "latlab run -q -c all -p 100us -P f:99 -d 100000us"
        );
        let run = t("-a 1,3 -t 2 -p 90 --policy=rr -D 2m").unwrap();
        assert_eq!(run.command(), "latlab run -d 2m -c 1,3 -p 1000us -P r:90");
        // -a LIST without -t: one thread, on the list's first CPU, as cyclictest runs it.
        assert_eq!(
            t("-a 1,3 -p 90 -D 1").unwrap().command(),
            "latlab run -d 1s -c 1 -p 1000us -P f:90"
        );
        assert!(t("-a 1 -t 2 -D 1")
            .unwrap_err()
            .contains("one thread per CPU"));
        let run = t("-t -a -p95 -D1h -b 150 --json=out.json").unwrap();
        assert_eq!(
            run.command(),
            "latlab run -d 1h -b 150us --json out.json -c all -p 1000us -P f:95"
        );
        assert_eq!(
            t("-r -p 80 -D 1 --laptop").unwrap().command(),
            "latlab run --method rel -d 1s --no-tune -c 0 -p 1000us -P f:80"
        );
        assert_eq!(
            t("-t 4 -p 80 -D 1d").unwrap().command(),
            "latlab run -d 24h -c 0-3 -p 1000us -P f:80"
        );
    }

    #[test]
    fn latlabs_own_flags_follow_the_separator() {
        let run = t("-p 80 -D 2 -- --no-store --explain").unwrap();
        assert_eq!(
            run.command(),
            "latlab run -d 2s -c 0 -p 1000us -P f:80 --no-store --explain"
        );
    }

    #[test]
    fn what_latlab_cannot_take_is_named() {
        assert!(t("-x").unwrap_err().contains("-x"));
        assert!(t("-D 3y").unwrap_err().contains("-D 3y"));
        assert!(t("-l 10 -D 1").unwrap_err().contains("-l and -D"));
        assert!(t("--smp").unwrap_err().contains("--smp"));
        assert!(t("-p").unwrap_err().contains("-p needs a value"));
    }

    #[test]
    fn without_a_priority_it_measures_at_sched_other_as_cyclictest_does() {
        let run = t("-D 1").unwrap();
        assert_eq!(run.command(), "latlab run -d 1s -c 0 -p 1000us -P o:0");
    }
}
