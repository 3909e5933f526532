//! The periodic task's C ABI as an application gets it: installed by
//! scripts/install-periodic into a prefix, examples/c/loop.c built with gcc and the
//! pkg-config flags (shared and static), run for real; its own count against the
//! library's, its page in /dev/shm while it runs and gone after (also after SIGKILL, at
//! the next run); bad input answered with the documented codes and messages.

use crate::common::{needs, serial, shared};
use latlab_rt::periodic::shm;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The repository's root.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// How the example links latlab-periodic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Linking {
    /// `-llatlab_periodic` from `pkg-config --libs`: the shared library.
    Shared,
    /// The static library, with the system libraries it needs (`pkg-config
    /// --variable=native_static_libs`): nothing of latlab is loaded at run time.
    Static,
}

/// Installs latlab-periodic under `prefix` with the documented command.
fn install(prefix: &Path) {
    let out = Command::new(repo().join("scripts/install-periodic"))
        .arg(prefix)
        .output()
        .expect("run scripts/install-periodic");
    assert!(
        out.status.success(),
        "scripts/install-periodic failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `pkg-config ARGS latlab-periodic` against `prefix`, split into arguments.
fn pkg_config(prefix: &Path, args: &[&str]) -> Vec<String> {
    let out = Command::new("pkg-config")
        .args(args)
        .arg("latlab-periodic")
        .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig"))
        .output()
        .expect("run pkg-config");
    assert!(
        out.status.success(),
        "pkg-config {args:?} latlab-periodic: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// Compiles the C file `source` into `exe` against the library installed under
/// `prefix`, with gcc in strict C11 and the pkg-config flags.
fn compile(prefix: &Path, source: &Path, exe: &Path, linking: Linking) {
    needs("gcc", "gcc");
    needs("pkg-config", "pkg-config");
    let mut gcc = Command::new("gcc");
    gcc.args(["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(exe)
        .arg(source);
    match linking {
        Linking::Shared => {
            gcc.args(pkg_config(prefix, &["--cflags", "--libs"]));
        }
        Linking::Static => {
            let libdir = pkg_config(prefix, &["--variable=libdir"]);
            gcc.args(pkg_config(prefix, &["--cflags"]))
                .arg(Path::new(&libdir[0]).join("liblatlab_periodic.a"))
                .args(pkg_config(prefix, &["--variable=native_static_libs"]));
        }
    }
    let out = gcc.output().expect("run gcc");
    assert!(
        out.status.success(),
        "gcc rejects {}:\n{}",
        source.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Installs latlab-periodic under `dir/prefix` and builds examples/c/loop.c as
/// `dir/loop`, statically linked (it runs without the prefix): for the tests of
/// `latlab attach` too.
pub(crate) fn build_c_example(dir: &Path) -> PathBuf {
    build_c_example_linked(dir, Linking::Static)
}

/// [`build_c_example`], linked as asked.
pub(crate) fn build_c_example_linked(dir: &Path, linking: Linking) -> PathBuf {
    let prefix = dir.join("prefix");
    if !prefix.join("lib/pkgconfig/latlab-periodic.pc").exists() {
        install(&prefix);
    }
    let exe = dir.join(match linking {
        Linking::Shared => "loop-shared",
        Linking::Static => "loop",
    });
    compile(&prefix, &repo().join("examples/c/loop.c"), &exe, linking);
    exe
}

/// The example, started: `loop SECONDS`, output captured; linked to the shared
/// library, it finds it in `dir/prefix/lib`, and statically, nothing of latlab.
fn start_loop(exe: &Path, dir: &Path, linking: Linking, seconds: &str) -> Child {
    let mut command = Command::new(exe);
    if linking == Linking::Shared {
        command.env("LD_LIBRARY_PATH", dir.join("prefix/lib"));
    }
    command
        .arg(seconds)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the example")
}

/// Whether the dynamic section of `exe` asks for latlab's shared library.
fn needs_shared_library(exe: &Path) -> bool {
    needs("readelf", "binutils");
    let out = Command::new("readelf")
        .arg("-d")
        .arg(exe)
        .output()
        .expect("run readelf");
    assert!(out.status.success(), "readelf -d {}", exe.display());
    String::from_utf8_lossy(&out.stdout).contains("[liblatlab_periodic.so]")
}

/// Sends `signal` (a `kill` option such as `-TERM`) to process `pid`.
fn signal(pid: u32, signal: &str) {
    let sent = Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(sent.success(), "kill {signal} {pid}");
}

/// The page of process `pid`, once it exists (within 5 s).
fn page_of(pid: u32) -> Option<PathBuf> {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        if let Some(page) = shm::pages_of(pid).pop() {
            return Some(page);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

/// The numbers of the example's last line, `loop: key=value ...`.
fn figures(out: &Output) -> Vec<(String, String)> {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .rfind(|l| l.starts_with("loop: "))
        .unwrap_or_else(|| {
            panic!(
                "no result line; stdout {stdout:?}, stderr {:?}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    line["loop: ".len()..]
        .split_whitespace()
        .map(|pair| {
            let (k, v) = pair.split_once('=').expect("key=value");
            (k.to_string(), v.to_string())
        })
        .collect()
}

fn figure(figures: &[(String, String)], key: &str) -> u64 {
    let value = &figures.iter().find(|(k, _)| k == key).expect(key).1;
    value
        .parse()
        .unwrap_or_else(|_| panic!("{key}={value} is not a count"))
}

/// Kills `child` if a test fails before it ends.
struct Reap(Option<Child>);

impl Drop for Reap {
    fn drop(&mut self) {
        if let Some(child) = &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
            for page in shm::pages_of(child.id()) {
                let _ = std::fs::remove_file(page);
            }
        }
    }
}

impl Reap {
    fn pid(&self) -> u32 {
        self.0.as_ref().expect("running").id()
    }

    fn wait(mut self) -> Output {
        self.0
            .take()
            .expect("running")
            .wait_with_output()
            .expect("wait")
    }
}

#[test]
fn the_c_example_built_with_pkg_config_runs_1khz_for_2s_shared_and_static() {
    let dir = tempfile::tempdir().unwrap();
    // Built before the measuring slot is taken: building measures nothing.
    let built = [Linking::Shared, Linking::Static]
        .map(|linking| (linking, build_c_example_linked(dir.path(), linking)));
    let _serial = shared();
    for (linking, exe) in built {
        assert_eq!(
            needs_shared_library(&exe),
            linking == Linking::Shared,
            "{linking:?}: what the executable loads at run time"
        );
        let child = Reap(Some(start_loop(&exe, dir.path(), linking, "2")));
        let pid = child.pid();
        let page = page_of(pid).unwrap_or_else(|| panic!("{linking:?}: no page while it runs"));
        let out = child.wait();
        assert!(out.status.success(), "{linking:?}: {out:?}");
        assert!(!page.exists(), "{linking:?}: the page outlives the task");
        let f = figures(&out);
        let (own, cycles, missed) = (
            figure(&f, "own_cycles"),
            figure(&f, "cycles"),
            figure(&f, "missed"),
        );
        assert_eq!(
            own, cycles,
            "{linking:?}: the example's count is the library's"
        );
        // Every period from the first due to the last ran or was counted missed; they
        // span the 2 s asked for (more when a late wake-up skipped across its end).
        let periods = figure(&f, "periods");
        assert_eq!(
            cycles + missed,
            periods,
            "{linking:?}: {cycles} cycles + {missed} missed"
        );
        assert!(periods >= 2000, "{linking:?}: {periods} periods");
        // Skipping after an overrun misses at least one period.
        assert!(figure(&f, "overruns") <= missed, "{linking:?}: {f:?}");
        assert!(figure(&f, "wake_p50_ns") <= figure(&f, "wake_p99_ns"));
        // A percentile is the top of its histogram bucket, at most 1/1024 above.
        let max = figure(&f, "wake_max_ns");
        assert!(figure(&f, "wake_p99_ns") <= max + max / 1000 + 1);
        assert!(figure(&f, "compute_p50_ns") <= figure(&f, "compute_p99_ns"));
    }
}

#[test]
fn a_sigkilled_c_loop_leaves_its_page_and_the_next_run_sweeps_it() {
    let dir = tempfile::tempdir().unwrap();
    let exe = build_c_example(dir.path());
    let _serial = serial();

    let killed = Reap(Some(start_loop(&exe, dir.path(), Linking::Static, "0")));
    let pid = killed.pid();
    let page = page_of(pid).expect("a page while it runs");
    let _left = RemoveOnDrop(page.clone());
    signal(pid, "-KILL");
    let out = killed.wait();
    assert!(!out.status.success());
    assert!(
        page.exists(),
        "SIGKILL leaves the page: nothing ran to remove it"
    );

    // SIGTERM: the loop stops cleanly, its own count still the library's.
    let next = Reap(Some(start_loop(&exe, dir.path(), Linking::Static, "0")));
    let next_page = page_of(next.pid()).expect("a page while it runs");
    assert!(!page.exists(), "the next run swept the dead task's page");
    signal(next.pid(), "-TERM");
    let out = next.wait();
    assert!(out.status.success(), "{out:?}");
    assert!(!next_page.exists());
    let f = figures(&out);
    assert_eq!(figure(&f, "own_cycles"), figure(&f, "cycles"));
}

/// Removes a file when dropped (a test that fails keeps nothing).
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Calls the ABI with bad input from C and prints each code and message.
const BAD_INPUT: &str = r#"
#include <latlab/periodic.h>
#include <stdio.h>

static int step(const latlab_cycle *cycle, void *data) { (void)cycle; (void)data; return 1; }

static void show(const char *what, int code) {
    printf("%s|%d|%s|%s\n", what, code, latlab_periodic_strerror(code), latlab_periodic_last_error());
}

int main(void) {
    latlab_periodic *task = (latlab_periodic *)1;
    latlab_periodic_config config;
    show("new(NULL)", latlab_periodic_new(NULL, &task));
    printf("task|%s\n", task == NULL ? "NULL" : "set");
    show("config_default(NULL)", latlab_periodic_config_default(NULL));
    latlab_periodic_config_default(&config);
    show("period 0", latlab_periodic_new(&config, &task));
    config.period_ns = 1000000;
    config.policy = LATLAB_POLICY_FIFO;
    config.priority = 100;
    show("priority 100", latlab_periodic_new(&config, &task));
    show("run(NULL)", latlab_periodic_run(NULL, step, NULL));
    show("stats(NULL)", latlab_periodic_stats(NULL, NULL));
    printf("stop(NULL)|%d\n", latlab_periodic_stop(NULL));
    latlab_periodic_free(NULL);
    config.priority = 50;
    config.publish = false;
    config.quiet = true;
    printf("valid|%d\n", latlab_periodic_new(&config, &task));
    latlab_stats stats;
    show("stats before run", latlab_periodic_stats(task, &stats));
    show("run(step NULL)", latlab_periodic_run(task, NULL, NULL));
    latlab_periodic_free(task);
    return 0;
}
"#;

#[test]
fn bad_input_through_the_c_abi_returns_the_documented_codes_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("prefix");
    install(&prefix);
    let source = dir.path().join("bad.c");
    std::fs::write(&source, BAD_INPUT).unwrap();
    let exe = dir.path().join("bad");
    compile(&prefix, &source, &exe, Linking::Static);
    let out = Command::new(&exe).output().expect("run the C program");
    assert!(out.status.success(), "{out:?}");
    insta::assert_snapshot!(String::from_utf8_lossy(&out.stdout), @r"
    new(NULL)|-1|a pointer argument was NULL|config: is NULL; pass a valid pointer
    task|NULL
    config_default(NULL)|-1|a pointer argument was NULL|config: is NULL; pass a valid pointer
    period 0|-2|a setting is out of range|config.period_ns: give a period from 1 µs to 1 h (it was not set, or out of range)
    priority 100|-2|a setting is out of range|config.priority: fifo and rr take a priority from 1 to 99
    run(NULL)|-1|a pointer argument was NULL|task: is NULL; pass a valid pointer
    stats(NULL)|-1|a pointer argument was NULL|task: is NULL; pass a valid pointer
    stop(NULL)|-1
    valid|0
    stats before run|-4|the task is not in a state for this call|latlab_periodic_stats: the task's run has not ended; call it after latlab_periodic_run returns LATLAB_OK
    run(step NULL)|-1|a pointer argument was NULL|step: is NULL; pass a valid pointer
    ");
}

/// A task on a thread of a process whose main thread has ended (`pthread_exit` in
/// `main`): the process is a zombie leader whose other threads run on.
const ORPHAN_THREAD: &str = r#"
#include <latlab/periodic.h>
#include <pthread.h>

static int step(const latlab_cycle *cycle, void *data) { (void)data; return cycle->index >= 3000; }

static void *loop(void *arg) {
    (void)arg;
    latlab_periodic_config config;
    latlab_periodic_config_default(&config);
    config.period_ns = 1000000;
    config.lock_memory = false;
    config.quiet = true;
    latlab_periodic *task;
    if (latlab_periodic_new(&config, &task) == LATLAB_OK) {
        latlab_periodic_run(task, step, NULL);
        latlab_periodic_free(task);
    }
    return NULL;
}

int main(void) {
    pthread_t thread;
    if (pthread_create(&thread, NULL, loop, NULL) != 0)
        return 1;
    pthread_exit(NULL);
}
"#;

#[test]
fn a_task_outliving_its_main_thread_is_attached_to_not_swept() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("prefix");
    install(&prefix);
    let source = dir.path().join("orphan.c");
    std::fs::write(&source, ORPHAN_THREAD).unwrap();
    let exe = dir.path().join("orphan");
    compile(&prefix, &source, &exe, Linking::Static);
    let _serial = serial();
    let app = Reap(Some(
        Command::new(&exe)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the program"),
    ));
    let pid = app.pid();
    let page = page_of(pid).expect("a page while the task runs");
    // The main thread is gone: the leader is a zombie.
    let until = Instant::now() + Duration::from_secs(5);
    while latlab_rt::process::is_alive(pid) {
        assert!(
            Instant::now() < until,
            "the main thread of {pid} did not end"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = crate::common::latlab()
        .args([
            "attach",
            &pid.to_string(),
            "-d",
            "300ms",
            // The example does not lock its memory: degraded, which is not what is
            // tested here.
            "--accept",
            "untrusted",
            "-q",
            "--no-store",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("Detached while the task runs"),
        "{out:?}"
    );
    assert!(page.exists(), "the live task's page was swept");
    let out = app.wait();
    assert!(out.status.success(), "{out:?}");
    assert!(!page.exists(), "the page outlives the task");
}

/// The `latlab_*` functions `nm` finds defined in `library`.
fn exported(library: &Path, dynamic: bool) -> Vec<String> {
    needs("nm", "binutils");
    let mut nm = Command::new("nm");
    if dynamic {
        nm.arg("-D");
    }
    let out = nm
        .args(["--defined-only", "--format=posix"])
        .arg(library)
        .output()
        .expect("run nm");
    assert!(out.status.success(), "nm {}: {out:?}", library.display());
    let mut names: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let (name, kind) = (fields.next()?, fields.next()?);
            (kind == "T" && name.starts_with("latlab_")).then(|| name.to_string())
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

#[test]
fn the_installed_libraries_export_exactly_what_the_installed_header_declares() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("prefix");
    install(&prefix);
    let header = std::fs::read_to_string(prefix.join("include/latlab/periodic.h")).unwrap();
    let mut declared: Vec<String> = header
        .lines()
        .filter(|line| !line.starts_with(' ') && !line.starts_with("typedef"))
        .filter_map(|line| {
            let name = line.split('(').next()?.rsplit([' ', '*']).next()?;
            (line.contains('(') && name.starts_with("latlab_")).then(|| name.to_string())
        })
        .collect();
    declared.sort();
    assert_eq!(declared.len(), 10, "{declared:?}");
    for (library, dynamic) in [
        ("liblatlab_periodic.so", true),
        ("liblatlab_periodic.a", false),
    ] {
        assert_eq!(
            exported(&prefix.join("lib").join(library), dynamic),
            declared,
            "{library} against periodic.h"
        );
    }
}
