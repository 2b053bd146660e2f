//! SIGINT/SIGTERM: the handler only records the signal, and passes
//! SIGTERM on to the rsync children that run at that moment (if any: a
//! first pass's index call may still be finishing beside the tree's), so a
//! stop does not wait for a long transfer. The code looks at the flag at
//! safe points. The long-running commands (`rmirror`, `watch`) save their
//! state and exit (130 for rmirror, 0 for watch); the short writers
//! (`update`, `init`, `aggregate`) stop where nothing is half done (a lock
//! wait, the walk, between merges) and otherwise finish what they commit,
//! so a signal is deferred across every rename.
//!
//! The handlers are installed with `sigaction` and `SA_RESTART`, the
//! semantics glibc's `signal(3)` gives: a system call the signal
//! interrupts is resumed, except those Linux never restarts (`poll`
//! returns EINTR). Plain handlers on atomics rather than `signal-hook`:
//! the stop is passed on to the children from inside the handler, with no
//! thread in between.

use nix::errno::Errno;
use nix::sys::signal::{kill, sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
use nix::unistd::Pid;
use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};

/// The error of a command or pass that a signal stopped at a safe point
/// (the callers say what was left as it was, or that the state was saved):
/// exit 130 ([`crate::ops::exit_for_error`]). One type for the origin
/// commands and the mirror.
#[derive(Debug)]
pub struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interrupted by a signal")
    }
}

impl std::error::Error for Interrupted {}

/// Set when SIGINT or SIGTERM arrived.
pub(crate) static STOP: AtomicBool = AtomicBool::new(false);
/// The last such signal's number (0: none).
static SIGNAL: AtomicI32 = AtomicI32::new(0);
/// The running children to pass the stop on to (0: a free slot). A tree
/// runs at most two rsyncs at once, and each tree of a config runs on its
/// own thread (up to 32 trees); a child beyond the slots would only not be
/// signalled (it still ends when rrr exits: `PR_SET_PDEATHSIG`).
static CHILDREN: [AtomicI32; 64] = [const { AtomicI32::new(0) }; 64];

/// The action for a handler: glibc's `signal(3)` semantics (see the
/// module doc), so that installing it changes nothing else.
fn action(handler: extern "C" fn(c_int)) -> SigAction {
    SigAction::new(SigHandler::Handler(handler), SaFlags::SA_RESTART, SigSet::empty())
}

extern "C" fn on_signal(sig: c_int) {
    // A failed kill (a child that just exited) sets errno; the code the
    // signal interrupted may be about to read its own.
    let errno = Errno::last_raw();
    SIGNAL.store(sig, Ordering::SeqCst);
    STOP.store(true, Ordering::SeqCst);
    for slot in &CHILDREN {
        let child = slot.load(Ordering::SeqCst);
        if child > 0 {
            // nix's kill is kill(2) and an errno read: async-signal-safe.
            let _ = kill(Pid::from_raw(child), Signal::SIGTERM);
        }
    }
    Errno::set_raw(errno);
}

/// Install the handler for SIGINT and SIGTERM (idempotent).
pub(crate) fn install() {
    let stop = action(on_signal);
    // SAFETY: the handler is async-signal-safe: it only touches atomics
    // and errno and calls kill(2). The previous actions are dropped, never
    // called. sigaction fails only for a signal that cannot be caught,
    // which these two can.
    unsafe {
        let _ = sigaction(Signal::SIGINT, &stop);
        let _ = sigaction(Signal::SIGTERM, &stop);
    }
}

/// How many SIGUSR1 arrived: each `rmirror --loop` (one per tree of a
/// config) compares it with the count it last saw, so one signal wakes
/// every tree (push).
static WAKES: AtomicU64 = AtomicU64::new(0);

extern "C" fn on_wake(_: c_int) {
    WAKES.fetch_add(1, Ordering::SeqCst);
}

/// Let SIGUSR1 wake the loops ([`wakes`]) instead of ending the process;
/// only `rmirror --loop` asks for it.
pub(crate) fn install_wake() {
    let wake = action(on_wake);
    // SAFETY: the handler only adds to an atomic (async-signal-safe). The
    // previous action is dropped, never called; SIGUSR1 can be caught.
    unsafe {
        let _ = sigaction(Signal::SIGUSR1, &wake);
    }
}

/// How many SIGUSR1 arrived so far.
pub(crate) fn wakes() -> u64 {
    WAKES.load(Ordering::SeqCst)
}

/// Set by commands whose lock waits a signal may end (`update`, `init`,
/// `aggregate`): they have written nothing yet when they wait. The
/// daemons leave it unset, since they still flush after a stop request.
static INTERRUPTS_WAITS: AtomicBool = AtomicBool::new(false);

/// [`install`], and let a stop request end lock waits.
pub(crate) fn install_for_short_command() {
    INTERRUPTS_WAITS.store(true, Ordering::SeqCst);
    install();
}

/// Whether a lock wait should give up now.
pub(crate) fn wait_interrupted() -> bool {
    INTERRUPTS_WAITS.load(Ordering::SeqCst) && stop_requested()
}

/// Whether a stop was asked for.
pub(crate) fn stop_requested() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// The signal that asked for the stop, if any.
pub(crate) fn received() -> Option<Signal> {
    Signal::try_from(SIGNAL.load(Ordering::SeqCst)).ok()
}

/// While alive, a stop is passed on to the child `pid` as SIGTERM. A stop
/// that arrived just before the child was registered is passed on at once.
pub(crate) struct ForwardTo {
    pid: i32,
}

impl ForwardTo {
    /// Register `pid` as a child that a stop is passed on to.
    pub fn child(pid: u32) -> ForwardTo {
        let pid = i32::try_from(pid).unwrap_or(0);
        if pid > 0 && !CHILDREN.iter().any(|s| s.compare_exchange(0, pid, Ordering::SeqCst, Ordering::SeqCst).is_ok()) {
            tracing::debug!("more rsync children than signal slots: {pid} is not passed a stop");
        }
        if stop_requested() && pid > 0 {
            // Our own child, not yet reaped: the pid is still its.
            let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
        }
        ForwardTo { pid }
    }
}

impl Drop for ForwardTo {
    fn drop(&mut self) {
        for slot in &CHILDREN {
            if slot.compare_exchange(self.pid, 0, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
                break;
            }
        }
    }
}
