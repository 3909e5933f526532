//! `latlab import FILE...`: other tools' result files (and latlab's own Run JSON) into
//! the store.
//!
//! Every file is read and checked before anything is saved: one bad file imports none,
//! and the error names the file and the line. A stored run is never replaced (but for
//! one stored only as a checkpoint, which the whole run in the file completes): a file
//! whose content was imported before (its SHA-256 is kept with the run) is recognised
//! and skipped, and a latlab Run whose id the store holds for a different run is
//! refused.

use crate::cli::ImportArgs;
use crate::error::{exit, CliError};
use crate::output::Human;
use crate::store::StoreLocation;
use latlab_formats::import::{Format, ImportContext, TimeUnit};
use latlab_model::stamp::{rfc3339, run_id};
use latlab_model::text::counted;
use latlab_model::units::parse_duration;
use latlab_session::import::{format_names, plan_imports, read, Import};
use latlab_session::labels::refuse_taken_name;
use std::fmt::Write as _;
use std::path::Path;
use std::time::SystemTime;

/// Reads every file, then saves every run.
pub fn execute(args: &ImportArgs) -> Result<u8, CliError> {
    let forced = match &args.format {
        None => None,
        Some(name) => Some(Format::from_name(name).ok_or_else(|| {
            CliError::usage(
                "--format",
                format!("unknown format '{name}': choose {}", format_names()),
            )
        })?),
    };
    let unit = match &args.unit {
        None => None,
        Some(name) => Some(
            TimeUnit::from_name(name)
                .ok_or_else(|| CliError::usage("--unit", format!("'{name}': give us or ns")))?,
        ),
    };
    let period = match &args.period {
        None => None,
        Some(text) => Some(parse_duration(text).map_err(|e| CliError::usage("--period", e))?),
    };
    let labels = args.labels.checked()?;
    if labels.name().is_some() && args.files.len() > 1 {
        return Err(CliError::usage(
            "--name",
            format!(
                "a name stands for one run, and {} files were given: import them one by \
                 one, or mark them together with --tag",
                args.files.len()
            ),
        ));
    }

    let mut read_files = Vec::with_capacity(args.files.len());
    for file in &args.files {
        let now = SystemTime::now();
        let mut ctx = ImportContext::new(&file.display().to_string(), &run_id(now), &rfc3339(now));
        ctx.unit = unit;
        ctx.period = period;
        // Where a tool saved more beside its results (jitterdebugger -o DIR).
        let directory = file.parent().filter(|d| !d.as_os_str().is_empty());
        ctx.directory = Some(directory.unwrap_or(Path::new(".")).to_path_buf());
        let mut read_file = read(file, forced, &ctx)?;
        labels.apply(&mut read_file.run);
        read_files.push(read_file);
    }

    let location = StoreLocation::resolve(args.store.as_ref())?;
    let mut store = crate::store::open_writable(&location)?;
    let plan = plan_imports(&*store, read_files)?;
    for import in &plan {
        if let Import::Save(file) = import {
            if let Some(name) = &file.run.name {
                let flag = match labels.name() {
                    Some(_) => "--name".to_string(),
                    None => format!("{} (the name of the run it holds)", file.path.display()),
                };
                refuse_taken_name(&*store, name, &flag)?;
            }
        }
    }
    let mut text = String::new();
    let mut saved = 0;
    for import in &plan {
        match import {
            Import::Skip(why) => {
                let _ = writeln!(text, "{why}: skipped");
            }
            Import::Reread(file) => {
                // The earlier run goes first, then the new reading is saved under its id:
                // were latlab stopped in between, the file, still there, imports anew.
                store
                    .remove(std::slice::from_ref(&file.run.id))
                    .map_err(CliError::runtime)?;
                store.save_imported(&file.run, &file.sha256)?;
                saved += 1;
                let _ = writeln!(
                    text,
                    "imported {} again as {}, read another way this time: it replaces what \
                     the earlier import of the same content read",
                    file.path.display(),
                    file.run.id
                );
            }
            Import::Complete(file, stood) => {
                store.update(&file.run).map_err(CliError::runtime)?;
                saved += 1;
                let _ = writeln!(
                    text,
                    "imported {} as {}: the whole run replaces the checkpoint the store held \
                     ({stood})",
                    file.path.display(),
                    file.run.id
                );
            }
            Import::Save(file) => {
                let run = &file.run;
                store.save_imported(run, &file.sha256)?;
                saved += 1;
                let samples: u64 = run.streams.iter().map(|s| s.samples).sum();
                let _ = writeln!(
                    text,
                    "imported {} ({}) as {}: {}, {}",
                    file.path.display(),
                    file.format,
                    run.id,
                    counted(run.streams.len() as u64, "stream"),
                    counted(samples, "sample"),
                );
                for warning in &run.warnings {
                    let _ = writeln!(text, "  WARNING: {}", warning.message);
                }
                if let Some(record) = &run.import {
                    for lack in &record.lacks {
                        let _ = writeln!(text, "  lacks: {lack}");
                    }
                }
            }
        }
    }
    match saved {
        0 => {
            let _ = writeln!(text, "nothing new to save in {}", store.location());
        }
        _ => {
            let _ = writeln!(text, "saved in {}", store.location());
        }
    }
    Human::Stdout.write(&text)?;
    Ok(exit::OK)
}
