//! The spike rate against a rate we make: a SCHED_FIFO 99 task on the measured CPU,
//! busy for 5 ms every 50 ms, delays one wake-up by 4–5 ms per spin (the deadlines its
//! spin passes after the first are missed, not sampled). The rate of samples above
//! 3 ms must hold the spinner's own rate, by its own clock, in its 95 % interval.

use crate::common::{measure, serial};
use crate::explain_truth::Spinner;
use latlab_model::rate::{self, SpikeRate};
use latlab_model::Nanos;
use std::time::Duration;

/// The measured CPU (the machine has two).
const CPU: usize = 1;

#[test]
fn the_spike_rate_holds_the_rate_of_an_interferer_we_start() {
    let _guard = serial();
    let spinner = Spinner::start(CPU, 99, Duration::from_millis(5), Duration::from_millis(50));
    let (code, run, out) = measure(&[
        "-c",
        &CPU.to_string(),
        "-P",
        "f:95",
        "-p",
        "1ms",
        "-d",
        "10s",
        "--spike",
        "3ms",
    ]);
    let spins = spinner.finish();
    assert_eq!(code, 0, "{out}");
    // The spinner's rate by its own clock: spins over the time from its first to its last.
    let (first, last) = (spins.first().unwrap().0, spins.last().unwrap().0);
    let true_per_hour = (spins.len() - 1) as f64 / ((last - first) as f64 / 3_600e9);
    assert_eq!(rate::level_of(&run), Nanos(3_000_000), "the --spike level");
    let r = SpikeRate::of_stream(&run.streams[0], Nanos(3_000_000), rate::CONFIDENCE).unwrap();
    assert!(
        r.per_hour_low <= true_per_hour && true_per_hour <= r.per_hour_high,
        "{true_per_hour:.0}/h is outside {:.0}–{:.0}/h ({} samples above 3 ms in {})",
        r.per_hour_low,
        r.per_hour_high,
        r.count,
        r.span_ns
    );
    // The mean time between spikes is the spinner's period, within the interval's reach.
    let between = r.mean_time_between().unwrap().0 as f64 / 1e6;
    let (shortest, longest) = (3_600e3 / r.per_hour_high, 3_600e3 / r.per_hour_low);
    assert!(
        shortest <= 50.0 && 50.0 <= longest,
        "mean time between {between:.1} ms; the interval allows {shortest:.1}–{longest:.1} ms"
    );
    assert!(
        out.contains("Above 3 ms:"),
        "the summary says the rate: {out}"
    );
}
