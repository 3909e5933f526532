//! examples/c/loop.c in Rust, on `latlab_rt::periodic` itself: a 1 kHz control loop at
//! fifo:80 on one CPU, hybrid wake-up, overruns counted, a PID controller holding a
//! simulated plant at a set point.
//!
//!     cargo run --release -p latlab-periodic --example loop -- [SECONDS [CPU [MARGIN_NS]]]
//!
//! SECONDS 0 (the default) runs until SIGINT, SIGTERM or SIGHUP; CPU defaults to the last one
//! the process may run on; MARGIN_NS 0 learns the spin margin. The last line is the C
//! example's, key=value, times in ns.

use latlab_rt::periodic::{self, Method, Periodic};
use std::ops::ControlFlow;
use std::process::ExitCode;
use std::time::Duration;

const PERIOD: Duration = Duration::from_millis(1);

/// A plant dx/dt = (gain·u − x)/τ and the PID holding it at a set point.
#[derive(Default)]
struct Control {
    x: f64,
    setpoint: f64,
    integral: f64,
    previous_error: f64,
}

impl Control {
    fn step(&mut self, index: u64) {
        let (dt, tau, gain) = (PERIOD.as_secs_f64(), 0.05, 2.0);
        let (kp, ki, kd) = (1.2, 8.0, 0.002);
        let error = self.setpoint - self.x;
        self.integral += error * dt;
        let derivative = (error - self.previous_error) / dt;
        self.previous_error = error;
        let output = (kp * error + ki * self.integral + kd * derivative).clamp(-10.0, 10.0);
        self.x += dt * (gain * output - self.x) / tau;
        // A square wave to follow, 0.5 s a level.
        if (index + 1).is_multiple_of(500) {
            self.setpoint = if self.setpoint > 0.5 { 0.0 } else { 1.0 };
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |i: usize, what: &str| -> Result<Option<f64>, String> {
        args.get(i)
            .map(|a| {
                a.parse::<f64>()
                    .map_err(|_| format!("{what}: not a number: {a}"))
            })
            .transpose()
    };
    let parsed = (|| {
        Ok::<_, String>((
            number(0, "SECONDS")?,
            number(1, "CPU")?,
            number(2, "MARGIN_NS")?,
        ))
    })();
    let (seconds, cpu, margin) = match parsed {
        Ok(v) => v,
        Err(e) => {
            eprintln!("loop: {e}");
            return ExitCode::from(2);
        }
    };
    let cpu = cpu.map(|c| c as usize).or_else(|| {
        latlab_rt::affinity::allowed_cpus()
            .ok()
            .and_then(|cpus| cpus.last().copied())
    });
    let margin = match margin.unwrap_or(0.0) as u64 {
        0 => None,
        ns => Some(Duration::from_nanos(ns)),
    };
    let duration_ns = (seconds.unwrap_or(0.0) * 1e9) as i64;

    let mut builder = Periodic::builder()
        .period(PERIOD)
        .fifo(80)
        .method(Method::Hybrid { margin })
        .name("loop.rs");
    if let Some(cpu) = cpu {
        builder = builder.cpu(cpu);
    }
    let result = periodic::stop_on_signals(&[libc::SIGINT, libc::SIGTERM, libc::SIGHUP])
        .map_err(periodic::PeriodicError::from)
        .and_then(|()| builder.build());
    let mut task = match result {
        Ok(task) => task,
        Err(e) => {
            eprintln!("loop: {e}");
            return ExitCode::from(2);
        }
    };
    let mut control = Control {
        setpoint: 1.0,
        ..Control::default()
    };
    let mut own_cycles: u64 = 0;
    let (mut first_due, mut last_due) = (0, 0);
    let summary = task.run(|cycle| {
        if own_cycles == 0 {
            first_due = cycle.due_ns;
        }
        own_cycles += 1;
        last_due = cycle.due_ns;
        control.step(cycle.index);
        // The last period of the duration runs the last cycle.
        let last = cycle.due_ns - first_due >= duration_ns - PERIOD.as_nanos() as i64;
        match duration_ns != 0 && last {
            true => ControlFlow::Break(()),
            false => ControlFlow::Continue(()),
        }
    });
    let summary = match summary {
        Ok(summary) => summary,
        Err(e) => {
            eprintln!("loop: {e}");
            return ExitCode::from(2);
        }
    };
    let stats = latlab_periodic::latlab_stats::from_summary(&summary);
    let ns = |v: i64| match v {
        latlab_periodic::LATLAB_UNKNOWN => "unknown".to_string(),
        v => v.to_string(),
    };
    // The periods the loop spanned, each run or missed.
    let periods = match own_cycles {
        0 => 0,
        _ => (last_due - first_due) / PERIOD.as_nanos() as i64 + 1,
    };
    println!(
        "loop: own_cycles={own_cycles} periods={periods} cycles={} missed={} overruns={} wake_p50_ns={} \
         wake_p99_ns={} wake_max_ns={} compute_p50_ns={} compute_p99_ns={} compute_max_ns={} \
         margin_ns={} plant_x={:.3}",
        stats.cycles,
        stats.missed,
        stats.overruns,
        ns(stats.wake_p50_ns),
        ns(stats.wake_p99_ns),
        ns(stats.wake_max_ns),
        ns(stats.compute_p50_ns),
        ns(stats.compute_p99_ns),
        ns(stats.compute_max_ns),
        ns(stats.hybrid_margin_ns),
        control.x
    );
    ExitCode::SUCCESS
}
