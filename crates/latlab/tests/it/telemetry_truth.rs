//! Ground truth of the telemetry beside the timeline: a loopback UDP flood we start
//! on the measured CPU in the second half of a run raises its NET_RX softirqs in the
//! flood's intervals (a loopback packet is received in softirq context on the sending
//! CPU, with no device interrupt; `ping -f` would do the same, where it is
//! installed), and when the flood's intervals are where the
//! spikes are, the correlation names NET_RX. Sources this machine lacks are unknown
//! with the reason, never zero.

use crate::common::{measure, needs, serial};
use latlab_model::run::Run;
use latlab_model::spike_correlation::BurstRule;
use latlab_model::telemetry::{Series, SeriesKind, SourceState};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The measured CPU (the machine has two).
const CPU: usize = 1;

/// A flood we started, ended by its pid when dropped (also when an assertion fails).
struct Flood(Option<Child>);

impl Drop for Flood {
    fn drop(&mut self) {
        if let Some(child) = self.0.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Sends UDP datagrams to a loopback socket as fast as it can, pinned to [`CPU`],
/// from `delay` on for `seconds`.
fn flood_after(delay: Duration, seconds: u32) -> std::thread::JoinHandle<Flood> {
    std::thread::spawn(move || {
        std::thread::sleep(delay);
        let flood = format!(
            "import socket, time\n\
             r = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n\
             r.bind(('127.0.0.1', 0))\n\
             s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n\
             end = time.monotonic() + {seconds}\n\
             while time.monotonic() < end:\n\
             \x20   for _ in range(1000): s.sendto(b'x' * 64, r.getsockname())\n"
        );
        let child = Command::new("taskset")
            .args(["-c", &CPU.to_string(), "python3", "-c", &flood])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok();
        Flood(child)
    })
}

/// The measured CPU's NET_RX series.
fn net_rx(run: &Run) -> &Series {
    let telemetry = run.telemetry.as_ref().expect("telemetry is on by default");
    telemetry.phases[0]
        .series
        .iter()
        .find(|s| s.cpu == CPU && s.kind == SeriesKind::Softirq && s.name == "NET_RX")
        .expect("NET_RX changed on the measured CPU during a loopback flood there")
}

#[test]
fn a_loopback_flood_on_the_measured_cpu_raises_net_rx_and_is_named_where_it_spikes() {
    let _slot = serial();
    needs("taskset", "util-linux");
    needs("python3", "python3");
    // 8 s in quarter seconds: the flood covers about 12 of 32 intervals, from about
    // the middle (latlab takes well under a second to start measuring).
    let flooding = flood_after(Duration::from_millis(4_500), 3);
    let cpu = CPU.to_string();
    let (code, run, out) = measure(&[
        "-c",
        &cpu,
        "-d",
        "8s",
        "--interval",
        "250ms",
        "--spike",
        "100us",
    ]);
    let _flood = flooding.join().expect("the flood's starter ran");
    assert_eq!(code, 0, "{out}");
    let telemetry = run.telemetry.as_ref().unwrap();
    assert_eq!(telemetry.phases[0].cpus, vec![CPU]);
    assert_ne!(
        telemetry.sampler_cpu,
        Some(CPU),
        "sampled from the measured CPU"
    );

    // The counts rise in the flood's intervals: the busiest of the second half is far
    // above anything in the first quarter.
    let series = net_rx(&run);
    let values: Vec<u64> = series.values.iter().map(|v| v.unwrap_or(0)).collect();
    assert!(values.len() >= 30, "{} intervals of 250 ms", values.len());
    let quiet = values[..8].iter().max().copied().unwrap_or(0);
    let flooded = values[values.len() / 2..]
        .iter()
        .max()
        .copied()
        .unwrap_or(0);
    assert!(
        flooded > 10 * quiet + 1_000,
        "NET_RX per interval: {values:?}"
    );

    // When the spikes sit in the flood's intervals, the correlation names NET_RX.
    let stream = &run.streams[0];
    let level = stream.spikes.threshold_ns.unwrap();
    let spiky: Vec<bool> = stream
        .timeline
        .max_ns
        .iter()
        .map(|m| m.is_some_and(|m| m > level))
        .collect();
    let bursts = BurstRule::bursts(series);
    let (mut in_bursts, mut bursts_n, mut elsewhere, mut quiet_n) = (0, 0, 0, 0);
    for (burst, spike) in bursts.iter().zip(&spiky) {
        match burst {
            Some(true) => (bursts_n += 1, in_bursts += usize::from(*spike)),
            Some(false) => (quiet_n += 1, elsewhere += usize::from(*spike)),
            None => ((), ()),
        };
    }
    let named = telemetry
        .correlations
        .iter()
        .any(|c| c.cpu == CPU && c.kind == SeriesKind::Softirq && c.name == "NET_RX");
    if bursts_n >= 8 && in_bursts * 4 >= bursts_n * 3 && elsewhere * 4 <= quiet_n {
        assert!(
            named,
            "spikes in {in_bursts} of {bursts_n} flood intervals and {elsewhere} of {quiet_n} \
             others, but NET_RX is not named: {:?}",
            telemetry.correlations
        );
    }

    // What this machine lacks is unknown, with the reason.
    let state = |name: &str| {
        telemetry
            .sources
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no source {name}"))
    };
    let absent = |path: String, source: &str, reason: &str| {
        if !Path::new(&path).exists() {
            let s = state(source);
            assert_eq!(s.state, SourceState::Unknown, "{s:?}");
            assert!(s.reason.as_deref().unwrap_or("").contains(reason), "{s:?}");
            assert!(
                telemetry.phases[0]
                    .series
                    .iter()
                    .all(|s| s.kind != kind_of(source)),
                "an unknown source has series"
            );
        }
    };
    absent(
        format!("/dev/cpu/{CPU}/msr"),
        "smi",
        "msr module is not loaded",
    );
    absent(
        format!("/sys/devices/system/cpu/cpu{CPU}/cpufreq"),
        "frequency",
        "cpufreq",
    );
    absent(
        format!("/sys/devices/system/cpu/cpu{CPU}/thermal_throttle"),
        "thermal-throttle",
        "thermal_throttle",
    );
    assert_eq!(state("interrupts").state, SourceState::Measured);
}

/// The series kind of a source's name.
fn kind_of(source: &str) -> SeriesKind {
    match source {
        "smi" => SeriesKind::Smi,
        "frequency" => SeriesKind::Frequency,
        _ => SeriesKind::Throttle,
    }
}

#[test]
fn no_telemetry_leaves_it_out_of_the_run() {
    let _slot = serial();
    let (code, run, out) = measure(&["-c", &CPU.to_string(), "-d", "1s", "--no-telemetry"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(run.telemetry, None);
}
