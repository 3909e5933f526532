//! What a long run's checkpoints are made of while a phase measures: each measuring
//! thread's stream as it stands, taken without stopping or slowing the thread.
//!
//! Before measuring, each thread registers its recorder's [`Handover`] and its
//! stream's template (what does not change while measuring: probe, CPU, policy,
//! period). A checkpoint writer — a thread of its own, never a measuring one — calls
//! [`PhaseCheckpoint::streams`]: it asks every thread for a copy, which each thread
//! makes at its next sample (see `SampleRecorder`), and turns the copies into streams.
//! A thread that gives no sample in time (it blocks, or stopped) keeps the stream of
//! the previous checkpoint.

use crate::record::SampleRecorder;
use latlab_model::run::Stream;
use latlab_rt::handover::Handover;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How often a checkpoint looks whether the threads have handed their copies over.
const POLL: Duration = Duration::from_millis(1);

/// One recorder of a measuring thread, as checkpoints see it.
#[derive(Default)]
struct Slot {
    handover: Option<Arc<Handover<SampleRecorder>>>,
    template: Option<Stream>,
    /// The stream of the last checkpoint, for a thread that does not answer.
    last: Option<Stream>,
}

/// The checkpoints of one phase's measuring threads: a slot per recorder, each thread's
/// (one, or one per thing a probe measures on its CPU) in order.
#[derive(Default)]
pub struct PhaseCheckpoint {
    slots: Mutex<Vec<Vec<Slot>>>,
    /// Set when the threads start measuring: nothing is asked of them before.
    measuring: AtomicBool,
}

impl std::fmt::Debug for PhaseCheckpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PhaseCheckpoint")
            .field("measuring", &self.measuring.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl PhaseCheckpoint {
    /// Checkpoints for a phase of `threads` measuring threads.
    pub fn new(threads: usize) -> Arc<PhaseCheckpoint> {
        Arc::new(PhaseCheckpoint {
            slots: Mutex::new((0..threads).map(|_| Vec::new()).collect()),
            measuring: AtomicBool::new(false),
        })
    }

    fn slots(&self) -> MutexGuard<'_, Vec<Vec<Slot>>> {
        // A panic elsewhere while holding the lock leaves the slots usable.
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Recorder `part` of thread `thread` hands its copies over through `handover`
    /// (set up before measuring).
    pub(crate) fn register(
        &self,
        thread: usize,
        part: usize,
        handover: Arc<Handover<SampleRecorder>>,
    ) {
        if let Some(parts) = self.slots().get_mut(thread) {
            if parts.len() <= part {
                parts.resize_with(part + 1, Slot::default);
            }
            parts[part].handover = Some(handover);
        }
    }

    /// Thread `thread`'s streams before measuring, one per recorder part.
    pub(crate) fn describe(&self, thread: usize, templates: Vec<Stream>) {
        if let Some(parts) = self.slots().get_mut(thread) {
            if parts.len() < templates.len() {
                parts.resize_with(templates.len(), Slot::default);
            }
            for (slot, template) in parts.iter_mut().zip(templates) {
                slot.template = Some(template);
            }
        }
    }

    /// The threads are measuring: checkpoints may ask them from now on.
    pub(crate) fn start(&self) {
        self.measuring.store(true, Ordering::Release);
    }

    /// Whether the threads are measuring (a checkpoint before has nothing to show).
    pub fn is_measuring(&self) -> bool {
        self.measuring.load(Ordering::Acquire)
    }

    /// Every thread's stream as it stands, in thread order: asks each for a copy and
    /// waits up to `wait` for them; a thread that gives none in time keeps its
    /// previous checkpoint's stream, and one that never gave any has none (so fewer
    /// streams than threads can come back).
    pub fn streams(&self, wait: Duration) -> Vec<Stream> {
        if !self.is_measuring() {
            return Vec::new();
        }
        // The lock is held only to copy the handles out: the threads never take it
        // while measuring, and this side does not hold it while waiting.
        let handles: Vec<_> = self
            .slots()
            .iter()
            .flatten()
            .map(|s| s.handover.clone().zip(s.template.clone()))
            .collect();
        for (handover, _) in handles.iter().flatten() {
            handover.ask();
        }
        let deadline = Instant::now() + wait;
        let mut fresh: Vec<Option<Stream>> = vec![None; handles.len()];
        loop {
            for (i, (handover, template)) in handles
                .iter()
                .enumerate()
                .filter_map(|(i, h)| Some((i, h.as_ref()?)))
            {
                if fresh[i].is_none() {
                    fresh[i] = handover.take(|copy| copy.checkpoint_stream(template));
                }
            }
            let waiting = handles
                .iter()
                .zip(&fresh)
                .any(|(h, f)| h.is_some() && f.is_none());
            if !waiting || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(POLL);
        }
        // Withdraw what was not answered; a copy handed over meanwhile is taken.
        for (i, (handover, template)) in handles
            .iter()
            .enumerate()
            .filter_map(|(i, h)| Some((i, h.as_ref()?)))
        {
            if fresh[i].is_none() && !handover.withdraw() {
                fresh[i] = handover.take(|copy| copy.checkpoint_stream(template));
            }
        }
        let mut slots = self.slots();
        slots
            .iter_mut()
            .flatten()
            .zip(fresh)
            .filter_map(|(slot, fresh)| {
                if let Some(stream) = fresh {
                    slot.last = Some(stream);
                }
                slot.last.clone()
            })
            .collect()
    }
}
