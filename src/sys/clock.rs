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

/// A Unix time broken down in the process's time zone (`TZ`, else
/// `/etc/localtime`), by libc's rules as Perl's `localtime` uses them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LocalTime {
    /// The year, e.g. 2023.
    pub year: i64,
    /// 0 (January) … 11.
    pub month: usize,
    /// 1 … 31.
    pub day: i32,
    pub hour: i32,
    pub minute: i32,
    /// 0 … 60 (a leap second).
    pub second: i32,
    /// 0 (Sunday) … 6.
    pub weekday: usize,
}

extern "C" {
    /// POSIX; the libc crate does not declare it on Linux.
    fn tzset();
}

/// `secs` in local time; `None` when libc cannot break it down (a year
/// beyond `i32`). `TZ` is read again on every call, as Perl does.
pub(crate) fn local_time(secs: i64) -> Option<LocalTime> {
    let t = libc::time_t::try_from(secs).ok()?;
    let mut tm = std::mem::MaybeUninit::<libc::tm>::uninit();
    // SAFETY: tzset only reads TZ (getenv), and rrr sets variables only
    // before its threads start (the Perl tools' entry). localtime_r reads
    // `t` and writes only into `tm`, a buffer of the right type that we
    // own, which is read only when the call reports success (non-null).
    let tm = unsafe {
        tzset();
        if libc::localtime_r(&t, tm.as_mut_ptr()).is_null() {
            return None;
        }
        tm.assume_init()
    };
    Some(LocalTime {
        year: i64::from(tm.tm_year) + 1900,
        month: tm.tm_mon.rem_euclid(12) as usize,
        day: tm.tm_mday,
        hour: tm.tm_hour,
        minute: tm.tm_min,
        second: tm.tm_sec,
        weekday: tm.tm_wday.rem_euclid(7) as usize,
    })
}
