//! Forged pages: a real task's page, changed at random (its counters, its histograms,
//! any byte of its header), read as `latlab attach` reads it. Whatever the bytes, the
//! reader refuses them or makes a Run that reads back whole — the store's test of a
//! damaged Run — without a panic or a hang. It measures nothing and holds no slot:
//! it takes the CPU the measuring tests leave.

use latlab_model::run::{HostFacts, Run};
use latlab_rt::periodic::{hdr, shm, Periodic};
use latlab_session::attach::{run_of, End};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::ops::ControlFlow;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Pages tried: the bar.
const CASES: u32 = 10_000;

/// The page of a real task of this process after its 300th cycle.
fn real_page() -> Vec<u8> {
    std::thread::spawn(|| {
        let mut task = Periodic::builder()
            .period(Duration::from_micros(100))
            .lock_memory(false)
            .name("fuzzed")
            .quiet(true)
            .build()
            .unwrap();
        let tid = latlab_rt::sched::gettid();
        let path = shm::path_of(std::process::id(), tid);
        let mut bytes = Vec::new();
        task.run(|cycle| match cycle.index == 300 {
            true => {
                bytes = std::fs::read(&path).unwrap();
                ControlFlow::Break(())
            }
            false => ControlFlow::Continue(()),
        })
        .unwrap();
        bytes
    })
    .join()
    .unwrap()
}

/// One change to the page: a word or a byte of the header, or a histogram count.
#[derive(Debug, Clone)]
enum Change {
    /// The word at this offset into the counters (most of what a reader checks).
    Counter(usize, Value),
    /// The word at this offset into the header.
    HeaderWord(usize, Value),
    /// The byte at this offset into the header.
    HeaderByte(usize, u8),
    /// The count at this index of histogram 0 (wake-up) or 1 (compute).
    Count(usize, usize, Value),
}

/// A word's new value: an edge, anything, or a step off what it was.
#[derive(Debug, Clone)]
enum Value {
    Is(u64),
    Step(i64),
}

impl Value {
    fn applied_to(&self, was: u64) -> u64 {
        match self {
            Value::Is(v) => *v,
            Value::Step(d) => was.wrapping_add_signed(*d),
        }
    }
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        prop_oneof![
            Just(0u64),
            Just(1),
            Just(u64::MAX),
            Just(i64::MAX as u64),
            Just(i64::MIN as u64),
            Just(hdr::HIGHEST_NS),
            any::<u64>(),
            0..100_000u64,
        ]
        .prop_map(Value::Is),
        (-3i64..=3).prop_map(Value::Step),
        (-1_000_000_000i64..=1_000_000_000).prop_map(Value::Step),
    ]
}

fn change() -> impl Strategy<Value = Change> {
    let header = std::mem::size_of::<shm::Header>();
    let counters = std::mem::size_of::<shm::Counters>() / 8;
    prop_oneof![
        4 => (0..counters, value()).prop_map(|(i, v)| Change::Counter(i * 8, v)),
        1 => (0..header / 8, value()).prop_map(|(i, v)| Change::HeaderWord(i * 8, v)),
        1 => (0..header, any::<u8>()).prop_map(|(i, b)| Change::HeaderByte(i, b)),
        2 => (0..2usize, 0..hdr::LEN, value()).prop_map(|(w, i, v)| Change::Count(w, i, v)),
    ]
}

/// What became of the pages tried.
#[derive(Default)]
struct Tally {
    refused_at_open: AtomicU64,
    stalled: AtomicU64,
    invalid: AtomicU64,
    runs: AtomicU64,
}

#[test]
fn no_forged_page_panics_hangs_or_makes_a_run_that_does_not_read_back() {
    let mut base = real_page();
    // The page is put under this thread's name (and says so), a thread that runs, in a
    // directory of its own: every latlab run sweeps /dev/shm of pages whose thread is
    // gone, and a forged start time makes this one look gone to a sweep reading it
    // between a change and its undoing (every later case was then "refused at open").
    let tid = latlab_rt::sched::gettid();
    let at = std::mem::offset_of!(shm::Header, tid);
    base[at..at + 4].copy_from_slice(&(tid as u32).to_ne_bytes());
    let dir = tempfile::tempdir().unwrap();
    let name = shm::path_of(std::process::id(), tid);
    let path = dir.path().join(name.file_name().unwrap());
    std::fs::write(&path, &base).unwrap();
    // The page as the task wrote it is read: a reader that refused real pages would
    // pass every forged one too.
    let real = shm::Reader::open(&path).map(|mut r| r.snapshot());
    assert!(
        matches!(real, Ok(Ok(_))),
        "the real page was refused: {real:?}"
    );
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    let header = std::mem::size_of::<shm::Header>();
    let counters = std::mem::offset_of!(shm::Header, counters);
    let word = |at: usize| u64::from_ne_bytes(base[at..at + 8].try_into().unwrap());
    let tally = Tally::default();
    let mut runner = TestRunner::new(Config {
        cases: CASES,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&prop::collection::vec(change(), 1..4), |changes| {
            let mut touched = Vec::new();
            for change in &changes {
                let (at, bytes) = match change {
                    Change::Counter(off, v) => {
                        let at = counters + off;
                        (at, v.applied_to(word(at)).to_ne_bytes().to_vec())
                    }
                    Change::HeaderWord(at, v) => {
                        (*at, v.applied_to(word(*at)).to_ne_bytes().to_vec())
                    }
                    Change::HeaderByte(at, b) => (*at, vec![*b]),
                    Change::Count(which, i, v) => {
                        let at = header + (which * hdr::LEN + i) * 8;
                        (at, v.applied_to(word(at)).to_ne_bytes().to_vec())
                    }
                };
                file.write_all_at(&bytes, at as u64).unwrap();
                touched.push((at, bytes.len()));
            }
            let outcome = read_as_attach_does(&path);
            for (at, len) in touched {
                file.write_all_at(&base[at..at + len], at as u64).unwrap();
            }
            let counter = match outcome? {
                Outcome::RefusedAtOpen => &tally.refused_at_open,
                Outcome::Stalled => &tally.stalled,
                Outcome::Invalid => &tally.invalid,
                Outcome::Run => &tally.runs,
            };
            counter.fetch_add(1, Ordering::Relaxed);
            Ok(())
        })
        .unwrap();
    let n = |c: &AtomicU64| c.load(Ordering::Relaxed);
    let (open, stalled, invalid, runs) = (
        n(&tally.refused_at_open),
        n(&tally.stalled),
        n(&tally.invalid),
        n(&tally.runs),
    );
    eprintln!(
        "{CASES} forged pages: {open} refused at open, {stalled} stalled, {invalid} \
         invalid, {runs} made Runs that read back"
    );
    assert_eq!(open + stalled + invalid + runs, u64::from(CASES));
    // Few changes touch what open checks (the magic, the sizes, the ids): a reader that
    // refuses most pages at open never reaches the checks of their contents.
    assert!(
        open < u64::from(CASES) / 10,
        "{open} pages were refused at open"
    );
    // The changes reach every check: some pages pass, many are caught in the counts.
    assert!(
        runs >= u64::from(CASES) / 20,
        "only {runs} pages made a Run"
    );
    assert!(
        invalid >= u64::from(CASES) / 5,
        "only {invalid} pages were invalid"
    );
}

enum Outcome {
    RefusedAtOpen,
    Stalled,
    Invalid,
    Run,
}

/// What `latlab attach` does with the page at `path`: open it, take a snapshot, make
/// its Run and keep it; the Run must read back as the store reads it.
fn read_as_attach_does(path: &std::path::Path) -> Result<Outcome, TestCaseError> {
    let Ok(reader) = shm::Reader::open(path) else {
        return Ok(Outcome::RefusedAtOpen);
    };
    let mut reader = reader.with_patience(Duration::from_millis(1));
    let snapshot = match reader.snapshot() {
        Ok(snapshot) => snapshot,
        Err(shm::SnapshotError::Stalled) => return Ok(Outcome::Stalled),
        Err(_) => return Ok(Outcome::Invalid),
    };
    let mut run = run_of(&snapshot, End::TaskEnded, None, 0, HostFacts::default());
    run.id = latlab_model::stamp::run_id(std::time::SystemTime::now());
    // As the store writes it.
    let json = serde_json::to_string(&run).unwrap();
    let back = Run::from_json(&json);
    prop_assert!(back.is_ok(), "{:?} from {snapshot:?}", back.err());
    Ok(Outcome::Run)
}
