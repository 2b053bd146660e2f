//! rrr's own stall timeout for rsync: a watchdog thread that reads what
//! rsync's processes did from `/proc` and stops rsync when that stays the
//! same for too long. (What the network delivered, for progress, is
//! `sys::netbytes`'s.)

use std::time::Duration;

/// Watch rsync `pid` until `stopped` says it exited; when its [`activity`]
/// stays the same for `limit`, stop it and return `Some(limit)`.
pub(super) fn stall_watchdog(pid: u32, limit: Duration, stopped: std::sync::mpsc::Receiver<()>) -> Option<Duration> {
    use std::sync::mpsc::RecvTimeoutError;
    use std::time::Instant;
    let look_every = (limit / 10).clamp(Duration::from_millis(100), Duration::from_secs(2));
    let mut last = activity(pid);
    let mut since = Instant::now();
    loop {
        match stopped.recv_timeout(look_every) {
            Err(RecvTimeoutError::Timeout) => {}
            _ => return None,
        }
        let now = activity(pid);
        if now != last {
            (last, since) = (now, Instant::now());
            continue;
        }
        if since.elapsed() < limit {
            continue;
        }
        // The caller reports the failure (with its retries).
        tracing::debug!("rsync moved no data and used no CPU for {} s: stopping it (--timeout)", limit.as_secs());
        // Our child, which is not reaped before `stopped`: `pid` is still rsync's.
        let pid = nix::unistd::Pid::from_raw(pid as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        if let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(Duration::from_secs(10)) {
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
        }
        return Some(limit);
    }
}

/// What rsync `pid` and its descendants (the receiver it forks, the
/// local sender, an ssh) have done so far: bytes read and written
/// (`/proc/PID/io`, sockets and pipes included) plus CPU ticks
/// (`/proc/PID/stat`). It changes while rsync moves data or works (a
/// generator comparing a large tree reads nothing but uses CPU) and stays
/// the same while every process waits. `None` where `/proc` cannot tell,
/// which [`stall_limit_works`] finds out first.
fn activity(pid: u32) -> Option<u64> {
    use crate::sys::proc;
    fn one(pid: u32) -> Option<u64> {
        let (rchar, wchar) = proc::io_bytes(pid)?;
        Some(rchar + wchar + proc::stat(pid)?.cpu_ticks())
    }
    let all = proc::with_descendants(pid);
    let total = one(pid)?;
    Some(all[1..].iter().fold(total, |t, c| t.wrapping_add(one(*c).unwrap_or(0))))
}

/// Whether [`Rsync::stall_limit`] can see rsync's activity here: `/proc`
/// with per-process I/O counters and children lists (Linux with
/// CONFIG_PROC_CHILDREN). Where it cannot, rsync's own `--timeout` is used.
pub fn stall_limit_works() -> bool {
    static WORKS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *WORKS.get_or_init(|| activity(std::process::id()).is_some() && crate::sys::proc::lists_children())
}

#[cfg(test)]
mod tests {
    use super::super::{Rsync, RsyncFailure};
    use super::*;
    use std::io::Read;

    /// An upstream that accepts the connection and then says nothing (a
    /// hung daemon): rsync alone would wait forever; the watchdog stops it
    /// and the failure is a retryable timeout that says so.
    #[test]
    fn a_silent_upstream_is_stopped_by_the_stall_limit() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let holder = std::thread::spawn(move || {
            let (conn, _) = listener.accept().unwrap();
            // Hold it open, silent, until rsync is gone.
            let mut buf = [0u8; 64];
            while (&conn).read(&mut buf).is_ok_and(|n| n > 0) {}
        });
        let dest = tempfile::tempdir().unwrap();
        let mut r = Rsync::new();
        r.args(["-rlt", &format!("rsync://127.0.0.1:{port}/m/"), &format!("{}/", dest.path().display())]);
        r.stall_limit(Duration::from_millis(1500));
        let t0 = std::time::Instant::now();
        let e = r.run().unwrap_err();
        let took = t0.elapsed();
        holder.join().unwrap();
        assert_eq!(e.class, RsyncFailure::Timeout, "{e}");
        assert!(e.is_retryable());
        assert!(e.to_string().contains("moved no data and used no CPU for 1 s"), "{e}");
        assert!(took >= Duration::from_millis(1500), "not before the limit: {took:?}");
    }

    /// A slow but moving transfer is never stopped, however long it takes.
    #[test]
    fn a_slow_transfer_that_moves_is_not_stopped() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("f"), vec![b'x'; 600_000]).unwrap();
        let mut r = Rsync::new();
        r.args(["--bwlimit=300", "-t"]).arg(tmp.path().join("f")).arg(tmp.path().join("g"));
        r.stall_limit(Duration::from_millis(700));
        r.run().unwrap();
        assert_eq!(std::fs::metadata(tmp.path().join("g")).unwrap().len(), 600_000);
    }
}
