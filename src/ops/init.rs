//! `rrr init`: index an existing tree. Like the reference's rrr-init (spec
//! 13), it writes only the principal, holding every file with its mtime as
//! a dirty epoch (`<mtime>.0`), plus `RECENT.recent`; the cascade into the
//! larger files is the first aggregate's job (`--aggregate` runs it now).

use crate::collection::Collection;
use crate::epoch::Epoch;
use crate::interval::{self, Interval};
use crate::origin::{self, Writer};
use crate::progress;
use crate::recentfile::{EventKind, Format};
use crate::tree::{self, IgnoreSet};
use crate::update::{batch_update, Change};
use anyhow::{bail, Context, Result};
use std::path::PathBuf;

pub struct Options {
    pub root: PathBuf,
    pub interval: Interval,
    /// The larger intervals (a list that starts with the principal's own is accepted).
    pub aggregator: Vec<Interval>,
    pub format: Format,
    pub filenameroot: String,
    pub force: bool,
    pub aggregate: bool,
    pub excludes: Vec<String>,
    pub progress: bool,
}

#[derive(Debug, serde::Serialize)]
pub struct Report {
    pub principal: PathBuf,
    pub files: usize,
    pub skipped: usize,
}

pub fn run(opts: &Options, w: &Writer) -> Result<Report> {
    if !opts.root.is_dir() {
        bail!("{}: not a directory", opts.root.display());
    }
    if opts.filenameroot.is_empty() || opts.filenameroot.contains('/') {
        bail!("--filenameroot {:?}: must be a non-empty file name without '/'", opts.filenameroot);
    }
    let intervals = interval::cascade(&opts.interval, &opts.aggregator).map_err(anyhow::Error::msg)?;
    let coll = Collection::new(opts.root.clone(), opts.filenameroot.clone(), opts.format, intervals);
    let existing: Vec<PathBuf> = existing_files(&coll)?;
    if !existing.is_empty() {
        if !opts.force {
            bail!(
                "{} already holds a collection ({}); use --force to replace it",
                opts.root.display(),
                existing
                    .iter()
                    .map(|p| p.file_name().unwrap_or_default().to_string_lossy())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        for p in &existing {
            let _lock = crate::store::Lock::acquire(p, w.lock_timeout)?;
            std::fs::remove_file(p).with_context(|| format!("cannot remove {}", p.display()))?;
        }
    }
    let ignore = IgnoreSet::new(&opts.filenameroot, &opts.excludes);
    let pb = progress::spinner(opts.progress, "indexing");
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
            eprintln!("rrr: warning: not indexed: {}: {why}", crate::recentfile::escape_path(&p.to_string_lossy()));
        },
    )?;
    pb.finish();
    let principal = coll.principal().clone();
    let mut loaded = origin::load(&coll, &principal, w)?;
    batch_update(&mut loaded.rf, principal.seconds(), &changes, &w.clock.now());
    loaded.save(&coll, w)?;
    drop(loaded);
    origin::ensure_principal_link(&coll)?;
    if opts.aggregate {
        crate::ops::aggregate::aggregate(&coll, false, false, w)?;
    }
    Ok(Report { principal: coll.path_of(&principal), files: changes.len(), skipped })
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
