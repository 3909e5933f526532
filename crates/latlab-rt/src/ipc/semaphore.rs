//! Binary semaphores of four kinds, one interface: acquire with a timeout, release.
//!
//! Each starts available. For a process partner the object lives where both
//! processes see it: SysV sets in the kernel (`semget(IPC_PRIVATE)`), the others in a
//! `MAP_SHARED` mapping, initialised process-shared (`sem_init(pshared=1)`,
//! `PTHREAD_PROCESS_SHARED`, a futex without `FUTEX_PRIVATE_FLAG`).

use super::{futex, mutex, posix_sem, sysv_sem, Errno};
use crate::RtError;

/// Which kind of semaphore.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SemKind {
    /// A SysV semaphore set of one (`semop`/`semtimedop`), as rt-tests' svsematest.
    SysV,
    /// A POSIX unnamed semaphore (`sem_post`/`sem_timedwait`).
    Posix,
    /// A pthread mutex (`pthread_mutex_unlock`/`pthread_mutex_timedlock`), as
    /// rt-tests' ptsematest; not priority-inheriting.
    Mutex,
    /// A raw futex word used as a lock (0 free, 1 held, 2 held with waiters).
    Futex,
}

impl SemKind {
    /// Every kind, in the order they are documented.
    pub const ALL: [SemKind; 4] = [
        SemKind::SysV,
        SemKind::Posix,
        SemKind::Mutex,
        SemKind::Futex,
    ];

    /// The name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            SemKind::SysV => "sysv",
            SemKind::Posix => "posix",
            SemKind::Mutex => "mutex",
            SemKind::Futex => "futex",
        }
    }

    /// The kind called `name`.
    pub fn from_name(name: &str) -> Option<SemKind> {
        SemKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// How an acquire ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acquired {
    /// The caller holds the semaphore.
    Yes,
    /// The timeout passed first.
    TimedOut,
    /// A signal interrupted the wait.
    Interrupted,
}

enum Inner {
    SysV(sysv_sem::Set),
    Posix(posix_sem::Sem),
    Mutex(mutex::Mutex),
    Futex(futex::Futex),
}

/// One binary semaphore, shared (`Arc`) between the measuring thread and its partner;
/// dropping the last reference destroys it.
pub struct Semaphore {
    inner: Inner,
}

impl std::fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Semaphore").finish_non_exhaustive()
    }
}

impl Semaphore {
    /// An available semaphore of `kind`, usable across processes when
    /// `between_processes`.
    pub fn new(kind: SemKind, between_processes: bool) -> Result<Semaphore, RtError> {
        let inner = match kind {
            SemKind::SysV => Inner::SysV(sysv_sem::Set::create()?),
            SemKind::Posix => Inner::Posix(posix_sem::Sem::create(between_processes)?),
            SemKind::Mutex => Inner::Mutex(mutex::Mutex::create(between_processes)?),
            SemKind::Futex => Inner::Futex(futex::Futex::create(between_processes)?),
        };
        Ok(Semaphore { inner })
    }

    /// Takes the semaphore, waiting at most `timeout_ns`. Async-signal-safe.
    #[inline]
    pub fn acquire(&self, timeout_ns: i64) -> Result<Acquired, Errno> {
        match &self.inner {
            Inner::SysV(s) => s.acquire(timeout_ns),
            Inner::Posix(s) => s.acquire(timeout_ns),
            Inner::Mutex(m) => m.acquire(timeout_ns),
            Inner::Futex(f) => f.acquire(timeout_ns),
        }
    }

    /// Gives it back (for a mutex: only its holder may). Async-signal-safe.
    #[inline]
    pub fn release(&self) -> Result<(), Errno> {
        match &self.inner {
            Inner::SysV(s) => s.release(),
            Inner::Posix(s) => s.release(),
            Inner::Mutex(m) => m.release(),
            Inner::Futex(f) => f.release(),
        }
    }
}
