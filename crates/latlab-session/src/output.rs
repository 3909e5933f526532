//! Where output goes: human output that survives a closed pipe, and output files
//! (`--json`, `-o`) that are written whole or not at all.

use crate::error::{exit, CliError};
use std::fs::{self, File, OpenOptions};
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};

/// Treats a closed pipe as done rather than as an error.
pub fn ignore_closed(result: Result<(), CliError>) -> Result<(), CliError> {
    match result {
        Err(e) if e.code == exit::OK => Ok(()),
        other => other,
    }
}

/// The human-facing stream: stdout, or stderr when stdout carries JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Human {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

impl Human {
    /// True when the stream is a terminal.
    pub fn is_terminal(self) -> bool {
        match self {
            Human::Stdout => io::stdout().is_terminal(),
            Human::Stderr => io::stderr().is_terminal(),
        }
    }

    /// Writes text. A closed pipe ends the program quietly with exit code 0, as a
    /// pager or `head` closing the pipe is not an error.
    pub fn write(self, text: &str) -> Result<(), CliError> {
        self.write_bytes(text.as_bytes())
    }

    /// Writes bytes, as [`Human::write`] writes text.
    pub fn write_bytes(self, bytes: &[u8]) -> Result<(), CliError> {
        let result = match self {
            Human::Stdout => {
                let mut out = io::stdout().lock();
                out.write_all(bytes).and_then(|_| out.flush())
            }
            Human::Stderr => {
                let mut out = io::stderr().lock();
                out.write_all(bytes).and_then(|_| out.flush())
            }
        };
        result.map_err(|e| {
            if e.kind() == io::ErrorKind::BrokenPipe {
                CliError {
                    code: exit::OK,
                    message: String::new(),
                }
            } else {
                CliError::runtime(format!("cannot write output: {e}"))
            }
        })
    }
}

/// A file written whole or not at all: the content goes to a temporary file beside the
/// destination (`.NAME.latlab-PID.tmp`, created at once so a bad path fails before any
/// work), is synced, then renamed over the destination. Until the rename an existing
/// file stays as it was; on any failure, or when dropped unwritten, the temporary file
/// is removed. The pid in its name lets a later latlab remove one that a killed latlab
/// left ([`sweep_stale_temps`]).
pub struct OutputFile {
    path: PathBuf,
    temp: PathBuf,
    file: Option<File>,
}

/// The temporary name of `path` for process `pid` (with `tag`, for a second writer of
/// the same destination in the process).
fn temp_name(path: &Path, pid: u32, tag: Option<&str>) -> Option<PathBuf> {
    let name = path.file_name()?.to_string_lossy();
    Some(path.with_file_name(match tag {
        None => format!(".{name}.latlab-{pid}.tmp"),
        Some(tag) => format!(".{name}.{tag}.latlab-{pid}.tmp"),
    }))
}

/// The pid in a temporary file's name, if it is one of ours.
fn temp_owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix('.')?.strip_suffix(".tmp")?;
    let (_, pid) = rest.rsplit_once(".latlab-")?;
    pid.parse().ok()
}

impl OutputFile {
    /// Creates the temporary file for `path`. An existing destination keeps what it
    /// was: a symbolic link stays one (its target is replaced), and a file keeps its
    /// permissions.
    pub fn create(path: &Path) -> io::Result<OutputFile> {
        OutputFile::create_tagged(path, None)
    }

    /// [`create`](OutputFile::create), with `tag` in the temporary file's name: for a
    /// writer of a destination that another [`OutputFile`] of this process is pending
    /// for (a checkpoint of the `--json` file).
    pub fn create_tagged(path: &Path, tag: Option<&str>) -> io::Result<OutputFile> {
        let link_target = fs::symlink_metadata(path)
            .is_ok_and(|m| m.file_type().is_symlink())
            .then(|| fs::canonicalize(path).ok())
            .flatten();
        let path = link_target.as_deref().unwrap_or(path);
        let temp = temp_name(path, std::process::id(), tag)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "it names no file"))?;
        let create = || OpenOptions::new().write(true).create_new(true).open(&temp);
        let file = match create() {
            // Ours by name, yet not made by this process: left by a dead one that had
            // the same pid.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                fs::remove_file(&temp)?;
                create()?
            }
            other => other?,
        };
        if let Ok(existing) = fs::metadata(path) {
            file.set_permissions(existing.permissions())?;
        }
        Ok(OutputFile {
            path: path.to_path_buf(),
            temp,
            file: Some(file),
        })
    }

    /// Writes `bytes` and puts them in place.
    pub fn commit(mut self, bytes: &[u8]) -> io::Result<()> {
        let mut file = self.file.take().expect("committed once");
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        fs::rename(&self.temp, &self.path)?;
        // Renamed: nothing left to remove. The directory entry is made durable too, so
        // a crash right after cannot bring the old file back.
        self.temp = PathBuf::new();
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            let _ = File::open(dir).and_then(|d| d.sync_all());
        }
        Ok(())
    }
}

impl Drop for OutputFile {
    fn drop(&mut self) {
        if !self.temp.as_os_str().is_empty() {
            let _ = fs::remove_file(&self.temp);
        }
    }
}

/// Removes the temporary output files in `dir` that a latlab killed while writing
/// left behind: those of this user whose owner's pid is no longer running. Returns
/// what was removed.
pub fn sweep_stale_temps(dir: &Path) -> Vec<PathBuf> {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    latlab_rt::process::leftovers(dir, temp_owner, |t| t.is_file())
        .into_iter()
        .filter(|left| fs::remove_file(&left.path).is_ok())
        .map(|left| left.path)
        .collect()
}

/// Says on standard error what was removed of what killed latlab runs left behind.
pub fn say_removed(removed: &[String]) {
    if removed.is_empty() {
        return;
    }
    let _ = Human::Stderr.write(&format!(
        "latlab: removed what latlab runs that were killed left behind: {}\n",
        removed.join(", ")
    ));
}

/// Sweeps the temporary files a killed latlab left beside the output `target` (see
/// [`sweep_stale_temps`]); returns what was removed.
pub fn sweep_beside(target: &Path) -> Vec<String> {
    if target == Path::new("-") {
        return Vec::new();
    }
    let dir = target.parent().unwrap_or(Path::new("."));
    sweep_stale_temps(dir)
        .iter()
        .map(|p| p.display().to_string())
        .collect()
}

/// Where an output goes (`--json`, `-o`): standard output, a file written whole
/// ([`OutputFile`]), or anything else that opens for writing (a pipe, a FIFO,
/// `/dev/null`), written directly.
pub enum OutputTarget {
    /// `-`: standard output.
    Stdout,
    /// A regular file, new or existing.
    File {
        /// The destination.
        path: PathBuf,
        /// Its temporary file, until written.
        pending: Option<OutputFile>,
    },
    /// A FIFO, a device: written in place, as nothing can be renamed over it.
    Stream {
        /// The destination.
        path: PathBuf,
        /// It, open.
        file: File,
    },
}

impl OutputTarget {
    /// What every output flag of latlab (`--json`, `--output`) goes through: a path
    /// that is the run store (`store`, or the default one) is refused, what a killed
    /// latlab left beside it is swept, and it is opened as [`OutputTarget::open`] does,
    /// all before any work is done.
    pub fn checked(
        flag: &str,
        target: &Path,
        store: Option<&Path>,
    ) -> Result<OutputTarget, CliError> {
        let default_store = latlab_store::default_path();
        let mut stores = vec![default_store.as_path()];
        stores.extend(store);
        refuse_store_path(flag, target, &stores)?;
        say_removed(&sweep_beside(target));
        OutputTarget::open(flag, target)
    }

    /// Resolves and checks the destination given with `flag`; a path that cannot be
    /// written is a usage error (exit 2), found before any work is done.
    pub fn open(flag: &str, target: &Path) -> Result<OutputTarget, CliError> {
        if target == Path::new("-") {
            return Ok(OutputTarget::Stdout);
        }
        let unwritable = |e: &dyn std::fmt::Display| {
            CliError::usage(
                flag,
                format!(
                    "cannot write {}: {e}; choose a writable path",
                    target.display()
                ),
            )
        };
        if let Ok(meta) = fs::metadata(target) {
            if meta.is_dir() {
                return Err(unwritable(&"it is a directory"));
            }
            if !meta.is_file() {
                let file = OpenOptions::new()
                    .write(true)
                    .open(target)
                    .map_err(|e| unwritable(&e))?;
                return Ok(OutputTarget::Stream {
                    path: target.to_path_buf(),
                    file,
                });
            }
        }
        let file = OutputFile::create(target).map_err(|e| unwritable(&e))?;
        Ok(OutputTarget::File {
            path: target.to_path_buf(),
            pending: Some(file),
        })
    }

    /// The destination's path, for messages (`None` for stdout).
    pub fn path(&self) -> Option<&Path> {
        match self {
            OutputTarget::Stdout => None,
            OutputTarget::File { path, .. } | OutputTarget::Stream { path, .. } => Some(path),
        }
    }

    /// Writes the whole content, once. A closed standard output is the error with
    /// exit code 0 (see [`Human::write`]).
    pub fn write(&mut self, content: &[u8]) -> Result<(), CliError> {
        match self {
            OutputTarget::Stdout => Human::Stdout.write_bytes(content),
            OutputTarget::Stream { path, file } => file
                .write_all(content)
                .map_err(|e| CliError::runtime(format!("cannot write {}: {e}", path.display()))),
            OutputTarget::File { path, pending } => pending
                .take()
                .expect("an output is written once")
                .commit(content)
                .map_err(|e| {
                    CliError::runtime(format!(
                        "cannot write {}: {e}; nothing was changed there",
                        path.display()
                    ))
                }),
        }
    }
}

/// The files that make up the SQLite store at `store`: the database and the journals
/// SQLite keeps beside it.
fn store_files(store: &Path) -> Vec<PathBuf> {
    let mut files = vec![store.to_path_buf()];
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut name = store.as_os_str().to_owned();
        name.push(suffix);
        files.push(PathBuf::from(name));
    }
    files
}

/// `path` with its directory resolved (links, `..`), for comparing a file that may not
/// exist yet.
fn resolved(path: &Path) -> Option<PathBuf> {
    if let Ok(p) = fs::canonicalize(path) {
        return Some(p);
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    Some(fs::canonicalize(dir).ok()?.join(path.file_name()?))
}

/// True when `a` and `b` are one file: the same device and inode when both exist, else
/// the same resolved path.
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (fs::metadata(a), fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => resolved(a).is_some_and(|a| Some(a) == resolved(b)),
    }
}

/// Refuses an output path (given with `flag`) that is one of the run stores `stores`
/// or a journal of one: writing there would destroy every stored run. Exit code 2.
pub fn refuse_store_path(flag: &str, target: &Path, stores: &[&Path]) -> Result<(), CliError> {
    if target == Path::new("-") {
        return Ok(());
    }
    for store in stores {
        if let Some(file) = store_files(store).iter().find(|f| same_file(target, f)) {
            let what = if file.as_path() == *store {
                "the run store".to_string()
            } else {
                format!("a journal of the run store {}", store.display())
            };
            return Err(CliError::usage(
                flag,
                format!(
                    "{} is {what}: writing there would destroy the stored runs; choose \
                     another file",
                    target.display()
                ),
            ));
        }
    }
    // Another store (or any SQLite database) is no output file either.
    let mut head = [0u8; 16];
    let is_database = File::open(target)
        .and_then(|mut f| io::Read::read_exact(&mut f, &mut head))
        .is_ok_and(|_| &head == b"SQLite format 3\0");
    if is_database {
        return Err(CliError::usage(
            flag,
            format!(
                "{} is an SQLite database (another run store?): writing there would destroy \
                 it; choose another file",
                target.display()
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rewritten_file_keeps_its_permissions_and_a_link_stays_a_link() {
        use std::os::unix::fs::{symlink, PermissionsExt};
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("report.html");
        fs::write(&real, "old").unwrap();
        fs::set_permissions(&real, fs::Permissions::from_mode(0o600)).unwrap();
        OutputFile::create(&real).unwrap().commit(b"new").unwrap();
        let mode = fs::metadata(&real).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let link = dir.path().join("link.html");
        symlink(&real, &link).unwrap();
        OutputFile::create(&link).unwrap().commit(b"newer").unwrap();
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read_to_string(&real).unwrap(), "newer");
    }

    #[test]
    fn another_sqlite_database_is_no_output_file() {
        let dir = tempfile::tempdir().unwrap();
        let other = dir.path().join("other.sqlite");
        fs::write(&other, b"SQLite format 3\0and the rest").unwrap();
        let e = refuse_store_path("-o", &other, &[]).unwrap_err();
        assert_eq!(e.code, exit::USAGE);
        assert!(e.message.contains("SQLite database"), "{}", e.message);
        let text = dir.path().join("out.csv");
        fs::write(&text, "run,phase\n").unwrap();
        assert!(refuse_store_path("-o", &text, &[]).is_ok());
    }

    #[test]
    fn temporary_names_give_back_their_owner() {
        let temp = temp_name(Path::new("/x/out.json"), 4_194_303, None).unwrap();
        assert_eq!(temp, Path::new("/x/.out.json.latlab-4194303.tmp"));
        let name = temp.file_name().unwrap().to_str().unwrap();
        assert_eq!(temp_owner(name), Some(4_194_303));
        let tagged = temp_name(Path::new("/x/out.json"), 12, Some("checkpoint")).unwrap();
        assert_eq!(tagged, Path::new("/x/.out.json.checkpoint.latlab-12.tmp"));
        let name = tagged.file_name().unwrap().to_str().unwrap();
        assert_eq!(temp_owner(name), Some(12));
        assert_eq!(temp_owner(".out.json.tmp"), None);
        assert_eq!(temp_owner("out.json.latlab-12.tmp"), None);
        assert_eq!(temp_owner(".a.latlab-b.latlab-7.tmp"), Some(7));
    }

    #[test]
    fn an_output_file_replaces_the_old_one_only_when_written_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.html");
        fs::write(&path, "old").unwrap();
        // Dropped unwritten (a failure on the way): the old file stays, no temp left.
        drop(OutputFile::create(&path).unwrap());
        assert_eq!(fs::read_to_string(&path).unwrap(), "old");
        OutputFile::create(&path).unwrap().commit(b"new").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "new");
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("report.html")]);
    }

    #[test]
    fn the_store_and_its_journals_are_refused_by_any_name() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("runs.sqlite");
        fs::write(&store, "").unwrap();
        let link = dir.path().join("link.sqlite");
        std::os::unix::fs::symlink(&store, &link).unwrap();
        let dotted = dir.path().join(".").join("runs.sqlite-wal");
        for target in [&store, &link, &dotted] {
            assert!(
                refuse_store_path("-o", target, &[&store]).is_err(),
                "{target:?}"
            );
        }
        let other = dir.path().join("runs.json");
        assert!(refuse_store_path("-o", &other, &[&store]).is_ok());
    }
}
