//! A private tracefs instance for one latlab run, which never outlives it.
//!
//! `mkdir instances/latlab-<pid>` under the tracefs mount gives latlab a trace buffer of
//! its own, with its own `tracing_cpumask`, `trace_clock`, `buffer_size_kb`, events and
//! `tracing_on`; the global trace state other tools (trace-cmd, rtla, `--breaktrace`)
//! use is never touched. [`TraceInstance`] removes the instance when dropped, and
//! [`sweep_stale`] removes those of latlab processes that were killed before they could.
//!
//! The kernel refuses to remove an instance while any of its files is open (`rmdir`
//! fails with `EBUSY`), so whoever reads `trace_pipe_raw` must close it before the
//! instance is removed: drop the readers first. Events still enabled do not hold the
//! instance (the kernel disables them on `rmdir`); latlab turns them off anyway, so that
//! a failed `rmdir` leaves nothing recording.

use crate::process;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The prefix of every instance latlab makes; the owner's pid follows.
const PREFIX: &str = "latlab-";

/// What went wrong with a tracefs instance; each says what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// Neither `/sys/kernel/tracing` nor `/sys/kernel/debug/tracing` holds tracefs.
    #[error("tracefs is not mounted (neither /sys/kernel/tracing nor /sys/kernel/debug/tracing); mount it with `mount -t tracefs nodev /sys/kernel/tracing` (a kernel without CONFIG_TRACING has none)")]
    NoTracefs,
    /// The kernel refused for lack of privilege.
    #[error("not permitted to use {path}: {source}; run as root, or mount tracefs with `-o gid=GROUP` and join that group")]
    NotPermitted {
        /// The file or directory refused.
        path: PathBuf,
        /// The kernel's error.
        source: io::Error,
    },
    /// An instance of that name exists already.
    #[error("the tracefs instance {path} exists already; if no latlab with that pid runs, remove it with `rmdir {path}`")]
    Exists {
        /// The instance directory.
        path: PathBuf,
    },
    /// The kernel does not offer the trace clock asked for.
    #[error("this kernel's tracefs has no trace clock '{wanted}' (it offers: {offered})")]
    ClockUnavailable {
        /// The clock asked for.
        wanted: String,
        /// The clocks `trace_clock` lists.
        offered: String,
    },
    /// The kernel has no such trace event.
    #[error("this kernel has no trace event {system}:{name} (no {path}); see `ls {}` for those it has", path.parent().and_then(Path::parent).unwrap_or(path).display())]
    NoEvent {
        /// The event's subsystem (`sched`).
        system: String,
        /// The event's name (`sched_switch`).
        name: String,
        /// Its directory in the instance.
        path: PathBuf,
    },
    /// A CPU the instance has no buffer for.
    #[error("CPU {cpu} has no trace buffer (no {path}); give CPUs this machine has (see /sys/devices/system/cpu/possible)")]
    NoCpu {
        /// The CPU asked for.
        cpu: usize,
        /// Its `per_cpu` directory.
        path: PathBuf,
    },
    /// The kernel lacks a tracer.
    #[error("this kernel has no {tracer} tracer (it offers: {offered}); it needs a kernel built with CONFIG_{}_TRACER=y (Debian's linux-image-rt-amd64 has it)", tracer.to_ascii_uppercase())]
    NoTracer {
        /// The tracer asked for.
        tracer: String,
        /// The tracers `available_tracers` lists.
        offered: String,
    },
    /// The tracer runs elsewhere (rtla, another latlab) and runs only once at a time.
    #[error("the {tracer} tracer is in use by another tool (rtla, another latlab: see `grep -l {tracer} /sys/kernel/tracing/instances/*/current_tracer`); let it finish first")]
    TracerBusy {
        /// The tracer asked for.
        tracer: String,
    },
    /// `rmdir` refused because a file of the instance is still open.
    #[error("cannot remove the tracefs instance {path}: a file of it is still open (EBUSY); close the readers of its trace_pipe_raw first, or find them with `fuser -v {path}/per_cpu/*/*`")]
    Busy {
        /// The instance directory.
        path: PathBuf,
    },
    /// Any other failure reading or writing a tracefs file.
    #[error("{what} ({path}): {source}")]
    Io {
        /// What latlab was doing.
        what: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The kernel's error.
        source: io::Error,
    },
}

impl TraceError {
    fn io(what: &'static str, path: &Path, source: io::Error) -> TraceError {
        let path = path.to_path_buf();
        match source.raw_os_error() {
            Some(libc::EPERM | libc::EACCES) => TraceError::NotPermitted { path, source },
            _ => TraceError::Io { what, path, source },
        }
    }
}

/// Where tracefs is mounted, from `/proc/mounts` (the first `tracefs` entry), else the
/// usual places (a tracefs reached through debugfs's automount does not appear there).
pub fn tracefs_root() -> Option<PathBuf> {
    let mounts = fs::read_to_string("/proc/mounts").unwrap_or_default();
    mounts
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let _source = fields.next()?;
            let target = fields.next()?;
            (fields.next()? == "tracefs").then(|| PathBuf::from(target))
        })
        .find(|root| root.join("instances").is_dir())
        .or_else(crate::trace::find_tracefs)
}

/// Why no tracefs was found: not mounted, or (for a user without the privilege) not
/// readable where it is usually mounted.
fn why_no_tracefs() -> TraceError {
    for place in [
        "/sys/kernel/tracing",
        "/sys/kernel/debug/tracing",
        "/sys/kernel/debug",
    ] {
        if let Err(source) = fs::read_dir(place) {
            if let Some(libc::EACCES | libc::EPERM) = source.raw_os_error() {
                let path = PathBuf::from(place);
                return TraceError::NotPermitted { path, source };
            }
        }
    }
    TraceError::NoTracefs
}

/// The kernel's text for a set of CPUs in `tracing_cpumask`: hexadecimal, in
/// comma-separated groups of 32 CPUs, the highest group first (what `bitmap_parse`
/// reads; `"3"` for CPUs 0–1, `"1,00000000"` for CPU 32).
pub fn cpu_mask(cpus: &[usize]) -> String {
    let groups = cpus.iter().max().map_or(1, |max| max / 32 + 1);
    let mut words = vec![0u32; groups];
    for &cpu in cpus {
        words[cpu / 32] |= 1 << (cpu % 32);
    }
    let mut text = String::new();
    for (i, word) in words.iter().rev().enumerate() {
        if i == 0 {
            text.push_str(&format!("{word:x}"));
        } else {
            text.push_str(&format!(",{word:08x}"));
        }
    }
    text
}

/// The owner pid an instance's name gives: `latlab-<pid>` or `latlab-<pid>-<tag>`.
fn owner_of(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(PREFIX)?;
    let digits = rest.split('-').next()?;
    digits.parse().ok()
}

/// A private tracefs instance, removed when dropped (see [`TraceInstance::remove`]).
#[derive(Debug)]
pub struct TraceInstance {
    dir: PathBuf,
    removed: bool,
}

impl TraceInstance {
    /// Makes `instances/latlab-<pid>`, with tracing off until [`set_tracing`] turns it
    /// on.
    ///
    /// [`set_tracing`]: TraceInstance::set_tracing
    pub fn create() -> Result<TraceInstance, TraceError> {
        TraceInstance::make(format!("{PREFIX}{}", std::process::id()))
    }

    /// Makes `instances/latlab-<pid>-<tag>`: a second instance of the same process
    /// (tests, an A/B of two event sets). [`sweep_stale`] treats it like the first.
    pub fn create_tagged(tag: &str) -> Result<TraceInstance, TraceError> {
        let tag: String = tag
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        TraceInstance::make(format!("{PREFIX}{}-{tag}", std::process::id()))
    }

    fn make(name: String) -> Result<TraceInstance, TraceError> {
        let root = tracefs_root().ok_or_else(why_no_tracefs)?;
        let dir = root.join("instances").join(name);
        if let Err(e) = fs::create_dir(&dir) {
            return Err(match e.kind() {
                io::ErrorKind::AlreadyExists => TraceError::Exists { path: dir },
                _ => TraceError::io("create the tracefs instance", &dir, e),
            });
        }
        // From here on, an error removes the instance again (Drop).
        let instance = TraceInstance {
            dir,
            removed: false,
        };
        instance.set_tracing(false)?;
        Ok(instance)
    }

    /// The instance's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn write(&self, file: &str, value: &str, what: &'static str) -> Result<(), TraceError> {
        let path = self.dir.join(file);
        fs::write(&path, value).map_err(|e| TraceError::io(what, &path, e))
    }

    fn read(&self, file: &str, what: &'static str) -> Result<String, TraceError> {
        let path = self.dir.join(file);
        fs::read_to_string(&path).map_err(|e| TraceError::io(what, &path, e))
    }

    /// Records only the events of `cpus` (CPUs outside still run the tracepoints, but
    /// their buffers stay empty).
    pub fn set_cpus(&self, cpus: &[usize]) -> Result<(), TraceError> {
        for &cpu in cpus {
            let path = self.dir.join(format!("per_cpu/cpu{cpu}"));
            if !path.is_dir() {
                return Err(TraceError::NoCpu { cpu, path });
            }
        }
        self.write("tracing_cpumask", &cpu_mask(cpus), "set tracing_cpumask")
    }

    /// Stamps events with trace clock `clock` (`mono`: CLOCK_MONOTONIC, the clock
    /// latlab's samples use), and checks the kernel took it.
    pub fn set_clock(&self, clock: &str) -> Result<(), TraceError> {
        let offered = self.read("trace_clock", "read trace_clock")?;
        let names: Vec<&str> = offered
            .split_whitespace()
            .map(|w| w.trim_start_matches('[').trim_end_matches(']'))
            .collect();
        if !names.contains(&clock) {
            return Err(TraceError::ClockUnavailable {
                wanted: clock.to_string(),
                offered: names.join(", "),
            });
        }
        self.write("trace_clock", clock, "set trace_clock")?;
        match self.clock()? {
            Some(now) if now == clock => Ok(()),
            _ => Err(TraceError::ClockUnavailable {
                wanted: clock.to_string(),
                offered: names.join(", "),
            }),
        }
    }

    /// The trace clock in use (the one `trace_clock` shows in brackets).
    pub fn clock(&self) -> Result<Option<String>, TraceError> {
        let text = self.read("trace_clock", "read trace_clock")?;
        Ok(text
            .split_whitespace()
            .find_map(|w| w.strip_prefix('[')?.strip_suffix(']'))
            .map(str::to_string))
    }

    /// Sizes each CPU's ring buffer; returns the size the kernel gave (it rounds up to
    /// whole pages).
    pub fn set_buffer_size_kb(&self, kb: u64) -> Result<u64, TraceError> {
        self.write("buffer_size_kb", &kb.to_string(), "set buffer_size_kb")?;
        let text = self.read("buffer_size_kb", "read buffer_size_kb")?;
        // "1410" once set; "1410 (expanded: 1410)" before the first use on some kernels.
        let first = text.split_whitespace().next().unwrap_or_default();
        first.parse().map_err(|_| TraceError::Io {
            what: "read buffer_size_kb",
            path: self.dir.join("buffer_size_kb"),
            source: io::Error::new(io::ErrorKind::InvalidData, format!("'{}'", text.trim())),
        })
    }

    /// The directory of trace event `system:name`, if it has `file` (`enable`,
    /// `format`).
    fn event_dir(&self, system: &str, name: &str, file: &str) -> Result<PathBuf, TraceError> {
        let plain = |s: &str| !s.is_empty() && !s.contains('/') && s != "." && s != "..";
        let path = self.dir.join("events").join(system).join(name);
        if !plain(system) || !plain(name) || !path.join(file).is_file() {
            return Err(TraceError::NoEvent {
                system: system.to_string(),
                name: name.to_string(),
                path,
            });
        }
        Ok(path)
    }

    /// Turns trace event `system:name` on or off in this instance.
    pub fn set_event(&self, system: &str, name: &str, on: bool) -> Result<(), TraceError> {
        let path = self.event_dir(system, name, "enable")?.join("enable");
        fs::write(&path, if on { "1" } else { "0" })
            .map_err(|e| TraceError::io("enable a trace event", &path, e))
    }

    /// Turns every trace event of this instance off (events only; triggers stay).
    pub fn disable_events(&self) -> Result<(), TraceError> {
        self.write("events/enable", "0", "disable the instance's events")
    }

    /// The `format` file of trace event `system:name`: its fields and their offsets.
    pub fn event_format(&self, system: &str, name: &str) -> Result<PathBuf, TraceError> {
        Ok(self.event_dir(system, name, "format")?.join("format"))
    }

    /// Makes `tracer` this instance's tracer (`nop` for none), and checks the kernel
    /// took it. The kernel refuses a tracer another instance runs that allows only one
    /// (osnoise and timerlat share their threads): [`TraceError::TracerBusy`].
    pub fn set_tracer(&self, tracer: &str) -> Result<(), TraceError> {
        let path = self.dir.join("current_tracer");
        if let Err(e) = fs::write(&path, tracer) {
            return Err(match e.raw_os_error() {
                Some(libc::EBUSY) => TraceError::TracerBusy {
                    tracer: tracer.to_string(),
                },
                Some(libc::EINVAL | libc::ENODEV) => TraceError::NoTracer {
                    tracer: tracer.to_string(),
                    offered: self.tracers().join(", "),
                },
                _ => TraceError::io("set current_tracer", &path, e),
            });
        }
        let now = self.read("current_tracer", "read current_tracer")?;
        match now.trim() == tracer {
            true => Ok(()),
            false => Err(TraceError::NoTracer {
                tracer: tracer.to_string(),
                offered: self.tracers().join(", "),
            }),
        }
    }

    /// The tracers this kernel offers (`available_tracers`).
    pub fn tracers(&self) -> Vec<String> {
        self.read("available_tracers", "read available_tracers")
            .map(|t| t.split_whitespace().map(str::to_string).collect())
            .unwrap_or_default()
    }

    /// Starts or stops recording into this instance's buffers.
    pub fn set_tracing(&self, on: bool) -> Result<(), TraceError> {
        self.write("tracing_on", if on { "1" } else { "0" }, "set tracing_on")
    }

    /// The binary ring buffer of `cpu`, read by consuming whole sub-buffers.
    pub fn trace_pipe_raw(&self, cpu: usize) -> Result<PathBuf, TraceError> {
        let dir = self.dir.join(format!("per_cpu/cpu{cpu}"));
        if !dir.is_dir() {
            return Err(TraceError::NoCpu { cpu, path: dir });
        }
        Ok(dir.join("trace_pipe_raw"))
    }

    /// Opens CPU `cpu`'s `trace_pipe_raw` so that reading an empty buffer returns
    /// `EAGAIN` (`ErrorKind::WouldBlock`) instead of waiting.
    pub fn open_pipe(&self, cpu: usize) -> Result<fs::File, TraceError> {
        use std::os::unix::fs::OpenOptionsExt;
        let path = self.trace_pipe_raw(cpu)?;
        fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&path)
            .map_err(|e| TraceError::io("open the trace buffer", &path, e))
    }

    /// Events CPU `cpu`'s buffer overwrote before they were read (`overrun` of
    /// `per_cpu/cpuN/stats`), if readable.
    pub fn overrun(&self, cpu: usize) -> Option<u64> {
        let stats = fs::read_to_string(self.dir.join(format!("per_cpu/cpu{cpu}/stats"))).ok()?;
        stats
            .lines()
            .find_map(|line| line.strip_prefix("overrun:"))
            .and_then(|value| value.trim().parse().ok())
    }

    /// The text of `events/header_page` (where a page keeps its timestamp and data),
    /// read in one `read` of a page or more: after a short first read the kernel
    /// reports the end of the file.
    pub fn header_page(&self) -> Result<String, TraceError> {
        let path = self.dir.join("events/header_page");
        read_at_once(&path).map_err(|e| TraceError::io("read the page layout", &path, e))
    }

    /// The text of trace event `system:name`'s `format` file; events a tracer writes
    /// (`ftrace:timerlat`) have one, though they cannot be enabled on their own.
    pub fn read_event_format(&self, system: &str, name: &str) -> Result<String, TraceError> {
        let path = self.event_format(system, name)?;
        fs::read_to_string(&path).map_err(|e| TraceError::io("read an event's format", &path, e))
    }

    /// Stops tracing, turns every event of the instance off and removes it, saying
    /// what failed. Every reader of its files must be closed first ([`TraceError::Busy`]);
    /// a hold that ends by itself within a quarter of a second is waited out. After an error,
    /// the instance is still held, and removing it may be tried again (dropping it tries
    /// once more, silently).
    pub fn remove(&mut self) -> Result<(), TraceError> {
        if self.removed {
            return Ok(());
        }
        // Best effort: the rmdir below would disable them too, and its error is the one
        // that matters.
        let _ = self.set_tracing(false);
        let _ = self.write("events/enable", "0", "disable the instance's events");
        // A process forked by another thread while a file of the instance was open holds
        // a copy of it until it closes it (`close_inherited_trace_files`) or execs; such
        // a hold ends by itself, a reader's does not.
        let until = Instant::now() + BUSY_PATIENCE;
        loop {
            match fs::remove_dir(&self.dir) {
                Ok(()) => break,
                Err(e) if e.kind() == io::ErrorKind::NotFound => break,
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                    if Instant::now() >= until {
                        return Err(TraceError::Busy {
                            path: self.dir.clone(),
                        });
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => return Err(TraceError::io("remove the tracefs instance", &self.dir, e)),
            }
        }
        self.removed = true;
        Ok(())
    }
}

/// How long [`TraceInstance::remove`] waits out a transient hold on the instance.
const BUSY_PATIENCE: Duration = Duration::from_millis(250);

/// tracefs's `f_type` (`TRACEFS_MAGIC` of `<linux/magic.h>`, "trac").
const TRACEFS_MAGIC: i64 = 0x7472_6163;

/// Closes every descriptor on tracefs that a child just forked inherited, so that the
/// child does not keep a trace instance from being removed (the kernel refuses to
/// remove one while any of its files is open, and another thread may have had one open
/// at the fork). Descriptors are found in `/proc/self/fd`; without procfs nothing is
/// closed.
///
/// Async-signal-safe, for a child forked from a process with other threads: raw system
/// calls on a buffer on the stack, nothing allocated, no lock taken.
pub(crate) fn close_inherited_trace_files() {
    // SAFETY: a NUL-terminated path and plain flags.
    let dir = unsafe {
        libc::open(
            c"/proc/self/fd".as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if dir < 0 {
        return;
    }
    let mut buf = [0u8; 2048];
    loop {
        // SAFETY: the buffer is writable for its length; the kernel fills it with
        // whole `linux_dirent64` records and returns the bytes used.
        let got = unsafe { libc::syscall(libc::SYS_getdents64, dir, buf.as_mut_ptr(), buf.len()) };
        let Ok(got) = usize::try_from(got) else { break };
        if got == 0 {
            break;
        }
        // linux_dirent64: u64 d_ino, i64 d_off, u16 d_reclen, u8 d_type, then the name.
        let mut at = 0;
        while at + 19 <= got {
            let reclen = usize::from(u16::from_ne_bytes([buf[at + 16], buf[at + 17]]));
            if reclen == 0 || at + reclen > got {
                break;
            }
            if let Some(fd) = fd_number(&buf[at + 19..at + reclen]) {
                if fd != dir && on_tracefs(fd) {
                    // SAFETY: closing a descriptor this child owns and will not use.
                    unsafe { libc::close(fd) };
                }
            }
            at += reclen;
        }
    }
    // SAFETY: the directory descriptor opened above.
    unsafe { libc::close(dir) };
}

/// The descriptor a `/proc/self/fd` entry names (its NUL-padded decimal name).
fn fd_number(name: &[u8]) -> Option<i32> {
    let digits = name.split(|&b| b == 0).next()?;
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0i32, |fd, &b| {
        let digit = (b as char).to_digit(10)?;
        fd.checked_mul(10)?.checked_add(digit as i32)
    })
}

fn on_tracefs(fd: i32) -> bool {
    // SAFETY: statfs is plain data, filled by the kernel.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to it.
    unsafe { libc::fstatfs(fd, &mut st) == 0 && st.f_type as i64 == TRACEFS_MAGIC }
}

impl Drop for TraceInstance {
    fn drop(&mut self) {
        let _ = self.remove();
    }
}

/// Removes the instances of latlab processes that no longer run (killed by SIGKILL,
/// the OOM killer…), and returns what it removed, in words. Instances of running
/// processes, and those of other tools, are never touched.
pub fn sweep_stale() -> Vec<String> {
    let Some(root) = tracefs_root() else {
        return Vec::new();
    };
    sweep_stale_in(&root.join("instances"))
}

fn sweep_stale_in(instances: &Path) -> Vec<String> {
    let mut removed = Vec::new();
    for left in process::leftovers(instances, owner_of, |t| t.is_dir()) {
        // rmdir alone: the kernel turns the events off as it removes an instance, and
        // refuses (EBUSY) one whose buffers a reader holds open — a latlab of another
        // pid namespace, whose pid means nothing here, whose tracing must go on.
        if fs::remove_dir(&left.path).is_ok() {
            removed.push(format!(
                "tracefs instance {} (of latlab pid {})",
                left.path.display(),
                left.owner
            ));
        }
    }
    removed
}

pub mod osnoise;

/// A tracefs file's text read in one `read` of a generous buffer. Some of the
/// kernel's files refuse a read into a buffer no longer than their text
/// (`osnoise/cpus`: `EINVAL`) or report the end after a short first read
/// (`events/header_page`), which `read_to_string`'s first small read can be.
pub fn read_at_once(path: &Path) -> io::Result<String> {
    use std::io::Read;
    let mut buffer = vec![0; 64 << 10];
    let n = fs::File::open(path)?.read(&mut buffer)?;
    buffer.truncate(n);
    Ok(String::from_utf8_lossy(&buffer).into_owned())
}

#[cfg(test)]
mod tests;
