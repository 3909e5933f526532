//! What the periodic task costs against a bare loop, and how hybrid waking compares
//! with abs (`bench/periodic/run` builds and runs it; see bench/README.md).
//!
//! - `cost`: the per-cycle cost of [`Periodic`]'s bookkeeping. Both sides wait on
//!   the same source, which returns at once (see [`Warp`]), read the clock as often and
//!   run the same empty step; the bare side records nothing. Interleaved rounds, ns per
//!   cycle of each side and their difference.
//! - `real`: 1 kHz on one CPU under `SCHED_FIFO`: a bare `clock_nanosleep(TIMER_ABSTIME)`
//!   loop against [`Periodic`] with abs, hybrid at a fixed margin and hybrid with the
//!   margin learned; wake-up latency p50/p99/max and the loop thread's CPU use, the
//!   sides' order rotated between rounds.
//!
//! Both modes pin the thread, set its policy, lock memory and hold `/dev/cpu_dma_latency`
//! at 0 once for the whole process,
//! so every side runs under the same set-up; the tasks are built with `lock_memory(false)`
//! (a task's own lock would be released at its end, unlocking the bench too).

use latlab_rt::affinity;
use latlab_rt::clock::{self, Clock};
use latlab_rt::dma::DmaLatencyGuard;
use latlab_rt::memory::{LockRoom, LockScope, MemoryLock};
use latlab_rt::periodic::{Cycle, Method, Periodic};
use latlab_rt::sched::{Policy, PolicyGuard};
use latlab_rt::wake::{Sleeper, WaitError, Wake, WakeSource};
use latlab_rt::RtError;
use std::hint::black_box;
use std::ops::ControlFlow;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

const USAGE: &str = "\
usage: periodic_bench cost [--rounds N] [--cycles N] [--cpu N] [--priority N]
       periodic_bench real [--rounds N] [--seconds N] [--cpu N] [--priority N] [--margin-us N]";

/// The settings of either mode.
struct Settings {
    rounds: u32,
    cycles: u64,
    seconds: u64,
    cpu: usize,
    priority: i32,
    margin_us: u64,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mode, settings) = match parse(&args) {
        Ok(parsed) => parsed,
        Err(why) => {
            eprintln!("periodic_bench: {why}\n{USAGE}");
            std::process::exit(2);
        }
    };
    let _set_up = set_up(&settings);
    let result = match mode.as_str() {
        "cost" => cost(&settings),
        _ => real(&settings),
    };
    if let Err(e) = result {
        eprintln!("periodic_bench: {e}");
        std::process::exit(1);
    }
}

fn parse(args: &[String]) -> Result<(String, Settings), String> {
    let mode = match args.first().map(String::as_str) {
        Some(m @ ("cost" | "real")) => m.to_string(),
        _ => return Err("give the mode first: cost or real".into()),
    };
    let mut s = Settings {
        rounds: if mode == "cost" { 5 } else { 4 },
        cycles: 10_000_000,
        seconds: 5,
        cpu: 1,
        priority: 80,
        margin_us: 50,
    };
    let mut rest = args[1..].iter();
    while let Some(flag) = rest.next() {
        let value = rest.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = |min: u64| match value.parse::<u64>() {
            Ok(n) if n >= min => Ok(n),
            _ => Err(format!(
                "{flag}: give a whole number ≥ {min} (not {value:?})"
            )),
        };
        match flag.as_str() {
            "--rounds" => s.rounds = number(1)?.min(1000) as u32,
            "--cycles" => s.cycles = number(2)?,
            "--seconds" => s.seconds = number(2)?,
            "--cpu" => s.cpu = number(0)? as usize,
            "--priority" => s.priority = number(1)?.min(99) as i32,
            "--margin-us" => s.margin_us = number(1)?.min(999),
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    Ok((mode, s))
}

/// What the bench holds for the whole process: the policy, the memory lock and the
/// `/dev/cpu_dma_latency` request.
struct SetUp {
    _policy: Option<PolicyGuard>,
    _memory: Option<MemoryLock>,
    _dma: Option<DmaLatencyGuard>,
}

/// Pins, sets fifo, locks memory and keeps the CPUs out of deep idle states
/// (`/dev/cpu_dma_latency` at 0, as cyclictest and `latlab run` do by default); what the
/// system refuses is said, loudly, and the figures are then not real-time ones.
fn set_up(s: &Settings) -> SetUp {
    if let Err(e) = affinity::pin_current_thread(s.cpu) {
        eprintln!("DEGRADED: not pinned to CPU {} ({e})", s.cpu);
    }
    let policy = PolicyGuard::apply(Policy::Fifo {
        priority: s.priority,
    })
    .map_err(|e| eprintln!("DEGRADED: fifo {} refused ({e}): run as root", s.priority))
    .ok();
    let memory = LockRoom::of_this_process()
        .reach(64 << 20)
        .ok_or_else(|| "RLIMIT_MEMLOCK too small".to_string())
        .and_then(|reach| MemoryLock::lock(LockScope::All, reach).map_err(|e| e.to_string()))
        .map_err(|e| eprintln!("DEGRADED: memory not locked ({e}): run as root"))
        .ok();
    let dma = DmaLatencyGuard::request(0)
        .map_err(|e| eprintln!("DEGRADED: /dev/cpu_dma_latency not held at 0 ({e})"))
        .ok();
    SetUp {
        _policy: policy,
        _memory: memory,
        _dma: dma,
    }
}

// ---------------------------------------------------------------------------------------
// cost

/// CLOCK_MONOTONIC, really read, shifted by an offset: a wait returns at once and moves
/// the offset so the clock reads the deadline plus a lateness of 1–5 µs (from the low
/// bits of the real clock, so the histograms see varied samples, as on a real machine).
/// Each cycle thus takes the normal path — on time, no overrun — while the period
/// (1 ms of this clock) passes in a few tens of real ns.
#[derive(Debug, Default)]
struct Warp {
    offset: i64,
}

impl WakeSource for Warp {
    #[inline(always)]
    fn now_ns(&self) -> i64 {
        Clock::Monotonic.now_ns() - self.offset
    }

    fn arm(&mut self, _: i64, _: i64) -> Result<(), RtError> {
        Ok(())
    }

    #[inline(always)]
    fn wait(&mut self, expected_ns: i64, _: &AtomicBool) -> Result<Wake, WaitError> {
        let real = Clock::Monotonic.now_ns();
        let woke = (real - self.offset).max(expected_ns + 1_000 + (real & 0xfff));
        self.offset = real - woke;
        Ok(Wake {
            at_ns: woke,
            expirations: None,
        })
    }
}

/// The loop without the task's bookkeeping: wait for the deadline, run the step, read
/// the clock at its end; a step ending past the next deadline skips to the next one
/// ahead, as the task does. Returns the periods missed.
#[inline(never)]
fn bare_loop<S: WakeSource>(
    source: &mut S,
    period_ns: i64,
    step: &mut impl FnMut(&Cycle) -> ControlFlow<()>,
) -> Result<u64, WaitError> {
    let stop = AtomicBool::new(false);
    let mut due = (source.now_ns() / period_ns + 1) * period_ns;
    let mut index = 0;
    let mut missed = 0;
    loop {
        let woke = source.wait(due, &stop)?.at_ns;
        let cycle = Cycle {
            index,
            due_ns: due,
            woke_ns: woke,
            missed,
        };
        let flow = step(&cycle);
        let end = source.now_ns();
        black_box(end);
        index += 1;
        if flow.is_break() {
            return Ok(missed);
        }
        due += period_ns;
        if end >= due {
            let late = (end - due) / period_ns + 1;
            missed += late as u64;
            due += late * period_ns;
        }
    }
}

/// The empty step: notes the real time at the first and last cycle.
fn timed_step(cycles: u64, span: &mut (i64, i64)) -> impl FnMut(&Cycle) -> ControlFlow<()> + '_ {
    let last = cycles - 1;
    move |cycle| {
        black_box(cycle);
        if cycle.index == 0 {
            span.0 = Clock::Monotonic.now_ns();
        }
        if cycle.index == last {
            span.1 = Clock::Monotonic.now_ns();
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    }
}

const MS: Duration = Duration::from_millis(1);

/// ns per cycle of the bare loop and of the task, `cycles` each.
fn cost_round(cycles: u64, task_first: bool) -> Result<(f64, f64), String> {
    let per_cycle = |span: (i64, i64)| (span.1 - span.0) as f64 / (cycles - 1) as f64;
    let bare = || {
        let mut span = (0, 0);
        bare_loop(
            &mut Warp::default(),
            1_000_000,
            &mut timed_step(cycles, &mut span),
        )
        .map_err(|e| e.to_string())?;
        Ok::<f64, String>(per_cycle(span))
    };
    let task = || {
        let mut span = (0, 0);
        let mut task = Periodic::builder()
            .period(MS)
            .lock_memory(false)
            .quiet(true)
            .name("periodic_bench")
            .build_on(Warp::default())
            .map_err(|e| e.to_string())?;
        let summary = task
            .run(timed_step(cycles, &mut span))
            .map_err(|e| e.to_string())?;
        // A preemption longer than the period (1 ms of the warped clock) is an
        // overrun on either side; anything else would mean the task ran other cycles.
        if summary.counters.cycles != cycles {
            return Err(format!("the task ran {} cycles", summary.counters.cycles));
        }
        Ok(per_cycle(span))
    };
    Ok(if task_first {
        let t = task()?;
        (bare()?, t)
    } else {
        let b = bare()?;
        (b, task()?)
    })
}

fn cost(s: &Settings) -> Result<(), String> {
    println!(
        "cost: ns per cycle, {} cycles a side, {} rounds (order alternating), CPU {}, fifo {}",
        s.cycles, s.rounds, s.cpu, s.priority
    );
    println!(
        "{:<7}{:<15}{:>9}{:>12}{:>10}{:>8}",
        "round", "order", "bare", "periodic", "diff", "ratio"
    );
    let (mut bare, mut task, mut diff, mut ratio) = (vec![], vec![], vec![], vec![]);
    for round in 0..s.rounds {
        let task_first = round % 2 == 1;
        let (b, t) = cost_round(s.cycles, task_first)?;
        let order = if task_first {
            "periodic,bare"
        } else {
            "bare,periodic"
        };
        println!(
            "{:<7}{:<15}{:>9.1}{:>12.1}{:>10.1}{:>8.2}",
            round + 1,
            order,
            b,
            t,
            t - b,
            t / b
        );
        bare.push(b);
        task.push(t);
        diff.push(t - b);
        ratio.push(t / b);
    }
    let row = |name: &str, of: fn(&[f64]) -> f64| {
        println!(
            "{:<22}{:>9.1}{:>12.1}{:>10.1}{:>8.2}",
            name,
            of(&bare),
            of(&task),
            of(&diff),
            of(&ratio)
        );
    };
    row("median", median);
    let read = clock_read_ns();
    row("least", |v| v.iter().copied().fold(f64::INFINITY, f64::min));
    row("largest", |v| {
        v.iter().copied().fold(f64::NEG_INFINITY, f64::max)
    });
    println!("(each column's own median, least and largest over the rounds; diff and ratio are");
    println!(" paired within a round: the diff is the task's bookkeeping per cycle)");
    println!("a CLOCK_MONOTONIC read: {read:.1} ns; each side reads the clock twice a cycle");
    Ok(())
}

/// ns per read of CLOCK_MONOTONIC, over a million reads.
fn clock_read_ns() -> f64 {
    const READS: i64 = 1_000_000;
    let start = Clock::Monotonic.now_ns();
    for _ in 0..READS {
        black_box(Clock::Monotonic.now_ns());
    }
    (Clock::Monotonic.now_ns() - start) as f64 / READS as f64
}

fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

// ---------------------------------------------------------------------------------------
// real

/// The sides of the real-time comparison.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Side {
    Bare,
    Abs,
    HybridFixed,
    HybridLearned,
}

const SIDES: [Side; 4] = [
    Side::Bare,
    Side::Abs,
    Side::HybridFixed,
    Side::HybridLearned,
];

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Bare => "bare abs",
            Side::Abs => "periodic abs",
            Side::HybridFixed => "hybrid fixed",
            Side::HybridLearned => "hybrid learned",
        }
    }
}

/// One side's span: wake-up latencies after the warm-up, CPU use, periods missed, the
/// hybrid margin in use at the end.
#[derive(Debug, Clone, Default)]
struct Span {
    p50_ns: i64,
    p99_ns: i64,
    max_ns: i64,
    cpu_percent: f64,
    missed: u64,
    margin_ns: Option<i64>,
}

/// Cycles of the first second, not counted: a learned margin is measured over them.
const WARM_UP: u64 = 1_000;

/// The step of every real side: keeps the wake-up latency, and the thread's CPU time and
/// the wall clock at the end of the warm-up and at the last cycle.
struct Recording {
    latencies: Vec<i64>,
    marks: [(i64, i64); 2],
    last: u64,
}

impl Recording {
    fn new(cycles: u64) -> Recording {
        Recording {
            latencies: Vec::with_capacity(cycles as usize),
            marks: [(0, 0); 2],
            last: cycles - 1,
        }
    }

    fn step(&mut self) -> impl FnMut(&Cycle) -> ControlFlow<()> + '_ {
        move |cycle| {
            let mark = || {
                (
                    clock::read_ns(libc::CLOCK_THREAD_CPUTIME_ID),
                    Clock::Monotonic.now_ns(),
                )
            };
            if cycle.index == WARM_UP {
                self.marks[0] = mark();
            }
            if cycle.index >= WARM_UP {
                self.latencies.push(cycle.latency_ns());
            }
            if cycle.index == self.last {
                self.marks[1] = mark();
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        }
    }

    fn span(mut self, missed: u64, margin_ns: Option<i64>) -> Span {
        self.latencies.sort_unstable();
        let rank = |p: f64| {
            // Nearest rank: the least sample with at least p % at or below it.
            let n = self.latencies.len();
            let k = ((p / 100.0 * n as f64).ceil() as usize).clamp(1, n);
            self.latencies[k - 1]
        };
        let [(cpu0, wall0), (cpu1, wall1)] = self.marks;
        Span {
            p50_ns: rank(50.0),
            p99_ns: rank(99.0),
            max_ns: *self.latencies.last().unwrap_or(&0),
            cpu_percent: 100.0 * (cpu1 - cpu0) as f64 / (wall1 - wall0) as f64,
            missed,
            margin_ns,
        }
    }
}

fn real_span(side: Side, s: &Settings) -> Result<Span, String> {
    let cycles = s.seconds * 1_000;
    let mut recording = Recording::new(cycles);
    let method = match side {
        Side::Bare => {
            let missed = bare_loop(
                &mut Sleeper::Abs(Clock::Monotonic),
                1_000_000,
                &mut recording.step(),
            )
            .map_err(|e| e.to_string())?;
            return Ok(recording.span(missed, None));
        }
        Side::Abs => Method::Abs,
        Side::HybridFixed => Method::Hybrid {
            margin: Some(Duration::from_micros(s.margin_us)),
        },
        Side::HybridLearned => Method::Hybrid { margin: None },
    };
    let mut task = Periodic::builder()
        .period(MS)
        .method(method)
        .lock_memory(false)
        .quiet(true)
        .name("periodic_bench")
        .build()
        .map_err(|e| e.to_string())?;
    let summary = task.run(recording.step()).map_err(|e| e.to_string())?;
    let c = &summary.counters;
    let margin = c.margin_ns;
    Ok(recording.span(c.missed, margin))
}

fn real(s: &Settings) -> Result<(), String> {
    println!(
        "real: 1 kHz, {} rounds x {} s a side (the first second of each not counted), \
         CPU {}, fifo {}, fixed margin {} us",
        s.rounds, s.seconds, s.cpu, s.priority, s.margin_us
    );
    let heading = ["p50 us", "p99 us", "max us", "CPU %", "missed", "margin us"];
    println!(
        "{:<7}{:<16}{:>9}{:>9}{:>9}{:>8}{:>8}{:>11}",
        "round", "side", heading[0], heading[1], heading[2], heading[3], heading[4], heading[5]
    );
    let mut spans: Vec<Vec<Span>> = vec![Vec::new(); SIDES.len()];
    for round in 0..s.rounds as usize {
        for k in 0..SIDES.len() {
            let i = (round + k) % SIDES.len();
            let span = real_span(SIDES[i], s)?;
            println!(
                "{:<7}{:<16}{:>9.2}{:>9.2}{:>9.2}{:>8.2}{:>8}{:>11}",
                round + 1,
                SIDES[i].name(),
                us(span.p50_ns),
                us(span.p99_ns),
                us(span.max_ns),
                span.cpu_percent,
                span.missed,
                span.margin_ns
                    .map_or("-".into(), |m| format!("{:.2}", us(m)))
            );
            spans[i].push(span);
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    print_real_medians(&spans);
    Ok(())
}

fn us(ns: i64) -> f64 {
    ns as f64 / 1_000.0
}

/// The figures compared: p50, p99, max (ns) and CPU use (%).
const FIGURES: [fn(&Span) -> f64; 4] = [
    |s| s.p50_ns as f64,
    |s| s.p99_ns as f64,
    |s| s.max_ns as f64,
    |s| s.cpu_percent,
];

/// Medians over the rounds of each figure, and their ratios to the bare loop and to
/// periodic abs.
fn print_real_medians(spans: &[Vec<Span>]) {
    let medians: Vec<Vec<f64>> = spans
        .iter()
        .map(|side| {
            FIGURES
                .iter()
                .map(|f| median(&side.iter().map(f).collect::<Vec<_>>()))
                .collect()
        })
        .collect();
    println!("\nmedians over rounds; ratios of the medians: side / bare abs, side / periodic abs");
    println!(
        "{:<16}{:>9}{:>9}{:>9}{:>8} | {:<23} | /abs p50 p99 max CPU",
        "side", "p50 us", "p99 us", "max us", "CPU %", "/bare p50 p99 max CPU"
    );
    for (i, side) in SIDES.iter().enumerate() {
        let mine = &medians[i];
        let ratios = |to: usize| {
            let r: Vec<String> = (0..FIGURES.len())
                .map(|k| format!("{:.2}", mine[k] / medians[to][k]))
                .collect();
            r.join(" ")
        };
        println!(
            "{:<16}{:>9.2}{:>9.2}{:>9.2}{:>8.2} | {:<23} | {}",
            side.name(),
            mine[0] / 1e3,
            mine[1] / 1e3,
            mine[2] / 1e3,
            mine[3],
            ratios(0),
            ratios(1)
        );
    }
}
