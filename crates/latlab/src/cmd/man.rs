//! `latlab man`: the manual pages (roff), generated from the command line's
//! definition: latlab(1) on standard output, or it and a page per subcommand
//! (latlab-run(1), ...) written into a directory.

use crate::cli::ManArgs;
use crate::error::{exit, CliError};
use crate::output::{say_removed, sweep_stale_temps, Human, OutputFile};
use std::path::Path;

/// Prints latlab(1), or writes every page into `--dir`.
pub fn execute(args: &ManArgs) -> Result<u8, CliError> {
    let pages = pages()?;
    match &args.dir {
        None => {
            let (_, top) = pages.last().expect("latlab(1) is always made");
            Human::Stdout.write_bytes(top)?;
        }
        Some(dir) => write_pages(dir, &pages)?,
    }
    Ok(exit::OK)
}

/// Every page as (file name, roff): the subcommands' pages first, latlab.1 last. The
/// `help` subcommand gets none: `latlab help X` is `latlab X --help`, which has its page.
fn pages() -> Result<Vec<(String, Vec<u8>)>, CliError> {
    let mut top = crate::cli::command().disable_help_subcommand(true);
    top.build();
    let mut pages = Vec::new();
    for command in top.get_subcommands().filter(|c| !c.is_hide_set()) {
        pages.push(page(command.clone(), "")?);
    }
    pages.push(page(top, TOP_SECTIONS)?);
    Ok(pages)
}

/// What latlab(1) says beyond the options: what `latlab --help` cannot.
const TOP_SECTIONS: &str = r#".SH ENVIRONMENT
.TP
\fBNO_COLOR\fR
Any non\-empty value: no colour with \fB\-\-color auto\fR (https://no\-color.org).
.TP
\fBTERM\fR
\fBdumb\fR: no colour with \fB\-\-color auto\fR, and the live display prints lines
instead of redrawing its table.
.TP
\fBXDG_DATA_HOME\fR
The run store is \fI$XDG_DATA_HOME/latlab/runs.sqlite\fR, else
\fI~/.local/share/latlab/runs.sqlite\fR (\fB\-\-store\fR overrides both).
.TP
\fBCOLUMNS\fR
The width of tables, listings and the live display when the terminal does not say its
own (a serial console reports none), also into a pipe. Without it: 80 columns on a
terminal, and nothing narrowed into a pipe or file. \fB\-\-format wide\fR
(\fBlatlab report \-\-wide\fR) prints every table whole whatever the width.
.SH EXIT STATUS
.TP
\fB0\fR
Done, and passed (or nothing was judged).
.TP
\fB1\fR
A threshold, a comparison or a check failed.
.TP
\fB2\fR
Usage or configuration error.
.TP
\fB3\fR
Could not measure.
"#;

/// One page as clap_mangen lays it out, with the text after the options (units, exit
/// codes, install lines) kept line for line under NOTES rather than filled into one
/// paragraph under EXTRA, then `extra` (roff).
fn page(command: clap::Command, extra: &str) -> Result<(String, Vec<u8>), CliError> {
    let has_options = command.get_arguments().any(|a| !a.is_hide_set());
    let has_subcommands = command.get_subcommands().any(|c| !c.is_hide_set());
    let has_notes = command.get_after_long_help().is_some() || command.get_after_help().is_some();
    let has_version = command.get_version().is_some() || command.get_long_version().is_some();
    let man = clap_mangen::Man::new(command)
        .source(concat!("latlab ", env!("CARGO_PKG_VERSION")))
        .manual("latlab manual");
    let name = man.get_filename();
    let mut roff = Vec::new();
    let rendered = (|| -> std::io::Result<()> {
        man.render_title(&mut roff)?;
        man.render_name_section(&mut roff)?;
        man.render_synopsis_section(&mut roff)?;
        man.render_description_section(&mut roff)?;
        if has_options {
            man.render_options_section(&mut roff)?;
        }
        if has_subcommands {
            man.render_subcommands_section(&mut roff)?;
        }
        if has_notes {
            let mut notes = Vec::new();
            man.render_extra_section(&mut notes)?;
            let notes = String::from_utf8_lossy(&notes);
            // After the heading: each rendering starts with roff's preamble.
            let body = notes.split_once(".SH EXTRA\n").map_or(&*notes, |(_, b)| b);
            roff.extend_from_slice(format!(".SH NOTES\n.nf\n{body}.fi\n").as_bytes());
        }
        roff.extend_from_slice(extra.as_bytes());
        if has_version {
            man.render_version_section(&mut roff)?;
        }
        Ok(())
    })();
    rendered.map_err(|e| CliError::runtime(format!("cannot render {name}: {e}")))?;
    Ok((name, ascii_only(&once_preamble(&roff))))
}

/// Writes each page whole (a temporary file renamed into place).
fn write_pages(dir: &Path, pages: &[(String, Vec<u8>)]) -> Result<(), CliError> {
    if !dir.is_dir() {
        return Err(CliError::usage(
            "--dir",
            format!(
                "{} is not a directory: create it first (e.g. mkdir -p {0})",
                dir.display()
            ),
        ));
    }
    say_removed(
        &sweep_stale_temps(dir)
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>(),
    );
    for (name, roff) in pages {
        let path = dir.join(name);
        OutputFile::create(&path)
            .and_then(|file| file.commit(roff))
            .map_err(|e| CliError::runtime(format!("cannot write {}: {e}", path.display())))?;
    }
    Human::Stdout.write(&format!(
        "latlab: wrote {} manual pages into {}\n",
        pages.len(),
        dir.display()
    ))
}

/// The page with roff's preamble (which each section's rendering starts with) once, at
/// its head.
fn once_preamble(roff: &[u8]) -> Vec<u8> {
    const PREAMBLE: &str = ".ie \\n(.g .ds Aq \\(aq\n.el .ds Aq '\n";
    let text = String::from_utf8_lossy(roff);
    let body = text.replace(PREAMBLE, "");
    if body.len() == text.len() {
        return roff.to_vec();
    }
    format!("{PREAMBLE}{body}").into_bytes()
}

/// The page with every character outside ASCII (µ, ×, ≥, ...) written as groff's
/// `\[uXXXX]` escape: roff input is read as Latin-1 unless a preprocessor says
/// otherwise, so UTF-8 in a help text would render as garbage or a warning.
fn ascii_only(roff: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(roff);
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            out.push_str(&format!("\\[u{:04X}]", u32::from(c)));
        }
    }
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_page_has_one_preamble_and_one_title() {
        for (name, roff) in pages().unwrap() {
            let roff = String::from_utf8(roff).unwrap();
            assert!(roff.starts_with(".ie \\n(.g"), "{name}");
            assert_eq!(roff.matches(".ds Aq \\(aq").count(), 1, "{name}");
            assert_eq!(roff.matches("\n.TH ").count(), 1, "{name}");
        }
    }
}
