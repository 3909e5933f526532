//! Decodes pages captured on a real kernel and checks them against the text `trace` of
//! the same capture (tests/fixtures/README.md says how they were made).

use latlab_trace::{decode_page, EventFormat, EventTable, FieldKind, PageLayout, Value};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
const EVENTS: [&str; 6] = [
    "sched_sched_switch",
    "sched_sched_waking",
    "irq_irq_handler_entry",
    "irq_irq_handler_exit",
    "irq_softirq_entry",
    "irq_softirq_exit",
];

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!("{FIXTURES}/{name}")).unwrap()
}

fn table() -> EventTable {
    EventTable::new(EVENTS.iter().map(|event| {
        let text = String::from_utf8(fixture(&format!("{event}.format"))).unwrap();
        EventFormat::parse(&text).unwrap()
    }))
}

fn layout() -> PageLayout {
    PageLayout::parse(&String::from_utf8(fixture("header_page")).unwrap()).unwrap()
}

/// One line of the text trace: `comm-pid [cpu] flags seconds.micros: name: fields`.
struct TextEvent {
    pid: i64,
    cpu: usize,
    micros: u64,
    name: String,
    fields: Vec<(String, String)>,
}

fn text_events() -> Vec<TextEvent> {
    let text = String::from_utf8(fixture("trace.txt")).unwrap();
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .map(|line| {
            let (task, rest) = line.trim_start().split_once(" [").unwrap();
            let pid = task.trim_end().rsplit_once('-').unwrap().1.parse().unwrap();
            let (cpu, rest) = rest.split_once("] ").unwrap();
            let mut words = rest.splitn(4, ' ').filter(|word| !word.is_empty());
            let _flags = words.next().unwrap();
            let seconds = words.next().unwrap().trim_end_matches(':');
            let (whole, fraction) = seconds.split_once('.').unwrap();
            let micros =
                whole.parse::<u64>().unwrap() * 1_000_000 + fraction.parse::<u64>().unwrap();
            let rest = words.next().unwrap();
            let (name, fields) = rest.split_once(": ").unwrap();
            let fields = fields
                .split_whitespace()
                .filter_map(|word| word.split_once('='))
                .map(|(key, value)| (key.to_owned(), value.to_owned()))
                .collect();
            TextEvent {
                pid,
                cpu: cpu.parse().unwrap(),
                micros,
                name: name.to_owned(),
                fields,
            }
        })
        .collect()
}

#[test]
fn header_page_of_this_kernel() {
    let layout = layout();
    assert_eq!(
        (
            layout.timestamp_offset,
            layout.commit_offset,
            layout.commit_size,
            layout.data_offset
        ),
        (0, 8, 8, 16)
    );
    assert_eq!(layout.page_size(), 4096);
}

#[test]
fn captured_pages_decode_to_the_text_trace_of_the_same_capture() {
    let (layout, table) = (layout(), table());
    let raw = fixture("cpu0.raw");
    let mut events = Vec::new();
    for bytes in raw.chunks(layout.page_size()) {
        let page = decode_page(&layout, bytes).unwrap();
        assert!(!page.missed_events, "the capture lost no events");
        for record in &page.records {
            events.push(table.decode(0, record).unwrap());
        }
    }
    let expected = text_events();
    assert_eq!(
        events.len(),
        expected.len(),
        "every event of the text trace, no more"
    );
    for (event, text) in events.iter().zip(&expected) {
        let at = format!("{} at {} us", text.name, text.micros);
        assert_eq!(
            (event.name(), event.cpu, event.pid()),
            (text.name.as_str(), text.cpu, Some(text.pid)),
            "{at}"
        );
        // The text trace rounds to the microsecond (ns2usecs adds 500 ns).
        assert_eq!((event.timestamp + 500) / 1000, text.micros, "{at}");
        let mut compared = 0;
        for (key, value) in &text.fields {
            let Some(field) = event.format.field(key) else {
                continue;
            };
            match (field.kind, event.field(key).unwrap()) {
                (FieldKind::Integer { .. }, Value::Signed(_) | Value::Unsigned(_)) => {
                    let Ok(expected) = value.parse::<i64>() else {
                        continue;
                    }; // prev_state prints letters
                    assert_eq!(event.integer(key), Some(expected), "{key} of {at}");
                }
                (_, Value::Str(decoded)) => {
                    // The text is split at spaces, and a comm may hold one ("opt cgu.0").
                    let first_word = decoded.split(' ').next();
                    assert_eq!(first_word, Some(value.as_str()), "{key} of {at}: {decoded}");
                }
                (kind, decoded) => panic!("{key} of {at}: {kind:?} decoded as {decoded:?}"),
            }
            compared += 1;
        }
        assert!(compared > 0, "no field of {at} was compared");
    }
    for window in events.windows(2) {
        assert!(
            window[0].timestamp <= window[1].timestamp,
            "timestamps cumulate in order"
        );
    }
    let names: std::collections::BTreeSet<_> = events.iter().map(|event| event.name()).collect();
    assert_eq!(
        names.len(),
        EVENTS.len(),
        "every enabled event is in the capture: {names:?}"
    );
}

#[test]
fn irq_name_is_read_through_its_data_loc() {
    let (layout, table) = (layout(), table());
    let raw = fixture("cpu0.raw");
    let page = decode_page(&layout, &raw[..layout.page_size()]).unwrap();
    let names: Vec<_> = page
        .records
        .iter()
        .map(|record| table.decode(0, record).unwrap())
        .filter(|event| event.name() == "irq_handler_entry")
        .map(|event| event.string("name").unwrap().into_owned())
        .collect();
    assert!(
        !names.is_empty() && names.iter().all(|name| !name.is_empty()),
        "{names:?}"
    );
}

#[test]
fn truncated_page_is_an_error_not_a_panic() {
    let layout = layout();
    let raw = fixture("cpu0.raw");
    for cut in [0, 8, 15, 100, 4000] {
        assert!(
            decode_page(&layout, &raw[..cut]).is_err(),
            "page cut at {cut} bytes"
        );
    }
}

#[test]
fn unknown_event_id_names_the_id() {
    let layout = layout();
    let raw = fixture("cpu0.raw");
    let page = decode_page(&layout, &raw[..layout.page_size()]).unwrap();
    let error = EventTable::default()
        .decode(0, &page.records[0])
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("event id") && error.contains("format"),
        "{error}"
    );
}
