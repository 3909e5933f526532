use super::*;
use crate::partner::{PartnerPlace, TaskKind};
use std::sync::Arc;
use std::time::Instant;

/// Tests that create SysV objects, or count them, or sweep them, run one at a time.
static SYSV: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub(super) fn serial() -> std::sync::MutexGuard<'static, ()> {
    SYSV.lock().unwrap_or_else(|e| e.into_inner())
}

/// SysV objects in the system, by id (`/proc/sysvipc/msg` or `sem`).
fn sysv_ids(kind: &str) -> Vec<String> {
    std::fs::read_to_string(format!("/proc/sysvipc/{kind}"))
        .unwrap_or_default()
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(1).map(str::to_string))
        .collect()
}

#[test]
fn every_transport_carries_a_stamp_and_a_receive_ends_within_the_bound() {
    let _serial = serial();
    for transport in Transport::ALL {
        let channel = Arc::new(Channel::open(transport).unwrap());
        let mut receiver = channel::Receiver::new(channel.clone()).unwrap();
        channel.send(123_456_789).unwrap();
        assert_eq!(
            receiver.receive().unwrap(),
            Received::Message(123_456_789),
            "{}",
            transport.name()
        );
        // Nothing sent: the receive gives up after MAX_WAIT_NS (a signal may end it
        // sooner; nothing may make it last longer, but a loaded machine).
        let begun = Instant::now();
        let got = receiver.receive().unwrap();
        let waited = begun.elapsed().as_nanos() as i64;
        assert!(
            matches!(got, Received::TimedOut | Received::Interrupted),
            "{}: {got:?}",
            transport.name()
        );
        assert!(
            waited < 10 * MAX_WAIT_NS,
            "{}: waited {waited} ns",
            transport.name()
        );
        receiver.release_thread();
    }
}

#[test]
fn queues_are_removed_and_never_left_named() {
    let _serial = serial();
    let before = sysv_ids("msg");
    let sysv = Channel::open(Transport::SysV).unwrap();
    assert_eq!(sysv_ids("msg").len(), before.len() + 1);
    drop(sysv);
    assert_eq!(sysv_ids("msg"), before, "IPC_RMID on drop");

    let mq = Channel::open(Transport::PosixMq).unwrap();
    let name = std::ffi::CString::new(mq.mq_name().unwrap()).unwrap();
    // SAFETY: opening by a valid name; a descriptor, if any, is closed below.
    let fd = unsafe { libc::mq_open(name.as_ptr(), libc::O_RDONLY) };
    let err = Errno::last();
    if fd >= 0 {
        // SAFETY: closing the descriptor just opened.
        unsafe { libc::mq_close(fd) };
    }
    assert_eq!((fd, err), (-1, Errno(libc::ENOENT)), "unlinked once open");
}

#[test]
fn every_semaphore_kind_hands_over_and_times_out() {
    let _serial = serial();
    let before = sysv_ids("sem");
    for kind in SemKind::ALL {
        for shared in [false, true] {
            let sem = Semaphore::new(kind, shared).unwrap();
            assert_eq!(sem.acquire(MAX_WAIT_NS).unwrap(), Acquired::Yes);
            let begun = Instant::now();
            let again = sem.acquire(MAX_WAIT_NS / 10).unwrap();
            // A mutex is held by this thread: a default mutex would deadlock, and a
            // timed lock times out like the others.
            assert_eq!(again, Acquired::TimedOut, "{} held", kind.name());
            assert!(begun.elapsed().as_nanos() as i64 >= MAX_WAIT_NS / 20);
            sem.release().unwrap();
            assert_eq!(sem.acquire(MAX_WAIT_NS).unwrap(), Acquired::Yes);
            sem.release().unwrap();
        }
    }
    assert_eq!(sysv_ids("sem"), before, "every set removed");
}

fn spec(task: TaskKind) -> PartnerSpec {
    PartnerSpec {
        task,
        place: PartnerPlace {
            cpu: None,
            policy: None,
        },
        idle_poll_ns: 100_000,
    }
}

#[test]
fn a_sender_follows_its_plan_as_a_thread_and_as_a_process() {
    for task in [TaskKind::Thread, TaskKind::Process] {
        let channel = Arc::new(Channel::open(Transport::Pipe).unwrap());
        let mut receiver = channel::Receiver::new(channel.clone()).unwrap();
        let mut partner = PlannedPartner::sender(&spec(task), channel).unwrap();
        // Leave the partner time to start; on a loaded machine it may still wake
        // late and skip instants, but never send twice for one or outside the plan.
        let start = now() + 20_000_000;
        let plan = Plan {
            start,
            period: 1_000_000,
            end: start + 5_000_000,
        };
        partner.follow(plan);
        // A loaded machine may start the partner late: wait up to a second past the
        // plan for its messages.
        let mut stamps = Vec::new();
        while now() < plan.end + 1_000_000_000 && stamps.len() < 5 {
            if let Received::Message(t1) = receiver.receive().unwrap() {
                stamps.push(t1);
            }
        }
        assert!(!stamps.is_empty(), "{}: no message", task.name());
        assert!(stamps.len() <= 5, "{}: {stamps:?}", task.name());
        assert!(stamps
            .windows(2)
            .all(|w| plan.index_at(w[0]) < plan.index_at(w[1])));
        assert!(stamps.iter().all(|&t| t >= plan.due(1)));
        partner.check().unwrap();
        partner.stop().unwrap();
        assert!(partner.check().is_err(), "ended once stopped");
        receiver.release_thread();
    }
}

#[test]
fn a_partner_that_cannot_be_placed_says_where() {
    let channel = Arc::new(Channel::open(Transport::Pipe).unwrap());
    for task in [TaskKind::Thread, TaskKind::Process] {
        let mut bad = spec(task);
        bad.place.cpu = Some(libc::CPU_SETSIZE as usize - 1);
        let err = PlannedPartner::sender(&bad, channel.clone()).unwrap_err();
        let err = err.to_string();
        assert!(
            err.contains("pin a partner to CPU"),
            "{}: {err}",
            task.name()
        );
    }
}
