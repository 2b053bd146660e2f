//! The pure core of `rrr watch`: what an inotify event means for the index,
//! and the pending batch that turns events into one `update`.
//!
//! No filesystem, no clock: the runner (`ops::watch`) owns the watcher, the
//! directory scans and the writes, and passes in what it learned (whether a
//! path is a directory we watch, what exists at flush time, which indexed
//! paths lie under a directory that moved away) and the time.
//!
//! The rules (DECISIONS.md, issue 5):
//! - a file is `new` when closed after writing or moved in, never on create
//!   alone (a half-written file is not announced);
//! - a file created and never opened (a hard link, a symlink, `mknod`) is
//!   `new` at the next batch flush, if it still exists; one created by
//!   `open` waits for its close;
//! - `delete` on delete or moved out; a rename is a delete plus a new;
//! - a directory moved out deletes every indexed file under it;
//! - attribute-only changes are ignored;
//! - within a batch the last word on a path wins, and batch order is event
//!   order (so epochs follow the events).

use crate::recentfile::EventKind;
use crate::update::Change;
use notify::event::{AccessKind, AccessMode, CreateKind, EventKind as NK, ModifyKind, RemoveKind, RenameMode};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What one inotify event says, reduced to what the index cares about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Happening {
    /// The kernel queue overflowed: events were lost.
    Overflow,
    Created {
        dir: bool,
    },
    Opened,
    ClosedWrite,
    ClosedNoWrite,
    /// Data written (not yet closed).
    Modified,
    /// Renamed into this place (file or directory: the runner looks).
    MovedIn,
    /// Renamed away from this place (from the parent's watch).
    MovedOut,
    /// A watched directory itself was moved (only the root's matters).
    MovedSelf,
    Deleted {
        dir: bool,
    },
}

/// Classify a notify event. `None`: nothing the index cares about
/// (attributes, a rename pair's summary, unknown kinds).
pub fn classify(ev: &notify::Event) -> Option<Happening> {
    if ev.need_rescan() {
        return Some(Happening::Overflow);
    }
    Some(match ev.kind {
        NK::Create(CreateKind::Folder) => Happening::Created { dir: true },
        NK::Create(_) => Happening::Created { dir: false },
        NK::Access(AccessKind::Open(_)) => Happening::Opened,
        NK::Access(AccessKind::Close(AccessMode::Write)) => Happening::ClosedWrite,
        NK::Access(AccessKind::Close(_)) => Happening::ClosedNoWrite,
        NK::Modify(ModifyKind::Data(_)) => Happening::Modified,
        NK::Modify(ModifyKind::Name(RenameMode::To)) => Happening::MovedIn,
        // notify reports IN_MOVE_SELF as `From` without a cookie.
        NK::Modify(ModifyKind::Name(RenameMode::From)) if ev.attrs.tracker().is_none() => Happening::MovedSelf,
        NK::Modify(ModifyKind::Name(RenameMode::From)) => Happening::MovedOut,
        NK::Remove(RemoveKind::Folder) => Happening::Deleted { dir: true },
        NK::Remove(RemoveKind::File) => Happening::Deleted { dir: false },
        _ => return None,
    })
}

/// `path` relative to `root`, `/`-separated; `Some("")` for the root itself.
pub fn relative(root: &Path, path: &Path) -> Option<Result<String, PathBuf>> {
    let rel = path.strip_prefix(root).ok()?;
    Some(rel.to_str().map(str::to_string).ok_or_else(|| path.to_path_buf()))
}

/// Whether `path` is `dir` or lies below it (`dir` = "" is the root).
pub fn is_under(path: &str, dir: &str) -> bool {
    dir.is_empty() || path == dir || (path.starts_with(dir) && path.as_bytes().get(dir.len()) == Some(&b'/'))
}

#[derive(Clone, Copy, Debug)]
struct Created {
    seq: u64,
    opened: bool,
    at: Instant,
}

/// The batch being collected, and the files in the middle of being written.
#[derive(Debug, Default)]
pub struct Batch {
    seq: u64,
    changes: HashMap<String, (u64, EventKind)>,
    created: HashMap<String, Created>,
    /// Files with data written and not yet closed: the marker time current
    /// when the first write was seen (a lower bound of the file's mtime).
    writing: HashMap<String, f64>,
    /// Directories that moved away, with the sequence number of the move.
    forgotten: Vec<(u64, String)>,
    /// When the oldest pending change arrived.
    since: Option<Instant>,
    /// Raw events seen since the last flush (for the log).
    pub events: usize,
}

/// What a flush must record, before the runner resolves it against the disk
/// and the index.
#[derive(Debug, Default, PartialEq)]
pub struct Flush {
    changes: Vec<(u64, String, EventKind)>,
    /// Created and never opened: recorded if they still exist.
    unwritten: Vec<(u64, String)>,
    /// Directories moved away: their indexed files are deleted.
    pub forgotten: Vec<String>,
    forgotten_seq: Vec<u64>,
    pub since: Option<Instant>,
    pub events: usize,
}

impl Batch {
    fn next(&mut self, now: Instant) -> u64 {
        self.seq += 1;
        self.since.get_or_insert(now);
        self.seq
    }

    /// Record `kind` for `path` (the last word wins).
    pub fn record(&mut self, path: &str, kind: EventKind, now: Instant) {
        let seq = self.next(now);
        self.created.remove(path);
        self.writing.remove(path);
        self.changes.insert(path.to_string(), (seq, kind));
    }

    /// A file-level event on `path` (not ignored, not a directory).
    /// `marker` is the time of the newest heartbeat marker received.
    pub fn on_file(&mut self, h: Happening, path: &str, marker: f64, now: Instant) {
        match h {
            Happening::Created { dir: false } => {
                let seq = self.next(now);
                self.created.insert(path.to_string(), Created { seq, opened: false, at: now });
            }
            Happening::Opened => {
                if let Some(c) = self.created.get_mut(path) {
                    c.opened = true;
                }
            }
            Happening::Modified => {
                self.writing.entry(path.to_string()).or_insert(marker);
            }
            Happening::ClosedWrite | Happening::MovedIn => self.record(path, EventKind::New, now),
            Happening::ClosedNoWrite if self.created.contains_key(path) => self.record(path, EventKind::New, now),
            Happening::MovedOut | Happening::Deleted { dir: false } => self.record(path, EventKind::Delete, now),
            _ => {}
        }
    }

    /// A directory moved away: pending news under it become deletes, and
    /// at flush every indexed file under it is deleted.
    pub fn forget_dir(&mut self, dir: &str, now: Instant) {
        let seq = self.next(now);
        for (p, v) in self.changes.iter_mut() {
            if is_under(p, dir) {
                *v = (seq, EventKind::Delete);
            }
        }
        self.created.retain(|p, _| !is_under(p, dir));
        self.writing.retain(|p, _| !is_under(p, dir));
        self.forgotten.push((seq, dir.to_string()));
    }

    /// Changes waiting to be recorded (created-unopened files included).
    pub fn pending(&self) -> usize {
        self.changes.len() + self.created.values().filter(|c| !c.opened).count() + self.forgotten.len()
    }

    /// Whether the batch must be flushed now: `size` changes, or the oldest
    /// waited `delay`.
    pub fn due(&self, now: Instant, size: usize, delay: Duration) -> bool {
        self.pending() > 0 && (self.changes.len() >= size || self.since.is_some_and(|s| now >= s + delay))
    }

    /// When the batch falls due by time.
    pub fn deadline(&self, delay: Duration) -> Option<Instant> {
        if self.pending() > 0 {
            self.since.map(|s| s + delay)
        } else {
            None
        }
    }

    /// The oldest marker time of a file still being written: synced-to
    /// cannot pass it.
    pub fn writing_floor(&self) -> Option<f64> {
        self.writing.values().copied().reduce(f64::min)
    }

    /// Forget files in the middle of a create or write (after an overflow
    /// rescan, which found them).
    pub fn clear_in_flight(&mut self) {
        self.created.clear();
        self.writing.clear();
    }

    /// Take the batch. `with_unwritten`: also take created-unopened files
    /// (not on a size-triggered flush, which may fall between a create and
    /// its open).
    pub fn take(&mut self, with_unwritten: bool) -> Flush {
        let mut f = Flush {
            changes: self.changes.drain().map(|(p, (s, k))| (s, p, k)).collect(),
            since: self.since.take(),
            events: std::mem::take(&mut self.events),
            ..Flush::default()
        };
        if with_unwritten {
            let mut un: Vec<(u64, String)> =
                self.created.iter().filter(|(_, c)| !c.opened).map(|(p, c)| (c.seq, p.clone())).collect();
            un.sort();
            for (_, p) in &un {
                self.created.remove(p);
            }
            f.unwritten = un;
        }
        let (seqs, dirs): (Vec<u64>, Vec<String>) = self.forgotten.drain(..).unzip();
        f.forgotten = dirs;
        f.forgotten_seq = seqs;
        // Left behind: they fall due with the next batch.
        self.since = self.created.values().filter(|c| !c.opened).map(|c| c.at).min();
        f
    }

    /// Put a flush that could not be recorded back (it is retried).
    pub fn restore(&mut self, f: Flush) {
        for (s, p, k) in f.changes {
            let e = self.changes.entry(p).or_insert((s, k));
            if e.0 < s {
                *e = (s, k);
            }
        }
        for (s, p) in f.unwritten {
            let at = f.since.unwrap_or_else(Instant::now);
            self.created.entry(p).or_insert(Created { seq: s, opened: false, at });
        }
        for (s, d) in f.forgotten_seq.into_iter().zip(f.forgotten) {
            self.forgotten.push((s, d));
        }
        self.since = match (self.since, f.since) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.events += f.events;
    }
}

impl Flush {
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty() && self.unwritten.is_empty() && self.forgotten.is_empty()
    }

    /// The changes to record, in event order. `exists`: whether an
    /// unwritten (created, never opened) path is still there;
    /// `indexed_under`: the live indexed paths under each forgotten
    /// directory, in the order of `self.forgotten`.
    pub fn resolve(&self, exists: impl Fn(&str) -> bool, indexed_under: &[Vec<String>]) -> Vec<Change> {
        let mut last: HashMap<&str, (u64, EventKind)> = HashMap::new();
        let unwritten = self.unwritten.iter().filter(|(_, p)| exists(p)).map(|(s, p)| (s, p, &EventKind::New));
        for (s, p, k) in self.changes.iter().map(|(s, p, k)| (s, p, k)).chain(unwritten) {
            if last.get(p.as_str()).is_none_or(|(s0, _)| s0 < s) {
                last.insert(p, (*s, *k));
            }
        }
        for (i, seq) in self.forgotten_seq.iter().enumerate() {
            for p in indexed_under.get(i).map(Vec::as_slice).unwrap_or(&[]) {
                if last.get(p.as_str()).is_none_or(|(s0, _)| s0 < seq) {
                    last.insert(p, (*seq, EventKind::Delete));
                }
            }
        }
        let mut v: Vec<(u64, &str, EventKind)> = last.into_iter().map(|(p, (s, k))| (s, p, k)).collect();
        v.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        v.into_iter().map(|(_, p, k)| Change { path: p.to_string(), kind: k, epoch: None }).collect()
    }
}

/// The message for ENOSPC when adding a watch.
pub fn watch_limit_message(dir: &str, limit: Option<u64>, needed: usize) -> String {
    let limit = limit.map_or_else(|| "unknown".to_string(), |l| l.to_string());
    let suggest = (needed as u64 * 2).max(needed as u64 + 8192);
    format!(
        "cannot watch {dir:?}: the inotify watch limit is reached (fs.inotify.max_user_watches = {limit}); \
         this tree needs {needed} watches (one per directory), plus those of other programs of this user: \
         raise it, e.g. `sysctl fs.inotify.max_user_watches={suggest}` (and in /etc/sysctl.d/ to keep it)"
    )
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
    use notify::event::{DataChange, MetadataKind};
    use notify::Event;
    use EventKind::{Delete, New};

    fn changes(
        b: &mut Batch,
        with_unwritten: bool,
        exists: &[&str],
        under: &[Vec<String>],
    ) -> Vec<(String, EventKind)> {
        let f = b.take(with_unwritten);
        f.resolve(|p| exists.contains(&p), under).into_iter().map(|c| (c.path, c.kind)).collect()
    }

    fn s(v: &[(&str, EventKind)]) -> Vec<(String, EventKind)> {
        v.iter().map(|(p, k)| (p.to_string(), *k)).collect()
    }

    #[test]
    fn classify_events() {
        let ev = |k| Event::new(k).add_path("/r/x".into());
        let table = [
            (ev(NK::Create(CreateKind::File)), Some(Happening::Created { dir: false })),
            (ev(NK::Create(CreateKind::Folder)), Some(Happening::Created { dir: true })),
            (ev(NK::Access(AccessKind::Open(AccessMode::Any))), Some(Happening::Opened)),
            (ev(NK::Access(AccessKind::Close(AccessMode::Write))), Some(Happening::ClosedWrite)),
            (ev(NK::Access(AccessKind::Close(AccessMode::Read))), Some(Happening::ClosedNoWrite)),
            (ev(NK::Modify(ModifyKind::Data(DataChange::Any))), Some(Happening::Modified)),
            (ev(NK::Modify(ModifyKind::Metadata(MetadataKind::Any))), None),
            (ev(NK::Modify(ModifyKind::Name(RenameMode::To))).set_tracker(7), Some(Happening::MovedIn)),
            (ev(NK::Modify(ModifyKind::Name(RenameMode::From))).set_tracker(7), Some(Happening::MovedOut)),
            (ev(NK::Modify(ModifyKind::Name(RenameMode::From))), Some(Happening::MovedSelf)),
            (ev(NK::Modify(ModifyKind::Name(RenameMode::Both))).set_tracker(7), None),
            (ev(NK::Remove(RemoveKind::File)), Some(Happening::Deleted { dir: false })),
            (ev(NK::Remove(RemoveKind::Folder)), Some(Happening::Deleted { dir: true })),
            (Event::new(NK::Other).set_flag(notify::event::Flag::Rescan), Some(Happening::Overflow)),
        ];
        for (e, want) in table {
            assert_eq!(classify(&e), want, "{e:?}");
        }
    }

    #[test]
    fn paths() {
        assert_eq!(relative(Path::new("/r"), Path::new("/r/a/b")), Some(Ok("a/b".into())));
        assert_eq!(relative(Path::new("/r"), Path::new("/r")), Some(Ok("".into())));
        assert_eq!(relative(Path::new("/r"), Path::new("/s/a")), None);
        assert!(is_under("a/b", "a") && is_under("a", "a") && is_under("x", ""));
        assert!(!is_under("ab/c", "a"));
    }

    #[test]
    fn new_on_close_write_not_on_create() {
        let t = Instant::now();
        let mut b = Batch::default();
        b.on_file(Happening::Created { dir: false }, "f", 0.0, t);
        b.on_file(Happening::Opened, "f", 0.0, t);
        b.on_file(Happening::Modified, "f", 0.0, t);
        assert!(changes(&mut b, true, &["f"], &[]).is_empty(), "half-written file announced");
        b.on_file(Happening::ClosedWrite, "f", 0.0, t);
        assert_eq!(changes(&mut b, true, &["f"], &[]), s(&[("f", New)]));
    }

    #[test]
    fn created_unopened_recorded_at_flush_if_present() {
        let t = Instant::now();
        let mut b = Batch::default();
        b.on_file(Happening::Created { dir: false }, "link", 0.0, t);
        b.on_file(Happening::Created { dir: false }, "gone", 0.0, t);
        assert_eq!(b.pending(), 2);
        assert!(b.due(t + Duration::from_secs(1), 1000, Duration::from_secs(1)));
        // A size-triggered flush leaves them for the next one.
        assert!(changes(&mut b, false, &["link"], &[]).is_empty());
        assert_eq!(changes(&mut b, true, &["link"], &[]), s(&[("link", New)]));
        assert_eq!(b.pending(), 0);
    }

    #[test]
    fn last_word_wins_in_event_order() {
        let t = Instant::now();
        let mut b = Batch::default();
        b.on_file(Happening::ClosedWrite, "a", 0.0, t);
        b.on_file(Happening::ClosedWrite, "b", 0.0, t);
        b.on_file(Happening::MovedOut, "a", 0.0, t); // rename a -> c
        b.on_file(Happening::MovedIn, "c", 0.0, t);
        b.on_file(Happening::Deleted { dir: false }, "b", 0.0, t);
        b.on_file(Happening::ClosedWrite, "b", 0.0, t);
        assert_eq!(changes(&mut b, true, &[], &[]), s(&[("a", Delete), ("c", New), ("b", New)]));
    }

    #[test]
    fn forgotten_directory_deletes_indexed_files_but_not_later_news() {
        let t = Instant::now();
        let mut b = Batch::default();
        b.on_file(Happening::ClosedWrite, "d/new", 0.0, t);
        b.on_file(Happening::ClosedWrite, "dx/keep", 0.0, t);
        b.forget_dir("d", t);
        b.on_file(Happening::MovedIn, "d/back", 0.0, t);
        let f = b.take(true);
        assert_eq!(f.forgotten, vec!["d".to_string()]);
        let under = vec![vec!["d/old".to_string(), "d/back".to_string()]];
        let got: Vec<_> = f.resolve(|_| true, &under).into_iter().map(|c| (c.path, c.kind)).collect();
        assert_eq!(got.len(), 4, "{got:?}");
        assert_eq!(got[0], ("dx/keep".to_string(), New));
        let mut middle: Vec<&str> = got[1..3]
            .iter()
            .map(|(p, k)| {
                assert_eq!(*k, Delete, "{p}");
                p.as_str()
            })
            .collect();
        middle.sort();
        assert_eq!(middle, ["d/new", "d/old"]);
        assert_eq!(got[3], ("d/back".to_string(), New), "a later move-in wins over the forgotten directory");
    }

    #[test]
    fn restore_keeps_everything() {
        let t = Instant::now();
        let mut b = Batch::default();
        b.on_file(Happening::ClosedWrite, "a", 0.0, t);
        b.on_file(Happening::Created { dir: false }, "l", 0.0, t);
        b.forget_dir("d", t);
        let f = b.take(true);
        b.restore(f);
        assert_eq!(b.pending(), 3);
        let under = vec![vec!["d/x".to_string()]];
        assert_eq!(changes(&mut b, true, &["l"], &under), s(&[("a", New), ("l", New), ("d/x", Delete)]));
    }

    #[test]
    fn writing_floor_and_due() {
        let t = Instant::now();
        let mut b = Batch::default();
        assert!(!b.due(t, 1, Duration::ZERO));
        b.on_file(Happening::Modified, "big", 5.0, t);
        b.on_file(Happening::Modified, "big", 9.0, t);
        b.on_file(Happening::Modified, "other", 7.0, t);
        assert_eq!(b.writing_floor(), Some(5.0));
        assert_eq!(b.pending(), 0);
        b.on_file(Happening::ClosedWrite, "big", 9.0, t);
        assert_eq!(b.writing_floor(), Some(7.0));
        assert!(b.due(t, 1, Duration::from_secs(9)));
        assert!(!b.due(t, 2, Duration::from_secs(9)));
        assert_eq!(b.deadline(Duration::from_secs(9)), Some(t + Duration::from_secs(9)));
        b.clear_in_flight();
        assert_eq!(b.writing_floor(), None);
    }

    #[test]
    fn limit_message_names_the_sysctl() {
        let m = watch_limit_message("a/b", Some(8192), 12000);
        assert!(m.contains("fs.inotify.max_user_watches = 8192"), "{m}");
        assert!(m.contains("needs 12000 watches"), "{m}");
        assert!(m.contains("max_user_watches=24000"), "{m}");
    }
}
