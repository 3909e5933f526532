//! The PREEMPT_RT lane: latlab on the kernels its users run, booted by
//! `scripts/rt-guest` under QEMU's emulator — Debian 12's 6.1-rt and
//! bookworm-backports' 6.12-rt — with the kernel command lines this machine cannot
//! boot (isolcpus, nohz_full). Each test is one boot that runs a script as root in the
//! guest, this build of latlab in it; the files the script writes come back in a shared
//! directory and are read here.
//!
//! Function only, never a latency: under the emulator every figure of time is the
//! emulator's. What is checked is what the kernel exposes and what latlab decides and
//! counts from it.
//!
//! The tests are ignored by `cargo test` (each boots a guest, 10-60 s); `scripts/test`
//! builds the guests and runs them: `cargo test -p latlab --test it rt_lane --
//! --ignored --test-threads=1`.

use crate::common::latlab_path;
use crate::real_tools::{assert_as_stated, import, stated_by_histogram, stated_by_json};
use latlab_model::audit::{Audit, CheckVerdict};
use latlab_model::run::{CpuChoice, Run};
use latlab_model::telemetry::SourceState;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What one boot gave back.
struct Boot {
    /// The script's output (standard output and error, interleaved).
    output: String,
    /// Its exit status.
    status: i32,
    /// The shared directory: what the script wrote.
    dir: tempfile::TempDir,
}

impl Boot {
    /// Boots `kernel` (`bookworm`, `backports`) with `options` (more of
    /// scripts/rt-guest's), runs `script` there, and fails with its output when it
    /// fails.
    fn run(kernel: &str, options: &[&str], script: &str) -> Boot {
        let dir = tempfile::tempdir().unwrap();
        let guest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/rt-guest");
        let out = Command::new(guest)
            .args(["-q", "--kernel", kernel, "--timeout", "300", "--bin"])
            .arg(latlab_path())
            .arg("--share")
            .arg(dir.path())
            .args(options)
            .arg(format!("set -x\n{script}"))
            .current_dir(dir.path())
            .output()
            .expect("scripts/rt-guest runs");
        let boot = Boot {
            output: format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
            status: out.status.code().unwrap_or(-1),
            dir,
        };
        assert_eq!(
            boot.status, 0,
            "the guest's script failed:\n{}",
            boot.output
        );
        boot
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn text(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name))
            .unwrap_or_else(|e| panic!("{name}: {e}\nthe guest said:\n{}", self.output))
    }

    fn run_file(&self, name: &str) -> Run {
        crate::common::written_run(&self.text(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    fn audit(&self, name: &str) -> Audit {
        serde_json::from_str(&self.text(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    }
}

/// The tracer's settings a script saves before and after its runs, to be compared.
const SETTINGS: &str = "{ cat /sys/kernel/tracing/osnoise/cpus \
     /sys/kernel/tracing/osnoise/timerlat_period_us /sys/kernel/tracing/osnoise/period_us \
     /sys/kernel/tracing/osnoise/runtime_us /sys/kernel/tracing/osnoise/options \
     /sys/kernel/tracing/tracing_thresh; ls /sys/kernel/tracing/instances; }";

/// Asserts that a kernel tracer's streams count every period of their span: samples
/// and missed periods of each add up to the span over the period, to a period either
/// side (the span's edges fall between activations).
fn assert_periods_add_up(run: &Run, probes: &[&str]) {
    let probes_seen: Vec<&str> = run.streams.iter().map(|s| s.probe.as_str()).collect();
    for probe in probes {
        assert!(
            probes_seen.contains(probe),
            "{probe} missing: {probes_seen:?}"
        );
    }
    for s in &run.streams {
        let (elapsed, period) = (s.elapsed_ns.unwrap().0, s.period_ns.unwrap().0);
        let periods = (elapsed / period) as u64;
        let counted = s.samples + s.missed_periods.unwrap();
        assert!(
            counted.abs_diff(periods) <= 1,
            "{} cpu {:?}: {} samples + {:?} missed for {periods} periods",
            s.probe,
            s.cpu,
            s.samples,
            s.missed_periods
        );
        assert!(s.samples > 0, "{} cpu {:?}: no sample", s.probe, s.cpu);
    }
}

#[test]
#[ignore = "boots the PREEMPT_RT guest: scripts/test runs it (scripts/rt-guest)"]
fn rt_lane_the_real_time_kernel_is_recognised_and_its_tracers_measure() {
    let boot = Boot::run(
        "bookworm",
        &[],
        &format!(
            "{SETTINGS} > settings-before.txt
             latlab check --json check.json > /dev/null
             latlab run --probe timerlat -d 3s -q --name tl --json timerlat.json > /dev/null
             latlab run --probe osnoise:period=1200ms,runtime=1100ms -d 2500ms -q \
                 --no-store --json osnoise.json > /dev/null
             {SETTINGS} > settings-after.txt
             printf 'name = \"s\"\\ndescription = \"d\"\\nduration = \"1s\"\\n[[phase]]\\nname = \"x\"\\nthreads = 3\\nprobe = \"timerlat\"\\n' > three.toml
             latlab run three.toml -q --no-store > three.txt 2>&1; echo $? > three.rc
             rtla timerlat hist -d 3s > rtla.txt
             id=$(latlab import rtla.txt | sed -n 's/^imported .* as \\([^:]*\\):.*/\\1/p')
             latlab compare \"$id\" tl --metric p50 > compare.txt 2>&1; echo $? > compare.rc
             cyclictest -q -D 2 -m -t 2 -a -h 400 --json=cyclictest.json > cyclictest.hist.txt
             # A run killed where it cannot restore: the next run puts things back.
             latlab run --probe timerlat -p 500us -d 60s -q --no-store > /dev/null &
             victim=$!
             sleep 8
             {SETTINGS} > settings-killed.txt
             kill -9 $victim; wait $victim
             latlab run -d 200ms -q --no-store > swept.txt 2>&1
             {SETTINGS} > settings-swept.txt"
        ),
    );
    // latlab check sees PREEMPT_RT, and so does every Run.
    let audit = boot.audit("check.json");
    let preemption = audit.checks.iter().find(|c| c.id == "preemption").unwrap();
    assert_eq!(preemption.verdict, CheckVerdict::Ok, "{preemption:?}");
    assert!(preemption.finding.contains("PREEMPT_RT"), "{preemption:?}");
    let irq_threads = audit.checks.iter().find(|c| c.id == "irq-threads").unwrap();
    assert!(
        irq_threads.finding.contains("above all"),
        "PREEMPT_RT threads every IRQ, below fifo:95: {irq_threads:?}"
    );
    let timerlat = boot.run_file("timerlat.json");
    let host = timerlat.host.as_ref().unwrap();
    assert_eq!(host.preemption.model, "PREEMPT_RT");
    // The tracer's streams: irq and thread per CPU (kernel threads on 6.1), each
    // counting every period.
    assert_eq!(timerlat.streams.len(), 4);
    assert_periods_add_up(&timerlat, &["timerlat-irq", "timerlat-thread"]);
    let osnoise = boot.run_file("osnoise.json");
    assert_eq!(osnoise.streams.len(), 2);
    let summaries: Vec<_> = osnoise
        .events
        .iter()
        .filter(|e| e.kind == "noise-summary")
        .collect();
    assert_eq!(summaries.len(), 2, "{:?}", osnoise.events);
    assert!(
        summaries.iter().all(|e| e.value_ns.is_some()),
        "a period ended in the span: {summaries:?}"
    );
    // A tracer's CPU measured by two of latlab's threads is refused.
    assert_eq!(
        boot.text("three.rc").trim(),
        "2",
        "{}",
        boot.text("three.txt")
    );
    assert!(
        boot.text("three.txt").contains("threads"),
        "{}",
        boot.text("three.txt")
    );
    // The tracer's settings as they were, no instance left: the runtime of 1.1 s
    // above the default period of 1 s is restored after the period.
    assert_eq!(
        boot.text("settings-before.txt"),
        boot.text("settings-after.txt")
    );
    // rtla's histogram imports with its own counts, and compares with latlab's run
    // without --force (exit 0 or 1: judged, not refused as unlike). The median: under
    // the emulator rtla's 256 µs range holds too few samples for a p99.9.
    let rtla = import(boot.dir.path(), "host.sqlite", &boot.path("rtla.txt"), &[]);
    let stated: Vec<u64> = boot
        .text("rtla.txt")
        .lines()
        .find_map(|l| l.strip_prefix("count:"))
        .unwrap()
        .split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect();
    let samples: Vec<u64> = rtla.streams.iter().map(|s| s.samples).collect();
    assert_eq!(samples, stated);
    for s in &rtla.streams {
        // rtla ran 3 s at 1 ms: a sample a period, less what it skipped.
        assert!(s.samples <= 3_100, "{} {:?}: {}", s.probe, s.cpu, s.samples);
    }
    let compared = boot.text("compare.rc");
    assert!(
        matches!(compared.trim(), "0" | "1"),
        "compare exit {compared}: {}",
        boot.text("compare.txt")
    );
    // cyclictest's histogram and JSON import with their own figures.
    let hist = boot.text("cyclictest.hist.txt");
    let run = import(
        boot.dir.path(),
        "host.sqlite",
        &boot.path("cyclictest.hist.txt"),
        &[],
    );
    assert_as_stated(&run, &stated_by_histogram(&hist, 2), 1_000, "cyclictest -h");
    let json: serde_json::Value = serde_json::from_str(&boot.text("cyclictest.json")).unwrap();
    let (stated, unit) = stated_by_json(&json);
    let run = import(
        boot.dir.path(),
        "host.sqlite",
        &boot.path("cyclictest.json"),
        &[],
    );
    assert_as_stated(&run, &stated, unit, "cyclictest --json");
    // A SIGKILLed timerlat run left its period and its instance; the next run swept
    // both and said so.
    let killed = boot.text("settings-killed.txt");
    assert!(killed.contains("500\n"), "{killed}");
    assert!(killed.contains("latlab-"), "{killed}");
    assert_eq!(
        boot.text("settings-before.txt"),
        boot.text("settings-swept.txt")
    );
    let swept = boot.text("swept.txt");
    assert!(swept.contains("timerlat/osnoise settings"), "{swept}");
}

#[test]
#[ignore = "boots the PREEMPT_RT guest: scripts/test runs it (scripts/rt-guest)"]
fn rt_lane_isolated_cpus_are_measured_by_default_and_when_named() {
    let boot = Boot::run(
        "bookworm",
        &["--append", "isolcpus=1 nohz_full=1 irqaffinity=0"],
        "grep Cpus_allowed_list /proc/self/status
         latlab run -c 1 -d 2s -q --no-store --json named.json > /dev/null
         latlab run -d 1s --no-store --json plain.json > plain.txt
         latlab check --json check.json > /dev/null
         latlab run -c all -d 500ms -q --no-store --json all.json > /dev/null
         latlab run -c 5 -d 1s -q --no-store > offline.txt 2>&1; echo $? > offline.rc",
    );
    // The isolated CPU, named: measured, as cyclictest -a 1 and rtla -c 1 do.
    let named = boot.run_file("named.json");
    assert_eq!(named.plan.cpus, [1]);
    assert_eq!(named.plan.cpu_choice, Some(CpuChoice::Given));
    assert_eq!(named.streams.len(), 1);
    assert_eq!(named.streams[0].cpu, Some(1));
    assert!(named.streams[0].samples > 0);
    let host = named.host.as_ref().unwrap();
    assert_eq!(host.isolated_cpus.as_deref(), Some(&[1][..]));
    // Telemetry on the real-time kernel: sampled off the isolated CPU, from the /proc
    // files as this kernel writes them.
    let telemetry = named
        .telemetry
        .as_ref()
        .expect("telemetry is on by default");
    assert_eq!(telemetry.sampler_cpu, Some(0), "{telemetry:?}");
    for name in ["interrupts", "softirqs", "steal"] {
        let source = telemetry.sources.iter().find(|s| s.name == name);
        assert!(
            source.is_some_and(|s| s.state == SourceState::Measured),
            "{name}: {telemetry:?}"
        );
    }
    assert_eq!(host.nohz_full_cpus.as_deref(), Some(&[1][..]));
    // Not named: the isolated CPU is the one measured, and the summary says why.
    let plain = boot.run_file("plain.json");
    assert_eq!(plain.plan.cpus, [1]);
    assert_eq!(plain.plan.cpu_choice, Some(CpuChoice::Isolated));
    let said = boot.text("plain.txt");
    assert!(
        said.contains("CPU 1 measured: the CPUs the kernel isolates"),
        "{said}"
    );
    // latlab check judges the CPU latlab run measures, and finds it isolated.
    let audit = boot.audit("check.json");
    assert_eq!(audit.cpus, [1]);
    let isolation = audit.checks.iter().find(|c| c.id == "isolation").unwrap();
    assert!(
        isolation.finding.contains("CPU 1 isolated"),
        "{isolation:?}"
    );
    // -c all: every CPU, the isolated one too.
    assert_eq!(boot.run_file("all.json").plan.cpus, [0, 1]);
    // Only a CPU that is not online is refused, saying which.
    assert_eq!(boot.text("offline.rc").trim(), "2");
    let refused = boot.text("offline.txt");
    assert!(
        refused.contains("CPU 5 is not online (online: 0-1)"),
        "{refused}"
    );
}

#[test]
#[ignore = "boots the PREEMPT_RT guest: scripts/test runs it (scripts/rt-guest)"]
fn rt_lane_explain_names_a_spinner_and_a_threaded_irq_and_throttling_only_when_it_was() {
    let boot = Boot::run(
        "bookworm",
        &["--disk", "64", "--append", "irqaffinity=0"],
        "# This script and what it starts keep to CPU 0 unless told: CPU 1 is starved
         # on purpose below, and a shell waiting there would wait with it.
         taskset -p 1 $$ > /dev/null
         # A fifo:96 task on CPU 1, busy about 40 % of the time under the emulator (a
         # busier one makes the kernel throttle: it says so once a boot, in its log).
         taskset -c 1 chrt -f 96 sh -c 'while :; do i=0; while [ $i -lt 300 ]; do \
             i=$((i+1)); done; usleep 20000; done' &
         spinner=$!
         latlab run -c 1 -d 2s --explain -q --no-store --no-audit --json spinner.json > /dev/null
         kill $spinner
         # The disk's interrupt on CPU 1, its I/O there, latlab below the IRQ threads.
         # (Its queues are virtioN-req.Q; the shares' virtioN-requests stay on CPU 0.)
         irq=$(awk -F: '/virtio[0-9]+-req\\.[0-9]/ { n=$1 } END { print n }' /proc/interrupts)
         echo 1 > /proc/irq/$(echo $irq)/smp_affinity_list || true
         taskset -c 1 sh -c 'while :; do dd if=/dev/zero of=/dev/vda bs=64k count=256 \
             conv=fsync 2> /dev/null; done' &
         io=$!
         latlab run -c 1 -P f:30 -d 2s --explain --spike 200us -q --no-store --no-audit \
             --json disk.json > /dev/null
         kill $io
         # latlab stopped for a second mid-run: never throttling.
         latlab run -c 1 -d 6s -q --no-store --no-audit --json stopped.json > /dev/null &
         run=$!
         sleep 3; kill -STOP $run; sleep 1; kill -CONT $run; wait $run
         dmesg > dmesg-before.txt
         # Now real throttling: a fifo:96 task that never sleeps, latlab above it; both
         # real-time, so the kernel stops them 50 ms of every second. CPU 1's timer and
         # RCU threads (fifo 1 on PREEMPT_RT) go above the hog first, as on any rig that
         # runs one: below it they would never run again, and with them every timer of
         # CPU 1 — latlab's wake-ups, the guest's own deadline — and the guest would hang.
         for p in /proc/[0-9]*; do
             case \"$(cat $p/comm 2> /dev/null)\" in
                 ktimers/1|rcuc/1|rcub/*) chrt -f -p 98 ${p#/proc/} ;;
             esac
         done
         # The hog bounds itself too, should this shell not get to end it.
         taskset -c 1 chrt -f 96 timeout 20 sh -c 'while :; do :; done' &
         hog=$!
         latlab run -c 1 -P f:97 -d 3s -q --no-store --no-audit --json throttled.json > /dev/null
         kill $hog
         dmesg > dmesg-after.txt",
    );
    let causes = |run: &Run| -> Vec<String> {
        let explain = run.explain.as_ref().expect("an explanation");
        explain.catalogue.iter().map(|c| c.cause.label()).collect()
    };
    let spinner = boot.run_file("spinner.json");
    let named = causes(&spinner);
    assert!(
        named
            .iter()
            .any(|c| c.starts_with("thread sh:") && c.contains("fifo/rr 96")),
        "{named:?}"
    );
    let disk = boot.run_file("disk.json");
    let named = causes(&disk);
    assert!(
        named
            .iter()
            .any(|c| c.starts_with("thread irq/") && c.contains(", handling irq ")),
        "{named:?}"
    );
    // Neither the spinner nor the stop is blamed on RT throttling: the kernel did not
    // throttle then (it says so in its log, once a boot).
    const ACTIVATED: &str = "RT throttling activated";
    assert!(!boot.text("dmesg-before.txt").contains(ACTIVATED));
    for file in ["spinner.json", "disk.json", "stopped.json"] {
        let run = boot.run_file(file);
        for w in &run.warnings {
            assert!(
                !w.message.contains("RT throttling stopped")
                    && !w.message.contains("sched_rt_runtime_us=-1"),
                "{file}: {}",
                w.message
            );
        }
    }
    let stopped = boot.run_file("stopped.json");
    let missed = stopped
        .warnings
        .iter()
        .find(|w| w.code == "missed-periods")
        .expect("periods missed while stopped");
    assert!(
        missed.message.contains("latlab itself was stopped"),
        "{}",
        missed.message
    );
    // When the kernel did throttle, it is named, with the limit's advice.
    assert!(boot.text("dmesg-after.txt").contains(ACTIVATED));
    let throttled = boot.run_file("throttled.json");
    assert!(
        throttled
            .warnings
            .iter()
            .any(|w| w.message.contains("RT throttling stopped")
                && w.message.contains("sched_rt_runtime_us=-1")),
        "{:#?}",
        throttled.warnings
    );
}

#[test]
#[ignore = "boots the PREEMPT_RT guest: scripts/test runs it (scripts/rt-guest)"]
fn rt_lane_timerlat_of_6_12_adds_the_return_to_user_of_latlabs_own_thread() {
    let boot = Boot::run(
        "backports",
        &[],
        &format!(
            "{SETTINGS} > settings-before.txt
             latlab run --probe timerlat -d 2s -q --name tl --json timerlat.json > /dev/null
             {SETTINGS} > settings-after.txt
             rtla timerlat hist -u -d 2s -b 10 -E 10000 > rtla.txt
             id=$(latlab import rtla.txt | sed -n 's/^imported .* as \\([^:]*\\):.*/\\1/p')
             latlab compare \"$id\" tl --metric p50 > compare.txt 2>&1; echo $? > compare.rc"
        ),
    );
    let timerlat = boot.run_file("timerlat.json");
    assert_eq!(timerlat.streams.len(), 6);
    assert_periods_add_up(
        &timerlat,
        &["timerlat-irq", "timerlat-thread", "timerlat-user"],
    );
    assert_eq!(
        boot.text("settings-before.txt"),
        boot.text("settings-after.txt")
    );
    let rtla = import(boot.dir.path(), "host.sqlite", &boot.path("rtla.txt"), &[]);
    assert!(rtla.streams.iter().any(|s| s.probe == "timerlat-user"));
    let compared = boot.text("compare.rc");
    assert!(
        matches!(compared.trim(), "0" | "1"),
        "compare exit {compared}: {}",
        boot.text("compare.txt")
    );
}

#[test]
#[ignore = "boots the PREEMPT_RT guest: scripts/test runs it (scripts/rt-guest)"]
fn rt_lane_a_store_where_files_cannot_be_mapped_shared_is_named_with_the_fix() {
    let boot = Boot::run(
        "bookworm",
        &["--cache", "none"],
        "latlab run -d 200ms -q --no-audit --store ./runs.sqlite > store.txt 2>&1
         echo $? > store.rc",
    );
    assert_eq!(boot.text("store.rc").trim(), "2");
    let said = boot.text("store.txt");
    assert!(
        said.contains("runs.sqlite is on a file system without shared memory maps")
            && said.contains("cache=mmap"),
        "{said}"
    );
}
