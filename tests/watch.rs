//! `rrr watch` with real inotify on temp trees: the daemon is the real
//! binary in a child process; the tests change the tree and poll the index
//! (`rrr news`, `rrr fsck`) with generous timeouts. No sleep is a timing
//! goal: every wait polls for the expected state.

use crate::util::*;
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub(crate) const WAIT: Duration = Duration::from_secs(60);

/// A running `rrr watch`, killed when dropped.
pub(crate) struct Daemon {
    child: Option<Running>,
    log: PathBuf,
}

impl Daemon {
    pub(crate) fn start(root: &Path, extra: &[&str]) -> Daemon {
        Daemon::start_under(&[], root, extra)
    }

    /// Start it through `wrapper` (e.g. `prlimit --as=N --`), which execs it.
    pub(crate) fn start_under(wrapper: &[&str], root: &Path, extra: &[&str]) -> Daemon {
        let log = root.parent().unwrap().join(format!("watch-{}.log", std::process::id()));
        let log = unique(log);
        let err = fs::File::create(&log).unwrap();
        let mut args = vec!["watch", root.to_str().unwrap(), "--json-log"];
        if !extra.contains(&"--batch-delay") {
            args.extend_from_slice(&["--batch-delay", "200"]);
        }
        args.extend_from_slice(extra);
        let child = Rrr::wrapped(wrapper).args(&args).stdout(Stdio::null()).stderr(err).spawn();
        let d = Daemon { child: Some(child), log };
        d.wait_log("\"kind\":\"start\"");
        d
    }

    /// Whether it still runs (it did not crash or abort).
    pub(crate) fn running(&mut self) -> bool {
        self.child.as_mut().unwrap().try_wait().unwrap().is_none()
    }

    fn pid(&self) -> i32 {
        self.child.as_ref().unwrap().id() as i32
    }

    pub(crate) fn log(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    #[track_caller]
    pub(crate) fn wait_log(&self, needle: &str) {
        let ok = poll_until(WAIT, || self.log().contains(needle));
        assert!(ok, "log never showed {needle}:\n{}", self.log());
    }

    fn signal(&self, sig: i32) {
        assert_eq!(kill(self.pid(), sig), Ok(()));
    }

    /// SIGTERM and wait: returns the exit code.
    pub(crate) fn stop(mut self) -> (i32, String) {
        self.signal(libc::SIGTERM);
        let mut child = self.child.take().unwrap();
        let t0 = Instant::now();
        loop {
            if let Some(st) = child.try_wait().unwrap() {
                return (st.code().unwrap_or(-1), self.log());
            }
            assert!(t0.elapsed() < WAIT, "rrr watch did not stop on SIGTERM:\n{}", self.log());
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
            eprintln!("--- watch log ---\n{}", fs::read_to_string(&self.log).unwrap_or_default());
        }
    }
}

fn unique(p: PathBuf) -> PathBuf {
    let mut n = 0;
    loop {
        let c = p.with_extension(format!("{n}.log"));
        if !c.exists() {
            return c;
        }
        n += 1;
    }
}

/// A temp dir holding `root/` with an indexed tree.
pub(crate) fn tree(files: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    fs::create_dir(&root).unwrap();
    for f in files {
        write(&root, f, f);
    }
    ok(&["init", root.to_str().unwrap()]);
    (tmp, root)
}

/// The wall clock now, as a Unix time.
fn unix_now() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64()
}

/// Wait until the daemon's heartbeat file says every change before `t`
/// is in the index (`synced_to` at or after `t`): a marker written at or
/// after `t` came back through the kernel queue.
fn wait_synced_to(root: &Path, t: f64) {
    let synced_to = || -> Option<f64> {
        let hb: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(root.join(".rrr/watch.json")).ok()?).ok()?;
        hb["synced_to"].as_str()?.parse().ok()
    };
    wait_for(&format!("synced_to at or after {t}"), WAIT, || synced_to().is_some_and(|s| s >= t));
}

/// Each path's newest event: path -> (epoch, type).
pub(crate) fn news(root: &Path) -> HashMap<String, (String, String)> {
    let out = ok(&["news", "--json", "--local", root.to_str().unwrap()]);
    out.lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let s = |k: &str| v[k].as_str().unwrap().to_string();
            (s("path"), (s("epoch"), s("type")))
        })
        .collect()
}

pub(crate) fn kind_of(root: &Path, path: &str) -> Option<String> {
    news(root).get(path).map(|(_, t)| t.clone())
}

#[track_caller]
pub(crate) fn wait_kind(root: &Path, path: &str, kind: &str) {
    let ok = poll_until(WAIT, || kind_of(root, path).as_deref() == Some(kind));
    assert!(ok, "{path} never became {kind}: {:?}", news(root).get(path));
}

/// fsck's tree/index findings (missing_in_index, missing_on_disk).
fn differences(root: &Path) -> Vec<String> {
    differences_excluding(root, &[])
}

fn differences_excluding(root: &Path, extra: &[&str]) -> Vec<String> {
    let mut args = vec!["fsck", "--json", root.to_str().unwrap()];
    args.extend_from_slice(extra);
    let o = rrr(&args);
    stdout(&o)
        .lines()
        .filter(|l| l.contains("missing_in_index") || l.contains("missing_on_disk"))
        .map(str::to_string)
        .collect()
}

pub(crate) fn fsck_clean(root: &Path) -> bool {
    rrr(&["fsck", root.to_str().unwrap()]).status.success()
}

#[track_caller]
pub(crate) fn wait_fsck_clean(root: &Path) {
    let ok = poll_until(WAIT, || fsck_clean(root));
    let o = rrr(&["fsck", root.to_str().unwrap()]);
    assert!(ok, "fsck never clean:\n{}{}", stdout(&o), stderr(&o));
}

#[test]
fn create_modify_delete_rename_and_ignore_set() {
    let (_tmp, root) = tree(&["keep", "old", "victim"]);
    let d = Daemon::start(&root, &["--exclude", "*.tmp"]);
    write(&root, "a/new.txt", "x");
    wait_kind(&root, "a/new.txt", "new");

    let before = news(&root)["old"].0.clone();
    write(&root, "old", "changed");
    let ok = poll_until(WAIT, || rrr::epoch::cmp_epochs(&news(&root)["old"].0, &before).is_gt());
    assert!(ok, "modification of old not recorded");

    fs::remove_file(root.join("victim")).unwrap();
    wait_kind(&root, "victim", "delete");

    fs::rename(root.join("a/new.txt"), root.join("renamed.txt")).unwrap();
    wait_kind(&root, "renamed.txt", "new");
    wait_kind(&root, "a/new.txt", "delete");

    // The ignore set: --exclude, rrr's own files.
    write(&root, "skip.tmp", "x");
    write(&root, "RECENT-1h.yaml.new", "x");
    fs::remove_file(root.join("RECENT-1h.yaml.new")).unwrap();
    write(&root, "marker", "x");
    wait_kind(&root, "marker", "new");
    let n = news(&root);
    for p in ["skip.tmp", "RECENT-1h.yaml.new"] {
        assert!(!n.contains_key(p), "{p} recorded");
    }
    // Attribute-only changes are ignored.
    let keep = n["keep"].clone();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(root.join("keep"), fs::Permissions::from_mode(0o600)).unwrap();
    write(&root, "marker2", "x");
    wait_kind(&root, "marker2", "new");
    assert_eq!(news(&root)["keep"], keep, "a touch of attributes was recorded");

    assert_eq!(differences_excluding(&root, &["--exclude", "*.tmp"]), Vec::<String>::new());
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    // One flat JSON object per line, as README.mirror documents it.
    #[derive(serde::Deserialize)]
    #[allow(dead_code)]
    struct Line {
        kind: String,
        time: String,
        timestamp: String,
        level: String,
        root: String,
        message: String,
    }
    #[derive(serde::Deserialize)]
    #[allow(dead_code)]
    struct Batch {
        events: u64,
        changes: u64,
        new: u64,
        delete: u64,
        latency_ms: u64,
        record_ms: u64,
    }
    let absolute_root = std::path::absolute(&root).unwrap();
    for l in log.lines() {
        let v: Line = serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}"));
        assert_eq!(Path::new(&v.root), absolute_root, "{l}");
        assert!(v.time.parse::<f64>().is_ok() && v.timestamp.ends_with('Z') && v.level == "info", "{l}");
        if v.kind == "batch" {
            serde_json::from_str::<Batch>(l).unwrap_or_else(|e| panic!("{l}: {e}"));
        }
    }
    assert!(log.contains("\"kind\":\"batch\""), "{log}");
}

#[test]
fn directory_tree_moved_in_and_out() {
    let (tmp, root) = tree(&["keep"]);
    let outside = tmp.path().join("outside");
    for f in ["t/a", "t/b/c", "t/b/d/e"] {
        write(&outside, f, f);
    }
    let d = Daemon::start(&root, &[]);
    fs::rename(outside.join("t"), root.join("t")).unwrap();
    for f in ["t/a", "t/b/c", "t/b/d/e"] {
        wait_kind(&root, f, "new");
    }
    // Files written into the moved-in tree are seen (it is watched).
    write(&root, "t/b/d/later", "x");
    wait_kind(&root, "t/b/d/later", "new");

    // A rename inside the tree: delete plus new.
    fs::rename(root.join("t/b"), root.join("t/b2")).unwrap();
    for f in ["t/b2/c", "t/b2/d/e", "t/b2/d/later"] {
        wait_kind(&root, f, "new");
    }
    for f in ["t/b/c", "t/b/d/e", "t/b/d/later"] {
        wait_kind(&root, f, "delete");
    }
    // Its watches follow it: a file written there now has the new name.
    write(&root, "t/b2/d/after", "x");
    wait_kind(&root, "t/b2/d/after", "new");
    assert!(!news(&root).contains_key("t/b/d/after"), "a moved directory's file recorded under its old name");
    // A tree removed with rm -r: each file's delete is recorded.
    for f in ["r/s/t/1", "r/s/2", "r/3"] {
        write(&root, f, "x");
        wait_kind(&root, f, "new");
    }
    fs::remove_dir_all(root.join("r")).unwrap();
    for f in ["r/s/t/1", "r/s/2", "r/3"] {
        wait_kind(&root, f, "delete");
    }
    // Moved out: everything under it deleted.
    fs::rename(root.join("t"), tmp.path().join("gone")).unwrap();
    for f in ["t/a", "t/b2/c", "t/b2/d/e", "t/b2/d/later", "t/b2/d/after"] {
        wait_kind(&root, f, "delete");
    }
    // The old watches are gone: writes out there are not recorded.
    write(&tmp.path().join("gone"), "b2/x", "x");
    write(&root, "marker", "x");
    wait_kind(&root, "marker", "new");
    assert!(!news(&root).keys().any(|p| p.ends_with("/x")), "{:?}", news(&root));
    assert_eq!(differences(&root), Vec::<String>::new());
    assert_eq!(d.stop().0, 0);
}

#[test]
fn new_directories_filled_immediately() {
    let (_tmp, root) = tree(&["keep"]);
    let d = Daemon::start(&root, &[]);
    // Another process: mkdir then write at once, nested, many times.
    let script = "for i in $(seq 1 40); do mkdir -p d$i/x/y && echo a > d$i/f && echo b > d$i/x/y/g && \
                  mkdir d$i/z && : > d$i/z/empty; done";
    let st = Command::new("sh").arg("-c").arg(script).current_dir(&root).status().unwrap();
    assert!(st.success());
    let ok = poll_until(WAIT, || {
        let n = news(&root);
        (1..=40).all(|i| {
            [format!("d{i}/f"), format!("d{i}/x/y/g"), format!("d{i}/z/empty")]
                .iter()
                .all(|p| n.get(p).is_some_and(|(_, t)| t == "new"))
        })
    });
    assert!(ok, "files in new directories missing: {:?}", differences(&root));
    assert_eq!(differences(&root), Vec::<String>::new());
    assert_eq!(d.stop().0, 0);
}

#[test]
fn burst_of_10000_files_then_fsck_clean() {
    let (_tmp, root) = tree(&["keep"]);
    let d = Daemon::start(&root, &[]);
    let script = "for d in 0 1 2 3 4 5 6 7 8 9; do mkdir -p b/$d; done; \
                  i=0; while [ $i -lt 10000 ]; do echo $i > b/$((i % 10))/f$i; i=$((i+1)); done";
    let st = Command::new("sh").arg("-c").arg(script).current_dir(&root).status().unwrap();
    assert!(st.success());
    let t0 = Instant::now();
    wait_fsck_clean(&root);
    eprintln!("10k burst: fsck clean {:?} after the last write", t0.elapsed());
    let n = news(&root);
    assert_eq!(n.keys().filter(|p| p.starts_with("b/")).count(), 10_000);
    assert_eq!(d.stop().0, 0);
}

#[test]
fn forced_overflow_is_recovered() {
    let max: usize = fs::read_to_string("/proc/sys/fs/inotify/max_queued_events").unwrap().trim().parse().unwrap();
    let (_tmp, root) = tree(&["keep"]);
    let d = Daemon::start(&root, &[]);
    write(&root, "pre/modified", "1");
    write(&root, "pre/deleted", "1");
    wait_kind(&root, "pre/modified", "new");
    wait_kind(&root, "pre/deleted", "new");
    // The directories exist and are watched before the stop, so that the
    // writes fill the kernel queue.
    for i in 0..20 {
        write(&root, &format!("o/{i}/ready"), "x");
    }
    for i in 0..20 {
        wait_kind(&root, &format!("o/{i}/ready"), "new");
    }
    let before = news(&root)["pre/modified"].0.clone();
    // A heartbeat marker written after those records comes back, so the
    // rescan has a recent lower bound.
    wait_synced_to(&root, unix_now());

    d.signal(libc::SIGSTOP);
    let n = max + 1000;
    for i in 0..n {
        write(&root, &format!("o/{}/f{i}", i % 20), "x");
    }
    write(&root, "pre/modified", "2");
    fs::remove_file(root.join("pre/deleted")).unwrap();
    d.signal(libc::SIGCONT);

    d.wait_log("\"kind\":\"rescan\"");
    wait_fsck_clean(&root);
    let nw = news(&root);
    assert_eq!(nw.keys().filter(|p| p.starts_with("o/")).count(), n + 20);
    assert_eq!(nw["pre/deleted"].1, "delete");
    assert!(rrr::epoch::cmp_epochs(&nw["pre/modified"].0, &before).is_gt(), "modification lost in the overflow");
    let (code, log) = d.stop();
    eprintln!("{log}");
    assert_eq!(code, 0);
}

#[test]
fn hard_link_symlink_and_empty_file_recorded() {
    let (_tmp, root) = tree(&["keep", "target"]);
    let d = Daemon::start(&root, &[]);
    fs::hard_link(root.join("target"), root.join("hardlink")).unwrap();
    std::os::unix::fs::symlink("target", root.join("symlink")).unwrap();
    fs::File::create(root.join("empty")).unwrap();
    let st = Command::new("touch").arg(root.join("touched")).status().unwrap();
    assert!(st.success());
    for f in ["hardlink", "symlink", "empty", "touched"] {
        wait_kind(&root, f, "new");
    }
    assert_eq!(differences(&root), Vec::<String>::new());
    assert_eq!(d.stop().0, 0);
}

#[test]
fn sigterm_flushes_and_restart_records_offline_changes() {
    let (_tmp, root) = tree(&["keep", "modify-me", "delete-me"]);
    // A long batch delay: only the SIGTERM flush can record this file.
    let d = Daemon::start(&root, &["--batch-delay", "600000"]);
    write(&root, "written-before-stop", "x");
    // fsck compares whole seconds: the stop's heartbeat (its synced_to,
    // less the daemon's 0.05 s of clock slack) must lie in a second after
    // the one in which `keep` last changed, so that it is provably older.
    // Nothing the daemon does says so: the clock itself is waited for.
    let kept = {
        use std::os::unix::fs::MetadataExt;
        let m = fs::symlink_metadata(root.join("keep")).unwrap();
        m.mtime().max(m.ctime())
    };
    wait_for("the clock a second past keep's change", WAIT, || unix_now() >= kept as f64 + 1.05);
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    assert_eq!(kind_of(&root, "written-before-stop").as_deref(), Some("new"), "{log}");
    let before = news(&root);

    // While down: add, delete, modify. Each change's mtime is at or after
    // the stop's synced_to, so the start-up comparison looks at it.
    write(&root, "added-offline", "x");
    fs::remove_file(root.join("delete-me")).unwrap();
    write(&root, "modify-me", "changed");

    let d = Daemon::start(&root, &[]);
    let after = news(&root);
    assert_eq!(after["added-offline"].1, "new");
    assert_eq!(after["delete-me"].1, "delete");
    assert!(
        rrr::epoch::cmp_epochs(&after["modify-me"].0, &before["modify-me"].0).is_gt(),
        "offline modification not recorded: {:?} vs {:?}",
        after["modify-me"],
        before["modify-me"]
    );
    assert_eq!(after["keep"], before["keep"], "an unchanged file was recorded again");
    let hb = root.join(".rrr/watch.json");
    let hb: serde_json::Value = serde_json::from_str(&fs::read_to_string(&hb).unwrap()).unwrap();
    assert!(hb["synced_to"].is_string(), "{hb}");
    assert_eq!(d.stop().0, 0);
}

/// The batch lines of the daemon's JSON log so far.
fn batch_lines(d: &Daemon) -> Vec<serde_json::Value> {
    d.log().lines().filter(|l| l.contains("\"kind\":\"batch\"")).map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// The events of the batch that recorded `path` (from the JSON log): the
/// batch line after the first `before` ones, once `path` is in the index.
/// The daemon logs a batch after its record, so the index may show the
/// path before the line is there: wait for it.
fn events_of_batch_recording(d: &Daemon, root: &Path, path: &str, before: usize) -> u64 {
    wait_kind(root, path, "new");
    let ok = poll_until(WAIT, || batch_lines(d).len() > before);
    assert!(ok, "no batch line after {path} was recorded:\n{}", d.log());
    batch_lines(d).last().map(|b| b["events"].as_u64().unwrap()).expect("a batch line")
}

#[test]
fn reads_of_the_tree_do_not_wake_the_daemon() {
    let files: Vec<String> = (0..200).map(|i| format!("r/{}/f{i}", i % 10)).collect();
    let refs: Vec<&str> = files.iter().map(String::as_str).collect();
    let (_tmp, root) = tree(&refs);
    let d = Daemon::start(&root, &[]);
    // The start's cascade writes the recentfiles (about a hundred events
    // at the root): done before the measured batches begin, not in them.
    d.wait_log("\"kind\":\"aggregate\"");
    let before = batch_lines(&d).len();
    write(&root, "first", "x");
    events_of_batch_recording(&d, &root, "first", before);
    // What a mirror's rsync does to every file and directory: open, read, close.
    for _ in 0..5 {
        for f in &files {
            assert_eq!(fs::read_to_string(root.join(f)).unwrap(), *f);
        }
        for i in 0..10 {
            assert_eq!(fs::read_dir(root.join(format!("r/{i}"))).unwrap().count(), 20);
        }
    }
    let before = batch_lines(&d).len();
    write(&root, "second", "x");
    // The marker's own events and a heartbeat's; reading 1000 files used to
    // add three events each (open, access, close).
    let events = events_of_batch_recording(&d, &root, "second", before);
    assert!(events < 100, "{events} events for one new file after 1000 reads:\n{}", d.log());
    assert_eq!(d.stop().0, 0);
}

#[test]
fn slow_upload_recorded_when_closed_not_when_opened() {
    use std::io::Write;
    let (_tmp, root) = tree(&["keep"]);
    // The default batch delay: a file opened and not written yet is kept
    // back for ten of them.
    let d = Daemon::start(&root, &["--batch-delay", "1000"]);
    let mut up = fs::File::create(root.join("upload.tar.gz")).unwrap();
    // Batches come and go while it is open, before and after its first write.
    write(&root, "marker1", "x");
    wait_kind(&root, "marker1", "new");
    assert_eq!(kind_of(&root, "upload.tar.gz"), None, "announced when opened");
    up.write_all(b"first half").unwrap();
    up.flush().unwrap();
    write(&root, "marker2", "x");
    wait_kind(&root, "marker2", "new");
    assert_eq!(kind_of(&root, "upload.tar.gz"), None, "announced half-written");
    up.write_all(b", second half").unwrap();
    drop(up);
    wait_kind(&root, "upload.tar.gz", "new");
    assert_eq!(differences(&root), Vec::<String>::new());
    assert_eq!(d.stop().0, 0);
}

#[test]
fn link_whose_first_name_is_gone_and_unwritten_open_recorded() {
    let (_tmp, root) = tree(&["keep", "target"]);
    let d = Daemon::start(&root, &["--batch-delay", "200"]);
    // A hard link whose other name goes away at once: one link left, but
    // link(2) gave it a ctime newer than its mtime, so no open made it.
    fs::hard_link(root.join("target"), root.join("moved-by-link")).unwrap();
    fs::remove_file(root.join("target")).unwrap();
    write(&root, "marker", "x");
    wait_kind(&root, "marker", "new");
    assert_eq!(kind_of(&root, "moved-by-link").as_deref(), Some("new"), "not recorded with the batch after it");
    wait_kind(&root, "target", "delete");
    // Created by an open for reading only: no write, no close-write ever
    // comes. It is recorded after its wait (ten batch delays).
    // (std's OpenOptions wants write access to create a file.)
    use nix::{fcntl::OFlag, sys::stat::Mode};
    let fd = nix::fcntl::open(
        &root.join("opened-read-only"),
        OFlag::O_CREAT | OFlag::O_RDONLY,
        Mode::from_bits_truncate(0o644),
    );
    drop(fd.expect("open(O_CREAT | O_RDONLY)"));
    wait_kind(&root, "opened-read-only", "new");
    assert_eq!(differences(&root), Vec::<String>::new());
    assert_eq!(d.stop().0, 0);
}

/// A watch whose log stream closes (`2>&1 | head -1`) records what it
/// has, writes its heartbeat and exits 1, so that a supervisor restarts
/// it; never a panic.
#[test]
fn a_closed_log_stops_the_daemon_with_1() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("t");
    fs::create_dir_all(&root).unwrap();
    ok(&["init", root.to_str().unwrap()]);
    let mut child = Rrr::new()
        .args(["watch", root.to_str().unwrap(), "--batch-delay", "100"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn();
    {
        use std::io::BufRead;
        let mut line = String::new();
        std::io::BufReader::new(child.stderr.take().unwrap()).read_line(&mut line).unwrap();
        assert!(line.contains("watching"), "{line}");
    }
    // The next log line (this batch) finds the log closed.
    fs::write(root.join("after-close"), "x").unwrap();
    let t0 = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(t0.elapsed() < WAIT, "watch went on with its log closed");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(1), "{status:?}");
    assert_eq!(kind_of(&root, "after-close").as_deref(), Some("new"), "recorded before it stopped");
}

/// No name is special by accident (issue 31): files named like rsync's
/// temp files (`.env.sample`) or near rrr's own are recorded like any.
#[test]
fn names_that_only_look_special_are_recorded() {
    let (_tmp, root) = tree(&["keep"]);
    let d = Daemon::start(&root, &[]);
    let names = [".env.sample", "www/.htaccess.backup", ".bashrc.custom", "RECENT-1h.yaml.backup", "notes.new"];
    for n in names {
        write(&root, n, "x");
    }
    for n in names {
        wait_kind(&root, n, "new");
    }
    fs::remove_file(root.join(".env.sample")).unwrap();
    wait_kind(&root, ".env.sample", "delete");
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
}

/// A file named like an rsync temp file and changed just before the daemon
/// starts is left out of the start-up comparison as a temp file in flight,
/// then looked at again: nothing else would ever record it.
#[test]
fn a_young_file_named_like_an_rsync_temp_at_start_up_is_recorded() {
    let (_tmp, root) = tree(&["keep"]);
    write(&root, ".env.sample", "x");
    let d = Daemon::start(&root, &[]);
    wait_kind(&root, ".env.sample", "new");
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
}

/// rsync delivering into a watched tree writes each file as a temp file
/// `.NAME.XXXXXX` beside it and renames it: the index lists the files,
/// never an event of a temp name (a file made and gone again within a
/// batch says nothing, whether or not the daemon read the index).
#[test]
fn rsync_temp_files_of_a_delivery_leave_no_event() {
    let (tmp, root) = tree(&["up/keep"]);
    let src = tmp.path().join("src");
    let names: Vec<String> = (0..20).map(|i| format!("up/f{i}.tar.gz")).collect();
    for n in &names {
        write(&src, n, n);
    }
    let d = Daemon::start(&root, &[]);
    let st = Command::new("rsync").arg("-a").arg(format!("{}/", src.display())).arg(&root).status().unwrap();
    assert!(st.success());
    for n in &names {
        wait_kind(&root, n, "new");
    }
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    let temps: Vec<String> = news(&root).into_keys().filter(|p| p.contains("/.f")).collect();
    assert!(temps.is_empty(), "events of rsync's temp files: {temps:?}");
}
