//! Status codes, the message of the last error on each thread, and the guard that
//! keeps every Rust panic on this side of the boundary.

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// What a function of this library returns: `LATLAB_OK` (0), or a negative error code.
/// `latlab_periodic_strerror` names a code; `latlab_periodic_last_error` says what
/// failed on this thread, naming the setting and the fix.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum latlab_status {
    /// Success.
    LATLAB_OK = 0,
    /// A pointer argument was NULL.
    LATLAB_ERR_NULL = -1,
    /// A setting is out of range, or not one of its constants.
    LATLAB_ERR_SETTING = -2,
    /// The system refused what the loop cannot go without (a timer, a signal handler).
    LATLAB_ERR_SYSTEM = -3,
    /// The task is not in a state for this call: run twice, run while running, or
    /// statistics asked before the run ended.
    LATLAB_ERR_STATE = -4,
    /// A bug in the library (a Rust panic), caught at the boundary; the task is not
    /// usable any more but may be freed.
    LATLAB_ERR_INTERNAL = -5,
}

impl latlab_status {
    /// All codes, for `strerror` and the tests.
    pub(crate) const ALL: [latlab_status; 6] = [
        latlab_status::LATLAB_OK,
        latlab_status::LATLAB_ERR_NULL,
        latlab_status::LATLAB_ERR_SETTING,
        latlab_status::LATLAB_ERR_SYSTEM,
        latlab_status::LATLAB_ERR_STATE,
        latlab_status::LATLAB_ERR_INTERNAL,
    ];

    /// What the code means.
    pub(crate) fn text(self) -> &'static CStr {
        match self {
            latlab_status::LATLAB_OK => c"success",
            latlab_status::LATLAB_ERR_NULL => c"a pointer argument was NULL",
            latlab_status::LATLAB_ERR_SETTING => c"a setting is out of range",
            latlab_status::LATLAB_ERR_SYSTEM => c"the system refused what the loop needs",
            latlab_status::LATLAB_ERR_STATE => c"the task is not in a state for this call",
            latlab_status::LATLAB_ERR_INTERNAL => c"internal error in latlab-periodic",
        }
    }
}

/// A failed call: its code and what to tell the caller.
#[derive(Debug)]
pub(crate) struct Failure {
    pub code: latlab_status,
    pub message: String,
}

impl Failure {
    /// A NULL `argument`.
    pub fn null(argument: &str) -> Failure {
        Failure {
            code: latlab_status::LATLAB_ERR_NULL,
            message: format!("{argument}: is NULL; pass a valid pointer"),
        }
    }

    /// A setting out of range: `field` is the C name, `fix` what is accepted.
    pub fn setting(field: &str, fix: impl std::fmt::Display) -> Failure {
        Failure {
            code: latlab_status::LATLAB_ERR_SETTING,
            message: format!("{field}: {fix}"),
        }
    }

    pub fn state(message: impl Into<String>) -> Failure {
        Failure {
            code: latlab_status::LATLAB_ERR_STATE,
            message: message.into(),
        }
    }

    pub fn system(message: impl Into<String>) -> Failure {
        Failure {
            code: latlab_status::LATLAB_ERR_SYSTEM,
            message: message.into(),
        }
    }
}

thread_local! {
    /// The message of the last call that failed on this thread.
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Keeps `message` as this thread's last error.
fn remember(message: &str) {
    // A message with a NUL in it is cut there rather than lost.
    let text = message.split('\0').next().unwrap_or_default();
    let text = CString::new(text).unwrap_or_default();
    // After the thread's locals are gone (a call from a key destructor) it is lost,
    // which is better than an abort.
    let _ = LAST_ERROR.try_with(|last| *last.borrow_mut() = text);
}

/// This thread's last error message; valid until the next call into the library on
/// this thread.
pub(crate) fn last_error() -> *const c_char {
    LAST_ERROR
        .try_with(|last| last.borrow().as_ptr())
        .unwrap_or(c"".as_ptr())
}

/// Runs an entry point's body: its failure becomes a code and this thread's last
/// error; a panic becomes `LATLAB_ERR_INTERNAL`, never an unwind into C.
pub(crate) fn guard(body: impl FnOnce() -> Result<(), Failure>) -> c_int {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => latlab_status::LATLAB_OK as c_int,
        Ok(Err(failure)) => {
            remember(&failure.message);
            failure.code as c_int
        }
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".to_string());
            // Reporting must not unwind either.
            let _ = catch_unwind(|| {
                remember(&format!(
                    "internal error in latlab-periodic ({what}); please report it"
                ))
            });
            latlab_status::LATLAB_ERR_INTERNAL as c_int
        }
    }
}
