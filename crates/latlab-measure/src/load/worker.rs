//! The load worker: what runs inside `latlab __load`, one process group per load.
//!
//! It speaks a line protocol on standard output, read by [`super::running`]:
//! `ready` once set up, `count WORK ELAPSED_NS` every 200 ms, `note TEXT` when it has
//! something to say, and finally `end ok` or `end failed MESSAGE`.

use super::{LoadContext, LoadSpec};
use latlab_rt::shared::SharedCounters;
use latlab_rt::{affinity, process};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// How often the worker reports its count.
pub const REPORT_EVERY: Duration = Duration::from_millis(200);

/// How long the load's own processes get to end after SIGTERM before SIGKILL: well
/// within the grace latlab gives the whole load.
const CHILDREN_GRACE: Duration = Duration::from_millis(300);

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    // latlab gone: nobody to tell, and the parent-death signal ends us anyway.
    let _ = writeln!(out, "{line}").and_then(|_| out.flush());
}

/// Runs the load `spec` until told to stop; returns the process exit code.
pub fn worker_main(spec: &str, dir: &Path, cpus: &[usize]) -> i32 {
    let _ = process::die_with_parent(signal_hook::consts::SIGKILL);
    // Every process the load starts stays a descendant of this worker, even one that
    // leaves the process group or the session (a daemon, `setsid cmd &` in an exec
    // load): orphans come back to it, and it ends them all before it exits.
    let _ = process::become_subreaper();
    if !cpus.is_empty() {
        let _ = affinity::set_current_thread(cpus);
    }
    // Loads are background work: never at latlab's own policy, whatever it was.
    let _ = latlab_rt::sched::set_current_thread(latlab_rt::sched::Policy::Other { nice: 0 });
    process::raise_open_files_limit();
    // Raised by SIGTERM (latlab stopping the load) or SIGINT.
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        if let Err(e) = signal_hook::flag::register(signal, stop.clone()) {
            say(&format!("end failed cannot handle signals: {e}"));
            return 1;
        }
    }
    let spec = match LoadSpec::parse(spec) {
        Ok(s) => s,
        Err(e) => {
            say(&format!("end failed {e}"));
            return 1;
        }
    };
    let counters = match SharedCounters::new(64 * 8) {
        Ok(c) => Arc::new(c),
        Err(e) => {
            say(&format!("end failed {e}"));
            return 1;
        }
    };
    // Rates are over the time the load ran, from `ready` on (not its set-up).
    let started: Arc<OnceLock<Instant>> = Arc::new(OnceLock::new());
    let (reporter_counters, reporter_stop) = (counters.clone(), stop.clone());
    let ready_started = started.clone();
    let ready = Box::new(move || {
        let started = *ready_started.get_or_init(Instant::now);
        say("ready");
        let (counters, stop) = (reporter_counters.clone(), reporter_stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                say(&format!(
                    "count {} {}",
                    counters.total(),
                    started.elapsed().as_nanos()
                ));
                std::thread::sleep(REPORT_EVERY);
            }
        });
    });
    let note = Box::new(|text: &str| say(&format!("note {}", text.replace('\n', " "))));
    let ctx = LoadContext::new(
        dir.to_path_buf(),
        cpus.to_vec(),
        stop,
        counters.clone(),
        ready,
        note,
    );
    let result = spec.load().run(&spec.params, &ctx);
    process::end_children(CHILDREN_GRACE);
    say(&format!(
        "count {} {}",
        counters.total(),
        started.get().map_or(0, |s| s.elapsed().as_nanos())
    ));
    match result {
        Ok(()) => {
            say("end ok");
            0
        }
        Err(e) => {
            say(&format!("end failed {e}"));
            1
        }
    }
}
