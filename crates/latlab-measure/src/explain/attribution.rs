//! The explainer of `latlab run --explain`: on the reader thread, each spike's window of
//! events decoded from the held pages and attributed ([`latlab_trace::attribute`]), the
//! catalogue summed over every spike, and the largest explanations kept in full.

use super::{Explainer, FedSpike, Held};
use crate::breaktrace::Tripwire;
use crate::facts::FactReader;
use latlab_model::explain::{
    Cause, CauseTotal, Coverage, Explain, ExplainMode, Explanation, ThreadedIrq,
};
use latlab_model::Nanos;
use latlab_trace::{attribute, Record, RecordDecoder, SpikeOf, SpikeWindow, What};
use std::sync::{Arc, Mutex};

/// How many explanations a run keeps in full (the largest spikes); every spike still
/// counts in the catalogue.
pub const KEPT_EXPLANATIONS: usize = 200;

/// Margins tried, longest first, when the ring no longer reaches back a full one: the
/// state at the deadline is replayed from that far back.
const MARGINS_NS: [u64; 3] = [SpikeWindow::DEFAULT_MARGIN_NS, 1_000_000, 0];

/// Attributes every spike it is handed and sums the catalogue.
#[derive(Debug)]
pub struct RunExplainer {
    decoder: Option<RecordDecoder>,
    /// Why the pages could not be decoded, once.
    decode_error: Option<String>,
    explain: Explain,
    kept: Vec<Explanation>,
    keep: usize,
    /// Each phase's break-trace wire: the sample that trips one is kept whatever its
    /// rank.
    wires: Vec<(String, Arc<Tripwire>)>,
    /// The explanation of the sample that stopped the run.
    tripped: Option<Explanation>,
    records: Vec<Record>,
    /// Spike windows decoded, and what the kernel recorded in them of idle: events of
    /// `power:cpu_idle`, and switches away from the idle task.
    windows: u64,
    idle_events: u64,
    switches_from_idle: u64,
    switches_to_idle: u64,
    /// Pages of spike windows that did not decode, and the first reason.
    bad_pages: u64,
    bad_page: Option<String>,
    /// Spikes of threads not pinned to a CPU (SCHED_DEADLINE), or whose id was not
    /// known: no window to read.
    placeless: u64,
    /// The kernel's symbols, read at the first address to name (`None` until then,
    /// empty when unreadable).
    symbols: Option<Symbols>,
    /// The action names of the interrupts whose threaded handlers got in the way, read
    /// once each from `/proc/irq/N/`.
    irq_names: std::collections::HashMap<i64, String>,
    /// Where the catalogue is published after each drain that explained a spike, for
    /// a live view (`--listen`).
    live: Option<Arc<Mutex<Vec<CauseTotal>>>>,
    /// Where what is explained so far goes when a checkpoint asks.
    so_far: Option<Arc<ExplainSoFar>>,
}

/// What a run's explanation holds so far, made on request for a checkpoint by the
/// thread that explains (at its next drain, about every 100 ms).
#[derive(Debug, Default)]
pub struct ExplainSoFar {
    wanted: std::sync::atomic::AtomicBool,
    latest: Mutex<Option<Explain>>,
}

impl ExplainSoFar {
    /// Asks for a fresh copy and waits up to `wait` for it; gives the latest copy
    /// made (possibly an older one, `None` before any).
    pub fn fresh(&self, wait: std::time::Duration) -> Option<Explain> {
        use std::sync::atomic::Ordering;
        self.wanted.store(true, Ordering::Release);
        let deadline = std::time::Instant::now() + wait;
        while self.wanted.load(Ordering::Acquire) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let latest = self.latest.lock().unwrap_or_else(|e| e.into_inner());
        latest.clone()
    }

    fn put_if_wanted(&self, make: impl FnOnce() -> Explain) {
        use std::sync::atomic::Ordering;
        if self.wanted.load(Ordering::Acquire) {
            let explain = make();
            *self.latest.lock().unwrap_or_else(|e| e.into_inner()) = Some(explain);
            self.wanted.store(false, Ordering::Release);
        }
    }
}

impl RunExplainer {
    /// An explainer for a run traced in `mode`, keeping the `keep` largest
    /// explanations in full, and that of the sample tripping a phase's break-trace
    /// wire (`wires`: phase name and wire).
    pub fn new(
        mode: ExplainMode,
        keep: usize,
        wires: Vec<(String, Arc<Tripwire>)>,
    ) -> RunExplainer {
        RunExplainer {
            decoder: None,
            decode_error: None,
            explain: Explain::empty(mode),
            kept: Vec::new(),
            keep,
            wires,
            tripped: None,
            records: Vec::new(),
            windows: 0,
            idle_events: 0,
            switches_from_idle: 0,
            switches_to_idle: 0,
            bad_pages: 0,
            bad_page: None,
            placeless: 0,
            symbols: None,
            irq_names: std::collections::HashMap::new(),
            live: None,
            so_far: None,
        }
    }

    /// Makes what is explained so far whenever `so_far` asks (checkpoints).
    pub fn snapshotting(mut self, so_far: Arc<ExplainSoFar>) -> RunExplainer {
        self.so_far = Some(so_far);
        self
    }

    /// What is explained so far: the counts and catalogue, and the explanations kept,
    /// largest first (the limits only the end can tell are not said yet).
    fn explain_so_far(&self) -> Explain {
        let mut explain = self.explain.clone();
        let mut kept = self.kept.clone();
        if let Some(tripped) = &self.tripped {
            if !kept.contains(tripped) {
                kept.push(tripped.clone());
            }
        }
        kept.sort_by_key(|e| std::cmp::Reverse(e.latency_ns));
        explain.spikes = kept;
        explain.sort_catalogue();
        explain
    }

    /// Publishes the catalogue into `live` after each drain that explained a spike.
    pub fn publishing(mut self, live: Arc<Mutex<Vec<CauseTotal>>>) -> RunExplainer {
        self.live = Some(live);
        self
    }

    /// What was explained, with the kept explanations largest first; `events` are the
    /// events traced, for the limits: an idle event enabled but never recorded.
    pub fn into_explain(mut self, events: &[String]) -> Explain {
        self.explain.limits.extend(self.silences(events));
        if let Some(tripped) = self.tripped.take() {
            if !self.kept.contains(&tripped) {
                self.kept.push(tripped);
            }
        }
        self.kept.sort_by_key(|e| std::cmp::Reverse(e.latency_ns));
        self.explain.spikes = self.kept;
        self.explain.sort_catalogue();
        if let Some(why) = self.decode_error {
            self.explain.limits.push(why);
        }
        self.explain
    }

    /// What the kernel was asked to record but did not, in any spike's window.
    fn silences(&self, events: &[String]) -> Vec<String> {
        let mut said = Vec::new();
        if self.placeless > 0 {
            said.push(format!(
                "{} spikes came from threads not pinned to a CPU (SCHED_DEADLINE runs them \
                 unpinned) or of unknown id: no CPU's events to read, so they are not \
                 explained",
                self.placeless
            ));
        }
        if let Some(why) = &self.bad_page {
            said.push(format!(
                "{} pages of spike windows could not be decoded (the first: {why}); the \
                 spikes they belonged to count as incomplete",
                self.bad_pages
            ));
        }
        // Silence means something only where the CPU went idle in a window.
        if self.windows == 0 || self.switches_to_idle == 0 {
            return said;
        }
        let traced = |name: &str| events.iter().any(|e| e == name);
        if traced("power:cpu_idle") && self.idle_events == 0 {
            said.push(format!(
                "power:cpu_idle recorded nothing in the {} spike windows read, though the \
                 CPU went idle in them (a virtual machine's idle is often the host's): time \
                 the CPU sat idle is unexplained, never idle exit",
                self.windows
            ));
        }
        if traced("sched:sched_switch") && self.switches_from_idle == 0 {
            said.push(format!(
                "sched_switch recorded switches to the idle task but none away from it in \
                 the {} spike windows read: such a switch is inferred when the task woken \
                 onto the idle CPU is the next seen, else the time is unexplained with both \
                 named",
                self.windows
            ));
        }
        said
    }

    fn decoder(&mut self, held: &Held) -> Option<&RecordDecoder> {
        if self.decoder.is_none() && self.decode_error.is_none() {
            match RecordDecoder::new(*held.layout(), held.formats().iter().cloned()) {
                Ok(d) => self.decoder = Some(d),
                Err(e) => {
                    self.decode_error = Some(format!("the trace events cannot be decoded: {e}"))
                }
            }
        }
        self.decoder.as_ref()
    }

    fn explain_one(&mut self, held: &Held, spike: &FedSpike) {
        self.explain.spikes_seen += 1;
        // Without its CPU or its thread's id (0 would be the idle task) a window cannot
        // be read.
        let (Some(cpu), true) = (spike.cpu, spike.tid > 0) else {
            self.explain.spikes_unexplained += 1;
            self.placeless += 1;
            return;
        };
        let mut window = SpikeWindow {
            cpu,
            tid: spike.tid,
            due_ns: spike.due_trace_ns,
            wake_ns: spike.wake_trace_ns,
            margin_ns: MARGINS_NS[0],
        };
        // The longest margin the ring still holds.
        let mut found = None;
        for margin in MARGINS_NS {
            window.margin_ns = margin;
            let span = held.pages(cpu, window.start_ns(), window.wake_ns);
            if span.covered {
                found = Some((span.pages, span.lost));
                break;
            }
        }
        let Some((pages, lost)) = found else {
            self.explain.spikes_unexplained += 1;
            return;
        };
        let mut records = std::mem::take(&mut self.records);
        records.clear();
        let mut lost = lost;
        let Some(decoder) = self.decoder(held) else {
            self.explain.spikes_unexplained += 1;
            return;
        };
        let mut bad = (0, None);
        for page in pages {
            match decoder.decode_page(cpu as u32, page, &mut records) {
                Ok(summary) => lost |= summary.missed_events,
                Err(e) => {
                    // Its events are missing from the window: the window is incomplete.
                    lost = true;
                    bad.0 += 1;
                    bad.1.get_or_insert_with(|| e.to_string());
                }
            }
        }
        self.bad_pages += bad.0;
        if let (None, Some(why)) = (&self.bad_page, bad.1) {
            self.bad_page = Some(why);
        }
        records.sort_by_key(|r| r.ts);
        self.windows += 1;
        for record in &records {
            match &record.what {
                What::IdleEnter { .. } | What::IdleExit => self.idle_events += 1,
                What::Switch { prev, .. } if prev.pid == 0 => self.switches_from_idle += 1,
                What::Switch { next, .. } if next.pid == 0 => self.switches_to_idle += 1,
                _ => {}
            }
        }
        let coverage = if lost {
            Coverage::EventsLost
        } else {
            Coverage::Complete
        };
        let of = SpikeOf {
            phase: spike.phase.clone(),
            thread: spike.thread,
            at_ns: spike.at_ns,
        };
        let mut explanation = attribute(window.select(&records), &window, coverage, of);
        explanation.cpu = Some(cpu);
        explanation.due_monotonic_ns = Some(Nanos(spike.due_monotonic_ns));
        self.name_functions(&mut explanation);
        self.name_irq_threads(&mut explanation);
        self.name_load_workers(&mut explanation);
        self.records = records;
        match coverage {
            Coverage::Complete => self.explain.spikes_explained += 1,
            Coverage::EventsLost => self.explain.spikes_incomplete += 1,
        }
        self.explain.add_to_catalogue(&explanation);
        if self.tripped_by(spike) {
            self.tripped = Some(explanation.clone());
        }
        self.keep_largest(explanation);
    }

    /// Names the workqueue functions and NMI handlers the trace gives as addresses, by
    /// the kernel's symbols (`/proc/kallsyms`, readable by root); an address without a
    /// symbol stays an address.
    fn name_functions(&mut self, e: &mut Explanation) {
        let needs = e.parts.iter().any(|p| {
            matches!(
                &p.cause,
                Cause::Thread {
                    function: Some(_),
                    ..
                } | Cause::Nmi { .. }
            )
        });
        if !needs {
            return;
        }
        let symbols = self.symbols.get_or_insert_with(Symbols::read);
        for part in &mut e.parts {
            match &mut part.cause {
                Cause::Thread {
                    function: Some(f), ..
                } => symbols.rename(f),
                Cause::Nmi { handler } => symbols.rename(handler),
                _ => {}
            }
        }
    }

    /// Gives latlab's own load workers their whole name (`latlab-load:hackbench`),
    /// which the kernel cut to 15 bytes in the events, from the process's first
    /// argument while it runs.
    fn name_load_workers(&self, e: &mut Explanation) {
        use crate::load::worker::WORKER_NAME_PREFIX;
        for part in &mut e.parts {
            if let Cause::Thread { comm, pid, .. } = &mut part.cause {
                if comm.starts_with(WORKER_NAME_PREFIX) && comm.len() == 15 {
                    let arg0 = FactReader::system()
                        .read(&format!("/proc/{pid}/cmdline"))
                        .and_then(|line| line.split('\0').next().map(str::to_string));
                    if let Some(full) = arg0.filter(|a| a.starts_with(comm.as_str())) {
                        *comm = full;
                    }
                }
            }
        }
    }

    /// Says which interrupt each threaded interrupt handler among the parts serves
    /// (`irq/25-virtio0-`: PREEMPT_RT runs every device's handler in such a thread),
    /// with the interrupt's full action name from `/proc/irq/N/`.
    fn name_irq_threads(&mut self, e: &mut Explanation) {
        for part in &mut e.parts {
            if let Cause::Thread { comm, irq, .. } = &mut part.cause {
                if let Some(number) = ThreadedIrq::number_of(comm) {
                    let name = self
                        .irq_names
                        .entry(number)
                        .or_insert_with(|| irq_action(&FactReader::system(), number))
                        .clone();
                    *irq = Some(ThreadedIrq { irq: number, name });
                }
            }
        }
    }

    /// Whether `spike` is the sample that tripped its phase's break-trace wire.
    fn tripped_by(&self, spike: &FedSpike) -> bool {
        self.wires.iter().any(|(phase, wire)| {
            *phase == spike.phase
                && wire
                    .tripped()
                    .is_some_and(|t| t.value == spike.latency_ns && t.at == spike.at_ns)
        })
    }

    /// Keeps the explanation if it is among the largest.
    fn keep_largest(&mut self, e: Explanation) {
        if self.kept.len() < self.keep {
            self.kept.push(e);
            return;
        }
        let Some((i, smallest)) = self
            .kept
            .iter()
            .enumerate()
            .min_by_key(|(_, k)| k.latency_ns)
            .map(|(i, k)| (i, k.latency_ns))
        else {
            return;
        };
        if e.latency_ns > smallest {
            self.kept[i] = e;
        }
    }
}

impl Explainer for RunExplainer {
    fn drained(&mut self, held: &Held, spikes: &mut Vec<FedSpike>, _last: bool) {
        if spikes.is_empty() {
            if let Some(so_far) = &self.so_far {
                so_far.put_if_wanted(|| self.explain_so_far());
            }
            return;
        }
        for spike in spikes.drain(..) {
            self.explain_one(held, &spike);
        }
        if let Some(live) = &self.live {
            let catalogue = self.explain.catalogue.clone();
            match live.lock() {
                Ok(mut shown) => *shown = catalogue,
                Err(poisoned) => *poisoned.into_inner() = catalogue,
            }
        }
        if let Some(so_far) = &self.so_far {
            so_far.put_if_wanted(|| self.explain_so_far());
        }
    }
}

/// The action name of interrupt `irq`: the directory `/proc/irq/N/` has for it
/// (several, for a shared line, joined by commas); empty when not readable.
fn irq_action(files: &FactReader, irq: i64) -> String {
    let dir = format!("/proc/irq/{irq}");
    let mut names: Vec<String> = files
        .list(&dir)
        .unwrap_or_default()
        .into_iter()
        .filter(|name| files.is_dir(&format!("{dir}/{name}")))
        .collect();
    names.sort_unstable();
    names.join(",")
}

/// The kernel's text symbols by address, from `/proc/kallsyms`.
#[derive(Debug, Default)]
struct Symbols {
    /// (address, name), sorted by address.
    by_address: Vec<(u64, String)>,
}

impl Symbols {
    /// The symbols, or none when the file cannot be read or shows only zeros (a user
    /// without the privilege sees every address as 0).
    fn read() -> Symbols {
        let text = std::fs::read_to_string("/proc/kallsyms").unwrap_or_default();
        Symbols::parse(&text)
    }

    fn parse(text: &str) -> Symbols {
        let mut by_address: Vec<(u64, String)> = text
            .lines()
            .filter_map(|line| {
                let mut fields = line.split_whitespace();
                let address = u64::from_str_radix(fields.next()?, 16).ok()?;
                let kind = fields.next()?;
                let name = fields.next()?;
                let text = matches!(kind, "t" | "T");
                (text && address != 0).then(|| (address, name.to_string()))
            })
            .collect();
        by_address.sort_unstable();
        Symbols { by_address }
    }

    /// `0xffffffff81234560` as `process_one_work`, or `name+0x10` inside it; left as it
    /// is when no symbol holds it.
    fn rename(&self, address: &mut String) {
        let Some(hex) = address.strip_prefix("0x") else {
            return;
        };
        let Ok(at) = u64::from_str_radix(hex, 16) else {
            return;
        };
        let i = self.by_address.partition_point(|(a, _)| *a <= at);
        let Some((start, name)) = i.checked_sub(1).map(|i| &self.by_address[i]) else {
            return;
        };
        *address = match at - start {
            0 => name.clone(),
            // Far past a symbol is past the kernel's text: no name.
            off if off > 1 << 20 => return,
            off => format!("{name}+{off:#x}"),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::{irq_action, Symbols};
    use crate::facts::FactReader;

    #[test]
    fn a_threaded_handlers_interrupt_is_named_by_its_proc_directory() {
        let root = tempfile::tempdir().unwrap();
        for dir in [
            "proc/irq/25/virtio0-requests",
            "proc/irq/9/acpi",
            "proc/irq/9/i8042",
        ] {
            std::fs::create_dir_all(root.path().join(dir)).unwrap();
        }
        std::fs::write(root.path().join("proc/irq/25/smp_affinity_list"), "1\n").unwrap();
        let files = FactReader::at(root.path());
        assert_eq!(irq_action(&files, 25), "virtio0-requests");
        assert_eq!(irq_action(&files, 9), "acpi,i8042");
        assert_eq!(irq_action(&files, 77), "");
    }

    #[test]
    fn addresses_are_named_by_the_symbol_that_holds_them() {
        let symbols = Symbols::parse(
            "ffffffff81000000 T _stext\nffffffff81000100 t vmstat_update\n\
             ffffffff81000200 d some_data\n0000000000000000 T hidden\n",
        );
        let named = |a: &str| {
            let mut a = a.to_string();
            symbols.rename(&mut a);
            a
        };
        assert_eq!(named("0xffffffff81000100"), "vmstat_update");
        assert_eq!(named("0xffffffff81000110"), "vmstat_update+0x10");
        assert_eq!(named("0x10"), "0x10");
        assert_eq!(named("vmstat_update"), "vmstat_update");
        assert!(Symbols::parse("0000000000000000 T a\n")
            .by_address
            .is_empty());
    }
}
