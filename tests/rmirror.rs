//! `rrr rmirror` against a real `rsync --daemon` on 127.0.0.1: origins are
//! built with the real `rrr init/update/aggregate` (or, for hostile
//! indexes, written by hand), mirrored, changed, and compared file by file.

use crate::util::rsyncd::RsyncDaemon;
use crate::util::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// An origin of `n` files in a few directories, indexed and aggregated.
fn make_origin(root: &Path, n: usize) {
    for i in 0..n {
        write(root, &format!("id/{}/f{i:03}.txt", (b'A' + (i % 5) as u8) as char), &format!("file {i}\n"));
    }
    ok(&["init", "--aggregate", s(root)]);
}

/// Origin changes: `new` files (written) and `delete` files (removed), recorded and aggregated.
fn change(root: &Path, new: &[&str], delete: &[&str]) {
    for p in new {
        write(root, p, &format!("new content of {p}\n"));
    }
    for p in delete {
        fs::remove_file(root.join(p)).unwrap();
    }
    let mut stdin = String::new();
    for p in new {
        stdin.push_str(&format!("new {p}\n"));
    }
    for p in delete {
        stdin.push_str(&format!("delete {p}\n"));
    }
    Rrr::new().args(["update", "--stdin", &principal(root)]).stdin(stdin).assert_ok();
    ok(&["aggregate", &principal(root)]);
}

fn rmirror_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Rrr::new();
    c.arg("rmirror").args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output()
}

fn rmirror(args: &[&str]) -> Output {
    rmirror_env(args, &[])
}

/// Run a pass with --json; assert exit `code`; return the pass object.
#[track_caller]
fn pass(src: &str, target: &Path, extra: &[&str], code: i32) -> Value {
    let mut args = vec!["--remote", src, "--localroot", s(target), "--json"];
    args.extend_from_slice(extra);
    let o = rmirror(&args);
    assert_eq!(o.status.code(), Some(code), "rmirror {args:?}\nstdout: {}\nstderr: {}", stdout(&o), stderr(&o));
    let line = stdout(&o).lines().last().unwrap_or_default().to_string();
    let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}\n{}", stderr(&o)));
    assert_eq!(v["kind"], "pass");
    v
}

/// rel path -> content (files) or "-> target" (symlinks), without rrr's
/// state and without the recentfiles.
fn tree(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for de in walkdir::WalkDir::new(root).min_depth(1) {
        let de = de.unwrap();
        let rel = de.path().strip_prefix(root).unwrap().to_str().unwrap().to_string();
        if rel.starts_with(".rrr") || rel.starts_with("RECENT") || de.file_type().is_dir() {
            continue;
        }
        let v = if de.file_type().is_symlink() {
            format!("-> {}", fs::read_link(de.path()).unwrap().display())
        } else {
            fs::read_to_string(de.path()).unwrap()
        };
        out.insert(rel, v);
    }
    out
}

#[track_caller]
fn assert_same_tree(a: &Path, b: &Path) {
    let (ta, tb) = (tree(a), tree(b));
    assert!(!ta.is_empty());
    let only_a: Vec<&String> = ta.keys().filter(|k| !tb.contains_key(*k)).collect();
    let only_b: Vec<&String> = tb.keys().filter(|k| !ta.contains_key(*k)).collect();
    let differ: Vec<&String> = ta.keys().filter(|k| tb.get(*k).is_some_and(|v| v != &ta[*k])).collect();
    assert!(
        only_a.is_empty() && only_b.is_empty() && differ.is_empty(),
        "trees differ: only in {}: {only_a:?}; only in {}: {only_b:?}; content differs: {differ:?}",
        a.display(),
        b.display()
    );
}

fn state(target: &Path) -> Value {
    serde_json::from_slice(&fs::read(target.join(".rrr/state.json")).unwrap()).unwrap()
}

/// No temp files of ours (or the Perl client's) left in the target.
#[track_caller]
fn assert_no_temp_left(target: &Path) {
    let mut names: Vec<String> =
        fs::read_dir(target).unwrap().flatten().map(|e| e.file_name().to_str().unwrap().to_string()).collect();
    names.extend(
        fs::read_dir(target.join(".rrr"))
            .unwrap()
            .flatten()
            .map(|e| format!(".rrr/{}", e.file_name().to_str().unwrap())),
    );
    if let Ok(rd) = fs::read_dir(target.join(".rrr/tmp")) {
        names.extend(rd.flatten().map(|e| format!(".rrr/tmp/{}", e.file_name().to_str().unwrap())));
    }
    for n in names {
        assert!(!n.starts_with(".rrr/tmp/"), "rsync temp file left over: {n}");
        assert!(!n.contains("FRMRecent") && !n.contains("fetch-") && !n.contains("files-from"), "left over: {n}");
    }
}

struct Setup {
    _tmp: tempfile::TempDir,
    origin: PathBuf,
    target: PathBuf,
    daemon: RsyncDaemon,
}

impl Setup {
    fn new(n: usize) -> Setup {
        let tmp = tempfile::tempdir().unwrap();
        let origin = tmp.path().join("origin");
        let target = tmp.path().join("target");
        make_origin(&origin, n);
        let daemon = RsyncDaemon::start(&[("origin", &origin)]);
        Setup { _tmp: tmp, origin, target, daemon }
    }
    fn src(&self) -> String {
        format!("{}/RECENT.recent", self.daemon.url("origin"))
    }
}

#[test]
fn full_mirror_then_incremental_news_and_deletes() {
    let t = Setup::new(30);
    let v = pass(&t.src(), &t.target, &[], 0);
    assert_eq!(v["bootstrap"], true, "{v}");
    assert_eq!(v["complete"], true, "{v}");
    assert_same_tree(&t.origin, &t.target);
    // The recentfiles are installed, the principal link too.
    assert_eq!(fs::read_link(t.target.join("RECENT.recent")).unwrap(), Path::new("RECENT-1h.yaml"));
    for iv in ["1h", "6h", "Z"] {
        assert!(t.target.join(format!("RECENT-{iv}.yaml")).exists(), "{iv}");
    }
    assert_no_temp_left(&t.target);
    let st = state(&t.target);
    assert_eq!(st["remote"], t.src());
    assert!(st["last_complete"].is_string(), "{st}");

    change(
        &t.origin,
        &["id/N/new1.txt", "id/N/new2.txt", "id/A/f000.txt", "top.txt"],
        &["id/B/f001.txt", "id/C/f002.txt"],
    );
    let v = pass(&t.src(), &t.target, &[], 0);
    assert_eq!(v["bootstrap"], false, "{v}");
    assert_eq!(v["transferred"], 4, "{v}");
    assert_eq!(v["deleted"], 2, "{v}");
    assert_eq!(v["read"], serde_json::json!(["RECENT-1h.yaml"]), "only the principal is needed: {v}");
    assert_same_tree(&t.origin, &t.target);
    assert_no_temp_left(&t.target);
    // The mirror's principal lists the new files (installed after them).
    let ours = fs::read_to_string(t.target.join("RECENT-1h.yaml")).unwrap();
    assert!(ours.contains("id/N/new2.txt"));

    // Nothing new: nothing transferred.
    let v = pass(&t.src(), &t.target, &[], 0);
    assert_eq!(v["transferred"], 0, "{v}");
    assert_eq!(v["deleted"], 0, "{v}");
}

#[test]
fn relative_localroot_bootstraps_and_updates() {
    // rsync resolves a relative --temp-dir against the destination, so the
    // temp dir under a relative --localroot must be passed absolute.
    let t = Setup::new(10);
    let cwd = t.target.parent().unwrap();
    let run = || {
        let o = Rrr::new()
            .current_dir(cwd)
            .args(["rmirror", "--remote", &t.src(), "--localroot", "target", "--json"])
            .env("TERM", "dumb")
            .output();
        assert_eq!(o.status.code(), Some(0), "stdout: {}\nstderr: {}", stdout(&o), stderr(&o));
    };
    run();
    assert_same_tree(&t.origin, &t.target);
    change(&t.origin, &["id/N/rel1.txt"], &[]);
    run();
    assert_same_tree(&t.origin, &t.target);
    assert_no_temp_left(&t.target);
}

#[test]
fn skip_deletes_keeps_files_and_dry_run_changes_nothing() {
    let t = Setup::new(10);
    pass(&t.src(), &t.target, &[], 0);
    change(&t.origin, &["id/new.txt"], &["id/A/f000.txt"]);

    let before = tree(&t.target);
    let st_before = fs::read(t.target.join(".rrr/state.json")).unwrap();
    let o = rmirror(&["--remote", &t.src(), "--localroot", s(&t.target), "--dry-run"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "new id/new.txt\ndelete id/A/f000.txt\n");
    assert_eq!(tree(&t.target), before, "dry run changed the tree");
    assert_eq!(fs::read(t.target.join(".rrr/state.json")).unwrap(), st_before, "dry run changed the state");

    let v = pass(&t.src(), &t.target, &["--skip-deletes"], 0);
    assert_eq!(v["deletes_skipped"], 1, "{v}");
    assert!(t.target.join("id/A/f000.txt").exists());
    assert!(t.target.join("id/new.txt").exists());
    // A skipped delete is done: a later pass without the flag leaves it too.
    let v = pass(&t.src(), &t.target, &[], 0);
    assert_eq!(v["deleted"], 0, "{v}");
}

#[test]
fn killed_mid_transfer_resumes_without_recopying() {
    let t = Setup::new(5);
    pass(&t.src(), &t.target, &[], 0);
    let news: Vec<String> = (0..20).map(|i| format!("batch/n{i:02}.txt")).collect();
    let refs: Vec<&str> = news.iter().map(String::as_str).collect();
    change(&t.origin, &refs, &[]);
    // Aborted (no cleanup, like kill -9) after 2 chunks of 5.
    let o = rmirror_env(
        &["--remote", &t.src(), "--localroot", s(&t.target), "--max-files-per-connection", "5"],
        &[("RRR_TEST_ABORT_AT", "after-chunk:2")],
    );
    assert_eq!(o.status.code(), None, "expected death by signal: {}", stderr(&o));
    let present = news.iter().filter(|p| t.target.join(p).exists()).count();
    assert_eq!(present, 10, "two chunks of five arrived");
    // The newest chunk goes first.
    assert!(t.target.join("batch/n19.txt").exists() && !t.target.join("batch/n00.txt").exists());
    let v = pass(&t.src(), &t.target, &["--max-files-per-connection", "5"], 0);
    assert_eq!(v["transferred"], 10, "only the rest is transferred: {v}");
    assert_same_tree(&t.origin, &t.target);
    assert_no_temp_left(&t.target);
}

#[test]
fn killed_between_transfers_and_deletes_loses_no_delete() {
    let t = Setup::new(10);
    pass(&t.src(), &t.target, &[], 0);
    change(&t.origin, &["id/new.txt"], &["id/A/f000.txt", "id/B/f001.txt"]);
    let o =
        rmirror_env(&["--remote", &t.src(), "--localroot", s(&t.target)], &[("RRR_TEST_ABORT_AT", "before-deletes")]);
    assert_eq!(o.status.code(), None, "expected death by signal: {}", stderr(&o));
    assert!(t.target.join("id/new.txt").exists());
    assert!(t.target.join("id/A/f000.txt").exists());
    let st = state(&t.target);
    let pending: Vec<&str> =
        st["pending_deletes"].as_array().unwrap().iter().map(|p| p["path"].as_str().unwrap()).collect();
    assert_eq!(pending.len(), 2, "{st}");
    // The mirror's principal was not installed before its deletes were applied.
    let ours = fs::read_to_string(t.target.join("RECENT-1h.yaml")).unwrap();
    assert!(!ours.contains("id/new.txt"), "principal installed too early");

    let v = pass(&t.src(), &t.target, &[], 0);
    assert_eq!(v["deleted"], 2, "{v}");
    assert_same_tree(&t.origin, &t.target);
    assert_eq!(state(&t.target)["pending_deletes"], serde_json::json!([]));
}

#[test]
fn max_delete_stops_with_a_message_and_keeps_the_rest_pending() {
    let t = Setup::new(10);
    pass(&t.src(), &t.target, &[], 0);
    change(&t.origin, &[], &["id/A/f000.txt", "id/B/f001.txt", "id/C/f002.txt"]);
    let o = rmirror(&["--remote", &t.src(), "--localroot", s(&t.target), "--max-delete", "1"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("--max-delete reached"), "{}", stderr(&o));
    let gone =
        ["id/A/f000.txt", "id/B/f001.txt", "id/C/f002.txt"].iter().filter(|p| !t.target.join(p).exists()).count();
    assert_eq!(gone, 1);
    assert_eq!(state(&t.target)["pending_deletes"].as_array().unwrap().len(), 2);
    pass(&t.src(), &t.target, &[], 0);
    assert_same_tree(&t.origin, &t.target);
}

#[test]
fn dirtymark_change_resyncs() {
    let t = Setup::new(5);
    pass(&t.src(), &t.target, &[], 0);
    // A dirty insert far in the past: inside what the mirror has done.
    write(&t.origin, "old/inserted.txt", "late\n");
    ok(&["update", "--epoch", "1600000000.5", &principal(&t.origin), "old/inserted.txt"]);
    let v = pass(&t.src(), &t.target, &[], 0);
    assert_eq!(v["dirtymark_changed"], true, "{v}");
    assert!(t.target.join("old/inserted.txt").exists(), "{v}");
    assert_same_tree(&t.origin, &t.target);
}

/// A hand-written JSON principal (`RECENT-1h.json`, aggregator 1h, Z).
fn hostile_index(root: &Path, meta_root: &str, events: &[(&str, &str, &str)]) {
    let recent: Vec<Value> =
        events.iter().map(|(e, t, p)| serde_json::json!({"epoch": e, "type": t, "path": p})).collect();
    let doc = serde_json::json!({
        "meta": {"aggregator": ["1h", "Z"], "dirtymark": "1700000000.5", "filenameroot": meta_root,
                 "interval": "1h", "protocol": 1, "serializer_suffix": ".json"},
        "recent": recent,
    });
    fs::write(root.join("RECENT-1h.json"), serde_json::to_vec(&doc).unwrap()).unwrap();
    let link = root.join("RECENT.recent");
    if fs::symlink_metadata(&link).is_err() {
        std::os::unix::fs::symlink("RECENT-1h.json", &link).unwrap();
    }
}

#[test]
fn hostile_index_touches_nothing_outside_and_does_not_stall() {
    let tmp = tempfile::tempdir().unwrap();
    let (origin, target, outside) = (tmp.path().join("origin"), tmp.path().join("target"), tmp.path().join("outside"));
    write(&origin, "good1.txt", "1\n");
    write(&origin, "sub/evil/f", "should not escape\n");
    write(&origin, "x", "origin x\n");
    write(tmp.path(), "victim.txt", "keep me\n");
    write(&outside, "victim2", "keep me too\n");
    hostile_index(&origin, "RECENT", &[("1700000001.5", "new", "good1.txt")]);
    let d = RsyncDaemon::start(&[("origin", &origin)]);
    let src = format!("{}/RECENT.recent", d.url("origin"));
    pass(&src, &target, &[], 0);
    fs::remove_dir_all(target.join("sub/evil")).unwrap();
    std::os::unix::fs::symlink("../../outside", target.join("sub/evil")).unwrap();
    fs::remove_file(target.join("x")).unwrap();

    write(&origin, "good2.txt", "2\n");
    hostile_index(
        &origin,
        "RECENT",
        &[
            ("1700000010.9", "new", "good2.txt"),
            ("1700000010.8", "delete", "../victim.txt"),
            ("1700000010.7", "new", "../x"),
            ("1700000010.6", "new", "/abs/x"),
            ("1700000010.5", "new", "a\u{0}b"),
            ("1700000010.3", "new", "sub/evil/f"),
            ("1700000010.2", "delete", "sub/evil/victim2"),
            ("1700000010.1", "delete", ".rrr/state.json"),
            ("1700000001.5", "new", "good1.txt"),
        ],
    );
    let o = rmirror(&["--remote", &src, "--localroot", s(&target), "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("refused delete event 1700000010.8 ../victim.txt"), "{err}");
    assert!(err.contains("parent sub/evil is a symlink"), "{err}");
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["refused"].as_array().unwrap().len(), 7, "{v}");
    assert!(target.join("good2.txt").exists(), "the good event still went through");
    assert_eq!(fs::read_to_string(tmp.path().join("victim.txt")).unwrap(), "keep me\n");
    assert_eq!(fs::read_to_string(outside.join("victim2")).unwrap(), "keep me too\n");
    assert!(!outside.join("f").exists(), "wrote through a symlinked parent");
    assert!(!tmp.path().join("x").exists() && !target.join("x").exists());
    assert!(target.join(".rrr/state.json").exists());
    assert_eq!(state(&target)["counters"]["refused"], 7);

    // The refused events are done: the next pass goes on without them.
    write(&origin, "good3.txt", "3\n");
    let mut events = vec![("1700000020.5", "new", "good3.txt")];
    events.push(("1700000010.9", "new", "good2.txt"));
    hostile_index(&origin, "RECENT", &events);
    let v = pass(&src, &target, &[], 0);
    assert_eq!(v["transferred"], 1, "{v}");
    assert!(target.join("good3.txt").exists());
}

#[test]
fn hostile_filenameroot_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let (origin, target) = (tmp.path().join("o"), tmp.path().join("t"));
    write(&origin, "a.txt", "a\n");
    hostile_index(&origin, "../x", &[("1700000001.5", "new", "a.txt")]);
    let o = rmirror(&["--remote", &format!("{}/RECENT.recent", s(&origin)), "--localroot", s(&target)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("filenameroot \"../x\""), "{}", stderr(&o));
    let mut names: Vec<_> = fs::read_dir(tmp.path()).unwrap().flatten().map(|e| e.file_name()).collect();
    names.sort();
    assert_eq!(names, ["o", "t"], "something was written beside the origin");
    assert!(only_a_failed_attempt(&target), "the target holds only the attempt: {:?}", listing(&target));
}

#[test]
fn a_refused_larger_recentfile_is_reported_and_the_rest_stands() {
    // The larger files are read while the tree is transferred: one that is
    // refused fails the pass (exit 2, naming it) but is only left out.
    let tmp = tempfile::tempdir().unwrap();
    let (origin, target) = (tmp.path().join("origin"), tmp.path().join("target"));
    write(&origin, "good1.txt", "1\n");
    yaml_index(&origin, "1", &[("1700000001.5", "new", "good1.txt")]);
    write(&origin, "RECENT-Z.yaml", "--- \nmeta: \n  filenameroot: ../x\n  protocol: 1\nrecent: []\n");
    let src = principal(&origin);
    let v = pass(&src, &target, &[], 2);
    assert!(v["errors"][0].as_str().unwrap().contains("RECENT-Z.yaml"), "{v}");
    assert_eq!((v["bootstrap"].as_bool(), v["complete"].as_bool()), (Some(true), Some(false)), "{v}");
    assert!(target.join("good1.txt").exists() && target.join("RECENT-1h.yaml").exists());
    assert!(!target.join("RECENT-Z.yaml").exists(), "a refused recentfile was installed");
    assert_eq!(state(&target)["done"]["RECENT-1h.yaml"][0][0], "1700000001.5", "the tree stands");
    // The principal has not been merged into Z: nothing asks for it.
    let v = pass(&src, &target, &[], 0);
    assert_eq!((v["bootstrap"].as_bool(), v["complete"].as_bool()), (Some(false), Some(true)), "{v}");
}

#[test]
fn a_whole_tree_pass_deletes_rsync_temp_files_a_killed_transfer_left() {
    // The whole-tree rsync writes its temp files beside their files (much
    // faster than --temp-dir for many small files); one that an rsync
    // killed outright left is gone after the next whole-tree pass.
    let t = Setup::new(5);
    write(&t.origin, "id/A/.upload.tar.gz.Q1w2E3", "the origin's own temp file\n");
    pass(&t.src(), &t.target, &[], 0);
    assert!(!t.target.join("id/A/.upload.tar.gz.Q1w2E3").exists(), "an rsync temp file was mirrored");
    write(&t.target, "id/B/.f001.txt.Ab12Cd", "half a file\n");
    write(&t.target, "id/B/.keep.txt", "not a temp name\n");
    pass(&t.src(), &t.target, &["--skip-deletes", "--full"], 0);
    assert!(t.target.join("id/B/.f001.txt.Ab12Cd").exists(), "--skip-deletes deleted something");
    let v = pass(&t.src(), &t.target, &["--full"], 0);
    assert!(!t.target.join("id/B/.f001.txt.Ab12Cd").exists(), "a leftover temp file stayed: {v}");
    assert!(!t.target.join("id/B/.keep.txt").exists(), "not at the origin, so deleted as before");
    fs::remove_file(t.origin.join("id/A/.upload.tar.gz.Q1w2E3")).unwrap();
    assert_same_tree(&t.origin, &t.target);
}

#[test]
fn an_interrupted_whole_tree_pass_is_owed() {
    let t = Setup::new(2);
    pass(&t.src(), &t.target, &[], 0);
    // Files without events: only a whole-tree pass brings them.
    for i in 0..10 {
        write(&t.origin, &format!("slow/s{i}.bin"), &"y".repeat(200_000));
    }
    let mut child = Rrr::new()
        .args(["rmirror", "--full", "--remote", &t.src(), "--localroot", s(&t.target), "--rsync-option=--bwlimit=100"])
        .stderr(std::process::Stdio::null())
        .spawn();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let started = || fs::read_dir(t.target.join("slow")).is_ok_and(|mut rd| rd.next().is_some());
    while !started() {
        assert!(std::time::Instant::now() < deadline, "the transfer did not start");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: signalling our own child (rrr only: its rsync must follow).
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    child.wait().unwrap();
    wait_no_processes(s(&t.target), 5);
    assert_eq!(state(&t.target)["resync"], true, "an interrupted --full pass is not owed");
    let v = pass(&t.src(), &t.target, &[], 0);
    assert_eq!(v["bootstrap"], true, "{v}");
    assert_same_tree(&t.origin, &t.target);
    assert_no_temp_left(&t.target);
}

// ----- connections: each costs ~0.1 s, more than the rest of a pass --------

/// `rrr rmirror --now NOW --json`, asserting exit 0; the pass object and
/// how many transfers the daemon served for it (from its log).
fn pass_at(d: &RsyncDaemon, src: &str, target: &Path, now: &str) -> (Value, usize) {
    let before = d.transfers();
    let o = rrr(&["--now", now, "rmirror", "--remote", src, "--localroot", s(target), "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(stdout(&o).lines().last().unwrap()).unwrap();
    (v, d.transfers() - before)
}

#[test]
fn a_first_pass_is_two_connections_and_an_unchanged_pass_one() {
    let t = Setup::new(30);
    let now = "9999999999";
    let (v, n) = pass_at(&t.daemon, &t.src(), &t.target, now);
    assert_eq!((v["bootstrap"].as_bool(), n), (Some(true), 2), "the index and the tree: {v}\n{}", t.daemon.log());
    assert_same_tree(&t.origin, &t.target);
    for iv in ["1h", "6h", "1d", "1W", "1M", "1Q", "1Y", "Z"] {
        assert!(t.target.join(format!("RECENT-{iv}.yaml")).exists(), "{iv} not installed");
    }
    let (v, n) = pass_at(&t.daemon, &t.src(), &t.target, now);
    assert_eq!((v["transferred"].as_u64(), n), (Some(0), 1), "an unchanged pass: {v}\n{}", t.daemon.log());
    // New files: the principal, then one --files-from transfer.
    change(&t.origin, &["id/N/new1.txt", "id/A/f000.txt"], &["id/B/f001.txt"]);
    let (v, n) = pass_at(&t.daemon, &t.src(), &t.target, now);
    assert_eq!((v["transferred"].as_u64(), v["deleted"].as_u64(), n), (Some(2), Some(1), 2), "{v}");
    // Deletes only: applied here, no second connection.
    change(&t.origin, &[], &["id/C/f002.txt"]);
    let (v, n) = pass_at(&t.daemon, &t.src(), &t.target, now);
    assert_eq!((v["deleted"].as_u64(), n), (Some(1), 1), "{v}");
    assert_same_tree(&t.origin, &t.target);
}

/// A daemon that hangs (stopped: the kernel still accepts connections,
/// nobody answers) must not hold a mirror forever: with `--timeout 2` the
/// pass fails as a timeout, with exit 2 and the reason, and the next pass
/// after the daemon is back works. rsync gets no `--timeout` of its own
/// (rrr watches it), which this proves is no loss.
#[test]
fn a_hung_daemon_ends_in_a_timeout_not_a_stall() {
    let t = Setup::new(10);
    let first = pass(&t.src(), &t.target, &["--timeout", "2"], 0);
    assert_eq!(first["bootstrap"], true);
    change(&t.origin, &["id/N/after.txt"], &[]);
    let pid = t.daemon.pid() as libc::pid_t;
    // SAFETY: signals to our own child process.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    let t0 = std::time::Instant::now();
    let o = rmirror(&["--remote", &t.src(), "--localroot", s(&t.target), "--timeout", "2"]);
    let took = t0.elapsed();
    unsafe { libc::kill(pid, libc::SIGCONT) };
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("moved no data and used no CPU for 2 s"), "{}", stderr(&o));
    assert!(took < std::time::Duration::from_secs(60), "it ended: {took:?}");
    assert_eq!(state(&t.target)["last_error"].as_str().map(|e| e.contains("no data")), Some(true));
    let v = pass(&t.src(), &t.target, &["--timeout", "2"], 0);
    assert_eq!(v["transferred"], 1, "{v}");
    assert_same_tree(&t.origin, &t.target);
}

/// A slow download is not a stall: the daemon sends 1.5 MB at 500 kB/s
/// while the client's main process (rsync's generator) sits idle, so the
/// watchdog must see the receiver it forked; `--timeout 1` is far below
/// the 3 s the transfer takes.
#[test]
fn a_slow_transfer_outlasts_a_short_timeout() {
    let t = Setup::new(3);
    write(&t.origin, "big/blob", &"x".repeat(1_500_000));
    ok(&["update", &principal(&t.origin), "big/blob"]);
    let v = pass(&t.src(), &t.target, &["--timeout", "1", "--rsync-option=--bwlimit=500"], 0);
    assert_eq!(v["bootstrap"], true);
    assert_same_tree(&t.origin, &t.target);
}

/// Run rmirror on `t` with `extra` arguments and `RRR_RSYNC` set to a
/// wrapper: the rsync call whose arguments match the shell pattern `slow`
/// records its destination, runs with `slow_opts`, then holds on for 1 s
/// (a stretched teardown) before it logs `slow end`; the call matching
/// `watched` logs `watched start` and lists that destination. Returns the
/// output and the log.
fn with_stretched_teardown(t: &Setup, slow: &str, slow_opts: &str, watched: &str, extra: &[&str]) -> (Output, String) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let wrapper = dir.path().join("rsync");
    let script = format!(
        r#"#!/bin/sh
log={log}
case " $* " in
  {watched})
    echo "watched start" >> "$log"
    ls "$(cat "$log.dest")" >> "$log" 2>&1
    exec rsync "$@" ;;
  {slow})
    for a; do dest=$a; done
    echo "$dest" > "$log.dest"
    rsync {slow_opts} "$@"; rc=$?
    sleep 1
    echo "slow end" >> "$log"
    exit $rc ;;
esac
exec rsync "$@"
"#,
        log = log.display(),
    );
    fs::write(&wrapper, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&wrapper, fs::Permissions::from_mode(0o755)).unwrap();
    let src = t.src();
    let mut args = vec!["--remote", src.as_str(), "--localroot", s(&t.target)];
    args.extend_from_slice(extra);
    let o = rmirror_env(&args, &[("RRR_RSYNC", wrapper.to_str().unwrap())]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let calls = fs::read_to_string(&log).unwrap();
    (o, calls)
}

/// What the `watched` call of [`with_stretched_teardown`] saw: it started
/// before the slow call's teardown ended; the listing of the slow call's
/// destination at that moment.
#[track_caller]
fn started_during_teardown(calls: &str) -> &str {
    let at = |what: &str| calls.find(what).unwrap_or_else(|| panic!("{what} in {calls}"));
    assert!(at("watched start") < at("slow end"), "it waited for the teardown:\n{calls}");
    &calls[at("watched start")..at("slow end")]
}

/// A first pass starts the whole-tree rsync as soon as every recentfile
/// it installs is in place, while the index rsync is still finishing (its
/// teardown is 65 ms with a default daemon), and never before: the index
/// call is slowed (`--bwlimit`) and its teardown stretched to 1 s.
#[test]
fn the_tree_starts_once_the_index_is_in_place_not_after_its_teardown() {
    let t = Setup::new(30);
    let (_, calls) = with_stretched_teardown(&t, r#"*" --dirs "*"#, "--bwlimit=20", r#"*" --safe-links "*"#, &[]);
    assert_same_tree(&t.origin, &t.target);
    let listing = started_during_teardown(&calls);
    for iv in ["1h", "6h", "1d", "1W", "1M", "1Q", "1Y", "Z"] {
        assert!(
            listing.contains(&format!("RECENT-{iv}.yaml\n")),
            "RECENT-{iv}.yaml not in place when the tree started:\n{calls}"
        );
    }
    for iv in ["1h", "6h", "Z"] {
        assert!(t.target.join(format!("RECENT-{iv}.yaml")).exists(), "{iv} installed");
    }
}

/// An incremental pass likewise: its `--files-from` transfer starts once
/// the principal and its link are in place, while the principal call (its
/// teardown stretched to 1 s) is still finishing.
#[test]
fn an_incremental_transfer_starts_once_the_principal_is_in_place() {
    let t = Setup::new(30);
    pass(&t.src(), &t.target, &[], 0);
    change(&t.origin, &["id/N/late.txt"], &[]);
    let (o, calls) = with_stretched_teardown(&t, r#"*"/RECENT.recent "*"#, "", r#"*" --files-from"*"#, &["--json"]);
    let v: Value = serde_json::from_str(stdout(&o).lines().last().unwrap()).unwrap();
    assert_eq!((v["bootstrap"].as_bool(), v["transferred"].as_u64()), (Some(false), Some(1)), "{v}");
    assert_same_tree(&t.origin, &t.target);
    let listing = started_during_teardown(&calls);
    assert!(listing.contains("RECENT-1h.yaml\n") && listing.contains("RECENT.recent\n"), "{calls}");
}

/// (min, max) epoch of each of our recentfiles, by interval.
fn spans(target: &Path) -> BTreeMap<String, (f64, f64)> {
    let o = ok(&["overview", "--json", s(&target.join("RECENT.recent"))]);
    let num = |v: &Value| v.as_str().and_then(|x| x.parse::<f64>().ok()).unwrap_or(f64::NAN);
    o.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|v| (v["interval"].as_str().unwrap().to_string(), (num(&v["min"]), num(&v["max"]))))
        .collect()
}

/// An origin of three files written at 1699999900, indexed (`init
/// --aggregate`) at 1700000000 and served by a daemon: (temp dir, origin,
/// daemon, the principal's URL). Tests then move `--now` on.
fn origin_indexed_at_1700000000() -> (tempfile::TempDir, PathBuf, RsyncDaemon, String) {
    let tmp = tempfile::tempdir().unwrap();
    let origin = tmp.path().join("origin");
    for i in 0..3 {
        write(&origin, &format!("id/f{i}"), "old\n");
        let f = fs::File::options().append(true).open(origin.join(format!("id/f{i}"))).unwrap();
        f.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_699_999_900)).unwrap();
    }
    ok(&["--now", "1700000000", "init", "--aggregate", s(&origin)]);
    let d = RsyncDaemon::start(&[("origin", &origin)]);
    let src = format!("{}/RECENT.recent", d.url("origin"));
    (tmp, origin, d, src)
}

#[test]
fn a_truncated_principal_waits_for_our_next_copy_without_a_third_connection() {
    // The origin's aggregate truncates its principal past the events of
    // our copy of RECENT-6h.yaml: installing the new principal at once
    // would leave a mirror reading ours a gap between the two. rrr used to
    // fetch 6h right then, a third connection in that pass.
    let (tmp, origin, d, src) = origin_indexed_at_1700000000();
    let target = tmp.path().join("target");
    let no_gap = |target: &Path| {
        let sp = spans(target);
        assert!(sp["1h"].0 <= sp["6h"].1, "a gap between our 1h and our 6h: {sp:?}");
    };
    let (_, n) = pass_at(&d, &src, &target, "1700000000");
    assert_eq!(n, 2);
    let step = |name: &str, now: &str| {
        write(&origin, name, "new\n");
        ok(&["--now", now, "update", &principal(&origin), name]);
        ok(&["--now", now, "aggregate", &principal(&origin)]);
    };
    // Two hours later: the principal still reaches our 6h.
    step("id/new1", "1700007200");
    let (v, n) = pass_at(&d, &src, &target, "1700007200");
    assert_eq!((v["transferred"].as_u64(), n), (Some(1), 2), "{v}");
    no_gap(&target);
    // A pass just before (a mirror passes every 20 s or so: it does not
    // expect to be behind), then the origin's principal starts after our
    // 6h ends.
    assert_eq!(pass_at(&d, &src, &target, "1700014390").1, 1);
    step("id/new2", "1700014400");
    let (v, n) = pass_at(&d, &src, &target, "1700014400");
    assert_eq!((v["transferred"].as_u64(), v["complete"].as_bool(), n), (Some(1), Some(true), 2), "{v}");
    assert!(target.join("id/new2").exists());
    no_gap(&target);
    assert!(!perl_paths(&target.join("RECENT-1h.yaml")).contains(&"id/new2".to_string()), "installed with a gap");
    assert_eq!(state(&target)["refetch"], serde_json::json!(["RECENT-6h.yaml"]));
    // The next pass fetches 6h with the principal, in one connection, and
    // installs both.
    let (v, n) = pass_at(&d, &src, &target, "1700014400");
    assert_eq!((v["transferred"].as_u64(), n), (Some(0), 1), "{v}");
    no_gap(&target);
    assert!(perl_paths(&target.join("RECENT-1h.yaml")).contains(&"id/new2".to_string()));
    assert_eq!(state(&target)["refetch"], serde_json::json!([]));
    assert_same_tree(&origin, &target);
}

#[test]
fn a_mirror_that_was_down_fetches_the_larger_files_it_needs_with_the_principal() {
    // Down for two days: the principal no longer reaches what is done, and
    // the walk needs 6h, 1d and 1W. They come in the principal's connection
    // (by the time since the last complete pass), not one connection each.
    let (tmp, origin, d, src) = origin_indexed_at_1700000000();
    let target = tmp.path().join("target");
    pass_at(&d, &src, &target, "1700000000");
    for (i, now) in ["1700010800", "1700086400", "1700172800"].iter().enumerate() {
        write(&origin, &format!("id/new{i}"), "new\n");
        ok(&["--now", now, "update", &principal(&origin), &format!("id/new{i}")]);
        ok(&["--now", now, "aggregate", &principal(&origin)]);
    }
    let index_fetches =
        |d: &RsyncDaemon| d.log().lines().filter(|l| l.contains("] rsync on ") && l.contains("RECENT")).count();
    let before = index_fetches(&d);
    let (v, _) = pass_at(&d, &src, &target, "1700172800");
    assert_eq!(v["read"], serde_json::json!(["RECENT-1h.yaml", "RECENT-6h.yaml", "RECENT-1d.yaml", "RECENT-1W.yaml"]));
    assert_eq!((v["transferred"].as_u64(), v["complete"].as_bool()), (Some(3), Some(true)), "{v}");
    // (Each file with new events still has its own --files-from transfer.)
    assert_eq!(index_fetches(&d) - before, 1, "one connection for the recentfiles: {v}\n{}", d.log());
    assert_same_tree(&origin, &target);
    let sp = spans(&target);
    assert!(sp["1h"].0 <= sp["6h"].1 && sp["6h"].0 <= sp["1d"].1, "a gap in our copies: {sp:?}");
}

#[test]
fn three_tier_cascade_ends_identical() {
    let t = Setup::new(20);
    let tier2 = t._tmp.path().join("tier2");
    let d1 = RsyncDaemon::start(&[("tier1", &t.target)]);
    let src1 = format!("{}/RECENT.recent", d1.url("tier1"));
    pass(&t.src(), &t.target, &[], 0);
    pass(&src1, &tier2, &[], 0);
    assert_same_tree(&t.origin, &tier2);

    change(&t.origin, &["id/Z/z1.txt", "id/A/f000.txt"], &["id/B/f001.txt"]);
    // tier2 first: tier1 has nothing new yet, so neither has tier2.
    let v = pass(&src1, &tier2, &[], 0);
    assert_eq!(v["transferred"], 0, "{v}");
    pass(&t.src(), &t.target, &[], 0);
    let v = pass(&src1, &tier2, &[], 0);
    assert_eq!((v["transferred"].as_u64(), v["deleted"].as_u64()), (Some(2), Some(1)), "{v}");
    assert_same_tree(&t.origin, &t.target);
    assert_same_tree(&t.origin, &tier2);
    // tier1's state is not served downstream.
    assert!(!tier2.join(".rrr/state.json.new").exists());
    assert_ne!(state(&tier2)["remote"], state(&t.target)["remote"]);
}

#[test]
fn local_path_source_and_news_remote() {
    let tmp = tempfile::tempdir().unwrap();
    let (origin, target) = (tmp.path().join("o"), tmp.path().join("t"));
    make_origin(&origin, 8);
    let src = principal(&origin);
    pass(&src, &target, &[], 0);
    assert_same_tree(&origin, &target);
    change(&origin, &["later.txt"], &["id/A/f000.txt"]);
    let v = pass(&src, &target, &[], 0);
    assert_eq!((v["transferred"].as_u64(), v["deleted"].as_u64()), (Some(1), Some(1)), "{v}");
    assert_same_tree(&origin, &target);

    // news --remote lists what news --local lists.
    let d = RsyncDaemon::start(&[("o", &origin)]);
    let local = ok(&["news", "--local", &src, "--max", "3"]);
    let remote = ok(&["news", "--remote", &format!("{}/RECENT.recent", d.url("o")), "--max", "3"]);
    assert_eq!(local, remote);
    assert_eq!(local.lines().count(), 3);
}

#[test]
fn lock_loop_and_signals() {
    let t = Setup::new(5);
    // A lock directory of an older rrr naming a live unrelated pid (pid
    // reuse after a reboot) stops nothing, and is removed.
    let legacy = t.target.join(".rrr/rmirror.lock");
    fs::create_dir_all(&legacy).unwrap();
    fs::write(legacy.join("process"), "1\n").unwrap();
    let o = rmirror(&["--remote", &t.src(), "--localroot", s(&t.target)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!legacy.exists(), "legacy lock directory removed");
    // Another live run holds the lock: exit 75 at once, naming it.
    let lock = t.target.join(".rrr/rmirror.flock");
    let held = fs::File::options().write(true).open(&lock).unwrap();
    held.lock().unwrap();
    fs::write(&lock, format!("{}\nrrr rmirror --loop\n", std::process::id())).unwrap();
    let o = rmirror(&["--remote", &t.src(), "--localroot", s(&t.target)]);
    assert_eq!(o.status.code(), Some(75), "{}", stderr(&o));
    assert!(stderr(&o).contains(&format!("process {} (rrr rmirror --loop)", std::process::id())), "{}", stderr(&o));
    drop(held);

    // --loop survives passes; SIGTERM stops it cleanly (130) with the state saved.
    let before = state_passes(&t.target);
    let child = Rrr::new()
        .args(["rmirror", "--remote", &t.src(), "--localroot", s(&t.target), "--loop", "--interval", "1", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while state_passes(&t.target) < before + 2 {
        assert!(std::time::Instant::now() < deadline, "loop made no passes");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let o = child.wait_with_output();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    assert!(stdout(&o).lines().count() >= 2);
    assert!(fs::File::open(&lock).unwrap().try_lock().is_ok(), "lock released");
    assert_same_tree(&t.origin, &t.target);
}

fn state_passes(target: &Path) -> u64 {
    fs::read(target.join(".rrr/state.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .and_then(|v| v["counters"]["passes"].as_u64())
        .unwrap_or(0)
}

/// Whether `epoch` lies in one of the state's done spans (exact epoch order).
fn covered(st: &Value, epoch: &str) -> bool {
    let sets: BTreeMap<String, rrr::done::DoneSet> = serde_json::from_value(st["done"].clone()).unwrap();
    rrr::done::DoneSet::union(sets.values()).covered(&rrr::epoch::Epoch::parse(epoch).unwrap())
}

#[test]
fn real_kill_9_mid_transfer_resumes_without_recopying() {
    let t = Setup::new(3);
    pass(&t.src(), &t.target, &[], 0);
    let news: Vec<String> = (0..30).map(|i| format!("slow/s{i:02}.bin")).collect();
    for p in &news {
        write(&t.origin, p, &"x".repeat(20_000));
    }
    let refs: Vec<&str> = news.iter().map(String::as_str).collect();
    {
        let mut stdin = String::new();
        for p in &refs {
            stdin.push_str(&format!("new {p}\n"));
        }
        Rrr::new().args(["update", "--stdin", &principal(&t.origin)]).stdin(stdin).assert_ok();
    }
    // 5 files of 20 kB per chunk at 250 kB/s: about 0.4 s per chunk.
    let mut child = Rrr::new()
        .args(["rmirror", "--remote", &t.src(), "--localroot", s(&t.target), "--max-files-per-connection", "5"])
        .arg("--rsync-option=--bwlimit=250")
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let done_before_kill = loop {
        assert!(std::time::Instant::now() < deadline, "no chunk finished");
        let n = fs::read(t.target.join(".rrr/state.json"))
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .map(|st| news.iter().filter(|p| st_covers_path(&st, &t.origin, p)).count())
            .unwrap_or(0);
        if n >= 5 {
            break n;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    // kill -9 the whole process group (rrr and its rsync), mid-transfer.
    // SAFETY: signalling our own child's process group.
    unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
    child.wait().unwrap();
    assert!(done_before_kill < 30, "finished before the kill");
    let st = state(&t.target);
    let done: usize = news.iter().filter(|p| st_covers_path(&st, &t.origin, p)).count();
    let v = pass(&t.src(), &t.target, &["--max-files-per-connection", "5"], 0);
    // `transferred` counts what rsync really sent: the files not marked
    // done, but those of the killed chunk that had arrived already.
    let sent = v["transferred"].as_u64().unwrap();
    let owed = (30 - done) as u64;
    assert!(sent <= owed && sent + 5 >= owed, "done before the kill: {done}; {v}");
    assert_same_tree(&t.origin, &t.target);
    assert_no_temp_left(&t.target);
}

/// Whether the state covers the epoch of `path`'s event in the origin's principal.
fn st_covers_path(st: &Value, origin: &Path, path: &str) -> bool {
    let out = ok(&["news", "--local", &principal(origin), "--contains-path", path, "--json"]);
    let ev: Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    covered(st, ev["epoch"].as_str().unwrap())
}

#[test]
fn loop_survives_a_failing_pass() {
    let tmp = tempfile::tempdir().unwrap();
    let (origin, target) = (tmp.path().join("o"), tmp.path().join("t"));
    make_origin(&origin, 4);
    let good = fs::read(origin.join("RECENT-1h.yaml")).unwrap();
    fs::write(origin.join("RECENT-1h.yaml"), "--- {not: [a recentfile\n").unwrap();
    let child = Rrr::new()
        .args(["rmirror", "--remote", &principal(&origin), "--localroot", s(&target), "--loop", "--interval", "1"])
        .arg("--json")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn();
    // Failing before the first byte: only the attempts are recorded, and
    // the passes back off (1 s, 2 s, 4 s, …: about 2 in 2.5 s, not 25).
    std::thread::sleep(std::time::Duration::from_millis(2500));
    assert!(only_a_failed_attempt(&target), "a failing first pass wrote more: {:?}", listing(&target));
    let tried = state(&target)["consecutive_failures"].as_u64().unwrap();
    assert!((2..=10).contains(&tried), "{tried} failed attempts in 2.5 s");
    fs::write(origin.join("RECENT-1h.yaml"), good).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let st = fs::read(target.join(".rrr/state.json")).ok().and_then(|b| serde_json::from_slice::<Value>(&b).ok());
        if st.is_some_and(|st| st["last_complete"].is_string()) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "timed out waiting for a good pass");
        std::thread::sleep(std::time::Duration::from_millis(30));
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let o = child.wait_with_output();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    let kinds: Vec<String> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["kind"].as_str().unwrap().to_string())
        .collect();
    let errors = kinds.iter().filter(|k| *k == "error").count();
    assert!((2..=8).contains(&errors), "{errors} failed passes in 2.5 s: {kinds:?}\n{}", stderr(&o));
    assert!(kinds.contains(&"pass".to_string()), "{kinds:?}");
    assert!(stderr(&o).contains("failed passes in a row; next pass in"), "{}", stderr(&o));
    assert_same_tree(&origin, &target);
}

// ----- ownership: what rrr may delete ---------------------------------

/// Every entry under `root` (relative paths, `/` after directories).
fn listing(root: &Path) -> Vec<String> {
    let mut v: Vec<String> = walkdir::WalkDir::new(root)
        .min_depth(1)
        .into_iter()
        .map(|e| {
            let e = e.unwrap();
            let rel = e.path().strip_prefix(root).unwrap().to_str().unwrap().to_string();
            if e.file_type().is_dir() {
                rel + "/"
            } else {
                rel
            }
        })
        .collect();
    v.sort();
    v
}

#[test]
fn a_typo_in_localroot_is_refused_and_adopt_counts_first() {
    let t = Setup::new(6);
    let precious = t._tmp.path().join("precious");
    write(&precious, "thesis.txt", "years of work\n");
    write(&precious, "photos/p1.jpg", "jpg\n");
    let before = listing(&precious);
    let o = rmirror(&["--remote", &t.src(), "--localroot", s(&precious)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("refusing to mirror into") && stderr(&o).contains("--adopt"), "{}", stderr(&o));
    assert_eq!(listing(&precious), before, "a refusal writes nothing");

    // --dry-run --adopt lists the deletes and changes nothing.
    let o = rmirror(&["--remote", &t.src(), "--localroot", s(&precious), "--dry-run", "--adopt"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("delete thesis.txt") && out.contains("delete photos/p1.jpg"), "{out}");
    assert!(out.contains("new id/A/f000.txt"), "{out}");
    assert_eq!(listing(&precious), before, "a dry run writes nothing");

    // --adopt with --max-delete below the count: refused, with the count.
    let o = rmirror(&["--remote", &t.src(), "--localroot", s(&precious), "--adopt", "--max-delete", "1"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("would delete 3 files or directories, more than --max-delete 1"), "{}", stderr(&o));
    assert_eq!(listing(&precious), before);

    // --adopt within --max-delete: the tree becomes the mirror.
    let v = pass(&t.src(), &precious, &["--adopt", "--max-delete", "3"], 0);
    assert_eq!(v["bootstrap"], true, "{v}");
    assert_same_tree(&t.origin, &precious);
    assert!(!precious.join("thesis.txt").exists());
    // From now on it is ours: no flag needed.
    pass(&t.src(), &precious, &[], 0);
}

#[test]
fn a_failed_first_pass_leaves_the_localroot_as_it_found_it() {
    let t = Setup::new(3);
    let target = t._tmp.path().join("new-mirror");
    let cases = [
        (format!("{}/RECENT.recent", t.daemon.url("no-such-module")), "unknown module"),
        ("rsync://no-such-host.invalid/m/RECENT.recent".to_string(), "unknown host"),
        ("http://127.0.0.1/CPAN/RECENT.recent".to_string(), "is not an rsync source"),
    ];
    for (src, what) in &cases {
        let started = std::time::Instant::now();
        let o = rmirror(&["--remote", src, "--localroot", s(&target)]);
        assert_eq!(o.status.code(), Some(2), "{src}: {}", stderr(&o));
        assert!(stderr(&o).contains(what), "{src}: {}", stderr(&o));
        assert!(!stderr(&o).contains("retrying"), "a deterministic failure is not retried: {}", stderr(&o));
        assert!(!target.exists() || only_a_failed_attempt(&target), "{src}: {:?}", listing(&target));
        // Not retried: well under the 2 s + 4 s of the retries.
        assert!(started.elapsed() < std::time::Duration::from_secs(5), "{src}: {:?}", started.elapsed());
    }
    // An existing empty localroot gets the record of the attempt only.
    fs::remove_dir_all(&target).unwrap();
    fs::create_dir(&target).unwrap();
    let o = rmirror(&["--remote", &cases[0].0, "--localroot", s(&target)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(only_a_failed_attempt(&target), "{:?}", listing(&target));
}

/// The tree holds nothing but `.rrr/` with a state that records a failed
/// attempt and owns nothing (docs/decisions.md#ownership).
fn only_a_failed_attempt(target: &Path) -> bool {
    let st = state(target);
    listing(target) == [".rrr/", ".rrr/id", ".rrr/rmirror.flock", ".rrr/state.json"]
        && st["last_outcome"] == "failed"
        && st["filenameroot"].is_null()
        && st["done"].as_object().is_some_and(|d| d.is_empty())
}

#[test]
fn a_changed_remote_is_refused_unless_it_is_the_same_collection() {
    let t = Setup::new(5);
    pass(&t.src(), &t.target, &[], 0);
    let st_before = fs::read(t.target.join(".rrr/state.json")).unwrap();
    // Another collection (another origin, its own dirtymark).
    let other = t._tmp.path().join("other");
    make_origin(&other, 2);
    let d2 = RsyncDaemon::start(&[("other", &other), ("same", &t.origin)]);
    let before = listing(&t.target);
    for extra in [&[][..], &["--max-delete", "1"][..]] {
        let mut args = vec!["--remote", "", "--localroot", s(&t.target)];
        let src2 = format!("{}/RECENT.recent", d2.url("other"));
        args[1] = &src2;
        args.extend_from_slice(extra);
        let o = rmirror(&args);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains("another collection") && stderr(&o).contains("--adopt"), "{}", stderr(&o));
        assert_eq!(listing(&t.target), before, "nothing deleted, nothing written");
        assert_eq!(fs::read(t.target.join(".rrr/state.json")).unwrap(), st_before);
    }
    // The same origin through another daemon (and spelling): a switch, no flag.
    change(&t.origin, &["id/N/after-switch.txt"], &[]);
    let same = format!("{}/RECENT.recent", d2.url("same"));
    let o = rmirror(&["--remote", &same, "--localroot", s(&t.target), "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("switching from"), "{}", stderr(&o));
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!((v["bootstrap"].as_bool(), v["transferred"].as_u64()), (Some(false), Some(1)), "{v}");
    assert_same_tree(&t.origin, &t.target);
    assert_eq!(state(&t.target)["remote"], same);
    // rsync://h/M/p, h::M/p and rsync://h:873/M/p are one remote: no switch message.
    let o = rmirror(&[
        "--remote",
        &same.replace("rsync://127.0.0.1", "rsync://user@127.0.0.1"),
        "--localroot",
        s(&t.target),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stderr(&o).contains("switching"), "{}", stderr(&o));
}

#[test]
fn a_perl_client_or_rsync_mirror_is_adopted_automatically() {
    let t = Setup::new(8);
    // A tree made by rsync -a from the origin (the recentfiles included), as
    // the Perl rrr-client leaves it, plus one file the origin deleted since.
    let o = Command::new("rsync")
        .args(["-a", &format!("{}/", s(&t.origin)), &format!("{}/", s(&t.target))])
        .output()
        .unwrap();
    assert!(o.status.success());
    write(&t.target, "id/A/deleted-at-origin.txt", "old\n");
    write(&t.target, ".FRMRecent-RECENT-1h.yaml-XXXX.yaml", "leftover\n");
    let v = pass(&t.src(), &t.target, &[], 0);
    assert_eq!((v["bootstrap"].as_bool(), v["transferred"].as_u64()), (Some(true), Some(0)), "no data: {v}");
    assert_eq!(v["deleted"], 1, "{v}");
    assert_same_tree(&t.origin, &t.target);
    assert!(t.target.join(".rrr/state.json").exists() && t.target.join(".rrr/id").exists());
    assert_no_temp_left(&t.target);
}

#[test]
fn a_lost_found_only_mountpoint_counts_as_empty_and_keeps_lost_found() {
    let t = Setup::new(4);
    write(&t.target, "lost+found/#1234", "fsck's\n");
    let v = pass(&t.src(), &t.target, &[], 0);
    assert_eq!(v["bootstrap"], true, "{v}");
    assert_same_tree_except_lost_found(&t.origin, &t.target);
    assert_eq!(fs::read_to_string(t.target.join("lost+found/#1234")).unwrap(), "fsck's\n");
    // --full (rsync --delete over the whole tree) keeps it too.
    pass(&t.src(), &t.target, &["--full"], 0);
    assert!(t.target.join("lost+found/#1234").exists());
}

#[track_caller]
fn assert_same_tree_except_lost_found(a: &Path, b: &Path) {
    let mut tb = tree(b);
    tb.retain(|k, _| !k.starts_with("lost+found/"));
    assert_eq!(tree(a), tb);
}

#[test]
fn an_unmounted_tree_with_an_outside_state_is_refused() {
    let t = Setup::new(4);
    let state_file = t._tmp.path().join("var/state.json");
    let mnt = Tmpfs::mount(&t.target, "8m");
    let args = |extra: &[&str]| {
        let mut a = vec!["--state".to_string(), s(&state_file).to_string()];
        a.extend(extra.iter().map(|x| x.to_string()));
        a
    };
    let run = |extra: &[&str]| {
        let a = args(extra);
        let refs: Vec<&str> = a.iter().map(String::as_str).collect();
        let mut all = vec!["--remote", "", "--localroot", s(&t.target)];
        let src = t.src();
        all[1] = &src;
        all.extend(refs);
        rmirror(&all)
    };
    let o = run(&[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_same_tree(&t.origin, &t.target);
    assert!(t.target.join(".rrr/id").exists());
    mnt.umount();
    fs::create_dir(t.target.join("lost+found")).unwrap();
    // The empty mountpoint: refused, nothing written (no bootstrap into
    // the root filesystem).
    let o = run(&[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("is the filesystem mounted"), "{}", stderr(&o));
    assert_eq!(listing(&t.target), ["lost+found/"]);
    // A dry run refuses too.
    assert_eq!(run(&["--dry-run"]).status.code(), Some(2));
}

// ----- hostile upstreams: nothing republished, nothing stalled ----------

/// A hand-written YAML principal in YAML::Syck's layout (`RECENT-1h.yaml`,
/// aggregator 1h, Z) with `protocol`, and `RECENT.recent` pointing at it.
fn yaml_index(root: &Path, protocol: &str, events: &[(&str, &str, &str)]) {
    let mut y = format!(
        "--- \nmeta: \n  aggregator: \n    - 1h\n    - Z\n  dirtymark: '1700000000.5'\n  filenameroot: RECENT\n  \
         interval: 1h\n  protocol: {protocol}\n  serializer_suffix: .yaml\nrecent: \n"
    );
    for (e, t, p) in events {
        y.push_str(&format!("  - \n    epoch: '{e}'\n    path: {p}\n    type: {t}\n"));
    }
    fs::create_dir_all(root).unwrap();
    fs::write(root.join("RECENT-1h.yaml"), y).unwrap();
    let link = root.join("RECENT.recent");
    if fs::symlink_metadata(&link).is_err() {
        std::os::unix::fs::symlink("RECENT-1h.yaml", &link).unwrap();
    }
}

/// The paths of a YAML recentfile as Perl's YAML::Syck reads them: what a
/// downstream Perl `rrr-client` of this mirror would act on.
fn perl_paths(file: &Path) -> Vec<String> {
    let o = Command::new("perl")
        .args(["-MYAML::Syck", "-e", "my $d = LoadFile(shift); print qq{$_->{path}\\n} for @{$d->{recent}}"])
        .arg(file)
        .output()
        .expect("perl with YAML::Syck (libyaml-syck-perl)");
    assert!(o.status.success(), "YAML::Syck cannot read {}: {}", file.display(), stderr(&o));
    stdout(&o).lines().map(str::to_string).collect()
}

#[test]
fn the_bootstrap_refuses_hostile_events_and_never_republishes_them() {
    let tmp = tempfile::tempdir().unwrap();
    let (origin, target, tier2) = (tmp.path().join("origin"), tmp.path().join("target"), tmp.path().join("tier2"));
    write(&origin, "good1.txt", "1\n");
    write(&origin, "good2.txt", "2\n");
    write(tmp.path(), "victim.txt", "keep me\n");
    hostile_index(
        &origin,
        "RECENT",
        &[
            ("1700000010.9", "new", "good2.txt"),
            ("1700000010.8", "delete", "../victim.txt"),
            ("1700000010.7", "new", "/etc/hostname"),
            ("1700000010.6", "new", "a/../../x"),
            ("1700000010.5", "new", "a\u{0}b"),
            ("1700000010.3", "delete", ".rrr/state.json"),
            ("1700000001.5", "new", "good1.txt"),
        ],
    );
    let d = RsyncDaemon::start(&[("origin", &origin)]);
    let src = format!("{}/RECENT.recent", d.url("origin"));
    let v = pass(&src, &target, &[], 1);
    assert_eq!(v["bootstrap"], true, "{v}");
    assert_eq!(v["refused"].as_array().unwrap().len(), 5, "{v}");
    assert!(target.join("good1.txt").exists() && target.join("good2.txt").exists());
    assert_eq!(fs::read_to_string(tmp.path().join("victim.txt")).unwrap(), "keep me\n");
    // The installed copy, read as plain text (rrr's own reader already
    // skips hostile paths, so it could not tell).
    let ours = fs::read_to_string(target.join("RECENT-1h.json")).unwrap();
    for bad in ["victim.txt", "etc/hostname", "../../x", "\\u0000", "state.json"] {
        assert!(!ours.contains(bad), "{bad:?} republished: {ours}");
    }
    assert!(ours.contains("good2.txt") && ours.contains("good1.txt"), "{ours}");
    // Refused events are done: the next pass is clean, and so is a tier below.
    pass(&src, &target, &[], 0);
    let d1 = RsyncDaemon::start(&[("tier1", &target)]);
    let v = pass(&format!("{}/RECENT.recent", d1.url("tier1")), &tier2, &[], 0);
    assert_eq!(v["refused"].as_array().unwrap().len(), 0, "{v}");
    assert!(tier2.join("good2.txt").exists());
}

#[test]
fn incremental_installs_leave_hostile_events_out_for_a_perl_downstream() {
    let tmp = tempfile::tempdir().unwrap();
    let (origin, target) = (tmp.path().join("origin"), tmp.path().join("target"));
    write(&origin, "good1.txt", "1\n");
    yaml_index(&origin, "1", &[("1700000001.5", "new", "good1.txt")]);
    let d = RsyncDaemon::start(&[("origin", &origin)]);
    let src = format!("{}/RECENT.recent", d.url("origin"));
    pass(&src, &target, &[], 0);
    write(&origin, "good2.txt", "2\n");
    yaml_index(
        &origin,
        "1",
        &[
            ("1700000010.9", "new", "good2.txt"),
            ("1700000010.8", "delete", "../victim.txt"),
            ("1700000010.7", "new", "/etc/hostname"),
            ("1700000010.6", "new", "a/../../x"),
            ("1700000010.5", "delete", "RECENT-1h.yaml"),
            ("1700000001.5", "new", "good1.txt"),
        ],
    );
    let v = pass(&src, &target, &[], 1);
    assert_eq!(v["refused"].as_array().unwrap().len(), 4, "{v}");
    assert_eq!(perl_paths(&target.join("RECENT-1h.yaml")), ["good2.txt", "good1.txt"]);
    // And the next pass (the hostile events done, not refused again) still
    // installs the copy without them.
    write(&origin, "good3.txt", "3\n");
    let mut events = vec![("1700000020.5", "new", "good3.txt")];
    events.extend([
        ("1700000010.9", "new", "good2.txt"),
        ("1700000010.8", "delete", "../victim.txt"),
        ("1700000001.5", "new", "good1.txt"),
    ]);
    yaml_index(&origin, "1", &events);
    let v = pass(&src, &target, &[], 0);
    assert_eq!(v["transferred"], 1, "{v}");
    assert_eq!(perl_paths(&target.join("RECENT-1h.yaml")), ["good3.txt", "good2.txt", "good1.txt"]);
}

#[test]
fn an_over_long_path_is_one_refused_event() {
    let tmp = tempfile::tempdir().unwrap();
    let (origin, target) = (tmp.path().join("origin"), tmp.path().join("target"));
    write(&origin, "good1.txt", "1\n");
    yaml_index(&origin, "1", &[("1700000001.5", "new", "good1.txt")]);
    let d = RsyncDaemon::start(&[("origin", &origin)]);
    let src = format!("{}/RECENT.recent", d.url("origin"));
    pass(&src, &target, &[], 0);
    write(&origin, "good2.txt", "2\n");
    let long = "d/".repeat(2100) + "x";
    yaml_index(
        &origin,
        "1",
        &[("1700000010.9", "new", "good2.txt"), ("1700000010.8", "new", &long), ("1700000001.5", "new", "good1.txt")],
    );
    let v = pass(&src, &target, &[], 1);
    let refused = v["refused"].as_array().unwrap();
    assert_eq!(refused.len(), 1, "{v}");
    assert!(refused[0]["reason"].as_str().unwrap().contains("4201 bytes long (limit 4096)"), "{v}");
    assert!(target.join("good2.txt").exists());
    assert!(!fs::read_to_string(target.join("RECENT-1h.yaml")).unwrap().contains("d/d/d/"), "republished");
    pass(&src, &target, &[], 0);
    // news reads the file too, with a warning about that one event.
    let o = rrr(&["news", "--local", s(&origin.join("RECENT.recent"))]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o).lines().count(), 2);
    assert!(stderr(&o).contains("skipped event 1700000010.8") && stderr(&o).contains("(4201 bytes)"), "{}", stderr(&o));
}

#[test]
fn an_unknown_protocol_and_an_oversized_recentfile_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let (origin, target) = (tmp.path().join("origin"), tmp.path().join("target"));
    write(&origin, "good1.txt", "1\n");
    yaml_index(&origin, "2", &[("1700000001.5", "new", "good1.txt")]);
    let src = principal(&origin);
    let o = rmirror(&["--remote", &src, "--localroot", s(&target)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("protocol \"2\" is not supported"), "{}", stderr(&o));
    assert!(only_a_failed_attempt(&target), "{:?}", listing(&target));
    yaml_index(&origin, "1", &[("1700000001.5", "new", "good1.txt")]);
    let size = fs::metadata(origin.join("RECENT-1h.yaml")).unwrap().len();
    let o = rmirror(&["--remote", &src, "--localroot", s(&target), "--max-recentfile-size", &(size - 1).to_string()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains(&format!("is larger than the limit of {} bytes", size - 1)), "{}", stderr(&o));
    assert!(only_a_failed_attempt(&target), "{:?}", listing(&target));
    pass(&src, &target, &["--max-recentfile-size", &size.to_string()], 0);
}

#[test]
fn an_epoch_from_the_future_never_stalls_the_mirror() {
    let tmp = tempfile::tempdir().unwrap();
    let (origin, target) = (tmp.path().join("origin"), tmp.path().join("target"));
    write(&origin, "good1.txt", "1\n");
    yaml_index(&origin, "1", &[("1700000001.5", "new", "good1.txt")]);
    let d = RsyncDaemon::start(&[("origin", &origin)]);
    let src = format!("{}/RECENT.recent", d.url("origin"));
    let now = ["--now", "1700001000"];
    let run_at = |now: &str, code: i32| -> Value {
        let args = vec!["--now", now, "rmirror", "--remote", &src, "--localroot", s(&target), "--json"];
        let o = rrr(&args);
        assert_eq!(o.status.code(), Some(code), "{}", stderr(&o));
        serde_json::from_str(stdout(&o).lines().last().unwrap()).unwrap()
    };
    let run = |code: i32| run_at(now[1], code);
    run(0);
    // Seen once, dropped by upstream afterwards.
    write(&origin, "future.txt", "f\n");
    write(&origin, "good2.txt", "2\n");
    yaml_index(
        &origin,
        "1",
        &[
            ("99999999999.5", "new", "future.txt"),
            ("1700000010.5", "new", "good2.txt"),
            ("1700000001.5", "new", "good1.txt"),
        ],
    );
    let v = run(0);
    assert_eq!((v["future"].as_u64(), v["complete"].as_bool()), (Some(1), Some(true)), "{v}");
    assert!(target.join("good2.txt").exists() && !target.join("future.txt").exists());
    assert!(!fs::read_to_string(target.join("RECENT-1h.yaml")).unwrap().contains("future.txt"), "published");
    let st = state(&target);
    assert!(!covered(&st, "99999999999.5") && !covered(&st, "1700005000"), "the done-set reaches the future: {st}");
    let o = rrr(&[now[0], now[1], "check", "--warn", "600", "--crit", "3600", "--localroot", s(&target)]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).contains("1 event from the future"), "{}", stdout(&o));

    write(&origin, "good3.txt", "3\n");
    yaml_index(
        &origin,
        "1",
        &[
            ("1700000020.5", "new", "good3.txt"),
            ("1700000010.5", "new", "good2.txt"),
            ("1700000001.5", "new", "good1.txt"),
        ],
    );
    let v = run(0);
    assert_eq!((v["transferred"].as_u64(), v["future"].as_u64()), (Some(1), Some(0)), "{v}");
    assert!(target.join("good3.txt").exists());

    // A state poisoned by an older rrr (done up to 99999999999.5) heals.
    let mut st = state(&target);
    st["done"]["RECENT-1h.yaml"] = serde_json::json!([["99999999999.5", "0"]]);
    fs::write(target.join(".rrr/state.json"), serde_json::to_vec(&st).unwrap()).unwrap();
    write(&origin, "good4.txt", "4\n");
    yaml_index(
        &origin,
        "1",
        &[
            ("1700000030.5", "new", "good4.txt"),
            ("1700000020.5", "new", "good3.txt"),
            ("1700000001.5", "new", "good1.txt"),
        ],
    );
    let v = run(0);
    assert!(target.join("good4.txt").exists(), "stalled by a poisoned done-set: {v}");
    assert_eq!((v["bootstrap"].as_bool(), v["complete"].as_bool()), (Some(true), Some(true)), "{v}");
    // When its time has come, a future event is taken.
    write(&origin, "later.txt", "l\n");
    yaml_index(&origin, "1", &[("1700009000.5", "new", "later.txt"), ("1700000030.5", "new", "good4.txt")]);
    let v = run(0);
    assert_eq!(v["future"], 1, "{v}");
    assert!(!target.join("later.txt").exists());
    let v = run_at("1700008000", 0);
    assert_eq!(v["future"], 0, "within the hour now: {v}");
    assert!(target.join("later.txt").exists());
    assert!(fs::read_to_string(target.join("RECENT-1h.yaml")).unwrap().contains("later.txt"));
}

// ----- failing paths, deterministic failures ----------------------------

/// Make `dir` and its parents up to the temp dir world-readable, for a
/// daemon that runs as nobody.
fn open_up(tmp: &Path, dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let mut d = dir.to_path_buf();
    loop {
        fs::set_permissions(&d, fs::Permissions::from_mode(0o755)).unwrap();
        if d == tmp || !d.pop() {
            break;
        }
    }
}

fn chmod(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
}

/// Record events at the origin without touching the files (`new` for
/// paths that may not be readable, or not even exist as files).
fn record(root: &Path, lines: &str) {
    Rrr::new().args(["update", "--stdin", &principal(root)]).stdin(lines).assert_ok();
}

#[test]
fn a_path_the_origin_cannot_send_holds_back_nothing_else() {
    let tmp = tempfile::tempdir().unwrap();
    let (origin, target) = (tmp.path().join("origin"), tmp.path().join("target"));
    make_origin(&origin, 4);
    open_up(tmp.path(), &origin);
    let d = RsyncDaemon::start_as_nobody(&[("origin", &origin)]);
    let src = format!("{}/RECENT.recent", d.url("origin"));
    pass(&src, &target, &[], 0);

    // One file the daemon (nobody) may not read, one path through a
    // symlink out of the module, and two good files.
    write(&origin, "id/N/ok1.txt", "ok1\n");
    write(&origin, "id/N/secret.txt", "secret\n");
    chmod(&origin.join("id/N/secret.txt"), 0o600);
    fs::create_dir_all(origin.join("sub")).unwrap();
    std::os::unix::fs::symlink("/etc", origin.join("sub/link")).unwrap();
    write(&origin, "id/N/ok2.txt", "ok2\n");
    record(&origin, "new id/N/ok1.txt\nnew id/N/secret.txt\nnew sub/link/hostname\nnew id/N/ok2.txt\n");
    let started = std::time::Instant::now();
    let o = rmirror(&["--remote", &src, "--localroot", s(&target), "--json"]);
    let took = started.elapsed();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(!stderr(&o).contains("retrying"), "{}", stderr(&o));
    assert!(took < std::time::Duration::from_secs(5), "{took:?}");
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["transferred"], 2, "what really arrived: {v}");
    assert_eq!(v["complete"], true, "failing paths do not block complete: {v}");
    let failing: Vec<&str> = v["failing"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap()).collect();
    assert_eq!(failing, ["id/N/secret.txt", "sub/link/hostname"], "{v}");
    assert!(v["failing"][0]["message"].as_str().unwrap().contains("Permission denied (13)"), "{v}");
    assert!(target.join("id/N/ok1.txt").exists() && target.join("id/N/ok2.txt").exists());
    assert!(!target.join("id/N/secret.txt").exists() && !target.join("sub/link").exists());
    // The mirror's recentfiles advanced, without the failing paths.
    let ours = fs::read_to_string(target.join("RECENT-1h.yaml")).unwrap();
    assert!(ours.contains("id/N/ok2.txt") && !ours.contains("secret") && !ours.contains("hostname"), "{ours}");
    // state, status and check say so.
    assert_eq!(state(&target)["failing"].as_array().unwrap().len(), 2);
    let st: Value = serde_json::from_str(&ok(&["status", "--json", "--localroot", s(&target)])).unwrap();
    assert_eq!(st["failing"][0]["path"], "id/N/secret.txt", "{st}");
    assert!(ok(&["status", "--localroot", s(&target)]).contains("failing          2"));
    let o = rrr(&["check", "--warn", "600", "--crit", "3600", "--localroot", s(&target)]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).contains("2 failing paths"), "{}", stdout(&o));

    // Retried every pass.
    let v = pass(&src, &target, &[], 1);
    assert_eq!(v["failing"][0]["attempts"], 2, "{v}");
    // Fixed at the origin: it arrives, and our principal lists it.
    chmod(&origin.join("id/N/secret.txt"), 0o644);
    let v = pass(&src, &target, &[], 1);
    assert_eq!(v["failing"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(fs::read_to_string(target.join("id/N/secret.txt")).unwrap(), "secret\n");
    assert!(fs::read_to_string(target.join("RECENT-1h.yaml")).unwrap().contains("id/N/secret.txt"));
    // A newer event supersedes the other.
    record(&origin, "delete sub/link/hostname\n");
    let v = pass(&src, &target, &[], 0);
    assert_eq!(v["failing"], serde_json::json!([]), "{v}");
    let o = rrr(&["check", "--warn", "600", "--crit", "3600", "--localroot", s(&target)]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));

    // A bootstrap meets one too: the rest arrives, the path is failing.
    chmod(&origin.join("id/N/secret.txt"), 0o600);
    let fresh = tmp.path().join("fresh");
    let v = pass(&src, &fresh, &[], 1);
    assert_eq!(v["bootstrap"], true, "{v}");
    assert_eq!(v["failing"][0]["path"], "id/N/secret.txt", "{v}");
    assert!(v["failing"][0]["epoch"].is_string(), "{v}");
    assert!(fresh.join("id/N/ok2.txt").exists());
    assert!(!fs::read_to_string(fresh.join("RECENT-1h.yaml")).unwrap().contains("secret"));
}

#[test]
fn a_full_disk_is_not_retried() {
    let t = Setup::new(2);
    write(&t.origin, "big.bin", &"x".repeat(1_500_000));
    record(&t.origin, "new big.bin\n");
    let _mnt = Tmpfs::mount(&t.target, "1m");
    let started = std::time::Instant::now();
    let o = rmirror(&["--remote", &t.src(), "--localroot", s(&t.target)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("No space left on device") && stderr(&o).contains("no space, not retried"),
        "{}",
        stderr(&o)
    );
    assert!(!stderr(&o).contains("retrying"), "{}", stderr(&o));
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert_eq!(state(&t.target)["counters"]["errors"]["no_space"], 1);
    assert!(state(&t.target)["last_error"].as_str().unwrap().contains("No space left"));
}

/// A full disk when the run lock is created is reported as what it is
/// (exit 2), never as "another rmirror runs" (75, which cron ignores).
#[test]
fn a_full_disk_at_the_lock_is_not_another_run() {
    let t = Setup::new(2);
    let _mnt = Tmpfs::mount(&t.target, "1m,nr_inodes=48");
    pass(&t.src(), &t.target, &[], 0);
    fs::remove_file(t.target.join(".rrr/rmirror.flock")).unwrap();
    // Use up every inode.
    for i in 0.. {
        if fs::write(t.target.join(format!("filler-{i}")), "").is_err() {
            break;
        }
    }
    let o = rmirror(&["--remote", &t.src(), "--localroot", s(&t.target)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("rmirror.flock"), "{}", stderr(&o));
    assert_eq!(stderr(&o).matches("No space left on device").count(), 1, "{}", stderr(&o));
    assert!(!stderr(&o).contains("another rmirror"), "{}", stderr(&o));
}

#[test]
fn a_directory_renamed_at_the_origin_leaves_no_empty_directory() {
    let t = Setup::new(3);
    write(&t.origin, "old/a.txt", "a\n");
    write(&t.origin, "old/sub/b.txt", "b\n");
    write(&t.origin, "keep/c.txt", "c\n");
    write(&t.origin, "keep/d.txt", "d\n");
    record(&t.origin, "new old/a.txt\nnew old/sub/b.txt\nnew keep/c.txt\nnew keep/d.txt\n");
    pass(&t.src(), &t.target, &[], 0);
    fs::rename(t.origin.join("old"), t.origin.join("new")).unwrap();
    fs::remove_file(t.origin.join("keep/c.txt")).unwrap();
    record(&t.origin, "delete old/a.txt\ndelete old/sub/b.txt\nnew new/a.txt\nnew new/sub/b.txt\ndelete keep/c.txt\n");
    let v = pass(&t.src(), &t.target, &[], 0);
    assert_eq!(v["deleted"], 3, "{v}");
    assert!(!t.target.join("old").exists(), "{:?}", listing(&t.target));
    assert!(t.target.join("keep/d.txt").exists() && t.target.join("new/sub/b.txt").exists());
    assert_same_tree(&t.origin, &t.target);
    assert!(t.target.is_dir());
}

// ----- signals: no rsync outlives rrr -----------------------------------

/// Processes (other than us) whose command line mentions `needle`.
fn processes_with(needle: &str) -> Vec<String> {
    let me = std::process::id().to_string();
    let mut out = Vec::new();
    for de in fs::read_dir("/proc").unwrap().flatten() {
        let name = de.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) || name == me {
            continue;
        }
        if let Ok(cmd) = fs::read(de.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(needle) {
                out.push(format!("{name}: {cmd}"));
            }
        }
    }
    out
}

/// Wait until no process mentions `needle`; panics after `secs`.
#[track_caller]
fn wait_no_processes(needle: &str, secs: u64) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        let left = processes_with(needle);
        if left.is_empty() {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "still running after {secs} s: {left:?}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// An origin with 10 files of 200 kB changed after the first pass, and an
/// rmirror started on it at 100 kB/s; returns once rsync is transferring.
fn slow_transfer(t: &Setup) -> Running {
    pass(&t.src(), &t.target, &[], 0);
    let mut lines = String::new();
    for i in 0..10 {
        write(&t.origin, &format!("slow/s{i}.bin"), &"y".repeat(200_000));
        lines.push_str(&format!("new slow/s{i}.bin\n"));
    }
    record(&t.origin, &lines);
    let child = Rrr::new()
        .args(["rmirror", "--remote", &t.src(), "--localroot", s(&t.target), "--rsync-option=--bwlimit=100"])
        .stderr(std::process::Stdio::null())
        .spawn();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while fs::read_dir(t.target.join(".rrr/tmp")).map_or(0, |rd| rd.count()) == 0 {
        assert!(std::time::Instant::now() < deadline, "the transfer did not start");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child
}

#[test]
fn sigterm_stops_the_running_rsync_at_once() {
    let t = Setup::new(2);
    let mut child = slow_transfer(&t);
    let sent = std::time::Instant::now();
    // SAFETY: signalling our own child (rrr only, not its process group).
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(sent.elapsed() < std::time::Duration::from_secs(5), "rrr took {:?} to stop", sent.elapsed());
    wait_no_processes(s(&t.target), 2);
    assert!(state(&t.target)["heartbeat"].is_string());
    let v = pass(&t.src(), &t.target, &[], 0);
    assert!(v["transferred"].as_u64().unwrap() >= 1, "{v}");
    assert_same_tree(&t.origin, &t.target);
    assert_no_temp_left(&t.target);
}

#[test]
fn kill_9_of_rrr_leaves_no_rsync_behind() {
    let t = Setup::new(2);
    let mut child = slow_transfer(&t);
    // SAFETY: signalling our own child (rrr only: its rsync must follow).
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    child.wait().unwrap();
    wait_no_processes(s(&t.target), 5);
    pass(&t.src(), &t.target, &[], 0);
    // Nothing re-creates temp files after the run cleaned up.
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_same_tree(&t.origin, &t.target);
    assert_no_temp_left(&t.target);
}

#[test]
fn a_whole_tree_pass_stopped_by_max_delete_is_not_complete() {
    let t = Setup::new(10);
    pass(&t.src(), &t.target, &[], 0);
    // Files gone at the origin without events: only a whole-tree pass sees them.
    for p in ["id/A/f000.txt", "id/B/f001.txt", "id/C/f002.txt"] {
        fs::remove_file(t.origin.join(p)).unwrap();
    }
    let v = pass(&t.src(), &t.target, &["--full", "--max-delete", "1"], 1);
    assert_eq!((v["deleted"].as_u64(), v["max_delete_reached"].as_bool()), (Some(1), Some(true)), "{v}");
    assert_eq!(v["complete"], false, "a hybrid tree is not complete: {v}");
    assert_eq!(state(&t.target)["resync"], true);
    // The next run owes the whole-tree pass, and finishes it.
    let v = pass(&t.src(), &t.target, &[], 0);
    assert_eq!(
        (v["bootstrap"].as_bool(), v["deleted"].as_u64(), v["complete"].as_bool()),
        (Some(true), Some(2), Some(true)),
        "{v}"
    );
    assert_same_tree(&t.origin, &t.target);
    assert_eq!(state(&t.target)["resync"], false);
}

#[test]
fn two_first_runs_racing_for_one_new_target() {
    let t = Setup::new(20);
    for _ in 0..3 {
        let _ = fs::remove_dir_all(&t.target);
        let spawn = || {
            Rrr::new()
                .args(["rmirror", "--remote", &t.src(), "--localroot", s(&t.target)])
                .stderr(std::process::Stdio::piped())
                .spawn()
        };
        let (a, b) = (spawn(), spawn());
        let (a, b) = (a.wait_with_output(), b.wait_with_output());
        let mut codes = [a.status.code(), b.status.code()];
        codes.sort();
        // One mirrors; the other finds the lock held (75), or comes after
        // and finds a mirror of its own remote (0): never a refusal.
        assert!(
            codes == [Some(0), Some(75)] || codes == [Some(0), Some(0)],
            "{codes:?}\n{}\n{}",
            stderr(&a),
            stderr(&b)
        );
        assert_same_tree(&t.origin, &t.target);
    }
}
