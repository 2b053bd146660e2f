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
//! `rmirror` ([`install_for_rmirror`], from its first instruction) also
//! counts SIGUSR1 (a wake-up: the loops pass now, [`wakes`]) and SIGHUP
//! (a config loop reloads its config, any other run logs that it ignores
//! it, [`hangups`]): neither ever ends the process, not even before the
//! loop reached its upstream.
//!
//! A tree of a `--config` loop can be stopped alone (SIGHUP removed or
//! changed it): its thread runs as a [`Tree`], whose stop flag
//! [`stop_requested`] reads beside the process-wide one, and whose rsync
//! children (registered from its threads, [`spawn_in_tree`]) get SIGTERM.
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
/// exit 130 ([`crate::exit::exit_for_error`]). One type for the origin
/// commands and the mirror.
#[derive(Debug, thiserror::Error)]
#[error("interrupted by a signal")]
pub struct Interrupted;

/// Set when SIGINT or SIGTERM arrived.
static STOP: AtomicBool = AtomicBool::new(false);
/// The last such signal's number (0: none).
static SIGNAL: AtomicI32 = AtomicI32::new(0);
/// The running children to pass the stop on to (0: a free slot), each
/// as `tree << 32 | pid` (`tree` 0: no tree's, [`Tree`]). A tree runs at
/// most two rsyncs at once, and each tree of a config runs on its own
/// thread (up to 32 trees); a child beyond the slots would only not be
/// signalled (it still ends when rrr exits: `PR_SET_PDEATHSIG`).
static CHILDREN: [AtomicU64; 64] = [const { AtomicU64::new(0) }; 64];

/// The pid of a [`CHILDREN`] slot's value.
fn slot_pid(v: u64) -> i32 {
    (v & 0xffff_ffff) as i32
}

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
        let child = slot_pid(slot.load(Ordering::SeqCst));
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

/// Let SIGUSR1 wake the loops ([`wakes`]) instead of ending the process.
fn install_wake() {
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

/// How many SIGHUP arrived.
static HANGUPS: AtomicU64 = AtomicU64::new(0);

extern "C" fn on_hangup(_: c_int) {
    HANGUPS.fetch_add(1, Ordering::SeqCst);
}

/// How many SIGHUP arrived so far (each reader compares with the count
/// it last saw).
pub(crate) fn hangups() -> u64 {
    HANGUPS.load(Ordering::SeqCst)
}

/// `rmirror`'s signals, from its first instruction: SIGINT/SIGTERM stop
/// ([`install`]), SIGUSR1 is a wake-up, counted ([`wakes`]) even before
/// any loop listens, SIGHUP is counted ([`hangups`]): a config loop
/// reloads, any other run logs that it ignores it. Idempotent.
pub fn install_for_rmirror() {
    install();
    install_wake();
    let hangup = action(on_hangup);
    // SAFETY: the handler only adds to an atomic (async-signal-safe). The
    // previous action is dropped, never called; SIGHUP can be caught.
    unsafe {
        let _ = sigaction(Signal::SIGHUP, &hangup);
    }
}

/// A tree of a `--config` run that can be stopped alone: its flag, and
/// its number in [`CHILDREN`] (from 1).
#[derive(Clone, Debug)]
pub(crate) struct Tree {
    stop: std::sync::Arc<AtomicBool>,
    id: u32,
}

/// The next [`Tree`]'s number.
static NEXT_TREE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);

thread_local! {
    /// The tree the current thread works for, if any.
    static CURRENT: std::cell::RefCell<Option<Tree>> = const { std::cell::RefCell::new(None) };
}

impl Tree {
    /// A new tree, not stopped.
    pub fn new() -> Tree {
        Tree { stop: Default::default(), id: NEXT_TREE.fetch_add(1, Ordering::SeqCst).max(1) }
    }

    /// Run `f` on this thread as this tree's work: [`stop_requested`]
    /// reads its flag, the rsyncs it starts are its own.
    pub fn run<T>(&self, f: impl FnOnce() -> T) -> T {
        let before = CURRENT.with(|c| c.replace(Some(self.clone())));
        let out = f();
        CURRENT.with(|c| *c.borrow_mut() = before);
        out
    }

    /// Stop this tree only: its flag is set (its run stops at the next
    /// safe point, state saved) and its running children get SIGTERM.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        for slot in &CHILDREN {
            let v = slot.load(Ordering::SeqCst);
            if v >> 32 == u64::from(self.id) && slot_pid(v) > 0 {
                // A registered child is not reaped yet: the pid is still ours.
                let _ = kill(Pid::from_raw(slot_pid(v)), Signal::SIGTERM);
            }
        }
    }

    /// The tree the current thread works for, if any.
    pub fn current() -> Option<Tree> {
        CURRENT.with(|c| c.borrow().clone())
    }
}

/// Spawn a thread that works for the caller's tree (its stop, its rsyncs)
/// and logs in the caller's span (the line names the tree).
pub(crate) fn spawn_in_tree<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> std::thread::JoinHandle<T> {
    let (tree, span) = (Tree::current(), tracing::Span::current());
    std::thread::spawn(move || {
        let _in = span.enter();
        match tree {
            Some(t) => t.run(f),
            None => f(),
        }
    })
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

/// Whether a stop was asked for: of the whole process, or of the tree
/// the current thread works for ([`Tree`]).
pub(crate) fn stop_requested() -> bool {
    STOP.load(Ordering::SeqCst) || CURRENT.with(|c| c.borrow().as_ref().is_some_and(|t| t.stop.load(Ordering::SeqCst)))
}

/// The signal that asked for the stop, if any.
pub(crate) fn received() -> Option<Signal> {
    Signal::try_from(SIGNAL.load(Ordering::SeqCst)).ok()
}

/// While alive, a stop is passed on to the child `pid` as SIGTERM. A stop
/// that arrived just before the child was registered is passed on at once.
pub(crate) struct ForwardTo {
    /// Its [`CHILDREN`] slot value.
    value: u64,
}

impl ForwardTo {
    /// Register `pid` as a child that a stop is passed on to (of the
    /// process, or of the tree the current thread works for).
    pub fn child(pid: u32) -> ForwardTo {
        let pid = i32::try_from(pid).unwrap_or(0);
        let tree = Tree::current().map_or(0, |t| u64::from(t.id));
        let value = (tree << 32) | u64::from(pid.max(0) as u32);
        let free = |s: &AtomicU64| s.compare_exchange(0, value, Ordering::SeqCst, Ordering::SeqCst).is_ok();
        if pid > 0 && !CHILDREN.iter().any(free) {
            tracing::debug!("more rsync children than signal slots: {pid} is not passed a stop");
        }
        if stop_requested() && pid > 0 {
            // Our own child, not yet reaped: the pid is still its.
            let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
        }
        ForwardTo { value }
    }
}

impl Drop for ForwardTo {
    fn drop(&mut self) {
        for slot in &CHILDREN {
            if slot.compare_exchange(self.value, 0, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_is_stopped_alone() {
        let (a, b) = (Tree::new(), Tree::new());
        a.stop();
        assert!(a.run(stop_requested), "the stopped tree's thread sees its stop");
        assert!(!b.run(stop_requested), "another tree runs on");
        assert!(!stop_requested(), "and so does the rest of the process");
        let seen = a.run(|| spawn_in_tree(stop_requested).join().unwrap());
        assert!(seen, "a thread the tree spawns works for it");
        assert!(Tree::current().is_none(), "left again after the run");
    }
}
