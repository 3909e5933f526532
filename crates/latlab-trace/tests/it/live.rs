//! A live capture: a private tracefs instance records a thread of this test sleeping,
//! and the decoded `trace_pipe_raw` pages must show its switches with its own pid and
//! name, stamped between the test's own clock reads.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use latlab_rt::clock::Clock;
use latlab_trace::{decode_page, EventFormat, EventTable, PageLayout};

const TRACEFS: &str = "/sys/kernel/tracing";
const EVENTS: [&str; 3] = [
    "sched/sched_switch",
    "sched/sched_waking",
    "irq/softirq_entry",
];
const SLEEPER: &str = "latlab-sleeper";

/// A tracefs instance of this test, removed when dropped, also when the test fails.
struct Instance {
    path: PathBuf,
}

impl Instance {
    fn create() -> Instance {
        assert!(
            latlab_rt::process::effective_uid() == 0,
            "the live trace test needs root: run `sudo -E cargo test -p latlab-trace`"
        );
        assert!(
            Path::new(TRACEFS).join("instances").is_dir(),
            "no tracefs at {TRACEFS}: mount it with `mount -t tracefs nodev {TRACEFS}`"
        );
        let path = Path::new(TRACEFS).join(format!(
            "instances/latlab-trace-test-{}",
            std::process::id()
        ));
        fs::create_dir(&path).unwrap();
        Instance { path }
    }

    fn write(&self, file: &str, value: &str) {
        fs::write(self.path.join(file), value).unwrap_or_else(|error| panic!("{file}: {error}"));
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        // Best effort: the events must be off before the instance can go.
        let _ = fs::write(self.path.join("tracing_on"), "0");
        for event in EVENTS {
            let _ = fs::write(self.path.join(format!("events/{event}/enable")), "0");
        }
        if let Err(error) = fs::remove_dir(&self.path) {
            eprintln!("could not remove {}: {error}", self.path.display());
        }
    }
}

/// The calling thread's id, from `/proc/thread-self` (`<pid>/task/<tid>`).
fn thread_id() -> i64 {
    let link = fs::read_link("/proc/thread-self").unwrap();
    link.file_name().unwrap().to_str().unwrap().parse().unwrap()
}

/// A tracefs description file, read in one call: `events/header_page` answers a short
/// first read (`read_to_string` starts with 32 bytes) and then reports end of file.
fn read_description(path: &Path) -> String {
    let mut text = vec![0; 64 * 1024];
    let read = File::open(path).unwrap().read(&mut text).unwrap();
    text.truncate(read);
    String::from_utf8(text).unwrap()
}

/// Every page `trace_pipe_raw` holds now, without waiting for more.
fn drain(path: &Path, page_size: usize) -> Vec<Vec<u8>> {
    let mut pipe: File = OpenOptions::new()
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

#[test]
fn sleeping_thread_is_found_in_its_cpus_raw_pages() {
    let instance = Instance::create();
    let cpu = *latlab_rt::affinity::allowed_cpus().unwrap().last().unwrap();
    // Record only once the sleeper is named and pinned: until then it runs under its
    // creator's name, possibly on another CPU. Off before the events are enabled, and
    // emptied, so the buffer holds nothing from before.
    instance.write("tracing_on", "0");
    instance.write("trace_clock", "mono");
    instance.write("tracing_cpumask", &format!("{:x}", 1u128 << cpu));
    for event in EVENTS {
        instance.write(&format!("events/{event}/enable"), "1");
    }
    instance.write("trace", "");
    let (ready, is_ready) = std::sync::mpsc::channel();
    let (start, started) = std::sync::mpsc::channel::<()>();
    let sleeper = std::thread::Builder::new()
        .name(SLEEPER.to_owned())
        .spawn(move || {
            latlab_rt::affinity::pin_current_thread(cpu).unwrap();
            ready.send(thread_id()).unwrap();
            started.recv().unwrap();
            for _ in 0..5 {
                std::thread::sleep(Duration::from_millis(1));
            }
        })
        .unwrap();
    let tid = is_ready.recv().unwrap();
    let begin = Clock::Monotonic.now_ns();
    instance.write("tracing_on", "1");
    start.send(()).unwrap();
    sleeper.join().unwrap();
    // Read once recording is off: events keep coming (other tasks' switches) until then.
    instance.write("tracing_on", "0");
    let end = Clock::Monotonic.now_ns();

    let layout = PageLayout::parse(&read_description(
        &Path::new(TRACEFS).join("events/header_page"),
    ))
    .unwrap();
    let table = EventTable::new(EVENTS.iter().map(|event| {
        let text =
            fs::read_to_string(instance.path.join(format!("events/{event}/format"))).unwrap();
        EventFormat::parse(&text).unwrap()
    }));
    let pages = drain(
        &instance
            .path
            .join(format!("per_cpu/cpu{cpu}/trace_pipe_raw")),
        layout.page_size(),
    );
    assert!(!pages.is_empty(), "cpu{cpu} recorded nothing");
    let mut switches_out = 0;
    let mut wakings = 0;
    for bytes in &pages {
        for record in decode_page(&layout, bytes).unwrap().records {
            let event = table.decode(cpu, &record).unwrap();
            let stamp = i64::try_from(event.timestamp).unwrap();
            assert!(
                (begin..=end).contains(&stamp),
                "{} at {stamp}, outside the test's {begin}..={end}",
                event.name()
            );
            match event.name() {
                "sched_switch" if event.integer("prev_pid") == Some(tid) => {
                    assert_eq!(event.string("prev_comm").as_deref(), Some(SLEEPER));
                    assert_eq!(event.pid(), Some(tid), "the switch runs in the sleeper");
                    switches_out += 1;
                }
                "sched_waking" if event.integer("pid") == Some(tid) => {
                    assert_eq!(event.string("comm").as_deref(), Some(SLEEPER));
                    assert_eq!(event.integer("target_cpu"), i64::try_from(cpu).ok());
                    wakings += 1;
                }
                _ => {}
            }
        }
    }
    // Each of the five sleeps switches the sleeper out and its timer wakes it. (The
    // switch back in, from idle, is not asserted: on this 6.18 VM an instance records no
    // switch away from idle on CPU 1, in its text `trace` as well.)
    assert!(
        switches_out >= 5 && wakings >= 5,
        "{switches_out} switches out, {wakings} wakings of the sleeper {tid} in {} pages",
        pages.len()
    );
}
