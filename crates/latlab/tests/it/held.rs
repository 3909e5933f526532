//! What held the measuring threads off their CPUs is named only as the kernel showed
//! it: a stopped latlab is said to be stopped, a task of higher priority is named —
//! neither is put down to RT throttling, which never activated (the lane does the
//! same on PREEMPT_RT: `rt_lane::`).

use crate::common::{await_handler, latlab_in_own_group, serial, text};
use latlab_model::run::{Run, Warning};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The CPU the tests measure: the last this process may use.
fn measured_cpu() -> usize {
    *latlab_rt::affinity::allowed_cpus().unwrap().last().unwrap()
}

/// The run's missed-periods warning.
fn missed_periods(run: &Run) -> &Warning {
    run.warnings
        .iter()
        .find(|w| w.code == "missed-periods")
        .unwrap_or_else(|| panic!("no missed periods: {:?}", run.warnings))
}

/// No warning of `run` blames RT throttling or advises turning it off.
fn assert_no_throttling_blamed(run: &Run) {
    for w in &run.warnings {
        assert!(
            !w.message.contains("RT throttling stopped")
                && !w.message.contains("sched_rt_runtime_us=-1")
                && w.code != "rt-throttled",
            "{}: {}",
            w.code,
            w.message
        );
    }
}

#[test]
fn a_stopped_run_is_said_to_be_stopped_not_throttled() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let cpu = measured_cpu().to_string();
    let child = latlab_in_own_group()
        .args([
            "run",
            "-c",
            &cpu,
            "-d",
            "3s",
            "-q",
            "--no-store",
            "--no-audit",
        ])
        .arg("--json")
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    // Counting continues is the last thing set up before measuring.
    await_handler(pid, libc::SIGCONT);
    std::thread::sleep(Duration::from_millis(500));
    let signal = |name: &str| {
        let ok = std::process::Command::new("kill")
            .args([name, &pid.to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill {name} {pid}");
    };
    signal("-STOP");
    std::thread::sleep(Duration::from_millis(800));
    signal("-CONT");
    let out = child.wait_with_output().unwrap();
    crate::common::assert_nothing_left_of(pid, "a stopped run");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let run = crate::common::written_run(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let missed = missed_periods(&run);
    assert!(
        missed
            .message
            .contains("latlab itself was stopped and continued 1 time"),
        "{}",
        missed.message
    );
    assert_no_throttling_blamed(&run);
}

/// A SCHED_FIFO 96 thread of this test on `cpu`, busy `busy` of every `every`, until
/// dropped.
struct Spinner {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Spinner {
    fn start(cpu: usize, busy: Duration, every: Duration) -> Spinner {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("held-spinner".to_string())
            .spawn(move || {
                latlab_rt::affinity::pin_current_thread(cpu).unwrap();
                latlab_rt::sched::set_current_thread(latlab_rt::sched::Policy::Fifo {
                    priority: 96,
                })
                .expect("SCHED_FIFO 96: run the tests as root");
                while !flag.load(Ordering::Relaxed) {
                    let until = Instant::now() + busy;
                    while Instant::now() < until {
                        std::hint::spin_loop();
                    }
                    std::thread::sleep(every - busy);
                }
            })
            .unwrap();
        Spinner {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[test]
fn a_higher_priority_task_on_the_measured_cpu_is_named_not_throttling() {
    let _serial = serial();
    let cpu = measured_cpu();
    // Busy 60 ms of every 200: it holds the fifo:95 thread for 60 periods at a time
    // (long enough for the coordinator to look even when the other CPU is busy with
    // the rest of the suite), and leaves real-time tasks far below what RT throttling
    // allows.
    let spinner = Spinner::start(cpu, Duration::from_millis(60), Duration::from_millis(200));
    let (_, run, _) = crate::common::measure(&["-c", &cpu.to_string(), "-d", "2s", "--no-audit"]);
    drop(spinner);
    let missed = missed_periods(&run);
    assert_no_throttling_blamed(&run);
    // As root the scheduler's state is read while the thread is held: the spinner is
    // named, with its priority.
    assert!(
        missed.message.contains("held-spinner:") && missed.message.contains("(fifo/rr 96)"),
        "{}",
        missed.message
    );
}
