//! Message channels: one 8-byte message (the sender's CLOCK_MONOTONIC stamp) per
//! period, over the transport chosen.
//!
//! Sends never block: a full queue (the receiver many periods behind) is an `EAGAIN`
//! the sender skips, which the receiver sees as a gap. Receives block, bounded by
//! [`MAX_WAIT_NS`] with the transport's own timeout where it has
//! one (`mq_timedreceive`, `SO_RCVTIMEO`) and a watchdog timer signal where it
//! has none (`msgrcv`, `read` of a pipe or an eventfd): the receive itself stays the
//! plain blocking call being measured, and the one timer call per message is made
//! before the receiver blocks, outside the measured span.

use super::watchdog::Watchdog;
use super::{eventfd, pipe, posix_mq, sysv_msg, unix, Errno, MAX_WAIT_NS};
use crate::RtError;
use std::sync::Arc;

/// How messages travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// A SysV message queue (`msgsnd`/`msgrcv`), as in the Rapid Reaction paper.
    SysV,
    /// A POSIX message queue (`mq_send`/`mq_timedreceive`), as in rt-tests' pmqtest.
    PosixMq,
    /// A pipe (`write`/`read`).
    Pipe,
    /// A Unix datagram socket pair (`send`/`recv`).
    Unix,
    /// An eventfd whose 8-byte counter carries the stamp (`write`/`read`).
    EventFd,
}

impl Transport {
    /// Every transport, in the order they are documented.
    pub const ALL: [Transport; 5] = [
        Transport::SysV,
        Transport::PosixMq,
        Transport::Pipe,
        Transport::Unix,
        Transport::EventFd,
    ];

    /// The name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            Transport::SysV => "sysv",
            Transport::PosixMq => "posix-mq",
            Transport::Pipe => "pipe",
            Transport::Unix => "unix",
            Transport::EventFd => "eventfd",
        }
    }

    /// The transport called `name`.
    pub fn from_name(name: &str) -> Option<Transport> {
        Transport::ALL.into_iter().find(|t| t.name() == name)
    }
}

/// What one receive brought.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Received {
    /// A message: the sender's stamp (for an eventfd, the counter, which is the sum of
    /// the stamps when several arrived before one read).
    Message(i64),
    /// Nothing within the bound.
    TimedOut,
    /// A signal interrupted the wait (a stop request, or the watchdog).
    Interrupted,
}

enum Inner {
    SysV(sysv_msg::Queue),
    PosixMq(posix_mq::Queue),
    Pipe(pipe::Pipe),
    Unix(unix::Pair),
    EventFd(eventfd::Counter),
}

/// Both ends of one channel. Shared (`Arc`) between the measuring thread and its
/// partner; dropping the last reference removes the object.
pub struct Channel {
    inner: Inner,
}

impl std::fmt::Debug for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Channel")
            .field("transport", &self.transport().name())
            .finish()
    }
}

impl Channel {
    /// Creates a channel; errors say which limit was hit and how to raise it.
    pub fn open(transport: Transport) -> Result<Channel, RtError> {
        let inner = match transport {
            Transport::SysV => Inner::SysV(sysv_msg::Queue::create()?),
            Transport::PosixMq => Inner::PosixMq(posix_mq::Queue::create()?),
            Transport::Pipe => Inner::Pipe(pipe::Pipe::create()?),
            Transport::Unix => Inner::Unix(unix::Pair::create(MAX_WAIT_NS)?),
            Transport::EventFd => Inner::EventFd(eventfd::Counter::create()?),
        };
        Ok(Channel { inner })
    }

    /// Its transport.
    pub fn transport(&self) -> Transport {
        match self.inner {
            Inner::SysV(_) => Transport::SysV,
            Inner::PosixMq(_) => Transport::PosixMq,
            Inner::Pipe(_) => Transport::Pipe,
            Inner::Unix(_) => Transport::Unix,
            Inner::EventFd(_) => Transport::EventFd,
        }
    }

    /// Sends `stamp` without blocking (`EAGAIN` when the channel is full).
    /// Async-signal-safe.
    #[inline]
    pub fn send(&self, stamp: i64) -> Result<(), Errno> {
        match &self.inner {
            Inner::SysV(q) => q.send(stamp),
            Inner::PosixMq(q) => q.send(stamp),
            Inner::Pipe(p) => p.send(stamp),
            Inner::Unix(p) => p.send(stamp),
            Inner::EventFd(c) => c.send(stamp),
        }
    }

    /// The name a POSIX queue had (unlinked once both ends were open).
    #[cfg(test)]
    pub(super) fn mq_name(&self) -> Option<&str> {
        match &self.inner {
            Inner::PosixMq(q) => Some(&q.name),
            _ => None,
        }
    }

    /// True when a receive needs a watchdog to be bounded.
    fn needs_watchdog(&self) -> bool {
        matches!(
            self.inner,
            Inner::SysV(_) | Inner::Pipe(_) | Inner::EventFd(_)
        )
    }

    #[inline]
    fn receive(&self) -> Result<Received, Errno> {
        match &self.inner {
            Inner::SysV(q) => q.receive(),
            Inner::PosixMq(q) => q.receive(MAX_WAIT_NS),
            Inner::Pipe(p) => p.receive(),
            Inner::Unix(p) => p.receive(),
            Inner::EventFd(c) => c.receive(),
        }
    }
}

/// The receiving end as one thread uses it: the channel plus, where the transport
/// has no timeout of its own, a watchdog timer aimed at that thread.
///
/// Create it on the receiving thread, and drop it there (or call
/// [`release_thread`](Receiver::release_thread)) before the thread ends.
#[derive(Debug)]
pub struct Receiver {
    channel: Arc<Channel>,
    watchdog: Option<Watchdog>,
}

impl Receiver {
    /// The receiving end of `channel` for the calling thread.
    pub fn new(channel: Arc<Channel>) -> Result<Receiver, RtError> {
        let watchdog = if channel.needs_watchdog() {
            Some(Watchdog::for_current_thread()?)
        } else {
            None
        };
        Ok(Receiver { channel, watchdog })
    }

    /// Blocks until a message arrives, at most [`MAX_WAIT_NS`].
    #[inline]
    pub fn receive(&mut self) -> Result<Received, Errno> {
        if let Some(w) = &self.watchdog {
            w.arm(MAX_WAIT_NS)?;
        }
        self.channel.receive()
    }

    /// Deletes the watchdog timer (bound to this thread); later receives are bounded
    /// only by the transport's own timeout.
    pub fn release_thread(&mut self) {
        self.watchdog = None;
    }
}
