//! Indexing an existing tree (`rrr init`). Like the reference's rrr-init (spec
//! 13), it writes only the principal, holding every file with its mtime as
//! a dirty epoch (`<mtime>.0`), plus `RECENT.recent`; the cascade into the
//! larger files is the first aggregate's job (`--aggregate` runs it now).
//!
//! `--force` replaces an index without a moment in which there is none:
//! the new principal is built under an ignored name (`.rrr/init-<pid>.*`)
//! while the old index stays in place; then, holding every lock (smallest
//! first) and with signals deferred, it is renamed over the old principal
//! and the larger files it replaces are removed. Events that `update`
//! recorded in the old principal during the walk are carried over. A
//! running `watch` (its `.rrr/watch.flock`) makes init refuse with exit 75.

use crate::collection::Collection;
use crate::epoch::Epoch;
use crate::interval::{self, Interval};
use crate::origin::{self, Writer};
use crate::output::progress;
use crate::recentfile::{EventKind, Format, Recentfile};
use crate::store::{self, Lock};
use crate::tree::{self, IgnoreSet, Skip};
use crate::update::{batch_update, Change};
use anyhow::{bail, Context, Result};
use std::fs::File;
use std::path::{Path, PathBuf};

/// What to index and how the new collection is laid out.
pub(crate) struct Request {
    /// The tree to index.
    pub root: PathBuf,
    /// The principal's interval.
    pub interval: Interval,
    /// The larger intervals (a list that starts with the principal's own is accepted).
    pub aggregator: Vec<Interval>,
    /// YAML or JSON recentfiles.
    pub format: Format,
    /// The name prefix: `RECENT` gives `RECENT.recent` and `RECENT-1h.yaml`.
    pub filenameroot: String,
    /// Replace an existing collection (see the module docs).
    pub force: bool,
    /// Run the first aggregate at once.
    pub aggregate: bool,
    /// `--exclude` patterns (rsync's rules): paths left out of the index.
    pub excludes: Vec<String>,
}

/// What `init` did: `--json` prints it.
#[derive(Debug, serde::Serialize)]
pub(crate) struct Report {
    pub principal: PathBuf,
    pub files: usize,
    pub skipped: usize,
    /// Another tool's files in flight (rsync temp files) left out.
    pub not_indexed: usize,
    /// Events recorded in the old principal during the walk, carried over.
    pub carried: usize,
}

/// Write the new principal (see the module docs), a spinner on stderr
/// while walking when `progress`.
pub(crate) fn index(req: &Request, w: &Writer, progress: bool) -> Result<Report> {
    let (coll, existing) = collection_to_replace(req)?;
    crate::sys::signals::install_for_short_command();
    // A watch would go on recording into the index being replaced.
    let _watch = origin::watch_lock(&coll.root, "a watch runs on this tree; stop it before init")?;
    let state_dir = coll.root.join(".rrr");
    remove_leftover_builds(&state_dir);
    let principal_path = coll.path_of(coll.principal());
    // What `update` records in the old principal from now on is carried over.
    // (An unreadable old principal is what init --force repairs: nothing to carry then.)
    let before = store::read_file(&principal_path).ok();
    let hashes = origin::hashing::Setting::of(
        w.hash,
        before.as_ref().and_then(|b| b.as_ref()),
        origin::beacon::hash_of(&coll).as_deref(),
    )?;
    let Walked { mut changes, skipped, not_indexed } = walk_tree(req, &w.clock, progress)?;
    if hashes.hashes() {
        hash_walked(&coll.root, &mut changes, progress);
        stopped()?;
    }
    let (rf, build) = build_principal(&coll, w, &changes, &state_dir, hashes)?;
    let mut replacement = Replacement {
        coll: &coll,
        w,
        principal_path: principal_path.clone(),
        rf,
        build: Some(build),
        before,
        placed: None,
        carried: 0,
    };
    let locks = replacement.hold_all_locks_in_place(&lock_paths(&coll, &existing))?;
    origin::ensure_principal_link(&coll)?;
    remove_replaced(&coll, &existing, &principal_path)?;
    // The acknowledged events of the replaced index: the new one lists
    // the tree as it is, so none is to be recorded again.
    if let Err(e) = crate::origin::journal::reset(&coll) {
        tracing::warn!("{e:#}");
    }
    drop(locks);
    if req.aggregate {
        crate::origin::aggregate::aggregate(&coll, false, false, w)?;
    }
    Ok(Report { principal: principal_path, files: changes.len(), skipped, not_indexed, carried: replacement.carried })
}

/// The collection `req` describes and its files already in the root,
/// refused unless `--force` when there are any. Reads only: no lock is
/// taken and nothing is written.
fn collection_to_replace(req: &Request) -> Result<(Collection, Vec<PathBuf>)> {
    match std::fs::metadata(&req.root) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => bail!("{}: not a directory", req.root.display()),
        Err(e) => return Err(e).with_context(|| format!("cannot index {}", req.root.display())),
    }
    if req.filenameroot.is_empty() || req.filenameroot.contains('/') {
        bail!("--filenameroot {:?}: must be a non-empty file name without '/'", req.filenameroot);
    }
    let intervals = interval::cascade(&req.interval, &req.aggregator).map_err(anyhow::Error::msg)?;
    let coll = Collection::new(req.root.clone(), req.filenameroot.clone(), req.format, intervals);
    let existing: Vec<PathBuf> = existing_files(&coll)?;
    if !existing.is_empty() && !req.force {
        bail!(
            "{} already holds a collection ({}); use --force to replace it",
            req.root.display(),
            existing.iter().map(|p| p.file_name().unwrap_or_default().to_string_lossy()).collect::<Vec<_>>().join(", ")
        );
    }
    Ok((coll, existing))
}

/// Every file of the tree as a `new` change at its mtime, and how many
/// could not be indexed or were left out (each named in a warning). Reads
/// only: a kill or a signal here leaves the old index as it was.
fn walk_tree(req: &Request, clock: &crate::sys::clock::Clock, progress: bool) -> Result<Walked> {
    let ignore = IgnoreSet::new(&req.filenameroot, &req.excludes).with_clock(clock).with_recorded_own(&req.root);
    let pb = progress::spinner(progress, "indexing");
    let mut walked = Walked::default();
    tree::walk(
        &req.root,
        &ignore,
        |e| {
            walked.changes.push(Change {
                path: e.rel,
                kind: EventKind::New,
                epoch: Some(Epoch::from_whole_seconds(e.mtime)),
                digest: None,
            });
            pb.inc(1);
        },
        |p, why| {
            let shown = crate::recentfile::escape_path(p.as_os_str().as_encoded_bytes());
            match why {
                Skip::Unindexable(why) => {
                    walked.skipped += 1;
                    tracing::warn!("not indexed: {shown}: {why}");
                }
                Skip::NotIndexed(why) => {
                    walked.not_indexed += 1;
                    tracing::warn!("not indexed: {shown}: {why} (fsck reports it while it stays)");
                }
            }
        },
    )
    .map_err(|e| interrupted_or(e, &req.root))?;
    pb.finish();
    Ok(walked)
}

/// What the walk of `init` found.
#[derive(Default)]
struct Walked {
    /// Every file, as a `new` at its mtime.
    changes: Vec<Change>,
    /// Entries that cannot be indexed (each named in a warning).
    skipped: usize,
    /// Another tool's files in flight left out (each named in a warning).
    not_indexed: usize,
}

/// Each walked file's size and sha256 (`--hash sha256`): each read while
/// the file held still (origin::hashing), so a hash describes the file
/// as it was read during the walk; one that changes later gets its own
/// event, with its own hash, from `watch` or `update`. A file that cannot
/// be hashed is indexed unhashed, with a warning naming it.
fn hash_walked(root: &Path, changes: &mut [Change], progress: bool) {
    let pb = progress::spinner(progress, "hashing");
    let paths: Vec<&crate::recentfile::RelPath> = changes.iter().map(|c| &c.path).collect();
    let hashed = origin::hashing::hash_many(root, &paths);
    for (c, h) in changes.iter_mut().zip(hashed) {
        c.digest = origin::hashing::digest_or_warn(&c.path, h).map(|(d, _)| d);
    }
    pb.finish();
}

/// The new principal, built beside the old one under an ignored name
/// (`.rrr/init-<pid>.*`): the old index stays whole until the new one
/// replaces it. A kill here leaves at most that file, which the next init
/// removes; on an error or a signal it is removed at once.
fn build_principal(
    coll: &Collection,
    w: &Writer,
    changes: &[Change],
    state_dir: &Path,
    hashes: origin::hashing::Setting,
) -> Result<(Recentfile, PathBuf)> {
    let principal = coll.principal();
    let mut rf = origin::blank(coll, principal);
    hashes.apply(&mut rf);
    batch_update(&mut rf, principal.seconds(), changes, &w.clock.now());
    let build = state_dir.join(format!("init-{}.{}", std::process::id(), coll.file_name(principal)));
    let written = origin::write_file(coll, w, &build, &mut rf, None);
    if let Err(e) = written.and_then(|_| stopped()) {
        let _ = std::fs::remove_file(&build);
        return Err(e);
    }
    Ok((rf, build))
}

/// The recentfiles to lock for the replacement, smallest first as every
/// writer takes them: the collection's and the existing ones it replaces
/// (not the principal link).
fn lock_paths(coll: &Collection, existing: &[PathBuf]) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = Vec::new();
    for p in coll.intervals.iter().map(|iv| coll.path_of(iv)).chain(existing.iter().cloned()) {
        if p.file_name() != Some(std::ffi::OsStr::new(&coll.link_name())) && !v.contains(&p) {
            v.push(p);
        }
    }
    v
}

/// The old collection's other recentfiles (its larger files), removed
/// under every lock once the new principal is in place. A kill in between
/// leaves the new principal and some of them; `init --force` again
/// removes them.
fn remove_replaced(coll: &Collection, existing: &[PathBuf], principal_path: &Path) -> Result<()> {
    for p in existing {
        if *p != principal_path && p.file_name() != Some(std::ffi::OsStr::new(&coll.link_name())) {
            std::fs::remove_file(p).with_context(|| format!("cannot remove the replaced {}", p.display()))?;
        }
    }
    Ok(())
}

/// The new principal on its way into place, across take-overs of its
/// lock by a Perl writer (docs/decisions.md#locks).
struct Replacement<'a> {
    coll: &'a Collection,
    w: &'a Writer,
    principal_path: PathBuf,
    /// The new principal's content.
    rf: Recentfile,
    /// The built file until it is renamed into place or given up.
    build: Option<PathBuf>,
    /// The principal when the walk began (inner `None`: there was none).
    before: Option<Option<Recentfile>>,
    /// The new principal once renamed into place (kept open: see `same_file`).
    placed: Option<File>,
    /// Events recorded in the old principal meanwhile, carried over.
    carried: usize,
}

impl Replacement<'_> {
    /// Every lock held, smallest first, with the new principal in place.
    /// From here on a signal waits for the end (the handler only records
    /// it). A kill leaves lock directories whose pid is gone, which the
    /// next writer breaks; before the rename the old index and the build
    /// file (removed by the next init), after it the new principal, whole.
    fn hold_all_locks_in_place(&mut self, lock_paths: &[PathBuf]) -> Result<Vec<Lock>> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let locks = match lock_all(lock_paths, self.w) {
                Ok(l) => l,
                Err(e) => {
                    self.give_up_build();
                    return Err(e);
                }
            };
            if self.try_to_place(attempt, &locks[0])? {
                return Ok(locks);
            }
            if attempt > MAX_TAKEOVERS {
                self.give_up_build();
                bail!(
                    "the lock of {} was taken over {MAX_TAKEOVERS} times; run init --force again",
                    self.principal_path.display()
                );
            }
            tracing::warn!(
                "the lock of {} was taken over by {} while init held it; waiting for it, then checking the new principal",
                self.principal_path.display(),
                locks[0].intruder()
            );
            // Every lock goes, so that the intruder (which takes them
            // smallest first too) can finish; then all are taken again.
            drop(locks);
        }
    }

    /// One attempt under every lock: true when the new principal is in
    /// place and its lock is still ours.
    fn try_to_place(&mut self, attempt: usize, principal_lock: &Lock) -> Result<bool> {
        // What is there now (an unreadable principal, which init --force
        // repairs, reads as nothing), and which file that is.
        let seen = File::open(&self.principal_path).ok();
        let now = store::read_file(&self.principal_path).ok().flatten();
        if attempt > 1 && self.placed.is_some() && store::same_file(self.placed.as_ref(), &self.principal_path) {
            // The new principal survived the take-over.
            return Ok(true);
        }
        if attempt == 1 && self.before.is_none() {
            // An old principal that could not be read: nothing of it is
            // carried over.
            self.before = Some(now.clone());
        }
        // Events recorded in the principal since the walk began (by
        // `update`, or by a writer that took a lock over and wrote the
        // old index back with its event): newer than the walk, carried.
        let since = recorded_since(self.before.as_ref().and_then(|b| b.as_ref()), &self.rf, now.as_ref());
        self.carried += since.len();
        if self.commit(&since, principal_lock, seen.as_ref())? {
            self.placed = File::open(&self.principal_path).ok();
            return Ok(principal_lock.still_ours());
        }
        Ok(false)
    }

    /// Put the new principal in place: the build file renamed when nothing
    /// was recorded meanwhile, else the content with those events written
    /// atomically. Only while the lock is ours and the principal is still
    /// the file `seen`; false when either is no longer so (nothing renamed).
    fn commit(&mut self, since: &[Change], principal_lock: &Lock, seen: Option<&File>) -> Result<bool> {
        let principal_path = &self.principal_path;
        let may_commit = || {
            if !principal_lock.still_ours() {
                Err(store::NotCommitted(format!("taken over by {}", principal_lock.intruder())))
            } else if !store::same_file(seen, principal_path) {
                Err(store::NotCommitted(format!("{} replaced by another writer", principal_path.display())))
            } else {
                Ok(())
            }
        };
        match self.build.take() {
            Some(b) if since.is_empty() => match may_commit() {
                Ok(()) => {
                    // The beacon first, then the rename (origin::beacon).
                    let digest =
                        origin::beacon::digest_file(&b).with_context(|| format!("cannot hash {}", b.display()));
                    let listed = digest
                        .and_then(|d| origin::beacon::before_rename(self.coll, self.w, principal_path, d, &self.rf));
                    if let Err(e) = listed {
                        self.build = Some(b);
                        return Err(e);
                    }
                    std::fs::rename(&b, principal_path)
                        .with_context(|| format!("cannot move {} to {}", b.display(), principal_path.display()))?;
                    store::sync_dir(principal_path)
                        .with_context(|| format!("cannot sync {}", self.coll.root.display()))?;
                    Ok(true)
                }
                Err(_) => {
                    self.build = Some(b);
                    Ok(false)
                }
            },
            other => {
                if let Some(b) = other {
                    let _ = std::fs::remove_file(b);
                }
                // Rare: updates landed during the walk. They are newer than the walk.
                let principal = self.coll.principal();
                batch_update(&mut self.rf, principal.seconds(), since, &self.w.clock.now());
                match origin::write_file_guarded(self.coll, self.w, principal_path, &mut self.rf, None, may_commit) {
                    Ok(_) => Ok(true),
                    Err(e) if origin::is_not_committed(&e) => Ok(false),
                    Err(e) => Err(e),
                }
            }
        }
    }

    /// Remove the build file, if it was not renamed into place.
    fn give_up_build(&mut self) {
        if let Some(b) = self.build.take() {
            let _ = std::fs::remove_file(b);
        }
    }
}

/// `Interrupted` when a signal ended the walk, else the error in context.
fn interrupted_or(e: std::io::Error, root: &std::path::Path) -> anyhow::Error {
    if e.kind() == std::io::ErrorKind::Interrupted && crate::sys::signals::wait_interrupted() {
        anyhow::Error::new(crate::sys::signals::Interrupted).context("the index was left as it was")
    } else {
        anyhow::Error::new(e).context(format!("cannot index {}", root.display()))
    }
}

fn stopped() -> Result<()> {
    if crate::sys::signals::wait_interrupted() {
        return Err(anyhow::Error::new(crate::sys::signals::Interrupted).context("the index was left as it was"));
    }
    Ok(())
}

/// Events in the principal now that were neither there when the walk
/// began nor are in the new principal `ours` (recorded by `update` or a
/// Perl writer meanwhile), as changes with their epochs, oldest first.
fn recorded_since(before: Option<&Recentfile>, ours: &Recentfile, now: Option<&Recentfile>) -> Vec<Change> {
    let Some(now) = now else { return Vec::new() };
    let seen: std::collections::HashSet<(&str, &[u8], EventKind)> = before
        .into_iter()
        .chain(std::iter::once(ours))
        .flat_map(|rf| rf.events.iter().map(|e| (e.epoch.as_str(), e.path.as_bytes(), e.kind)))
        .collect();
    now.events
        .iter()
        .rev()
        .filter(|e| !seen.contains(&(e.epoch.as_str(), e.path.as_bytes(), e.kind)))
        .map(|e| Change { path: e.path.clone(), kind: e.kind, epoch: Some(e.epoch.clone()), digest: e.digest() })
        .collect()
}

/// Take the lock of every file in `paths` (smallest first).
fn lock_all(paths: &[PathBuf], w: &Writer) -> Result<Vec<Lock>> {
    paths.iter().map(|p| Lock::acquire(p, w.lock_timeout).map_err(anyhow::Error::from)).collect()
}

/// Times the principal's lock may be taken over before init gives up
/// (it waits for the intruder each time, so this is never reached by chance).
const MAX_TAKEOVERS: usize = 20;

/// Principals built by an `init` that was killed before it moved them
/// into place (`.rrr/init-<pid>.*`). Only one init runs at a time: the
/// caller holds the watch lock.
fn remove_leftover_builds(state_dir: &std::path::Path) {
    let Ok(rd) = std::fs::read_dir(state_dir) else { return };
    for e in rd.flatten() {
        if e.file_name().to_string_lossy().starts_with("init-") {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Recentfiles of this filenameroot already in the root, and the link.
fn existing_files(coll: &Collection) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for de in std::fs::read_dir(&coll.root).with_context(|| format!("cannot list {}", coll.root.display()))? {
        let de = de?;
        let name = de.file_name();
        let Some(name) = name.to_str() else { continue };
        if name == coll.link_name() {
            out.push(de.path());
            continue;
        }
        if let Some((root, iv, suffix)) = crate::collection::split_name(name) {
            if root == coll.filenameroot && Interval::parse(iv).is_ok() && Format::from_suffix(suffix).is_some() {
                out.push(de.path());
            }
        }
    }
    out.sort();
    Ok(out)
}
