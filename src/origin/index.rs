//! `rrr init`: index an existing tree. Like the reference's rrr-init (spec
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
use crate::ops::init::Options;
use crate::origin::{self, Writer};
use crate::output::progress;
use crate::recentfile::{EventKind, Format, Recentfile};
use crate::store::{self, Lock};
use crate::sys::tree::{self, IgnoreSet};
use crate::update::{batch_update, Change};
use anyhow::{bail, Context, Result};
use std::path::PathBuf;

/// What `init` did: `--json` prints it.
#[derive(Debug, serde::Serialize)]
pub(crate) struct Report {
    pub principal: PathBuf,
    pub files: usize,
    pub skipped: usize,
    /// Events recorded in the old principal during the walk, carried over.
    pub carried: usize,
}

/// Write the new principal (see the module docs), a spinner on stderr
/// while walking when `progress`.
pub(crate) fn index(opts: &Options, w: &Writer, progress: bool) -> Result<Report> {
    match std::fs::metadata(&opts.root) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => bail!("{}: not a directory", opts.root.display()),
        Err(e) => return Err(e).with_context(|| format!("cannot index {}", opts.root.display())),
    }
    if opts.filenameroot.is_empty() || opts.filenameroot.contains('/') {
        bail!("--filenameroot {:?}: must be a non-empty file name without '/'", opts.filenameroot);
    }
    let intervals = interval::cascade(&opts.interval, &opts.aggregator).map_err(anyhow::Error::msg)?;
    let coll = Collection::new(opts.root.clone(), opts.filenameroot.clone(), opts.format, intervals);
    let existing: Vec<PathBuf> = existing_files(&coll)?;
    if !existing.is_empty() && !opts.force {
        bail!(
            "{} already holds a collection ({}); use --force to replace it",
            opts.root.display(),
            existing.iter().map(|p| p.file_name().unwrap_or_default().to_string_lossy()).collect::<Vec<_>>().join(", ")
        );
    }
    crate::sys::signals::install_for_short_command();
    // A watch would go on recording into the index being replaced.
    let _watch = origin::watch_lock(&coll.root, "a watch runs on this tree; stop it before init")?;
    let state_dir = coll.root.join(".rrr");
    remove_leftover_builds(&state_dir);
    let principal = coll.principal().clone();
    let principal_path = coll.path_of(&principal);
    // What `update` records in the old principal from now on is carried over.
    // (An unreadable old principal is what init --force repairs: nothing to carry then.)
    let mut before = store::read_file(&principal_path).ok();
    let ignore = IgnoreSet::new(&opts.filenameroot, &opts.excludes);
    let pb = progress::spinner(progress, "indexing");
    let mut changes = Vec::new();
    let mut skipped = 0usize;
    tree::walk(
        &opts.root,
        &ignore,
        |e| {
            changes.push(Change { path: e.rel, kind: EventKind::New, epoch: Some(Epoch::from_whole_seconds(e.mtime)) });
            pb.inc(1);
        },
        |p, why| {
            skipped += 1;
            tracing::warn!("not indexed: {}: {why}", crate::recentfile::escape_path(p.as_os_str().as_encoded_bytes()));
        },
    )
    .map_err(|e| interrupted_or(e, &opts.root))?;
    pb.finish();
    // The new principal, built beside the old one under an ignored name:
    // the old index stays whole until the new one replaces it.
    let mut rf = origin::blank(&coll, &principal);
    batch_update(&mut rf, principal.seconds(), &changes, &w.clock.now());
    let build = state_dir.join(format!("init-{}.{}", std::process::id(), coll.file_name(&principal)));
    let written = origin::write_file(&coll, w, &build, &mut rf, None);
    if let Err(e) = written.and_then(|_| stopped()) {
        let _ = std::fs::remove_file(&build);
        return Err(e);
    }
    // Replace: every lock, smallest first as every writer takes them.
    // From here on a signal waits for the end (the handler only records it).
    let lock_paths: Vec<PathBuf> = {
        let mut v: Vec<PathBuf> = Vec::new();
        for p in coll.intervals.iter().map(|iv| coll.path_of(iv)).chain(existing.iter().cloned()) {
            if p.file_name() != Some(std::ffi::OsStr::new(&coll.link_name())) && !v.contains(&p) {
                v.push(p);
            }
        }
        v
    };
    let mut build = Some(build);
    // The new principal once renamed into place (kept open: see `same_file`).
    let mut placed: Option<std::fs::File> = None;
    let mut carried = 0usize;
    let mut attempt = 0;
    let locks = loop {
        attempt += 1;
        let locks = match lock_all(&lock_paths, w) {
            Ok(l) => l,
            Err(e) => {
                if let Some(b) = build.take() {
                    let _ = std::fs::remove_file(b);
                }
                return Err(e);
            }
        };
        let principal_lock = &locks[0];
        // What is there now (an unreadable principal, which init --force
        // repairs, reads as nothing), and which file that is.
        let seen = std::fs::File::open(&principal_path).ok();
        let now = store::read_file(&principal_path).ok().flatten();
        if attempt > 1 && placed.is_some() && store::same_file(placed.as_ref(), &principal_path) {
            // The new principal survived the take-over.
            break locks;
        }
        if attempt == 1 && before.is_none() {
            // An old principal that could not be read: nothing of it is
            // carried over.
            before = Some(now.clone());
        }
        // Events recorded in the principal since the walk began (by
        // `update`, or by a writer that took a lock over and wrote the
        // old index back with its event): newer than the walk, carried.
        let since = recorded_since(before.as_ref().and_then(|b| b.as_ref()), &rf, now.as_ref());
        carried += since.len();
        let may_commit = || {
            if !principal_lock.still_ours() {
                Err(store::NotCommitted(format!("taken over by {}", principal_lock.intruder())))
            } else if !store::same_file(seen.as_ref(), &principal_path) {
                Err(store::NotCommitted(format!("{} replaced by another writer", principal_path.display())))
            } else {
                Ok(())
            }
        };
        let committed = match build.take() {
            Some(b) if since.is_empty() => match may_commit() {
                Ok(()) => {
                    std::fs::rename(&b, &principal_path)
                        .with_context(|| format!("cannot move {} to {}", b.display(), principal_path.display()))?;
                    store::sync_dir(&principal_path).with_context(|| format!("cannot sync {}", coll.root.display()))?;
                    true
                }
                Err(_) => {
                    build = Some(b);
                    false
                }
            },
            other => {
                if let Some(b) = other {
                    let _ = std::fs::remove_file(b);
                }
                // Rare: updates landed during the walk. They are newer than the walk.
                batch_update(&mut rf, principal.seconds(), &since, &w.clock.now());
                match origin::write_file_guarded(&coll, w, &principal_path, &mut rf, None, may_commit) {
                    Ok(_) => true,
                    Err(e) if origin::is_not_committed(&e) => false,
                    Err(e) => return Err(e),
                }
            }
        };
        if committed {
            placed = std::fs::File::open(&principal_path).ok();
            if principal_lock.still_ours() {
                break locks;
            }
        }
        if attempt > MAX_TAKEOVERS {
            if let Some(b) = build.take() {
                let _ = std::fs::remove_file(b);
            }
            bail!(
                "the lock of {} was taken over {MAX_TAKEOVERS} times; run init --force again",
                principal_path.display()
            );
        }
        tracing::warn!(
            "the lock of {} was taken over by {} while init held it; waiting for it, then checking the new principal",
            principal_path.display(),
            principal_lock.intruder()
        );
        // Every lock goes, so that the intruder (which takes them
        // smallest first too) can finish; then all are taken again.
        drop(locks);
    };
    origin::ensure_principal_link(&coll)?;
    for p in &existing {
        if *p != principal_path && p.file_name() != Some(std::ffi::OsStr::new(&coll.link_name())) {
            std::fs::remove_file(p).with_context(|| format!("cannot remove the replaced {}", p.display()))?;
        }
    }
    drop(locks);
    if opts.aggregate {
        crate::ops::aggregate::aggregate(&coll, false, false, w)?;
    }
    Ok(Report { principal: principal_path, files: changes.len(), skipped, carried })
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
        .map(|e| Change { path: e.path.clone(), kind: e.kind, epoch: Some(e.epoch.clone()) })
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
