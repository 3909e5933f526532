//! `latlab import FILE...`: other tools' result files (and latlab's own Run JSON) into
//! the store.
//!
//! Every file is read and checked before anything is saved: one bad file imports none,
//! and the error names the file and the line.

use crate::cli::ImportArgs;
use crate::error::{exit, CliError};
use crate::output::Human;
use crate::stamp::{rfc3339, run_id};
use latlab_model::import::{self, Format, ImportContext, TimeUnit, DETECT_BYTES};
use latlab_model::run::Run;
use latlab_model::text::counted;
use latlab_model::units::parse_duration;
use latlab_store::{RunStore, SqliteStore};
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufReader, Cursor, Read};
use std::path::Path;
use std::time::SystemTime;

/// Large reads: a cyclictest -v log can be gigabytes.
const READ_BUFFER: usize = 1 << 20;

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

    let mut imported = Vec::with_capacity(args.files.len());
    for file in &args.files {
        let now = SystemTime::now();
        let mut ctx = ImportContext::new(&file.display().to_string(), &run_id(now), &rfc3339(now));
        ctx.unit = unit;
        ctx.period = period;
        imported.push(read(file, forced, &ctx)?);
    }

    let path = args
        .store
        .clone()
        .unwrap_or_else(latlab_store::default_path);
    let mut store = SqliteStore::open(&path)?;
    let mut text = String::new();
    for (file, (format, run)) in args.files.iter().zip(&imported) {
        store.save(run)?;
        let samples: u64 = run.streams.iter().map(|s| s.samples).sum();
        let _ = writeln!(
            text,
            "imported {} ({format}) as {}: {}, {}",
            file.display(),
            run.id,
            counted(run.streams.len() as u64, "stream"),
            counted(samples, "sample"),
        );
        if let Some(record) = &run.import {
            for lack in &record.lacks {
                let _ = writeln!(text, "  lacks: {lack}");
            }
        }
    }
    let _ = writeln!(text, "saved in {}", store.path().display());
    Human::Stdout.write(&text)?;
    Ok(exit::OK)
}

/// One file as a Run, with the name of the format it was read as.
fn read(
    file: &Path,
    forced: Option<Format>,
    ctx: &ImportContext,
) -> Result<(String, Run), CliError> {
    let cannot =
        |e: std::io::Error| CliError::config(format!("{}: cannot read: {e}", file.display()));
    let mut handle = File::open(file).map_err(cannot)?;
    let mut head = Vec::with_capacity(DETECT_BYTES);
    (&mut handle)
        .take(DETECT_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(cannot)?;
    if forced.is_none() && Run::looks_like_run(&head) {
        let mut text = String::from_utf8(head)
            .map_err(|_| CliError::config(format!("{}: not UTF-8 text", file.display())))?;
        handle.read_to_string(&mut text).map_err(cannot)?;
        let run = Run::from_json(&text)
            .map_err(|e| CliError::config(format!("{}: {e}", file.display())))?;
        return Ok(("latlab run JSON".to_string(), run));
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
    let input = BufReader::with_capacity(READ_BUFFER, Cursor::new(head).chain(handle));
    let run = import::import(format, input, ctx).map_err(CliError::config)?;
    Ok((format.name().to_string(), run))
}

fn format_names() -> String {
    Format::ALL
        .iter()
        .map(|f| f.name())
        .collect::<Vec<_>>()
        .join(", ")
}
