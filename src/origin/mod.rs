//! The origin side: everything that writes the index of a tree.
//!
//! This module is the origin's writer: load a recentfile under its lock,
//! change it with the pure core, write it back atomically with `minmax`
//! and `Producers` maintained as the reference does (protocol.md 8.5). `rrr
//! watch`'s daemon is [`watch`], with its pure rules (`watch::rules`: what
//! a watcher's event means, the pending batch, when it is recorded), the
//! watcher seam (`watch::backend`) and its inotify backend
//! (`watch::inotify`). [`record`] records a batch under
//! the lock, `aggregate` runs the cascade into the larger files (`rrr
//! aggregate`, `init --aggregate`, the watch daemon), [`index`] indexes a
//! tree (`init`), [`index_check`] compares index and tree; the commands in
//! `ops` convert their options and call these.

pub(crate) mod aggregate;
pub mod beacon;
pub mod hashing;
pub mod index;
pub mod index_check;
pub(crate) mod journal;
pub mod record;
pub mod watch;

use crate::collection::Collection;
use crate::interval::Interval;
use crate::recentfile::{self, Format, MinMax, Producer, Recentfile};
use crate::store::{self, Lock, RunLock};
use crate::sys::clock::Clock;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

/// Who is writing, and when.
#[derive(Clone, Debug)]
pub struct Writer {
    /// The time written into events and `minmax` (`--now` pins it).
    pub clock: Clock,
    /// `$0` under `Producers`.
    pub program: String,
    /// How long to wait for a recentfile's lock before giving up.
    pub lock_timeout: Duration,
    /// The beacon and its signing key ([`beacon`]).
    pub beacon: beacon::BeaconSettings,
    /// `--hash` (`None`: not given, the collection's setting holds; [`hashing`]).
    pub hash: Option<hashing::HashChoice>,
}

/// A recentfile read under its lock, ready to be changed and saved.
#[derive(Debug)]
pub(crate) struct Loaded {
    pub path: PathBuf,
    pub rf: Recentfile,
    pub existed: bool,
    /// minmax as the reference's reader leaves it: first/last epoch of the
    /// list on disk and that file's mtime; the base of the next write.
    on_disk: Option<MinMax>,
    /// The file as read under the lock, kept open (see [`Loaded::save`]).
    seen: Option<std::fs::File>,
    lock: Lock,
}

/// The lock of a recentfile was taken over while rrr held it: a Perl
/// writer that judged an earlier holder dead wrote its own pid into the
/// lock (docs/decisions.md#locks), or the file was replaced by a writer that
/// took no lock. The new holder may write the file from what it read.
#[derive(Debug)]
pub(crate) struct TakenOver {
    /// The recentfile.
    pub file: PathBuf,
    /// Who holds its lock now, for the message.
    pub by: String,
    /// Whether rrr's write was renamed into place (and may be overwritten
    /// by the new holder), or left out (the file is as the other writer left it).
    pub committed: bool,
}

impl std::fmt::Display for TakenOver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let file = self.file.display();
        if self.committed {
            write!(
                f,
                "{file} was written, but its lock was taken over meanwhile by {}, which may overwrite it",
                self.by
            )
        } else {
            write!(f, "{file} was not written: its lock was taken over by {} while rrr held it", self.by)
        }
    }
}

impl std::error::Error for TakenOver {}

/// Lock and read one file of the collection (a missing file loads empty,
/// with meta cloned from the collection).
pub(crate) fn load(coll: &Collection, iv: &Interval, w: &Writer) -> Result<Loaded> {
    load_after(coll, iv, w, None)
}

/// [`load`], taking the content from `early` (read before the lock) when
/// the file is still the one that was read.
pub(crate) fn load_after(
    coll: &Collection,
    iv: &Interval,
    w: &Writer,
    early: Option<store::EarlyRead>,
) -> Result<Loaded> {
    let path = coll.path_of(iv);
    let lock = Lock::acquire(&path, w.lock_timeout)?;
    let mtime = std::fs::metadata(&path)
        .ok()
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_secs().to_string());
    let read = match early.and_then(|e| e.if_current(&path)) {
        Some(read) => read,
        None => store::read_file_open(&path)?,
    };
    let (rf, existed, seen) = match read {
        Some((rf, file)) => (rf, true, Some(file)),
        None => (blank(coll, iv), false, None),
    };
    // A rewrite leaves out what the reader skipped: never an event that
    // another reader (a Perl tool) still uses.
    if let Some(s) = rf.skipped.iter().find(|s| s.keep_on_rewrite) {
        anyhow::bail!(
            "cannot rewrite {}: {}event {} {}: {}; rrr would drop it (fix or remove that event first)",
            path.display(),
            s.line.map(|l| format!("line {l}: ")).unwrap_or_default(),
            s.epoch,
            recentfile::shown_path(&s.path),
            s.reason
        );
    }
    let on_disk = if existed {
        Some(MinMax { max: rf.newest().map(|e| e.epoch.clone()), min: rf.oldest().map(|e| e.epoch.clone()), mtime })
    } else {
        rf.meta.minmax.clone()
    };
    Ok(Loaded { path, rf, existed, on_disk, seen, lock })
}

/// An empty file of the collection: the meta a sparse clone carries (protocol.md 10).
pub(crate) fn blank(coll: &Collection, iv: &Interval) -> Recentfile {
    let mut rf = Recentfile::default();
    rf.meta.aggregator = coll.aggregator.clone();
    rf.meta.filenameroot = Some(coll.filenameroot.clone());
    rf.meta.interval = Some(iv.spec().to_string());
    rf.meta.protocol = Some("1".into());
    rf.meta.serializer_suffix = Some(coll.format.suffix().to_string());
    rf
}

impl Loaded {
    /// The identity of the file as read under the lock (`None`: there was none).
    pub fn seen_id(&self) -> Option<journal::FileId> {
        self.seen.as_ref().and_then(journal::file_id_of)
    }

    /// Write the file atomically (the lock is held); see [`write_file`].
    ///
    /// A Perl writer may take the lock over while rrr holds it
    /// (docs/decisions.md#locks), so the write is checked on both sides of
    /// its rename: just before, the lock must still be this process's and
    /// the file the one read under it, else nothing is renamed; just
    /// after, the lock must still be ours, else the new holder may have
    /// read the file before the rename and may overwrite it. Either is
    /// [`TakenOver`]; the caller waits for the lock again and looks.
    pub fn save(&mut self, coll: &Collection, w: &Writer) -> Result<()> {
        let (lock, path, seen) = (&self.lock, &self.path, self.seen.as_ref());
        let may_commit = || {
            if !lock.still_ours() {
                Err(store::NotCommitted(format!("lock {} taken over by {}", lock.path().display(), lock.intruder())))
            } else if !store::same_file(seen, path) {
                Err(store::NotCommitted(format!("{} replaced by another writer", path.display())))
            } else {
                Ok(())
            }
        };
        let written = write_file_guarded(coll, w, path, &mut self.rf, self.on_disk.clone(), may_commit);
        let on_disk = match written {
            Ok(mm) => mm,
            Err(e) if is_not_committed(&e) => {
                return Err(TakenOver { file: self.path.clone(), by: self.lock.intruder(), committed: false }.into())
            }
            Err(e) => return Err(e),
        };
        self.on_disk = Some(on_disk);
        self.existed = true;
        self.seen = std::fs::File::open(&self.path).ok();
        if !self.lock.still_ours() {
            return Err(TakenOver { file: self.path.clone(), by: self.lock.intruder(), committed: true }.into());
        }
        Ok(())
    }
}

/// Whether a write was refused by its `may_commit` check.
pub(crate) fn is_not_committed(e: &anyhow::Error) -> bool {
    e.downcast_ref::<store::WriteError>()
        .and_then(|w| w.source.get_ref())
        .is_some_and(|inner| inner.is::<store::NotCommitted>())
}

/// Write `rf` to `path` atomically, as the reference's `write_recent`
/// does: a missing dirtymark becomes the clock; minmax starts from
/// `on_disk` (the previous version's, see [`Loaded`]) and neither max nor
/// min ever moves down. Returns the minmax base of the next write. The
/// caller holds the lock, or `path` is a temp name nobody else uses.
pub(crate) fn write_file(
    coll: &Collection,
    w: &Writer,
    path: &Path,
    rf: &mut Recentfile,
    on_disk: Option<MinMax>,
) -> Result<MinMax> {
    write_file_guarded(coll, w, path, rf, on_disk, || Ok(()))
}

/// [`write_file`], renaming only if `may_commit` agrees just before
/// (see [`store::write_atomic_guarded`]).
pub(crate) fn write_file_guarded(
    coll: &Collection,
    w: &Writer,
    path: &Path,
    rf: &mut Recentfile,
    on_disk: Option<MinMax>,
    may_commit: impl FnOnce() -> std::result::Result<(), store::NotCommitted>,
) -> Result<MinMax> {
    let now = w.clock.now();
    if rf.meta.dirtymark.is_none() {
        rf.meta.dirtymark = Some(now.clone());
    }
    let mut mm = on_disk.unwrap_or_default();
    if let Some(first) = rf.newest() {
        if mm.max.as_ref().is_none_or(|m| *m < first.epoch) {
            mm.max = Some(first.epoch.clone());
        }
    }
    if let Some(last) = rf.oldest() {
        if mm.min.as_ref().is_none_or(|m| *m < last.epoch) {
            mm.min = Some(last.epoch.clone());
        }
    }
    rf.meta.minmax = Some(mm);
    let producer = Producer { program: w.program.clone(), time: now };
    // The beacon lists the new bytes before the rename (beacon::before_rename).
    let hasher = std::cell::RefCell::new(::recentfile::beacon::Hasher::default());
    let mut beacon_failed = None;
    let rf_ref: &Recentfile = rf;
    let may_commit = || {
        may_commit()?;
        let digest = hasher.take().finish();
        beacon::before_rename(coll, w, path, digest, rf_ref).map_err(|e| {
            let why = format!("{e:#}");
            beacon_failed = Some(e);
            store::NotCommitted(why)
        })
    };
    let fill = |out: &mut dyn std::io::Write| -> std::io::Result<()> {
        let mut hasher = hasher.borrow_mut();
        let mut tee = beacon::Tee { out, hasher: &mut hasher };
        match coll.format {
            // Streamed: a Z file is never in memory as text.
            Format::Yaml => recentfile::yaml::emit_to(rf_ref, &producer, &mut tee),
            Format::Json => std::io::Write::write_all(&mut tee, &recentfile::serialize(rf_ref, coll.format, &producer)),
        }
    };
    let written = store::write_atomic_guarded(path, w.clock.file_mtime(), fill, may_commit);
    if let Some(e) = beacon_failed {
        return Err(e);
    }
    written?;
    let mtime = std::fs::metadata(path)
        .ok()
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_secs().to_string());
    Ok(MinMax { max: rf.newest().map(|e| e.epoch.clone()), min: rf.oldest().map(|e| e.epoch.clone()), mtime })
}

/// The lock that one `rrr watch` per tree holds (`<root>/.rrr/watch.flock`),
/// also held by `init --force` while it replaces the index. A held lock is
/// `LockError::Busy` (exit 75) with `busy` as its context (which names the
/// holder); any other failure (a read-only or foreign `.rrr/`) is reported
/// as itself, naming the path, and never as another process running.
pub(crate) fn watch_lock(root: &Path, busy: &'static str) -> Result<RunLock> {
    let state_dir = root.join(".rrr");
    std::fs::create_dir_all(&state_dir).with_context(|| format!("cannot create {}", state_dir.display()))?;
    RunLock::try_acquire(&state_dir.join("watch.flock")).map_err(|e| match e {
        store::LockError::Busy { .. } => anyhow::Error::new(e).context(busy),
        other => other.into(),
    })
}

/// Make `RECENT.recent` point at the principal.
pub(crate) fn ensure_principal_link(coll: &Collection) -> Result<()> {
    store::ensure_symlink(&coll.root, &coll.link_name(), &coll.file_name(coll.principal()))
        .with_context(|| format!("cannot update the principal symlink in {}", coll.root.display()))
}
