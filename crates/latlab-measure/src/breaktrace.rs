//! `--breaktrace`: stop the run, and the kernel trace, at the first sample over a limit.
//!
//! One [`Tripwire`] per phase is shared by every recorder of the phase and by the
//! runner. Every probe that records samples honours it through its
//! [`SampleRecorder`](crate::record::SampleRecorder): a sample over the limit, once the
//! runner has armed the wire (after every thread rehearsed), writes a marker into the
//! trace, stops tracing and raises the flag that every measuring loop looks at, so the
//! loop that took the sample ends before its next one (a burst of clock reads ends at
//! it). The `switch` probe's samples are stamped by its partners during a burst and
//! read at the burst's end, when they have all happened: that burst is recorded whole,
//! and the event names the first sample over the limit. Nothing in the ordinary path
//! allocates, locks or calls the kernel; the trip itself may (the measurement ends
//! there), as cyclictest's `-b` does.

use latlab_model::run::Event;
use latlab_model::Nanos;
use latlab_rt::sched;
use latlab_rt::trace::BreakTrace;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicI64, Ordering};
use std::sync::{Arc, OnceLock};

/// The break-trace limit of one phase and what happened to it.
#[derive(Debug)]
pub struct Tripwire {
    limit: Nanos,
    /// The flag every measuring thread of the phase stops at (the runner's halt).
    halt: AtomicBool,
    /// Samples count only once the runner armed the wire: rehearsals record too.
    armed: AtomicBool,
    tripped: AtomicBool,
    value: AtomicI64,
    at: AtomicI64,
    tid: AtomicI32,
    marker_written: AtomicBool,
    trace: OnceLock<Arc<BreakTrace>>,
}

/// The first sample over the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trip {
    /// Its value.
    pub value: Nanos,
    /// When it was due, into the measured span.
    pub at: Nanos,
    /// The kernel thread id of the measuring thread that took it.
    pub tid: i32,
    /// The trace marker was written and tracing stopped.
    pub marker_written: bool,
}

impl Tripwire {
    /// A disarmed wire for `limit`.
    pub fn new(limit: Nanos) -> Tripwire {
        Tripwire {
            limit,
            halt: AtomicBool::new(false),
            armed: AtomicBool::new(false),
            tripped: AtomicBool::new(false),
            value: AtomicI64::new(0),
            at: AtomicI64::new(0),
            tid: AtomicI32::new(0),
            marker_written: AtomicBool::new(false),
            trace: OnceLock::new(),
        }
    }

    /// The limit.
    pub fn limit(&self) -> Nanos {
        self.limit
    }

    /// Makes a trip also write a marker into `trace` and stop tracing. The first
    /// trace given stays.
    pub fn attach_trace(&self, trace: Arc<BreakTrace>) {
        let _ = self.trace.set(trace);
    }

    /// The trace a trip writes to, if any.
    pub fn trace(&self) -> Option<&Arc<BreakTrace>> {
        self.trace.get()
    }

    /// The flag the phase's measuring loops stop at.
    pub fn halt(&self) -> &AtomicBool {
        &self.halt
    }

    /// Forgets any earlier trip and lowers the halt flag; samples do not count yet.
    pub fn reset(&self) {
        self.armed.store(false, Ordering::Relaxed);
        self.tripped.store(false, Ordering::Relaxed);
        self.marker_written.store(false, Ordering::Relaxed);
        self.halt.store(false, Ordering::Relaxed);
    }

    /// From now on a sample over the limit trips the wire.
    pub fn arm(&self) {
        self.armed.store(true, Ordering::Release);
    }

    /// Called by a recorder for a sample over the limit (out of line: it ends the
    /// measurement). The first armed one is kept, fires the trace and halts the phase.
    /// Returns whether the phase is halted (false while the wire is not armed).
    #[cold]
    #[inline(never)]
    pub fn trip(&self, sample: i64, at: i64) -> bool {
        if !self.armed.load(Ordering::Acquire) {
            return false;
        }
        if !self.tripped.swap(true, Ordering::AcqRel) {
            let tid = sched::gettid();
            self.value.store(sample, Ordering::Relaxed);
            self.at.store(at, Ordering::Relaxed);
            self.tid.store(tid, Ordering::Relaxed);
            if let Some(trace) = self.trace.get() {
                let written = trace.fire(marker(tid, sample, self.limit.0).as_bytes());
                self.marker_written.store(written, Ordering::Relaxed);
            }
        }
        // Halt every thread of the phase, as cyclictest -b does.
        self.halt.store(true, Ordering::Release);
        true
    }

    /// The first sample over the limit, if one was taken.
    pub fn tripped(&self) -> Option<Trip> {
        self.tripped.load(Ordering::Acquire).then(|| Trip {
            value: Nanos(self.value.load(Ordering::Relaxed)),
            at: Nanos(self.at.load(Ordering::Relaxed)),
            tid: self.tid.load(Ordering::Relaxed),
            marker_written: self.marker_written.load(Ordering::Relaxed),
        })
    }

    /// The Run's event for a trip taken by `label` (a stream's label) on `thread`.
    pub fn event(&self, trip: Trip, label: &str, thread: usize, cpu: Option<usize>) -> Event {
        let trace = match self.trace() {
            Some(trace) if trip.marker_written => format!(
                ", trace marker written and tracing stopped (read {}/trace)",
                trace.root().display()
            ),
            _ => String::new(),
        };
        Event {
            kind: "breaktrace".to_string(),
            at_ns: trip.at,
            thread,
            cpu,
            value_ns: Some(trip.value),
            message: format!(
                "{label} took a sample of {}, above the break-trace limit of {}: run \
                 stopped{trace}",
                trip.value, self.limit
            ),
        }
    }
}

/// The trace marker for a sample over the limit, built without allocating.
fn marker(tid: i32, sample: i64, limit: i64) -> MarkerBuf {
    let mut marker = MarkerBuf::new();
    marker.push(b"latlab breaktrace: tid ");
    marker.push_int(tid as i64);
    marker.push(b" latency ");
    marker.push_int(sample);
    marker.push(b" ns > limit ");
    marker.push_int(limit);
    marker.push(b" ns\n");
    marker
}

/// A fixed buffer for the trace marker, so firing allocates nothing.
struct MarkerBuf {
    bytes: [u8; 128],
    len: usize,
}

impl MarkerBuf {
    fn new() -> Self {
        MarkerBuf {
            bytes: [0; 128],
            len: 0,
        }
    }

    fn push(&mut self, s: &[u8]) {
        let n = s.len().min(self.bytes.len() - self.len);
        self.bytes[self.len..self.len + n].copy_from_slice(&s[..n]);
        self.len += n;
    }

    fn push_int(&mut self, v: i64) {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        let mut n = v.unsigned_abs();
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        if v < 0 {
            self.push(b"-");
        }
        self.push(&digits[i..]);
    }

    fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_formats_integers() {
        let mut m = MarkerBuf::new();
        m.push(b"x ");
        m.push_int(-1203);
        m.push(b" ");
        m.push_int(0);
        assert_eq!(m.as_bytes(), b"x -1203 0");
    }

    #[test]
    fn only_an_armed_wire_trips_and_the_first_trip_stays() {
        let wire = Tripwire::new(Nanos(50));
        wire.trip(80, 1);
        assert_eq!(wire.tripped(), None, "rehearsals do not trip it");
        assert!(!wire.halt().load(Ordering::Relaxed));
        wire.arm();
        wire.trip(90, 2);
        wire.trip(99, 3);
        let trip = wire.tripped().unwrap();
        assert_eq!((trip.value, trip.at), (Nanos(90), Nanos(2)));
        assert!(wire.halt().load(Ordering::Relaxed));
        wire.reset();
        assert_eq!(wire.tripped(), None);
        assert!(!wire.halt().load(Ordering::Relaxed));
    }
}
