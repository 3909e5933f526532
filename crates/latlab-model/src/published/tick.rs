//! The tick model: how late a relative sleep wakes on Linux 2.4, whose `nanosleep`
//! counts in jiffies, which explains Rapid Reaction Linux's Table 4.
//!
//! On 2.4 a timer expires only at a tick (every 1/HZ s). A relative sleep of P is
//! rounded up to whole ticks and one tick is added, because the sleep starts somewhere
//! inside the current tick (2.4's `sys_nanosleep`: `timespec_to_jiffies` + 1). A
//! periodic loop of such sleeps wakes just after a tick each time, so from the second
//! period on it starts at a tick and wakes tick·(⌈P/tick⌉ + 1) after it: late by
//! tick·(⌈P/tick⌉ + 1) − P. On the 100 Hz 2.4 kernel that is 10·(⌈P/10⌉+1) − P ms. The
//! first period starts anywhere inside a tick, so it is up to one tick shorter, which is
//! the minimum the paper's tables show.
//!
//! This is 2.4's sleep only. A current kernel booted with `highres=off` (or built
//! without `CONFIG_HIGH_RES_TIMERS`) sleeps on hrtimers expired from the tick, without
//! the added jiffy: the model is not what such a kernel should show, and latlab has no
//! model of it.

use crate::Nanos;

/// Nanoseconds per second.
const SECOND_NS: i128 = 1_000_000_000;

/// The steady-state delay of a relative sleep of `period` on Linux 2.4 at `hz`:
/// tick·(⌈period/tick⌉ + 1) − period, rounded to the nanosecond; `None` for a period or
/// tick rate of 0 or less.
pub fn tick_delay(period: Nanos, hz: u32) -> Option<Nanos> {
    if period.0 <= 0 || hz == 0 {
        return None;
    }
    let (period, hz) = (period.0 as i128, hz as i128);
    // ⌈period / tick⌉ with tick = 1 s / hz, in integers: ⌈period·hz / 1 s⌉.
    let ticks = (period * hz + SECOND_NS - 1) / SECOND_NS + 1;
    let woken = (ticks * SECOND_NS + hz / 2) / hz;
    i64::try_from(woken - period).ok().map(Nanos)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::published::table_named;

    #[test]
    fn a_period_on_a_tick_waits_one_tick_more() {
        assert_eq!(tick_delay(Nanos(50_000_000), 100), Some(Nanos(10_000_000)));
        assert_eq!(tick_delay(Nanos(3_250_000), 100), Some(Nanos(16_750_000)));
        assert_eq!(tick_delay(Nanos(1_000_000), 1000), Some(Nanos(1_000_000)));
        assert_eq!(tick_delay(Nanos(1_500_000), 250), Some(Nanos(6_500_000)));
        // A tick of 1/300 s is not whole nanoseconds: 3.333... ms, 3 ticks + 1 = 13.333 ms.
        assert_eq!(tick_delay(Nanos(10_000_000), 300), Some(Nanos(3_333_333)));
        assert_eq!(tick_delay(Nanos(0), 100), None);
        assert_eq!(tick_delay(Nanos(1_000_000), 0), None);
    }

    /// Table 4's means on the 100 Hz kernel, except the 2 ms row (a busy wait, not a
    /// timer), are the model's delay within the rounding the paper prints: one decimal
    /// of a ms, so half of 0.1 ms either way.
    #[test]
    fn the_model_reproduces_rapid_reaction_table_4() {
        let table = table_named("rr-table4").unwrap();
        let mut checked = 0;
        for row in table.row.iter().filter(|r| !r.label.contains("busy wait")) {
            let figures = table.figures(row).unwrap();
            let expected = tick_delay(figures.period.unwrap(), 100).unwrap();
            let mean = figures.mean.unwrap();
            assert!(
                (mean - expected.0 as f64).abs() <= 50_000.0,
                "{}: model {expected}, published mean {mean} ns",
                row.label
            );
            // The first period is up to one tick shorter: the minimum lies within a
            // tick below the mean.
            let min = figures.min.unwrap().0 as f64;
            assert!(min <= mean && min >= mean - 10_000_000.0, "{}", row.label);
            checked += 1;
        }
        assert_eq!(checked, 7);
    }
}
