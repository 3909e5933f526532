//! The start gate: measuring threads wait at it until the coordinator says go or abort.

use std::sync::{Condvar, Mutex};

/// What the coordinator tells the threads waiting at the gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Go {
    /// Measure, with this common start instant on the probe's clock.
    Start(i64),
    /// Do not measure: set-up failed somewhere.
    Abort,
}

/// A one-shot gate (set-up only; the measuring loop never touches it).
#[derive(Debug, Default)]
pub(super) struct StartGate {
    decision: Mutex<Option<Go>>,
    opened: Condvar,
}

impl StartGate {
    /// Blocks until the gate is opened, and says how.
    pub(super) fn wait(&self) -> Go {
        let mut decision = self.decision.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(go) = *decision {
                return go;
            }
            decision = self
                .opened
                .wait(decision)
                .unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Opens the gate (the first decision stands).
    pub(super) fn open(&self, go: Go) {
        let mut decision = self.decision.lock().unwrap_or_else(|e| e.into_inner());
        decision.get_or_insert(go);
        self.opened.notify_all();
    }
}

/// Opens the gate with [`Go::Abort`] when dropped, so no thread can wait forever
/// whatever path the coordinator leaves by.
pub(super) struct AbortOnDrop<'a>(pub(super) &'a StartGate);

impl Drop for AbortOnDrop<'_> {
    fn drop(&mut self) {
        self.0.open(Go::Abort);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_decision_stands_and_reaches_every_waiter() {
        let gate = StartGate::default();
        std::thread::scope(|s| {
            let waiters: Vec<_> = (0..4).map(|_| s.spawn(|| gate.wait())).collect();
            gate.open(Go::Start(42));
            gate.open(Go::Abort);
            for w in waiters {
                assert_eq!(w.join().unwrap(), Go::Start(42));
            }
        });
    }

    #[test]
    fn dropping_the_guard_aborts() {
        let gate = StartGate::default();
        drop(AbortOnDrop(&gate));
        assert_eq!(gate.wait(), Go::Abort);
    }
}
