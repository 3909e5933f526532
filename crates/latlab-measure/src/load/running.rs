//! The parent's side of a load: start its worker in a new process group with a
//! private directory, follow its reports, stop it within a second, and leave nothing
//! behind — on a normal end, and from `Drop` on every other path.

use super::worker::{worker_name, WorkerArgs};
use super::{LoadError, LoadSpec};
use latlab_model::run::{CpuTime, LoadRecord};
use latlab_model::Nanos;
use latlab_rt::process;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a load may take to say it is ready.
const READY_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a load gets to stop after SIGTERM before it is killed.
const STOP_GRACE: Duration = Duration::from_millis(800);

/// What the worker has reported so far.
#[derive(Debug, Default, Clone)]
struct Progress {
    ready: bool,
    work: u64,
    elapsed_ns: u64,
    end: Option<String>,
    notes: Vec<String>,
    cpu_time: Option<CpuTime>,
}

/// A load running in its own process group.
pub struct RunningLoad {
    spec: LoadSpec,
    cpus: Vec<usize>,
    child: Child,
    pgid: u32,
    dir: Option<tempfile::TempDir>,
    progress: Arc<Mutex<Progress>>,
    reader: Option<JoinHandle<()>>,
    stopped: bool,
}

impl RunningLoad {
    /// Checks and starts a load on `cpus`, with a private directory under `base` (the
    /// system's temporary directory when `None`), and waits until it is running.
    pub fn start(
        spec: &LoadSpec,
        cpus: &[usize],
        base: Option<&Path>,
        exe: &Path,
    ) -> Result<RunningLoad, LoadError> {
        let base = base
            .map(Path::to_path_buf)
            .unwrap_or_else(std::env::temp_dir);
        // Private (0700): the load's files are nobody else's business. The owner's pid
        // is in the name, so a later latlab can tell a dead run's directory from a live
        // one's ([`sweep_stale_dirs`]).
        let dir = tempfile::Builder::new()
            .prefix(&dir_prefix(std::process::id()))
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir_in(&base)
            .map_err(|e| {
                LoadError::Unavailable(format!(
                    "load {}: cannot create a directory in {}: {e}",
                    spec.name,
                    base.display()
                ))
            })?;
        spec.load().check(&spec.params, dir.path())?;
        let worker = WorkerArgs {
            spec: spec.text.clone(),
            dir: dir.path().to_path_buf(),
            cpus: cpus.to_vec(),
        };
        let child = Command::new(exe)
            .arg0(worker_name(&spec.name))
            .args(worker.to_args())
            .env(
                latlab_rt::process::LOAD_OWNER_ENV,
                latlab_rt::process::load_owner_mark(),
            )
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| LoadError::Unavailable(format!("cannot start load {}: {e}", spec.name)))?;
        let pgid = child.id();
        let mut load = RunningLoad {
            spec: spec.clone(),
            cpus: cpus.to_vec(),
            child,
            pgid,
            dir: Some(dir),
            progress: Arc::new(Mutex::new(Progress::default())),
            reader: None,
            stopped: false,
        };
        let stdout = load.child.stdout.take().expect("stdout is piped");
        let progress = load.progress.clone();
        load.reader = Some(std::thread::spawn(move || follow(stdout, &progress)));
        load.wait_ready()?;
        Ok(load)
    }

    fn progress(&self) -> Progress {
        self.progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn wait_ready(&mut self) -> Result<(), LoadError> {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            let p = self.progress();
            if p.ready {
                return Ok(());
            }
            if let Some(end) = p.end {
                return Err(LoadError::Unavailable(format!(
                    "load {} could not start: {}",
                    self.spec.text,
                    end.trim_start_matches("failed ")
                )));
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                // Its last words may still be on their way through the pipe.
                let said = Instant::now() + Duration::from_millis(500);
                while self.progress().end.is_none() && Instant::now() < said {
                    std::thread::sleep(Duration::from_millis(5));
                }
                let why = match self.progress().end {
                    Some(end) => end.trim_start_matches("failed ").to_string(),
                    None => format!("its worker exited ({status})"),
                };
                return Err(LoadError::Unavailable(format!(
                    "load {} could not start: {why}",
                    self.spec.text
                )));
            }
            if Instant::now() > deadline {
                return Err(LoadError::Unavailable(format!(
                    "load {} did not start within {} s",
                    self.spec.text,
                    READY_TIMEOUT.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Stops several loads at once: all are asked first, then each is waited for, so
    /// the grace periods overlap.
    pub fn stop_all(mut loads: Vec<RunningLoad>) -> Vec<LoadRecord> {
        // Whether each ended on its own is settled before any is asked to stop.
        let early: Vec<Option<String>> = loads.iter_mut().map(|l| l.ended_on_its_own()).collect();
        for load in &loads {
            let _ = process::signal_group(load.pgid, signal_hook::consts::SIGTERM);
        }
        loads
            .into_iter()
            .zip(early)
            .map(|(load, early)| load.stop_with(early))
            .collect()
    }

    /// How the load ended, if it ended before being asked to stop.
    fn ended_on_its_own(&mut self) -> Option<String> {
        self.progress().end.clone().or_else(|| {
            self.child
                .try_wait()
                .ok()
                .flatten()
                .map(|s| format!("exited ({s})"))
        })
    }

    /// Stops the load (SIGTERM to its group, SIGKILL after a grace period), reaps every
    /// process of its group, removes its directory, and says what it achieved.
    pub fn stop(mut self) -> LoadRecord {
        let early = self.ended_on_its_own();
        self.stop_with(early)
    }

    /// The load's record as it runs, for a checkpoint: the work it has reported so
    /// far and its rate over that time; `ended` says it was running, and it has taken
    /// no time to stop.
    pub fn so_far(&self) -> LoadRecord {
        let mut record = self.record(self.progress(), Nanos::ZERO);
        record.ended = "running (at the checkpoint)".to_string();
        record
    }

    fn stop_with(mut self, ended_early: Option<String>) -> LoadRecord {
        let t0 = Instant::now();
        self.terminate();
        let stop_ns = Nanos(t0.elapsed().as_nanos() as i64);
        let p = self.progress();
        let mut record = self.record(p, stop_ns);
        record.ended = match ended_early {
            Some(end) if end != "ok" => format!("ended early: {end}"),
            Some(_) => "ended early: finished (exit status 0)".to_string(),
            None => "stopped".to_string(),
        };
        record
    }

    /// The record of the load with progress `p`, `stop_ns` spent stopping it.
    fn record(&self, p: Progress, stop_ns: Nanos) -> LoadRecord {
        let work = self.spec.info().work;
        let elapsed_ns = p.elapsed_ns.max(1);
        LoadRecord {
            spec: self.spec.text.clone(),
            name: self.spec.name.clone(),
            params: self.spec.params.clone(),
            cpus: self.cpus.clone(),
            work: p.work,
            unit: work.unit.to_string(),
            rate: (p.work > 0).then(|| p.work as f64 * work.scale / (elapsed_ns as f64 / 1e9)),
            rate_unit: work.rate_unit.to_string(),
            elapsed_ns: Nanos(elapsed_ns as i64),
            ended: String::new(),
            stop_ns,
            notes: p.notes,
            cpu_time: p.cpu_time,
        }
    }

    /// Ends every process of the group and removes the directory.
    fn terminate(&mut self) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        let _ = process::signal_group(self.pgid, signal_hook::consts::SIGTERM);
        // The grace period covers every process of the group, not only the worker.
        let deadline = Instant::now() + STOP_GRACE;
        while Instant::now() < deadline {
            let _ = self.child.try_wait();
            process::reap_group(self.pgid);
            if !process::group_exists(self.pgid) {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            process::reap_group(self.pgid);
            if !process::group_exists(self.pgid) || Instant::now() > deadline {
                break;
            }
            let _ = process::signal_group(self.pgid, signal_hook::consts::SIGKILL);
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = self.child.wait();
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        if let Some(dir) = self.dir.take() {
            let _ = dir.close();
        }
    }
}

impl Drop for RunningLoad {
    fn drop(&mut self) {
        self.terminate();
    }
}

/// The start of the name of a load directory made by process `pid`:
/// `latlab-load-<pid>-`, then random characters.
fn dir_prefix(pid: u32) -> String {
    format!("latlab-load-{pid}-")
}

/// The pid in a load directory's name, if it is one.
fn dir_owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("latlab-load-")?;
    match rest.split_once('-')? {
        (_, "") => None,
        (pid, _) => pid.parse().ok(),
    }
}

/// Removes the load directories in `base` that a latlab killed before it could clean
/// up left behind (SIGKILL, OOM kill, power loss): those of this user whose owner's
/// pid is no longer running. A directory of a running latlab is never touched.
/// Returns what was removed.
pub fn sweep_stale_dirs(base: &Path) -> Vec<std::path::PathBuf> {
    process::leftovers(base, dir_owner, |t| t.is_dir())
        .into_iter()
        .filter(|left| std::fs::remove_dir_all(&left.path).is_ok())
        .map(|left| left.path)
        .collect()
}

/// Reads the worker's reports until it closes its output.
fn follow(stdout: std::process::ChildStdout, progress: &Mutex<Progress>) {
    for line in BufReader::new(stdout).lines() {
        let Ok(line) = line else { break };
        let mut p = progress.lock().unwrap_or_else(|e| e.into_inner());
        let mut words = line.splitn(3, ' ');
        match words.next() {
            Some("ready") => p.ready = true,
            Some("count") => {
                let work = words.next().and_then(|w| w.parse().ok());
                let elapsed = words.next().and_then(|w| w.parse().ok());
                if let (Some(work), Some(elapsed)) = (work, elapsed) {
                    p.work = work;
                    p.elapsed_ns = elapsed;
                }
            }
            Some("end") => p.end = Some(line["end ".len().min(line.len())..].to_string()),
            Some("cpu") => {
                let user = words.next().and_then(|w| w.parse().ok());
                let system = words.next().and_then(|w| w.parse().ok());
                if let (Some(user), Some(system)) = (user, system) {
                    p.cpu_time = Some(CpuTime {
                        user_ns: Nanos(user),
                        system_ns: Nanos(system),
                    });
                }
            }
            Some("note") => p
                .notes
                .push(line["note ".len().min(line.len())..].to_string()),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_directory_names_give_back_their_owner() {
        let name = format!("{}Xy12Ab", dir_prefix(4_194_303));
        assert_eq!(dir_owner(&name), Some(4_194_303));
        assert_eq!(dir_owner("latlab-load-12-"), None);
        assert_eq!(dir_owner("latlab-load-abc-x"), None);
        assert_eq!(dir_owner("latlab-load-Xy12Ab"), None);
        assert_eq!(dir_owner("other-12-x"), None);
    }

    #[test]
    fn the_sweep_removes_only_dead_owners_directories() {
        let base = tempfile::tempdir().unwrap();
        let live = base
            .path()
            .join(format!("{}live", dir_prefix(std::process::id())));
        // A child that has exited and been reaped: its pid names no process.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        child.wait().unwrap();
        let dead = base.path().join(format!("{}dead", dir_prefix(child.id())));
        let unrelated = base.path().join("latlab-loader-1-x");
        for dir in [&live, &dead, &unrelated] {
            std::fs::create_dir(dir).unwrap();
            std::fs::write(dir.join("data"), b"x").unwrap();
        }
        if process::is_alive(child.id()) {
            return; // the pid was taken again at once: nothing to test this time
        }
        assert_eq!(sweep_stale_dirs(base.path()), vec![dead.clone()]);
        assert!(live.exists() && unrelated.exists() && !dead.exists());
    }
}
