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
use crate::ops::{Ctx, Exit};
use crate::origin::{self, Writer};
use crate::progress;
use crate::recentfile::{EventKind, Format, Recentfile};
use crate::store::{self, Lock};
use crate::tree::{self, IgnoreSet};
use crate::update::{batch_update, Change};
use anyhow::{bail, Context, Result};
use std::path::PathBuf;

/// What `rrr init` indexes and how the new collection is laid out.
pub struct Options {
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
    /// Print the report (principal, files, skipped, carried) as one JSON
    /// object instead of a log line.
    pub json: bool,
}

/// What `init` did: `--json` prints it.
#[derive(Debug, serde::Serialize)]
pub(crate) struct Report {
    pub principal: PathBuf,
    pub files: usize,
    pub skipped: usize,
    /// Events recorded in the old principal during the walk, carried over.
    pub carried: usize,
}

/// Index the tree; exit 1 when some files could not be indexed.
pub fn run(opts: &Options, ctx: &Ctx) -> Result<Exit> {
    let report = index(opts, &ctx.writer, ctx.progress)?;
    if opts.json {
        writeln!(ctx.out(), "{}", serde_json::to_string(&report)?)?;
    } else {
        tracing::info!(
            "indexed {} files into {}",
            crate::human::count(report.files as u64),
            report.principal.display()
        );
    }
    Ok(if report.skipped > 0 { Exit::Differences } else { Exit::Ok })
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
    crate::signals::install_for_short_command();
    // A watch would go on recording into the index being replaced.
    let _watch = origin::watch_lock(&coll.root).context("a watch runs on this tree; stop it before init")?;
    let state_dir = coll.root.join(".rrr");
    remove_leftover_builds(&state_dir);
    let principal = coll.principal().clone();
    let principal_path = coll.path_of(&principal);
    // What `update` records in the old principal from now on is carried over.
    // (An unreadable old principal is what init --force repairs: nothing to carry then.)
    let before = store::read_file(&principal_path).ok();
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
            tracing::warn!("not indexed: {}: {why}", crate::recentfile::escape_path(&p.to_string_lossy()));
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
    let mut locks = Vec::new();
    for p in coll.intervals.iter().map(|iv| coll.path_of(iv)).chain(existing.iter().cloned()) {
        if p.file_name() != Some(std::ffi::OsStr::new(&coll.link_name())) && !locks.iter().any(|(q, _)| *q == p) {
            match Lock::acquire(&p, w.lock_timeout) {
                Ok(l) => locks.push((p, l)),
                Err(e) => {
                    let _ = std::fs::remove_file(&build);
                    return Err(e.into());
                }
            }
        }
    }
    let carried = match (&before, store::read_file(&principal_path)) {
        (Some(before), Ok(now)) => recorded_since(before.as_ref(), now.as_ref()),
        _ => Vec::new(),
    };
    if carried.is_empty() {
        std::fs::rename(&build, &principal_path)
            .with_context(|| format!("cannot move {} to {}", build.display(), principal_path.display()))?;
        store::sync_dir(&principal_path).with_context(|| format!("cannot sync {}", coll.root.display()))?;
    } else {
        // Rare: updates landed during the walk. They are newer than the walk.
        let _ = std::fs::remove_file(&build);
        batch_update(&mut rf, principal.seconds(), &carried, &w.clock.now());
        origin::write_file(&coll, w, &principal_path, &mut rf, None)?;
    }
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
    Ok(Report { principal: principal_path, files: changes.len(), skipped, carried: carried.len() })
}

/// `Interrupted` when a signal ended the walk, else the error in context.
fn interrupted_or(e: std::io::Error, root: &std::path::Path) -> anyhow::Error {
    if e.kind() == std::io::ErrorKind::Interrupted && crate::signals::wait_interrupted() {
        anyhow::Error::new(crate::signals::Interrupted).context("the index was left as it was")
    } else {
        anyhow::Error::new(e).context(format!("cannot index {}", root.display()))
    }
}

fn stopped() -> Result<()> {
    if crate::signals::wait_interrupted() {
        return Err(anyhow::Error::new(crate::signals::Interrupted).context("the index was left as it was"));
    }
    Ok(())
}

/// Events in the principal now that were not there when the walk began
/// (recorded by `update` or a Perl writer meanwhile), as changes with
/// their epochs, oldest first.
fn recorded_since(before: Option<&Recentfile>, now: Option<&Recentfile>) -> Vec<Change> {
    let Some(now) = now else { return Vec::new() };
    let seen: std::collections::HashSet<(&str, &str, EventKind)> = before
        .map(|b| b.events.iter().map(|e| (e.epoch.as_str(), e.path.as_str(), e.kind)).collect())
        .unwrap_or_default();
    now.events
        .iter()
        .rev()
        .filter(|e| !seen.contains(&(e.epoch.as_str(), e.path.as_str(), e.kind)))
        .map(|e| Change { path: e.path.clone(), kind: e.kind, epoch: Some(e.epoch.clone()) })
        .collect()
}

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
