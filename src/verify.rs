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
//! on this thread while a second one reads the recentfiles and builds the
//! union, parsing a larger file's items only where they do not repeat the
//! smaller one's byte for byte ([`read_union`]); with `--hash` a pool of
//! threads, one per core, hashes each file the walk meets while the walk
//! goes on. What the index expects is built in one place, [`expected`],
//! from the events. `-v` logs each phase's time.
//!
//! The tree against the union of its recentfiles: the check behind
//! `rrr verify` (`ops::verify` prints it) and `rmirror --verify-every`
//! (`mirror::looping` hands what it finds to the pass). It sits below both,
//! so that the mirror does not reach up into a subcommand.

use crate::collection::Collection;
use crate::epoch::Epoch;
use crate::recentfile::{EventKind, Recentfile, RelPath};
use crate::tree::{self, IgnoreSet};
use ::recentfile::beacon::{FileDigest, Hasher, Sha256Hex};
use anyhow::{Context, Result};
use serde::Serialize;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// What the index says of one live path (the key of [`expected`]'s map):
/// the one local view of an event that verify compares with the tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expected {
    /// Its newest event's epoch.
    pub epoch: Epoch,
    /// Bytes, when the event records them.
    pub size: Option<u64>,
    /// sha256, when the event records it.
    pub sha256: Option<Sha256Hex>,
}

/// The live paths of the union of `files` (smallest first): each path's
/// newest event (by epoch, as `news` picks it), deletes removed. The one
/// place that turns events into what verify expects.
///
/// A larger file repeats the events of the smaller one up to its last
/// merge (right after `init --aggregate` every file holds every event, a
/// million in a mirror of CPAN): walking the two lists down together
/// recognises those repeats, which need no hash lookup (the lookups, a
/// random access each, were most of verify's time). A repeat is the same
/// epoch and path as an event already taken, so it can never be newer:
/// skipping it changes nothing, whatever the files' order.
///
/// The paths are moved out of `files` (no copy of each), which are then
/// freed on another thread.
pub fn expected(mut files: Vec<Recentfile>) -> foldhash::HashMap<RelPath, Expected> {
    let capacity = files.iter().map(|f| f.events.len()).max().unwrap_or(0);
    let mut newest: foldhash::HashMap<&RelPath, (usize, usize, &crate::recentfile::Event)> =
        foldhash::HashMap::with_capacity_and_hasher(capacity, Default::default());
    let mut previous: &[crate::recentfile::Event] = &[];
    for (i, f) in files.iter().enumerate() {
        let mut j = 0;
        for (k, e) in f.events.iter().enumerate() {
            // Both lists are newest first: walk the previous one down to this epoch.
            while previous.get(j).is_some_and(|p| p.epoch > e.epoch) {
                j += 1;
            }
            if previous.get(j).is_some_and(|p| p.epoch == e.epoch && p.path == e.path) {
                continue;
            }
            match newest.entry(&e.path) {
                std::collections::hash_map::Entry::Vacant(v) => {
                    v.insert((i, k, e));
                }
                std::collections::hash_map::Entry::Occupied(mut o) => {
                    if e.epoch > o.get().2.epoch {
                        o.insert((i, k, e));
                    }
                }
            }
        }
        previous = &f.events;
    }
    let live: Vec<(usize, usize)> =
        newest.into_values().filter(|(_, _, e)| e.kind == EventKind::New).map(|(i, k, _)| (i, k)).collect();
    let mut out = foldhash::HashMap::with_capacity_and_hasher(live.len(), Default::default());
    for (i, k) in live {
        let e = &mut files[i].events[k];
        let want = Expected { epoch: e.epoch.clone(), size: e.size, sha256: e.sha256.take() };
        out.insert(std::mem::take(&mut e.path), want);
    }
    // A million events: freed off the caller's path.
    crate::store::drop_in_background(files);
    out
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
    /// What to fetch (the paths of `missing` and `different`) with what
    /// their newest event records (epoch, and size/sha256 where it has
    /// them): `rmirror --verify-every` hands them to the next pass as
    /// failing paths, and with `--trust-key` their recorded bytes decide
    /// that the retry is staged and checked (`mirror::staging`).
    #[serde(skip)]
    pub to_fetch: Vec<(RelPath, Expected)>,
}

impl Report {
    /// Whether the tree is what the index says.
    pub fn complete(&self) -> bool {
        self.missing.is_empty() && self.different.is_empty() && self.unknown.is_empty() && self.unreadable.is_empty()
    }
}

/// One present file the index knows.
struct Present {
    path: RelPath,
    size: u64,
    /// Where the walk met it (its digest's index with `--hash`).
    seq: usize,
    want: Expected,
}

/// What the walk saw of one file (its place in walk order is its index).
struct Walked {
    rel: RelPath,
    size: u64,
    mtime: i64,
}

/// Compare the tree at `localroot` with its recentfiles, leaving out
/// `excludes`; with `hash`, read every present indexed file.
///
/// One walk on this thread; the recentfiles are parsed on a second one
/// meanwhile, and with `hash` each file the walk meets is read by a pool
/// of hashing threads while the walk goes on (the tree is read once, and
/// the walk's disk waits and the hashing overlap). `-v` logs each phase's
/// time.
pub fn verify(localroot: &Path, excludes: &[String], hash: bool, progress: bool) -> Result<Report> {
    let started = std::time::Instant::now();
    let coll = Collection::open(localroot)
        .with_context(|| format!("{}: not a mirror with recentfiles", localroot.display()))?;
    let ignore = IgnoreSet::new(&coll.filenameroot, excludes).with_recorded_own(&coll.root);
    let pb = crate::output::progress::spinner(
        progress,
        if hash { "verify: walking and hashing" } else { "verify: walking" },
    );
    let mut walked: Vec<Walked> = Vec::new();
    let mut unreadable = Vec::new();
    let (union, walk, digests) = std::thread::scope(|s| {
        let reader = s.spawn(|| {
            let t = std::time::Instant::now();
            let (files, oldest) = read_union(&coll)?;
            tracing::debug!("verify: recentfiles read in {:.3} s", t.elapsed().as_secs_f64());
            // The union too, beside the walk.
            let wanted = expected(files);
            tracing::debug!("verify: union of {} live paths at {:.3} s", wanted.len(), t.elapsed().as_secs_f64());
            anyhow::Ok((wanted, oldest))
        });
        let mut hashers = hash.then(|| Hashers::start(s, &coll.root));
        let walk = tree::walk(
            &coll.root,
            &ignore,
            |e| {
                pb.inc(1);
                if let Some(h) = &mut hashers {
                    h.send(walked.len(), &e.rel);
                }
                walked.push(Walked { rel: e.rel, size: e.size, mtime: e.mtime });
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
        let seq = walked.len();
        tracing::debug!("verify: {seq} files walked in {:.3} s", started.elapsed().as_secs_f64());
        // Always ended, even after a failed walk: the pool must stop.
        let digests = hashers.map(|h| h.finish(seq)).unwrap_or_default();
        if hash {
            tracing::debug!("verify: hashing done at {:.3} s", started.elapsed().as_secs_f64());
        }
        (reader.join(), walk, digests)
    });
    pb.finish_and_clear();
    let (mut wanted, oldest) = union.map_err(|_| anyhow::anyhow!("reading the recentfiles failed"))??;
    walk.with_context(|| format!("walking {}", coll.root.display()))?;
    let t = std::time::Instant::now();
    let mut r = Report { tree_files: walked.len(), unreadable, ..Report::default() };
    // The index forgets events older than its largest file unless that is Z.
    // A cascade that ends in Z keeps every event (right after `init` the
    // principal holds them all), whether or not Z is written yet.
    let has_z = coll.intervals.last().is_some_and(|iv| iv.is_z());
    let horizon = if has_z { None } else { oldest };
    r.horizon = horizon.as_ref().map(|h| h.to_string());
    r.indexed = wanted.len();
    let mut present = Vec::new();
    let mut unknown: Vec<(RelPath, i64)> = Vec::new();
    for (seq, w) in walked.into_iter().enumerate() {
        match wanted.remove(&w.rel) {
            Some(want) => present.push(Present { path: w.rel, size: w.size, seq, want }),
            None => unknown.push((w.rel, w.mtime)),
        }
    }
    // The walk left out what the excludes leave out: a path it met is not
    // excluded, one it did not meet may be.
    for (path, want) in wanted {
        if ignore.is_ignored(&path) {
            r.excluded += 1;
        } else {
            r.missing.push(path.clone());
            r.to_fetch.push((path, want));
        }
    }
    r.present = present.len();
    unknown.sort();
    for (p, mtime) in unknown {
        match &horizon {
            Some(h) if mtime < h.whole_seconds() => r.beyond_horizon.push(p),
            _ => r.unknown.push(p),
        }
    }
    r.missing.sort();
    for p in &present {
        let mut differs = false;
        if let Some(want) = p.want.size {
            r.checked_size += 1;
            differs |= want != p.size;
        }
        let got = match digests.get(p.seq) {
            Some(Some(Ok(d))) => {
                r.hashed += 1;
                Some(d.sha256.clone())
            }
            Some(Some(Err(e))) => {
                r.unreadable.push((crate::recentfile::shown_path(p.path.as_bytes()), e.clone()));
                None
            }
            Some(None) => {
                r.unreadable.push((
                    crate::recentfile::shown_path(p.path.as_bytes()),
                    "not hashed (a hashing thread failed)".into(),
                ));
                None
            }
            None => None,
        };
        if let (Some(want), Some(got)) = (&p.want.sha256, &got) {
            r.checked_sha256 += 1;
            differs |= want != got;
        }
        if differs {
            r.to_fetch.push((p.path.clone(), p.want.clone()));
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
    crate::store::drop_in_background((present, digests));
    tracing::debug!(
        "verify: compared in {:.3} s (total {:.3} s)",
        t.elapsed().as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    Ok(r)
}

/// The recentfiles of `coll`, smallest first, for [`expected`]: a larger
/// file's items that repeat the smaller one's byte for byte are not
/// parsed again (right after `init --aggregate` every file holds every
/// event: 8 parses of a Z file become one; [`crate::store::read_for_union`]).
/// With them, the oldest epoch of the largest file (the horizon of a
/// cascade without Z).
fn read_union(coll: &Collection) -> Result<(Vec<Recentfile>, Option<Epoch>)> {
    let mut files = Vec::new();
    let mut smaller: Option<std::fs::File> = None;
    let mut oldest = None;
    for iv in &coll.intervals {
        let path = coll.path_of(iv);
        let Some(read) = crate::store::read_for_union(&path, smaller.as_ref())? else { continue };
        crate::store::warn_skipped(&path, &read.rf);
        oldest = match read.rf.oldest() {
            Some(e) => Some(e.epoch.clone()),
            // All its events repeat the smaller file's end: so does its oldest.
            None if read.beyond => oldest,
            None => None,
        };
        smaller = read.strict;
        files.push(read.rf);
    }
    Ok((files, oldest))
}

/// A file's digest, or why it could not be read.
type Digest = Result<FileDigest, String>;

/// Files handed over this many at a time (one channel message each).
const HASH_BATCH: usize = 256;

/// Files to hash, each with its walk index.
type Batch = Vec<(usize, RelPath)>;

/// One hashing thread: where its batches go, and its digests when it ends.
type Worker<'scope> = (std::sync::mpsc::SyncSender<Batch>, std::thread::ScopedJoinHandle<'scope, Vec<(usize, Digest)>>);

/// The hashing threads of `verify --hash`: one per core, each fed batches
/// of the walk's files round-robin through its own bounded channel (the
/// walk waits when they fall behind, so memory stays bounded), each
/// returning the digests it made with each file's walk index.
struct Hashers<'scope> {
    workers: Vec<Worker<'scope>>,
    batch: Batch,
    next: usize,
}

impl<'scope> Hashers<'scope> {
    fn start<'env>(s: &'scope std::thread::Scope<'scope, 'env>, root: &'env Path) -> Hashers<'scope> {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let workers = (0..threads)
            .map(|_| {
                let (tx, rx) = std::sync::mpsc::sync_channel::<Batch>(4);
                let handle = s.spawn(move || {
                    let mut buf = vec![0u8; 1 << 18];
                    let mut done = Vec::new();
                    for batch in rx {
                        for (seq, rel) in batch {
                            let file = root.join(std::ffi::OsStr::from_bytes(rel.as_bytes()));
                            done.push((seq, hash_file(&file, &mut buf).map_err(|e| format!("reading it: {e}"))));
                        }
                    }
                    done
                });
                (tx, handle)
            })
            .collect();
        Hashers { workers, batch: Vec::with_capacity(HASH_BATCH), next: 0 }
    }

    /// Hash the walk's `seq`th file, `rel`.
    fn send(&mut self, seq: usize, rel: &RelPath) {
        self.batch.push((seq, rel.clone()));
        if self.batch.len() == HASH_BATCH {
            self.flush();
        }
    }

    fn flush(&mut self) {
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(HASH_BATCH));
        let (tx, _) = &self.workers[self.next % self.workers.len()];
        self.next += 1;
        // A thread that panicked dropped its receiver: its files stay unhashed.
        let _ = tx.send(batch);
    }

    /// Wait for the pool: the digest of each of the `walked` files by walk
    /// index (`None`: its thread failed).
    fn finish(mut self, walked: usize) -> Vec<Option<Digest>> {
        if !self.batch.is_empty() {
            self.flush();
        }
        let mut out: Vec<Option<Digest>> = (0..walked).map(|_| None).collect();
        for (tx, handle) in self.workers {
            drop(tx);
            for (seq, d) in handle.join().unwrap_or_default() {
                out[seq] = Some(d);
            }
        }
        out
    }
}

/// sha256 and size of one file (a symlink: of its target's path, as rsync
/// carries it). Opened without following a symlink (`O_NOFOLLOW`: one
/// path lookup, no `lstat` first) and non-blocking (a FIFO cannot hang it).
fn hash_file(file: &Path, buf: &mut [u8]) -> std::io::Result<FileDigest> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut h = Hasher::default();
    let flags = nix::fcntl::OFlag::O_NOFOLLOW | nix::fcntl::OFlag::O_NONBLOCK;
    let mut f = match std::fs::OpenOptions::new().read(true).custom_flags(flags.bits()).open(file) {
        Ok(f) => f,
        // ELOOP: the last component is a symlink.
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            h.update(std::fs::read_link(file)?.as_os_str().as_bytes());
            return Ok(h.finish());
        }
        Err(e) => return Err(e),
    };
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
    use proptest::prelude::*;

    fn file(events: &[(i64, &str, EventKind)]) -> Recentfile {
        let events = events.iter().map(|(t, p, k)| Event::new(Epoch::from_whole_seconds(*t), *p, *k)).collect();
        Recentfile::from_events(events)
    }

    #[test]
    fn expected_is_the_newest_event_per_path_without_deletes() {
        let small = file(&[(30, "a", EventKind::Delete), (20, "b", EventKind::New)]);
        let big = file(&[(10, "a", EventKind::New), (5, "c", EventKind::New), (4, "d", EventKind::Delete)]);
        let mut got: Vec<String> = expected(vec![small, big]).into_keys().map(|p| p.to_string()).collect();
        got.sort();
        assert_eq!(got, ["b", "c"]);
    }

    /// What `expected` gave before it skipped repeats: every event looked
    /// up, the newest by epoch kept (the first of equals).
    fn expected_by_lookup(files: &[Recentfile]) -> Vec<(String, String)> {
        let mut newest: std::collections::HashMap<&RelPath, &Event> = Default::default();
        for e in files.iter().flat_map(|f| f.events.iter()) {
            if newest.get(&e.path).is_none_or(|o| e.epoch > o.epoch) {
                newest.insert(&e.path, e);
            }
        }
        let mut v: Vec<(String, String)> = newest
            .into_values()
            .filter(|e| e.kind == EventKind::New)
            .map(|e| (e.path.to_string(), e.epoch.to_string()))
            .collect();
        v.sort();
        v
    }

    fn sorted(files: &[Recentfile]) -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> =
            expected(files.to_vec()).into_iter().map(|(p, e)| (p.to_string(), e.epoch.to_string())).collect();
        v.sort();
        v
    }

    #[test]
    fn a_repeat_never_replaces_what_it_repeats() {
        use EventKind::{Delete, New};
        // `a` at 40 repeated with another type (a damaged file): the first
        // of equal epochs stays, as before; `b` at 5 is no repeat, and older.
        let small = file(&[(50, "gone", Delete), (40, "a", New), (30, "b", New)]);
        let big = file(&[(40, "a", Delete), (30, "b", New), (20, "gone", New), (10, "c", New), (5, "b", New)]);
        let files = [small, big];
        assert_eq!(sorted(&files), expected_by_lookup(&files));
        assert_eq!(
            sorted(&files),
            [("a".into(), "40.0".into()), ("b".into(), "30.0".into()), ("c".into(), "10.0".into())]
        );
    }

    proptest! {
        /// Over any files, sorted or not, repeating each other or not, the
        /// walk-down gives what a lookup of every event gives.
        #[test]
        fn skipping_repeats_changes_nothing(
            files in prop::collection::vec(
                prop::collection::vec((0i64..40, 0usize..12, any::<bool>()), 0..25), 1..5),
            copy in prop::collection::vec(0usize..3, 4),
        ) {
            let mut rfs: Vec<Recentfile> = Vec::new();
            for (i, f) in files.iter().enumerate() {
                let mut events: Vec<Event> = Vec::new();
                // A larger file often repeats the smaller one's events.
                if i > 0 && copy[i - 1] > 0 {
                    events.extend(rfs[i - 1].events.iter().cloned());
                }
                for (t, p, del) in f {
                    let kind = if *del { EventKind::Delete } else { EventKind::New };
                    events.push(Event::new(Epoch::from_whole_seconds(*t), format!("p{p}"), kind));
                }
                // Mostly newest first, as written; sometimes as they come.
                if i == 0 || copy[i - 1] < 2 {
                    events.sort_by(|a, b| b.epoch.cmp(&a.epoch));
                }
                rfs.push(Recentfile::from_events(events));
            }
            prop_assert_eq!(sorted(&rfs), expected_by_lookup(&rfs));
        }
    }

    #[test]
    fn hash_file_reads_a_file_a_symlink_and_a_fifo() {
        let dir = tempfile::tempdir().unwrap();
        let mut buf = vec![0u8; 16];
        let f = dir.path().join("f");
        std::fs::write(&f, b"x".repeat(100)).unwrap();
        let d = hash_file(&f, &mut buf).unwrap();
        assert_eq!(d.size, 100);
        let mut h = Hasher::default();
        h.update(&b"x".repeat(100));
        assert_eq!(d, h.finish());
        // A symlink: its target's path, as rsync carries it (not the target's bytes).
        let l = dir.path().join("l");
        std::os::unix::fs::symlink("f", &l).unwrap();
        let mut h = Hasher::default();
        h.update(b"f");
        assert_eq!(hash_file(&l, &mut buf).unwrap(), h.finish());
        // A FIFO without a writer does not hang the hashing thread.
        let p = dir.path().join("p");
        nix::unistd::mkfifo(&p, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        assert_eq!(hash_file(&p, &mut buf).unwrap().size, 0);
    }
}
