//! SIGINT/SIGTERM for the long-running commands (`rmirror`, `watch`): the
//! handler only records the signal; the loops look at it at safe points,
//! save their state and exit (130 for rmirror, 0 for watch).

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// Set when SIGINT or SIGTERM arrived.
pub static STOP: AtomicBool = AtomicBool::new(false);
/// The last such signal's number (0: none).
static SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    SIGNAL.store(sig, Ordering::SeqCst);
    STOP.store(true, Ordering::SeqCst);
}

/// Install the handler for SIGINT and SIGTERM (idempotent).
pub fn install() {
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: the handler only stores into atomics, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}

/// Whether a stop was asked for.
pub fn stop_requested() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// The signal that asked for the stop, if any.
pub fn received() -> Option<i32> {
    Some(SIGNAL.load(Ordering::SeqCst)).filter(|s| *s != 0)
}
