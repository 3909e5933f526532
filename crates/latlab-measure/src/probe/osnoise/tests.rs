use super::*;
use crate::probe::tracer::fixture;
use latlab_model::spec::SchedSpec;
use latlab_trace::{decode_page, EventFormat, EventTable, PageLayout};

const MS: i64 = 1_000_000;

/// What the pages a kernel (`6.1-rt`, `6.12-rt`) wrote hold, decoded with the formats
/// it published.
fn written(kernel: &str) -> Vec<Written> {
    let text = |name: &str| String::from_utf8(fixture(&format!("{kernel}-{name}"))).unwrap();
    let layout = PageLayout::parse(&text("header_page")).unwrap();
    let table = EventTable::new([
        EventFormat::parse(&text("ftrace-osnoise.format")).unwrap(),
        EventFormat::parse(&text("osnoise-sample_threshold.format")).unwrap(),
    ]);
    let pages = fixture(&format!("{kernel}-osnoise-cpu0.raw"));
    let size = layout.data_offset + layout.data_size;
    let mut found = Vec::new();
    for page in pages.chunks(size) {
        for record in &decode_page(&layout, page).unwrap().records {
            let event = table.decode(0, record).unwrap();
            found.push(Written::of(&event).expect("a noise or a period's summary"));
        }
    }
    found
}

fn tally() -> Tally {
    let setup = ProbeSetup {
        period: Nanos::from_secs(1),
        ..info::test_setup(&INFO, &[], &[0])
    };
    let placement = Placement {
        thread: 0,
        cpu: Some(0),
        policy: SchedSpec::DEFAULT,
        timer_slack_ns: 0,
        feed: None,
        checkpoint: None,
    };
    Tally::new(&setup, &placement, 5)
}

#[test]
fn the_pages_of_6_1_and_6_12_hold_noise_and_period_summaries_that_agree() {
    for kernel in ["6.1-rt", "6.12-rt"] {
        let found = written(kernel);
        let noise: Vec<i64> = found
            .iter()
            .filter_map(|w| match w {
                Written::Noise { duration, .. } => Some(*duration),
                _ => None,
            })
            .collect();
        let summaries: Vec<PeriodSummary> = found
            .iter()
            .filter_map(|w| match w {
                Written::Period { summary, .. } => Some(*summary),
                _ => None,
            })
            .collect();
        assert!(noise.len() > 20, "{kernel}: {} noise samples", noise.len());
        assert!(!summaries.is_empty(), "{kernel}: no period summary");
        // The capture's threshold: 20 µs.
        assert!(noise.iter().all(|&d| d > 20_000), "{kernel}: {noise:?}");
        for s in &summaries {
            // The capture's runtime: 90 ms of every 100 ms (its loop ends a little
            // after).
            assert!((89 * MS..=95 * MS).contains(&s.runtime), "{kernel}: {s:?}");
            assert!(s.noise <= s.runtime && s.max_sample <= s.noise, "{kernel}: {s:?}");
        }
        // Every gap the tracer reported is an interruption it counted.
        let ended = |w: &Written| match w {
            Written::Noise { ended, .. } | Written::Period { ended, .. } => *ended,
        };
        let first = ended(&found[0]);
        let window = Window {
            start: first - 1,
            warm_up_end: first - 1,
            end: Some(ended(found.last().unwrap())),
        };
        let mut tally = tally();
        tally.take(&found, &window, &LiveStats::default());
        assert_eq!(tally.recorder.samples(), noise.len() as u64, "{kernel}");
        assert_eq!(tally.periods, summaries.len() as u64, "{kernel}");
        let interruptions: u64 = tally.total.counts.iter().sum();
        assert!(interruptions > 0, "{kernel}: {:?}", tally.total);
    }
}

#[test]
fn samples_belong_to_the_window_in_which_their_noise_ended() {
    let mut tally = tally();
    let window = Window {
        start: 10 * MS,
        warm_up_end: 20 * MS,
        end: Some(1_020 * MS),
    };
    let noise = |ended, duration| Written::Noise { ended, duration };
    let period = |ended, noise| Written::Period {
        ended,
        summary: PeriodSummary {
            noise,
            runtime: 900 * MS,
            max_sample: noise / 2,
            counts: [0, 0, 3, 1, 0],
        },
    };
    tally.take(
        &[
            noise(5 * MS, 7_000),     // before the window: set-up
            noise(15 * MS, 8_000),    // warm-up
            noise(500 * MS, 30_000),  // measured
            noise(1_019 * MS, 9_000), // measured
            period(1_010 * MS, 39_000),
            noise(1_030 * MS, 6_000), // after the window
            period(2_010 * MS, 1_000),
        ],
        &window,
        &LiveStats::default(),
    );
    tally.elapsed = Nanos(1_000 * MS);
    let stream = tally.stream("main");
    assert_eq!((stream.samples, stream.warm_up_samples), (2, 1));
    assert_eq!(stream.stats.max_ns, Some(Nanos(30_000)));
    assert_eq!(stream.missed_periods, None);
    assert_eq!(stream.method.as_deref(), Some("osnoise"));
    let event = tally.summary("main");
    assert_eq!(event.value_ns, Some(Nanos(39_000)));
    assert_eq!(
        event.message,
        "cpu 0 [main]: osnoise counted 39 µs of noise in 900 ms of runtime over 1 period(s) \
         (0.0043 % of it); 2 gap(s) above 5 µs, the longest 19.5 µs; interruptions: 0 hw, 0 \
         nmi, 3 irq, 1 softirq, 0 thread"
    );
}

#[test]
fn with_no_period_ended_in_the_span_the_noise_is_unknown_not_none() {
    let mut tally = tally();
    let window = Window {
        start: 0,
        warm_up_end: 0,
        end: Some(800 * MS),
    };
    let gap = Written::Noise {
        ended: 300 * MS,
        duration: 12_000,
    };
    // Stopped at 500 ms: the gap that ended at 600 ms and the period at 1 s are past it.
    tally.stopped = Some(500 * MS);
    let late = Written::Noise {
        ended: 600 * MS,
        duration: 40_000,
    };
    tally.take(&[gap, late], &window, &LiveStats::default());
    tally.elapsed = Nanos(500 * MS);
    let event = tally.summary("main");
    assert_eq!(event.value_ns, None);
    assert!(event.message.contains("noise is unknown"), "{}", event.message);
    assert!(event.message.contains("1 gap(s) above 5 µs"), "{}", event.message);
}

#[test]
fn parameters_are_whole_micro_seconds_within_the_tracers_bounds() {
    let err = |params: &[(&str, &str)]| {
        build(&info::test_setup(&INFO, params, &[0]))
            .err()
            .expect("refused")
            .to_string()
    };
    assert!(err(&[("period", "50us")]).contains("whole µs from 100 µs"));
    assert!(err(&[("runtime", "2s")]).contains("runtime=2s"));
    assert!(err(&[("threshold", "1500ns")]).contains("threshold"));
}
