//! What the probes of the kernel's own tracers (`timerlat`, `osnoise`) share: one
//! tracefs instance running the tracer on the measured CPUs, its settings kept and
//! restored, and a reader of each CPU's buffer.
//!
//! The kernel measures (its per-CPU threads, or timerlat's user threads on 6.5 and
//! later); a worker of latlab runs off the measured CPUs ([`Site::Elsewhere`]) and
//! reads what the tracer wrote into its CPU's buffer, `per_cpu/cpuN/trace_pipe_raw`,
//! decoded with the formats the kernel publishes beside it (the layout differs between
//! kernels: 6.1's `ftrace:timerlat` has a field 6.12's has not).
//!
//! The session is made by the first worker of a phase and shared by the others; the
//! tracer starts when the first worker rehearses, so that its threads run by the
//! common start, and everything is undone when the last worker lets go of it: tracing
//! off, the instance removed, every setting written back.
//!
//! [`Site::Elsewhere`]: super::Site::Elsewhere

use crate::notice::Notice;
use latlab_model::spec::SchedSpec;
use latlab_rt::sched;
use latlab_rt::tracefs::osnoise::{self, KernelTracer, OsnoiseSettings};
use latlab_rt::tracefs::{TraceError, TraceInstance};
use latlab_rt::RtError;
use latlab_trace::{decode_page, Event, EventFormat, EventTable, PageLayout};
use std::fs::File;
use std::io::{ErrorKind, Read};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// Each CPU's buffer: events a reader drains every [`DRAIN`] fit many times over (a
/// timerlat period of 100 µs writes about 40 bytes a period per context).
const BUFFER_KB: u64 = 4096;
/// How often a worker reads its CPU's buffer.
pub(super) const DRAIN: Duration = Duration::from_millis(20);
/// How long the tracer's kernel threads may take to appear after it starts.
const THREADS_APPEAR: Duration = Duration::from_secs(5);

/// What a session sets up: the tracer, its CPUs, its settings (file under the
/// tracefs root, value), the trace events it enables beside the tracer's own, and
/// the events it decodes.
#[derive(Debug, Clone)]
pub(super) struct Plan {
    /// The tracer.
    pub tracer: KernelTracer,
    /// The CPUs its threads run on.
    pub cpus: Vec<usize>,
    /// Settings, in the order written.
    pub settings: Vec<(&'static str, String)>,
    /// Trace events enabled in the instance (`osnoise:sample_threshold`).
    pub events: Vec<(&'static str, &'static str)>,
    /// Events decoded from the buffers (the tracer's own, `ftrace:timerlat`, and the
    /// enabled ones).
    pub decoded: Vec<(&'static str, &'static str)>,
    /// The policy the tracer's kernel threads run at (`None`: a user workload, whose
    /// threads set their own).
    pub kernel_threads: Option<SchedSpec>,
}

/// A running tracer, shared by a phase's workers.
pub(super) struct Session {
    plan: Plan,
    instance: Mutex<TraceInstance>,
    settings: Mutex<OsnoiseSettings>,
    /// How a page is laid out.
    pub layout: PageLayout,
    /// The formats of the decoded events.
    pub table: EventTable,
    /// Started: the tracer runs (and its threads are at their policy).
    started: Mutex<Option<Result<(), String>>>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("tracer", &self.plan.tracer)
            .field("cpus", &self.plan.cpus)
            .finish_non_exhaustive()
    }
}

/// Why a session could not be had.
pub(super) fn refusal(tracer: KernelTracer, e: &TraceError) -> RtError {
    RtError::new(
        format!("set up the kernel's {} tracer", tracer.name()),
        std::io::Error::other(e.to_string()),
    )
}

impl Session {
    /// The tracer set up as `plan` says (not started): the settings kept, a private
    /// instance made with the monotonic trace clock and big buffers, the events
    /// enabled, the formats read.
    fn open(plan: Plan) -> Result<Session, TraceError> {
        let root = osnoise::available(plan.tracer)?;
        if let Some((dir, tracer)) = osnoise::in_use(&root, None) {
            return Err(TraceError::TracerBusy {
                tracer: format!("{tracer} (in {})", dir.display()),
            });
        }
        let settings = OsnoiseSettings::save(&root)?;
        // Settings checked against each other (osnoise's runtime at most its period)
        // may be refused in one order and taken in the other: those refused are
        // written again after the rest.
        let mut refused = Vec::new();
        for (file, value) in &plan.settings {
            if settings.set(file, value).is_err() {
                refused.push((file, value));
            }
        }
        for (file, value) in refused {
            settings.set(file, value)?;
        }
        let instance = TraceInstance::create_tagged(plan.tracer.name())?;
        instance.set_clock("mono")?;
        instance.set_buffer_size_kb(BUFFER_KB)?;
        instance.set_cpus(&plan.cpus)?;
        for (system, name) in &plan.events {
            instance.set_event(system, name, true)?;
        }
        // The tracer before any reader: the kernel refuses (EBUSY) to change the
        // tracer of an instance whose buffers are open. Its threads start at once;
        // what they stamp is recorded once tracing is turned on.
        instance.set_tracer(plan.tracer.name())?;
        let layout = PageLayout::parse(&instance.header_page()?).map_err(|e| TraceError::Io {
            what: "read the page layout",
            path: instance.dir().join("events/header_page"),
            source: std::io::Error::other(e.to_string()),
        })?;
        let mut formats = Vec::new();
        for (system, name) in &plan.decoded {
            let text = instance.read_event_format(system, name)?;
            formats.push(EventFormat::parse(&text).map_err(|e| {
                TraceError::Io {
                    what: "read an event's format",
                    path: instance
                        .dir()
                        .join(format!("events/{system}/{name}/format")),
                    source: std::io::Error::other(e.to_string()),
                }
            })?);
        }
        Ok(Session {
            plan,
            instance: Mutex::new(instance),
            settings: Mutex::new(settings),
            layout,
            table: EventTable::new(formats),
            started: Mutex::new(None),
        })
    }

    /// Starts the tracer (once, whoever asks first) and puts its kernel threads at
    /// their policy; the error says why it could not, to every worker that asks.
    pub fn start(&self) -> Result<(), RtError> {
        let mut started = self.started.lock().unwrap_or_else(|e| e.into_inner());
        let outcome = started.get_or_insert_with(|| self.start_now());
        outcome.clone().map_err(|why| {
            RtError::new(
                format!("start the kernel's {} tracer", self.plan.tracer.name()),
                std::io::Error::other(why),
            )
        })
    }

    fn start_now(&self) -> Result<(), String> {
        let instance = self.instance.lock().unwrap_or_else(|e| e.into_inner());
        instance.set_tracing(true).map_err(|e| e.to_string())?;
        drop(instance);
        if let Some(policy) = self.plan.kernel_threads {
            self.set_kernel_threads(policy)?;
        }
        Ok(())
    }

    /// Puts the tracer's kernel threads (`timerlat/N`, `osnoise/N`) at `policy`, as
    /// `rtla -P` does; they are made when the tracer starts.
    fn set_kernel_threads(&self, policy: SchedSpec) -> Result<(), String> {
        let name = self.plan.tracer.name();
        let until = Instant::now() + THREADS_APPEAR;
        let mut missing: Vec<usize> = self.plan.cpus.clone();
        let mut refused = None;
        while !missing.is_empty() {
            let threads = kernel_threads(name);
            missing.retain(|cpu| match threads.iter().find(|(c, _)| c == cpu) {
                Some(&(_, tid)) => match set_policy(tid, policy) {
                    Ok(()) => false,
                    // Gone since it was listed (the tracer made its threads again):
                    // looked for again, not a refusal.
                    Err(e) if e.errno() == Some(libc::ESRCH) => true,
                    Err(e) => {
                        let hint = match policy {
                            SchedSpec::Deadline { .. } => {
                                " (the kernel gives SCHED_DEADLINE only to a thread \
                                 that may run on every CPU of its scheduling domain, \
                                 which a tracer's per-CPU thread may not: use a fifo or \
                                 rr policy)"
                            }
                            _ => "",
                        };
                        refused.get_or_insert_with(|| {
                            format!("put {name}/{cpu} at {policy}: {e}{hint}")
                        });
                        false
                    }
                },
                None => true,
            });
            if let Some(why) = refused {
                return Err(why);
            }
            if missing.is_empty() {
                break;
            }
            if Instant::now() >= until {
                return Err(format!(
                    "the tracer's threads {name}/N of CPU {} did not appear within {} s",
                    latlab_model::spec::format_cpu_list(&missing),
                    THREADS_APPEAR.as_secs()
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(())
    }

    /// Opens CPU `cpu`'s buffer for reading.
    pub fn open_pipe(&self, cpu: usize) -> Result<File, RtError> {
        let instance = self.instance.lock().unwrap_or_else(|e| e.into_inner());
        instance
            .open_pipe(cpu)
            .map_err(|e| refusal(self.plan.tracer, &e))
    }

    /// Events CPU `cpu`'s buffer lost so far, if known.
    pub fn overrun(&self, cpu: usize) -> Option<u64> {
        let instance = self.instance.lock().unwrap_or_else(|e| e.into_inner());
        instance.overrun(cpu)
    }

    /// timerlat's user-workload file of CPU `cpu` (6.5 and later).
    pub fn timerlat_fd(&self, cpu: usize) -> Option<PathBuf> {
        let root = latlab_rt::tracefs::tracefs_root()?;
        osnoise::timerlat_fd(&root, cpu)
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let instance = self.instance.get_mut().unwrap_or_else(|e| e.into_inner());
        let _ = instance.set_tracing(false);
        let _ = instance.set_tracer("nop");
        let _ = instance.remove();
        let settings = self.settings.get_mut().unwrap_or_else(|e| e.into_inner());
        let _ = settings.restore();
    }
}

/// The kernel threads `NAME/CPU` of a tracer, as (CPU, thread id).
fn kernel_threads(name: &str) -> Vec<(usize, i32)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            let comm = std::fs::read_to_string(entry.path().join("comm")).ok()?;
            let cpu = comm
                .trim()
                .strip_prefix(name)?
                .strip_prefix('/')?
                .parse()
                .ok()?;
            Some((cpu, pid))
        })
        .collect()
}

/// Puts thread `tid` at `policy`.
fn set_policy(tid: i32, policy: SchedSpec) -> Result<(), RtError> {
    sched::set_task(tid, super::policy_of(policy))
}

/// The phase's session, shared by its workers: the first to ask makes it, the others
/// get the same one while it lives.
#[derive(Debug, Default)]
pub(super) struct Shared {
    current: Mutex<Weak<Session>>,
    /// Events the buffers lost, over every session of the probe.
    pub lost: Arc<AtomicU64>,
    /// Why the first page that did not decode, or the first read that failed, did.
    problem: Arc<Mutex<Option<String>>>,
}

impl Shared {
    /// The session, made as `plan` says if there is none.
    pub fn session(&self, plan: &Plan) -> Result<Arc<Session>, RtError> {
        let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(session) = current.upgrade() {
            return Ok(session);
        }
        let session = Arc::new(Session::open(plan.clone()).map_err(|e| refusal(plan.tracer, &e))?);
        *current = Arc::downgrade(&session);
        Ok(session)
    }

    /// What the probe's results need said: the events its buffers lost.
    pub fn notices(&self, tracer: &'static str) -> Vec<Notice> {
        let count = self.lost.load(Ordering::Relaxed);
        let problem = self
            .problem
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        (count > 0 || problem.is_some())
            .then_some(Notice::TraceEventsLost {
                tracer,
                count,
                problem,
            })
            .into_iter()
            .collect()
    }
}

/// A worker's side of the session: its CPU's buffer, read until its window is over.
pub(super) struct Reader {
    /// Closed before the session goes: the instance cannot be removed while open.
    pipe: Option<Pipe>,
    lost: Arc<AtomicU64>,
    problem: Arc<Mutex<Option<String>>>,
    session: Arc<Session>,
}

impl Reader {
    /// The phase's session (made as `plan` says if there is none yet), and the buffer
    /// of the CPU `placement` measures.
    pub fn open(
        shared: &Shared,
        plan: &Plan,
        placement: &super::Placement,
    ) -> Result<Reader, RtError> {
        let tracer = plan.tracer.name();
        let cpu = placement.cpu.ok_or_else(|| {
            RtError::new(
                format!("place a {tracer} worker"),
                std::io::Error::other("the kernel's tracers measure given CPUs"),
            )
        })?;
        let session = shared.session(plan)?;
        Ok(Reader {
            pipe: Some(Pipe::open(&session, cpu)?),
            lost: shared.lost.clone(),
            problem: shared.problem.clone(),
            session,
        })
    }

    /// The session.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// What the buffer holds now, as `decode` reads each event.
    pub fn drain<T>(&mut self, decode: impl Fn(&Event<'_>) -> Option<T>) -> Vec<T> {
        let Some(pipe) = self.pipe.as_mut() else {
            return Vec::new();
        };
        let mut read = Vec::new();
        let lost = pipe.drain(&self.session, |event| read.extend(decode(event)));
        self.lost.fetch_add(lost, Ordering::Relaxed);
        read
    }

    /// Reads every [`DRAIN`], handing what it read to `take`, until `stop` or until
    /// `settle` past the window's end (what is due at its end is written after it);
    /// returns when measuring stopped, the window's end at most.
    pub fn follow<T>(
        &mut self,
        window: &super::Window,
        stop: &std::sync::atomic::AtomicBool,
        settle: i64,
        decode: impl Fn(&Event<'_>) -> Option<T>,
        mut take: impl FnMut(Vec<T>),
    ) -> i64 {
        loop {
            take(self.drain(&decode));
            let now = latlab_rt::clock::Clock::Monotonic.now_ns();
            let over = window.end.is_some_and(|end| now > end + settle);
            if over || stop.load(Ordering::Relaxed) {
                return window.end.map_or(now, |end| now.min(end));
            }
            std::thread::sleep(DRAIN);
        }
    }

    /// Reads what is left and closes the buffer; pages that did not decode count as
    /// lost.
    pub fn close<T>(&mut self, decode: impl Fn(&Event<'_>) -> Option<T>) -> Vec<T> {
        let last = self.drain(decode);
        if let Some(pipe) = self.pipe.take() {
            self.lost.fetch_add(pipe.bad_pages, Ordering::Relaxed);
            if let Some(why) = pipe.first_problem {
                let mut problem = self.problem.lock().unwrap_or_else(|e| e.into_inner());
                problem.get_or_insert(why);
            }
        }
        last
    }
}

/// Reads one CPU's buffer a page at a time and hands each decoded event on.
struct Pipe {
    cpu: usize,
    file: File,
    page: Vec<u8>,
    /// `overrun` when last read.
    overrun: Option<u64>,
    /// Pages that did not decode.
    bad_pages: u64,
    /// Why the first bad page was bad, or the first read failed.
    first_problem: Option<String>,
}

impl Pipe {
    /// The buffer of `cpu` in `session`.
    fn open(session: &Session, cpu: usize) -> Result<Pipe, RtError> {
        Ok(Pipe {
            cpu,
            file: session.open_pipe(cpu)?,
            page: vec![0; session.layout.data_offset + session.layout.data_size],
            overrun: None,
            bad_pages: 0,
            first_problem: None,
        })
    }

    /// Reads everything the buffer holds now, handing each event to `each`; returns
    /// how many events were lost (overwritten) since the last drain.
    fn drain(&mut self, session: &Session, mut each: impl FnMut(&Event<'_>)) -> u64 {
        let mut lost = 0;
        // Counted from the first drain on: what the tracer overwrote before it was
        // set-up, before the window.
        if let Some(overrun) = session.overrun(self.cpu) {
            lost += overrun.saturating_sub(self.overrun.unwrap_or(overrun));
            self.overrun = Some(overrun);
        }
        loop {
            match self.file.read(&mut self.page) {
                Ok(0) => break,
                Ok(n) => {
                    let page = match decode_page(&session.layout, &self.page[..n]) {
                        Ok(page) => page,
                        Err(e) => {
                            self.bad_pages += 1;
                            self.first_problem.get_or_insert_with(|| e.to_string());
                            continue;
                        }
                    };
                    for record in &page.records {
                        // Events of other kinds (a marker) are not this probe's.
                        if let Ok(event) = session.table.decode(self.cpu, record) {
                            each(&event);
                        }
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.first_problem
                        .get_or_insert_with(|| format!("reading CPU {}'s buffer: {e}", self.cpu));
                    break;
                }
            }
        }
        lost
    }
}

/// A file of `tests/fixtures/timerlat/`: what a real kernel's tracers wrote.
#[cfg(test)]
pub(crate) fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/fixtures/timerlat/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}
