//! How a command ends, as the process exit status
//! (docs/decisions.md#exit-codes): below both the commands (`ops`) and
//! the engines that decide it (`mirror`, `origin`), so that each imports
//! it downward.

use std::io;

/// How a command ended, as the process exit status (docs/decisions.md#exit-codes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// 0: success, clean.
    Ok = 0,
    /// 1: differences found, or a pass finished with refused events.
    Differences = 1,
    /// 2: usage or fatal error.
    Error = 2,
    /// 3: `check`: a tree never tried, or a usage error (Nagios UNKNOWN);
    /// `trigger`: no loop runs.
    Unknown = 3,
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
    use crate::sys::signals::Interrupted;
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

/// A long-running command stopped because its log stream closed (its
/// state saved): exit 1, so that a supervisor restarts it
/// (docs/decisions.md#exit-codes).
#[derive(Debug, thiserror::Error)]
#[error("the log stream closed; state saved")]
pub(crate) struct LogClosed;

/// Whether `e` is a write to a closed stdout (`| head`).
pub fn is_closed(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<io::Error>().is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signal_exits_130_wherever_it_stopped() {
        // The mirror's pass and the origin's writers raise the same type.
        let e = anyhow::Error::new(crate::sys::signals::Interrupted).context("the index was left as it was");
        assert_eq!(exit_for_error(&e), Exit::Interrupted);
        assert_eq!(exit_for_error(&anyhow::anyhow!("interrupted")), Exit::Error);
    }
}
