//! `rrr watch` under storms: its memory stays bounded (a real address-space
//! limit on the daemon, `prlimit --as`) and the index is complete after.

use crate::util::*;
use crate::watch::{fsck_clean, news, tree, wait_fsck_clean, Daemon, WAIT};
use std::fs;

/// The daemon's address-space limit: an idle debug daemon maps some
/// 220 MB (its binary, two threads' stacks and malloc arenas).
const AS_LIMIT: &str = "--as=536870912";

/// A directory of 3000 indexed files moved out of the tree and made again,
/// 4000 times within one batch: the batch must hold one entry for it, not
/// one copy of its 3000 indexed paths per move (12 million paths, over
/// 600 MB: past the limit, the daemon aborts).
#[test]
fn a_directory_moved_out_thousands_of_times_keeps_memory_bounded() {
    let files: Vec<String> = (0..3000).map(|i| format!("big/f{i:04}")).collect();
    let refs: Vec<&str> = files.iter().map(String::as_str).collect();
    let (tmp, root) = tree(&refs);
    let attic = tmp.path().join("attic");
    fs::create_dir(&attic).unwrap();
    let mut d = Daemon::start_under(&["prlimit", AS_LIMIT, "--"], &root, &["--batch-delay", "10000"]);
    for i in 0..4000 {
        fs::rename(root.join("big"), attic.join(format!("big{i}"))).unwrap();
        fs::create_dir(root.join("big")).unwrap();
    }
    write(&root, "big/last", "x");
    let done = poll_until(WAIT, || !d.running() || fsck_clean(&root));
    assert!(done && d.running(), "the daemon died under its memory limit:\n{}", d.log());
    wait_fsck_clean(&root);
    let n = news(&root);
    assert_eq!(n["big/f0000"].1, "delete");
    assert_eq!(n["big/f2999"].1, "delete");
    assert_eq!(n["big/last"].1, "new");
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
}

/// A batch past `--max-batch-entries` is dropped and the tree rescanned:
/// every change of the storm is in the index all the same, news and
/// deletes, including a file changed before a heartbeat marker that came
/// before the drop (the rescan looks back to synced-to, not the marker).
#[test]
fn a_batch_past_its_limit_becomes_a_rescan() {
    let (_tmp, root) = tree(&["old/a", "old/b", "keep"]);
    let d = Daemon::start(&root, &["--batch-delay", "100000", "--max-batch-entries", "50"]);
    // After the start, which may record files of its first second again.
    let before = news(&root)["keep"].0.clone();
    write(&root, "keep", "changed before the drop");
    let changed = fs::metadata(root.join("keep")).unwrap().modified().unwrap();
    // A marker in a later second than the change (rescans compare whole
    // seconds), while the change is still pending: other changes keep the
    // daemon active (a heartbeat every 2 s) and the batch from going quiet.
    let heartbeat = root.join(".rrr/watch.json");
    let later = changed + std::time::Duration::from_millis(1200);
    let mut nudges = 0;
    wait_for("a heartbeat after the change", WAIT, || {
        nudges += 1;
        write(&root, "nudge", &nudges.to_string());
        poll_until(std::time::Duration::from_millis(300), || {
            fs::metadata(&heartbeat).and_then(|m| m.modified()).is_ok_and(|t| t > later)
        })
    });
    fs::remove_file(root.join("old/a")).unwrap();
    for i in 0..300 {
        write(&root, &format!("storm/f{i:03}"), "x");
    }
    d.wait_log("too many changes for one batch");
    wait_fsck_clean(&root);
    let n = news(&root);
    assert_eq!(n["old/a"].1, "delete");
    assert_eq!(n["storm/f000"].1, "new");
    assert_eq!(n["storm/f299"].1, "new");
    assert!(rrr::epoch::cmp_epochs(&n["keep"].0, &before).is_gt(), "the change of keep was lost with the batch");
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    assert!(log.contains("\"kind\":\"rescan\""), "{log}");
}

/// A record that lasts (here held inside the principal's lock by a
/// failpoint until the test lets it go) reports its progress in the log
/// while it runs: a `recording` line naming the write and its changes
/// comes before the batch's own line, and the batch is recorded after.
#[test]
fn a_long_record_logs_its_progress() {
    let (tmp, root) = tree(&["a"]);
    let fp = tmp.path().join("failpoint");
    fs::create_dir(&fp).unwrap();
    let env = format!("RRR_FAILPOINT_LOCK_HELD={}", fp.display());
    // Open while the daemon starts (it may record `a`, and it cascades the
    // fresh index into the larger files), shut after.
    fs::write(fp.join("go"), "").unwrap();
    let d = Daemon::start_under(&["env", &env], &root, &[]);
    d.wait_log("\"kind\":\"aggregate\"");
    for e in fs::read_dir(&fp).unwrap().flatten() {
        fs::remove_file(e.path()).unwrap();
    }
    for i in 0..30 {
        write(&root, &format!("slow/f{i:02}"), "x");
    }
    let held = || fs::read_dir(&fp).unwrap().flatten().any(|e| e.file_name().to_string_lossy().starts_with("reached."));
    wait_for("the record to hold the lock", WAIT, held);
    d.wait_log("\"step\":\"record\"");
    fs::write(fp.join("go"), "").unwrap();
    wait_fsck_clean(&root);
    assert_eq!(news(&root)["slow/f29"].1, "new");
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    let lines: Vec<&str> = log.lines().collect();
    let progress =
        lines.iter().position(|l| l.contains("\"kind\":\"recording\"") && l.contains("\"step\":\"record\"")).unwrap();
    // The batch may hold the first files only: the quiet trigger can
    // fire while the test still writes.
    assert!(!lines[progress].contains("\"changes\":0,"), "{}", lines[progress]);
    let batch = lines.iter().position(|l| l.contains("\"kind\":\"batch\"")).expect("the batch is logged");
    assert!(progress < batch, "the progress line comes while the record runs, before its batch line:\n{log}");
}

/// The events the daemon's log says it recorded (batches and rescans): (new, delete).
fn recorded(log: &str) -> (u64, u64) {
    let (mut new, mut delete) = (0, 0);
    for line in log.lines() {
        let v: serde_json::Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(_) => continue,
        };
        if v["kind"] == "batch" || v["kind"] == "rescan" {
            new += v["new"].as_u64().unwrap_or(0);
            delete += v["delete"].as_u64().unwrap_or(0);
        }
    }
    (new, delete)
}

/// A rename storm over an indexed tree (issue 31): 20 directories of 50
/// files renamed back and forth 100 times each within one batch window,
/// then half of them moved for good. The batch records each path's net
/// change: the files moved, once each (a delete and a new), not every
/// file of every directory renamed back into place.
#[test]
fn a_rename_storm_records_each_paths_net_change() {
    let names: Vec<String> = (0..20).flat_map(|d| (0..50).map(move |f| format!("d{d:02}/f{f:02}"))).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let (_tmp, root) = tree(&refs);
    // One window for the whole storm: recorded once it is quiet for 2 s.
    let d = Daemon::start(&root, &["--batch-delay", "20000"]);
    let before = recorded(&d.log());
    for _ in 0..100 {
        for i in 0..20 {
            let a = root.join(format!("d{i:02}"));
            fs::rename(&a, root.join(format!("d{i:02}.x"))).unwrap();
            fs::rename(root.join(format!("d{i:02}.x")), &a).unwrap();
        }
    }
    for i in (0..20).step_by(2) {
        fs::rename(root.join(format!("d{i:02}")), root.join(format!("moved{i:02}"))).unwrap();
    }
    wait_fsck_clean(&root);
    let n = news(&root);
    assert_eq!(n["moved00/f00"].1, "new");
    assert_eq!(n["d00/f00"].1, "delete");
    assert_eq!(n["d01/f49"].1, "new");
    let after = recorded(&d.log());
    let (new, delete) = (after.0 - before.0, after.1 - before.1);
    // 500 files moved: 500 deletes and 500 news.
    assert!(
        new + delete <= 1100,
        "{new} new and {delete} delete events for a net change of 1000 (500 files moved):\n{}",
        d.log()
    );
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
}

/// Names at the limits, written while directories are renamed back and
/// forth (issue 31): a 255-byte component is indexed; a path of exactly
/// 4096 bytes (past PATH_MAX once joined to the root, so the daemon must
/// reach it relative to an open directory) is indexed; one of 4097 bytes
/// cannot be, and is reported by the daemon's log and by fsck.
#[test]
fn names_at_the_limits_during_a_storm() {
    let names: Vec<String> = (0..10).flat_map(|d| (0..20).map(move |f| format!("d{d}/f{f:02}"))).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let (_tmp, root) = tree(&refs);
    let d = Daemon::start(&root, &[]);
    let long = "é".repeat(127) + "x";
    assert_eq!(long.len(), 255);
    // "deep/" and 16 components of 254 bytes: 4085 bytes before the file name.
    let dirs: Vec<String> = std::iter::once("deep".to_string())
        .chain((0..16).map(|i| format!("{i:x}").repeat(254).chars().take(254).collect()))
        .collect();
    let fits = "f".repeat(11);
    let too_long = "g".repeat(12);
    let rel_fits = format!("{}/{fits}", dirs.join("/"));
    assert_eq!(rel_fits.len(), 4096);
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                for i in 0..10 {
                    let a = root.join(format!("d{i}"));
                    fs::rename(&a, root.join(format!("d{i}.x"))).unwrap();
                    fs::rename(root.join(format!("d{i}.x")), &a).unwrap();
                }
            }
        });
        write(&root, &format!("names/{long}"), "x");
        write_deep(&root, &dirs, &[fits.clone(), too_long.clone()]);
        std::thread::sleep(std::time::Duration::from_millis(500));
        done.store(true, std::sync::atomic::Ordering::SeqCst);
    });
    wait_for("the 255-byte name and the 4096-byte path in the index", WAIT, || {
        let n = news(&root);
        n.contains_key(&format!("names/{long}")) && n.contains_key(&rel_fits)
    });
    // Named (shortened: the log shows the length) with the reason.
    d.wait_log("(4097 bytes): path is 4097 bytes long (limit 4096)");
    // The storm's renames net to nothing: the index converges on the tree.
    let mut out = String::new();
    let converged = poll_until(WAIT, || {
        out = stdout(&rrr(&["fsck", "--json", root.to_str().unwrap()]));
        !out.contains("missing_in_index") && !out.contains("missing_on_disk")
    });
    assert!(converged, "{out}\n{}", d.log());
    assert!(out.contains("\"kind\":\"unindexable\"") && out.contains(&too_long), "{out}");
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
}
