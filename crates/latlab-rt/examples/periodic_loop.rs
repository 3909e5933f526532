//! A 1 kHz control loop on `latlab_rt::periodic`: a fake controller on a simulated
//! plant, pinned, at fifo 80, woken hybrid with a learned margin, skipping and counting
//! overruns. Watch it with `latlab attach <pid>`.
//!
//!     cargo run --release -p latlab-rt --example periodic_loop -- [SECONDS] [CPU]
//!
//! It runs SECONDS (default 10) or until Ctrl-C, then prints its own count of cycles
//! and the task's statistics.

use latlab_rt::periodic::{self, Periodic};
use std::ops::ControlFlow;
use std::time::Duration;

fn main() {
    let mut args = std::env::args().skip(1);
    let seconds: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(10);
    let cpu: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or_else(|| {
        latlab_rt::affinity::allowed_cpus()
            .ok()
            .and_then(|cpus| cpus.last().copied())
            .unwrap_or(0)
    });
    periodic::stop_on_signals(&[libc::SIGINT, libc::SIGTERM]).expect("signal handlers");
    let mut task = match Periodic::builder()
        .period(Duration::from_millis(1))
        .cpu(cpu)
        .fifo(80)
        .hybrid_learned()
        .name("control")
        .build()
    {
        Ok(task) => task,
        Err(e) => {
            eprintln!("periodic_loop: {e}");
            std::process::exit(2);
        }
    };
    // A first-order plant driven by a PI controller towards a set point.
    let (mut position, mut integral, set_point) = (0.0f64, 0.0f64, 1.0f64);
    let mut own_cycles = 0u64;
    let cycles = seconds * 1000;
    let summary = task.run(|cycle| {
        let error = set_point - position;
        integral += error * 0.001;
        let command = 2.0 * error + 5.0 * integral;
        position += (command - position) * 0.001;
        own_cycles += 1;
        match cycle.index + 1 >= cycles {
            true => ControlFlow::Break(()),
            false => ControlFlow::Continue(()),
        }
    });
    match summary {
        Ok(summary) => {
            let c = &summary.counters;
            println!(
                "cycles={own_cycles} library_cycles={} missed={} overruns={} \
                 wake_max_ns={} compute_max_ns={} position={position:.6}",
                c.cycles,
                c.missed,
                c.overruns,
                c.wake_max_ns.unwrap_or(0),
                c.compute_max_ns.unwrap_or(0)
            );
        }
        Err(e) => {
            eprintln!("periodic_loop: {e}");
            std::process::exit(3);
        }
    }
}
