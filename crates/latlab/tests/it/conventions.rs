//! The command-line conventions: colour as `--color` and `NO_COLOR` say, the shells'
//! completions and the manual pages, each checked by the program that reads it (bash,
//! zsh, fish, groff).

use crate::common::{fixture, latlab, latlab_path, measurement, text};
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

/// `program` if it runs, else a panic naming the package that has it.
fn needs(program: &str, package: &str) {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "{program} is needed for this test: apt-get install {package} (scripts/test does)"
    );
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
        assert_eq!(m.code, 0, "{}", m.stderr);
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
