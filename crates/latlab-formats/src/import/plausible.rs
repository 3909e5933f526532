//! A warning when a file's values, read in the unit its importer settled on, cannot be
//! a timer's wake-up latencies: cyclictest's `-h` and `-v` files do not always say
//! whether they hold µs or ns (`-N`), and a wrong guess makes every figure 1000× off.

use super::TimeUnit;
use latlab_model::run::{Run, Warning};
use latlab_model::seal::WarningCode;
use latlab_model::Nanos;

/// Below this minimum latency no working timer wakes every time: read as µs, it says
/// the values are likely ns.
const LARGEST_PLAUSIBLE_MINIMUM: Nanos = Nanos::MILLISECOND;

/// Above this maximum some wake-up of any sample set lies: read as ns, a smaller one
/// says the values are likely µs (cyclictest's own path is longer than that).
const SMALLEST_PLAUSIBLE_MAXIMUM: Nanos = Nanos::MICROSECOND;

/// Adds a warning to `run` when its timer streams' values are implausible in `unit`:
/// every sample a whole period late (or 1 ms, when that is less or the period is not
/// known) in µs, or every sample under 1 µs in ns.
pub(super) fn warn_of_unit(run: &mut Run, unit: TimeUnit) {
    let mut implausible = Vec::new();
    for stream in run
        .streams
        .iter()
        .filter(|s| s.probe == "timer" && s.samples > 0)
    {
        let (Some(min), Some(max)) = (stream.stats.min_ns, stream.stats.max_ns) else {
            continue;
        };
        match unit {
            TimeUnit::Microseconds => {
                let bound = stream.period_ns.map_or(LARGEST_PLAUSIBLE_MINIMUM, |p| {
                    p.min(LARGEST_PLAUSIBLE_MINIMUM)
                });
                if min >= bound {
                    let period = stream
                        .period_ns
                        .map_or(String::new(), |p| format!(" at a {p} period"));
                    implausible.push(format!("{} has minimum {min}{period}", stream.label()));
                }
            }
            TimeUnit::Nanoseconds => {
                if max < SMALLEST_PLAUSIBLE_MAXIMUM {
                    implausible.push(format!("{} has maximum {max}", stream.label()));
                }
            }
        }
    }
    if implausible.is_empty() {
        return;
    }
    let (read_as, likely, fix) = match unit {
        TimeUnit::Microseconds => (
            "µs",
            "ns (cyclictest -N): every figure is 1000 times too large",
            "import it again with --unit ns",
        ),
        TimeUnit::Nanoseconds => (
            "ns",
            "µs (cyclictest without -N): every figure is 1000 times too small",
            "import it again with --unit us",
        ),
    };
    run.warnings.push(Warning::new(
        WarningCode::ImplausibleUnit,
        format!(
            "values read as {read_as} are implausible for a timer's wake-up latency ({}): \
             they are likely {likely}; if so, {fix}",
            implausible.join(", ")
        ),
    ));
}

#[cfg(test)]
mod tests {
    use super::super::{import, Format, ImportContext};
    use super::*;

    /// A one-thread `cyclictest -q -h 4` file whose samples all overflowed, with its
    /// footer's figures, imported in `unit` (`None`: assumed).
    fn imported(min: u64, avg: u64, max: u64, unit: Option<TimeUnit>) -> Run {
        let text = format!(
            "# Histogram\n000000 000000\n000001 000000\n000002 000000\n000003 000000\n\
             # Total: 000000000\n# Min Latencies: {min:05}\n# Avg Latencies: {avg:05}\n\
             # Max Latencies: {max:05}\n# Histogram Overflows: 00003\n\
             # Histogram Overflow at cycle number:\n# Thread 0: 00000 00001 00002\n"
        );
        let mut ctx =
            ImportContext::new("h.txt", "20261121T000000Z-abcdef", "2026-11-21T00:00:00Z");
        ctx.unit = unit;
        import(Format::CyclictestHist, text.as_bytes(), &ctx).unwrap()
    }

    fn codes(run: &Run) -> Vec<&str> {
        run.warnings.iter().map(|w| w.code.as_str()).collect()
    }

    #[test]
    fn ns_values_read_as_us_are_flagged() {
        // cyclictest -N -q -h 4: every sample of 9.5 µs and more is an overflow.
        let run = imported(9_538, 29_460, 685_827, None);
        assert_eq!(codes(&run), ["implausible-unit"]);
        assert!(run.warnings[0].message.contains("--unit ns"));
        assert_eq!(
            codes(&imported(
                9_538,
                29_460,
                685_827,
                Some(TimeUnit::Nanoseconds)
            )),
            [""; 0]
        );
    }

    #[test]
    fn ordinary_us_values_pass() {
        assert_eq!(codes(&imported(7, 28, 744, None)), [""; 0]);
    }

    #[test]
    fn us_values_read_as_ns_are_flagged() {
        let run = imported(7, 28, 744, Some(TimeUnit::Nanoseconds));
        assert_eq!(codes(&run), ["implausible-unit"]);
        assert!(run.warnings[0].message.contains("--unit us"));
    }
}
