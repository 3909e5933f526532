//! Keeping a measured Run where it was asked to go — the store, the `--json` output —
//! and, when neither took it, in a fallback file that `latlab import` stores later. A
//! measurement is never thrown away because a disk was full, a store locked, or a pipe
//! closed.

use crate::error::exit;
use crate::output::{OutputFile, OutputTarget};
use latlab_model::run::Run;
use latlab_store::{RunStore, StoreError};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// What keeping the run came to.
pub struct Kept {
    /// `exit::RUNTIME` when the run is not where it was asked to be (`exit::USAGE` when
    /// the store refused its name, taken while it measured), else `exit::OK`.
    pub code: u8,
    /// Where the run went, for the human output.
    pub said: String,
    /// What went wrong and where the run is instead, for standard error.
    pub errors: String,
}

/// True unless standard output is a pipe whose every reader closed it with part of
/// what was written still unread; a reader still reading after a second is taken to
/// read the rest.
fn read_from_stdout() -> bool {
    use latlab_rt::delivery::{delivery, Delivery};
    !matches!(
        delivery(libc::STDOUT_FILENO, std::time::Duration::from_secs(1)),
        Delivery::Unread(_)
    )
}

/// Saves `run` in `store` and writes it to `json`; if the store failed, or (without a
/// store) the JSON could not be written whole, writes it to a fallback file next to
/// the store, else in the working directory, else in the temporary directory. A run
/// `begun` in the store (kept from its start, checkpointed) replaces its last
/// checkpoint there.
pub fn keep(
    run: &Run,
    store: Option<&mut (dyn RunStore + Send + '_)>,
    json: Option<&mut OutputTarget>,
    begun: bool,
) -> Kept {
    let mut kept = Kept {
        code: exit::OK,
        said: String::new(),
        errors: String::new(),
    };
    let wanted_in_store = store.is_some();
    let mut store_dir = None;
    let mut stored = false;
    // Another run took the name while this one measured: the user must choose another.
    let mut name_taken = false;
    if let Some(store) = store {
        let location = store.location();
        // A SQLite store's directory; a URL names none.
        store_dir = (!latlab_store::is_url(&location))
            .then(|| Path::new(&location).parent().map(Path::to_path_buf))
            .flatten();
        let saved = match begun {
            // Removed meanwhile (latlab rm): saved anew.
            true => match store.update(run) {
                Err(StoreError::NotFound { .. }) => store.save(run),
                other => other,
            },
            false => store.save(run),
        };
        for notice in store.take_notices() {
            let _ = writeln!(kept.errors, "latlab: {notice}");
        }
        match saved {
            Ok(()) => {
                stored = true;
                let _ = writeln!(kept.said, "Run {} saved in {}", run.id, store.location());
            }
            Err(e) => {
                name_taken = matches!(e, StoreError::NameTaken { .. });
                let _ = writeln!(kept.errors, "latlab: error: could not save the run: {e}");
            }
        }
    }
    let wanted_as_json = json.is_some();
    let mut json_whole = false;
    let mut json_file = None;
    if let Some(target) = json {
        match target.write(format!("{}\n", run.to_json_pretty()).as_bytes()) {
            // Written into a pipe's buffer is not read: without the store, the Run is
            // lost when the reader leaves without it (`| head -c1`).
            Ok(()) if !stored && target.path().is_none() && !read_from_stdout() => {
                let _ = writeln!(
                    kept.errors,
                    "latlab: error: --json -: the reader of standard output left without \
                     reading the whole Run"
                );
            }
            Ok(()) => {
                json_whole = true;
                if let Some(path) = target.path() {
                    let _ = writeln!(kept.said, "Run written to {}", path.display());
                }
                if let OutputTarget::File { path, .. } = target {
                    json_file = Some(path.clone());
                }
            }
            // A reader that went away: not an error if the run is stored (below).
            Err(e) if e.code == exit::OK => {}
            Err(e) => {
                kept.code = exit::RUNTIME;
                let _ = writeln!(kept.errors, "latlab: error: --json: {}", e.message);
            }
        }
    }
    let lost = if wanted_in_store {
        !stored
    } else {
        wanted_as_json && !json_whole
    };
    if !lost {
        return kept;
    }
    kept.code = match name_taken {
        true => exit::USAGE,
        false => exit::RUNTIME,
    };
    let what = if wanted_in_store {
        "was not stored"
    } else {
        "was neither stored nor written whole (--json: the output closed or failed first)"
    };
    let import_as = match name_taken {
        true => " --name ANOTHER",
        false => "",
    };
    if let Some(file) = json_file {
        let _ = writeln!(
            kept.errors,
            "latlab: the run {what}; it is in {0}: store it later with `latlab import \
             {0}{import_as}`",
            file.display()
        );
        return kept;
    }
    let name = format!("latlab-run-{}.json", run.id);
    let candidates: Vec<PathBuf> = store_dir
        .into_iter()
        .chain(std::env::current_dir().ok())
        .chain([std::env::temp_dir()])
        .map(|dir| dir.join(&name))
        .collect();
    let mut failures = Vec::new();
    for path in candidates {
        let written = OutputFile::create(&path)
            .and_then(|f| f.commit(format!("{}\n", run.to_json_pretty()).as_bytes()));
        match written {
            Ok(()) => {
                let _ = writeln!(
                    kept.errors,
                    "latlab: the run {what}; it is kept in {0}: store it later with \
                     `latlab import {0}{import_as}`",
                    path.display()
                );
                return kept;
            }
            Err(e) => failures.push(format!("{}: {e}", path.display())),
        }
    }
    let _ = writeln!(
        kept.errors,
        "latlab: error: the run {what} and could not be kept in a file either ({}); free \
         space, or rerun with --json FILE on a writable disk",
        failures.join("; ")
    );
    kept
}
