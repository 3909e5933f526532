//! The readiness checks against fixture trees of /proc and /sys (tests/fixtures/check:
//! a PREEMPT_RT box tuned for CPUs 2-3, a stock desktop, a KVM guest like the test
//! machine), each check through its ok, warn or fail, info and unknown paths, plus one
//! run against the real machine that asserts only invariants.

use latlab_measure::check::{self, CheckContext, CHECKS};
use latlab_measure::facts::FactReader;
use latlab_model::audit::{CheckResult, CheckVerdict, CheckVerdict::*};
use std::fs;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/check")
        .join(name)
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A fixture copied to a temporary directory, to be changed by a test.
struct Tree {
    dir: tempfile::TempDir,
}

impl Tree {
    fn from(name: &str) -> Tree {
        let dir = tempfile::tempdir().unwrap();
        copy_tree(&fixture(name), dir.path());
        Tree { dir }
    }

    fn file(&self, path: &str) -> PathBuf {
        self.dir.path().join(path.trim_start_matches('/'))
    }

    fn set(&self, path: &str, content: &str) -> &Tree {
        let p = self.file(path);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, content).unwrap();
        self
    }

    fn set_bytes(&self, path: &str, content: &[u8]) -> &Tree {
        let p = self.file(path);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, content).unwrap();
        self
    }

    /// Replaces text in a file of the tree.
    fn edit(&self, path: &str, from: &str, to: &str) -> &Tree {
        let text = fs::read_to_string(self.file(path)).unwrap();
        assert!(text.contains(from), "{path} has no '{from}'");
        self.set(path, &text.replace(from, to))
    }

    fn remove(&self, path: &str) -> &Tree {
        let p = self.file(path);
        if p.is_dir() {
            fs::remove_dir_all(p).unwrap();
        } else {
            fs::remove_file(p).unwrap();
        }
        self
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

fn run_at(root: &Path, cpus: Option<&[usize]>, priority: u8, id: &str) -> CheckResult {
    let ctx = CheckContext::new(FactReader::at(root), cpus, priority);
    let check = CHECKS
        .iter()
        .find(|c| c.id() == id)
        .unwrap_or_else(|| panic!("no check {id}"));
    let result = check.run(&ctx);
    assert_invariants(&result);
    result
}

fn judge(root: &Path, cpus: Option<&[usize]>, id: &str) -> CheckResult {
    run_at(root, cpus, 95, id)
}

/// Asserts the verdict, showing the whole result when it differs.
fn expect(result: &CheckResult, verdict: CheckVerdict) -> &CheckResult {
    assert_eq!(result.verdict, verdict, "{result:#?}");
    result
}

fn assert_invariants(r: &CheckResult) {
    assert!(!r.finding.trim().is_empty(), "{} has no finding", r.id);
    if matches!(r.verdict, Warn | Fail) {
        assert!(
            r.fix.as_deref().is_some_and(|f| !f.trim().is_empty()),
            "{} is {} without a fix",
            r.id,
            r.verdict
        );
    }
    if r.verdict == Ok {
        assert!(r.fix.is_none(), "{} is ok but names a fix", r.id);
    }
}

fn has(r: &CheckResult, text: &str) {
    let all = format!(
        "{} {} {} {:?}",
        r.finding,
        r.explanation.as_deref().unwrap_or(""),
        r.fix.as_deref().unwrap_or(""),
        r.evidence
    );
    assert!(all.contains(text), "'{text}' not in {r:#?}");
}

const RT_CPUS: &[usize] = &[2, 3];

// ---------------------------------------------------------------- whole audits

#[test]
fn the_tuned_box_is_ready_for_its_isolated_cpus() {
    let ctx = CheckContext::new(FactReader::at(fixture("rt-tuned")), Some(RT_CPUS), 95);
    let audit = check::audit(&ctx);
    assert_eq!(audit.checks.len(), CHECKS.len());
    assert_eq!(audit.cpus, RT_CPUS);
    let bad: Vec<_> = audit
        .checks
        .iter()
        .filter(|c| matches!(c.verdict, Warn | Fail))
        .collect();
    assert!(bad.is_empty(), "{bad:#?}");
    // No msr driver in the fixture: honestly unknown, not ok.
    assert_eq!(audit.check("smi").unwrap().verdict, Unknown);
}

#[test]
fn the_stock_desktop_and_the_vm_fail() {
    for name in ["desktop", "vm"] {
        let ctx = CheckContext::new(FactReader::at(fixture(name)), None, 95);
        let audit = check::audit(&ctx);
        assert!(audit.failed(), "{name}");
        for c in &audit.checks {
            assert_invariants(c);
        }
    }
}

#[test]
fn every_check_id_is_documented_in_the_run_format() {
    let doc = fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/run-format.md"),
    )
    .unwrap();
    for c in CHECKS {
        assert!(
            doc.contains(&format!("`{}`", c.id())),
            "{} undocumented",
            c.id()
        );
    }
}

#[test]
fn the_real_machine_gives_every_check_a_verdict() {
    for cpus in [None, Some(&[0usize][..])] {
        let ctx = CheckContext::new(FactReader::system(), cpus, 95);
        let audit = check::audit(&ctx);
        let ids: Vec<&str> = audit.checks.iter().map(|c| c.id.as_str()).collect();
        let expected: Vec<&str> = CHECKS.iter().map(|c| c.id()).collect();
        assert_eq!(ids, expected);
        for c in &audit.checks {
            assert_invariants(c);
            assert!(!c.title.is_empty());
        }
        assert!(!audit.cpus.is_empty());
    }
}

#[test]
fn with_nothing_to_read_every_check_is_unknown_never_ok() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = CheckContext::new(FactReader::at(dir.path()), None, 95);
    for c in &check::audit(&ctx).checks {
        assert_invariants(c);
        assert_eq!(c.verdict, Unknown, "{c:#?}");
    }
}

// ---------------------------------------------------------------- preemption

#[test]
fn preemption_rt_ok() {
    expect(&judge(&fixture("rt-tuned"), None, "preemption"), Ok);
}

#[test]
fn preemption_dynamic_voluntary_fails_with_the_current_mode() {
    let r = judge(&fixture("desktop"), None, "preemption");
    expect(&r, Fail);
    has(&r, "current mode voluntary");
    has(&r, "preempt=full");
}

#[test]
fn preemption_dynamic_without_debugfs_says_the_current_mode_is_unknown() {
    let r = judge(&fixture("vm"), None, "preemption");
    expect(&r, Fail);
    has(&r, "boot mode none, current mode unknown");
    has(&r, "inside a VM");
}

#[test]
fn preemption_full_warns() {
    let t = Tree::from("desktop");
    t.set("/sys/kernel/debug/sched/preempt", "none voluntary (full)\n");
    has(
        expect(&judge(t.path(), None, "preemption"), Warn),
        "mode full",
    );
    let t = Tree::from("vm");
    t.set("/proc/sys/kernel/version", "#1 SMP PREEMPT Tue Jan 1")
        .remove("/boot");
    expect(&judge(t.path(), None, "preemption"), Warn);
}

#[test]
fn preemption_unknown_without_version_or_config() {
    let t = Tree::from("rt-tuned");
    t.remove("/sys/kernel/realtime")
        .remove("/boot")
        .set("/proc/sys/kernel/version", "#1 SMP Debian");
    expect(&judge(t.path(), None, "preemption"), Unknown);
}

// ---------------------------------------------------------------- tick, timers, clock

#[test]
fn tick_paths() {
    has(
        expect(&judge(&fixture("rt-tuned"), Some(RT_CPUS), "tick"), Ok),
        "HZ 1000",
    );
    has(expect(&judge(&fixture("vm"), None, "tick"), Info), "HZ 250");
    has(
        expect(&judge(&fixture("desktop"), None, "tick"), Info),
        "not active",
    );
    let t = Tree::from("vm");
    t.remove("/boot");
    expect(&judge(t.path(), None, "tick"), Unknown);
}

#[test]
fn hrtimers_paths() {
    expect(&judge(&fixture("vm"), None, "hrtimers"), Ok);
    let t = Tree::from("vm");
    let list = fs::read_to_string(t.file("/proc/timer_list")).unwrap();
    let second = list.rfind(".hres_active    : 1").unwrap();
    let mut off = list.clone();
    off.replace_range(second..second + 19, ".hres_active    : 0");
    t.set("/proc/timer_list", &off);
    has(
        expect(&judge(t.path(), None, "hrtimers"), Fail),
        "off on CPU 1",
    );
    expect(&judge(t.path(), Some(&[0]), "hrtimers"), Ok);

    let t = Tree::from("vm");
    t.edit(
        "/boot/config-6.18.44-fc-v595",
        "CONFIG_HIGH_RES_TIMERS=y",
        "",
    );
    expect(&judge(t.path(), None, "hrtimers"), Fail);

    let t = Tree::from("vm");
    t.remove("/proc/timer_list");
    has(
        expect(&judge(t.path(), None, "hrtimers"), Unknown),
        "/proc/timer_list",
    );
}

#[test]
fn clocksource_paths() {
    let cs = "/sys/devices/system/clocksource/clocksource0/current_clocksource";
    has(
        expect(&judge(&fixture("vm"), None, "clocksource"), Ok),
        "tsc",
    );
    let t = Tree::from("rt-tuned");
    t.set(cs, "hpet\n");
    has(
        expect(&judge(t.path(), None, "clocksource"), Warn),
        "echo tsc >",
    );
    t.set(cs, "kvm-clock\n");
    expect(&judge(t.path(), None, "clocksource"), Ok);
    t.set(cs, "jiffies\n");
    expect(&judge(t.path(), None, "clocksource"), Fail);
    t.set(cs, "tsc\n").edit("/proc/cpuinfo", " nonstop_tsc", "");
    expect(&judge(t.path(), None, "clocksource"), Warn);
    t.remove(cs);
    expect(&judge(t.path(), None, "clocksource"), Unknown);
}

// ---------------------------------------------------------------- debug, tracing

#[test]
fn debug_kernel_paths() {
    expect(&judge(&fixture("vm"), None, "debug-kernel"), Ok);
    let config = "/boot/config-6.18.44-fc-v595";
    let t = Tree::from("vm");
    t.edit(
        config,
        "CONFIG_DEBUG_FS=y\n",
        "CONFIG_DEBUG_FS=y\nCONFIG_PROVE_LOCKING=y\nCONFIG_LOCKDEP=y\n",
    );
    has(
        expect(&judge(t.path(), None, "debug-kernel"), Fail),
        "CONFIG_PROVE_LOCKING",
    );
    let t = Tree::from("vm");
    t.edit(
        config,
        "CONFIG_DEBUG_FS=y\n",
        "CONFIG_DEBUG_FS=y\nCONFIG_DEBUG_PREEMPT=y\n",
    );
    expect(&judge(t.path(), None, "debug-kernel"), Warn);
    let t = Tree::from("vm");
    t.edit("/proc/cmdline", "quiet", "quiet slub_debug=FZP");
    has(
        expect(&judge(t.path(), None, "debug-kernel"), Warn),
        "slub_debug=FZP",
    );
    let t = Tree::from("vm");
    t.remove("/boot");
    expect(&judge(t.path(), None, "debug-kernel"), Unknown);
}

#[test]
fn tracing_paths() {
    expect(&judge(&fixture("vm"), None, "tracing"), Ok);
    expect(&judge(&fixture("rt-tuned"), None, "tracing"), Ok);
    // debugfs mounted too: tracefs is still where the tracer is read.
    expect(&judge(&fixture("desktop"), None, "tracing"), Ok);
    let t = Tree::from("rt-tuned");
    t.set("/sys/kernel/tracing/current_tracer", "function\n");
    has(
        expect(&judge(t.path(), None, "tracing"), Warn),
        "echo nop > /sys/kernel/tracing/current_tracer",
    );
    let t = Tree::from("rt-tuned");
    t.set(
        "/sys/kernel/tracing/set_event",
        "sched:sched_switch\nirq:irq_handler_entry\n",
    );
    has(
        expect(&judge(t.path(), None, "tracing"), Warn),
        "2 trace events",
    );
    t.set("/sys/kernel/tracing/tracing_on", "0\n");
    expect(&judge(t.path(), None, "tracing"), Ok);
    let t = Tree::from("vm");
    t.edit("/proc/cmdline", "quiet", "quiet ftrace=function");
    expect(&judge(t.path(), None, "tracing"), Warn);
    let t = Tree::from("rt-tuned");
    t.remove("/sys/kernel/tracing/current_tracer");
    expect(&judge(t.path(), None, "tracing"), Unknown);
}

// ---------------------------------------------------------------- RT throttling

#[test]
fn rt_throttling_paths() {
    expect(&judge(&fixture("rt-tuned"), None, "rt-throttling"), Ok);
    let r = judge(&fixture("vm"), None, "rt-throttling");
    expect(&r, Warn);
    has(&r, "0.95 s of every 1.00 s");
    has(&r, "sysctl kernel.sched_rt_runtime_us=-1");
    has(&r, "fair_server");
    // 6.8: no fair server to mention.
    let r = judge(&fixture("desktop"), None, "rt-throttling");
    expect(&r, Warn);
    assert!(!r.fix.as_deref().unwrap_or("").contains("fair_server"));

    let t = Tree::from("vm");
    t.set("/proc/sys/kernel/sched_rt_runtime_us", "-1\n");
    expect(&judge(t.path(), None, "rt-throttling"), Info);
    t.set("/sys/kernel/debug/sched/fair_server/cpu0/runtime", "0\n");
    expect(&judge(t.path(), None, "rt-throttling"), Ok);
    t.set(
        "/sys/kernel/debug/sched/fair_server/cpu0/runtime",
        "50000000\n",
    );
    expect(&judge(t.path(), None, "rt-throttling"), Info);
    t.remove("/proc/sys/kernel/sched_rt_runtime_us");
    expect(&judge(t.path(), None, "rt-throttling"), Unknown);
}

// ---------------------------------------------------------------- isolation, SMT

#[test]
fn isolation_paths() {
    expect(&judge(&fixture("rt-tuned"), Some(RT_CPUS), "isolation"), Ok);
    has(
        expect(&judge(&fixture("rt-tuned"), None, "isolation"), Warn),
        "CPUs 2-3 isolated, CPUs 0-1 not",
    );
    has(
        expect(&judge(&fixture("rt-tuned"), Some(&[0]), "isolation"), Warn),
        "CPU 0 not isolated (isolated: 2-3)",
    );
    let r = judge(&fixture("vm"), None, "isolation");
    expect(&r, Warn);
    has(&r, "no isolated CPUs");
    // Every CPU is a target: one stays for housekeeping.
    has(
        &r,
        "isolcpus=managed_irq,domain,1 nohz_full=1 rcu_nocbs=1 irqaffinity=0",
    );
    has(&r, "CONFIG_NO_HZ_FULL=y");
    has(&r, "host pins each vCPU");

    let t = Tree::from("rt-tuned");
    t.edit("/proc/cmdline", " nohz_full=2-3 rcu_nocbs=2-3", "")
        .set("/sys/devices/system/cpu/nohz_full", "\n");
    has(
        expect(&judge(t.path(), Some(RT_CPUS), "isolation"), Warn),
        "RCU callbacks",
    );

    let t = Tree::from("vm");
    t.set("/sys/devices/system/cpu/online", "0\n");
    expect(&judge(t.path(), None, "isolation"), Info);
    t.remove("/sys/devices/system/cpu/online");
    expect(&judge(t.path(), None, "isolation"), Unknown);
}

#[test]
fn smt_paths() {
    expect(&judge(&fixture("rt-tuned"), None, "smt"), Ok);
    has(
        expect(&judge(&fixture("desktop"), None, "smt"), Warn),
        "task CPUs share cores (0+2, 1+3)",
    );
    has(
        expect(&judge(&fixture("desktop"), Some(&[0]), "smt"), Warn),
        "siblings run other work (0+2)",
    );
    let t = Tree::from("desktop");
    t.set("/sys/devices/system/cpu/isolated", "2\n");
    expect(&judge(t.path(), Some(&[0]), "smt"), Ok);
    expect(&judge(&fixture("vm"), None, "smt"), Info);
    let t = Tree::from("rt-tuned");
    t.remove("/sys/devices/system/cpu/smt");
    for c in 0..4 {
        t.remove(&format!("/sys/devices/system/cpu/cpu{c}/topology"));
    }
    expect(&judge(t.path(), None, "smt"), Unknown);
}

// ---------------------------------------------------------------- cpufreq, cpuidle

#[test]
fn cpufreq_paths() {
    expect(&judge(&fixture("rt-tuned"), None, "cpufreq"), Ok);
    has(
        expect(&judge(&fixture("desktop"), None, "cpufreq"), Warn),
        "cpupower -c 0-3 frequency-set -g performance",
    );
    let t = Tree::from("rt-tuned");
    t.set(
        "/sys/devices/system/cpu/cpu2/cpufreq/scaling_max_freq",
        "2000000\n",
    );
    has(
        expect(&judge(t.path(), Some(RT_CPUS), "cpufreq"), Warn),
        "capped at 2000 MHz of 3600 MHz",
    );
    has(
        expect(&judge(&fixture("vm"), None, "cpufreq"), Info),
        "cannot be changed from inside",
    );
    let t = Tree::from("rt-tuned");
    for c in 0..4 {
        t.remove(&format!("/sys/devices/system/cpu/cpu{c}/cpufreq"));
    }
    has(expect(&judge(t.path(), None, "cpufreq"), Info), "firmware");
    let t = Tree::from("rt-tuned");
    t.remove("/sys/devices/system/cpu/cpu2/cpufreq/scaling_governor");
    expect(&judge(t.path(), Some(RT_CPUS), "cpufreq"), Unknown);
}

#[test]
fn cpuidle_paths() {
    has(
        expect(&judge(&fixture("rt-tuned"), None, "cpuidle"), Ok),
        "deepest C1",
    );
    let r = judge(&fixture("desktop"), None, "cpuidle");
    expect(&r, Warn);
    has(&r, "C10");
    has(&r, "/dev/cpu_dma_latency");
    has(&r, "processor.max_cstate=1 intel_idle.max_cstate=0");
    expect(&judge(&fixture("vm"), None, "cpuidle"), Info);
    let t = Tree::from("rt-tuned");
    t.set("/sys/devices/system/cpu/cpuidle/current_driver", "none\n");
    expect(&judge(t.path(), None, "cpuidle"), Ok);
    t.remove("/sys/devices/system/cpu/cpuidle");
    for c in 0..4 {
        t.remove(&format!("/sys/devices/system/cpu/cpu{c}/cpuidle"));
    }
    expect(&judge(t.path(), None, "cpuidle"), Unknown);
}

// ---------------------------------------------------------------- IRQs

#[test]
fn irq_affinity_paths() {
    expect(
        &judge(&fixture("rt-tuned"), Some(RT_CPUS), "irq-affinity"),
        Ok,
    );
    let r = judge(&fixture("vm"), Some(&[1]), "irq-affinity");
    expect(&r, Warn);
    has(&r, "36 virtio1-req.0 on 1");
    has(
        &r,
        "for i in 36 38 26 25; do echo 0 > /proc/irq/$i/smp_affinity_list; done",
    );
    has(&r, "irqaffinity=0");
    has(
        expect(&judge(&fixture("vm"), None, "irq-affinity"), Warn),
        "fewer CPUs",
    );
    let t = Tree::from("vm");
    t.remove("/proc/irq");
    expect(&judge(t.path(), None, "irq-affinity"), Unknown);
}

#[test]
fn irqbalance_paths() {
    expect(&judge(&fixture("vm"), None, "irqbalance"), Ok);
    has(
        expect(&judge(&fixture("desktop"), None, "irqbalance"), Warn),
        "IRQBALANCE_BANNED_CPULIST=0-3",
    );
    let t = Tree::from("desktop");
    t.set("/sys/devices/system/cpu/isolated", "3\n");
    expect(&judge(t.path(), Some(&[3]), "irqbalance"), Info);
    let t = Tree::from("desktop");
    t.remove("/proc");
    expect(&judge(t.path(), None, "irqbalance"), Unknown);
}

// ---------------------------------------------------------------- sysctls

#[test]
fn timer_migration_paths() {
    expect(&judge(&fixture("rt-tuned"), None, "timer-migration"), Ok);
    has(
        expect(&judge(&fixture("vm"), None, "timer-migration"), Warn),
        "sysctl kernel.timer_migration=0",
    );
    let t = Tree::from("vm");
    t.remove("/proc/sys/kernel/timer_migration");
    expect(&judge(t.path(), None, "timer-migration"), Unknown);
}

#[test]
fn watchdog_paths() {
    has(
        expect(&judge(&fixture("rt-tuned"), Some(RT_CPUS), "watchdogs"), Ok),
        "watchdog_cpumask",
    );
    let r = judge(&fixture("desktop"), Some(&[3]), "watchdogs");
    expect(&r, Warn);
    has(&r, "NMI and soft lockup watchdogs on CPU 3");
    has(&r, "sysctl kernel.watchdog_cpumask=0-2");
    let t = Tree::from("desktop");
    t.set("/proc/sys/kernel/watchdog", "0\n");
    expect(&judge(t.path(), None, "watchdogs"), Ok);
    let t = Tree::from("desktop");
    for f in ["watchdog", "nmi_watchdog", "soft_watchdog"] {
        t.remove(&format!("/proc/sys/kernel/{f}"));
    }
    expect(&judge(t.path(), None, "watchdogs"), Unknown);
}

// ---------------------------------------------------------------- RT threads

#[test]
fn rt_tasks_paths() {
    let r = judge(&fixture("vm"), None, "rt-tasks");
    expect(&r, Info);
    has(&r, "watchdogd fifo:50");
    // Stopper threads are left out, and IRQ threads are judged by irq-threads.
    assert!(!format!("{r:?}").contains("migration/"), "{r:#?}");
    assert!(!format!("{r:?}").contains("irq/24-ACPI:Ged"), "{r:#?}");

    // A task at fifo:80 is outranked by pipewire's data loop at fifo:88.
    let r = run_at(&fixture("desktop"), None, 80, "rt-tasks");
    expect(&r, Warn);
    has(&r, "data-loop.0 fifo:88");
    has(&r, "above fifo:88");

    let t = Tree::from("vm");
    for pid in [42, 50, 51] {
        t.remove(&format!("/proc/{pid}"));
    }
    expect(&judge(t.path(), None, "rt-tasks"), Ok);
    // latlab's own threads are not counted.
    t.set(
        "/proc/4242/task/4243/stat",
        "4243 (latlab) S 1 4242 0 0 -1 4194560 0 0 0 0 0 0 0 0 -96 0 1 0 100 0 0 \
         18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 95 1 0 0 0 0 0 0 0 0 0 0 0\n",
    );
    expect(&judge(t.path(), None, "rt-tasks"), Ok);
    t.remove("/proc");
    expect(&judge(t.path(), None, "rt-tasks"), Unknown);
}

// ---------------------------------------------------------------- IRQ threads

#[test]
fn irq_threads_are_judged_against_the_tasks_priority() {
    // Above them all: the usual case, with the one caveat.
    let r = judge(&fixture("vm"), None, "irq-threads");
    expect(&r, Info);
    has(&r, "above all 2 IRQ thread(s)");
    has(&r, "irq 24 ACPI:Ged (irq/24-ACPI:Ged fifo:50)");
    has(&r, "chrt -f -p 96 PID");
    // Thread affinity counts: on CPU 1 only the thread bound there.
    let r = judge(&fixture("vm"), Some(&[1]), "irq-threads");
    has(&r, "above all 1 IRQ thread(s)");
    // Below them: the classic misconfiguration.
    let r = run_at(&fixture("vm"), None, 40, "irq-threads");
    expect(&r, Warn);
    has(&r, "2 IRQ thread(s) at or above the task (fifo:40)");
    has(&r, "-P f:51");
    // At 99 nothing is above: the task comes down, never to "100".
    let r = run_at(&fixture("vm"), None, 99, "irq-threads");
    expect(&r, Info);
    has(&r, "-P f:98");
    assert!(!format!("{r:?}").contains("100"), "{r:#?}");
    // Not real-time: every one preempts it.
    let r = run_at(&fixture("vm"), None, 0, "irq-threads");
    expect(&r, Warn);
    // rt-tuned keeps its IRQs and their threads on CPUs 0-1, away from 2-3.
    let r = judge(&fixture("rt-tuned"), Some(RT_CPUS), "irq-threads");
    expect(&r, Ok);
    has(&r, "none of the 3 IRQ threads may run on CPUs 2-3");
    // No threaded handler anywhere.
    let t = Tree::from("vm");
    for pid in [50, 51] {
        t.remove(&format!("/proc/{pid}"));
    }
    let r = judge(t.path(), None, "irq-threads");
    expect(&r, Info);
    has(&r, "neither PREEMPT_RT nor threadirqs");
    t.remove("/proc");
    expect(&judge(t.path(), None, "irq-threads"), Unknown);
}

// ---------------------------------------------------------------- memory

#[test]
fn thp_paths() {
    expect(&judge(&fixture("rt-tuned"), None, "thp"), Ok);
    expect(&judge(&fixture("vm"), None, "thp"), Ok);
    has(
        expect(&judge(&fixture("desktop"), None, "thp"), Warn),
        "transparent_hugepage=never",
    );
    let t = Tree::from("vm");
    t.set(
        "/sys/kernel/mm/transparent_hugepage/defrag",
        "[always] defer defer+madvise madvise never\n",
    );
    has(expect(&judge(t.path(), None, "thp"), Warn), "defrag");
    t.remove("/sys/kernel/mm/transparent_hugepage/enabled");
    expect(&judge(t.path(), None, "thp"), Unknown);
    t.remove("/sys/kernel/mm/transparent_hugepage");
    expect(&judge(t.path(), None, "thp"), Ok);
}

#[test]
fn swap_paths() {
    expect(&judge(&fixture("vm"), None, "swap"), Ok);
    has(
        expect(&judge(&fixture("desktop"), None, "swap"), Warn),
        "/swap.img",
    );
    let t = Tree::from("desktop");
    t.edit(
        "/proc/self/status",
        "CapEff:\t0000000000000000",
        "CapEff:\t000001ffffffffff",
    );
    expect(&judge(t.path(), None, "swap"), Info);
    t.remove("/proc/swaps");
    expect(&judge(t.path(), None, "swap"), Unknown);
}

// ---------------------------------------------------------------- caller

#[test]
fn rt_priority_paths() {
    expect(&judge(&fixture("vm"), None, "rt-priority"), Ok);
    let r = judge(&fixture("desktop"), None, "rt-priority");
    expect(&r, Fail);
    has(&r, "setcap cap_sys_nice");
    has(&r, "rtprio 99");
    let rtprio = "Max realtime priority     0                    0";
    let t = Tree::from("desktop");
    t.edit(
        "/proc/self/limits",
        rtprio,
        "Max realtime priority     0                    99",
    );
    has(
        expect(&judge(t.path(), None, "rt-priority"), Warn),
        "ulimit -r 95",
    );
    t.edit(
        "/proc/self/limits",
        "Max realtime priority     0                    99",
        "Max realtime priority     99                   99",
    );
    expect(&judge(t.path(), None, "rt-priority"), Ok);
    // Not real-time: nothing to grant.
    expect(&run_at(&fixture("desktop"), None, 0, "rt-priority"), Ok);
    t.remove("/proc/self/status");
    expect(&judge(t.path(), None, "rt-priority"), Unknown);
}

#[test]
fn memory_lock_paths() {
    expect(&judge(&fixture("vm"), None, "memory-lock"), Ok);
    has(
        expect(&judge(&fixture("desktop"), None, "memory-lock"), Warn),
        "8 MiB",
    );
    let memlock = "Max locked memory         8388608              8388608";
    let t = Tree::from("desktop");
    t.edit(
        "/proc/self/limits",
        memlock,
        "Max locked memory         65536                65536",
    );
    expect(&judge(t.path(), None, "memory-lock"), Fail);
    let t = Tree::from("desktop");
    t.edit(
        "/proc/self/limits",
        memlock,
        "Max locked memory         unlimited            unlimited",
    );
    expect(&judge(t.path(), None, "memory-lock"), Ok);
    t.remove("/proc/self/limits");
    expect(&judge(t.path(), None, "memory-lock"), Unknown);
}

// ---------------------------------------------------------------- platform

#[test]
fn virtualization_paths() {
    expect(&judge(&fixture("rt-tuned"), None, "virtualization"), Ok);
    let r = judge(&fixture("vm"), None, "virtualization");
    expect(&r, Warn);
    has(&r, "nothing inside the VM removes this");
    let t = Tree::from("vm");
    t.edit(
        "/proc/stat",
        "cpu1 131106 124 37469 709192 10836 0 1792 308",
        "cpu1 131106 124 37469 709192 10836 0 1792 30800",
    );
    has(
        expect(&judge(t.path(), None, "virtualization"), Fail),
        "(steal)",
    );
    expect(&judge(t.path(), Some(&[0]), "virtualization"), Warn);
    let t = Tree::from("rt-tuned");
    t.set("/.dockerenv", "");
    expect(&judge(t.path(), None, "virtualization"), Info);
    let t = Tree::from("rt-tuned");
    t.remove("/proc/cpuinfo");
    expect(&judge(t.path(), None, "virtualization"), Unknown);
}

/// An msr device file whose SMI counter (register 0x34) holds `count`.
fn msr_with_smi_count(count: u64) -> Vec<u8> {
    let mut bytes = vec![0u8; 0x34 + 8];
    bytes[0x34..].copy_from_slice(&count.to_le_bytes());
    bytes
}

#[test]
fn smi_paths() {
    expect(&judge(&fixture("vm"), None, "smi"), Info);
    has(
        expect(&judge(&fixture("rt-tuned"), None, "smi"), Unknown),
        "modprobe msr",
    );
    let t = Tree::from("rt-tuned");
    // 98231 s of uptime: 12 SMIs is not periodic, 98231 is one a second.
    t.set_bytes("/dev/cpu/0/msr", &msr_with_smi_count(12));
    expect(&judge(t.path(), None, "smi"), Ok);
    t.set_bytes("/dev/cpu/0/msr", &msr_with_smi_count(98_231));
    has(
        expect(&judge(t.path(), None, "smi"), Warn),
        "Periodic SMI Disabled",
    );
    let t = Tree::from("rt-tuned");
    t.edit("/proc/cpuinfo", "GenuineIntel", "AuthenticAMD");
    expect(&judge(t.path(), None, "smi"), Unknown);
}

#[test]
fn console_paths() {
    expect(&judge(&fixture("vm"), None, "console"), Ok);
    has(
        expect(&judge(&fixture("desktop"), None, "console"), Warn),
        "dmesg -n 4",
    );
    let t = Tree::from("desktop");
    t.set("/proc/consoles", "netcon0              -W- (E     )\n");
    expect(&judge(t.path(), None, "console"), Ok);
    t.remove("/proc/consoles");
    expect(&judge(t.path(), None, "console"), Unknown);
}
