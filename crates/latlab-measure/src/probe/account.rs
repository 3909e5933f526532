//! The accounting the periodic probes' workers keep (two-task, scheduling, clock,
//! noise, signal), whatever paces their cycles: the samples, the measured cycles
//! without one, the warm-up samples, the measured span and its page faults — and the
//! stream they make.

use super::info::{self, Measured, ProbeInfo, ProbeSetup};
use super::Placement;
use crate::live::LiveStats;
use crate::record::SampleRecorder;
use latlab_model::run::Stream;
use latlab_model::Nanos;

/// Samples and missed cycles of one worker, as its stream reports them.
#[derive(Debug)]
pub(super) struct Account {
    pub(super) recorder: SampleRecorder,
    /// Measured cycles without a sample.
    pub(super) missed: u64,
    pub(super) warm_up_samples: u64,
    pub(super) first: Option<Nanos>,
    pub(super) elapsed: Nanos,
    pub(super) page_faults: u64,
}

impl Account {
    pub(super) fn new(recorder: SampleRecorder) -> Account {
        Account {
            recorder,
            missed: 0,
            warm_up_samples: 0,
            first: None,
            elapsed: Nanos(0),
            page_faults: 0,
        }
    }

    /// Records a measured sample at `at` (ns into the measured span), published with
    /// the `missed` cycles counted just before it.
    #[inline(always)]
    pub(super) fn record(&mut self, sample: i64, at: i64, missed: u64, live: &LiveStats) {
        self.recorder.record(sample, at);
        live.publish(sample, missed);
        if self.first.is_none() {
            self.first = Some(Nanos(sample));
        }
    }

    /// Counts `cycles` measured cycles without a sample.
    #[inline(always)]
    pub(super) fn miss(&mut self, cycles: u64, live: &LiveStats) {
        self.missed += cycles;
        self.recorder.count_missed(cycles);
        live.publish_missed(cycles);
    }

    /// Forgets what the rehearsal left.
    pub(super) fn reset(&mut self, live: &LiveStats) {
        self.recorder.reset();
        self.missed = 0;
        self.warm_up_samples = 0;
        self.first = None;
        live.reset();
    }

    /// The stream of this worker.
    pub(super) fn stream(
        &self,
        info: &'static ProbeInfo,
        setup: &ProbeSetup,
        placement: &Placement,
        phase: &str,
    ) -> Stream {
        info::stream_of(
            Measured {
                info,
                setup,
                placement,
                recorder: &self.recorder,
                missed: self.missed,
                warm_up_samples: self.warm_up_samples,
                first_sample: self.first,
                elapsed: self.elapsed,
                page_faults: self.page_faults,
            },
            phase,
        )
    }
}
