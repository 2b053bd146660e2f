//! rmirror's run lock: one rmirror per localroot. Below both the state
//! (which takes it to clear a dead run's record) and the loop built on it.

use crate::store::{LockError, RunLock};
use anyhow::Result;
use std::path::Path;

/// rmirror's run lock, `<localroot>/.rrr/rmirror.flock` (flock: it dies
/// with its holder). A held lock is "another rmirror runs" (exit 75);
/// any other failure (a full disk, permissions) says what it is. A
/// `rmirror.lock/` directory of an older rrr is removed once this is held.
pub(crate) fn take_run_lock(state_dir: &Path) -> Result<RunLock> {
    let lock = RunLock::try_acquire(&state_dir.join("rmirror.flock")).map_err(|e| match e {
        LockError::Busy { .. } => anyhow::Error::new(e).context("another rmirror runs on this target"),
        e => anyhow::Error::new(e),
    })?;
    crate::store::remove_legacy_lock_dir(&state_dir.join("rmirror.lock"));
    Ok(lock)
}
