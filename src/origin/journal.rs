//! The journal of acknowledged events: what makes an event that rrr
//! acknowledged stick, whatever a Perl writer does afterwards.
//!
//! A Perl 0.4.3 writer that broke a stale lock together with another one
//! can rename its older copy of the principal into place after an rrr
//! writer took a fresh lock, recorded, checked and exited 0
//! (docs/decisions.md#locks, "the double break"): rrr cannot stop that
//! rename, which happens when no rrr process is running. So every rrr
//! write of the principal (`update`, the watch daemon's batches, `fsck
//! --repair`, the re-records themselves) also notes the events it
//! acknowledged in `<root>/.rrr/acknowledged-<filenameroot>.json`
//! (written atomically and fsynced before the command exits 0), and every
//! rrr write (those, `aggregate`, and the watch daemon every
//! [`CHECK_EVERY`]) first looks whether each noted event is still in the
//! collection and records again any that went missing.
//!
//! An entry (path, type, epoch) is *held* when the collection lists the
//! path with that epoch or a later one (a later event of the path, by any
//! writer, supersedes it), or when it is a delete and the collection does
//! not list the path as existing (deletes are dropped on their way into
//! Z). It is *lost* otherwise, and is recorded again as the path is on
//! disk now (`new` if it exists as a non-directory, else `delete`), at the
//! clock's epoch: a mirror that fetched the principal while the Perl
//! writer's copy was in place has its done-set past the old epoch and
//! would never look at it again. Idempotent: the re-recorded event holds
//! the entry.
//!
//! Entries stay [`KEEP`] after their acknowledgement (the longest a Perl
//! writer's copy may lie between its read and its rename, as rrr
//! guarantees it), one per path (the newest), at most [`MAX_ENTRIES`]
//! (the oldest go first, with a warning). `init --force` empties it: the
//! new index lists the tree as it is.
//!
//! The file (JSON, one object; documented in README.mirror):
//!
//! ```json
//! {"rerecorded": 1, "last_rerecorded": "1700000123.5",
//!  "events": [{"epoch": "1700000100.25", "type": "new", "path": "a/b", "at": 1700000100.3}]}
//! ```
//!
//! `rerecorded` counts every event recorded again since the file was made
//! (`fsck --json` and the watch's Prometheus textfile report it); `at` is
//! the real time of the acknowledgement. Its read-modify-write is
//! serialised by an `flock(2)` on `acknowledged-<filenameroot>.flock`,
//! always taken last and held only for the write (no other lock is waited
//! for while it is held).

use crate::collection::Collection;
use crate::epoch::Epoch;
use crate::recentfile::{Event, EventKind, Recentfile, RelPath};
use crate::update::Change;
use anyhow::{Context, Result};
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long an acknowledged event stays in the journal.
pub(crate) const KEEP: Duration = Duration::from_secs(600);

/// The most entries the journal keeps (one per path).
pub(crate) const MAX_ENTRIES: usize = 100_000;

/// How often the watch daemon looks whether the principal was replaced
/// by another writer (and then whether an acknowledged event went missing).
pub(crate) const CHECK_EVERY: Duration = Duration::from_secs(5);

/// The journal's content.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct Journal {
    /// Events recorded again because they had gone missing, since the file was made.
    #[serde(default)]
    pub rerecorded: u64,
    /// The real time of the last re-record (an epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_rerecorded: Option<String>,
    /// The acknowledged events, oldest first.
    #[serde(default)]
    pub events: Vec<Acked>,
    /// The file this was read from (`None`: none, or unreadable): a writer
    /// that finds it unchanged under the journal's lock need not read it again.
    #[serde(skip)]
    read_as: Option<FileId>,
}

/// One acknowledged event.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Acked {
    pub epoch: Epoch,
    #[serde(rename = "type")]
    pub kind: EventKind,
    pub path: RelPath,
    /// The real time it was acknowledged (Unix seconds).
    pub at: f64,
}

/// `<root>/.rrr/acknowledged-<filenameroot>.json`
pub(crate) fn path_of(coll: &Collection) -> PathBuf {
    coll.root.join(".rrr").join(format!("acknowledged-{}.json", coll.filenameroot))
}

fn lock_path_of(coll: &Collection) -> PathBuf {
    coll.root.join(".rrr").join(format!("acknowledged-{}.flock", coll.filenameroot))
}

/// The real time, for `at` and `last_rerecorded` (never `--now`: ages).
fn wall() -> f64 {
    crate::sys::clock::Clock::system().now_f64()
}

/// Read the journal (none yet: empty). An unreadable one is reported and
/// read as empty: it is rewritten whole by the next write.
pub(crate) fn read(coll: &Collection) -> Journal {
    read_at(&path_of(coll))
}

fn read_at(path: &Path) -> Journal {
    let id = file_id(path);
    match fs::read(path) {
        Ok(bytes) => match serde_json::from_slice::<Journal>(&bytes) {
            Ok(j) => Journal { read_as: id.filter(|id| id.size == bytes.len() as u64), ..j },
            Err(e) => {
                tracing::warn!("ignoring the unreadable journal of acknowledged events {}: {e}", path.display());
                Journal::default()
            }
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Journal::default(),
        Err(e) => {
            tracing::warn!("cannot read the journal of acknowledged events {}: {e}", path.display());
            Journal::default()
        }
    }
}

/// The entries of `journal` that the collection no longer holds (see the
/// module doc), each once per path (its newest). `principal` is the
/// principal as read under its lock.
pub(crate) fn lost(coll: &Collection, principal: &Recentfile, journal: &Journal) -> Result<Vec<Acked>> {
    let newest = newest_entries(&journal.events);
    let events: Vec<(&RelPath, &Epoch, EventKind)> = newest.iter().map(|e| (&e.path, &e.epoch, e.kind)).collect();
    Ok(unheld(coll, principal, &events)?.into_iter().map(|i| newest[i].clone()).collect())
}

/// The indices of `events` (path, epoch, type) that the collection no
/// longer holds: the one rule for the journal's entries and for a batch
/// checked after a take-over ([`crate::origin::record`]). An event is held
/// when the principal lists its path with that epoch or a later one (a
/// later event of the path, by any writer, supersedes it); one newer than
/// what the principal last handed to the larger files (`merged`) only so.
/// Older ones may have moved on: held when a larger file lists the path
/// with that epoch or a later one, and a delete also when the collection
/// does not list the path as existing (deletes are dropped on their way
/// into Z). The larger files are read one at a time and only as far as
/// needed.
pub(crate) fn unheld(
    coll: &Collection,
    principal: &Recentfile,
    events: &[(&RelPath, &Epoch, EventKind)],
) -> Result<Vec<usize>> {
    let in_principal = newest_by_path(principal);
    let merged = principal.meta.merged.epoch();
    let reset = matches!(principal.meta.merged, crate::recentfile::Merged::Reset);
    let mut unsure: Vec<usize> = Vec::new();
    let mut out = Vec::new();
    for (i, &(path, epoch, _)) in events.iter().enumerate() {
        if in_principal.get(path).is_some_and(|x| x.epoch >= *epoch) {
            continue;
        }
        // Newer than what the principal last handed to the larger files:
        // only the principal can hold it.
        if merged.is_none_or(|m| m < epoch) && !reset {
            out.push(i);
        } else {
            unsure.push(i);
        }
    }
    if unsure.is_empty() {
        return Ok(out);
    }
    // The newest event of each unsure path in the larger files.
    let want: std::collections::HashSet<&RelPath> = unsure.iter().map(|&i| events[i].0).collect();
    let mut found: HashMap<&RelPath, Event> = HashMap::new();
    for iv in coll.intervals.iter().skip(1) {
        let Some(rf) = coll.read(iv)? else { continue };
        for ev in rf.events {
            if let Some(path) = want.get(&ev.path) {
                if found.get(path).is_none_or(|f| f.epoch < ev.epoch) {
                    found.insert(path, ev);
                }
            }
        }
        if unsure.iter().all(|&i| found.get(events[i].0).is_some_and(|f| f.epoch >= *events[i].1)) {
            break;
        }
    }
    for i in unsure {
        let (path, epoch, kind) = events[i];
        // The path's newest listing anywhere in the collection.
        let listed = [in_principal.get(path).copied(), found.get(path)]
            .into_iter()
            .flatten()
            .max_by(|a, b| a.epoch.cmp(&b.epoch));
        let held = match (listed, kind) {
            (Some(l), _) if l.epoch >= *epoch => true,
            // A delete: held unless the collection lists the path as existing.
            (Some(l), EventKind::Delete) => l.kind == EventKind::Delete,
            (None, EventKind::Delete) => true,
            _ => false,
        };
        if !held {
            out.push(i);
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// The changes that record `lost` entries again, as the tree is now;
/// paths that `batch` records anyway are left out.
pub(crate) fn rerecords(root: &Path, lost: &[Acked], batch: &[Change]) -> Vec<Change> {
    let in_batch: std::collections::HashSet<&RelPath> = batch.iter().map(|c| &c.path).collect();
    lost.iter()
        .filter(|e| !in_batch.contains(&e.path))
        .map(|e| {
            let exists = fs::symlink_metadata(root.join(e.path.as_path())).is_ok_and(|m| !m.is_dir());
            let kind = if exists { EventKind::New } else { EventKind::Delete };
            Change { path: e.path.clone(), kind, epoch: None, digest: None }
        })
        .collect()
}

/// Note `acknowledged` (the events as a write left them in `principal`)
/// and `rerecorded` more re-records in the journal, durably: the caller
/// acknowledges only after this returns. `prior` is the journal as the
/// writer read it before its write (used again if the file is unchanged).
/// Entries go once they are safe or old (see [`prune`]): the writer first
/// re-recorded what was lost, so all are held now.
pub(crate) fn acknowledge(
    coll: &Collection,
    prior: Journal,
    acknowledged: &[Event],
    rerecorded: usize,
    principal: &Recentfile,
) -> Result<()> {
    let path = path_of(coll);
    let dir = coll.root.join(".rrr");
    fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let _lock = crate::store::lock::flock_file(&lock_path_of(coll))?;
    let mut j = match prior.read_as {
        Some(id) if file_id(&path) == Some(id) => prior,
        None if !path.exists() => prior,
        _ => read_at(&path),
    };
    let now = wall();
    j.events.extend(acknowledged.iter().map(|e| Acked {
        epoch: e.epoch.clone(),
        kind: e.kind,
        path: e.path.clone(),
        at: now,
    }));
    if rerecorded > 0 {
        j.rerecorded += rerecorded as u64;
        j.last_rerecorded = Some(Epoch::from_clock(now).into_string());
    }
    prune(&mut j, now, principal);
    write(&path, &j)
}

/// Empty the journal's events (`init --force`: the new index lists the
/// tree as it is), keeping its counters.
pub(crate) fn reset(coll: &Collection) -> Result<()> {
    let path = path_of(coll);
    if !path.exists() {
        return Ok(());
    }
    let _lock = crate::store::lock::flock_file(&lock_path_of(coll))?;
    let mut j = read_at(&path);
    j.events.clear();
    write(&path, &j)
}

/// Drop all but the newest entry of each path, entries older than
/// [`KEEP`], those the cascade has taken over, and the oldest past
/// [`MAX_ENTRIES`]. Taken over: the principal holds the event and has
/// merged past it, so the merge, which takes every event of the principal,
/// copied it into the next file, which Perl's `update` never writes (a
/// dirty insert below that point resets `merged`).
fn prune(j: &mut Journal, now: f64, principal: &Recentfile) {
    let keep_after = now - KEEP.as_secs_f64();
    let merged = principal.meta.merged.epoch();
    let in_principal = newest_by_path(principal);
    let taken_over = |e: &Acked| {
        merged.is_some_and(|m| e.epoch <= *m) && in_principal.get(&e.path).is_some_and(|x| x.epoch >= e.epoch)
    };
    let mut newest: HashMap<RelPath, Acked> = HashMap::with_capacity(j.events.len());
    for e in j.events.drain(..) {
        if e.at < keep_after || taken_over(&e) {
            continue;
        }
        match newest.get(&e.path) {
            Some(old) if old.epoch > e.epoch => {}
            _ => {
                newest.insert(e.path.clone(), e);
            }
        }
    }
    let mut events: Vec<Acked> = newest.into_values().collect();
    events.sort_by(|a, b| a.at.total_cmp(&b.at).then_with(|| a.epoch.cmp(&b.epoch)));
    if events.len() > MAX_ENTRIES {
        let dropped = events.len() - MAX_ENTRIES;
        tracing::warn!(
            "the journal of acknowledged events holds its limit of {MAX_ENTRIES}: the oldest {dropped} are no \
             longer protected against a Perl writer's overwrite"
        );
        events.drain(..dropped);
    }
    j.events = events;
}

fn write(path: &Path, j: &Journal) -> Result<()> {
    // Streamed: a storm's journal is never in memory twice.
    crate::store::write_atomic_with(path, None, |out| {
        let mut out = std::io::BufWriter::new(out);
        serde_json::to_writer(&mut out, j).map_err(std::io::Error::other)?;
        std::io::Write::flush(&mut out)
    })
    .map_err(anyhow::Error::from)
    .with_context(|| format!("cannot write the journal of acknowledged events {}", path.display()))
}

/// The newest entry of each path.
fn newest_entries(events: &[Acked]) -> Vec<&Acked> {
    let mut by_path: HashMap<&RelPath, &Acked> = HashMap::with_capacity(events.len());
    for e in events {
        match by_path.get(&e.path) {
            Some(old) if old.epoch > e.epoch => {}
            _ => {
                by_path.insert(&e.path, e);
            }
        }
    }
    by_path.into_values().collect()
}

/// Each path's newest event in `rf` (events are newest first).
pub(crate) fn newest_by_path(rf: &Recentfile) -> HashMap<&RelPath, &Event> {
    let mut by_path = HashMap::with_capacity(rf.events.len());
    for e in &rf.events {
        by_path.entry(&e.path).or_insert(e);
    }
    by_path
}

/// A file's identity: the watch daemon re-checks the journal only when
/// the principal is no longer the file it last saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FileId {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
}

/// The identity of the file at `path` (following a symlink); `None` when it cannot be read.
pub(crate) fn file_id(path: &Path) -> Option<FileId> {
    id_of(&fs::metadata(path).ok()?)
}

/// The identity of an open file.
pub(crate) fn file_id_of(file: &fs::File) -> Option<FileId> {
    id_of(&file.metadata().ok()?)
}

fn id_of(m: &fs::Metadata) -> Option<FileId> {
    use std::os::unix::fs::MetadataExt;
    Some(FileId {
        dev: m.dev(),
        ino: m.ino(),
        size: m.size(),
        mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acked(epoch: &str, path: &str, kind: EventKind, at: f64) -> Acked {
        Acked { epoch: Epoch::parse(epoch).unwrap(), kind, path: RelPath::from(path), at }
    }

    #[test]
    fn prune_keeps_the_newest_of_each_path_within_keep() {
        let now = 10_000.0;
        let old = now - KEEP.as_secs_f64() - 1.0;
        let mut j = Journal {
            events: vec![
                acked("100.5", "a", EventKind::New, old),
                acked("200.5", "b", EventKind::New, now - 1.0),
                acked("300.5", "b", EventKind::Delete, now),
                acked("150.5", "c", EventKind::New, now),
                acked("120.5", "merged", EventKind::New, now),
                acked("125.5", "lost", EventKind::New, now),
            ],
            ..Journal::default()
        };
        // The principal merged up to 130.5: `merged` went on with it, `lost` did not.
        let mut principal = Recentfile::from_events(vec![
            Event::new(Epoch::parse("150.5").unwrap(), "c", EventKind::New),
            Event::new(Epoch::parse("120.5").unwrap(), "merged", EventKind::New),
        ]);
        principal.meta.merged = crate::recentfile::Merged::Into {
            epoch: Some(Epoch::parse("130.5").unwrap()),
            into_interval: Some("6h".into()),
            time: None,
        };
        prune(&mut j, now, &principal);
        let got: Vec<(&str, &str)> = j.events.iter().map(|e| (e.path.to_str().unwrap(), e.epoch.as_str())).collect();
        assert_eq!(got, [("lost", "125.5"), ("c", "150.5"), ("b", "300.5")]);
    }

    /// The one rule for "still in the collection", case by case: the
    /// principal, the larger files behind `merged`, and deletes that Z
    /// dropped.
    #[test]
    fn unheld_events_case_by_case() {
        use crate::interval::Interval;
        use crate::recentfile::{Format, Merged};
        let tmp = tempfile::tempdir().unwrap();
        let intervals = crate::interval::parse_list("1h,6h,Z").unwrap();
        let coll = Collection::new(tmp.path().to_path_buf(), "RECENT".into(), Format::Yaml, intervals);
        let ev = |e: &str, p: &str, k| Event::new(Epoch::parse(e).unwrap(), p, k);
        let write = |iv: &Interval, rf: &Recentfile| {
            let producer = crate::recentfile::Producer { program: "t".into(), time: Epoch::parse("1.5").unwrap() };
            let bytes = crate::recentfile::serialize(rf, Format::Yaml, &producer);
            std::fs::write(coll.path_of(iv), bytes).unwrap();
        };
        use EventKind::{Delete, New};
        let mut principal = Recentfile::from_events(vec![
            ev("300.5", "later", New),
            ev("150.5", "listed-new", New),
            ev("120.5", "p", New),
        ]);
        principal.meta.merged =
            Merged::Into { epoch: Some(Epoch::parse("200.5").unwrap()), into_interval: Some("6h".into()), time: None };
        write(&coll.intervals[1], &Recentfile::from_events(vec![ev("190.5", "in-6h", New), ev("50.5", "old", New)]));
        write(&coll.intervals[2], &Recentfile::from_events(vec![ev("10.5", "z", New)]));
        let cases: &[(&str, &str, EventKind, bool)] = &[
            // Superseded in the principal by a later event: held.
            ("later", "250.5", New, true),
            // Newer than merged and not in the principal: lost.
            ("fresh", "250.5", New, false),
            // Behind merged, listed by a larger file at that epoch or later: held.
            ("in-6h", "180.5", New, true),
            ("z", "10.5", New, true),
            ("gone", "100.5", New, false),
            // A delete behind merged that nothing lists: dropped into Z, held.
            ("nowhere", "100.5", Delete, true),
            // A delete whose path a larger file or the principal lists as existing: lost.
            ("old", "100.5", Delete, false),
            ("p", "130.5", Delete, false),
        ];
        let events: Vec<(RelPath, Epoch, EventKind)> =
            cases.iter().map(|(p, e, k, _)| (RelPath::from(*p), Epoch::parse(e).unwrap(), *k)).collect();
        let refs: Vec<(&RelPath, &Epoch, EventKind)> = events.iter().map(|(p, e, k)| (p, e, *k)).collect();
        let got = unheld(&coll, &principal, &refs).unwrap();
        let want: Vec<usize> = cases.iter().enumerate().filter(|(_, c)| !c.3).map(|(i, _)| i).collect();
        assert_eq!(got, want, "{:?}", got.iter().map(|&i| cases[i].0).collect::<Vec<_>>());
    }

    #[test]
    fn journal_round_trips_with_byte_paths() {
        let j = Journal {
            rerecorded: 2,
            last_rerecorded: Some("5.5".into()),
            events: vec![Acked {
                epoch: Epoch::parse("1.25").unwrap(),
                kind: EventKind::Delete,
                path: RelPath::from(b"a/\xff\n".as_slice()),
                at: 3.0,
            }],
            read_as: None,
        };
        let text = serde_json::to_string(&j).unwrap();
        assert!(text.contains(r#""type":"delete""#), "{text}");
        let back: Journal = serde_json::from_str(&text).unwrap();
        assert_eq!(back.events, j.events);
        assert_eq!(back.rerecorded, 2);
    }
}
