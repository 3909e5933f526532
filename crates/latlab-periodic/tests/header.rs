//! The committed C header is what cbindgen makes of the sources now, and compiles as
//! strict C11 and C++.

use std::path::{Path, PathBuf};
use std::process::Command;

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn committed_header() -> PathBuf {
    crate_dir().join("../../include/latlab/periodic.h")
}

fn generated() -> String {
    let config = cbindgen::Config::from_file(crate_dir().join("cbindgen.toml"))
        .expect("cbindgen.toml reads");
    let mut text = Vec::new();
    cbindgen::Builder::new()
        .with_crate(crate_dir())
        .with_config(config)
        .generate()
        .expect("cbindgen generates the header")
        .write(&mut text);
    String::from_utf8(text).expect("the header is UTF-8")
}

#[test]
fn the_committed_header_is_the_generated_one() {
    let fresh = generated();
    let path = committed_header();
    if std::env::var_os("UPDATE_HEADER").is_some() {
        let tmp = path.with_extension("h.tmp");
        std::fs::write(&tmp, &fresh).expect("write the header");
        std::fs::rename(&tmp, &path).expect("replace the header");
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == fresh,
        "include/latlab/periodic.h is stale: run \
         `UPDATE_HEADER=1 cargo test -p latlab-periodic --test header` and commit it"
    );
}

/// Compiles `source` with `compiler` and `flags`; panics with the diagnostics.
fn compiles(compiler: &str, flags: &[&str], source: &str, dir: &Path) {
    let file = dir.join(if compiler == "g++" { "t.cpp" } else { "t.c" });
    std::fs::write(&file, source).unwrap();
    let include = crate_dir().join("../../include");
    let out = Command::new(compiler)
        .args(flags)
        .arg("-I")
        .arg(&include)
        .arg("-c")
        .arg(&file)
        .arg("-o")
        .arg(dir.join("t.o"))
        .output()
        .unwrap_or_else(|e| {
            panic!("{compiler} is needed for this test ({e}): apt-get install gcc g++ (scripts/test does)")
        });
    assert!(
        out.status.success(),
        "{compiler} {flags:?} rejects the header:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_header_compiles_as_strict_c11_and_cpp() {
    let dir = std::env::temp_dir().join(format!("latlab-periodic-header-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let source = "#include <latlab/periodic.h>\n\
                  int use(void) { latlab_periodic_config c; return latlab_periodic_config_default(&c); }\n";
    let c11 = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic"];
    let cpp = ["-std=c++17", "-Wall", "-Wextra", "-Werror"];
    let result = std::panic::catch_unwind(|| {
        compiles("gcc", &c11, source, &dir);
        compiles("g++", &cpp, &source.replace("(void)", "()"), &dir);
    });
    let _ = std::fs::remove_dir_all(&dir);
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}
