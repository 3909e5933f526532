//! Clocks, read as signed integer nanoseconds.

use std::fmt;

/// A POSIX clock latlab can measure and sleep on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Clock {
    /// `CLOCK_MONOTONIC`: the default; never jumps, slewed by NTP.
    Monotonic,
    /// `CLOCK_REALTIME`: wall-clock time; jumps when the time is set.
    Realtime,
    /// `CLOCK_BOOTTIME`: monotonic, including time suspended.
    Boottime,
    /// `CLOCK_TAI`: international atomic time.
    Tai,
}

impl Clock {
    /// The kernel's clock id.
    pub fn id(self) -> libc::clockid_t {
        match self {
            Clock::Monotonic => libc::CLOCK_MONOTONIC,
            Clock::Realtime => libc::CLOCK_REALTIME,
            Clock::Boottime => libc::CLOCK_BOOTTIME,
            Clock::Tai => libc::CLOCK_TAI,
        }
    }

    /// The lower-case name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            Clock::Monotonic => "monotonic",
            Clock::Realtime => "realtime",
            Clock::Boottime => "boottime",
            Clock::Tai => "tai",
        }
    }

    /// Reads the clock. On the common clocks this is a vDSO call, not a system call.
    #[inline(always)]
    pub fn now_ns(self) -> i64 {
        read_ns(self.id())
    }
}

impl fmt::Display for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Reads any clock id in nanoseconds.
#[inline(always)]
pub fn read_ns(id: libc::clockid_t) -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into the valid `ts`; the clock ids we
    // pass are constants the kernel knows, so it cannot fail in a way we must handle.
    unsafe { libc::clock_gettime(id, &mut ts) };
    timespec_to_ns(&ts)
}

/// The resolution of a clock in nanoseconds (`clock_getres`): 1 for high-resolution
/// clocks, a jiffy for the coarse ones; `None` if the kernel does not say.
pub fn resolution_ns(id: ClockId) -> Option<i64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_getres writes one timespec into the valid `ts`.
    let rc = unsafe { libc::clock_getres(id, &mut ts) };
    (rc == 0).then(|| timespec_to_ns(&ts))
}

/// Converts a timespec to nanoseconds.
#[inline(always)]
pub fn timespec_to_ns(ts: &libc::timespec) -> i64 {
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

/// Converts nanoseconds (non-negative) to a timespec.
#[inline(always)]
pub fn ns_to_timespec(ns: i64) -> libc::timespec {
    libc::timespec {
        tv_sec: ns.div_euclid(1_000_000_000),
        tv_nsec: ns.rem_euclid(1_000_000_000),
    }
}

/// The CPU's time-stamp counter, where there is one (x86-64): `None` elsewhere.
///
/// Raw cycles of a counter that, on any CPU of the last decade, ticks at a constant
/// rate; how many ticks make a nanosecond must be measured (see the clock probe).
#[inline(always)]
pub fn tsc() -> Option<u64> {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: RDTSC reads a counter and has no other effect; every x86-64 CPU has it.
        Some(unsafe { core::arch::x86_64::_rdtsc() })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

/// A kernel clock id.
pub type ClockId = libc::clockid_t;

/// The id of a clock that can be read (not necessarily slept on), by the name the
/// clock probe uses: `monotonic`, `monotonic-raw`, `monotonic-coarse`, `realtime`,
/// `realtime-coarse`, `boottime`, `tai`.
pub fn read_id(name: &str) -> Option<ClockId> {
    Some(match name {
        "monotonic" => libc::CLOCK_MONOTONIC,
        "monotonic-raw" => libc::CLOCK_MONOTONIC_RAW,
        "monotonic-coarse" => libc::CLOCK_MONOTONIC_COARSE,
        "realtime" => libc::CLOCK_REALTIME,
        "realtime-coarse" => libc::CLOCK_REALTIME_COARSE,
        "boottime" => libc::CLOCK_BOOTTIME,
        "tai" => libc::CLOCK_TAI,
        _ => return None,
    })
}

/// CPU time the calling thread has used, ns (`CLOCK_THREAD_CPUTIME_ID`, a system call).
pub fn thread_cpu_ns() -> i64 {
    read_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}
