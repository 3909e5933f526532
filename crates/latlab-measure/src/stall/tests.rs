use super::*;
use crate::probe::info::{self, Measured};
use crate::probe::{clock, Placement};

const MS: i64 = 1_000_000;

fn fixture(name: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/sched-debug/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn a_throttled_cpu_is_read_from_a_real_6_1_rt_kernel() {
    let cpus = parse_sched_debug(&fixture("6.1-rt-throttled.txt"));
    assert_eq!(cpus.len(), 2);
    assert_eq!((cpus[0].cpu, cpus[0].rt_throttled), (0, false));
    assert_eq!((cpus[1].cpu, cpus[1].rt_throttled), (1, true));
    // Nothing runs on a throttled CPU whose only runnable tasks are real-time.
    assert_eq!(cpus[1].current, None);
    assert_eq!(
        cpus[0].current.as_ref().map(|t| t.comm.as_str()),
        Some("cat")
    );
}

#[test]
fn the_task_running_on_a_cpu_is_read_with_its_priority() {
    let cpus = parse_sched_debug(&fixture("6.1-rt-spinner.txt"));
    assert!(!cpus[1].rt_throttled);
    let spinner = cpus[1].current.clone().expect("a current task on CPU 1");
    assert_eq!(
        spinner,
        SchedTask {
            comm: "sh".to_string(),
            pid: 142,
            prio: 3
        }
    );
    assert_eq!(spinner.to_string(), "sh:142 (fifo/rr 96)");
}

#[test]
fn the_columns_of_newer_kernels_and_names_with_spaces_are_read() {
    // 6.6 and later list EEVDF's columns before `prio`, and flag a custom slice with an
    // S that has no heading.
    let text = "\
cpu#0, 2300.000 MHz
  .nr_running                    : 1

rt_rq[0]:/
  .rt_nr_running                 : 1
  .rt_throttled                  : 1
  .rt_time                       : 953.827884

dl_rq[0]:
  .dl_nr_running                 : 0

runnable tasks:
 S            task   PID       vruntime   eligible    deadline             slice          sum-exec      switches  prio         wait-time        sum-sleep       sum-block  node   group-id  group-path
-------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------
 S        kthreadd     2       153.851139   E         154.517848           1.400000         0.033291         1     120         0.000000         0.000000         0.000000   0      0        /
>R     Web Content  4242      1042749.402586   E     1042750.802586 S         1.400000       155.236872       279      9         0.000000         0.000000         0.000000   0      0        /
";
    let cpus = parse_sched_debug(text);
    assert_eq!(cpus.len(), 1);
    assert!(cpus[0].rt_throttled);
    assert_eq!(
        cpus[0].current,
        Some(SchedTask {
            comm: "Web Content".to_string(),
            pid: 4242,
            prio: 9
        })
    );
}

#[test]
fn a_group_rt_rq_does_not_speak_for_the_cpu() {
    let text = "\
cpu#0, 1.000 MHz
rt_rq[0]:/rt-group
  .rt_throttled                  : 1
rt_rq[0]:/
  .rt_throttled                  : 0
";
    assert!(!parse_sched_debug(text)[0].rt_throttled);
}

/// A fifo:95 timer stream on CPU 1 that missed `missed` periods, its latest wake-up
/// `latest` late.
fn late_stream(policy: SchedSpec, missed: u64, latest: i64) -> Stream {
    let setup = info::test_setup(&clock::INFO, &[], &[1]);
    let mut recorder = setup.recorder();
    recorder.record(latest, 1);
    let placement = Placement {
        thread: 0,
        cpu: Some(1),
        policy,
        timer_slack_ns: 0,
        feed: None,
        checkpoint: None,
    };
    let mut stream = info::stream_of(
        Measured {
            info: &clock::INFO,
            setup: &setup,
            placement: &placement,
            recorder: &recorder,
            missed,
            warm_up_samples: 0,
            first_sample: None,
            elapsed: Nanos(1_000 * MS),
            page_faults: 0,
        },
        "main",
    );
    stream.probe = "timer".to_string();
    stream
}

const THROTTLING: RtThrottling = RtThrottling {
    runtime: Nanos(950 * MS),
    period: Nanos(1_000 * MS),
};

fn cause(stream: &Stream, evidence: &StallEvidence) -> MissedCause {
    MissedCause::of(std::iter::once(stream), evidence, Some(THROTTLING))
}

fn spinner() -> SchedTask {
    SchedTask {
        comm: "spin".to_string(),
        pid: 700,
        prio: 3,
    }
}

#[test]
fn throttling_is_named_only_when_the_kernel_showed_it() {
    let late = late_stream(SchedSpec::DEFAULT, 48, 49 * MS);
    // Held for 49 ms under throttling limits, but nothing said the kernel throttled.
    let held = StallEvidence {
        longest_held: Some(Nanos(49 * MS)),
        sched_reads: 3,
        ..StallEvidence::default()
    };
    let unknown = cause(&late, &held);
    assert!(
        matches!(unknown, MissedCause::Unknown { looks: 3, .. }),
        "{unknown}"
    );
    assert!(
        !unknown.to_string().contains("RT throttling stopped"),
        "{unknown}"
    );
    assert!(
        !unknown.to_string().contains("sched_rt_runtime_us"),
        "{unknown}"
    );
    // The scheduler showed CPU 1 throttled: now it is named, with the advice.
    let throttled = StallEvidence {
        throttled_cpus: vec![1],
        ..held.clone()
    };
    let named = cause(&late, &throttled);
    assert!(matches!(named, MissedCause::RtThrottling { .. }), "{named}");
    assert!(
        named.to_string().contains("sched_rt_runtime_us=-1"),
        "{named}"
    );
    // Throttled on a CPU this stream did not measure: not its cause.
    let elsewhere = StallEvidence {
        throttled_cpus: vec![3],
        ..held.clone()
    };
    assert!(matches!(
        cause(&late, &elsewhere),
        MissedCause::Unknown { .. }
    ));
    // The kernel log said so during the run.
    let logged = StallEvidence {
        throttled_in_log: Some(true),
        ..held
    };
    assert!(matches!(
        cause(&late, &logged),
        MissedCause::RtThrottling { .. }
    ));
}

#[test]
fn a_task_in_the_way_is_named_not_throttling() {
    let late = late_stream(SchedSpec::DEFAULT, 30, 31 * MS);
    let evidence = StallEvidence {
        in_the_way: vec![(1, spinner())],
        longest_held: Some(Nanos(31 * MS)),
        sched_reads: 2,
        throttled_in_log: Some(false),
        ..StallEvidence::default()
    };
    let named = cause(&late, &evidence);
    assert_eq!(
        named,
        MissedCause::InTheWay {
            tasks: vec![(1, spinner())],
            latest: Nanos(31 * MS)
        }
    );
    let text = named.to_string();
    assert!(text.contains("spin:700 (fifo/rr 96) on CPU 1"), "{text}");
    assert!(!text.contains("sched_rt_runtime_us"), "{text}");
}

#[test]
fn a_stopped_latlab_is_said_to_be_stopped_whatever_else_was_seen() {
    let late = late_stream(SchedSpec::DEFAULT, 3_000, 3_000 * MS);
    let evidence = StallEvidence {
        stops: 1,
        whole_held: Some(Nanos(3_000 * MS)),
        throttled_in_log: Some(true),
        ..StallEvidence::default()
    };
    assert_eq!(cause(&late, &evidence), MissedCause::Stopped { times: 1 });
}

#[test]
fn a_whole_machine_held_is_not_blamed_on_one_cpus_tasks() {
    let late = late_stream(SchedSpec::DEFAULT, 900, 900 * MS);
    let evidence = StallEvidence {
        whole_held: Some(Nanos(905 * MS)),
        longest_held: Some(Nanos(900 * MS)),
        steal: Some(Nanos(0)),
        ..StallEvidence::default()
    };
    assert_eq!(
        cause(&late, &evidence),
        MissedCause::MachineHeld {
            held: Nanos(905 * MS),
            steal: None
        }
    );
    // The host counted the time: steal corroborates.
    let stolen = StallEvidence {
        whole_held: None,
        steal: Some(Nanos(880 * MS)),
        ..evidence
    };
    assert!(matches!(
        cause(&late, &stolen),
        MissedCause::HostPreemption { .. }
    ));
}

#[test]
fn short_lateness_with_no_hold_seen_blames_the_period() {
    let late = late_stream(SchedSpec::DEFAULT, 3, MS / 5);
    assert_eq!(
        cause(&late, &StallEvidence::default()),
        MissedCause::PeriodTooShort
    );
}

#[test]
fn a_deadline_thread_out_of_budget_names_the_budget() {
    let deadline = SchedSpec::Deadline {
        runtime_ns: Nanos(MS / 5),
        deadline_ns: Nanos(MS),
        period_ns: Nanos(MS),
    };
    let spun = late_stream(deadline, 700, MS * 7 / 10);
    let text = cause(&spun, &StallEvidence::default()).to_string();
    assert!(
        text.contains("SCHED_DEADLINE budget") && text.contains("200 µs of every 1 ms"),
        "{text}"
    );
}

#[test]
fn rt_throttling_is_read_from_the_sysctls_and_off_when_unlimited() {
    let root = tempfile::tempdir().unwrap();
    let sysctl = root.path().join("proc/sys/kernel");
    std::fs::create_dir_all(&sysctl).unwrap();
    let write = |runtime: &str, period: &str| {
        std::fs::write(sysctl.join("sched_rt_runtime_us"), runtime).unwrap();
        std::fs::write(sysctl.join("sched_rt_period_us"), period).unwrap();
    };
    let files = FactReader::at(root.path());
    write("950000\n", "1000000\n");
    assert_eq!(RtThrottling::read(&files), Some(THROTTLING));
    write("-1\n", "1000000\n");
    assert_eq!(RtThrottling::read(&files), None);
    write("1000000\n", "1000000\n");
    assert_eq!(RtThrottling::read(&files), None);
}

#[test]
fn a_thread_without_samples_for_many_intervals_is_looked_at_once_per_hold() {
    let live = [LiveStats::default()];
    let mut watch = StallWatch::start(&[Some(0)], true);
    // Samples every millisecond for 10 ms.
    for _ in 0..10 {
        live[0].publish(1_000, 0);
        watch.poll(&live);
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(watch.evidence.longest_held, None);
    // Then none for 40 ms: held (longer than 4 intervals and 25 ms).
    std::thread::sleep(Duration::from_millis(40));
    watch.poll(&live);
    let held = watch.evidence.longest_held.expect("a hold");
    assert!(held >= Nanos(40 * MS), "{held}");
    let looks = watch.evidence.sched_reads + usize::from(watch.evidence.sched_unreadable);
    assert!(looks >= 1, "the scheduler's state was not looked at");
    let evidence = watch.finish();
    assert_eq!(evidence.stops, 0);
}
