//! SIGINT/SIGTERM: the handler only records the signal; the code looks at
//! it at safe points. The long-running commands (`rmirror`, `watch`) save
//! their state and exit (130 for rmirror, 0 for watch); the short writers
//! (`update`, `init`, `aggregate`) stop where nothing is half done (a lock
//! wait, the walk, between merges) and otherwise finish what they commit,
//! so a signal is deferred across every rename.

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

/// Set by commands whose lock waits a signal may end (`update`, `init`,
/// `aggregate`): they have written nothing yet when they wait. The
/// daemons leave it unset, since they still flush after a stop request.
static INTERRUPTS_WAITS: AtomicBool = AtomicBool::new(false);

/// [`install`], and let a stop request end lock waits.
pub fn install_for_short_command() {
    INTERRUPTS_WAITS.store(true, Ordering::SeqCst);
    install();
}

/// Whether a lock wait should give up now.
pub fn wait_interrupted() -> bool {
    INTERRUPTS_WAITS.load(Ordering::SeqCst) && stop_requested()
}

/// Whether a stop was asked for.
pub fn stop_requested() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// The signal that asked for the stop, if any.
pub fn received() -> Option<i32> {
    Some(SIGNAL.load(Ordering::SeqCst)).filter(|s| *s != 0)
}
