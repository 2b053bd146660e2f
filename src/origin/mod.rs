//! The origin side: everything that writes the index of a tree.
//!
//! This module is the origin's writer: load a recentfile under its lock,
//! change it with the pure core, write it back atomically with `minmax`
//! and `Producers` maintained as the reference does (spec 8.5). `rrr
//! watch` adds two parts: `watch_rules` (pure: what an inotify event
//! means, the pending batch, when it is recorded) and `watcher` (the
//! inotify instance). The commands that drive them are in `ops`
//! (`init`, `update`, `aggregate`, `fsck`, `watch`).

pub(crate) mod watch_rules;
pub(crate) mod watcher;

use crate::clock::Clock;
use crate::collection::Collection;
use crate::interval::Interval;
use crate::recentfile::{self, Format, MinMax, Producer, Recentfile};
use crate::store::{self, Lock, RunLock};
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
    _lock: Lock,
}

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
        None => store::read_file(&path)?,
    };
    let (rf, existed) = match read {
        Some(rf) => (rf, true),
        None => (blank(coll, iv), false),
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
    Ok(Loaded { path, rf, existed, on_disk, _lock: lock })
}

/// An empty file of the collection: the meta a sparse clone carries (spec 10).
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
    /// Write the file atomically (the lock is held); see [`write_file`].
    pub fn save(&mut self, coll: &Collection, w: &Writer) -> Result<()> {
        self.on_disk = Some(write_file(coll, w, &self.path, &mut self.rf, self.on_disk.clone())?);
        self.existed = true;
        Ok(())
    }
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
    match coll.format {
        // Streamed: a Z file is never in memory as text.
        Format::Yaml => {
            store::write_atomic_with(path, w.clock.file_mtime(), |out| recentfile::yaml::emit_to(rf, &producer, out))?
        }
        Format::Json => {
            let bytes = recentfile::serialize(rf, coll.format, &producer);
            store::write_atomic(path, &bytes, w.clock.file_mtime())?
        }
    }
    let mtime = std::fs::metadata(path)
        .ok()
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_secs().to_string());
    Ok(MinMax { max: rf.newest().map(|e| e.epoch.clone()), min: rf.oldest().map(|e| e.epoch.clone()), mtime })
}

/// The lock that one `rrr watch` per tree holds (`<root>/.rrr/watch.flock`),
/// also held by `init --force` while it replaces the index. A held lock is
/// `LockError::Busy` (exit 75), naming the holder.
pub(crate) fn watch_lock(root: &Path) -> Result<RunLock> {
    let state_dir = root.join(".rrr");
    std::fs::create_dir_all(&state_dir).with_context(|| format!("cannot create {}", state_dir.display()))?;
    Ok(RunLock::try_acquire(&state_dir.join("watch.flock"))?)
}

/// Make `RECENT.recent` point at the principal.
pub(crate) fn ensure_principal_link(coll: &Collection) -> Result<()> {
    store::ensure_symlink(&coll.root, &coll.link_name(), &coll.file_name(coll.principal()))
        .with_context(|| format!("cannot update the principal symlink in {}", coll.root.display()))
}
