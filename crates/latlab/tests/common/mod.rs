//! What the integration tests of the `latlab` binary share: running it, measuring with
//! it, reading its fixtures and stores. Each test binary uses part of it.
#![allow(dead_code)]

use assert_cmd::Command;
use latlab_model::run::Run;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Measurements share two CPUs; running them one at a time keeps each within its span.
static MEASURING: Mutex<()> = Mutex::new(());

/// Holds the measuring slot of this test binary.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    MEASURING.lock().unwrap_or_else(|e| e.into_inner())
}

/// The binary under test.
pub fn latlab() -> Command {
    Command::cargo_bin("latlab").expect("binary built")
}

/// Its path, for `std::process::Command`.
pub fn latlab_path() -> PathBuf {
    assert_cmd::cargo::cargo_bin("latlab")
}

/// Output as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs `latlab run` with `args` plus quiet/no-store/JSON to a temp file; returns the
/// exit code, the parsed Run and the human output.
pub fn measure(args: &[&str]) -> (i32, Run, String) {
    let _guard = serial();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let out = latlab()
        .arg("run")
        .args(args)
        .args(["-q", "--no-store", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let json_text = std::fs::read_to_string(&json)
        .unwrap_or_else(|e| panic!("no JSON ({e}); stderr: {}", text(&out.stderr)));
    let parsed = Run::from_json(&json_text).expect("the Run parses back into the model");
    (out.status.code().unwrap_or(-1), parsed, text(&out.stdout))
}

/// A file the real tools wrote (see the fixtures' README).
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../latlab-model/tests/fixtures/import")
        .join(name)
}

/// Runs latlab with `args` plus `--store store`; returns (exit code, stdout, stderr).
pub fn with_store(store: &Path, args: &[&str]) -> (i32, String, String) {
    let out = latlab()
        .args(args)
        .arg("--store")
        .arg(store)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        text(&out.stdout),
        text(&out.stderr),
    )
}
