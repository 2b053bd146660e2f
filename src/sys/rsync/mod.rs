//! The rsync process: building its command line, running it, and judging
//! its exit.
//!
//! [`Rsync`] is a builder over the `rsync` program (or `RRR_RSYNC`). Its
//! `Display` is the shell-quoted command line, without the environment, so a
//! `RSYNC_PASSWORD` never reaches a log. [`Rsync::run_with`] passes stdout
//! lines to a callback as they arrive (progress), drains stderr on its own
//! thread, keeps its tail, and returns either an [`RsyncOutcome`] or an
//! [`RsyncError`] carrying the exit code, the stderr tail and a
//! [`RsyncFailure`] class that says whether a retry may help.
//!
//! Files that disappeared at the origin are not failures. rsync reports them
//! in two ways (checked with rsync 3.5.0, both locally and against a daemon):
//!
//! * a path in `--files-from` (or a source argument) that does not exist:
//!   `rsync: [sender] link_stat "/src/p" failed: No such file or directory (2)`,
//!   exit code 23. Older rsync (< 3.2) omits the `[sender]`. Through a daemon
//!   the path is module-relative and followed by ` (in module)`.
//! * a file listed but gone when its turn to be sent came:
//!   `file has vanished: "/src/p"`, exit code 24.
//!
//! Exit 24, and exit 23 whose stderr holds nothing but such lines (plus
//! rsync's closing summary), count as success with
//! [`RsyncOutcome::vanished`] filled. This is where the reference client
//! went wrong with rsync >= 3.2 (protocol.md 12.8): its `^rsync: link_stat` pattern
//! no longer matched and each vanished file cost 72 s of sleeps and a
//! give-up.
//!
//! Other per-file trouble at the origin (a file the daemon may not read, a
//! path through a symlink out of the module: `[sender]` with an errno other
//! than ENOENT) is not a failure of the run either: the rest arrived, and
//! the paths are in [`RsyncOutcome::failed`]. Lines are classified by their
//! role tag and errno ([`classify`]); a cause that no retry can cure
//! (unknown module or host, a full disk or a permission problem on our
//! side) is in [`RsyncError::cause`].
//!
//! Every rsync child gets `PR_SET_PDEATHSIG(SIGTERM)`, so none outlives
//! rrr, even after kill -9 (the signal follows the death of the *thread*
//! that spawned it: rrr spawns rsync from the thread that waits for it);
//! and while it runs, SIGINT/SIGTERM to rrr are passed on to it (both
//! through [`crate::sys::child`]).
//!
//! rsync runs with `LANG=C` and `LC_ALL=C`, so its messages and its escaping
//! of non-ASCII bytes in names (`\#303\#251` for `é`) do not depend on the
//! user's locale; `vanished_path` undoes that escaping ([`unescape`]).
//!
//! The parts: [`command`] (the builder), [`run`] (running and judging the
//! exit), [`stderr`] (classifying rsync's messages, progress lines),
//! [`watchdog`] (the `/proc`-based stall timeout) and [`files_from`].

mod command;
mod files_from;
mod run;
mod stderr;
mod watchdog;

pub use command::Rsync;
pub use files_from::write_files_from;
pub use run::{Cause, FailedPath, Output, RsyncError, RsyncFailure, RsyncOutcome};
pub use stderr::{parse_progress2, unescape};
pub use watchdog::stall_limit_works;
