//! Locks under real concurrency: the recentfile lock directory
//! shared with the Perl tools, and rrr's own flock locks. Every test runs
//! real `rrr` processes; the race that lost events is forced with a
//! failpoint rather than hoped for.

use crate::util::*;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A tree with `n` files under `d/`, indexed.
fn origin(n: usize) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("origin");
    fs::create_dir_all(root.join("d")).unwrap();
    for i in 0..n {
        fs::write(root.join(format!("d/f{i}")), format!("{i}")).unwrap();
    }
    ok(&["init", root.to_str().unwrap()]);
    (tmp, root)
}

fn lock_of(root: &Path) -> PathBuf {
    root.join("RECENT-1h.yaml.lock")
}

/// A live process standing for a Perl writer that holds a lock.
fn sleeper() -> Child {
    Command::new("sleep").arg("60").spawn().unwrap()
}

/// Take the lock the Perl way: mkdir, then write `process`.
fn perl_take(lock: &Path, pid: u32) {
    fs::create_dir(lock).unwrap();
    fs::write(lock.join("process"), format!("{pid}\n")).unwrap();
}

/// Release it the Perl way: unlink `process`, rmdir.
fn perl_release(lock: &Path) {
    fs::remove_file(lock.join("process")).unwrap();
    fs::remove_dir(lock).unwrap();
}

fn news_paths(root: &Path) -> Vec<String> {
    let news = ok(&["news", "--local", &principal(root)]);
    news.lines().map(|l| l.split('\t').nth(2).unwrap().to_string()).collect()
}

/// The race that lost events, on demand: a waiter reads the holder's pid; the
/// holder releases and exits; a third process takes the lock; then the
/// waiter decides. It must see the third process as the holder and wait,
/// not "break" a lock that is held.
#[test]
fn waiter_never_breaks_a_lock_taken_again_meanwhile() {
    let (tmp, root) = origin(1);
    let lock = lock_of(&root);
    let fp = tmp.path().join("failpoint");
    fs::create_dir(&fp).unwrap();
    let mut first = sleeper();
    perl_take(&lock, first.id());
    let mut waiter = Rrr::new()
        .args(["update", &principal(&root), root.join("d/f0").to_str().unwrap()])
        .env("RRR_FAILPOINT_LOCK_DECIDE", &fp)
        .stderr(Stdio::piped())
        .spawn();
    wait_for("the waiter to read the holder", Duration::from_secs(20), || {
        fs::read_dir(&fp).unwrap().flatten().any(|e| e.file_name().to_string_lossy().starts_with("reached."))
    });
    // The holder releases and exits; a third process takes the lock.
    perl_release(&lock);
    first.kill().unwrap();
    first.wait().unwrap();
    let mut third = sleeper();
    perl_take(&lock, third.id());
    fs::write(fp.join("go"), "").unwrap();
    // The waiter must keep waiting while the third process holds the lock.
    std::thread::sleep(Duration::from_millis(1500));
    assert!(waiter.try_wait().unwrap().is_none(), "the waiter finished while another process held the lock");
    assert_eq!(fs::read_to_string(lock.join("process")).unwrap(), format!("{}\n", third.id()));
    perl_release(&lock);
    third.kill().unwrap();
    third.wait().unwrap();
    let out = waiter.wait_with_output();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!lock.exists());
}

fn dead_pid() -> u32 {
    let mut c = Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    pid
}

/// `rrr update` of one path per process, `n` processes per writer thread.
fn update_loop(p: &str, root: &Path, names: Vec<String>) -> Vec<(String, std::process::Output)> {
    names
        .into_iter()
        .map(|rel| {
            let out = Rrr::new().args(["update", p, root.join(&rel).to_str().unwrap()]).env("TERM", "dumb").output();
            (rel, out)
        })
        .collect()
}

/// Eight writers, each a shell-like loop of `rrr update` processes, beside
/// an `aggregate --force` loop: every acknowledged event is in `news`.
/// (On the old lock a waiter "broke" locks that had been released and
/// retaken: 1–8 of ~800 events lost in 3 runs of 10.)
#[test]
fn concurrent_writers_and_aggregates_lose_nothing() {
    let (_tmp, root) = origin(1);
    let p = principal(&root);
    let mut want: Vec<String> = vec!["d/f0".into()];
    for round in 0..3 {
        let writers: Vec<Vec<String>> =
            (0..8).map(|w| (0..50).map(|i| format!("r{round}/w{w}/f{i}")).collect()).collect();
        for names in &writers {
            for rel in names {
                let f = root.join(rel);
                fs::create_dir_all(f.parent().unwrap()).unwrap();
                fs::write(&f, rel).unwrap();
            }
        }
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (results, aggregates) = std::thread::scope(|s| {
            let stop2 = stop.clone();
            let p2 = p.clone();
            let agg = s.spawn(move || {
                let mut n = 0;
                while !stop2.load(std::sync::atomic::Ordering::SeqCst) {
                    let o = rrr(&["aggregate", "--force", &p2]);
                    assert!(o.status.success(), "aggregate: {}", stderr(&o));
                    n += 1;
                }
                n
            });
            let handles: Vec<_> =
                writers.iter().map(|names| s.spawn(|| update_loop(&p, &root, names.clone()))).collect();
            let results: Vec<_> = handles.into_iter().flat_map(|h| h.join().unwrap()).collect();
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
            (results, agg.join().unwrap())
        });
        assert!(aggregates > 0);
        want.extend(writers.into_iter().flatten());
        let mut got = news_paths(&root);
        got.sort();
        want.sort();
        let acknowledged: Vec<&String> =
            results.iter().filter(|(_, out)| out.status.success()).map(|(rel, _)| rel).collect();
        let lost: Vec<&&String> = acknowledged.iter().filter(|rel| got.binary_search(rel).is_err()).collect();
        assert!(lost.is_empty(), "round {round}: acknowledged but lost: {lost:?}");
        for (rel, out) in &results {
            assert!(out.status.success(), "update {rel}: {}", String::from_utf8_lossy(&out.stderr));
            // Ordinary contention breaks and takes over nothing. A writer
            // that waited 5 s (a loaded machine) says so, and only that.
            let err = String::from_utf8_lossy(&out.stderr);
            let said: Vec<&str> = err.lines().filter(|l| !l.contains("waiting for lock")).collect();
            assert!(!said.iter().any(|l| l.contains("lock")), "ordinary contention is silent: {rel}: {err}");
        }
        assert_eq!(got, want, "round {round}: every update is in news");
    }
    let o = rrr(&["fsck", &p]);
    assert_eq!(o.status.code(), Some(0), "fsck clean: {}{}", stdout(&o), stderr(&o));
    assert!(!lock_of(&root).exists());
}

/// A holder killed with -9 leaves its lock; eight waiters arrive at once.
/// Exactly one may break it, and nobody's event is lost.
#[test]
fn dead_holder_and_eight_waiters() {
    let (_tmp, root) = origin(1);
    let p = principal(&root);
    let mut want = vec!["d/f0".to_string()];
    for round in 0..5 {
        perl_take(&lock_of(&root), dead_pid());
        let names: Vec<String> = (0..8).map(|w| format!("d/r{round}w{w}")).collect();
        for rel in &names {
            fs::write(root.join(rel), rel).unwrap();
        }
        let children: Vec<_> = names
            .iter()
            .map(|rel| Rrr::new().args(["update", &p, root.join(rel).to_str().unwrap()]).stderr(Stdio::piped()).spawn())
            .collect();
        let mut breaks = 0;
        for c in children {
            let out = c.wait_with_output();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{err}");
            breaks += err.matches("removed stale lock").count();
        }
        assert_eq!(breaks, 1, "round {round}: exactly one process breaks the stale lock");
        want.extend(names);
        let mut got = news_paths(&root);
        got.sort();
        want.sort();
        assert_eq!(got, want, "round {round}");
    }
}

/// Perl writers take the lock their way (mkdir, `process`, no breaking)
/// and write the principal in their turn, beside rrr writers.
#[test]
fn perl_way_writers_beside_rrr_writers() {
    let (_tmp, root) = origin(1);
    let p = principal(&root);
    let file = root.join("RECENT-1h.yaml");
    let lock = lock_of(&root);
    let mut want = vec!["d/f0".to_string()];
    let rrr_names: Vec<Vec<String>> = (0..4).map(|w| (0..25).map(|i| format!("rrr{w}/f{i}")).collect()).collect();
    for rel in rrr_names.iter().flatten() {
        let f = root.join(rel);
        fs::create_dir_all(f.parent().unwrap()).unwrap();
        fs::write(&f, rel).unwrap();
    }
    let perl_names: Vec<String> = (0..60).map(|i| format!("perl/f{i}")).collect();
    std::thread::scope(|s| {
        let perl = s.spawn(|| {
            for rel in &perl_names {
                // mkdir until it works; never break.
                let start = Instant::now();
                while fs::create_dir(&lock).is_err() {
                    assert!(start.elapsed() < Duration::from_secs(60), "perl writer starved");
                    std::thread::sleep(Duration::from_millis(1));
                }
                fs::write(lock.join("process"), format!("{}\n", std::process::id())).unwrap();
                let mut rf = rrr::store::read_file(&file).unwrap().unwrap();
                let now = rrr::epoch::Epoch::from_clock(
                    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64(),
                );
                let change = rrr::update::Change {
                    path: rel.clone().into(),
                    kind: rrr::recentfile::EventKind::New,
                    epoch: None,
                };
                rrr::update::batch_update(&mut rf, 3600, &[change], &now);
                let producer = rrr::recentfile::Producer { program: "perl-like".into(), time: now };
                let bytes = rrr::recentfile::serialize(&rf, rrr::recentfile::Format::Yaml, &producer);
                rrr::store::write_atomic(&file, &bytes, None).unwrap();
                perl_release(&lock);
            }
        });
        let handles: Vec<_> = rrr_names.iter().map(|names| s.spawn(|| update_loop(&p, &root, names.clone()))).collect();
        for h in handles {
            for (rel, out) in h.join().unwrap() {
                assert!(out.status.success(), "update {rel}: {}", String::from_utf8_lossy(&out.stderr));
            }
        }
        perl.join().unwrap();
    });
    want.extend(rrr_names.into_iter().flatten());
    want.extend(perl_names);
    want.sort();
    let mut got = news_paths(&root);
    got.sort();
    assert_eq!(got, want);
}

/// kill -9 between writing `process.<pid>` and renaming it: the next
/// writer cleans the leftover at once (no orphan wait), and later writers
/// find no lock at all.
#[test]
fn leftover_claim_costs_one_short_wait_once() {
    let (tmp, root) = origin(2);
    let p = principal(&root);
    let fp = tmp.path().join("failpoint");
    fs::create_dir(&fp).unwrap();
    let mut victim = Rrr::new()
        .args(["update", &p, root.join("d/f0").to_str().unwrap()])
        .env("RRR_FAILPOINT_LOCK_CLAIM", &fp)
        .spawn();
    wait_for("the claim failpoint", Duration::from_secs(20), || fs::read_dir(&fp).unwrap().next().is_some());
    victim.kill().unwrap();
    victim.wait().unwrap();
    let lock = lock_of(&root);
    let left: Vec<String> =
        fs::read_dir(&lock).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(left, vec![format!("process.{}", victim.id())]);
    let start = Instant::now();
    let o = rrr(&["update", &p, root.join("d/f1").to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        start.elapsed() < Duration::from_secs(rrr::store::ORPHAN_LOCK_SECS),
        "a dead claimant's leftover is not an orphan to wait for"
    );
    assert!(stderr(&o).contains("removed stale lock"), "{}", stderr(&o));
    assert!(!lock.exists(), "cleaned: later writers are not slowed");
    let o = rrr(&["update", &p, root.join("d/f0").to_str().unwrap()]);
    assert!(o.status.success() && stderr(&o).is_empty(), "{}", stderr(&o));
}

/// A stale lock of another user (root here, rrr running as `nobody`):
/// refused with the command its owner must run, exit 2, nothing written.
#[test]
fn stale_lock_of_another_user_names_the_fix() {
    use std::os::unix::fs::{chown, PermissionsExt};
    if !nix::unistd::geteuid().is_root() {
        panic!("this test needs root (CI runs as root) to create a lock of another user");
    }
    let (tmp, root) = origin(1);
    fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let nobody = 65534;
    for e in walkdir::WalkDir::new(&root) {
        chown(e.unwrap().path(), Some(nobody), Some(nobody)).unwrap();
    }
    perl_take(&lock_of(&root), dead_pid()); // owned by root, 0755
    let before = fs::read(root.join("RECENT-1h.yaml")).unwrap();
    let o = Rrr::new()
        .args(["update", &principal(&root), root.join("d/f0").to_str().unwrap()])
        .user(nobody, nobody)
        .output();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("belongs to root"), "{err}");
    assert!(err.contains(&format!("rm -r -- {}", lock_of(&root).display())), "{err}");
    assert_eq!(fs::read(root.join("RECENT-1h.yaml")).unwrap(), before);
}

/// SIGTERM while waiting for a lock: exit 130, nothing recorded.
#[test]
fn signal_ends_a_lock_wait_without_writing() {
    let (_tmp, root) = origin(1);
    let mut holder = sleeper();
    perl_take(&lock_of(&root), holder.id());
    let before = fs::read(root.join("RECENT-1h.yaml")).unwrap();
    let child = Rrr::new()
        .args(["update", &principal(&root), root.join("d/f0").to_str().unwrap()])
        .stderr(Stdio::piped())
        .spawn();
    // The event: rrr's SIGTERM handler is in place (it is installed before
    // the lock is sought, and the wait polls the flag it sets).
    wait_for("rrr's SIGTERM handler", Duration::from_secs(30), || catches_signal(child.id(), libc::SIGTERM));
    let _ = kill(child.id() as i32, libc::SIGTERM);
    let o = child.wait_with_output();
    assert_eq!(o.status.code(), Some(130), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(fs::read(root.join("RECENT-1h.yaml")).unwrap(), before);
    assert_eq!(fs::read_to_string(lock_of(&root).join("process")).unwrap(), format!("{}\n", holder.id()));
    holder.kill().unwrap();
    holder.wait().unwrap();
}

/// A batch with one bad path records nothing.
#[test]
fn update_is_all_or_nothing() {
    let (_tmp, root) = origin(2);
    let before = fs::read(root.join("RECENT-1h.yaml")).unwrap();
    let o = rrr(&["update", &principal(&root), root.join("d/f0").to_str().unwrap(), "/etc/passwd"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(fs::read(root.join("RECENT-1h.yaml")).unwrap(), before);
}

/// A second watch on a tree exits 75 at once, naming the first; so does
/// `init --force` while a watch runs.
#[test]
fn one_watch_per_tree() {
    let (_tmp, root) = origin(2);
    let mut first = Rrr::new().args(["watch", &principal(&root)]).stderr(Stdio::null()).spawn();
    wait_for("the first watch's heartbeat", Duration::from_secs(20), || root.join(".rrr/watch.json").exists());
    let o = rrr(&["watch", &principal(&root)]);
    assert_eq!(o.status.code(), Some(75), "{}", stderr(&o));
    assert!(stderr(&o).contains(&format!("process {}", first.id())), "{}", stderr(&o));
    assert!(stderr(&o).contains("another watch runs on this tree"), "{}", stderr(&o));
    let o = rrr(&["init", "--force", root.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(75), "{}", stderr(&o));
    assert!(stderr(&o).contains("a watch runs on this tree"), "{}", stderr(&o));
    first.kill().unwrap();
    first.wait().unwrap();
}

/// A run lock that cannot be made (`watch.flock` a directory, `.rrr/` on a
/// read-only filesystem) is reported as what failed, naming the path, exit
/// 2: never as another watch running.
#[test]
fn a_run_lock_that_cannot_be_made_is_not_another_run() {
    let (_tmp, root) = origin(1);
    let p = principal(&root);
    let check = |cause: &str| {
        for args in [vec!["watch", p.as_str()], vec!["init", "--force", s(&root)]] {
            let o = rrr(&args);
            let err = stderr(&o);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
            assert!(err.contains(".rrr/watch.flock") && err.contains(cause), "{args:?}: {err}");
            assert!(!err.contains("runs on this tree"), "{args:?}: {err}");
        }
    };
    // (init left the lock's file behind, as every run does.)
    let _ = fs::remove_file(root.join(".rrr/watch.flock"));
    fs::create_dir_all(root.join(".rrr/watch.flock")).unwrap();
    check("Is a directory");
    fs::remove_dir(root.join(".rrr/watch.flock")).unwrap();
    let ro = Tmpfs::mount(&root.join(".rrr"), "1m,ro");
    check("Read-only file system");
    ro.umount();
}

/// SIGTERM at random moments of `init --force` always leaves a readable
/// index: the old one or the new one, never none.
#[test]
fn init_force_under_sigterm_always_leaves_an_index() {
    let (_tmp, root) = origin(0);
    for i in 0..3000 {
        let d = root.join(format!("t/{}", i % 50));
        fs::create_dir_all(&d).unwrap();
        fs::write(d.join(format!("f{i}")), "x").unwrap();
    }
    ok(&["init", "--force", root.to_str().unwrap()]);
    let full = news_paths(&root).len();
    assert_eq!(full, 3000);
    let mut rng = 0x2545_f491_u64;
    let mut outcomes = std::collections::BTreeMap::new();
    for _ in 0..12 {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let delay = Duration::from_millis(rng % 400);
        let child = Rrr::new().args(["init", "--force", root.to_str().unwrap()]).stderr(Stdio::piped()).spawn();
        std::thread::sleep(delay);
        let _ = kill(child.id() as i32, libc::SIGTERM);
        let o = child.wait_with_output();
        *outcomes.entry(o.status.code()).or_insert(0) += 1;
        let news = rrr(&["news", "--local", &principal(&root)]);
        assert!(news.status.success(), "after SIGTERM at {delay:?}: no index: {}", stderr(&news));
        assert_eq!(stdout(&news).lines().count(), full, "after SIGTERM at {delay:?}: the whole index");
        assert!(matches!(o.status.code(), Some(0) | Some(130)), "{}", String::from_utf8_lossy(&o.stderr));
        let left: Vec<_> =
            fs::read_dir(root.join(".rrr")).into_iter().flatten().flatten().map(|e| e.file_name()).collect();
        assert!(left.iter().all(|n| !n.to_string_lossy().starts_with("init-")), "no build left: {left:?}");
    }
    eprintln!("init --force exits under SIGTERM: {outcomes:?}");
}

/// A full disk when an update creates the recentfile's lock: exit 2 naming
/// the lock and the cause once (the I/O error is the source, not repeated
/// in the message), nothing recorded, the index still readable.
#[test]
fn a_full_disk_at_a_recentfile_lock_names_the_lock_and_the_cause_once() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("origin");
    let _mnt = Tmpfs::mount(&root, "1m,nr_inodes=64");
    fs::create_dir_all(root.join("d")).unwrap();
    fs::write(root.join("d/new"), "x").unwrap();
    ok(&["init", root.to_str().unwrap()]);
    let before = fs::read(root.join("RECENT-1h.yaml")).unwrap();
    // Use up every inode: the lock directory cannot be created.
    for i in 0.. {
        if fs::write(root.join(format!("filler-{i}")), "").is_err() {
            break;
        }
    }
    let o = rrr(&["update", &principal(&root), root.join("d/new").to_str().unwrap()]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("RECENT-1h.yaml.lock"), "{err}");
    assert_eq!(err.matches("No space left on device").count(), 1, "{err}");
    assert_eq!(fs::read(root.join("RECENT-1h.yaml")).unwrap(), before);
    ok(&["news", "--local", &principal(&root)]);
}
