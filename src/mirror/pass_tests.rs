//! The pass's decisions on what a transport reports, tested through the
//! test transport (`transport/local.rs`) without a daemon: chunks,
//! done-sets, failing and missing paths, a failed call, a retry.

use super::transport::local::LocalDirs;
use crate::epoch::Epoch;
use crate::mirror::remote::Remote;
use crate::mirror::report::{Fetched, PassReport};
use crate::mirror::{Config, Mirror};
use crate::recentfile::{Event, EventKind, Recentfile, RelPath};
use crate::sys::clock::Clock;
use crate::tree::IgnoreSet;
use std::collections::HashSet;
use std::fs;
use std::path::Path;
use std::time::Duration;

/// A mirror of `origin` into `<dir>/mirror`, through `dirs`, with
/// chunks of two paths and one attempt per call.
fn mirror(dir: &Path, dirs: LocalDirs) -> Mirror<'static> {
    let localroot = dir.join("mirror");
    fs::create_dir_all(localroot.join(".rrr")).unwrap();
    let remote = Remote::parse(&format!("{}/RECENT.recent", dirs.origin.display())).unwrap();
    let cfg = Config {
        upstreams: vec![remote.clone()],
        remote,
        state_file: localroot.join(".rrr/state.json"),
        localroot,
        skip_deletes: false,
        max_delete: None,
        accept_deletes: false,
        checksum: false,
        max_files_per_connection: 2,
        rsync: Default::default(),
        dry_run: false,
        attempts: 1,
        backoff: Duration::ZERO,
        progress: false,
        max_recentfile_size: 1 << 20,
        excludes: Vec::new(),
        trace: None,
        trace_host: None,
        timestamp: None,
        interval: Duration::from_secs(20),
        on_pass: None,
        on_pass_timeout: Duration::from_secs(1),
        full_every: None,
        verify_every: None,
        trust_keys: Vec::new(),
        max_signature_age: std::time::Duration::from_secs(86_400),
    };
    let clock = Clock::pinned(Epoch::parse("1700001000").unwrap());
    let mut m = Mirror::new(cfg, clock).unwrap();
    m.transport = std::rc::Rc::new(dirs);
    m
}

/// Origin files (path, content) and a recentfile of `new` events for
/// `listed`, newest first.
fn origin(dir: &Path, files: &[(&str, &str)], listed: &[&str]) -> (LocalDirs, Fetched) {
    let origin = dir.join("origin");
    for (p, c) in files {
        let f = origin.join(p);
        fs::create_dir_all(f.parent().unwrap()).unwrap();
        fs::write(f, c).unwrap();
    }
    let events = listed
        .iter()
        .enumerate()
        .map(|(i, p)| {
            Event::new(
                Epoch::parse(&format!("1700000{:03}", 900 - i)).unwrap(),
                RelPath::from(p.as_bytes()),
                EventKind::New,
            )
        })
        .collect();
    let f = Fetched { name: "RECENT-1h.yaml".into(), rf: Recentfile::from_events(events) };
    (LocalDirs { origin, ..LocalDirs::default() }, f)
}

/// Run `Mirror::transfer` over every event of `f`.
fn transfer(m: &mut Mirror, f: &Fetched, rep: &mut PassReport) -> bool {
    let epochs: Vec<&Epoch> = f.rf.events.iter().map(|e| &e.epoch).collect();
    let news: Vec<usize> = (0..f.rf.events.len()).collect();
    let ignore = IgnoreSet::new("RECENT", &[]);
    let mut attempted = HashSet::new();
    m.transfer(f, &epochs, &news, &ignore, &mut attempted, rep).unwrap()
}

fn done_count(m: &Mirror, f: &Fetched) -> usize {
    let ds = &m.state.done["RECENT-1h.yaml"];
    f.rf.events.iter().filter(|e| ds.covered(&e.epoch)).count()
}

#[test]
fn chunks_arrive_and_are_done() {
    let t = tempfile::tempdir().unwrap();
    let (dirs, f) = origin(t.path(), &[("a", "1"), ("d/b", "22"), ("c", "333")], &["c", "d/b", "a"]);
    let calls = dirs.calls.clone();
    let mut m = mirror(t.path(), dirs);
    let mut rep = PassReport::default();
    assert!(transfer(&mut m, &f, &mut rep));
    // Newest chunk first, each sorted; two paths a connection.
    let asked: Vec<Vec<Vec<u8>>> =
        calls.lock().unwrap().iter().map(|c| c.iter().map(|p| p.as_bytes().to_vec()).collect()).collect();
    assert_eq!(asked, vec![vec![b"c".to_vec(), b"d/b".to_vec()], vec![b"a".to_vec()]]);
    assert_eq!((rep.transferred, rep.bytes), (3, 6));
    assert_eq!(fs::read_to_string(t.path().join("mirror/d/b")).unwrap(), "22");
    assert_eq!(done_count(&m, &f), 3);
    assert!(m.state.failing.is_empty() && m.state.missing.is_empty());
}

#[test]
fn a_path_the_origin_cannot_send_is_failing_and_holds_back_nothing() {
    let t = tempfile::tempdir().unwrap();
    let (mut dirs, f) = origin(t.path(), &[("a", "1"), ("secret", "x")], &["secret", "a"]);
    let msg = "rsync: [sender] send_files failed to open \"secret\": Permission denied (13)";
    dirs.unsendable.insert(RelPath::from(&b"secret"[..]), msg.to_string());
    let mut m = mirror(t.path(), dirs);
    let mut rep = PassReport::default();
    assert!(transfer(&mut m, &f, &mut rep));
    assert_eq!(rep.transferred, 1);
    let failing: Vec<&[u8]> = m.state.failing.iter().map(|x| x.path.as_bytes()).collect();
    assert_eq!(failing, vec![&b"secret"[..]]);
    assert_eq!(m.state.failing[0].message, msg);
    // Both events are done: the failing path is retried from `failing`.
    assert_eq!(done_count(&m, &f), 2);
}

#[test]
fn a_failing_path_is_retried_and_arrives_once_the_origin_sends_it() {
    let t = tempfile::tempdir().unwrap();
    let (mut dirs, f) = origin(t.path(), &[("a", "1"), ("secret", "x")], &["secret", "a"]);
    let healthy = dirs.clone();
    let msg = "rsync: [sender] send_files failed to open \"secret\": Permission denied (13)";
    dirs.unsendable.insert(RelPath::from(&b"secret"[..]), msg.to_string());
    let mut m = mirror(t.path(), dirs);
    assert!(transfer(&mut m, &f, &mut PassReport::default()));
    assert_eq!(m.state.failing.len(), 1);
    // The next pass: the origin sends it now; no new event names it.
    m.transport = std::rc::Rc::new(healthy);
    let mut rep = PassReport::default();
    let ignore = IgnoreSet::new("RECENT", &[]);
    m.retry_failing(&ignore, &Default::default(), &mut HashSet::new(), &mut rep).unwrap();
    assert!(m.state.failing.is_empty(), "{:?}", m.state.failing);
    assert_eq!(fs::read_to_string(t.path().join("mirror/secret")).unwrap(), "x");
    assert_eq!(rep.transferred, 1);
}

#[test]
fn a_path_the_origin_lacks_is_missing_not_failing() {
    let t = tempfile::tempdir().unwrap();
    let (dirs, f) = origin(t.path(), &[("a", "1")], &["gone", "a"]);
    let mut m = mirror(t.path(), dirs);
    let mut rep = PassReport::default();
    assert!(transfer(&mut m, &f, &mut rep));
    assert_eq!((rep.transferred, rep.vanished), (1, 1));
    assert!(m.state.failing.is_empty());
    assert!(m.state.is_missing("gone"));
    assert_eq!(done_count(&m, &f), 2);
}

#[test]
fn a_failed_call_leaves_its_chunk_undone_and_counts_the_class() {
    let t = tempfile::tempdir().unwrap();
    let (mut dirs, f) = origin(t.path(), &[("a", "1")], &["a"]);
    dirs.down = true;
    let mut m = mirror(t.path(), dirs);
    let mut rep = PassReport::default();
    assert!(!transfer(&mut m, &f, &mut rep));
    assert_eq!(rep.errors.len(), 1, "{:?}", rep.errors);
    assert!(m.state.done.get("RECENT-1h.yaml").is_none_or(|ds| !ds.covered(&f.rf.events[0].epoch)));
    assert!(!t.path().join("mirror/a").exists());
    assert_eq!(m.state.counters.errors.values().sum::<u64>(), 1);
}

#[test]
fn a_failing_hashed_path_is_retried_staged_and_checked() {
    let t = tempfile::tempdir().unwrap();
    let (mut dirs, mut f) = origin(t.path(), &[("a", "1"), ("secret", "bad!")], &["secret", "a"]);
    let digest = recentfile::beacon::FileDigest::of(b"good");
    f.rf.events[0] = f.rf.events[0].clone().with_digest(Some(digest));
    let healthy = dirs.clone();
    dirs.unsendable.insert(RelPath::from(&b"secret"[..]), "[sender] Permission denied (13)".to_string());
    let mut m = mirror(t.path(), dirs);
    let key = t.path().join("origin.pub");
    fs::write(&key, "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINspEj8YZxm1GA6VULnozLvqyVQ6rzq4QC1M464EM9hJ test\n").unwrap();
    m.trust = Some(crate::trust::TrustKeys::load(&[key]).unwrap());
    assert!(transfer(&mut m, &f, &mut PassReport::default()));
    let remembered = m.state.failing[0].expect.clone().expect("the failing path remembers its expectation");
    assert_eq!(remembered.size, Some(4));
    // The origin sends it now, with the wrong bytes: staged, refused.
    m.transport = std::rc::Rc::new(healthy.clone());
    let ignore = IgnoreSet::new("RECENT", &[]);
    m.retry_failing(&ignore, &Default::default(), &mut HashSet::new(), &mut PassReport::default()).unwrap();
    assert!(!t.path().join("mirror/secret").exists(), "a retry installed bytes its signed event does not vouch for");
    assert_eq!(m.state.tampered.len(), 1);
    assert_eq!(m.state.failing.len(), 1);
    assert!(!t.path().join("mirror/.rrr/staging").exists());
    // With the right bytes: installed, no longer tampered or failing.
    fs::write(healthy.origin.join("secret"), "good").unwrap();
    m.retry_failing(&ignore, &Default::default(), &mut HashSet::new(), &mut PassReport::default()).unwrap();
    assert_eq!(fs::read_to_string(t.path().join("mirror/secret")).unwrap(), "good");
    assert!(m.state.tampered.is_empty() && m.state.failing.is_empty(), "{:?}", m.state.tampered);
}
