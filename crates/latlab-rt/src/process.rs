//! Process groups: how latlab ends the loads it starts, by id, never by name.

use crate::RtError;

/// Sends `signal` to every process in process group `pgid`.
pub fn signal_group(pgid: u32, signal: i32) -> Result<(), RtError> {
    let pgid = i32::try_from(pgid).map_err(|_| {
        RtError::new(
            "signal a process group",
            std::io::Error::from_raw_os_error(libc::EINVAL),
        )
    })?;
    if pgid <= 1 {
        // 0 and 1 would address our own group or every process: never.
        return Err(RtError::new(
            format!("signal process group {pgid}"),
            std::io::Error::from_raw_os_error(libc::EINVAL),
        ));
    }
    // SAFETY: kill with a negative pid addresses one process group; no memory is passed.
    if unsafe { libc::kill(-pgid, signal) } != 0 {
        return Err(RtError::last(format!("signal process group {pgid}")));
    }
    Ok(())
}

/// True while any process of group `pgid` exists (zombies included).
pub fn group_exists(pgid: u32) -> bool {
    match signal_group(pgid, 0) {
        Ok(()) => true,
        Err(e) => e.errno() == Some(libc::EPERM),
    }
}

/// Terminates the calling process's children when latlab dies: the kernel sends
/// `signal` to this process when its parent exits (`PR_SET_PDEATHSIG`).
pub fn die_with_parent(signal: i32) -> Result<(), RtError> {
    // SAFETY: PR_SET_PDEATHSIG takes a signal number, no pointers.
    if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, signal as libc::c_ulong, 0, 0, 0) } != 0 {
        return Err(RtError::last("set the parent-death signal"));
    }
    Ok(())
}

/// Makes the calling process the reaper of its orphaned descendants
/// (`PR_SET_CHILD_SUBREAPER`), so the processes of a load that outlive their parent
/// can still be waited for, by their process group.
pub fn become_subreaper() -> Result<(), RtError> {
    // SAFETY: PR_SET_CHILD_SUBREAPER takes a flag, no pointers.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } != 0 {
        return Err(RtError::last("become a child subreaper"));
    }
    Ok(())
}

/// Reaps every exited child in process group `pgid` without blocking; returns how
/// many were reaped.
pub fn reap_group(pgid: u32) -> usize {
    let Ok(pgid) = i32::try_from(pgid) else {
        return 0;
    };
    if pgid <= 1 {
        return 0;
    }
    let mut reaped = 0;
    loop {
        let mut status = 0;
        // SAFETY: waitpid for any child in the group, non-blocking, valid pointer.
        let rc = unsafe { libc::waitpid(-pgid, &mut status, libc::WNOHANG) };
        if rc <= 0 {
            return reaped;
        }
        reaped += 1;
    }
}

/// Raises the soft limit on open files to the hard limit (loads such as hackbench
/// open many descriptors).
pub fn raise_open_files_limit() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid rlimit; raising the soft limit up to
    // the hard limit needs no privilege.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}
