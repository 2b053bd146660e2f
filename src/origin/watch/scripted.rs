//! The test backend of the watcher seam ([`Scripted`]): a test says what
//! happened (the notices a backend would deliver), on real files in a
//! temporary tree, and drives the daemon's handling of each read and its
//! flush itself: no kernel queue, no timers, no sleeps. The tests here are
//! about the daemon's rules for what a notice does (renames paired by
//! cookie, a lost queue, a watch that cannot be added); the end-to-end
//! tests with real inotify are in tests/watch*.rs.

use super::backend::{AddError, Backend, Notice, Read, WatchId};
use super::rules::{keys_under, Happening};
use super::watch_log::Log;
use super::{Daemon, Settings, Ticks, Tree};
use crate::collection::Collection;
use crate::origin::Writer;
use crate::recentfile::{EventKind, RelPath};
use crate::sys::clock::Clock;
use crate::tree::IgnoreSet;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the test sees of the backend and sets: the watches as the daemon
/// left them, the directories whose watch fails as at the limit.
#[derive(Default)]
struct Shared {
    watches: BTreeMap<RelPath, WatchId>,
    at_limit: HashSet<RelPath>,
}

/// The test's side of a [`Scripted`] backend.
#[derive(Clone, Default)]
pub(super) struct Handle(Arc<Mutex<Shared>>);

impl Handle {
    fn shared(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.0.lock().unwrap()
    }

    /// The watch of directory `dir` (panics if it is not watched).
    pub fn watch_of(&self, dir: &str) -> WatchId {
        *self.shared().watches.get(&RelPath::from(dir)).unwrap_or_else(|| panic!("{dir:?} is not watched"))
    }

    pub fn is_watched(&self, dir: &str) -> bool {
        self.shared().watches.contains_key(&RelPath::from(dir))
    }

    /// Adding a watch for `dir` fails from now on, as at the watch limit.
    pub fn at_limit(&self, dir: &str) {
        self.shared().at_limit.insert(RelPath::from(dir));
    }

    /// What a backend delivers when `what` happened to `name` in the
    /// watched directory `dir`.
    pub fn notice(&self, dir: &str, what: Happening, cookie: u32, name: &str) -> Notice {
        Notice { watch: self.watch_of(dir), what: Some(what), cookie, name: Some(name.as_bytes().to_vec()) }
    }
}

/// A backend whose notices the test hands to the daemon itself
/// (`Daemon::on_read`): its reads never deliver anything.
#[derive(Default)]
pub(super) struct Scripted {
    by_dir: BTreeMap<RelPath, WatchId>,
    by_id: HashMap<WatchId, RelPath>,
    next: WatchId,
    handle: Handle,
}

impl Scripted {
    pub fn new() -> (Scripted, Handle) {
        let s = Scripted::default();
        let h = s.handle.clone();
        (s, h)
    }

    /// Show the test the watches as they are now.
    fn publish(&self) {
        self.handle.shared().watches = self.by_dir.clone();
    }
}

impl Backend for Scripted {
    fn add(&mut self, rel: &RelPath) -> Result<(), AddError> {
        if self.handle.shared().at_limit.contains(rel) {
            return Err(AddError::Limit);
        }
        if !self.by_dir.contains_key(rel) {
            self.next += 1;
            self.by_dir.insert(rel.clone(), self.next);
            self.by_id.insert(self.next, rel.clone());
        }
        self.publish();
        Ok(())
    }
    fn remove(&mut self, rel: &RelPath) {
        if let Some(id) = self.by_dir.remove(rel) {
            self.by_id.remove(&id);
        }
        self.publish();
    }
    fn remove_under(&mut self, rel: &RelPath) {
        for d in keys_under(&self.by_dir, rel) {
            self.remove(&d);
        }
    }
    fn rename_under(&mut self, from: &RelPath, to: &RelPath) {
        for old in keys_under(&self.by_dir, from) {
            let id = self.by_dir.remove(&old).unwrap();
            let new = RelPath::from([to.as_bytes(), &old.as_bytes()[from.len()..]].concat());
            self.by_id.insert(id, new.clone());
            self.by_dir.insert(new, id);
        }
        self.publish();
    }
    fn forget(&mut self, watch: WatchId) {
        if let Some(dir) = self.by_id.remove(&watch) {
            self.by_dir.remove(&dir);
        }
        self.publish();
    }
    fn dir_of(&self, watch: WatchId) -> Option<&RelPath> {
        self.by_id.get(&watch)
    }
    fn is_watched(&self, rel: &RelPath) -> bool {
        self.by_dir.contains_key(rel)
    }
    fn dirs(&self) -> Box<dyn Iterator<Item = &RelPath> + '_> {
        Box::new(self.by_dir.keys())
    }
    fn count(&self) -> usize {
        self.by_dir.len()
    }
    fn limit_message(&self, dir: &str, needed: usize) -> String {
        format!("cannot watch {dir:?}: the scripted limit ({needed} watches needed)")
    }
    fn recv_timeout(&self, _timeout: Duration) -> Option<Read> {
        None
    }
    fn try_recv(&self) -> Option<Read> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interval::{parse_list, Interval};
    use crate::origin::index::{index, Request};
    use std::fs;

    const SETTINGS: Settings = Settings {
        batch_size: 1000,
        batch_delay: Duration::from_secs(1),
        aggregate_every: Duration::from_secs(60),
        keep_deletes: false,
        prometheus: None,
        max_batch_entries: 100_000,
        traces: crate::monitor::trace_write::OriginFiles { trace: None, timestamp: None },
        metrics: None,
    };

    fn writer() -> Writer {
        Writer {
            clock: Clock::system(),
            program: "rrr-test".into(),
            lock_timeout: Duration::from_secs(10),
            beacon: Default::default(),
            hash: None,
        }
    }

    /// A tree with `files` (and their directories), indexed by `init`.
    fn indexed(files: &[&str]) -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        for f in files {
            let p = tmp.path().join(f);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, "x").unwrap();
        }
        let req = Request {
            root: tmp.path().to_path_buf(),
            interval: Interval::parse("1h").unwrap(),
            aggregator: parse_list("1h,6h,1d,Z").unwrap(),
            format: crate::recentfile::Format::Yaml,
            filenameroot: "RECENT".into(),
            force: false,
            aggregate: false,
            excludes: Vec::new(),
        };
        index(&req, &writer(), false).unwrap();
        tmp
    }

    /// A daemon on `root` learning of changes from `backend`, started
    /// (its first comparison of the tree with the index done).
    fn daemon<'a>(root: &Path, w: &'a Writer) -> (Daemon<'a>, Handle) {
        let coll = Collection::open(root).unwrap();
        let ignore = IgnoreSet::new(&coll.filenameroot, &[]);
        let tree = Tree { coll, ignore, root: std::path::absolute(root).unwrap(), on_batch: None };
        let started = w.clock.now_f64();
        let (backend, handle) = Scripted::new();
        let mut d = Daemon::new(&SETTINGS, w, tree, Box::new(backend), Log::default(), started);
        d.start(None).unwrap();
        (d, handle)
    }

    /// The newest word on each path of the collection.
    fn news(root: &Path) -> BTreeMap<String, EventKind> {
        let coll = Collection::open(root).unwrap();
        let rf = crate::store::read_file(&coll.path_of(coll.principal())).unwrap().unwrap();
        let mut out = BTreeMap::new();
        for e in rf.events.iter().rev() {
            out.insert(e.path.to_str().unwrap().to_string(), e.kind);
        }
        out
    }

    #[test]
    fn a_directory_renamed_within_the_tree_moves_its_files_and_its_watches() {
        let tmp = indexed(&["a/f", "a/sub/g", "keep"]);
        let w = writer();
        let (mut d, b) = daemon(tmp.path(), &w);
        let sub = b.watch_of("a/sub");
        fs::rename(tmp.path().join("a"), tmp.path().join("b")).unwrap();
        let out = b.notice("", Happening::MovedOut { dir: true }, 7, "a");
        let into = b.notice("", Happening::MovedIn { dir: true }, 7, "b");
        d.on_read(Ok(vec![out, into])).unwrap();
        // The watches followed the directory: a file written in its
        // subdirectory is named by its new path.
        assert_eq!(b.watch_of("b/sub"), sub);
        assert!(!b.is_watched("a/sub"));
        fs::write(tmp.path().join("b/sub/h"), "x").unwrap();
        d.on_read(Ok(vec![b.notice("b/sub", Happening::ClosedWrite, 0, "h")])).unwrap();
        d.flush();
        let n = news(tmp.path());
        assert_eq!(n["a/f"], EventKind::Delete);
        assert_eq!(n["a/sub/g"], EventKind::Delete);
        assert_eq!(n["b/f"], EventKind::New);
        assert_eq!(n["b/sub/g"], EventKind::New);
        assert_eq!(n["b/sub/h"], EventKind::New);
        assert_eq!(n["keep"], EventKind::New);
    }

    #[test]
    fn a_directory_moved_out_with_no_other_half_left_the_tree() {
        let tmp = indexed(&["a/f", "keep"]);
        let w = writer();
        let (mut d, b) = daemon(tmp.path(), &w);
        let outside = tempfile::tempdir().unwrap();
        fs::rename(tmp.path().join("a"), outside.path().join("a")).unwrap();
        d.on_read(Ok(vec![b.notice("", Happening::MovedOut { dir: true }, 9, "a")])).unwrap();
        d.flush();
        assert_eq!(news(tmp.path())["a/f"], EventKind::Delete);
        assert!(!b.is_watched("a"));
    }

    #[test]
    fn a_lost_queue_asks_for_a_rescan_that_finds_what_no_notice_named() {
        let tmp = indexed(&["gone", "keep"]);
        let w = writer();
        let (mut d, _) = daemon(tmp.path(), &w);
        fs::write(tmp.path().join("unseen"), "x").unwrap();
        fs::remove_file(tmp.path().join("gone")).unwrap();
        let overflow = Notice { watch: -1, what: Some(Happening::Overflow), cookie: 0, name: None };
        d.on_read(Ok(vec![overflow])).unwrap();
        let why = d.rescan.take().expect("a rescan is asked for");
        assert_eq!(why, "kernel queue overflow");
        assert_eq!(d.markers.rescan_floor(), Some(d.markers.last()));
        d.rescan(&why).unwrap();
        let n = news(tmp.path());
        assert_eq!(n["unseen"], EventKind::New);
        assert_eq!(n["gone"], EventKind::Delete);
    }

    #[test]
    fn a_directory_that_cannot_be_watched_is_still_listed_and_the_daemon_rescans() {
        let tmp = indexed(&["keep"]);
        let w = writer();
        let (mut d, b) = daemon(tmp.path(), &w);
        b.at_limit("new");
        fs::create_dir(tmp.path().join("new")).unwrap();
        fs::write(tmp.path().join("new/f"), "x").unwrap();
        d.on_read(Ok(vec![b.notice("", Happening::Created { dir: true }, 0, "new")])).unwrap();
        assert!(d.degraded, "periodic rescans until every directory is watched");
        assert!(d.limit_reported);
        d.flush();
        assert_eq!(news(tmp.path())["new/f"], EventKind::New);
    }

    #[test]
    fn a_file_created_and_never_written_is_recorded_after_its_wait_by_the_daemons_clock() {
        let tmp = indexed(&["keep"]);
        let w = writer();
        let (mut d, b) = daemon(tmp.path(), &w);
        let clock = std::rc::Rc::new(std::cell::Cell::new(std::time::Instant::now()));
        d.ticks = Ticks::Manual(clock.clone());
        // An open that made the file and wrote nothing (yet): it waits
        // for its write and close.
        fs::File::create(tmp.path().join("opened")).unwrap();
        d.on_read(Ok(vec![b.notice("", Happening::Created { dir: false }, 0, "opened")])).unwrap();
        d.flush();
        assert!(!news(tmp.path()).contains_key("opened"), "recorded before its write and close");
        // Neither came within the wait: recorded anyway.
        clock.set(clock.get() + d.pace.fresh_wait + Duration::from_millis(1));
        d.flush();
        assert_eq!(news(tmp.path())["opened"], EventKind::New);
    }
}
