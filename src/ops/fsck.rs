//! `rrr fsck`: compare the index with the tree, and check the collection
//! itself (readability, order, overlap between adjacent files, meta).
//! `--repair` records the differences as ordinary events at the current
//! time (not the file mtime: old mtimes would bloat the small files and a
//! dirty insert would force every mirror to resync), so the dirtymark does
//! not move.

use crate::collection::Collection;
use crate::origin::Writer;
use crate::query::newest_per_path;
use crate::recentfile::{EventKind, Merged, Recentfile};
use crate::tree::{self, IgnoreSet};
use crate::update::Change;
use anyhow::Result;
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

pub struct Options {
    pub principal: PathBuf,
    pub repair: bool,
    pub excludes: Vec<String>,
}

/// One difference or problem. JSON: `{"kind": "...", ...}`.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Finding {
    /// On disk, but the index says deleted or never heard of it.
    MissingInIndex { path: String },
    /// The index says it exists, but it is not on disk.
    MissingOnDisk { path: String },
    /// On disk and indexed, but changed after `changed_since` (watch start-up).
    Modified { path: String },
    /// A recentfile that cannot be read (order, duplicates, syntax...).
    Unreadable { file: String, error: String },
    /// A recentfile named by the aggregator that does not exist although
    /// the cascade has written it (or a larger one): not one that the first
    /// aggregate after `init` has yet to write.
    MissingRecentfile { file: String },
    /// Adjacent files that neither overlap nor touch, where the smaller
    /// one has not merged up to the larger one's newest event.
    Gap { file: String, oldest: String, next_file: String, next_newest: String },
    /// meta.interval differs from the file name's interval (a warning).
    IntervalMismatch { file: String, meta_interval: String },
    /// An event the reader skipped (unknown type).
    SkippedEvent { file: String, line: Option<usize>, epoch: String, path: String, reason: String },
    /// A tree entry that cannot be indexed (not UTF-8, control characters).
    Unindexable { path: String, reason: String },
}

impl Finding {
    /// Whether `--repair` acts on it.
    pub fn change(&self) -> Option<Change> {
        match self {
            Finding::MissingInIndex { path } | Finding::Modified { path } => {
                Some(Change { path: path.clone(), kind: EventKind::New, epoch: None })
            }
            Finding::MissingOnDisk { path } => {
                Some(Change { path: path.clone(), kind: EventKind::Delete, epoch: None })
            }
            _ => None,
        }
    }

    /// One plain line.
    pub fn line(&self) -> String {
        let esc = crate::recentfile::escape_path;
        match self {
            Finding::MissingInIndex { path } => format!("missing-in-index\t{}", esc(path)),
            Finding::MissingOnDisk { path } => format!("missing-on-disk\t{}", esc(path)),
            Finding::Modified { path } => format!("modified\t{}", esc(path)),
            Finding::Unreadable { file, error } => format!("unreadable\t{file}\t{error}"),
            Finding::MissingRecentfile { file } => format!("missing-recentfile\t{file}"),
            Finding::Gap { file, oldest, next_file, next_newest } => {
                format!("gap\t{file} oldest {oldest} is newer than {next_file} newest {next_newest}")
            }
            Finding::IntervalMismatch { file, meta_interval } => {
                format!("interval-mismatch\t{file} says interval {meta_interval}")
            }
            Finding::SkippedEvent { file, line, epoch, path, reason } => format!(
                "skipped-event\t{file}{} {epoch} {}: {reason}",
                line.map(|l| format!(":{l}")).unwrap_or_default(),
                esc(path)
            ),
            Finding::Unindexable { path, reason } => format!("unindexable\t{}\t{reason}", esc(path)),
        }
    }
}

/// The result of a check.
#[derive(Debug, Default, Serialize)]
pub struct Report {
    pub disk_files: usize,
    pub index_files: usize,
    pub findings: Vec<Finding>,
    pub repaired: usize,
    /// Why `--repair` did nothing although asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repair_refused: Option<String>,
}

/// Check the collection's files alone; returns the readable ones (smallest first).
pub fn check_files(coll: &Collection, findings: &mut Vec<Finding>) -> Vec<Recentfile> {
    let mut files: Vec<(String, Recentfile)> = Vec::new();
    let exists: Vec<bool> =
        coll.intervals.iter().map(|iv| std::fs::symlink_metadata(coll.path_of(iv)).is_ok()).collect();
    // The smaller neighbour's meta.merged, as read (for its into_interval).
    let mut previous: Option<Merged> = None;
    for (i, iv) in coll.intervals.iter().enumerate() {
        let name = coll.file_name(iv);
        let read = coll.read(iv);
        if let Ok(None) = &read {
            // Missing: a finding when the cascade has been here, i.e. a larger
            // file exists or the smaller one says it was merged into this one.
            // After a plain `init` only the principal exists (as with the
            // reference, whose fsck exits 0 then).
            let merged_here =
                matches!(&previous, Some(Merged::Into { into_interval: Some(into), .. }) if into == iv.spec());
            if i == 0 || exists[i + 1..].iter().any(|&e| e) || merged_here {
                findings.push(Finding::MissingRecentfile { file: name });
            }
            previous = None;
            continue;
        }
        previous = read.as_ref().ok().and_then(|r| r.as_ref()).map(|rf| rf.meta.merged.clone());
        match read {
            Ok(Some(rf)) => {
                if let Some(mi) = &rf.meta.interval {
                    if mi != iv.spec() {
                        findings.push(Finding::IntervalMismatch { file: name.clone(), meta_interval: mi.clone() });
                    }
                }
                for s in &rf.skipped {
                    findings.push(Finding::SkippedEvent {
                        file: name.clone(),
                        line: s.line,
                        epoch: s.epoch.clone(),
                        path: s.path.clone(),
                        reason: s.reason.clone(),
                    });
                }
                files.push((name, rf));
            }
            Ok(None) => findings.push(Finding::MissingRecentfile { file: name }),
            Err(e) => findings.push(Finding::Unreadable { file: name, error: e.to_string() }),
        }
    }
    for pair in files.windows(2) {
        let ((a_name, a), (b_name, b)) = (&pair[0], &pair[1]);
        if let (Some(oldest), Some(next_newest)) = (a.oldest(), b.newest()) {
            // A keeps every event newer than what it last merged into B
            // (merged.epoch), so only events between B's newest and A's
            // oldest that A never merged can be missing.
            let merged_upto = a.meta.merged.epoch();
            if oldest.epoch > next_newest.epoch && merged_upto.is_none_or(|m| *m > next_newest.epoch) {
                findings.push(Finding::Gap {
                    file: a_name.clone(),
                    oldest: oldest.epoch.to_string(),
                    next_file: b_name.clone(),
                    next_newest: next_newest.epoch.to_string(),
                });
            }
        }
    }
    files.into_iter().map(|(_, rf)| rf).collect()
}

/// Compare index and tree. With `changed_since`, indexed files whose mtime
/// or ctime is newer are reported as `Modified`.
pub fn compare(coll: &Collection, ignore: &IgnoreSet, changed_since: Option<i64>) -> Result<Report> {
    let mut report = Report::default();
    let files = check_files(coll, &mut report.findings);
    let news = newest_per_path(files.iter());
    let live: HashMap<&str, &crate::recentfile::Event> =
        news.iter().filter(|e| e.kind == EventKind::New).map(|e| (e.path.as_str(), *e)).collect();
    report.index_files = live.len();
    let mut on_disk: HashSet<String> = HashSet::new();
    let mut unindexable = Vec::new();
    tree::walk(
        &coll.root,
        ignore,
        |e| {
            match live.get(e.rel.as_str()) {
                None => report.findings.push(Finding::MissingInIndex { path: e.rel.clone() }),
                Some(ev) => {
                    if let Some(since) = changed_since {
                        let indexed_at = ev.epoch.whole_seconds();
                        if (e.mtime >= since || e.ctime >= since) && e.mtime.max(e.ctime) >= indexed_at {
                            report.findings.push(Finding::Modified { path: e.rel.clone() });
                        }
                    }
                }
            }
            on_disk.insert(e.rel);
        },
        |p, why| unindexable.push(Finding::Unindexable { path: p.to_string_lossy().into_owned(), reason: why }),
    )?;
    report.disk_files = on_disk.len();
    let mut gone: Vec<&str> = live.keys().copied().filter(|p| !on_disk.contains(*p)).collect();
    gone.sort();
    report.findings.extend(gone.into_iter().map(|p| Finding::MissingOnDisk { path: p.to_string() }));
    report.findings.extend(unindexable);
    Ok(report)
}

pub fn run(opts: &Options, w: &Writer) -> Result<Report> {
    let coll = Collection::open(&opts.principal)?;
    let ignore = IgnoreSet::new(&coll.filenameroot, &opts.excludes);
    let mut report = compare(&coll, &ignore, None)?;
    if opts.repair {
        if report.findings.iter().any(|f| matches!(f, Finding::Unreadable { .. })) {
            report.repair_refused =
                Some("refusing to repair: a recentfile is unreadable, so the index is not known".into());
            return Ok(report);
        }
        let changes: Vec<Change> = report.findings.iter().filter_map(Finding::change).collect();
        if !changes.is_empty() {
            crate::ops::update::record(&coll, &changes, w)?;
        }
        report.repaired = changes.len();
    }
    Ok(report)
}
