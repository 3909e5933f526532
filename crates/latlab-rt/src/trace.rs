//! tracefs: the trace marker and `tracing_on`, for `--breaktrace`; debugfs, for the
//! scheduler's state.
//!
//! When a latency above the limit is seen, the measuring thread writes a marker into
//! the trace and stops tracing, so the kernel's trace buffer ends at the event (the
//! method of the ftrace latency-tracer paper, and cyclictest's `-b`).

use crate::RtError;
use std::ffi::CString;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

const CANDIDATES: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// Open handles on tracefs, ready to be fired from a measuring loop.
#[derive(Debug)]
pub struct BreakTrace {
    root: PathBuf,
    marker: File,
    tracing_on: File,
    original_on: Option<String>,
    /// The note of `original_on` a sweep restores from after a killed run.
    note: Option<PathBuf>,
    mount: Option<MountGuard>,
    fired: AtomicBool,
}

/// Unmounts a tracefs latlab mounted, unless told to keep it.
#[derive(Debug)]
struct MountGuard {
    path: PathBuf,
    keep: bool,
    /// Busy when unmounted: detach it (it goes once unused) rather than leave it.
    detach_if_busy: bool,
}

impl Drop for MountGuard {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        if let Ok(path) = CString::new(self.path.as_os_str().as_encoded_bytes()) {
            // SAFETY: umount2 with a valid C string path we mounted ourselves. A mount
            // still in use (tracefs automounted inside debugfs) goes once unused.
            unsafe {
                if libc::umount2(path.as_ptr(), 0) != 0 && self.detach_if_busy {
                    libc::umount2(path.as_ptr(), libc::MNT_DETACH);
                }
            }
        }
    }
}

impl BreakTrace {
    /// Finds tracefs (mounting it at `/sys/kernel/tracing` if needed), opens the marker
    /// and `tracing_on`, and turns tracing on.
    pub fn open() -> Result<BreakTrace, RtError> {
        // Held from the moment of mounting, so every error below unmounts again.
        let (root, mount) = match find_tracefs() {
            Some(root) => (root, None),
            None => {
                let root = mount_tracefs()?;
                let guard = MountGuard {
                    path: root.clone(),
                    keep: false,
                    detach_if_busy: true,
                };
                (root, Some(guard))
            }
        };
        let open = |name: &str| {
            OpenOptions::new()
                .write(true)
                .open(root.join(name))
                .map_err(|e| RtError::new(format!("open {}", root.join(name).display()), e))
        };
        let marker = open("trace_marker")?;
        let mut tracing_on = open("tracing_on")?;
        let original_on = fs::read_to_string(root.join("tracing_on"))
            .ok()
            .map(|s| s.trim().to_string());
        // Noted first: a run killed from here on leaves tracing on, and the note is how
        // the next run's sweep knows to turn it off again. Noted also when tracing was
        // on already: while this run lives, no sweep turns tracing off under it.
        let note = match original_on.as_deref() {
            Some(found) => Some(note_tracing_on(&root, found)?),
            None => None,
        };
        tracing_on
            .write_all(b"1")
            .map_err(|e| RtError::new("turn tracing on", e))?;
        Ok(BreakTrace {
            root,
            marker,
            tracing_on,
            original_on,
            note,
            mount,
            fired: AtomicBool::new(false),
        })
    }

    /// Where tracefs is mounted.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// True once [`fire`](BreakTrace::fire) has run.
    pub fn has_fired(&self) -> bool {
        self.fired.load(Ordering::Relaxed)
    }

    /// Writes `marker` into the trace and stops tracing. Only the first call acts;
    /// allocation-free, two `write()` calls.
    pub fn fire(&self, marker: &[u8]) -> bool {
        if self.fired.swap(true, Ordering::Relaxed) {
            return false;
        }
        // SAFETY: writes from valid byte slices to file descriptors we own.
        unsafe {
            libc::write(
                self.marker.as_raw_fd(),
                marker.as_ptr() as *const libc::c_void,
                marker.len(),
            );
            libc::write(
                self.tracing_on.as_raw_fd(),
                b"0".as_ptr() as *const libc::c_void,
                1,
            );
        }
        true
    }
}

impl Drop for BreakTrace {
    fn drop(&mut self) {
        if let Some(note) = &self.note {
            let _ = fs::remove_file(note);
        }
        if self.has_fired() {
            // The point of a break trace is the trace it leaves: keep it readable.
            if let Some(mount) = &mut self.mount {
                mount.keep = true;
            }
            return;
        }
        if let Some(orig) = &self.original_on {
            let _ = self.tracing_on.write_all(orig.as_bytes());
        }
        // `mount`, dropped after this, unmounts what latlab mounted.
    }
}

/// Where a run that turns tracing on notes the value it found (and the tracefs it
/// changed): `/dev/shm/latlab-tracing-on-<pid>`, removed when the run ends.
const NOTE_PREFIX: &str = "latlab-tracing-on-";

fn note_tracing_on(root: &Path, original: &str) -> Result<PathBuf, RtError> {
    let note = Path::new("/dev/shm").join(format!("{NOTE_PREFIX}{}", std::process::id()));
    let temp = note.with_extension("new");
    fs::write(&temp, format!("{original}\n{}\n", root.display()))
        .and_then(|()| fs::rename(&temp, &note))
        .map_err(|e| {
            let _ = fs::remove_file(&temp);
            RtError::new(format!("note tracing_on in {}", note.display()), e)
        })?;
    Ok(note)
}

/// Turns tracing back to what a killed `--breaktrace` run found (its note, when its
/// process no longer runs), and removes the note; says what it restored. While another
/// run's break trace is armed, nothing is touched: its run restores what it found, and
/// a later sweep what the killed one found.
pub fn sweep_tracing_on() -> Vec<String> {
    let owner_of = |name: &str| name.strip_prefix(NOTE_PREFIX)?.parse::<u32>().ok();
    let shm = Path::new("/dev/shm");
    // A break trace still armed (its run lives) keeps tracing on: not turned off under it.
    let armed_elsewhere = fs::read_dir(shm).into_iter().flatten().flatten().any(|e| {
        e.file_name()
            .to_str()
            .and_then(owner_of)
            .is_some_and(crate::process::is_alive)
    });
    let mut restored = Vec::new();
    if armed_elsewhere {
        // Kept for a sweep after that run has ended.
        return restored;
    }
    for left in crate::process::leftovers(shm, owner_of, |t| t.is_file()) {
        let note = fs::read_to_string(&left.path).unwrap_or_default();
        let mut lines = note.lines();
        if let (Some(value @ "0"), Some(root)) = (lines.next(), lines.next()) {
            let file = Path::new(root).join("tracing_on");
            if find_tracefs().is_some_and(|found| found == Path::new(root))
                && fs::write(&file, value).is_ok()
            {
                restored.push(format!(
                    "{} set back to {value} (latlab pid {} turned tracing on and was killed)",
                    file.display(),
                    left.owner
                ));
            }
        }
        let _ = fs::remove_file(&left.path);
    }
    restored
}

pub(crate) fn find_tracefs() -> Option<PathBuf> {
    CANDIDATES
        .iter()
        .map(PathBuf::from)
        .find(|p| p.join("trace_marker").exists())
}

fn mount_tracefs() -> Result<PathBuf, RtError> {
    mount("tracefs", CANDIDATES[0])?;
    Ok(PathBuf::from(CANDIDATES[0]))
}

/// Mounts a pseudo file system of type `fstype` on `target`.
fn mount(fstype: &str, target: &str) -> Result<(), RtError> {
    let c = |s: &str| CString::new(s).expect("static string without NUL");
    let (src, dst, kind) = (c("nodev"), c(target), c(fstype));
    // SAFETY: mount with valid C strings and no data pointer.
    let rc = unsafe {
        libc::mount(
            src.as_ptr(),
            dst.as_ptr(),
            kind.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        return Err(RtError::last(format!("mount {fstype} on {target}")));
    }
    Ok(())
}

/// Where debugfs is mounted on Linux.
const DEBUGFS: &str = "/sys/kernel/debug";

/// Whether a debugfs is mounted at `path` (its file system's magic number).
fn is_debugfs(path: &Path) -> bool {
    const DEBUGFS_MAGIC: i64 = 0x6462_6720;
    let Ok(c_path) = CString::new(path.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: statfs fills the zeroed struct it is given from a valid C string path.
    unsafe {
        let mut stat: libc::statfs = std::mem::zeroed();
        libc::statfs(c_path.as_ptr(), &mut stat) == 0 && stat.f_type as i64 == DEBUGFS_MAGIC
    }
}

/// debugfs at `/sys/kernel/debug`, mounted by latlab for as long as this lives (to
/// read the scheduler's state there), or found mounted already and left so.
#[derive(Debug)]
pub struct DebugfsMount {
    _mounted: Option<MountGuard>,
}

impl DebugfsMount {
    /// Mounts debugfs unless it is mounted already; only root may.
    pub fn ensure() -> Result<DebugfsMount, RtError> {
        let root = Path::new(DEBUGFS);
        if is_debugfs(root) {
            return Ok(DebugfsMount { _mounted: None });
        }
        mount("debugfs", DEBUGFS)?;
        Ok(DebugfsMount {
            // Someone who began using it while latlab held it keeps it mounted.
            _mounted: Some(MountGuard {
                path: root.to_path_buf(),
                keep: false,
                detach_if_busy: false,
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debugfs_is_mounted_for_as_long_as_needed_and_left_as_found() {
        assert!(!is_debugfs(Path::new("/proc")));
        let root = Path::new(DEBUGFS);
        let before = is_debugfs(root);
        let first = DebugfsMount::ensure().expect("root may mount debugfs");
        assert!(is_debugfs(root));
        // Mounted already: a second holder neither mounts nor unmounts it.
        drop(DebugfsMount::ensure().unwrap());
        assert!(is_debugfs(root));
        drop(first);
        assert_eq!(is_debugfs(root), before, "left as found");
    }
}
