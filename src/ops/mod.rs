//! One module per subcommand: an options struct and `run`. The binary
//! converts its arguments into these structs; nothing here parses argv.

pub mod news;
pub mod overview;

/// How a command ended, as the process exit status (DECISIONS.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// 0: success, clean.
    Ok = 0,
    /// 1: differences found, or a pass finished with refused events.
    Differences = 1,
    /// 2: usage or fatal error.
    Error = 2,
    /// 75: another run holds the lock (EX_TEMPFAIL, for cron).
    Locked = 75,
    /// 130: interrupted.
    Interrupted = 130,
}

/// Exit status for an error: 75 when another process holds a lock we
/// need (it will be free later), 130 when a signal ended the wait, else 2
/// (a stale lock we may not remove needs the operator: 2, not 75).
pub fn exit_for_error(err: &anyhow::Error) -> Exit {
    use crate::store::LockError;
    for e in err.chain() {
        match e.downcast_ref::<LockError>() {
            Some(LockError::Timeout { .. } | LockError::Busy { .. }) => return Exit::Locked,
            Some(LockError::Interrupted { .. }) => return Exit::Interrupted,
            _ => {}
        }
        if e.downcast_ref::<Interrupted>().is_some() {
            return Exit::Interrupted;
        }
        if e.downcast_ref::<LogClosed>().is_some() {
            return Exit::Differences;
        }
    }
    Exit::Error
}

/// A signal asked the command to stop at a point where nothing is half
/// done (the callers say what was left as it was).
#[derive(Debug)]
pub struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interrupted by a signal")
    }
}

impl std::error::Error for Interrupted {}

/// A long-running command stopped because its log stream closed (its
/// state saved): exit 1, so that a supervisor restarts it (DECISIONS.md).
#[derive(Debug)]
pub struct LogClosed;

impl std::fmt::Display for LogClosed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the log stream closed; state saved")
    }
}

impl std::error::Error for LogClosed {}

pub mod aggregate;
pub mod fsck;
pub mod init;
pub mod mirrors;
pub mod rmirror;
pub mod update;
pub mod watch;
