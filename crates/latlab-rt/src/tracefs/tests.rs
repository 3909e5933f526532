use super::*;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

#[test]
fn cpu_masks_are_groups_of_32_cpus_highest_first() {
    assert_eq!(cpu_mask(&[]), "0");
    assert_eq!(cpu_mask(&[0, 1]), "3");
    assert_eq!(cpu_mask(&[3]), "8");
    assert_eq!(cpu_mask(&[31]), "80000000");
    assert_eq!(cpu_mask(&[32]), "1,00000000");
    assert_eq!(cpu_mask(&[0, 63]), "80000000,00000001");
    assert_eq!(cpu_mask(&[64, 1]), "1,00000000,00000002");
}

#[test]
fn only_latlab_names_give_an_owner() {
    assert_eq!(owner_of("latlab-123"), Some(123));
    assert_eq!(owner_of("latlab-123-ab"), Some(123));
    assert_eq!(owner_of("latlab-"), None);
    assert_eq!(owner_of("latlab-x1"), None);
    assert_eq!(owner_of("rtla-123"), None);
}

/// tracefs, or a panic saying how to get it: these tests need root and tracefs.
fn root() -> PathBuf {
    tracefs_root().expect(
        "tracefs is not mounted: run the tests as root after `mount -t tracefs nodev /sys/kernel/tracing`",
    )
}

/// The global trace state no instance may change.
fn global_state() -> Vec<(&'static str, String)> {
    let root = root();
    ["tracing_on", "current_tracer", "trace_clock", "set_event"]
        .into_iter()
        .map(|file| {
            let text =
                fs::read_to_string(root.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
            (file, text)
        })
        .collect()
}

fn read(path: &Path) -> String {
    fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .trim()
        .to_string()
}

#[test]
fn an_instance_is_configured_and_removed_without_touching_the_global_state() {
    let before = global_state();
    let mut instance = TraceInstance::create_tagged("configure").unwrap();
    let dir = instance.dir().to_path_buf();
    assert!(dir.is_dir());
    assert_eq!(
        owner_of(&dir.file_name().unwrap().to_string_lossy()),
        Some(std::process::id())
    );
    assert_eq!(read(&dir.join("tracing_on")), "0", "off until asked");

    instance.set_cpus(&[0]).unwrap();
    let mask = read(&dir.join("tracing_cpumask")).replace(',', "");
    assert_eq!(u128::from_str_radix(&mask, 16).unwrap(), 1);
    assert!(matches!(
        instance.set_cpus(&[4095]),
        Err(TraceError::NoCpu { cpu: 4095, .. })
    ));

    instance.set_clock("mono").unwrap();
    assert_eq!(instance.clock().unwrap().as_deref(), Some("mono"));
    assert!(read(&dir.join("trace_clock")).contains("[mono]"));
    let err = instance.set_clock("sundial").unwrap_err();
    assert!(matches!(err, TraceError::ClockUnavailable { .. }), "{err}");
    assert!(err.to_string().contains("mono"), "{err}");

    let kb = instance.set_buffer_size_kb(512).unwrap();
    assert!(kb >= 512, "{kb}");
    assert_eq!(
        read(&dir.join("buffer_size_kb")).split_whitespace().next(),
        Some(kb.to_string().as_str())
    );

    instance.set_event("sched", "sched_switch", true).unwrap();
    assert_eq!(read(&dir.join("events/sched/sched_switch/enable")), "1");
    let format = instance.event_format("sched", "sched_switch").unwrap();
    assert!(read(&format).contains("field:pid_t next_pid"));
    for (system, name) in [("sched", "no_such_event"), ("..", "sched"), ("sched", "")] {
        assert!(matches!(
            instance.set_event(system, name, true),
            Err(TraceError::NoEvent { .. })
        ));
    }
    assert!(instance.trace_pipe_raw(0).unwrap().exists());
    assert!(matches!(
        instance.trace_pipe_raw(4095),
        Err(TraceError::NoCpu { .. })
    ));

    instance.set_tracing(true).unwrap();
    assert_eq!(read(&dir.join("tracing_on")), "1");
    instance.set_event("sched", "sched_switch", false).unwrap();
    assert_eq!(read(&dir.join("events/sched/sched_switch/enable")), "0");
    instance.set_event("sched", "sched_switch", true).unwrap();

    instance.remove().unwrap();
    assert!(!dir.exists());
    instance.remove().unwrap();
    assert_eq!(global_state(), before);
}

#[test]
fn an_open_reader_keeps_the_instance_until_it_is_closed() {
    let mut instance = TraceInstance::create_tagged("busy").unwrap();
    let dir = instance.dir().to_path_buf();
    instance.set_event("sched", "sched_switch", true).unwrap();
    instance.set_tracing(true).unwrap();
    let reader = fs::File::open(instance.trace_pipe_raw(0).unwrap()).unwrap();
    let err = instance.remove().unwrap_err();
    assert!(matches!(err, TraceError::Busy { .. }), "{err}");
    assert!(err.to_string().contains("close the readers"), "{err}");
    assert_eq!(read(&dir.join("tracing_on")), "0", "stopped even so");
    drop(reader);
    instance.remove().unwrap();
    assert!(!dir.exists());
}

#[test]
fn dropping_an_instance_removes_it() {
    let dir = {
        let instance = TraceInstance::create_tagged("drop").unwrap();
        instance.set_event("sched", "sched_wakeup", true).unwrap();
        instance.set_tracing(true).unwrap();
        instance.dir().to_path_buf()
    };
    assert!(!dir.exists());
}

#[test]
fn a_second_instance_of_the_same_name_is_refused() {
    let first = TraceInstance::create_tagged("twice").unwrap();
    let err = TraceInstance::create_tagged("twice").unwrap_err();
    assert!(matches!(err, TraceError::Exists { .. }), "{err}");
    assert!(err.to_string().contains("rmdir"), "{err}");
    assert!(first.dir().is_dir(), "the first is untouched");
}

/// A child shell that made an instance named after its own pid, as a latlab would; it
/// is killed and reaped, and its instance removed, when dropped.
struct InstanceOwner {
    child: Child,
    dir: PathBuf,
}

impl InstanceOwner {
    fn start(tag: &str) -> InstanceOwner {
        let instances = root().join("instances");
        let script = format!("mkdir \"$0/latlab-$$-{tag}\" && exec sleep 60",);
        let child = Command::new("sh")
            .args(["-c", &script])
            .arg(&instances)
            .spawn()
            .unwrap();
        let dir = instances.join(format!("latlab-{}-{tag}", child.id()));
        let owner = InstanceOwner { child, dir };
        let until = Instant::now() + Duration::from_secs(5);
        while !owner.dir.is_dir() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(
            owner.dir.is_dir(),
            "the child made no {}",
            owner.dir.display()
        );
        owner
    }

    /// SIGKILL, as the OOM killer would, then reaped: its pid names no process.
    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for InstanceOwner {
    fn drop(&mut self) {
        self.kill();
        let _ = fs::remove_dir(&self.dir);
    }
}

#[test]
fn the_instance_of_a_killed_process_is_swept_and_a_live_ones_kept() {
    let before = global_state();
    let mut killed = InstanceOwner::start("killed");
    let mut live = InstanceOwner::start("live");
    let own = TraceInstance::create_tagged("sweeper").unwrap();
    killed.kill();

    let removed = sweep_stale();
    let said = |owner: &InstanceOwner, removed: &[String]| {
        removed
            .iter()
            .any(|r| r.contains(&owner.dir.display().to_string()))
    };
    assert!(said(&killed, &removed), "{removed:?}");
    assert!(!killed.dir.exists());
    assert!(!said(&live, &removed), "{removed:?}");
    assert!(live.dir.is_dir(), "a running process's instance is kept");
    assert!(own.dir().is_dir(), "this process's own instance is kept");

    live.kill();
    let removed = sweep_stale();
    assert!(said(&live, &removed), "{removed:?}");
    assert!(!live.dir.exists());
    assert_eq!(global_state(), before);
}

#[test]
fn proc_fd_names_give_their_descriptor() {
    assert_eq!(fd_number(b"0\0\0\0\0"), Some(0));
    assert_eq!(fd_number(b"1023\0"), Some(1023));
    assert_eq!(fd_number(b".\0\0\0\0"), None);
    assert_eq!(fd_number(b"..\0\0\0"), None);
    assert_eq!(fd_number(b"\0"), None);
    assert_eq!(fd_number(b"99999999999\0"), None);
}
