//! `rrr verify`: is my mirror complete? The mirror's tree against the union
//! of its own copies of the recentfiles (each path's newest event, as
//! `news` reads them; a delete removes the path): every live path present,
//! with the recorded size and, with `--hash`, sha256 (where the index
//! records them); files the index does not know (outside the excludes and
//! rrr's own files: the one [`IgnoreSet`]); files older than the index's
//! horizon (a collection without `Z` forgets old events), which cannot be
//! checked. Exit 0 complete, 1 differences, 2 errors
//! (docs/decisions.md#verify).
//!
//! The tree is read once: one walk (`fstatat` per entry, as `find` does)
//! on this thread while a second one parses the recentfiles; `--hash`
//! then reads the present files on as many threads as there are cores.
//! What the index expects is built in one place, [`expected`], from the
//! events: today an event gives presence only; the per-event `size` and
//! `sha256` keys are wired there.

use crate::collection::Collection;
use crate::epoch::Epoch;
use crate::ops::{Ctx, Exit};
use crate::query::NewsFilter;
use crate::recentfile::{EventKind, Recentfile, RelPath};
use crate::tree::{self, IgnoreSet};
use ::recentfile::beacon::{FileDigest, Hasher, Sha256Hex};
use anyhow::{Context, Result};
use serde::Serialize;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// What `rrr verify` was asked.
pub struct Options {
    /// The mirror's root (holding `RECENT.recent` and the recentfiles).
    pub localroot: PathBuf,
    /// Read every present indexed file and compare its sha256 where the
    /// index records one.
    pub hash: bool,
    /// One JSON object (counts and lists) instead of lines for people.
    pub json: bool,
    /// `--exclude` patterns (rsync's rules): paths not checked.
    pub excludes: Vec<String>,
    /// Write the paths to fetch (missing and different), each followed by
    /// a NUL byte, for `rsync --from0 --files-from=FILE`.
    pub fetch_list: Option<PathBuf>,
}

/// What the index says of one live path: the one local view of an event
/// that verify compares with the tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expected {
    /// The path, relative to the root.
    pub path: RelPath,
    /// Its newest event's epoch.
    pub epoch: Epoch,
    /// Bytes, when the event records them.
    pub size: Option<u64>,
    /// sha256, when the event records it.
    pub sha256: Option<Sha256Hex>,
}

/// The live paths of the union of `files` (smallest first): each path's
/// newest event (by epoch, as `news` picks it), deletes removed. The one
/// place that turns events into what verify expects. One hash lookup per
/// event and no sort: a mirror of CPAN has a million events over its files.
pub fn expected(files: &[Recentfile]) -> Vec<Expected> {
    let mut newest: foldhash::HashMap<&RelPath, &crate::recentfile::Event> = Default::default();
    for e in files.iter().flat_map(|f| f.events.iter()) {
        match newest.entry(&e.path) {
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(e);
            }
            std::collections::hash_map::Entry::Occupied(mut o) => {
                if e.epoch > o.get().epoch {
                    o.insert(e);
                }
            }
        }
    }
    newest
        .into_values()
        .filter(|e| e.kind == EventKind::New)
        .map(|e| Expected { path: e.path.clone(), epoch: e.epoch.clone(), size: None, sha256: None })
        .collect()
}

/// A present file whose size or hash is not what the index records.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Different {
    /// The path, relative to the root.
    pub path: RelPath,
    /// What the index records, if it does.
    pub expected_size: Option<u64>,
    /// What the tree has.
    pub size: u64,
    /// What the index records (with `--hash`, if it does).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_sha256: Option<String>,
    /// What the tree has (with `--hash`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

/// The result of one verify. JSON: this object, `"kind": "verify"`.
#[derive(Debug, Default, Serialize)]
pub struct Report {
    /// Live paths in the index.
    pub indexed: usize,
    /// Indexed paths present (whether or not they match).
    pub present: usize,
    /// Files of the tree the walk saw (rrr's own and excluded ones left out).
    pub tree_files: usize,
    /// Indexed paths the excludes leave out: not checked.
    pub excluded: usize,
    /// Present files whose sha256 was computed (`--hash`).
    pub hashed: usize,
    /// Present files compared by size or hash against what the index records.
    pub checked_size: usize,
    /// Present files compared by sha256 (`--hash`, where the index records one).
    pub checked_sha256: usize,
    /// The oldest epoch the index still remembers when its largest file is
    /// not `Z` (older files cannot be checked); `null` with a `Z` file.
    pub horizon: Option<String>,
    /// Indexed, absent from the tree.
    pub missing: Vec<RelPath>,
    /// Indexed and present, another size or hash.
    pub different: Vec<Different>,
    /// In the tree, unknown to the index (newer than the horizon).
    pub unknown: Vec<RelPath>,
    /// Unknown to the index and last modified before its horizon.
    pub beyond_horizon: Vec<RelPath>,
    /// Entries the walk could not read (path and reason).
    pub unreadable: Vec<(String, String)>,
    /// What to fetch (the paths of `missing` and `different`) with their
    /// newest event's epoch: `rmirror --verify-every` hands them to the
    /// next pass as failing paths.
    #[serde(skip)]
    pub to_fetch: Vec<(RelPath, Epoch)>,
}

impl Report {
    /// Whether the tree is what the index says.
    pub fn complete(&self) -> bool {
        self.missing.is_empty() && self.different.is_empty() && self.unknown.is_empty() && self.unreadable.is_empty()
    }
}

/// Verify, print, and exit 0 when complete, 1 with differences.
pub fn run(opts: &Options, ctx: &Ctx) -> Result<Exit> {
    let report = verify(&opts.localroot, &opts.excludes, opts.hash, ctx.progress)?;
    if let Some(file) = &opts.fetch_list {
        write_fetch_list(file, &report)?;
    }
    let mut out = ctx.out();
    if opts.json {
        #[derive(Serialize)]
        struct Json<'a> {
            kind: &'static str,
            complete: bool,
            #[serde(flatten)]
            report: &'a Report,
        }
        serde_json::to_writer(&mut **out, &Json { kind: "verify", complete: report.complete(), report: &report })?;
        writeln!(out)?;
    } else {
        print_lines(&report, &mut **out)?;
    }
    out.flush()?;
    Ok(if report.complete() { Exit::Ok } else { Exit::Differences })
}

fn print_lines(r: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    let esc = crate::recentfile::escape_path;
    for p in &r.missing {
        writeln!(out, "missing\t{}", esc(p))?;
    }
    for d in &r.different {
        let mut why = Vec::new();
        if d.expected_size.is_some_and(|s| s != d.size) {
            why.push(format!("size {} (index {})", d.size, d.expected_size.unwrap_or_default()));
        }
        if let (Some(want), Some(got)) = (&d.expected_sha256, &d.sha256) {
            if want != got {
                why.push(format!("sha256 {got} (index {want})"));
            }
        }
        writeln!(out, "different\t{}\t{}", esc(&d.path), why.join(", "))?;
    }
    for p in &r.unknown {
        writeln!(out, "unknown\t{}", esc(p))?;
    }
    for (p, why) in &r.unreadable {
        writeln!(out, "unreadable\t{p}\t{why}")?;
    }
    writeln!(
        out,
        "verify: {}: {} indexed files, {} present, {} missing, {} different, {} unknown{}, {} excluded; {} sizes and {} sha256 checked, {} files hashed",
        if r.complete() { "complete" } else { "DIFFERENCES" },
        r.indexed,
        r.present,
        r.missing.len(),
        r.different.len(),
        r.unknown.len(),
        r.horizon
            .as_ref()
            .map(|h| format!(", {} older than the index's horizon {h} (not checked)", r.beyond_horizon.len()))
            .unwrap_or_default(),
        r.excluded,
        r.checked_size,
        r.checked_sha256,
        r.hashed,
    )
}

/// Each path of `missing` and `different`, sorted, followed by a NUL byte
/// (the bytes as they are: a name may hold a newline).
fn write_fetch_list(file: &Path, r: &Report) -> Result<()> {
    let mut paths: Vec<&RelPath> = r.missing.iter().chain(r.different.iter().map(|d| &d.path)).collect();
    paths.sort();
    let mut buf = Vec::new();
    for p in paths {
        buf.extend_from_slice(p.as_bytes());
        buf.push(0);
    }
    std::fs::write(file, buf).with_context(|| format!("writing the fetch list {}", file.display()))
}

/// One present file the index knows.
struct Present {
    path: RelPath,
    size: u64,
    want: Expected,
}

/// Compare the tree at `localroot` with its recentfiles, leaving out
/// `excludes`; with `hash`, read every present indexed file.
pub fn verify(localroot: &Path, excludes: &[String], hash: bool, progress: bool) -> Result<Report> {
    let coll = Collection::open(localroot)
        .with_context(|| format!("{}: not a mirror with recentfiles", localroot.display()))?;
    let ignore = IgnoreSet::new(&coll.filenameroot, excludes).with_recorded_own(&coll.root);
    let pb = crate::output::progress::spinner(progress, "verify: walking");
    let mut walked: foldhash::HashMap<RelPath, (u64, i64)> = Default::default();
    let mut unreadable = Vec::new();
    // Parse on a second thread while this one walks: one waits for the
    // disk, the other parses.
    let (files, walk) = std::thread::scope(|s| {
        let reader = s.spawn(|| crate::ops::news::collect(&coll, &NewsFilter::default()));
        let walk = tree::walk(
            &coll.root,
            &ignore,
            |e| {
                pb.inc(1);
                walked.insert(e.rel, (e.size, e.mtime));
            },
            |p, why| {
                let shown = crate::recentfile::shown_path(p.as_os_str().as_bytes());
                match why {
                    tree::Skip::Unindexable(reason) => unreadable.push((shown, reason)),
                    // Another tool's file in flight: not the mirror's.
                    tree::Skip::NotIndexed(_) => {}
                }
            },
        );
        (reader.join(), walk)
    });
    pb.finish_and_clear();
    let files = files.map_err(|_| anyhow::anyhow!("reading the recentfiles failed"))??;
    walk.with_context(|| format!("walking {}", coll.root.display()))?;
    let mut r = Report { tree_files: walked.len(), unreadable, ..Report::default() };
    // The index forgets events older than its largest file unless that is Z.
    // A cascade that ends in Z keeps every event (right after `init` the
    // principal holds them all), whether or not Z is written yet.
    let has_z = coll.intervals.last().is_some_and(|iv| iv.is_z());
    let horizon = if has_z { None } else { files.last().and_then(|f| f.oldest()).map(|e| e.epoch.clone()) };
    r.horizon = horizon.as_ref().map(|h| h.to_string());
    let mut present = Vec::new();
    for want in expected(&files) {
        r.indexed += 1;
        if ignore.is_ignored(&want.path) {
            r.excluded += 1;
            continue;
        }
        match walked.remove(&want.path) {
            None => {
                r.to_fetch.push((want.path.clone(), want.epoch));
                r.missing.push(want.path);
            }
            Some((size, _)) => present.push(Present { path: want.path.clone(), size, want }),
        }
    }
    r.present = present.len();
    let mut unknown: Vec<(RelPath, i64)> = walked.into_iter().map(|(p, (_, mtime))| (p, mtime)).collect();
    unknown.sort();
    for (p, mtime) in unknown {
        match &horizon {
            Some(h) if mtime < h.whole_seconds() => r.beyond_horizon.push(p),
            _ => r.unknown.push(p),
        }
    }
    r.missing.sort();
    // Sizes first (free); hashes only where asked.
    let digests = if hash { hash_all(&coll.root, &present, progress) } else { Vec::new() };
    for (i, p) in present.iter().enumerate() {
        let digest = digests.get(i);
        let mut differs = false;
        if let Some(want) = p.want.size {
            r.checked_size += 1;
            differs |= want != p.size;
        }
        let got = match digest {
            Some(Ok(d)) => {
                r.hashed += 1;
                Some(d.sha256.clone())
            }
            Some(Err(e)) => {
                r.unreadable.push((crate::recentfile::shown_path(p.path.as_bytes()), e.clone()));
                None
            }
            None => None,
        };
        if let (Some(want), Some(got)) = (&p.want.sha256, &got) {
            r.checked_sha256 += 1;
            differs |= want != got;
        }
        if differs {
            r.to_fetch.push((p.path.clone(), p.want.epoch.clone()));
            r.different.push(Different {
                path: p.path.clone(),
                expected_size: p.want.size,
                size: p.size,
                expected_sha256: p.want.sha256.as_ref().map(|h| h.to_string()),
                sha256: got.map(|h| h.to_string()),
            });
        }
    }
    r.different.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(r)
}

/// The digest of each file of `present` (in order), read on one thread per
/// core, each taking the next file from a shared counter.
fn hash_all(root: &Path, present: &[Present], progress: bool) -> Vec<Result<FileDigest, String>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let pb = crate::output::progress::bar(progress, present.len() as u64, "verify: hashing");
    let next = AtomicUsize::new(0);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(present.len().max(1));
    let mut out: Vec<Option<Result<FileDigest, String>>> = (0..present.len()).map(|_| None).collect();
    let parts: Vec<Vec<(usize, Result<FileDigest, String>)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    let mut buf = vec![0u8; 1 << 18];
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(p) = present.get(i) else { break };
                        let file = root.join(std::ffi::OsStr::from_bytes(p.path.as_bytes()));
                        mine.push((i, hash_file(&file, &mut buf).map_err(|e| format!("reading it: {e}"))));
                        pb.inc(1);
                    }
                    mine
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_default()).collect()
    });
    pb.finish_and_clear();
    for (i, d) in parts.into_iter().flatten() {
        out[i] = Some(d);
    }
    out.into_iter().map(|d| d.unwrap_or_else(|| Err("not hashed (a hashing thread failed)".into()))).collect()
}

/// sha256 and size of one file (a symlink: of its target's path, as rsync carries it).
fn hash_file(file: &Path, buf: &mut [u8]) -> std::io::Result<FileDigest> {
    let meta = std::fs::symlink_metadata(file)?;
    let mut h = Hasher::default();
    if meta.file_type().is_symlink() {
        h.update(std::fs::read_link(file)?.as_os_str().as_bytes());
        return Ok(h.finish());
    }
    let mut f = std::fs::File::open(file)?;
    loop {
        let n = match f.read(buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        h.update(&buf[..n]);
    }
    Ok(h.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recentfile::Event;

    fn file(events: &[(i64, &str, EventKind)]) -> Recentfile {
        let events = events.iter().map(|(t, p, k)| Event::new(Epoch::from_whole_seconds(*t), *p, *k)).collect();
        Recentfile::from_events(events)
    }

    #[test]
    fn expected_is_the_newest_event_per_path_without_deletes() {
        let small = file(&[(30, "a", EventKind::Delete), (20, "b", EventKind::New)]);
        let big = file(&[(10, "a", EventKind::New), (5, "c", EventKind::New), (4, "d", EventKind::Delete)]);
        let mut got: Vec<String> = expected(&[small, big]).into_iter().map(|e| e.path.to_string()).collect();
        got.sort();
        assert_eq!(got, ["b", "c"]);
    }
}
