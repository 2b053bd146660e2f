//! The one place rrr reads the clock. `--now EPOCH` pins it for tests and
//! demos: every reading returns that epoch, and every recentfile written
//! gets mtime ⌊EPOCH⌋, as the reference's files had under its frozen clock.

use crate::epoch::Epoch;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The system clock, or one pinned to an epoch by `--now`.
#[derive(Clone, Debug, Default)]
pub struct Clock {
    pinned: Option<Epoch>,
}

impl Clock {
    /// The real clock.
    pub fn system() -> Clock {
        Clock { pinned: None }
    }

    /// A clock that always reads `at` (`--now`).
    pub fn pinned(at: Epoch) -> Clock {
        Clock { pinned: Some(at) }
    }

    /// Seconds since the Unix epoch as a float (ages, arithmetic).
    pub(crate) fn now_f64(&self) -> f64 {
        match &self.pinned {
            Some(e) => e.to_f64(),
            None => SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64()),
        }
    }

    /// The clock as an epoch, in the reference's `%.15g` text.
    pub fn now(&self) -> Epoch {
        match &self.pinned {
            Some(e) => Epoch::from_clock(e.to_f64()),
            None => Epoch::from_clock(self.now_f64()),
        }
    }

    /// The mtime to give written files: ⌊pinned⌋, or `None` (leave the real one).
    pub(crate) fn file_mtime(&self) -> Option<SystemTime> {
        self.pinned.as_ref().map(|e| UNIX_EPOCH + Duration::from_secs(e.to_f64().floor().max(0.0) as u64))
    }
}
