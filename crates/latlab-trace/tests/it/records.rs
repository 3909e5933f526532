//! Records decoded from the `full` capture (tests/fixtures/full/capture.sh: every event
//! the explanations read) against the kernel's text rendering of the same events, and
//! the decoder fed garbage.

use latlab_trace::{EventFormat, PageLayout, Record, RecordDecoder, What};
use proptest::prelude::*;

const FULL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/full");

fn decoder() -> RecordDecoder {
    let mut formats = Vec::new();
    for entry in std::fs::read_dir(FULL).unwrap() {
        let path = entry.unwrap().path();
        if path
            .extension()
            .is_some_and(|extension| extension == "format")
        {
            let text = std::fs::read_to_string(&path).unwrap();
            formats.push(EventFormat::parse(&text).unwrap());
        }
    }
    let layout = std::fs::read_to_string(format!("{FULL}/header_page")).unwrap();
    RecordDecoder::new(PageLayout::parse(&layout).unwrap(), formats).unwrap()
}

fn records() -> Vec<Record> {
    let decoder = decoder();
    let raw = std::fs::read(format!("{FULL}/cpu1.raw")).unwrap();
    let mut records = Vec::new();
    for page in raw.chunks(decoder.page_layout().page_size()) {
        let summary = decoder.decode_page(1, page, &mut records).unwrap();
        assert_eq!(
            (summary.unknown, summary.malformed, summary.missed_events),
            (0, 0, false)
        );
    }
    records
}

/// One event line of the text trace: pid, microseconds, name, the rest; and the number
/// of frames for a `<stack trace>`.
struct TextLine {
    pid: i32,
    micros: u64,
    name: String,
    rest: String,
    frames: usize,
}

fn text_lines() -> Vec<TextLine> {
    let text = std::fs::read_to_string(format!("{FULL}/trace.txt")).unwrap();
    let mut lines: Vec<TextLine> = Vec::new();
    for line in text.lines().filter(|line| !line.starts_with('#')) {
        if line.starts_with(" =>") {
            lines.last_mut().unwrap().frames += 1;
            continue;
        }
        let (task, rest) = line.trim_start().split_once(" [").unwrap();
        let pid = task.trim_end().rsplit_once('-').unwrap().1.parse().unwrap();
        let rest = rest.split_once("] ").unwrap().1.trim_start();
        let (_flags, rest) = rest.split_once(' ').unwrap();
        let (seconds, rest) = rest.trim_start().split_once(": ").unwrap();
        let (whole, fraction) = seconds.split_once('.').unwrap();
        let micros = whole.parse::<u64>().unwrap() * 1_000_000 + fraction.parse::<u64>().unwrap();
        let (name, rest) = rest.split_once(": ").unwrap_or((rest, ""));
        lines.push(TextLine {
            pid,
            micros,
            name: name.trim_end_matches(':').to_owned(),
            rest: rest.to_owned(),
            frames: 0,
        });
    }
    lines
}

#[test]
fn full_capture_decodes_to_its_text_trace() {
    let (records, lines) = (records(), text_lines());
    assert_eq!(
        records.len(),
        lines.len(),
        "every event of the text, no more"
    );
    for (record, line) in records.iter().zip(&lines) {
        let at = format!("{} at {} us", line.name, line.micros);
        assert_eq!((record.ts + 500) / 1000, line.micros, "{at}");
        assert_eq!((record.pid, record.cpu), (line.pid, 1), "{at}");
        let event = record.event_name();
        match &record.what {
            What::Print { text } => {
                assert_eq!(line.name, "tracing_mark_write", "{at}");
                assert_eq!(text.trim_end(), line.rest, "{at}");
            }
            What::KernelStack { callers } => {
                assert_eq!(line.name, "<stack trace>", "{at}");
                assert_eq!(callers.len(), line.frames, "{at}");
            }
            What::Switch { prev, next, .. } => {
                assert_eq!(event, "sched:sched_switch");
                // The text's prev_state letters are ours too.
                let state = line.rest.split(" prev_state=").nth(1).unwrap();
                let state = state.split(' ').next().unwrap();
                assert!(
                    record.detail().contains(&format!("state={state} ")),
                    "{at}: {}",
                    record.detail()
                );
                assert!(line.rest.contains(&format!("prev_pid={} ", prev.pid)));
                assert!(line.rest.contains(&format!("next_pid={} ", next.pid)));
                assert!(line.rest.contains(&format!("next_prio={}", next.prio)));
            }
            What::SoftirqEntry { vec } => {
                assert!(line
                    .rest
                    .contains(&format!("[action={}]", latlab_trace::softirq_name(*vec))));
            }
            _ => {
                assert_eq!(event.split(':').nth(1), Some(line.name.as_str()), "{at}");
            }
        }
    }
    let vectors = records
        .iter()
        .filter(|r| matches!(&r.what, What::VectorEntry { name, .. } if &**name == "local_timer"))
        .count();
    assert!(vectors > 0, "the timer interrupt is recorded as a vector");
}

#[test]
fn hrtimer_pointers_are_the_real_ones_not_the_texts_hashes() {
    let records = records();
    let started = records.iter().find_map(|r| match r.what {
        What::HrtimerStart { hrtimer, .. } => Some(hrtimer),
        _ => None,
    });
    let expired = records.iter().any(
        |r| matches!(r.what, What::HrtimerExpireEntry { hrtimer, .. } if Some(hrtimer) == started),
    );
    // Kernel addresses: the top bits set, and the same timer seen started and expired.
    assert!(started.is_some_and(|address| address >> 48 == 0xffff) && expired);
}

#[test]
fn missing_field_of_a_used_event_names_event_and_field() {
    let text = std::fs::read_to_string(format!("{FULL}/sched_sched_switch.format")).unwrap();
    let format = EventFormat::parse(&text.replace("next_prio", "next_priority")).unwrap();
    let layout = std::fs::read_to_string(format!("{FULL}/header_page")).unwrap();
    let error = RecordDecoder::new(PageLayout::parse(&layout).unwrap(), [format])
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("sched_switch") && error.contains("next_prio"),
        "{error}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Random bytes never panic the decoder: an error, or records.
    #[test]
    fn garbage_pages_never_panic(
        mut page in proptest::collection::vec(any::<u8>(), 0..4200),
        length in 0u64..4100,
    ) {
        let decoder = decoder();
        let mut into = Vec::new();
        let _ = decoder.decode_page(1, &page, &mut into);
        // The same bytes behind a commit word that fits, so the records are walked.
        if page.len() >= 16 {
            page[8..16].copy_from_slice(&length.to_ne_bytes());
            let _ = decoder.decode_page(1, &page, &mut into);
        }
    }

    /// A real page with bytes flipped: still no panic.
    #[test]
    fn corrupted_real_pages_never_panic(
        flips in proptest::collection::vec((0usize..4096, any::<u8>()), 1..40)
    ) {
        let decoder = decoder();
        let mut page = std::fs::read(format!("{FULL}/cpu1.raw")).unwrap();
        page.truncate(4096);
        for (at, byte) in flips {
            page[at] = byte;
        }
        let mut into = Vec::new();
        let _ = decoder.decode_page(1, &page, &mut into);
    }
}
