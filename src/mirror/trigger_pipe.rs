//! Push: wake a running `rmirror --loop` so that it starts a pass now.
//!
//! The loop keeps a named pipe, `<localroot>/.rrr/trigger`, open for
//! reading and writing while it runs. `rrr trigger` opens it for writing
//! without blocking and writes one byte:
//! - the open fails with `ENXIO` when nobody has the pipe open for reading,
//!   and with `ENOENT` when no loop ever ran there: no loop runs (exit 3),
//!   with no pid to guess and nothing stale to clean;
//! - a full pipe (`EAGAIN`) means wake-ups are already pending: woken.
//!
//! The loop drains the pipe when a pass starts, so every trigger that
//! arrives during a pass (however many) makes exactly one more pass right
//! after it. SIGUSR1 to the loop does the same ([`crate::sys::signals`]).
//!
//! The pipe is mode 0620: the loop's user and group may trigger it. An
//! unprivileged account (an ssh forced command) needs only write access to
//! this one file, not to the tree or the state.

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::poll::{PollFd, PollFlags, PollTimeout};
use nix::sys::stat::Mode;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The pipe's name in the state directory `.rrr/`.
pub const TRIGGER_FILE: &str = "trigger";

/// The pipe's mode: the loop's user and group may write.
const TRIGGER_MODE: u32 = 0o620;

/// How both ends open the pipe: never block on the other end, never
/// follow a link planted under the name, never leak into a child.
const OPEN_FLAGS: OFlag = OFlag::O_NONBLOCK.union(OFlag::O_NOFOLLOW).union(OFlag::O_CLOEXEC);

/// The trigger pipe of the tree whose state directory is `state_dir`.
pub fn trigger_path(state_dir: &Path) -> PathBuf {
    state_dir.join(TRIGGER_FILE)
}

/// The loop's end of the trigger pipe, held open for the loop's life.
#[derive(Debug)]
pub struct Listener {
    pipe: File,
}

impl Listener {
    /// Create the pipe in `state_dir` if it is missing and open it. Call it
    /// only while holding the tree's run lock: a stale pipe is replaced.
    pub fn open(state_dir: &Path) -> io::Result<Listener> {
        let path = trigger_path(state_dir);
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_fifo() => {}
            Ok(_) => {
                // Not ours to keep (a file or a link someone left): the run
                // lock is held, so no other loop uses the name.
                std::fs::remove_file(&path)?;
                make_fifo(&path)?;
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => make_fifo(&path)?,
            Err(e) => return Err(e),
        }
        let pipe = std::fs::OpenOptions::new().read(true).write(true).custom_flags(OPEN_FLAGS.bits()).open(&path)?;
        Ok(Listener { pipe })
    }

    /// Whether a trigger arrived since the last call; drains the pipe, so
    /// any number of triggers count as one.
    pub fn take(&self) -> bool {
        let mut buf = [0u8; 512];
        let mut woken = false;
        loop {
            match (&self.pipe).read(&mut buf) {
                Ok(0) => return woken,
                Ok(_) => woken = true,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return woken, // EAGAIN: drained
            }
        }
    }

    /// Wait up to `timeout` for a trigger; true (and drained) when one came.
    pub fn wait(&self, timeout: Duration) -> bool {
        let mut fds = [PollFd::new(self.pipe.as_fd(), PollFlags::POLLIN)];
        let timeout = PollTimeout::try_from(timeout).unwrap_or(PollTimeout::MAX);
        // An interrupted wait (EINTR: SIGUSR1) is no trigger on the pipe.
        let ready = nix::poll::poll(&mut fds, timeout).unwrap_or(0);
        ready > 0 && self.take()
    }
}

/// What wakes one loop: its pipe (when it could be opened) and SIGUSR1.
#[derive(Debug)]
pub struct Waker {
    pipe: Option<Listener>,
    signals_seen: u64,
}

impl Waker {
    /// Listen on the tree whose state directory is `state_dir` (call it
    /// under the tree's run lock). A pipe that cannot be made leaves the
    /// loop to polling and SIGUSR1: a warning, not an error.
    pub fn listen(state_dir: &Path) -> Waker {
        let pipe = Listener::open(state_dir)
            .inspect_err(|e| {
                let path = trigger_path(state_dir);
                tracing::warn!(
                    "cannot open the trigger pipe {}: {e}; rrr trigger will not reach this loop",
                    path.display()
                );
            })
            .ok();
        Waker { pipe, signals_seen: crate::sys::signals::wakes() }
    }

    /// A pass starts: what asked for it so far is answered by it.
    pub fn pass_starts(&mut self) {
        if let Some(p) = &self.pipe {
            p.take();
        }
        self.signals_seen = crate::sys::signals::wakes();
    }

    /// Wait up to `step` for a trigger or SIGUSR1; true when one came.
    pub fn wait(&mut self, step: Duration) -> bool {
        let piped = match &self.pipe {
            Some(p) => p.wait(step),
            None => {
                std::thread::sleep(step);
                false
            }
        };
        piped || crate::sys::signals::wakes() != self.signals_seen
    }
}

fn make_fifo(path: &Path) -> io::Result<()> {
    match nix::unistd::mkfifo(path, Mode::from_bits_truncate(TRIGGER_MODE)) {
        Ok(()) | Err(Errno::EEXIST) => {}
        Err(e) => return Err(e.into()),
    }
    // mkfifo applies the umask; the group's write bit is the point.
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(TRIGGER_MODE))
}

/// What [`send`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Sent {
    /// A loop holds the pipe open: it passes now, or right after its pass.
    Woken,
    /// No loop runs on that tree.
    NoLoop,
}

/// Wake the loop of the tree whose state directory is `state_dir`.
pub fn send(state_dir: &Path) -> io::Result<Sent> {
    let path = trigger_path(state_dir);
    let open = std::fs::OpenOptions::new().write(true).custom_flags(OPEN_FLAGS.bits()).open(&path);
    let mut pipe = match open {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound || e.raw_os_error() == Some(Errno::ENXIO as i32) => {
            return Ok(Sent::NoLoop)
        }
        Err(e) => return Err(e),
    };
    if !pipe.metadata()?.file_type().is_fifo() {
        return Err(io::Error::other(format!("{} is not a named pipe", path.display())));
    }
    match pipe.write(b"t") {
        Ok(_) => Ok(Sent::Woken),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(Sent::Woken),
        Err(e) if e.raw_os_error() == Some(Errno::EPIPE as i32) => Ok(Sent::NoLoop),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_pipe_or_no_reader_is_no_loop() {
        let tmp = tempfile::tempdir().unwrap();
        assert_eq!(send(tmp.path()).unwrap(), Sent::NoLoop, "no pipe yet");
        let l = Listener::open(tmp.path()).unwrap();
        drop(l);
        assert_eq!(send(tmp.path()).unwrap(), Sent::NoLoop, "the pipe outlives its loop");
    }

    #[test]
    fn triggers_coalesce_and_wake_a_waiter() {
        let tmp = tempfile::tempdir().unwrap();
        let l = Listener::open(tmp.path()).unwrap();
        assert!(!l.take(), "nothing pending at start");
        assert!(!l.wait(Duration::from_millis(10)));
        for _ in 0..100 {
            assert_eq!(send(tmp.path()).unwrap(), Sent::Woken);
        }
        assert!(l.wait(Duration::from_secs(5)), "a pending trigger wakes the waiter");
        assert!(!l.take(), "a hundred triggers are one wake-up");
        let mode = std::fs::metadata(trigger_path(tmp.path())).unwrap();
        assert_eq!(std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777, TRIGGER_MODE);
    }

    #[test]
    fn a_stray_file_is_replaced_by_the_pipe() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(trigger_path(tmp.path()), "x").unwrap();
        assert!(send(tmp.path()).is_err(), "a plain file is not a loop");
        let l = Listener::open(tmp.path()).unwrap();
        assert_eq!(send(tmp.path()).unwrap(), Sent::Woken);
        assert!(l.take());
    }
}
