use super::*;
use crate::probe::tracer::fixture;
use latlab_trace::{decode_page, EventFormat, EventTable, PageLayout};

const US: i64 = 1_000;
const MS: i64 = 1_000_000;

/// The activations in the pages a kernel (`6.1-rt`, `6.12-rt`) wrote, decoded with
/// the formats it published.
fn activations(kernel: &str) -> Vec<Activation> {
    let text = |name: &str| String::from_utf8(fixture(&format!("{kernel}-{name}"))).unwrap();
    let layout = PageLayout::parse(&text("header_page")).unwrap();
    let format = EventFormat::parse(&text("ftrace-timerlat.format")).unwrap();
    let table = EventTable::new([format]);
    let pages = fixture(&format!("{kernel}-timerlat-cpu0.raw"));
    let size = layout.data_offset + layout.data_size;
    let mut found = Vec::new();
    for page in pages.chunks(size) {
        let page = decode_page(&layout, page).unwrap();
        for record in &page.records {
            let event = table.decode(0, record).unwrap();
            found.push(Activation::of(&event).expect("context and timer_latency"));
        }
    }
    found
}

/// The contexts present, having numbered every activation as the probe does: each
/// thread (and return-to-user) activation gets its interrupt's number, and the
/// interrupts' numbers rise by the periods between them.
fn check(found: &[Activation], period: i64) -> Vec<i64> {
    assert!(found.len() > 100, "{} activations", found.len());
    let mut acc = accounts(period, true);
    let mut last_irq: Option<(i64, i64)> = None;
    let mut numbered = 0;
    for a in found {
        assert!(a.latency > 0 && a.latency < period * 50, "{a:?}");
        let Some(number) = acc.number(a) else {
            assert!(last_irq.is_none(), "{a:?} not numbered");
            continue;
        };
        match (a.context, last_irq) {
            // An activation at least a period after the one before, a seqnum later.
            (IRQ, Some((before, seqnum))) => {
                assert_eq!(a.seqnum, seqnum + 1, "{a:?}");
                assert!(number > before, "{a:?} numbered {number} after {before}");
                numbered += 1;
            }
            // The first events may be a thread's whose interrupt came before the
            // buffer was read.
            (_, Some((irq, seqnum))) => {
                assert_eq!((number, a.seqnum), (irq, seqnum), "{a:?}");
            }
            _ => {}
        }
        if a.context == IRQ {
            last_irq = Some((number, a.seqnum));
        }
    }
    assert!(numbered > 50, "{numbered} interrupts numbered");
    let mut contexts: Vec<i64> = found.iter().map(|a| a.context).collect();
    contexts.sort_unstable();
    contexts.dedup();
    contexts
}

#[test]
fn a_6_1_kernels_pages_hold_irq_and_thread_activations_on_the_period_grid() {
    // Captured with timerlat_period_us 500 and the tracer's kernel threads.
    let found = activations("6.1-rt");
    assert_eq!(check(&found, 500 * US), [IRQ, THREAD]);
}

#[test]
fn a_6_12_kernels_pages_add_the_return_to_user_of_a_user_workload() {
    // Captured while rtla timerlat -u ran (1 ms period): user threads on timerlat_fd.
    let found = activations("6.12-rt");
    assert_eq!(check(&found, MS), [IRQ, THREAD, USER]);
}

fn placement() -> Placement {
    Placement {
        thread: 0,
        cpu: Some(0),
        policy: SchedSpec::DEFAULT,
        timer_slack_ns: 0,
        feed: None,
        checkpoint: None,
    }
}

fn accounts(period: i64, user: bool) -> Accounts {
    let setup = ProbeSetup {
        period: Nanos(period),
        ..info::test_setup(&INFO, &[], &[0])
    };
    Accounts::new(&setup, &placement(), user)
}

/// Activation `k`'s interrupt and thread events, due at `k` periods.
fn irq_and_thread(k: i64, period: i64, irq: i64, thread: i64) -> [Activation; 2] {
    let due = k * period;
    [
        Activation {
            stamped: due + irq,
            seqnum: k,
            context: IRQ,
            latency: irq,
        },
        Activation {
            stamped: due + thread,
            seqnum: k,
            context: THREAD,
            latency: thread,
        },
    ]
}

#[test]
fn samples_and_missed_periods_add_up_to_the_periods_of_the_span() {
    let mut acc = accounts(MS, false);
    // Activations every 1 ms from 1 ms; the tracer skips 10 to 12 (a thread that
    // overran) and is stopped after 30.
    let window = Window {
        start: 5 * MS,
        warm_up_end: 8 * MS,
        end: Some(30 * MS),
    };
    let activations: Vec<Activation> = (1..=31)
        .filter(|k| !(10..=12).contains(k))
        .flat_map(|k| irq_and_thread(k, MS, 3 * US, 9 * US))
        .collect();
    let live = LiveStats::default();
    acc.take(&activations, &window, &live);
    acc.measured = Some((window, 31 * MS));
    let streams = acc.streams("main");
    assert_eq!(streams.len(), 2);
    for s in &streams {
        // Due in (8 ms, 30 ms]: 9 … 30 is 22 periods, 3 of them skipped.
        assert_eq!((s.samples, s.missed_periods), (19, Some(3)), "{}", s.probe);
        // Warm-up: due from the start to its end, 5 to 8 ms.
        assert_eq!(s.warm_up_samples, 4, "{}", s.probe);
        assert_eq!(s.period_ns, Some(Nanos(MS)));
        assert_eq!(s.method.as_deref(), Some("timerlat"));
    }
    assert_eq!(streams[0].probe, "timerlat-irq");
    assert_eq!(streams[1].probe, "timerlat-thread");
    assert_eq!(streams[1].stats.max_ns, Some(Nanos(9 * US)));
    assert_eq!(streams[0].first_sample_ns, Some(Nanos(3 * US)));
    // The live display counts the thread's samples and the skipped periods.
    let shown = live.snapshot();
    assert_eq!((shown.samples, shown.missed_periods), (19, 3));
}

#[test]
fn a_late_activation_is_placed_on_its_own_period_not_the_next() {
    let mut acc = accounts(MS, true);
    let window = Window {
        start: 0,
        warm_up_end: 0,
        end: Some(10 * MS),
    };
    // 900 µs late: still due at 3 ms, stamped at 3.9 ms.
    let mut activations: Vec<Activation> = (1..=10)
        .flat_map(|k| irq_and_thread(k, MS, 2 * US, if k == 3 { 900 * US } else { 5 * US }))
        .collect();
    activations.push(Activation {
        stamped: 4 * MS + 20 * US,
        seqnum: 4,
        context: USER,
        latency: 20 * US,
    });
    acc.take(&activations, &window, &LiveStats::default());
    acc.measured = Some((window, 10 * MS));
    let streams = acc.streams("main");
    assert_eq!(streams[1].samples, 10);
    assert_eq!(streams[1].missed_periods, Some(0));
    assert_eq!(streams[1].stats.max_ns, Some(Nanos(900 * US)));
    // The user context: one activation of ten.
    assert_eq!(streams[2].probe, "timerlat-user");
    assert_eq!((streams[2].samples, streams[2].missed_periods), (1, Some(9)));
}

#[test]
fn periods_outside_whole_micro_seconds_or_the_tracers_range_are_refused() {
    for period in [Nanos(50_000), Nanos(1_500), Nanos(2_000_000_000)] {
        let setup = ProbeSetup {
            period,
            ..info::test_setup(&INFO, &[], &[0])
        };
        let err = build(&setup).err().expect("refused").to_string();
        assert!(err.contains("whole µs from 100us to 1s"), "{err}");
    }
}


#[test]
fn what_came_due_after_a_stop_is_left_out_and_the_counts_still_add_up() {
    let mut acc = accounts(MS, false);
    let window = Window {
        start: 0,
        warm_up_end: 0,
        end: Some(100 * MS),
    };
    let live = LiveStats::default();
    // Read while measuring: 1 … 20 ms, 6 and 7 skipped. Stopped at 20.5 ms; the
    // buffer's last read still holds what came due until 25 ms.
    let before: Vec<Activation> = (1..=20)
        .filter(|k| !(6..=7).contains(k))
        .flat_map(|k| irq_and_thread(k, MS, 3 * US, 9 * US))
        .collect();
    acc.take(&before, &window, &live);
    acc.measured = Some((window, 20 * MS + MS / 2));
    let after: Vec<Activation> = (21..=25)
        .flat_map(|k| irq_and_thread(k, MS, 3 * US, 9 * US))
        .collect();
    acc.take(&after, &window, &live);
    for s in acc.streams("main") {
        assert_eq!((s.samples, s.missed_periods), (18, Some(2)), "{}", s.probe);
    }
    // A checkpoint's copy counts what it has seen: the skipped periods too.
    assert_eq!(live.snapshot().missed_periods, 2);
}

#[test]
fn with_no_interrupt_seen_the_missed_periods_are_unknown_not_none() {
    let mut acc = accounts(MS, false);
    let window = Window {
        start: 0,
        warm_up_end: 0,
        end: Some(100 * MS),
    };
    acc.measured = Some((window, 100 * MS));
    for s in acc.streams("main") {
        assert_eq!((s.samples, s.missed_periods), (0, None), "{}", s.probe);
    }
}
