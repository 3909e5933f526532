//! The decoder and the attribution on this kernel: a SCHED_FIFO 99 thread of this test
//! spins across the deadlines of a SCHED_FIFO 50 sleeper on the same CPU, in a private
//! tracefs instance; every late wake whose deadline fell in a spin must name the
//! spinner, and only within the spin its own clock reads bracket.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::mpsc;

use latlab_model::explain::{Cause, Coverage};
use latlab_model::Nanos;
use latlab_rt::clock::Clock;
use latlab_rt::sched::Policy;
use latlab_rt::tracefs::TraceInstance;
use latlab_trace::{attribute, EventFormat, PageLayout, RecordDecoder, SpikeOf, SpikeWindow};

const PERIOD_NS: i64 = 1_000_000;
const PERIODS: i64 = 400;
/// Every tenth deadline falls 100 µs into a 300 µs spin.
const SPIN_EVERY: i64 = 10;
const SPIN_LEAD_NS: i64 = 100_000;
const SPIN_NS: i64 = 300_000;
const SPIKE_NS: i64 = 100_000;
const SPINNER: &str = "latlab-spin";
const SLEEPER: &str = "latlab-m-test";

/// A tracefs description file in one read (`header_page` answers a short first read
/// with end of file next).
fn read_description(path: &Path) -> String {
    let mut text = vec![0; 64 * 1024];
    let read = File::open(path).unwrap().read(&mut text).unwrap();
    text.truncate(read);
    String::from_utf8(text).unwrap()
}

/// Every page the CPU's `trace_pipe_raw` holds now; the file is closed on return, so
/// the instance can be removed.
fn drain(path: &Path, page_size: usize) -> Vec<Vec<u8>> {
    let mut pipe = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .unwrap();
    let mut pages = Vec::new();
    loop {
        let mut page = vec![0; page_size];
        match pipe.read(&mut page) {
            Ok(0) => break,
            Ok(read) => {
                page.truncate(read);
                pages.push(page);
            }
            Err(error) if error.kind() == ErrorKind::WouldBlock => break,
            Err(error) => panic!("{}: {error}", path.display()),
        }
    }
    pages
}

/// Runs a thread pinned to `cpu` at SCHED_FIFO `priority`, named `name`.
fn rt_thread<T: Send + 'static>(
    name: &str,
    cpu: usize,
    priority: i32,
    body: impl FnOnce() -> T + Send + 'static,
) -> std::thread::JoinHandle<T> {
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(move || {
            latlab_rt::affinity::pin_current_thread(cpu).unwrap();
            latlab_rt::sched::set_current_thread(Policy::Fifo { priority }).unwrap();
            body()
        })
        .unwrap()
}

#[test]
fn fifo_spinner_is_named_for_the_wakes_it_delayed() {
    assert!(
        latlab_rt::process::effective_uid() == 0,
        "the live attribution test needs root: run `sudo -E cargo test -p latlab-trace`"
    );
    let root = latlab_rt::tracefs::tracefs_root()
        .expect("no tracefs: mount it with `mount -t tracefs nodev /sys/kernel/tracing`");
    let cpu = *latlab_rt::affinity::allowed_cpus().unwrap().last().unwrap();
    // Removed when dropped, also when an assertion fails.
    let instance = TraceInstance::create_tagged("attribute-test").unwrap();
    instance.set_cpus(&[cpu]).unwrap();
    instance.set_clock("mono").unwrap();
    instance.set_buffer_size_kb(2048).unwrap();
    let mut events = vec![
        ("sched", "sched_switch".to_owned()),
        ("sched", "sched_waking".to_owned()),
        ("irq", "irq_handler_entry".to_owned()),
        ("irq", "irq_handler_exit".to_owned()),
        ("irq", "softirq_entry".to_owned()),
        ("irq", "softirq_exit".to_owned()),
    ];
    // x86's vectors, whatever this kernel has.
    if let Ok(vectors) = std::fs::read_dir(instance.dir().join("events/irq_vectors")) {
        for vector in vectors {
            let name = vector.unwrap().file_name().into_string().unwrap();
            if name.ends_with("_entry") || name.ends_with("_exit") {
                events.push(("irq_vectors", name));
            }
        }
    }
    let mut formats = Vec::new();
    for (system, name) in &events {
        instance.set_event(system, name, true).unwrap();
        let path = instance.event_format(system, name).unwrap();
        formats.push(EventFormat::parse(&read_description(&path)).unwrap());
    }
    let layout = PageLayout::parse(&read_description(&root.join("events/header_page"))).unwrap();
    let decoder = RecordDecoder::new(layout, formats).unwrap();

    let origin = Clock::Monotonic.now_ns() + 50 * PERIOD_NS;
    let deadline = move |k: i64| origin + k * PERIOD_NS;
    let (spinner_tid, spinner_is) = mpsc::channel();
    let (sleeper_tid, sleeper_is) = mpsc::channel();
    instance.set_tracing(true).unwrap();
    let spinner = rt_thread(SPINNER, cpu, 99, move || {
        spinner_tid.send(latlab_rt::sched::gettid()).unwrap();
        let mut spins = Vec::new();
        for k in (SPIN_EVERY..PERIODS).step_by(SPIN_EVERY as usize) {
            let _ = latlab_rt::wake::sleep_until(Clock::Monotonic, deadline(k) - SPIN_LEAD_NS);
            let start = Clock::Monotonic.now_ns();
            while Clock::Monotonic.now_ns() < start + SPIN_NS {}
            spins.push((start, Clock::Monotonic.now_ns()));
        }
        spins
    });
    let sleeper = rt_thread(SLEEPER, cpu, 50, move || {
        sleeper_tid.send(latlab_rt::sched::gettid()).unwrap();
        let mut late = Vec::new();
        for k in 1..=PERIODS {
            let _ = latlab_rt::wake::sleep_until(Clock::Monotonic, deadline(k));
            let wake = Clock::Monotonic.now_ns();
            if wake - deadline(k) > SPIKE_NS {
                late.push((deadline(k), wake));
            }
        }
        late
    });
    let spins = spinner.join().unwrap();
    let late = sleeper.join().unwrap();
    instance.set_tracing(false).unwrap();
    let spinner_tid = spinner_is.recv().unwrap();
    let sleeper_tid = sleeper_is.recv().unwrap();

    let pipe = instance.trace_pipe_raw(cpu).unwrap();
    let mut records = Vec::new();
    let mut lost = false;
    for page in drain(&pipe, decoder.page_layout().page_size()) {
        let summary = decoder
            .decode_page(cpu as u32, &page, &mut records)
            .unwrap();
        lost |= summary.missed_events;
    }
    assert!(!lost, "a 2 MiB buffer holds the {PERIODS} ms of this test");

    let in_spin = |due: i64| {
        spins
            .iter()
            .any(|&(start, end)| (start..end).contains(&due))
    };
    let spiked: Vec<_> = late.iter().filter(|(due, _)| in_spin(*due)).collect();
    assert!(
        spiked.len() as i64 >= PERIODS / SPIN_EVERY / 2,
        "only {} of {} spins delayed a wake: {late:?}",
        spiked.len(),
        spins.len()
    );
    let mut named = 0;
    for &(due, wake) in &late {
        let window = SpikeWindow {
            cpu,
            tid: sleeper_tid,
            due_ns: due as u64,
            wake_ns: wake as u64,
            margin_ns: SpikeWindow::DEFAULT_MARGIN_NS,
        };
        let spike = SpikeOf {
            phase: "main".to_owned(),
            thread: 0,
            at_ns: Nanos(due - origin),
        };
        let explanation = attribute(window.select(&records), &window, Coverage::Complete, spike);
        assert_eq!(explanation.parts_total_ns(), Nanos(wake - due));
        let mut at = due;
        let mut spinner_ns = 0;
        for part in &explanation.parts {
            let (start, end) = (at, at + part.duration_ns.0);
            at = end;
            let Cause::Thread { comm, pid, .. } = &part.cause else {
                continue;
            };
            if *pid != i64::from(spinner_tid) {
                continue;
            }
            assert_eq!(comm, SPINNER);
            // Ground truth: blamed only within a spin its own clock reads bracket, give
            // or take the time the spinner holds the CPU around them: switched in
            // before its first read, and after its last storing the spin (a vector
            // that may grow) and entering its sleep, tens of µs on this VM. Spins are
            // 10 ms apart, so blame far from any spin still fails.
            const AROUND: i64 = 100_000;
            assert!(
                spins
                    .iter()
                    .any(|&(from, to)| start < to + AROUND && from - AROUND < end),
                "spinner blamed for {start}..{end}, outside its spins: {explanation:#?}"
            );
            spinner_ns += part.duration_ns.0;
        }
        if in_spin(due) && spinner_ns > 0 {
            named += 1;
        }
    }
    assert!(
        named * 10 >= spiked.len() * 9,
        "the spinner named in {named} of {} wakes it delayed",
        spiked.len()
    );
}
