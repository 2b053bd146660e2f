//! How a mirror reaches its origin: the [`Transport`] seam.
//!
//! The pass (`mirror::pass`, `transfer`, `deletes`, `install`) decides
//! *what* moves — which paths, in which chunks, whether a local directory
//! may be replaced — and hands that over as plain data ([`PathsJob`]). A
//! transport carries it out and answers with plain data as well: what
//! arrived ([`Itemized`]), what the origin did not have or could not send
//! ([`Outcome`]), or why the call failed ([`Failure`], with the failure
//! class that decides whether a retry may help). Retries, backoff, the
//! state and every decision on a result stay in the pass, the same for
//! every transport. This follows cargo's `RegistryData` (one trait, an
//! http, a git and a local implementation).
//!
//! Implementations:
//!
//! - [`rsync`] (`transport/rsync.rs`): the one in production. The SRC
//!   forms (`rsync://`, `HOST::`, `HOST:`, a local path), the settings
//!   every rsync call shares, fetching the recentfiles into a hidden temp
//!   dir ([`rsync::FetchDir`]), the command lines of a `--files-from`
//!   transfer and of the whole-tree pass, and reading rsync's itemized
//!   output. The process itself is `crate::sys::rsync`.
//! - `local` (`transport/local.rs`, tests only): in-process copies between
//!   local directories, with a switch for an origin that is down and paths
//!   it cannot send, so that the pass's decisions are tested without a
//!   daemon (the end-to-end tests against a real `rsync --daemon` stay).
//! - An HTTP(S) transport (the rsync-free variant of the Perl author's to-do
//!   list) goes in `transport/http.rs`: it implements [`Transport`] by GETs of
//!   the listed paths below the remote root, reports a 404 as
//!   [`Outcome::vanished`] and a 403 as [`Outcome::failed`], and maps its
//!   errors into [`Failure`]'s classes.
//!
//! The recentfiles are fetched into a [`FetchDir`] (a hidden temp dir in the
//! target, read once each file has landed): rsync's today, in `rsync.rs`,
//! the place an HTTP transport would share with it or generalise.

pub(crate) mod rsync;

#[cfg(test)]
pub(crate) mod local;

pub(crate) use rsync::{FetchDir, FetchWatch};

use crate::recentfile::RelPath;
use std::path::Path;

/// The top-level directory rrr never deletes (a filesystem's own): a
/// whole-tree pass of any transport leaves it alone.
pub(crate) const LOST_FOUND: &str = "lost+found";

/// Why a transport call failed, with its failure class
/// (`crate::sys::rsync::RsyncFailure`: connection, timeout, protocol, …)
/// and, for a failure no retry can cure, its cause. These classes are
/// rsync's today; another transport maps its errors into them.
pub(crate) type Failure = crate::sys::rsync::RsyncError;

/// What the pass asks a transport to transfer: plain data, decided by the
/// pass (`Mirror::send_chunk`, `Mirror::retry_chunk`).
#[derive(Debug)]
pub(crate) struct PathsJob<'a> {
    /// Event paths, sorted and unique, relative to the collection's root.
    pub paths: &'a [&'a RelPath],
    /// The target (`--localroot`).
    pub localroot: &'a Path,
    /// rrr's own directory in the target (`.rrr/`): room for the
    /// transport's scratch files, on the target's filesystem.
    pub state_dir: &'a Path,
    /// A listed path may replace a local directory by the origin's file
    /// (`deletes::Placement`): every such directory passed the pass's checks.
    pub replace_dirs: bool,
    /// Transfer into this directory (empty, on the target's filesystem)
    /// instead of the target, the target's files the basis of the delta
    /// (`mirror::staging`: checked there before they are installed).
    pub staging: Option<&'a Path>,
}

/// What a whole-tree pass asks of a transport: make the target the
/// origin's tree, but for rrr's own files. Plain data, decided by the pass
/// (`Mirror::whole_tree_call`).
#[derive(Debug)]
pub(crate) struct TreeJob<'a> {
    /// The target (`--localroot`).
    pub localroot: &'a Path,
    /// rrr's own directory in the target (`.rrr/`), never touched.
    pub state_dir: &'a Path,
    /// The collection's file name root: its recentfiles, link, locks and
    /// temp files are left out (docs/decisions.md#ignore-set).
    pub filenameroot: &'a str,
    /// The user's `--exclude` patterns: left out, never deleted.
    pub excludes: &'a [crate::pattern::Pattern],
    /// Change nothing; list what would change ([`Itemized::would`]).
    pub dry_run: bool,
    /// Compare files of the same size and mtime by content (`--checksum`).
    pub checksum: bool,
    /// Report progress per file (a progress bar is shown).
    pub progress: bool,
    /// Whether files the origin does not have are deleted.
    pub deletes: TreeDeletes,
    /// Paths the transport cannot carry (`State::quarantined`): their
    /// directories are left out. Empty when they are to be looked at again.
    pub quarantined: Vec<&'a [u8]>,
    /// Name each file received ([`Itemized::received`]): the pass checks
    /// them against their signed events (`mirror::staging`, `--trust-key`).
    pub itemize: bool,
}

/// Deletes of a whole-tree pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TreeDeletes {
    /// `--skip-deletes`: extraneous files stay.
    Keep,
    /// Extraneous files go, at most `max` of them (`--max-delete` minus
    /// this run's deletes so far).
    Delete { max: Option<u64> },
}

/// What a long call says while it runs: a line of its progress output, or
/// that it has been quiet for a while (with the process to look at). The
/// rsync transport's own type; `mirror::pass_progress` reads it.
pub(crate) use crate::sys::rsync::Output;

/// One transport call, prepared: [`Call::run`] is one try of it, run
/// again by the pass's retries.
pub(crate) trait Call {
    /// Carry out the call; `seen` counts what arrived, also when it fails.
    fn run(&self, seen: &mut Itemized) -> Result<Outcome, Failure>;

    /// [`Call::run`], telling `watch` what the call prints and, after
    /// `quiet` without a word, that it is quiet (for a progress bar and
    /// the heartbeat).
    fn run_watched(
        &self,
        seen: &mut Itemized,
        quiet: Option<std::time::Duration>,
        watch: &mut dyn FnMut(Output<'_>),
    ) -> Result<Outcome, Failure> {
        let _ = (quiet, watch);
        self.run(seen)
    }
}

/// How a mirror reaches its origin (see the module docs).
pub(crate) trait Transport {
    /// Prepare the transfer of `job.paths` from the origin's tree into
    /// `job.localroot`: a path that arrives replaces the local one
    /// atomically, whatever its size and mtime say (an event is proof of
    /// a change). Errors here are local (a scratch file not written).
    fn send_paths(&self, job: &PathsJob<'_>) -> anyhow::Result<Box<dyn Call>>;

    /// Prepare a whole-tree pass ([`TreeJob`]).
    fn sync_tree(&self, job: &TreeJob<'_>) -> anyhow::Result<Box<dyn Call>>;

    /// The origin refused `e`'s connection for its capacity while a call of
    /// ours was still finishing: from now on this transport runs its calls
    /// one after another. True when that is news: the transport has waited
    /// for its finishing call, and the pass tries again at once.
    fn serialize_after(&self, e: &Failure) -> bool {
        let _ = e;
        false
    }

    /// The key under which the state remembers that calls to this origin
    /// must not overlap (`State::no_overlap`), once they must not.
    fn no_overlap_key(&self) -> Option<String> {
        None
    }

    /// Fetch the recentfiles `names` into `dir`; returns once each is in
    /// place (or the call ended), the call's teardown may go on
    /// ([`FetchDir::settle`] waits for it).
    fn fetch(&self, dir: &FetchDir, names: &[&str], watch: &mut FetchWatch<'_>) -> Result<(), Failure>;

    /// Fetch the whole index (the principal link and every recentfile) in
    /// one call; returns once `landed(dir)`, or false when the remote's
    /// name cannot be turned into a filter (then nothing was fetched).
    fn fetch_index(
        &self,
        dir: &FetchDir,
        watch: &mut FetchWatch<'_>,
        landed: &mut dyn FnMut(&FetchDir) -> bool,
    ) -> Result<bool, Failure>;
}

/// What a finished transport call reports about the paths it did not
/// carry. The rest arrived.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Outcome {
    /// Paths the origin does not have (gone, or never there), as the
    /// transport names them (`Mirror::event_path_of` maps them back).
    pub vanished: Vec<Vec<u8>>,
    /// Paths the origin could not send (unreadable, a symlink out of the
    /// module), with the transport's message.
    pub failed: Vec<FailedPath>,
    /// Paths the transport cannot carry at all (rsync: over 4,096 bytes).
    pub too_long: Vec<FailedPath>,
    /// Deletes of a whole-tree pass were skipped (an I/O error at the origin).
    pub deletion_skipped: bool,
}

/// A path a transport could not carry, with its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FailedPath {
    pub path: Vec<u8>,
    pub message: String,
}

/// What a transfer changed, item by item: counts what really arrived (not
/// what was asked for). The rsync transport fills it from rsync's
/// `--out-format` and `--stats` lines ([`rsync`]'s `Itemized::line`).
#[derive(Debug, Default)]
pub(crate) struct Itemized {
    pub(crate) files: u64,
    pub(crate) bytes: u64,
    pub(crate) deleted: u64,
    /// Of those, files (not directories: a dry run names them with a `/`).
    pub(crate) deleted_files: u64,
    /// Keep [`Itemized::would`] (a dry run).
    pub(crate) listing: bool,
    /// The transport left `--delete` undone from some point on (rsync:
    /// "IO error encountered -- skipping file deletion" on its stdout).
    pub(crate) deletion_skipped: bool,
    /// `new PATH` / `delete PATH`.
    pub(crate) would: Vec<String>,
    /// With [`Itemized::receiving`]: the name of each regular file
    /// received, as the transport names it below the target.
    pub(crate) received: Option<Vec<Vec<u8>>>,
}

impl Itemized {
    pub(crate) fn listing(listing: bool) -> Itemized {
        Itemized { listing, ..Itemized::default() }
    }

    /// Keep the names of the files received ([`Itemized::received`]).
    pub(crate) fn receiving(mut self, on: bool) -> Itemized {
        self.received = on.then(Vec::new);
        self
    }
}
