//! The pages cannot drift from the binary: every `latlab` command shown in README.md and
//! docs/ is parsed by this build (its subcommand, every flag and every value a flag
//! checks when parsed), and the README's ten common tasks are run as shown, in a
//! scratch directory with a store of their own, their durations cut to 1 s.

use crate::common::{latlab_path, shared};
use std::path::{Path, PathBuf};
use std::process::Command;

pub fn top() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The blocks fenced as ```` ```info ```` in `page`: each one's first line number and
/// its lines.
pub fn fenced_blocks(page: &Path, info: &str) -> Vec<(usize, Vec<String>)> {
    let text = std::fs::read_to_string(page).unwrap();
    let mut fence: Option<String> = None;
    let mut blocks: Vec<(usize, Vec<String>)> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if let Some(opened) = line.strip_prefix("```") {
            fence = match fence {
                Some(_) => None,
                None => {
                    let opened = opened.trim().to_string();
                    if opened == info {
                        blocks.push((n + 2, Vec::new()));
                    }
                    Some(opened)
                }
            };
            continue;
        }
        if fence.as_deref() == Some(info) {
            if let Some((_, lines)) = blocks.last_mut() {
                lines.push(line.to_string());
            }
        }
    }
    blocks
}

/// The shell lines of the ```sh blocks of `page`, with their line numbers.
fn shell_lines(page: &Path) -> Vec<(usize, String)> {
    fenced_blocks(page, "sh")
        .into_iter()
        .flat_map(|(first, lines)| {
            lines
                .into_iter()
                .enumerate()
                .map(move |(i, line)| (first + i, line))
        })
        .collect()
}

/// `line` split into words as sh would (quotes, no expansions), up to a comment;
/// `None` for an operator (`&&`, `;`, `|`), which ends a command. A redirection
/// (`> FILE`, `2>&1`) is dropped with its target.
fn words(line: &str) -> Vec<Option<String>> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    let mut redirected = false;
    let end_word = |word: &mut String,
                    in_word: &mut bool,
                    redirected: &mut bool,
                    out: &mut Vec<Option<String>>| {
        if *in_word {
            let word = std::mem::take(word);
            // The target of a redirection is no word of the command.
            if !std::mem::take(redirected) {
                out.push(Some(word));
            }
            *in_word = false;
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == c {
                        break;
                    }
                    word.push(q);
                }
            }
            '#' if !in_word => break,
            ' ' | '\t' => end_word(&mut word, &mut in_word, &mut redirected, &mut out),
            '>' | '<' => {
                // A file descriptor's number before it (`2>`) is part of it.
                if in_word && word.chars().all(|c| c.is_ascii_digit()) {
                    word.clear();
                    in_word = false;
                }
                end_word(&mut word, &mut in_word, &mut redirected, &mut out);
                // `>&1` names no file; `> FILE` does.
                if chars.peek() == Some(&'&') {
                    chars.next();
                    while chars.peek().is_some_and(|c| c.is_ascii_digit()) {
                        chars.next();
                    }
                } else {
                    redirected = true;
                }
            }
            '&' | ';' | '|' => {
                end_word(&mut word, &mut in_word, &mut redirected, &mut out);
                if out.last() != Some(&None) {
                    out.push(None);
                }
            }
            _ => {
                in_word = true;
                word.push(c);
            }
        }
    }
    end_word(&mut word, &mut in_word, &mut redirected, &mut out);
    out
}

/// The `latlab` commands of `line`: each one's arguments.
fn latlab_commands(line: &str) -> Vec<Vec<String>> {
    let mut commands = Vec::new();
    for command in words(line).split(|w| w.is_none()) {
        let command: Vec<String> = command.iter().flatten().cloned().collect();
        if let Some((program, args)) = command.split_first() {
            if program == "latlab" || program.ends_with("/latlab") {
                commands.push(args.to_vec());
            }
        }
    }
    commands
}

fn pages() -> Vec<PathBuf> {
    let mut pages = vec![top().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(top().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

#[test]
fn words_split_as_sh_splits_them() {
    assert_eq!(
        latlab_commands(r#"latlab run --note "a b" -q && latlab explain last | head # x"#),
        [vec!["run", "--note", "a b", "-q"], vec!["explain", "last"]]
    );
    assert_eq!(
        latlab_commands("cyclictest -q > ct.txt && target/latlab import ct.txt"),
        [vec!["import", "ct.txt"]]
    );
    assert!(latlab_commands("scripts/install-periodic [PREFIX]   # latlab").is_empty());
    // A redirection's target is no command, nor are its descriptors arguments.
    assert!(latlab_commands("latlab completions bash > /etc/x/latlab").len() == 1);
    assert_eq!(
        latlab_commands("latlab show last 2>&1 > out.txt"),
        [vec!["show", "last"]]
    );
}

#[test]
fn every_command_in_the_readme_and_docs_parses() {
    let mut checked = 0;
    let mut failures = Vec::new();
    for page in pages() {
        for (n, line) in shell_lines(&page) {
            for args in latlab_commands(&line) {
                // --help ends parsing where it stands: everything before it is checked.
                // `latlab help ...` only prints, so it runs as shown.
                let mut command = Command::new(latlab_path());
                command.args(&args);
                if args.first().is_none_or(|a| a != "help") {
                    command.arg("--help");
                }
                let out = command.output().unwrap();
                checked += 1;
                if !out.status.success() {
                    failures.push(format!(
                        "{}:{n}: latlab {}: {}",
                        page.display(),
                        args.join(" "),
                        String::from_utf8_lossy(&out.stderr)
                    ));
                }
            }
        }
    }
    assert!(checked > 50, "only {checked} commands found");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The README's section of common tasks, one command line per task.
fn readme_tasks() -> Vec<(usize, String)> {
    let readme = top().join("README.md");
    let text = std::fs::read_to_string(&readme).unwrap();
    let start = text
        .lines()
        .position(|l| l.starts_with("## Ten common tasks"))
        .expect("the README has its common tasks");
    let end = text
        .lines()
        .skip(start + 1)
        .position(|l| l.starts_with("## "))
        .map_or(usize::MAX, |p| p + start + 1);
    shell_lines(&readme)
        .into_iter()
        .filter(|(n, _)| *n > start && *n <= end)
        .collect()
}

#[test]
fn the_readmes_common_tasks_run_as_shown() {
    let _serial = shared();
    crate::common::needs("cyclictest", "rt-tests");
    let tasks = readme_tasks();
    assert_eq!(tasks.len(), 10, "{tasks:?}");
    let dir = tempfile::tempdir().unwrap();
    let bin = latlab_path().parent().unwrap().to_path_buf();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let timerlat = std::fs::read_to_string("/sys/kernel/tracing/available_tracers")
        .is_ok_and(|t| t.split_whitespace().any(|n| n == "timerlat"));
    for (n, line) in tasks {
        // As shown, but a second long: a task that measures says how long, as 5 s.
        if line.contains("latlab run") || line.starts_with("cyclictest") {
            assert!(line.contains(" -d 5s") || line.contains(" -D 5s"), "{line}");
        }
        let line = line.replace("-d 5s", "-d 1s").replace("-D 5s", "-D 1s");
        let out = Command::new("sh")
            .arg("-c")
            .arg(&line)
            .current_dir(dir.path())
            .env("PATH", &path)
            .env("LATLAB_STORE", dir.path().join("runs.sqlite"))
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        let said = format!(
            "README.md:{n}: {line}\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let code = out.status.code();
        if line.contains("--probe timerlat") && !timerlat {
            // Refused with the reason on a kernel without the tracer.
            assert_eq!(code, Some(2), "{said}");
        } else if line.starts_with("latlab check") {
            // 1: a check failed, as on any machine that is not ready (this one).
            assert!(matches!(code, Some(0 | 1)), "{said}");
        } else if line.starts_with("latlab compare") {
            // 1: a figure regressed, as two runs on a busy machine may.
            assert!(matches!(code, Some(0 | 1)), "{said}");
        } else {
            assert_eq!(code, Some(0), "{said}");
        }
        // Where sh reports the status of the last command (`; echo`, `| head`), what
        // latlab printed says how it went.
        let stdout = String::from_utf8_lossy(&out.stdout);
        if line.contains("echo \"exit $?\"") {
            assert!(
                stdout.contains("exit 0") || stdout.contains("exit 1"),
                "{said}"
            );
        }
        if line.contains("--format csv | head") {
            assert!(stdout.starts_with("run,phase,"), "{said}");
        }
    }
    assert!(dir.path().join("report.html").is_file());
    assert!(dir.path().join("results.xml").is_file());
}
