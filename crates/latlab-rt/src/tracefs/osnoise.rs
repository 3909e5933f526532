//! The kernel's own latency tracers, timerlat and osnoise: their settings, shared by
//! every instance under `osnoise/` (and `tracing_thresh`), kept and restored.
//!
//! Both tracers run per-CPU kernel threads (or, for timerlat on 6.5 and later, a user
//! thread per CPU reading `osnoise/per_cpu/cpuN/timerlat_fd`) configured by files of
//! tracefs's top level, which an instance does not have of its own: whoever sets them
//! changes them for everyone, and removing an instance restores none of them. So
//! [`OsnoiseSettings`] reads each before changing any and writes them back when
//! dropped — and keeps them in a file named with latlab's pid until then, so that a
//! latlab killed with SIGKILL has them restored by the next run ([`sweep_stale`]).
//! Only one kind of these tracers runs at a time, in any number of instances that then
//! share the settings: [`in_use`] says whether another tool runs one.

use super::{tracefs_root, why_no_tracefs, TraceError, PREFIX};
use crate::process;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The settings the tracers share, relative to the tracefs root, in the order they
/// are restored (`options` before the rest: it decides which threads run).
const SETTINGS: [&str; 9] = [
    "osnoise/options",
    "osnoise/cpus",
    "osnoise/period_us",
    "osnoise/runtime_us",
    "osnoise/stop_tracing_us",
    "osnoise/stop_tracing_total_us",
    "osnoise/timerlat_period_us",
    "osnoise/print_stack",
    "tracing_thresh",
];

/// One of the two tracers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelTracer {
    /// Periodic wake-up latency of a per-CPU thread (`timerlat`).
    Timerlat,
    /// Noise seen by a per-CPU busy loop (`osnoise`).
    Osnoise,
}

impl KernelTracer {
    /// Its name in `current_tracer`.
    pub fn name(self) -> &'static str {
        match self {
            KernelTracer::Timerlat => "timerlat",
            KernelTracer::Osnoise => "osnoise",
        }
    }
}

/// Whether the kernel offers `tracer`: its tracefs root, or why not (no tracefs, no
/// permission, a kernel built without it).
pub fn available(tracer: KernelTracer) -> Result<PathBuf, TraceError> {
    let root = tracefs_root().ok_or_else(why_no_tracefs)?;
    let listed = root.join("available_tracers");
    let offered = fs::read_to_string(&listed).map_err(|e| TraceError::io("read", &listed, e))?;
    let offered: Vec<&str> = offered.split_whitespace().collect();
    if !offered.contains(&tracer.name()) || !root.join("osnoise").is_dir() {
        return Err(TraceError::NoTracer {
            tracer: tracer.name().to_string(),
            offered: offered.join(", "),
        });
    }
    Ok(root)
}

/// Who else runs timerlat or osnoise: the first instance (or the top level) whose
/// `current_tracer` is one of them, not counting `own` (an instance directory).
pub fn in_use(root: &Path, own: Option<&Path>) -> Option<(PathBuf, String)> {
    let instances = fs::read_dir(root.join("instances"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path());
    std::iter::once(root.to_path_buf())
        .chain(instances)
        .filter(|dir| Some(dir.as_path()) != own)
        .find_map(|dir| {
            let tracer = fs::read_to_string(dir.join("current_tracer")).ok()?;
            let tracer = tracer.trim();
            matches!(tracer, "timerlat" | "osnoise").then(|| (dir, tracer.to_string()))
        })
}

/// The file of CPU `cpu` a user thread reads to be timerlat's workload there (kernels
/// 6.5 and later), if the kernel has it.
pub fn timerlat_fd(root: &Path, cpu: usize) -> Option<PathBuf> {
    let path = root.join(format!("osnoise/per_cpu/cpu{cpu}/timerlat_fd"));
    path.exists().then_some(path)
}

/// The tracers' shared settings as they were, written back when dropped.
#[derive(Debug)]
pub struct OsnoiseSettings {
    root: PathBuf,
    /// (file relative to the root, its value) for each setting this kernel has.
    saved: Vec<(String, String)>,
    /// Where they are kept until restored, for a run killed before it could.
    state: Option<PathBuf>,
    restored: bool,
}

impl OsnoiseSettings {
    /// Reads every setting this kernel has, and keeps them in a state file.
    pub fn save(root: &Path) -> Result<OsnoiseSettings, TraceError> {
        let mut saved = Vec::new();
        for file in SETTINGS {
            let path = root.join(file);
            match super::read_at_once(&path) {
                Ok(value) => saved.push((file.to_string(), value.trim().to_string())),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(TraceError::io("read a tracer setting", &path, e)),
            }
        }
        let state = state_dir()
            .ok()
            .map(|dir| dir.join(format!("{PREFIX}{}-osnoise", std::process::id())));
        if let Some(path) = &state {
            // A run that cannot keep them still restores them when it ends.
            let _ = write_state(path, root, &saved);
        }
        Ok(OsnoiseSettings {
            root: root.to_path_buf(),
            saved,
            state,
            restored: false,
        })
    }

    /// Sets `file` (relative to the tracefs root: `osnoise/timerlat_period_us`).
    pub fn set(&self, file: &str, value: &str) -> Result<(), TraceError> {
        let path = self.root.join(file);
        fs::write(&path, value).map_err(|e| match e.raw_os_error() {
            Some(libc::EINVAL) => TraceError::Io {
                what: "set a tracer setting (the kernel refused the value)",
                path: path.clone(),
                source: io::Error::new(io::ErrorKind::InvalidInput, format!("'{value}'")),
            },
            _ => TraceError::io("set a tracer setting", &path, e),
        })
    }

    /// Writes every setting back, then forgets the state file; says what failed.
    pub fn restore(&mut self) -> Result<(), TraceError> {
        if self.restored {
            return Ok(());
        }
        let result = restore_all(&self.root, &self.saved);
        if result.is_ok() {
            self.restored = true;
            if let Some(state) = &self.state {
                let _ = fs::remove_file(state);
            }
        }
        result
    }
}

impl Drop for OsnoiseSettings {
    fn drop(&mut self) {
        let _ = self.restore();
    }
}

/// Writes `saved` back under `root`. `options` is a list of flags, each written on its
/// own (`OSNOISE_WORKLOAD` or `NO_OSNOISE_WORKLOAD`); `DEFAULTS` is not a flag.
fn restore_all(root: &Path, saved: &[(String, String)]) -> Result<(), TraceError> {
    let mut writes = Vec::new();
    for (file, value) in saved {
        let path = root.join(file);
        match file.ends_with("/options") {
            true => writes.extend(
                value
                    .split_whitespace()
                    .filter(|f| *f != "DEFAULTS")
                    .map(|flag| (path.clone(), flag)),
            ),
            false => writes.push((path, value.as_str())),
        }
    }
    // Settings checked against each other (a runtime at most its period) may be
    // refused in one order and taken in the other: those refused are written again
    // after the rest.
    let refused: Vec<_> = writes
        .into_iter()
        .filter(|(path, value)| fs::write(path, value).is_err())
        .collect();
    let mut first_error = None;
    for (path, value) in refused {
        if let Err(e) = fs::write(&path, value) {
            first_error.get_or_insert(TraceError::io("restore a tracer setting", &path, e));
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// Where the settings wait to be restored: a directory of root's own.
fn state_dir() -> io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let dir = PathBuf::from("/run/latlab");
    match fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => Ok(dir),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(dir),
        Err(e) => Err(e),
    }
}

/// The state file: the tracefs root on the first line, then `file value` per line;
/// written to a temporary file and renamed.
fn write_state(path: &Path, root: &Path, saved: &[(String, String)]) -> io::Result<()> {
    let mut text = format!("{}\n", root.display());
    for (file, value) in saved {
        text.push_str(&format!("{file} {value}\n"));
    }
    let temporary = path.with_extension("tmp");
    fs::write(&temporary, text)?;
    fs::rename(&temporary, path)
}

/// Reads a state file back: the root and the settings.
fn read_state(path: &Path) -> Option<(PathBuf, Vec<(String, String)>)> {
    let text = fs::read_to_string(path).ok()?;
    let mut lines = text.lines();
    let root = PathBuf::from(lines.next()?);
    let saved = lines
        .filter_map(|line| {
            let (file, value) = line.split_once(' ')?;
            SETTINGS
                .contains(&file)
                .then(|| (file.to_string(), value.to_string()))
        })
        .collect();
    Some((root, saved))
}

/// The owner pid of a state file's name: `latlab-<pid>-osnoise`.
fn owner_of(name: &str) -> Option<u32> {
    name.strip_prefix(PREFIX)?
        .strip_suffix("-osnoise")?
        .parse()
        .ok()
}

/// Restores the settings a latlab that no longer runs left changed, unless another
/// tool runs one of the tracers now (it set them since); returns what it did, in
/// words.
pub fn sweep_stale() -> Vec<String> {
    let Ok(dir) = state_dir() else {
        return Vec::new();
    };
    let mut done = Vec::new();
    for left in process::leftovers(&dir, owner_of, |t| t.is_file()) {
        let Some((root, saved)) = read_state(&left.path) else {
            let _ = fs::remove_file(&left.path);
            continue;
        };
        if in_use(&root, None).is_some() {
            continue;
        }
        if restore_all(&root, &saved).is_ok() {
            let _ = fs::remove_file(&left.path);
            done.push(format!(
                "the timerlat/osnoise settings under {} (of latlab pid {})",
                root.join("osnoise").display(),
                left.owner
            ));
        }
    }
    done
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_files_name_their_owner_and_round_trip() {
        assert_eq!(owner_of("latlab-42-osnoise"), Some(42));
        assert_eq!(owner_of("latlab-42"), None);
        assert_eq!(owner_of("rtla-42-osnoise"), None);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("latlab-42-osnoise");
        let saved = vec![
            (
                "osnoise/options".to_string(),
                "DEFAULTS OSNOISE_WORKLOAD".to_string(),
            ),
            ("osnoise/cpus".to_string(), "0-3".to_string()),
        ];
        write_state(&path, Path::new("/sys/kernel/tracing"), &saved).unwrap();
        let (root, read) = read_state(&path).unwrap();
        assert_eq!(root, Path::new("/sys/kernel/tracing"));
        assert_eq!(read, saved);
    }

    #[test]
    fn settings_are_restored_flag_by_flag_into_a_tree_like_tracefs() {
        let root = tempfile::tempdir().unwrap();
        fs::create_dir(root.path().join("osnoise")).unwrap();
        for (file, value) in [
            (
                "osnoise/options",
                "DEFAULTS OSNOISE_WORKLOAD NO_PANIC_ON_STOP\n",
            ),
            ("osnoise/timerlat_period_us", "1000\n"),
            ("tracing_thresh", "0\n"),
        ] {
            fs::write(root.path().join(file), value).unwrap();
        }
        let mut settings = OsnoiseSettings::save(root.path()).unwrap();
        settings.set("osnoise/timerlat_period_us", "250").unwrap();
        settings
            .set("osnoise/options", "NO_OSNOISE_WORKLOAD")
            .unwrap();
        settings.restore().unwrap();
        let read = |file: &str| fs::read_to_string(root.path().join(file)).unwrap();
        assert_eq!(read("osnoise/timerlat_period_us"), "1000");
        // A file, not the kernel's flag list: the last flag written stays.
        assert_eq!(read("osnoise/options"), "NO_PANIC_ON_STOP");
        assert_eq!(read("tracing_thresh"), "0");
    }
}
