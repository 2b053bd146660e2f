//! The pure core of `rrr watch`: what a watcher's event means for the index,
//! the pending batch that turns events into one `update`, and when that
//! batch is recorded.
//!
//! No filesystem, no clock: the daemon (`origin::watch`) owns the watcher, the
//! directory scans and the writes, and passes in what it learned (what a
//! created file looks like on disk at flush time, which indexed paths lie
//! under a directory that moved away) and the time.
//!
//! The rules (docs/decisions.md#watch):
//! - the backend reports only what can change the index (inotify's mask,
//!   `origin::watch::inotify::MASK`): no opens, reads or read-only closes,
//!   so the mirrors' reads of the tree cost the daemon nothing;
//! - a file is `new` when closed after writing or moved in, never on create
//!   alone (a half-written file is not announced);
//! - a file created and neither written nor closed since is `new` at the
//!   next flush if the disk shows that no open made it ([`OnDisk::Linked`]:
//!   a hard link, a symlink, `mknod`). One that an open may have made
//!   ([`OnDisk::Fresh`]) waits for its write and close; if neither comes
//!   within [`Pace::fresh_wait`] it is recorded anyway (an open with no
//!   write, or a link whose other name went away in the same clock tick);
//! - `delete` on delete or moved out; a rename is a delete plus a new;
//! - a directory's moves cost one entry each, whatever their number
//!   ([`Batch::dir_moved`]): one renamed within the tree carries its
//!   pending changes (and, in the runner, its watches) along, so one that
//!   comes back where it began costs nothing; one that ends elsewhere, or
//!   came from outside, is listed once at the flush; the place its content
//!   left deletes its indexed files unless a later event lists them again;
//! - attribute-only changes are ignored;
//! - within a batch the last word on a path wins, and batch order is event
//!   order (so epochs follow the events); a delete of a path the index does
//!   not list says nothing: of a file created since its path was last
//!   recorded (its creation was the first word on it, so the index cannot
//!   list it: rsync's temp file `.NAME.XXXXXX`, renamed into place within
//!   milliseconds, an editor's swap file), and of any path when the
//!   runner read the index.
//!
//! When a batch is recorded ([`Pace`], [`Batch::due`]): every record
//! rewrites the whole principal, which a burst makes large, so the pace
//! adapts. A batch is recorded once the tree has been quiet for a moment
//! (a burst or a single change is over: low latency), or when its oldest
//! change has waited the batch delay (a steady stream: one rewrite per
//! delay, however fast the events come), or when it holds `size` changes.
//! After a record that took T, the quiet trigger waits T more and the size
//! trigger [`SIZE_REST`] × T, so records take at most about half the
//! daemon's time (a quarter in a steady burst) whatever the principal's
//! size.

use crate::recentfile::{EventKind, RelPath};
use crate::update::Change;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

/// What one event of a watcher backend says, reduced to what the index
/// cares about (`origin::watch::backend`: every backend delivers these).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Happening {
    /// The kernel queue overflowed: events were lost.
    Overflow,
    /// The watch is gone (its directory was deleted, or it was removed).
    WatchGone,
    /// A filesystem under the tree was unmounted.
    Unmounted,
    Created {
        dir: bool,
    },
    ClosedWrite,
    /// Data written (not yet closed).
    Modified,
    /// Renamed into this place.
    MovedIn {
        dir: bool,
    },
    /// Renamed away from this place (from the parent's watch).
    MovedOut {
        dir: bool,
    },
    /// A watched directory itself was moved (only the root's matters).
    MovedSelf,
    Deleted {
        dir: bool,
    },
    /// A watched directory itself was deleted (only the root's matters).
    DeletedSelf,
}

/// `dir/name` (`name` alone in the root, "").
pub fn join(dir: impl AsRef<[u8]>, name: impl AsRef<[u8]>) -> RelPath {
    let (dir, name) = (dir.as_ref(), name.as_ref());
    RelPath::from(if dir.is_empty() { name.to_vec() } else { [dir, b"/", name].concat() })
}

/// Whether `path` is `dir` or lies below it (`dir` = "" is the root).
pub fn is_under(path: impl AsRef<[u8]>, dir: impl AsRef<[u8]>) -> bool {
    let (path, dir) = (path.as_ref(), dir.as_ref());
    dir.is_empty() || path == dir || (path.starts_with(dir) && path.get(dir.len()) == Some(&b'/'))
}

/// What the disk shows, at flush time, of a file that was created and has
/// been neither written nor closed since.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnDisk {
    /// Gone again, or a directory now (its own events cover it).
    Gone,
    /// Not made by an open: a symlink, a special file, or a regular file
    /// with several links or whose ctime differs from its mtime (link(2)
    /// changes the ctime only; a file created by open(2) has both equal).
    Linked,
    /// A regular file with one link and mtime = ctime: maybe an upload
    /// whose first write has not come yet.
    Fresh,
}

impl OnDisk {
    /// Judge an lstat: `ctime`/`mtime` in nanoseconds.
    pub fn of(is_dir: bool, is_file: bool, nlink: u64, mtime: i128, ctime: i128) -> OnDisk {
        if is_dir {
            OnDisk::Gone
        } else if !is_file || nlink > 1 || mtime != ctime {
            OnDisk::Linked
        } else {
            OnDisk::Fresh
        }
    }
}

/// How many times the last record's duration the size trigger waits after
/// it: in a burst the size is reached again at once, and each record
/// rewrites the whole principal, so records by size take at most a
/// quarter of the daemon's time.
pub const SIZE_REST: u32 = 3;

/// The most paths and directories a batch holds (pending changes, created
/// and half-written files, directories moved away). A storm that goes past
/// it costs a rescan of the tree instead: the batch is discarded and the
/// tree compared with the index, which finds the same changes in memory
/// bounded by the tree, not by the events (about 150 bytes an entry: some
/// 30 MB at the limit).
pub const MAX_BATCH_ENTRIES: usize = 200_000;

/// When batches are recorded (see the module documentation).
#[derive(Clone, Copy, Debug)]
pub struct Pace {
    /// Record when this many changes are pending.
    pub size: usize,
    /// Record when the oldest pending change waited this long.
    pub delay: Duration,
    /// Record when no change came for this long.
    pub quiet: Duration,
    /// Record a [`OnDisk::Fresh`] file this long after its creation even
    /// without a write or close.
    pub fresh_wait: Duration,
}

impl Pace {
    /// The pace for a batch delay: quiet a tenth of it, fresh files
    /// recorded after ten delays (at least a second).
    pub fn new(size: usize, delay: Duration) -> Pace {
        Pace { size, delay, quiet: delay / 10, fresh_wait: (delay * 10).max(Duration::from_secs(1)) }
    }
}

#[derive(Clone, Copy, Debug)]
struct Created {
    seq: u64,
    at: Instant,
    /// The disk showed it [`OnDisk::Fresh`]: look again at this time.
    fresh_until: Option<Instant>,
}

/// The batch being collected, and the files in the middle of being written.
#[derive(Debug, Default)]
pub struct Batch {
    seq: u64,
    /// Paths touched, with the sequence number and kind of the last event.
    changes: BTreeMap<RelPath, (u64, EventKind)>,
    /// Created, and neither written nor closed since.
    created: BTreeMap<RelPath, Created>,
    /// Files with data written and not yet closed: the marker time current
    /// when the first write was seen (a lower bound of the file's mtime).
    writing: BTreeMap<RelPath, f64>,
    /// Files created (`IN_CREATE`, the first word on the path) and not
    /// recorded since: the index cannot list them, so their delete says
    /// nothing. Each path here is also in `changes`, `created` or `writing`.
    born: BTreeMap<RelPath, ()>,
    /// Where directories were when the batch began, whose content has
    /// left since (moved elsewhere or out of the tree), each with the
    /// sequence number of the latest such move: their indexed files that
    /// the disk no longer shows are deletes. One entry per directory
    /// however often it moves.
    forgotten: HashMap<RelPath, u64>,
    /// Directories moved within the batch, by where they are now: where
    /// each was when the batch began (`None`: outside the tree) and the
    /// sequence number of its last move. One that is not back where it
    /// began is listed at the flush.
    moved: BTreeMap<RelPath, Moved>,
    /// When the oldest pending change arrived.
    since: Option<Instant>,
    /// When the newest change arrived.
    last_change: Option<Instant>,
    /// When the last record ended, and how long it took (see [`Batch::recorded`]).
    last_record: Option<(Instant, Duration)>,
    /// Raw events seen since the last flush (for the log).
    pub events: usize,
}

/// A directory moved within a batch (see [`Batch::dir_moved`]).
#[derive(Clone, Debug, PartialEq)]
struct Moved {
    /// Where it was when the batch began; `None`: outside the tree.
    origin: Option<RelPath>,
    seq: u64,
    /// Flushes that could not list it (see [`Batch::relist`]).
    tries: u8,
}

/// Flushes that find a directory of [`Flush::to_list`] missing before it
/// is given up (the events that say where it went are read by then).
const RELIST_TRIES: u8 = 3;

/// What a flush must record, before the runner resolves it against the disk
/// and the index.
#[derive(Debug, Default, PartialEq)]
pub struct Flush {
    /// Paths touched: the last event's sequence number and kind.
    changes: Vec<(u64, RelPath, EventKind)>,
    /// Created and neither written nor closed since, with their creation time.
    unwritten: Vec<(u64, RelPath, Instant)>,
    /// Those of `changes` and `unwritten` that the index cannot list
    /// (see `Batch::born`).
    born: HashSet<RelPath>,
    /// Where directories were whose content left (with the sequence
    /// number of the latest move): their indexed files that the disk no
    /// longer shows are deletes.
    pub forgotten: HashMap<RelPath, u64>,
    /// Directories to list (and watch) before resolving: moved in from
    /// outside the tree or from another place in it, with the sequence
    /// number of their last move.
    pub to_list: Vec<(u64, RelPath, u8)>,
    pub since: Option<Instant>,
    pub events: usize,
}

/// A flush resolved: the changes to record, in event order, and the
/// created files kept back because they may still be written.
#[derive(Debug, Default, PartialEq)]
pub struct Resolved {
    pub changes: Vec<Change>,
    fresh: Vec<(u64, RelPath, Instant)>,
    /// Those of `fresh` that the index cannot list (see `Batch::born`).
    fresh_born: Vec<RelPath>,
}

impl Batch {
    fn next(&mut self, now: Instant) -> u64 {
        self.seq += 1;
        self.since.get_or_insert(now);
        self.last_change = Some(now);
        self.seq
    }

    /// Record `kind` for `path` (the last word wins).
    pub fn record(&mut self, path: impl AsRef<[u8]>, kind: EventKind, now: Instant) {
        let path = path.as_ref();
        let seq = self.next(now);
        self.created.remove(path);
        self.writing.remove(path);
        self.changes.insert(RelPath::from(path), (seq, kind));
    }

    /// A file-level event on `path` (not ignored, not a directory).
    /// `marker` is the time of the newest heartbeat marker received.
    pub fn on_file(&mut self, h: Happening, path: impl AsRef<[u8]>, marker: f64, now: Instant) {
        let path = path.as_ref();
        match h {
            Happening::Created { dir: false } => {
                let seq = self.next(now);
                // The first word on the path since its last record (after a
                // pending delete, the index may list it: not born).
                if !self.changes.contains_key(path) {
                    self.born.insert(RelPath::from(path), ());
                }
                self.created.insert(RelPath::from(path), Created { seq, at: now, fresh_until: None });
            }
            Happening::Modified => {
                // Being written: it waits for its close.
                self.created.remove(path);
                self.writing.entry(RelPath::from(path)).or_insert(marker);
            }
            Happening::ClosedWrite | Happening::MovedIn { dir: false } => self.record(path, EventKind::New, now),
            Happening::MovedOut { dir: false } | Happening::Deleted { dir: false } => {
                self.record(path, EventKind::Delete, now)
            }
            _ => {}
        }
    }

    /// A directory moved: `from` where it was (`None`: outside the tree),
    /// `to` where it is now (`None`: out of the tree). Nothing is listed
    /// here: a storm of moves costs one entry per directory, and the
    /// listing happens once, at the flush, of the directories that are not
    /// back where the batch found them ([`Flush::to_list`]).
    ///
    /// Within the tree (the runner paired the two halves of the rename by
    /// their cookie, and keeps the directory's watches), the pending
    /// changes under it move with it, so a directory renamed away and back
    /// (`a` → `a.x` → `a`) records only what changed in it meanwhile,
    /// never its whole content twice. The place it began at is forgotten:
    /// its indexed files that the disk no longer shows at the flush are
    /// deletes. Out of the tree, its pending changes go with it (its
    /// indexed files are deletes through the forgotten place).
    pub fn dir_moved(&mut self, from: Option<&RelPath>, to: Option<&RelPath>, now: Instant) {
        let seq = self.next(now);
        let origin = from.map(|a| self.origin_of(a));
        if let Some(Some(o)) = &origin {
            self.forgotten.insert(o.clone(), seq);
        }
        match (from, to) {
            (Some(a), Some(b)) => {
                move_keys(&mut self.changes, a, b, |old, new| old.0 > new.0);
                move_keys(&mut self.created, a, b, |old, new| old.seq > new.seq);
                move_keys(&mut self.writing, a, b, |_, _| false);
                move_keys(&mut self.moved, a, b, |old, new| old.seq > new.seq);
                move_keys(&mut self.born, a, b, |_, _| true);
                let origin = origin.flatten();
                if origin.as_ref() == Some(b) {
                    // Back where it began: its content is as the index has it,
                    // but for the pending changes, which came back with it.
                    self.moved.remove(b);
                    self.forgotten.remove(b);
                } else {
                    self.moved.insert(b.clone(), Moved { origin, seq, tries: 0 });
                }
            }
            (Some(a), None) => {
                for keys in [keys_under(&self.changes, a), keys_under(&self.created, a), keys_under(&self.writing, a)] {
                    for k in keys {
                        self.changes.remove(&k);
                        self.created.remove(&k);
                        self.writing.remove(&k);
                        self.born.remove(&k);
                    }
                }
                for k in keys_under(&self.moved, a) {
                    self.moved.remove(&k);
                }
            }
            (None, Some(b)) => {
                self.moved.insert(b.clone(), Moved { origin: None, seq, tries: 0 });
            }
            (None, None) => {}
        }
    }

    /// Where the directory now at `path` was when the batch began (`None`:
    /// outside the tree), through the moves of it or of a directory above it.
    fn origin_of(&self, path: &RelPath) -> Option<RelPath> {
        let bytes = path.as_bytes();
        let mut end = bytes.len();
        loop {
            if let Some(m) = self.moved.get(&bytes[..end]) {
                return m.origin.as_ref().map(|o| RelPath::from([o.as_bytes(), &bytes[end..]].concat()));
            }
            match bytes[..end].iter().rposition(|&b| b == b'/') {
                Some(slash) => end = slash,
                None => return Some(path.clone()),
            }
        }
    }

    /// Changes waiting to be recorded (created files not known to be
    /// fresh included).
    pub fn pending(&self) -> usize {
        self.changes.len()
            + self.created.values().filter(|c| c.fresh_until.is_none()).count()
            + self.forgotten.len()
            + self.moved.len()
    }

    /// Everything the batch holds in memory (see [`MAX_BATCH_ENTRIES`]).
    pub fn entries(&self) -> usize {
        self.changes.len() + self.created.len() + self.writing.len() + self.forgotten.len() + self.moved.len()
    }

    /// Drop everything the batch holds, for a rescan that finds it again
    /// (the raw event count stays, for the log).
    pub fn discard(&mut self) {
        let events = self.events;
        *self = Batch { seq: self.seq, last_record: self.last_record, events, ..Batch::default() };
    }

    /// When the next fresh file is to be looked at again.
    fn fresh_due(&self) -> Option<Instant> {
        self.created.values().filter_map(|c| c.fresh_until).min()
    }

    /// Whether the batch must be recorded now (see [`Pace`]).
    pub fn due(&self, now: Instant, pace: &Pace) -> bool {
        if self.fresh_due().is_some_and(|t| now >= t) {
            return true;
        }
        if self.pending() == 0 {
            return false;
        }
        if self.since.is_some_and(|s| now >= s + pace.delay) {
            return true;
        }
        let rested = |times: u32| self.last_record.is_none_or(|(end, took)| now >= end + took * times);
        (self.last_change.is_some_and(|l| now >= l + pace.quiet) && rested(1))
            || (self.changes.len() >= pace.size && rested(SIZE_REST))
    }

    /// Whether the oldest pending change waited the batch delay (the only
    /// trigger while a backlog of events is read).
    pub fn overdue(&self, now: Instant, pace: &Pace) -> bool {
        self.pending() > 0 && self.since.is_some_and(|s| now >= s + pace.delay)
    }

    /// When the batch falls due by time.
    pub fn deadline(&self, pace: &Pace) -> Option<Instant> {
        let fresh = self.fresh_due();
        if self.pending() == 0 {
            return fresh;
        }
        let by_delay = self.since.map(|s| s + pace.delay);
        let rest = self.last_record.map(|(end, took)| end + took);
        let by_quiet = self.last_change.map(|l| (l + pace.quiet).max(rest.unwrap_or(l)));
        [fresh, by_delay, by_quiet].into_iter().flatten().min()
    }

    /// A record that took `took` ended at `now`: the quiet trigger rests
    /// as long, the size trigger [`SIZE_REST`] times as long.
    pub fn recorded(&mut self, now: Instant, took: Duration) {
        self.last_record = Some((now, took));
    }

    /// When the newest change arrived.
    pub fn last_change(&self) -> Option<Instant> {
        self.last_change
    }

    /// The oldest marker time of a file still being written: synced-to
    /// cannot pass it.
    pub fn writing_floor(&self) -> Option<f64> {
        self.writing.values().copied().reduce(f64::min)
    }

    /// Forget files in the middle of a create or write (after an overflow
    /// rescan, which found them and may have recorded them).
    pub fn clear_in_flight(&mut self) {
        self.created.clear();
        self.writing.clear();
        self.born.clear();
    }

    /// Take the batch: the changes, and the created files due for a look
    /// (all but the fresh ones still within their wait).
    pub fn take(&mut self, now: Instant) -> Flush {
        let mut un: Vec<(u64, RelPath, Instant)> = self
            .created
            .iter()
            .filter(|(_, c)| c.fresh_until.is_none_or(|t| now >= t))
            .map(|(p, c)| (c.seq, p.clone(), c.at))
            .collect();
        un.sort();
        for (_, p, _) in &un {
            self.created.remove(p);
        }
        let changes: Vec<(u64, RelPath, EventKind)> =
            std::mem::take(&mut self.changes).into_iter().map(|(p, (s, k))| (s, p, k)).collect();
        let leaving = changes.iter().map(|(_, p, _)| p).chain(un.iter().map(|(_, p, _)| p));
        let born = leaving.filter(|p| self.born.remove(*p).is_some()).cloned().collect();
        let to_list = std::mem::take(&mut self.moved).into_iter().map(|(p, m)| (m.seq, p, m.tries)).collect();
        Flush {
            changes,
            unwritten: un,
            born,
            forgotten: std::mem::take(&mut self.forgotten),
            to_list,
            since: self.since.take(),
            events: std::mem::take(&mut self.events),
        }
    }

    /// A directory of [`Flush::to_list`] that could not be listed at its
    /// flush (the disk is ahead of the events read: it moved on meanwhile):
    /// it stays to be listed, followed by the moves still to be read. Its
    /// origin is forgotten: what the flush recorded may differ from where it
    /// began, so coming back there is no reason not to list it.
    /// After [`RELIST_TRIES`] flushes it is given up (false).
    pub fn relist(&mut self, dir: RelPath, tries: u8, now: Instant) -> bool {
        if tries + 1 >= RELIST_TRIES {
            return false;
        }
        let seq = self.next(now);
        self.moved.entry(dir).or_insert(Moved { origin: None, seq, tries: tries + 1 });
        true
    }

    /// A directory was deleted: nothing is left to list there.
    pub fn dir_removed(&mut self, dir: &RelPath) {
        for k in keys_under(&self.moved, dir) {
            self.moved.remove(&k);
        }
    }

    /// Keep the fresh files of a resolved flush, to look at them again
    /// when their wait is over (unless a write, close or delete comes).
    pub fn keep_fresh(&mut self, r: &Resolved, pace: &Pace) {
        for (seq, p, at) in &r.fresh {
            let c = Created { seq: *seq, at: *at, fresh_until: Some(*at + pace.fresh_wait) };
            self.created.entry(p.clone()).or_insert(c);
        }
        for p in &r.fresh_born {
            self.born.insert(p.clone(), ());
        }
    }

    /// Put a flush that could not be recorded back (it is retried).
    pub fn restore(&mut self, f: Flush) {
        for (s, p, k) in f.changes {
            let e = self.changes.entry(p).or_insert((s, k));
            if e.0 < s {
                *e = (s, k);
            }
        }
        for (s, p, at) in f.unwritten {
            self.created.entry(p).or_insert(Created { seq: s, at, fresh_until: None });
        }
        self.born.extend(f.born.into_iter().map(|p| (p, ())));
        for (d, s) in f.forgotten {
            let e = self.forgotten.entry(d).or_insert(s);
            *e = (*e).max(s);
        }
        // Listed again at the next flush (the origin no longer matters:
        // its place is among the forgotten).
        for (s, d, tries) in f.to_list {
            self.moved.entry(d).or_insert(Moved { origin: None, seq: s, tries });
        }
        self.since = match (self.since, f.since) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.events += f.events;
    }
}

impl Flush {
    /// The changes, created files and moved-away directories it holds.
    pub fn pending(&self) -> usize {
        self.changes.len() + self.unwritten.len() + self.forgotten.len() + self.to_list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.changes.is_empty() && self.unwritten.is_empty() && self.forgotten.is_empty() && self.to_list.is_empty()
    }

    /// Whether the index cannot list `path`: created since its last record,
    /// and not where a directory that moved away held indexed files.
    fn unlisted(&self, path: &RelPath) -> bool {
        self.born.contains(path) && !self.forgets(path)
    }

    /// Whether the indexed file `path` is deleted by a directory moved away.
    pub fn forgets(&self, path: impl AsRef<[u8]>) -> bool {
        moved_away_at(path, &self.forgotten).is_some()
    }
}

/// The sequence number of the latest move away of a directory above
/// `path`, if one moved: a lookup per ancestor, so that resolving a batch
/// costs its changes times the tree's depth, not times its moves.
fn moved_away_at(path: impl AsRef<[u8]>, forgotten: &HashMap<RelPath, u64>) -> Option<u64> {
    if forgotten.is_empty() {
        return None;
    }
    let path = path.as_ref();
    let mut newest = None;
    let mut end = path.len();
    while let Some(slash) = path[..end].iter().rposition(|&b| b == b'/') {
        if let Some(&s) = forgotten.get(&path[..slash]) {
            newest = newest.max(Some(s));
        }
        end = slash;
    }
    newest
}

impl Flush {
    /// The changes to record, in event order, and the fresh files to keep.
    ///
    /// Each path touched is recorded once, by its last event; a file
    /// created and not written since by what `look` shows of it.
    /// `listed`: the files found under [`Flush::to_list`] (each with its
    /// directory's sequence number: a later event of the path wins);
    /// `indexed`: live indexed paths, at least those under a forgotten
    /// place (see [`Flush::forgets`]), which are deletes unless a later
    /// event or listing says otherwise; `live`, when the runner read the
    /// index: a delete of a path it does not list is left out. A delete of
    /// a file created since its last record is left out whatever `live`
    /// says (a file made and removed within the batch says nothing). `now`
    /// and `fresh_wait` decide whether a fresh file waited long enough.
    pub fn resolve(
        &self,
        look: impl Fn(&RelPath) -> OnDisk,
        listed: &[(u64, RelPath)],
        indexed: &[RelPath],
        live: Option<&dyn Fn(&RelPath) -> bool>,
        now: Instant,
        fresh_wait: Duration,
    ) -> Resolved {
        let mut last: HashMap<&RelPath, (u64, EventKind)> = HashMap::new();
        let mut put = |p, s: u64, k: EventKind| {
            let e = last.entry(p).or_insert((s, k));
            if e.0 <= s {
                *e = (s, k);
            }
        };
        let mut fresh = Vec::new();
        let mut fresh_born = Vec::new();
        for (s, p, at) in &self.unwritten {
            match look(p) {
                OnDisk::Gone => {}
                OnDisk::Fresh if now < *at + fresh_wait => {
                    fresh.push((*s, p.clone(), *at));
                    if self.born.contains(p) {
                        fresh_born.push(p.clone());
                    }
                }
                OnDisk::Linked | OnDisk::Fresh => put(p, *s, EventKind::New),
            }
        }
        for (s, p, k) in &self.changes {
            put(p, *s, *k);
        }
        for (s, p) in listed {
            put(p, *s, EventKind::New);
        }
        for p in indexed {
            if let Some(seq) = moved_away_at(p, &self.forgotten) {
                put(p, seq, EventKind::Delete);
            }
        }
        let mut v: Vec<(u64, &RelPath, EventKind)> = last
            .into_iter()
            .filter(|(p, (_, k))| *k == EventKind::New || (!self.unlisted(p) && live.is_none_or(|live| live(p))))
            .map(|(p, (s, k))| (s, p, k))
            .collect();
        v.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        let changes = v.into_iter().map(|(_, p, k)| Change { path: p.clone(), kind: k, epoch: None }).collect();
        Resolved { changes, fresh, fresh_born }
    }
}

/// The keys of `map` that are `dir` or lie below it (a range of the
/// ordered map: `dir/` sorts right after `dir` and before `dir0`; all of
/// them for the root, ""), in a time that grows with their number, not
/// with the map's.
pub fn keys_under<V>(map: &BTreeMap<RelPath, V>, dir: &RelPath) -> Vec<RelPath> {
    if dir.is_empty() {
        return map.keys().cloned().collect();
    }
    let lo = RelPath::from([dir.as_bytes(), b"/"].concat());
    let hi = RelPath::from([dir.as_bytes(), b"0"].concat());
    let mut keys: Vec<RelPath> = map.range(lo..hi).map(|(k, _)| k.clone()).collect();
    if map.contains_key(dir) {
        keys.push(dir.clone());
    }
    keys
}

/// Move the entries of `map` under `from` to the same places under `to`;
/// where `to` already has an entry, the moved one replaces it only if
/// `newer(moved, there)`.
fn move_keys<V>(map: &mut BTreeMap<RelPath, V>, from: &RelPath, to: &RelPath, newer: impl Fn(&V, &V) -> bool) {
    for k in keys_under(map, from) {
        let Some(v) = map.remove(&k) else { continue };
        let dest = RelPath::from([to.as_bytes(), &k.as_bytes()[from.len()..]].concat());
        match map.get(&dest) {
            Some(there) if !newer(&v, there) => {}
            _ => {
                map.insert(dest, v);
            }
        }
    }
}

/// When the cascade runs next: every `every` after the `last` run, at a
/// moment when no change came for a batch delay (an aggregate rewrites the
/// larger files; in the middle of a burst it would only hold the batches
/// up), but no later than the principal's `window` after the last run:
/// from then on the principal would pass its window, since its truncation
/// bound is min(now − window, merged.epoch) (docs/protocol.md 8.3) and merged.epoch
/// moves only with an aggregate.
pub fn aggregate_at(
    last: Instant,
    every: Duration,
    window: Duration,
    last_change: Option<Instant>,
    pace: &Pace,
) -> Instant {
    let due = last + every;
    let calm = last_change.map_or(due, |l| due.max(l + pace.delay));
    calm.min(last + every.max(window))
}

/// `.rrr/watch.json`: the daemon's heartbeat (JSON, epochs as strings).
/// `synced_to`: every change made before this time is in the index, so
/// the next start-up records files modified at or after it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Heartbeat {
    pub pid: u32,
    pub started: String,
    pub heartbeat: String,
    pub synced_to: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use EventKind::{Delete, New};

    const PACE: Pace = Pace {
        size: 1000,
        delay: Duration::from_secs(1),
        quiet: Duration::from_millis(100),
        fresh_wait: Duration::from_secs(10),
    };

    /// Take and resolve: `linked` and `fresh` are what the disk shows of
    /// unwritten paths (others are gone).
    fn flush_at(
        b: &mut Batch,
        now: Instant,
        linked: &[&str],
        fresh: &[&str],
        under: &[String],
    ) -> Vec<(String, EventKind)> {
        let f = b.take(now);
        let under: Vec<&str> = under.iter().map(String::as_str).collect();
        let r = resolve_at(&f, now, linked, fresh, &under);
        b.keep_fresh(&r, &PACE);
        listed(r)
    }

    /// Resolve `f` as the disk shows `linked` and `fresh` (others are
    /// gone), with the indexed files `under` the places it forgets.
    fn resolve_at(f: &Flush, now: Instant, linked: &[&str], fresh: &[&str], under: &[&str]) -> Resolved {
        let under: Vec<RelPath> = under.iter().map(|p| RelPath::from(*p)).collect();
        let look = |p: &RelPath| {
            if linked.iter().any(|l| p == l) {
                OnDisk::Linked
            } else if fresh.iter().any(|l| p == l) {
                OnDisk::Fresh
            } else {
                OnDisk::Gone
            }
        };
        f.resolve(look, &[], &under, None, now, PACE.fresh_wait)
    }

    /// The changes of `r`, in order.
    fn listed(r: Resolved) -> Vec<(String, EventKind)> {
        r.changes.into_iter().map(|c| (c.path.to_str().unwrap().to_string(), c.kind)).collect()
    }

    fn changes(b: &mut Batch, linked: &[&str], under: &[String]) -> Vec<(String, EventKind)> {
        flush_at(b, Instant::now(), linked, &[], under)
    }

    fn s(v: &[(&str, EventKind)]) -> Vec<(String, EventKind)> {
        v.iter().map(|(p, k)| (p.to_string(), *k)).collect()
    }

    #[test]
    fn paths() {
        assert_eq!(join("", "a"), "a");
        assert_eq!(join("a/b", "c"), "a/b/c");
        assert!(is_under("a/b", "a") && is_under("a", "a") && is_under("x", ""));
        assert!(!is_under("ab/c", "a"));
        // keys_under agrees with is_under, names that sort between included.
        let map: BTreeMap<RelPath, ()> = ["a", "a.x", "a/b", "a/b/c", "a0", "a\x01", "ab", "b", ""]
            .iter()
            .map(|k| (RelPath::from(*k), ()))
            .collect();
        for dir in ["", "a", "a/b", "ab", "zz"] {
            let mut got = keys_under(&map, &RelPath::from(dir));
            got.sort();
            let want: Vec<RelPath> = map.keys().filter(|k| is_under(k, dir)).cloned().collect();
            assert_eq!(got, want, "{dir:?}");
        }
    }

    #[test]
    fn new_on_close_write_not_on_create() {
        let t = Instant::now();
        let mut b = Batch::default();
        b.on_file(Happening::Created { dir: false }, "f", 0.0, t);
        b.on_file(Happening::Modified, "f", 0.0, t);
        // Even if the disk made it look like a link, a written file waits.
        assert!(changes(&mut b, &["f"], &[]).is_empty(), "half-written file announced");
        b.on_file(Happening::ClosedWrite, "f", 0.0, t);
        assert_eq!(changes(&mut b, &["f"], &[]), s(&[("f", New)]));
    }

    #[test]
    fn created_unwritten_recorded_at_flush_if_linked() {
        let t = Instant::now();
        let mut b = Batch::default();
        b.on_file(Happening::Created { dir: false }, "link", 0.0, t);
        b.on_file(Happening::Created { dir: false }, "gone", 0.0, t);
        assert_eq!(b.pending(), 2);
        assert!(!b.due(t, &PACE));
        assert!(b.due(t + PACE.quiet, &PACE));
        assert_eq!(changes(&mut b, &["link"], &[]), s(&[("link", New)]));
        assert_eq!(b.pending(), 0);
        assert!(!b.due(t + Duration::from_secs(100), &PACE));
    }

    #[test]
    fn fresh_file_waits_for_its_write_and_close() {
        let t = Instant::now();
        let mut b = Batch::default();
        b.on_file(Happening::Created { dir: false }, "upload", 0.0, t);
        b.on_file(Happening::ClosedWrite, "other", 0.0, t);
        let t1 = t + Duration::from_secs(1);
        assert_eq!(flush_at(&mut b, t1, &["other"], &["upload"], &[]), s(&[("other", New)]));
        // Kept, but not pending: it neither blocks synced-to nor triggers.
        assert_eq!(b.pending(), 0);
        assert!(!b.due(t + Duration::from_secs(5), &PACE));
        assert_eq!(b.deadline(&PACE), Some(t + PACE.fresh_wait));
        // The first write comes, then the close: recorded at the close only.
        b.on_file(Happening::Modified, "upload", 0.0, t1);
        assert_eq!(b.deadline(&PACE), None);
        assert!(!b.due(t + Duration::from_secs(60), &PACE));
        b.on_file(Happening::ClosedWrite, "upload", 0.0, t1);
        assert_eq!(changes(&mut b, &["upload"], &[]), s(&[("upload", New)]));
    }

    #[test]
    fn fresh_file_recorded_after_its_wait() {
        let t = Instant::now();
        let mut b = Batch::default();
        b.on_file(Happening::Created { dir: false }, "f", 0.0, t);
        assert!(flush_at(&mut b, t + PACE.quiet, &[], &["f"], &[]).is_empty());
        let later = t + PACE.fresh_wait;
        assert!(!b.due(later - Duration::from_millis(1), &PACE));
        assert!(b.due(later, &PACE));
        // Gone meanwhile: nothing; still there: new.
        let mut gone = Batch::default();
        gone.on_file(Happening::Created { dir: false }, "f", 0.0, t);
        assert!(flush_at(&mut gone, t, &[], &["f"], &[]).is_empty());
        assert!(flush_at(&mut gone, later, &[], &[], &[]).is_empty());
        assert_eq!(flush_at(&mut b, later, &[], &["f"], &[]), s(&[("f", New)]));
        assert_eq!(b.deadline(&PACE), None);
    }

    #[test]
    fn on_disk_judges_an_lstat() {
        assert_eq!(OnDisk::of(true, false, 2, 1, 1), OnDisk::Gone);
        assert_eq!(OnDisk::of(false, false, 1, 1, 1), OnDisk::Linked, "symlink or special file");
        assert_eq!(OnDisk::of(false, true, 2, 1, 1), OnDisk::Linked, "hard link");
        assert_eq!(OnDisk::of(false, true, 1, 1, 2), OnDisk::Linked, "hard link whose other name is gone");
        assert_eq!(OnDisk::of(false, true, 1, 5, 5), OnDisk::Fresh, "made by an open");
    }

    #[test]
    fn deleted_before_flush_is_a_delete_only() {
        let t = Instant::now();
        let mut b = Batch::default();
        b.on_file(Happening::ClosedWrite, "f", 0.0, t);
        b.on_file(Happening::Deleted { dir: false }, "f", 0.0, t);
        assert_eq!(changes(&mut b, &[], &[]), s(&[("f", Delete)]));
    }

    /// A file whose creation the batch saw, gone again before its path was
    /// recorded, says nothing even without the index: rsync's temp file
    /// renamed into place, wherever the flushes fall. Every other delete
    /// is recorded.
    #[test]
    fn a_file_created_and_gone_before_its_record_says_nothing() {
        let t = Instant::now();
        let tmp = ".f.tar.gz.AbC123";
        let mut b = Batch::default();
        // rsync: mkstemp, write, close, rename over the final name.
        b.on_file(Happening::Created { dir: false }, tmp, 0.0, t);
        b.on_file(Happening::Modified, tmp, 0.0, t);
        b.on_file(Happening::ClosedWrite, tmp, 0.0, t);
        b.on_file(Happening::MovedOut { dir: false }, tmp, 0.0, t);
        b.on_file(Happening::MovedIn { dir: false }, "f.tar.gz", 0.0, t);
        assert_eq!(changes(&mut b, &[], &[]), s(&[("f.tar.gz", New)]));
        // A flush while it is written, another after its close was kept back.
        b.on_file(Happening::Created { dir: false }, tmp, 0.0, t);
        b.on_file(Happening::Modified, tmp, 0.0, t);
        assert!(changes(&mut b, &[], &[]).is_empty());
        b.on_file(Happening::ClosedWrite, tmp, 0.0, t);
        b.on_file(Happening::MovedOut { dir: false }, tmp, 0.0, t);
        assert!(changes(&mut b, &[], &[]).is_empty());
        // Created, kept back as fresh by one flush, removed before the next.
        b.on_file(Happening::Created { dir: false }, "swap", 0.0, t);
        assert!(flush_at(&mut b, t, &[], &["swap"], &[]).is_empty());
        b.on_file(Happening::Deleted { dir: false }, "swap", 0.0, t);
        assert!(changes(&mut b, &[], &[]).is_empty());
        // In a directory that moved within the tree meanwhile.
        b.on_file(Happening::Created { dir: false }, "d/x", 0.0, t);
        b.dir_moved(Some(&p("d")), Some(&p("e")), t);
        b.on_file(Happening::Deleted { dir: false }, "e/x", 0.0, t);
        assert!(flush_at(&mut b, t, &[], &[], &[]).iter().all(|(p, _)| p != "e/x" && p != "d/x"));

        // Recorded, then removed: a delete.
        b.on_file(Happening::Created { dir: false }, "kept", 0.0, t);
        b.on_file(Happening::ClosedWrite, "kept", 0.0, t);
        assert_eq!(changes(&mut b, &[], &[]), s(&[("kept", New)]));
        b.on_file(Happening::Deleted { dir: false }, "kept", 0.0, t);
        assert_eq!(changes(&mut b, &[], &[]), s(&[("kept", Delete)]));
        // An indexed file removed, made again and removed: a delete.
        b.on_file(Happening::Deleted { dir: false }, "old", 0.0, t);
        b.on_file(Happening::Created { dir: false }, "old", 0.0, t);
        b.on_file(Happening::ClosedWrite, "old", 0.0, t);
        b.on_file(Happening::Deleted { dir: false }, "old", 0.0, t);
        assert_eq!(changes(&mut b, &[], &[]), s(&[("old", Delete)]));
        // An indexed file whose directory moved away, made again and removed: a delete.
        b.dir_moved(Some(&p("dir")), None, t);
        b.on_file(Happening::Created { dir: false }, "dir/f", 0.0, t);
        b.on_file(Happening::Deleted { dir: false }, "dir/f", 0.0, t);
        assert_eq!(changes(&mut b, &[], &["dir/f".to_string()]), s(&[("dir/f", Delete)]));
        // After a rescan (which may have recorded it), a delete again.
        b.on_file(Happening::Created { dir: false }, "r", 0.0, t);
        b.clear_in_flight();
        b.on_file(Happening::Deleted { dir: false }, "r", 0.0, t);
        assert_eq!(changes(&mut b, &[], &[]), s(&[("r", Delete)]));
        // A flush that could not be recorded keeps what it knew.
        b.on_file(Happening::Created { dir: false }, "q", 0.0, t);
        b.on_file(Happening::ClosedWrite, "q", 0.0, t);
        let f = b.take(t);
        b.restore(f);
        b.on_file(Happening::Deleted { dir: false }, "q", 0.0, t);
        assert!(changes(&mut b, &[], &[]).is_empty());
        assert!(b.born.is_empty(), "{:?}", b.born);
    }

    #[test]
    fn a_path_made_and_removed_within_a_batch_says_nothing_the_index_does_not_list() {
        let t = Instant::now();
        let mut b = Batch::default();
        b.on_file(Happening::ClosedWrite, "gone", 0.0, t);
        b.on_file(Happening::Deleted { dir: false }, "gone", 0.0, t);
        b.on_file(Happening::Deleted { dir: false }, "old", 0.0, t);
        let f = b.take(t);
        let r = f.resolve(|_| OnDisk::Gone, &[], &[], None, t, PACE.fresh_wait);
        assert_eq!(r.changes.len(), 2, "without the index, both deletes: {:?}", r.changes);
        let only_old = |p: &RelPath| p == "old";
        let r = f.resolve(|_| OnDisk::Gone, &[], &[], Some(&only_old), t, PACE.fresh_wait);
        let got: Vec<_> = r.changes.iter().map(|c| (c.path.to_str().unwrap(), c.kind)).collect();
        assert_eq!(got, [("old", Delete)]);
    }

    #[test]
    fn last_word_wins_in_event_order() {
        let t = Instant::now();
        let mut b = Batch::default();
        b.on_file(Happening::ClosedWrite, "a", 0.0, t);
        b.on_file(Happening::ClosedWrite, "b", 0.0, t);
        b.on_file(Happening::MovedOut { dir: false }, "a", 0.0, t); // rename a -> c
        b.on_file(Happening::MovedIn { dir: false }, "c", 0.0, t);
        b.on_file(Happening::Deleted { dir: false }, "b", 0.0, t);
        b.on_file(Happening::ClosedWrite, "b", 0.0, t);
        assert_eq!(changes(&mut b, &["c", "b"], &[]), s(&[("a", Delete), ("c", New), ("b", New)]));
    }

    fn p(s: &str) -> RelPath {
        RelPath::from(s)
    }

    #[test]
    fn a_directory_moved_out_deletes_its_indexed_files_but_not_later_news() {
        let t = Instant::now();
        let mut b = Batch::default();
        b.on_file(Happening::ClosedWrite, "d/new", 0.0, t);
        b.on_file(Happening::ClosedWrite, "dx/keep", 0.0, t);
        b.dir_moved(Some(&p("d")), None, t);
        b.on_file(Happening::MovedIn { dir: false }, "d/back", 0.0, t);
        let f = b.take(t);
        assert_eq!(f.forgotten.keys().collect::<Vec<_>>(), ["d"]);
        let got = listed(resolve_at(&f, t, &["dx/keep", "d/back"], &[], &["d/old", "d/back", "dx/other"]));
        // d/new went with its directory and was never indexed: nothing to say.
        assert_eq!(got, s(&[("dx/keep", New), ("d/old", Delete), ("d/back", New)]));
    }

    #[test]
    fn restore_keeps_everything() {
        let t = Instant::now();
        let mut b = Batch::default();
        b.on_file(Happening::ClosedWrite, "a", 0.0, t);
        b.on_file(Happening::Created { dir: false }, "l", 0.0, t);
        b.dir_moved(Some(&p("d")), None, t);
        b.dir_moved(None, Some(&p("in")), t);
        let f = b.take(t);
        assert_eq!(f.to_list, [(4, p("in"), 0)]);
        b.restore(f);
        assert_eq!(b.pending(), 4);
        let under = vec!["d/x".to_string()];
        assert_eq!(changes(&mut b, &["a", "l"], &under), s(&[("a", New), ("l", New), ("d/x", Delete)]));
    }

    #[test]
    fn a_directory_renamed_away_and_back_records_only_what_changed_in_it() {
        let t = Instant::now();
        let mut b = Batch::default();
        b.on_file(Happening::ClosedWrite, "area/d1/f", 0.0, t);
        for _ in 0..1000 {
            b.dir_moved(Some(&p("area")), Some(&p("area.x")), t);
            b.dir_moved(Some(&p("area.x")), Some(&p("area")), t);
        }
        b.dir_moved(Some(&p("area")), Some(&p("area.x")), t);
        // Written while it was away: the watch follows the directory.
        b.on_file(Happening::ClosedWrite, "area.x/d1/g", 0.0, t);
        b.on_file(Happening::Deleted { dir: false }, "area.x/d1/old", 0.0, t);
        b.dir_moved(Some(&p("area.x")), Some(&p("area")), t);
        assert_eq!(b.pending(), 3, "three files, however often their directory moved");
        let f = b.take(t);
        assert!(f.to_list.is_empty(), "back where it began: nothing to list: {:?}", f.to_list);
        // The index lists area/d1/old and area/d1/kept; the disk shows f, g and kept.
        let linked = ["area/d1/f", "area/d1/g", "area/d1/kept"];
        let mut got = listed(resolve_at(&f, t, &linked, &[], &["area/d1/old", "area/d1/kept"]));
        got.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(got, s(&[("area/d1/f", New), ("area/d1/g", New), ("area/d1/old", Delete)]));
    }

    #[test]
    fn a_directory_moved_elsewhere_is_listed_once_and_its_place_forgotten() {
        let t = Instant::now();
        let mut b = Batch::default();
        b.on_file(Happening::ClosedWrite, "a/f", 0.0, t);
        for _ in 0..1000 {
            b.dir_moved(Some(&p("a")), Some(&p("b")), t);
            b.dir_moved(Some(&p("b")), Some(&p("a")), t);
        }
        b.dir_moved(Some(&p("a")), Some(&p("c")), t);
        // A directory from outside, moved about: listed where it ends.
        b.dir_moved(None, Some(&p("in")), t);
        b.dir_moved(Some(&p("in")), Some(&p("c/in")), t);
        // One moved out of the tree and made again: its place is forgotten.
        b.dir_moved(Some(&p("hot")), None, t);
        let f = b.take(t);
        let mut listed: Vec<&RelPath> = f.to_list.iter().map(|(_, d, _)| d).collect();
        listed.sort();
        assert_eq!(listed, [&p("c"), &p("c/in")]);
        let mut forgotten: Vec<&RelPath> = f.forgotten.keys().collect();
        forgotten.sort();
        // Only where content was when the batch began: `b` never held any.
        assert_eq!(forgotten, [&p("a"), &p("hot")]);
        // The pending change moved with its directory.
        assert_eq!(f.changes.iter().map(|c| &c.1).collect::<Vec<_>>(), [&p("c/f")]);
    }

    #[test]
    fn a_subdirectory_that_leaves_a_moved_directory_forgets_where_it_began() {
        let t = Instant::now();
        let mut b = Batch::default();
        b.dir_moved(Some(&p("a")), Some(&p("x")), t);
        b.dir_moved(Some(&p("x/sub")), Some(&p("y")), t);
        b.dir_moved(Some(&p("y")), None, t);
        let f = b.take(t);
        let mut forgotten: Vec<&RelPath> = f.forgotten.keys().collect();
        forgotten.sort();
        assert_eq!(forgotten, [&p("a"), &p("a/sub")]);
        assert_eq!(f.to_list, [(1, p("x"), 0)]);
    }

    #[test]
    fn pace_quiet_delay_size_and_rest() {
        let t = Instant::now();
        let ms = Duration::from_millis;
        let mut b = Batch::default();
        assert!(!b.due(t, &PACE));
        assert_eq!(b.deadline(&PACE), None);
        // A steady stream: never quiet, due by the delay.
        for i in 0..20 {
            b.on_file(Happening::ClosedWrite, format!("f{i}"), 0.0, t + ms(50 * i));
        }
        let last = t + ms(950);
        assert!(!b.due(last + ms(40), &PACE));
        assert!(b.due(t + PACE.delay, &PACE));
        assert!(b.overdue(t + PACE.delay, &PACE) && !b.overdue(last, &PACE));
        assert_eq!(b.deadline(&PACE), Some(t + PACE.delay));
        // Quiet: due a moment after the last change.
        let mut q = Batch::default();
        q.on_file(Happening::ClosedWrite, "a", 0.0, t);
        assert_eq!(q.deadline(&PACE), Some(t + PACE.quiet));
        assert!(q.due(t + PACE.quiet, &PACE));
        // After a record that took 300 ms, quiet waits as long; the delay does not.
        q.recorded(t, ms(300));
        assert!(!q.due(t + PACE.quiet, &PACE));
        assert_eq!(q.deadline(&PACE), Some(t + ms(300)));
        assert!(q.due(t + ms(300), &PACE));
        // Size, in a burst (never quiet): rests SIZE_REST times as long.
        let mut big = Batch::default();
        big.recorded(t, ms(300));
        let size_rested = t + ms(300) * SIZE_REST;
        for i in 0..PACE.size {
            big.on_file(Happening::ClosedWrite, format!("f{i}"), 0.0, size_rested - ms(50));
        }
        assert!(!big.due(t + ms(300), &PACE));
        assert!(!big.due(size_rested - ms(1), &PACE));
        assert!(big.due(size_rested, &PACE));
        let mut fresh = Batch::default();
        for i in 0..PACE.size {
            fresh.on_file(Happening::ClosedWrite, format!("f{i}"), 0.0, t);
        }
        assert!(fresh.due(t, &PACE), "size");
    }

    #[test]
    fn aggregate_waits_for_calm_but_not_past_the_window() {
        let t = Instant::now();
        let min = Duration::from_secs(60);
        let hour = Duration::from_secs(3600);
        // Quiet tree: on the timer.
        assert_eq!(aggregate_at(t, min, hour, None, &PACE), t + min);
        assert_eq!(aggregate_at(t, min, hour, Some(t + Duration::from_secs(5)), &PACE), t + min);
        // Changes still coming at the timer: a delay after the last one.
        let l = t + min + Duration::from_millis(300);
        assert_eq!(aggregate_at(t, min, hour, Some(l), &PACE), l + PACE.delay);
        // A stream that never pauses: at the principal's window at the latest.
        assert_eq!(aggregate_at(t, min, hour, Some(t + 2 * hour), &PACE), t + hour);
        // A window shorter than the timer does not make it run more often.
        assert_eq!(aggregate_at(t, min, Duration::from_secs(10), Some(t + hour), &PACE), t + min);
    }

    #[test]
    fn writing_floor() {
        let t = Instant::now();
        let mut b = Batch::default();
        b.on_file(Happening::Modified, "big", 5.0, t);
        b.on_file(Happening::Modified, "big", 9.0, t);
        b.on_file(Happening::Modified, "other", 7.0, t);
        assert_eq!(b.writing_floor(), Some(5.0));
        assert_eq!(b.pending(), 0);
        b.on_file(Happening::ClosedWrite, "big", 9.0, t);
        assert_eq!(b.writing_floor(), Some(7.0));
        b.clear_in_flight();
        assert_eq!(b.writing_floor(), None);
    }
}
