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

/// Exit status for an error: 75 when a lock could not be had, else 2.
pub fn exit_for_error(err: &anyhow::Error) -> Exit {
    if err
        .chain()
        .any(|e| matches!(e.downcast_ref::<crate::store::LockError>(), Some(crate::store::LockError::Timeout { .. })))
    {
        Exit::Locked
    } else {
        Exit::Error
    }
}

pub mod aggregate;
pub mod fsck;
pub mod init;
pub mod mirrors;
pub mod rmirror;
pub mod update;
pub mod watch;
