//! Other tools' result files (and latlab's own Run JSON) read into Runs for `latlab
//! import`: every file read and checked before anything is saved, each with the hash
//! of its content, and a plan of what to save and what to skip. A stored run is never
//! replaced, but for a run the store holds only as a checkpoint (running, or died) and
//! the file holds whole: latlab keeps a run in a file when its final save fails, and
//! its import completes the partial copy. Content imported before is recognised and
//! skipped, and a run whose id the store holds for a different run refuses the whole
//! import.

use crate::error::CliError;
use latlab_formats::import::{self, Format, ImportContext, DETECT_BYTES};
use latlab_model::run::Run;
use latlab_store::RunStore;
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{BufReader, Cursor, Read};
use std::path::{Path, PathBuf};

/// Large reads: a cyclictest -v log can be gigabytes.
const READ_BUFFER: usize = 1 << 20;

/// A file read and checked, not yet saved.
pub struct ReadFile {
    /// The file.
    pub path: PathBuf,
    /// The format it was read as.
    pub format: String,
    /// Its Run.
    pub run: Run,
    /// SHA-256 of the file's content, hex.
    pub sha256: String,
}

/// What to do with one file.
pub enum Import {
    /// Store it.
    Save(Box<ReadFile>),
    /// Its run is in the store already (or earlier on the command line): why.
    Skip(String),
    /// Its run is in the store as a checkpoint of it (running, or died), which the
    /// whole run replaces: how the stored copy stood.
    Complete(Box<ReadFile>, String),
    /// Its content was imported before, and read now as something else (another
    /// `--unit` or `--period`): the run read now replaces the earlier one, whose id,
    /// name, tags and note it takes.
    Reread(Box<ReadFile>),
}

/// Decides for every file before anything is saved: content imported before is
/// skipped, and a run whose id the store holds for a different run refuses the whole
/// import (exit 2), naming both.
pub fn plan_imports(store: &dyn RunStore, files: Vec<ReadFile>) -> Result<Vec<Import>, CliError> {
    let mut plan: Vec<Import> = Vec::with_capacity(files.len());
    for file in files {
        let name = file.path.display().to_string();
        if let Some(id) = store.imported_from(&file.sha256)? {
            let earlier = store.load(&id).map_err(CliError::runtime)?;
            match earlier {
                Some(earlier) if !same_figures(&earlier, &file.run) => {
                    let mut file = file;
                    file.run.id = earlier.id.clone();
                    file.run.name = file.run.name.take().or(earlier.name);
                    if file.run.tags.is_empty() {
                        file.run.tags = earlier.tags;
                    }
                    file.run.note = file.run.note.take().or(earlier.note);
                    plan.push(Import::Reread(Box::new(file)));
                }
                _ => plan.push(Import::Skip(format!(
                    "{name} was imported before (same content) as run {id}, read the same \
                     way"
                ))),
            }
            continue;
        }
        let earlier = plan.iter().find_map(|p| match p {
            Import::Save(f) if f.sha256 == file.sha256 || f.run.id == file.run.id => Some(f),
            _ => None,
        });
        if let Some(earlier) = earlier {
            if earlier.sha256 != file.sha256 && earlier.run != file.run {
                return Err(CliError::config(format!(
                    "{name} and {} hold different runs with one id, {}; nothing was \
                     imported. Give one of them another \"id\"",
                    earlier.path.display(),
                    file.run.id
                )));
            }
            plan.push(Import::Skip(format!(
                "{name} holds the same run as {}",
                earlier.path.display()
            )));
            continue;
        }
        if let Some(stored) = store.load(&file.run.id).map_err(CliError::runtime)? {
            if let Some(progress) = completes(&stored, &file.run) {
                plan.push(Import::Complete(Box::new(file), progress));
                continue;
            }
            if stored == file.run {
                plan.push(Import::Skip(format!(
                    "{name} holds run {}, which the store holds already",
                    stored.id
                )));
                continue;
            }
            return Err(CliError::config(format!(
                "{name} holds run {id}, but the store at {store} already holds a different \
                 run with that id (started {started} on {host}); a stored run is never \
                 replaced, so nothing was imported. To keep both, give the run in {name} \
                 another \"id\"",
                id = stored.id,
                store = store.location(),
                started = stored.started_at.as_deref().unwrap_or("at an unknown time"),
                host = stored
                    .host
                    .as_ref()
                    .map_or("an unknown host", |h| &h.hostname),
            )));
        }
        plan.push(Import::Save(Box::new(file)));
    }
    Ok(plan)
}

/// How `stored` stood, when `run` is its whole form: the store holds the run only as a
/// checkpoint (running, or died) and `run` is the same run (its host and command line,
/// started no earlier), ended.
fn completes(stored: &Run, run: &Run) -> Option<String> {
    let progress = stored.progress.as_ref()?;
    let host = |r: &Run| r.host.as_ref().map(|h| h.hostname.clone());
    // The record saved as the run started is stamped before its first phase starts,
    // so its start may be a little earlier than the whole run's (both are latlab's
    // fixed-width RFC 3339 UTC text, which orders as the instants do).
    let began_before = match (&stored.started_at, &run.started_at) {
        (Some(stored), Some(run)) => stored <= run,
        _ => false,
    };
    let same = began_before && host(stored) == host(run) && stored.command_line == run.command_line;
    (same && run.progress.is_none()).then(|| progress.describe())
}

/// Whether two reads of one file gave the same figures: the same streams, counted and
/// measured alike (a read with another `--unit` or `--period` gives others).
fn same_figures(a: &Run, b: &Run) -> bool {
    let figures = |r: &Run| -> Vec<String> {
        r.streams
            .iter()
            .map(|s| {
                format!(
                    "{:?} {:?} {:?} {:?} {:?}",
                    s.samples, s.missed_periods, s.period_ns, s.stats, s.histogram
                )
            })
            .collect()
    };
    figures(a) == figures(b)
}

/// Feeds everything read through it to a SHA-256.
struct Hashing<R> {
    inner: R,
    hasher: Sha256,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

impl<R: Read> Hashing<R> {
    /// Reads what is left, then gives the hash of the whole content.
    fn finish(mut self) -> std::io::Result<String> {
        std::io::copy(&mut self, &mut std::io::sink())?;
        Ok(self
            .hasher
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect())
    }
}

/// One file as a Run, with the name of the format it was read as and the hash of its
/// content.
pub fn read(
    file: &Path,
    forced: Option<Format>,
    ctx: &ImportContext,
) -> Result<ReadFile, CliError> {
    let cannot =
        |e: std::io::Error| CliError::config(format!("{}: cannot read: {e}", file.display()));
    let mut handle = Hashing {
        inner: File::open(file).map_err(cannot)?,
        hasher: Sha256::new(),
    };
    let mut head = Vec::with_capacity(DETECT_BYTES);
    (&mut handle)
        .take(DETECT_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(cannot)?;
    let read_file = |format: String, run: Run, handle: Hashing<File>| {
        Ok(ReadFile {
            path: file.to_path_buf(),
            format,
            run,
            sha256: handle.finish().map_err(cannot)?,
        })
    };
    if forced.is_none() && Run::looks_like_run(&head) {
        let mut text = String::from_utf8(head)
            .map_err(|_| CliError::config(format!("{}: not UTF-8 text", file.display())))?;
        handle.read_to_string(&mut text).map_err(cannot)?;
        let run = Run::from_json(&text)
            .map_err(|e| CliError::config(format!("{}: {e}", file.display())))?;
        // Shipped with latlab, named by ref:NAME: a stored copy would be shadowed by it.
        if run.published.is_some() {
            return Err(CliError::config(format!(
                "{}: holds the published reference {}, which latlab ships: name it as {} \
                 wherever a run is named, without importing it",
                file.display(),
                run.id,
                run.id
            )));
        }
        return read_file("latlab run JSON".to_string(), run, handle);
    }
    let format = match forced.or_else(|| import::detect(&head)) {
        Some(format) => format,
        None => {
            return Err(CliError::config(format!(
                "{}: not a format latlab recognises; if it is one of {}, name it with --format",
                file.display(),
                format_names()
            )))
        }
    };
    let input = BufReader::with_capacity(READ_BUFFER, Cursor::new(head).chain(&mut handle));
    let run = import::import(format, input, ctx).map_err(CliError::config)?;
    read_file(format.name().to_string(), run, handle)
}

/// The import formats' names, for messages.
pub fn format_names() -> String {
    Format::ALL
        .iter()
        .map(|f| f.name())
        .collect::<Vec<_>>()
        .join(", ")
}
