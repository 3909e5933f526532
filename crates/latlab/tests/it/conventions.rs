//! The command-line conventions: colour as `--color` and `NO_COLOR` say, the shells'
//! completions and the manual pages, each checked by the program that reads it (bash,
//! zsh, fish, groff).

use crate::common::{fixture, latlab, latlab_path, measurement, needs, text};
use std::path::Path;
use std::process::Command;

const ESC: char = '\x1b';

/// A store holding one imported run (its summary has emphasis to colour: the verdict).
fn store_with_a_run(dir: &Path) -> std::path::PathBuf {
    let store = dir.join("runs.sqlite");
    latlab()
        .arg("import")
        .arg(fixture("cyclictest-2t.json"))
        .arg("--store")
        .arg(&store)
        .assert()
        .success();
    store
}

/// `latlab show` in a pseudo-terminal (util-linux `script`), with `env` set.
fn show_on_a_terminal(store: &Path, env: &[(&str, &str)]) -> String {
    needs("script", "bsdutils");
    let command = format!(
        "{} show --store {}",
        latlab_path().display(),
        store.display()
    );
    let out = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .env("TERM", "xterm")
        .env_remove("NO_COLOR")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
}

#[test]
fn the_summary_is_coloured_as_color_and_no_color_say() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_a_run(dir.path());
    let show = |color: Option<&str>, no_color: Option<&str>| {
        let mut command = latlab();
        command.arg("show").arg("--store").arg(&store);
        command.args(color.map(|c| ["--color", c]).iter().flatten());
        match no_color {
            Some(v) => command.env("NO_COLOR", v),
            None => command.env_remove("NO_COLOR"),
        };
        let out = command.output().unwrap();
        assert!(out.status.success());
        text(&out.stdout)
    };
    // Into a pipe.
    assert!(show(Some("always"), None).contains(ESC));
    assert!(
        show(Some("always"), Some("1")).contains(ESC),
        "the flag wins"
    );
    assert!(!show(Some("never"), None).contains(ESC));
    assert!(
        !show(None, None).contains(ESC),
        "auto: a pipe is no terminal"
    );
    // On a terminal.
    assert!(show_on_a_terminal(&store, &[]).contains(ESC));
    assert!(!show_on_a_terminal(&store, &[("NO_COLOR", "1")]).contains(ESC));
    assert!(!show_on_a_terminal(&store, &[("NO_COLOR", "0")]).contains(ESC));
    assert!(show_on_a_terminal(&store, &[("NO_COLOR", "")]).contains(ESC));
    assert!(!show_on_a_terminal(&store, &[("TERM", "dumb")]).contains(ESC));
}

#[test]
fn a_runs_warnings_and_summary_are_coloured_as_color_says() {
    // --no-mlock: a degraded run, so the warning shown before measuring is printed too.
    let run = |color: &str| {
        let m = measurement(&[
            "-c",
            "0",
            "-d",
            "200ms",
            "--no-mlock",
            "--no-audit",
            "--color",
            color,
        ]);
        // Memory not locked: degraded, so untrusted (exit 5).
        assert_eq!(m.code, 5, "{}", m.stderr);
        assert!(m.stdout.contains("memory-lock-skipped"), "{}", m.stdout);
        m.stdout
    };
    assert!(!run("never").contains(ESC));
    let coloured = run("always");
    let warning = coloured
        .lines()
        .find(|l| l.contains("memory-lock-skipped"))
        .unwrap();
    assert!(warning.contains(ESC), "{warning}");
}

/// Every subcommand, as the completions and the manual must know them.
const SUBCOMMANDS: &[&str] = &[
    "run",
    "cyclictest",
    "runs",
    "show",
    "explain",
    "rm",
    "prune",
    "push",
    "attach",
    "export",
    "compare",
    "report",
    "trend",
    "serve",
    "import",
    "check",
    "methods",
    "probes",
    "loads",
    "scenarios",
    "completions",
    "man",
];

/// `latlab completions SHELL` written to `dir`.
fn completions(shell: &str, dir: &Path) -> std::path::PathBuf {
    let out = latlab().args(["completions", shell]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let script = text(&out.stdout);
    for name in SUBCOMMANDS.iter().chain(&["color", "cyclictest-json"]) {
        assert!(script.contains(name), "{shell} completions lack {name}");
    }
    let path = dir.join(format!("latlab.{shell}"));
    std::fs::write(&path, script).unwrap();
    path
}

/// Runs `program args` and returns its stdout; it must succeed and say nothing on stderr.
fn quietly(program: &str, args: &[&str]) -> String {
    let out = Command::new(program).args(args).output().unwrap();
    let stderr = text(&out.stderr);
    assert!(
        out.status.success() && stderr.is_empty(),
        "{program} {args:?}: {stderr}"
    );
    text(&out.stdout)
}

#[test]
fn bash_completes_subcommands_and_export_formats() {
    let dir = tempfile::tempdir().unwrap();
    let script = completions("bash", dir.path());
    // What bash's completion machinery does on TAB: set COMP_WORDS and call the function.
    let complete = |words: &str, cword: usize| {
        let program = format!(
            "source {}; COMP_WORDS=({words}); COMP_CWORD={cword}; \
             _latlab latlab \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
             printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            script.display()
        );
        quietly("bash", &["-c", &program])
    };
    assert_eq!(complete("latlab expo", 1), "export\n");
    assert_eq!(complete("latlab expl", 1), "explain\n");
    let formats = complete("latlab export last --format ''", 4);
    let names: Vec<&str> = latlab_formats::export::exporters()
        .iter()
        .map(|e| e.name())
        .collect();
    assert_eq!(formats.lines().collect::<Vec<_>>(), names);
}

#[test]
fn fish_completes_subcommands_and_export_formats_with_their_lines() {
    needs("fish", "fish");
    let dir = tempfile::tempdir().unwrap();
    let script = completions("fish", dir.path());
    let script = script.to_str().unwrap();
    quietly("fish", &["--no-execute", script]);
    let complete = |line: &str| {
        let program = format!("source {script}; complete -C '{line}'");
        quietly("fish", &["--no-config", "-c", &program])
    };
    assert!(complete("latlab expo").starts_with("export\t"));
    assert!(complete("latlab expl").starts_with("explain\t"));
    let formats = complete("latlab export last --format ");
    for exporter in latlab_formats::export::exporters() {
        let line = format!("{}\t{}", exporter.name(), exporter.describe());
        assert!(formats.lines().any(|l| l == line), "{line} in\n{formats}");
    }
}

#[test]
fn zsh_loads_the_completion_function() {
    needs("zsh", "zsh");
    let dir = tempfile::tempdir().unwrap();
    let script = completions("zsh", dir.path());
    let script = script.to_str().unwrap();
    quietly("zsh", &["-n", script]);
    // Loaded as a user's .zshrc would: compinit, then the file; latlab gets _latlab.
    let program = format!(
        "autoload -U compinit && compinit -u -d {}/zcompdump && source {script} && \
         print -r -- $_comps[latlab]",
        dir.path().display()
    );
    assert_eq!(quietly("zsh", &["-f", "-c", &program]), "_latlab\n");
}

#[test]
fn the_manual_pages_render_without_a_warning() {
    needs("groff", "groff-base");
    let dir = tempfile::tempdir().unwrap();
    let top = latlab().arg("man").output().unwrap();
    assert!(top.status.success());
    let top_page = dir.path().join("stdout.1");
    std::fs::write(&top_page, &top.stdout).unwrap();

    let pages = dir.path().join("man1");
    std::fs::create_dir(&pages).unwrap();
    latlab()
        .arg("man")
        .arg("--dir")
        .arg(&pages)
        .assert()
        .success();
    let mut written: Vec<String> = std::fs::read_dir(&pages)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    written.sort();
    let mut expected: Vec<String> = SUBCOMMANDS
        .iter()
        .map(|s| format!("latlab-{s}.1"))
        .chain(["latlab.1".to_string()])
        .collect();
    expected.sort();
    assert_eq!(written, expected, "one page each, no temporary file left");
    assert_eq!(
        std::fs::read(pages.join("latlab.1")).unwrap(),
        top.stdout,
        "`latlab man` prints latlab.1"
    );
    for page in std::iter::once(top_page).chain(expected.iter().map(|p| pages.join(p))) {
        // -ww: every warning; -z: no output, only the diagnostics.
        quietly(
            "groff",
            &["-man", "-Tutf8", "-ww", "-z", page.to_str().unwrap()],
        );
    }
}

#[test]
fn man_into_a_missing_directory_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = latlab()
        .arg("man")
        .arg("--dir")
        .arg(dir.path().join("none"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).starts_with("latlab: error: --dir: "));
}

#[test]
fn help_export_is_export_help() {
    let help = latlab().args(["help", "export"]).output().unwrap();
    let flag = latlab().args(["export", "--help"]).output().unwrap();
    assert!(help.status.success() && flag.status.success());
    assert_eq!(text(&help.stdout), text(&flag.stdout));
}
