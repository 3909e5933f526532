//! Where the Run JSON goes (`--json FILE`), opened before measuring so a bad path
//! fails at once, and written so that a failure never leaves a half-written file.

use crate::error::CliError;
use crate::output::Human;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The destination of `--json`.
pub enum JsonTarget {
    /// `-`: standard output.
    Stdout,
    /// A regular file, new or existing: written to a temporary file beside it, then
    /// renamed over it.
    File {
        /// The destination.
        path: PathBuf,
        /// The temporary file, removed unless the rename happened.
        temp: PathBuf,
        /// Whether the rename happened.
        committed: bool,
    },
    /// Anything else that opens for writing: a pipe, a FIFO, `/dev/null`.
    Stream {
        /// The destination.
        path: PathBuf,
        /// It, open.
        file: File,
    },
}

fn unwritable(path: &Path, e: impl std::fmt::Display) -> CliError {
    CliError::usage(
        "--json",
        format!(
            "cannot write {}: {e}; choose a writable path",
            path.display()
        ),
    )
}

impl JsonTarget {
    /// Resolves and checks the destination.
    pub fn open(target: &Path) -> Result<JsonTarget, CliError> {
        if target == Path::new("-") {
            return Ok(JsonTarget::Stdout);
        }
        let path = target.to_path_buf();
        if let Ok(meta) = fs::metadata(&path) {
            if meta.is_dir() {
                return Err(unwritable(&path, "it is a directory"));
            }
            if !meta.is_file() {
                let file = OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .map_err(|e| unwritable(&path, e))?;
                return Ok(JsonTarget::Stream { path, file });
            }
        }
        let name = path
            .file_name()
            .ok_or_else(|| unwritable(&path, "it names no file"))?;
        let temp = path.with_file_name(format!(
            ".{}.latlab-{}.tmp",
            name.to_string_lossy(),
            std::process::id()
        ));
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)
            .map_err(|e| unwritable(&path, e))?;
        Ok(JsonTarget::File {
            path,
            temp,
            committed: false,
        })
    }

    /// The destination's path, for messages (`None` for stdout).
    pub fn path(&self) -> Option<&Path> {
        match self {
            JsonTarget::Stdout => None,
            JsonTarget::File { path, .. } | JsonTarget::Stream { path, .. } => Some(path),
        }
    }

    /// Writes the document.
    pub fn write(&mut self, json: &str) -> Result<(), CliError> {
        match self {
            JsonTarget::Stdout => Human::Stdout.write(&format!("{json}\n")),
            JsonTarget::Stream { path, file } => file
                .write_all(json.as_bytes())
                .and_then(|_| file.write_all(b"\n"))
                .map_err(|e| CliError::runtime(format!("cannot write {}: {e}", path.display()))),
            JsonTarget::File {
                path,
                temp,
                committed,
            } => {
                let written = File::create(&*temp).and_then(|mut f| {
                    f.write_all(json.as_bytes())?;
                    f.write_all(b"\n")?;
                    f.sync_all()
                });
                written
                    .and_then(|_| fs::rename(&*temp, &*path))
                    .map_err(|e| {
                        CliError::runtime(format!("cannot write {}: {e}", path.display()))
                    })?;
                *committed = true;
                Ok(())
            }
        }
    }
}

impl Drop for JsonTarget {
    fn drop(&mut self) {
        if let JsonTarget::File {
            temp,
            committed: false,
            ..
        } = self
        {
            let _ = fs::remove_file(temp);
        }
    }
}
