//! Checking an index (`rrr fsck`): compare the index with the tree, and check the collection
//! itself (readability, order, overlap between adjacent files, meta).
//! `--repair` records the differences as ordinary events at the current
//! time (not the file mtime: old mtimes would bloat the small files and a
//! dirty insert would force every mirror to resync), so the dirtymark does
//! not move.

use crate::collection::Collection;
use crate::epoch::Epoch;
use crate::origin::Writer;
use crate::recentfile::{EventKind, Merged, Recentfile, RelPath};
use crate::tree::{self, Entry, IgnoreSet, Ignored};
use crate::update::Change;
use anyhow::Result;
use recentfile::beacon::FileDigest;
use serde::Serialize;

/// One difference or problem. JSON: `{"kind": "...", ...}`.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Finding {
    /// The index says one of rrr's own files exists (a recentfile, the
    /// beacon, a file under `.rrr/`): never an event, though the Perl
    /// `rrr-fsck` without `--dry-run` indexes them. `--repair` records its
    /// delete (mirrors refuse events that name their own files either
    /// way); the file itself is left alone.
    OwnFileIndexed { path: RelPath },
    /// On disk, but the index says deleted or never heard of it.
    MissingInIndex { path: RelPath },
    /// The index says it exists, but it is not on disk.
    MissingOnDisk { path: RelPath },
    /// On disk and indexed, but changed after `changed_since` (watch start-up).
    Modified { path: RelPath },
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
    /// An event the reader skipped (unknown type, unreadable path or item).
    SkippedEvent { file: String, line: Option<usize>, epoch: String, path: RelPath, reason: String },
    /// A tree entry that cannot be indexed (unreadable, or a name over 4096 bytes).
    Unindexable { path: RelPath, reason: String },
    /// A file of the tree left out of the index although not rrr's own
    /// nor excluded by the user: an rsync temp file in flight (named
    /// `.NAME.XXXXXX` and changed within the last minute), a file under
    /// rsync's `.~tmp~/`, a `.FRMRecent-*` of the Perl client. Reported so
    /// that nothing is left out in silence; not a difference (exit 0).
    NotIndexed { path: RelPath, reason: String },
    /// An event that rrr acknowledged (`.rrr/acknowledged-*.json`) and
    /// the collection no longer holds: a writer renamed an older copy over
    /// the principal. `--repair` (and every rrr write) records it again.
    AcknowledgedMissing {
        path: RelPath,
        epoch: Epoch,
        #[serde(rename = "type")]
        event_type: EventKind,
    },
    /// A file whose newest event records a size and sha256 (a collection
    /// that hashes, origin::hashing) that its bytes no longer have: changed
    /// behind the index's back (or tampered with). `sha256` is `null` when
    /// the size already differs (not read) or it is no regular file now.
    /// `--repair` records it again, with its current hash.
    ContentMismatch { path: RelPath, indexed_size: u64, size: u64, indexed_sha256: String, sha256: Option<String> },
}

impl Finding {
    /// Whether `--repair` acts on it.
    pub fn change(&self) -> Option<Change> {
        match self {
            Finding::OwnFileIndexed { path } => {
                Some(Change { path: path.clone(), kind: EventKind::Delete, epoch: None, digest: None })
            }
            Finding::MissingInIndex { path } | Finding::Modified { path } | Finding::ContentMismatch { path, .. } => {
                Some(Change { path: path.clone(), kind: EventKind::New, epoch: None, digest: None })
            }
            Finding::MissingOnDisk { path } => {
                Some(Change { path: path.clone(), kind: EventKind::Delete, epoch: None, digest: None })
            }
            _ => None,
        }
    }

    /// Whether it is a difference or a problem (fsck exits 1), not
    /// information ([`Finding::NotIndexed`]).
    pub fn is_difference(&self) -> bool {
        !matches!(self, Finding::NotIndexed { .. })
    }

    /// One plain line.
    pub fn line(&self) -> String {
        let esc = crate::recentfile::escape_path;
        match self {
            Finding::OwnFileIndexed { path } => format!("own_file_indexed\t{}", esc(path)),
            Finding::MissingInIndex { path } => format!("missing_in_index\t{}", esc(path)),
            Finding::MissingOnDisk { path } => format!("missing_on_disk\t{}", esc(path)),
            Finding::Modified { path } => format!("modified\t{}", esc(path)),
            Finding::Unreadable { file, error } => format!("unreadable\t{file}\t{error}"),
            Finding::MissingRecentfile { file } => format!("missing_recentfile\t{file}"),
            Finding::Gap { file, oldest, next_file, next_newest } => {
                format!("gap\t{file} oldest {oldest} is newer than {next_file} newest {next_newest}")
            }
            Finding::IntervalMismatch { file, meta_interval } => {
                format!("interval_mismatch\t{file} says interval {meta_interval}")
            }
            Finding::SkippedEvent { file, line, epoch, path, reason } => format!(
                "skipped_event\t{file}{} {epoch} {}: {reason}",
                line.map(|l| format!(":{l}")).unwrap_or_default(),
                esc(path)
            ),
            Finding::Unindexable { path, reason } => format!("unindexable\t{}\t{reason}", esc(path)),
            Finding::NotIndexed { path, reason } => format!("not_indexed\t{}\t{reason}", esc(path)),
            Finding::AcknowledgedMissing { path, epoch, event_type } => {
                format!("acknowledged_missing\t{} {epoch} {}", event_type.as_str(), esc(path))
            }
            Finding::ContentMismatch { path, indexed_size, size, indexed_sha256, sha256 } => format!(
                "content_mismatch\t{}\tsize {size} (indexed {indexed_size}), sha256 {} (indexed {indexed_sha256})",
                esc(path),
                sha256.as_deref().unwrap_or("not read")
            ),
        }
    }
}

/// The result of a check.
#[derive(Debug, Default, Serialize)]
pub(crate) struct Report {
    pub disk_files: usize,
    pub index_files: usize,
    pub findings: Vec<Finding>,
    pub repaired: usize,
    /// Acknowledged events recorded again since the journal was made
    /// (by any rrr writer, see [`crate::origin::journal`]).
    pub rerecorded: u64,
    /// Why `--repair` did nothing although asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repair_refused: Option<String>,
    /// Files of the tree whose newest event records a digest, with their
    /// size on disk: what [`content_mismatches`] reads.
    #[serde(skip)]
    pub recorded_digests: Vec<(RelPath, FileDigest, u64)>,
}

/// Check the collection's files alone, one at a time, smallest first
/// (unreadable or missing files, interval mismatches, skipped events, gaps
/// between adjacent files), and hand each readable one to `each`.
pub(crate) fn check_files(coll: &Collection, findings: &mut Vec<Finding>, mut each: impl FnMut(Recentfile)) {
    let exists: Vec<bool> =
        coll.intervals.iter().map(|iv| std::fs::symlink_metadata(coll.path_of(iv)).is_ok()).collect();
    // The smaller neighbour's meta.merged, as read (for its into_interval).
    let mut previous: Option<Merged> = None;
    // The previous readable file: its name, oldest epoch and merged.epoch.
    let mut prev: Option<(String, Option<Epoch>, Option<Epoch>)> = None;
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
                if let (Some((a_name, Some(oldest), merged_upto)), Some(next_newest)) = (&prev, rf.newest()) {
                    // A keeps every event newer than what it last merged into B
                    // (merged.epoch), so only events between B's newest and A's
                    // oldest that A never merged can be missing.
                    if *oldest > next_newest.epoch && merged_upto.as_ref().is_none_or(|m| *m > next_newest.epoch) {
                        findings.push(Finding::Gap {
                            file: a_name.clone(),
                            oldest: oldest.to_string(),
                            next_file: name.clone(),
                            next_newest: next_newest.epoch.to_string(),
                        });
                    }
                }
                prev = Some((name, rf.oldest().map(|e| e.epoch.clone()), rf.meta.merged.epoch().cloned()));
                each(rf);
            }
            Ok(None) => findings.push(Finding::MissingRecentfile { file: name }),
            Err(e) => findings.push(Finding::Unreadable { file: name, error: e.to_string() }),
        }
    }
}

/// The index as the tree comparison needs it: each path's newest event
/// over the whole collection. The files are read one at a time, smallest
/// first, and a path's first occurrence wins (as in news), so only one
/// file's events are in memory at once.
#[derive(Debug, Default)]
pub(crate) struct Index {
    /// The whole second of each path's newest event if that is a `new`;
    /// `None` if it is a `delete`.
    newest: foldhash::HashMap<RelPath, Option<i64>>,
    /// The size and sha256 recorded by a path's newest event, where it has
    /// them; only when `keep_digests` (fsck, not the watch daemon's
    /// long-lived index).
    digests: foldhash::HashMap<RelPath, FileDigest>,
    keep_digests: bool,
}

/// The events of the file read before, newest first, as epochs and one
/// string of paths. A larger file repeats the events of the smaller one up
/// to its last merge (right after `init --aggregate`, every file holds
/// every event): those are recognised by walking both lists down together
/// and need no lookup in the map, a random access each.
#[derive(Default)]
struct Previous {
    epochs: Vec<Epoch>,
    ends: Vec<usize>,
    paths: Vec<u8>,
}

impl Previous {
    /// Room for the events of `rf`.
    fn for_file(rf: &Recentfile) -> Previous {
        let n = rf.events.len();
        let bytes = rf.events.iter().map(|e| e.path.len()).sum();
        Previous { epochs: Vec::with_capacity(n), ends: Vec::with_capacity(n), paths: Vec::with_capacity(bytes) }
    }

    fn push(&mut self, epoch: Epoch, path: &RelPath) {
        self.paths.extend_from_slice(path.as_bytes());
        self.ends.push(self.paths.len());
        self.epochs.push(epoch);
    }

    fn path(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.paths[start..self.ends[i]]
    }
}

impl Index {
    /// Read the collection; `findings` gets what [`check_files`] finds.
    pub fn read(coll: &Collection, findings: &mut Vec<Finding>) -> Index {
        Index::read_keeping(coll, findings, false)
    }

    /// [`Index::read`], keeping the digests of the newest events when `keep_digests`.
    fn read_keeping(coll: &Collection, findings: &mut Vec<Finding>, keep_digests: bool) -> Index {
        let mut index = Index { keep_digests, ..Index::default() };
        let mut prev = Previous::default();
        check_files(coll, findings, |rf| prev = index.add(rf, &prev));
        index
    }

    /// Add the events of the next larger file; `prev` is what adding the
    /// one before returned.
    fn add(&mut self, rf: Recentfile, prev: &Previous) -> Previous {
        let mut cur = Previous::for_file(&rf);
        let mut j = 0;
        for e in rf.events {
            // Both lists are newest first: walk the previous one down to this epoch.
            while j < prev.epochs.len() && prev.epochs[j] > e.epoch {
                j += 1;
            }
            let repeated = j < prev.epochs.len() && prev.epochs[j] == e.epoch && prev.path(j) == e.path.as_bytes();
            cur.push(e.epoch.clone(), &e.path);
            if !repeated && !self.newest.contains_key(&e.path) {
                let live = (e.kind == EventKind::New).then(|| e.epoch.whole_seconds());
                if let (true, Some(_), Some(d)) = (self.keep_digests, live, e.digest()) {
                    self.digests.insert(e.path.clone(), d);
                }
                self.newest.insert(e.path, live);
            }
        }
        cur
    }

    /// How many paths the index says exist.
    pub fn live(&self) -> usize {
        self.newest.values().filter(|v| v.is_some()).count()
    }

    /// The index after `changes` were recorded at `secs` (whole seconds).
    pub fn apply(&mut self, changes: &[Change], secs: i64) {
        for c in changes {
            let live = (c.kind == EventKind::New).then_some(secs);
            self.newest.insert(c.path.clone(), live);
            self.digests.remove(&c.path);
        }
    }

    /// Whether the index says `path` exists.
    pub fn is_live(&self, path: &RelPath) -> bool {
        self.newest.get(path).is_some_and(|v| v.is_some())
    }

    /// The paths the index says exist under `dir`.
    pub fn live_under(&self, dir: impl AsRef<[u8]>) -> Vec<RelPath> {
        let dir = dir.as_ref();
        self.newest
            .iter()
            .filter(|(p, v)| v.is_some() && crate::origin::watch::rules::is_under(p, dir))
            .map(|(p, _)| p.clone())
            .collect()
    }
}

/// Compare the tree (its files in walk order) with the index. With
/// `changed_since`, indexed files whose mtime or ctime is at or after it
/// (and not older than their event) are `Modified`.
pub(crate) fn differences(index: Index, tree: &[Entry], changed_since: Option<i64>) -> Vec<Finding> {
    let mut newest = index.newest;
    let mut findings = Vec::new();
    for e in tree {
        match newest.remove(&e.rel).flatten() {
            None => findings.push(Finding::MissingInIndex { path: e.rel.clone() }),
            Some(indexed_at) => {
                if let Some(since) = changed_since {
                    if (e.mtime >= since || e.ctime >= since) && e.mtime.max(e.ctime) >= indexed_at {
                        findings.push(Finding::Modified { path: e.rel.clone() });
                    }
                }
            }
        }
    }
    let mut gone: Vec<RelPath> = newest.into_iter().filter(|(_, v)| v.is_some()).map(|(p, _)| p).collect();
    gone.sort();
    findings.extend(gone.into_iter().map(|path| Finding::MissingOnDisk { path }));
    findings
}

/// Compare index and tree. With `changed_since`, indexed files whose mtime
/// or ctime is newer are reported as `Modified`.
pub(crate) fn compare(coll: &Collection, ignore: &IgnoreSet, changed_since: Option<i64>) -> Result<Report> {
    compare_inner(coll, ignore, changed_since, |_| {}, true)
}

/// [`compare`], calling `enter` with each directory of the tree right
/// before it is listed (see `tree::walk_with`). The index is read on a
/// second thread while the tree is walked: one waits for the disk, the
/// other parses.
pub(crate) fn compare_with(
    coll: &Collection,
    ignore: &IgnoreSet,
    changed_since: Option<i64>,
    enter: impl FnMut(&RelPath),
) -> Result<Report> {
    compare_inner(coll, ignore, changed_since, enter, false)
}

/// [`compare_with`]; with `digests`, [`Report::recorded_digests`] too.
fn compare_inner(
    coll: &Collection,
    ignore: &IgnoreSet,
    changed_since: Option<i64>,
    enter: impl FnMut(&RelPath),
    digests: bool,
) -> Result<Report> {
    let mut report = Report::default();
    let mut tree = Vec::new();
    let mut unindexable = Vec::new();
    let (index, walked) = std::thread::scope(|s| {
        let reader = s.spawn(|| {
            let mut findings = Vec::new();
            (Index::read_keeping(coll, &mut findings, digests), findings)
        });
        let walked = tree::walk_with(
            &coll.root,
            ignore,
            enter,
            |e| tree.push(e),
            |p, why| {
                unindexable.push(match why {
                    tree::Skip::Unindexable(reason) => Finding::Unindexable { path: RelPath::from(p), reason },
                    tree::Skip::NotIndexed(reason) => {
                        Finding::NotIndexed { path: RelPath::from(p.strip_prefix(&coll.root).unwrap_or(p)), reason }
                    }
                })
            },
        );
        (reader.join(), walked)
    });
    let (index, findings) = index.map_err(|_| anyhow::anyhow!("reading the index failed"))?;
    walked?;
    report.findings = findings;
    report.index_files = index.live();
    report.disk_files = tree.len();
    if !index.digests.is_empty() {
        report.recorded_digests = tree
            .iter()
            .filter(|e| index.is_live(&e.rel))
            .filter_map(|e| index.digests.get(&e.rel).map(|d| (e.rel.clone(), d.clone(), e.size)))
            .collect();
    }
    // The walk leaves rrr's own files out, so an index entry naming one
    // looks missing on disk: say what it is.
    report.findings.extend(differences(index, &tree, changed_since).into_iter().map(|f| match f {
        Finding::MissingOnDisk { path } if ignore.why_ignored(&path, false) == Some(Ignored::Own) => {
            Finding::OwnFileIndexed { path }
        }
        f => f,
    }));
    report.findings.extend(unindexable);
    Ok(report)
}

/// The files of `recorded` (path, recorded digest, size on disk) whose
/// bytes are not what their event records: a different size (not read),
/// else a different sha256 (read in parallel, origin::hashing). A file
/// that cannot be read is `Unindexable`; one that changes while it is
/// read is left out (it is being written: its next event covers it).
pub(crate) fn content_mismatches(root: &std::path::Path, recorded: &[(RelPath, FileDigest, u64)]) -> Vec<Finding> {
    use crate::origin::hashing::{hash_many, Hashed};
    let mismatch = |path: &RelPath, want: &FileDigest, size: u64, sha256: Option<String>| Finding::ContentMismatch {
        path: path.clone(),
        indexed_size: want.size,
        size,
        indexed_sha256: want.sha256.to_string(),
        sha256,
    };
    let mut out = Vec::new();
    let same_size: Vec<&(RelPath, FileDigest, u64)> = recorded
        .iter()
        .filter(|(path, want, size)| {
            if *size != want.size {
                out.push(mismatch(path, want, *size, None));
            }
            *size == want.size
        })
        .collect();
    let paths: Vec<&RelPath> = same_size.iter().map(|(p, _, _)| p).collect();
    for ((path, want, size), hashed) in same_size.iter().zip(hash_many(root, &paths)) {
        match hashed {
            Hashed::Digest(got, _) if got == *want => {}
            Hashed::Digest(got, _) => out.push(mismatch(path, want, got.size, Some(got.sha256.to_string()))),
            Hashed::NotAFile => out.push(mismatch(path, want, *size, None)),
            Hashed::Unstable => tracing::info!(
                "{}: changed while fsck read it; its hash is not checked",
                crate::recentfile::shown_path(path.as_bytes())
            ),
            Hashed::Unreadable(why) => {
                out.push(Finding::Unindexable { path: path.clone(), reason: format!("cannot hash it: {why}") })
            }
        }
    }
    out.sort_by_key(Finding::line);
    out
}

/// Compare the index with the tree and, with `repair`, record the
/// differences (refused while a recentfile is unreadable).
pub(crate) fn check(principal: &std::path::Path, excludes: &[String], repair: bool, w: &Writer) -> Result<Report> {
    let coll = Collection::open(principal)?;
    let ignore = IgnoreSet::new(&coll.filenameroot, excludes).with_clock(&w.clock).with_recorded_own(&coll.root);
    let mut report = compare(&coll, &ignore, None)?;
    let recorded = std::mem::take(&mut report.recorded_digests);
    report.findings.extend(content_mismatches(&coll.root, &recorded));
    let journal = crate::origin::journal::read(&coll);
    report.rerecorded = journal.rerecorded;
    if let Ok(Some(principal)) = coll.read(coll.principal()) {
        for e in crate::origin::journal::lost(&coll, &principal, &journal)? {
            report.findings.push(Finding::AcknowledgedMissing { path: e.path, epoch: e.epoch, event_type: e.kind });
        }
    }
    if repair {
        if report.findings.iter().any(|f| matches!(f, Finding::Unreadable { .. })) {
            report.repair_refused =
                Some("refusing to repair: a recentfile is unreadable, so the index is not known".into());
            return Ok(report);
        }
        let changes: Vec<Change> = report.findings.iter().filter_map(Finding::change).collect();
        let lost = report.findings.iter().any(|f| matches!(f, Finding::AcknowledgedMissing { .. }));
        if !changes.is_empty() || lost {
            // Records the acknowledged events that went missing too.
            let r = crate::origin::record::record(&coll, &changes, w)?;
            report.repaired = changes.len() + r.rerecorded.len();
            report.rerecorded += r.rerecorded.len() as u64;
            r.journal_result()?;
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::newest_per_path;
    use crate::recentfile::Event;
    use proptest::prelude::*;

    fn file(events: &[(i64, &str, EventKind)]) -> Recentfile {
        let events = events.iter().map(|(t, p, k)| Event::new(Epoch::from_whole_seconds(*t), *p, *k)).collect();
        Recentfile::from_events(events)
    }

    fn index_of(files: &[Recentfile]) -> Index {
        let mut index = Index::default();
        let mut prev = Previous::default();
        for f in files {
            prev = index.add(f.clone(), &prev);
        }
        index
    }

    /// What news says: the live paths with their events' whole seconds.
    fn live_by_news(files: &[Recentfile]) -> Vec<(String, i64)> {
        let mut v: Vec<(String, i64)> = newest_per_path(files.iter())
            .into_iter()
            .filter(|e| e.kind == EventKind::New)
            .map(|e| (e.path.to_str().unwrap().to_string(), e.epoch.whole_seconds()))
            .collect();
        v.sort();
        v
    }

    fn live_by_index(index: &Index) -> Vec<(String, i64)> {
        let mut v: Vec<(String, i64)> =
            index.newest.iter().filter_map(|(p, t)| t.map(|t| (p.to_str().unwrap().to_string(), t))).collect();
        v.sort();
        v
    }

    #[test]
    fn first_occurrence_wins_repeated_or_not() {
        use EventKind::{Delete, New};
        let small = file(&[(50, "gone", Delete), (40, "a", New), (30, "b", New)]);
        // Repeats a and b exactly, lists `gone` as new (older), adds c;
        // `b` again at another epoch is no repeat but still older.
        let big = file(&[(40, "a", New), (30, "b", New), (20, "gone", New), (10, "c", New), (5, "b", New)]);
        let files = [small, big];
        let index = index_of(&files);
        assert_eq!(live_by_index(&index), live_by_news(&files));
        assert_eq!(live_by_index(&index), vec![("a".into(), 40), ("b".into(), 30), ("c".into(), 10)]);
        assert_eq!(index.live(), 3);
        let mut under = index.live_under("");
        under.sort();
        assert_eq!(under, ["a", "b", "c"]);
        assert!(index.live_under("gone").is_empty());
    }

    proptest! {
        /// Over any files (each newest first, one event per path), the
        /// index says what news says, whatever the files repeat.
        #[test]
        fn index_agrees_with_news(
            files in prop::collection::vec(
                prop::collection::btree_map(0i64..60, (0usize..15, any::<bool>()), 0..25), 1..5),
            copy in prop::collection::vec(any::<bool>(), 4),
        ) {
            let mut rfs: Vec<Recentfile> = Vec::new();
            for (i, f) in files.iter().enumerate() {
                let mut seen = std::collections::HashSet::new();
                let mut events: Vec<Event> = Vec::new();
                // A larger file often repeats the smaller one's events.
                if i > 0 && copy[i - 1] {
                    for e in &rfs[i - 1].events {
                        seen.insert(e.path.clone());
                        events.push(e.clone());
                    }
                }
                for (t, (p, del)) in f.iter().rev() {
                    let path = format!("p{p}");
                    if seen.insert(RelPath::from(&path)) {
                        let kind = if *del { EventKind::Delete } else { EventKind::New };
                        events.push(Event::new(Epoch::from_whole_seconds(*t), path, kind));
                    }
                }
                events.sort_by(|a, b| b.epoch.cmp(&a.epoch));
                events.dedup_by(|a, b| a.epoch == b.epoch);
                rfs.push(Recentfile::from_events(events));
            }
            prop_assert_eq!(live_by_index(&index_of(&rfs)), live_by_news(&rfs));
        }
    }
}
