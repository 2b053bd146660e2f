//! Tests that pin what the mirror's pass guarantees where a change to the
//! code once went unnoticed: what a pass records as done, what a killed
//! pass leaves owed, that a state gets an id, that a path is checked
//! again right before its transfer, and that a path that arrives is no
//! longer failing. Real `rrr`, a real `rsync --daemon` on 127.0.0.1.

use crate::util::mirror::*;
use crate::util::*;
use serde_json::Value;

/// Every event of the origin's principal, as `news --json` lists them.
fn principal_epochs(origin: &std::path::Path) -> Vec<String> {
    ok(&["news", "--local", &principal(origin), "--json"])
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["epoch"].as_str().unwrap().to_string())
        .collect()
}

/// Whether the state's done-sets reach from `epoch` back to the beginning.
fn complete_through(st: &Value, epoch: &str) -> bool {
    let sets: std::collections::BTreeMap<String, rrr::done::DoneSet> =
        serde_json::from_value(st["done"].clone()).unwrap();
    rrr::done::DoneSet::union(sets.values()).complete_through(&rrr::epoch::Epoch::parse(epoch).unwrap())
}

/// Once a walk has handled every file down to the last one (Z), the state
/// knows everything older than Z is done, and the next pass reads the
/// principal only. Here the done-set is cut to the newest event, as for a
/// mirror that lost track of the older ones, so the pass must walk to Z.
#[test]
fn a_walk_down_to_z_records_everything_older_as_done() {
    let t = Setup::new(3);
    pass(&t.src(), &t.target, &[], 0);
    let epochs = principal_epochs(&t.origin);
    let newest = &epochs[0];
    let state_file = t.target.join(".rrr/state.json");
    let mut st = t.target.state();
    st["done"] = serde_json::json!({ "RECENT-1h.yaml": [[newest, newest]] });
    std::fs::write(&state_file, serde_json::to_vec(&st).unwrap()).unwrap();
    assert!(!complete_through(&t.target.state(), newest));

    let walked = pass(&t.src(), &t.target, &[], 0);
    assert_eq!(walked["bootstrap"], false, "{walked}");
    let read = walked["read"].as_array().unwrap();
    assert!(read.len() > 1 && read.last().unwrap().as_str().unwrap().ends_with("-Z.yaml"), "{walked}");
    assert!(complete_through(&t.target.state(), newest), "{}", t.target.state()["done"]);
    let next = pass(&t.src(), &t.target, &[], 0);
    assert_eq!(next["read"].as_array().unwrap().len(), 1, "{next}");
    assert_same_tree(&t.origin, &t.target);
}

/// The pid of a process whose command line holds every one of `needles`.
fn pid_with(needles: &[&str]) -> Option<i32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|de| {
        let pid: i32 = de.file_name().to_str()?.parse().ok()?;
        let cmd = String::from_utf8_lossy(&std::fs::read(de.path().join("cmdline")).ok()?).replace('\0', " ");
        needles.iter().all(|n| cmd.contains(n)).then_some(pid)
    })
}

/// A whole-tree pass is saved as owed before anything that can touch the
/// tree runs: a `--full` pass killed while it counts the deletes it would
/// make (a dry-run rsync, before the transfer and its first heartbeat)
/// still owes the whole-tree pass, and the next pass is one.
#[test]
fn a_full_pass_killed_before_its_transfer_is_still_owed() {
    let t = Setup::new(100);
    pass(&t.src(), &t.target, &[], 0);
    // Files without events, which only a whole-tree pass brings; and a
    // long file list, which keeps the dry run alive to be caught.
    for i in 0..2000 {
        write(&t.origin, &format!("quiet/q{i:04}.txt"), "q\n");
    }
    // A dry run missed (it ended between two looks at /proc) is tried
    // again with a longer list, so the test does not depend on the speed.
    let (dry_run, mut child) = 'caught: {
        for attempt in 1..=3 {
            let mut child = t.target.rmirror().arg("--full").stderr(std::process::Stdio::null()).spawn();
            while child.try_wait().unwrap().is_none() {
                if let Some(pid) = pid_with(&["rsync", "--dry-run", s(&t.target)]) {
                    break 'caught (pid, child);
                }
            }
            for i in 0..2000 * attempt {
                write(&t.origin, &format!("quiet{attempt}/q{i:05}.txt"), "q\n");
            }
        }
        panic!("three --full passes ended before their dry run was caught");
    };
    // Freeze the dry run, then kill rrr while it waits for it.
    let _ = kill(dry_run, libc::SIGSTOP);
    child.signal(libc::SIGKILL);
    child.wait().unwrap();
    let _ = kill(dry_run, libc::SIGKILL);
    assert_eq!(t.target.state()["resync"], true, "a killed --full pass is not owed");
    let v = pass(&t.src(), &t.target, &[], 0);
    assert_eq!(v["bootstrap"], true, "{v}");
    assert_same_tree(&t.origin, &t.target);
}

/// A state taken without an id (written by hand, or by an older rrr) gets
/// one, and the marker names it.
#[test]
fn a_state_without_an_id_gets_one() {
    let t = Setup::new(2);
    pass(&t.src(), &t.target, &[], 0);
    let mut st = t.target.state();
    st.as_object_mut().unwrap().remove("id");
    std::fs::write(t.target.join(".rrr/state.json"), serde_json::to_vec(&st).unwrap()).unwrap();
    std::fs::remove_file(t.target.join(".rrr/id")).unwrap();
    pass(&t.src(), &t.target, &[], 0);
    let id = t.target.state()["id"].as_str().unwrap_or_default().to_string();
    assert!(!id.is_empty(), "no id: {}", t.target.state());
    assert_eq!(std::fs::read_to_string(t.target.join(".rrr/id")).unwrap().trim(), id);
}

/// A path is checked again right before its transfer: a symlink an
/// earlier chunk of the same pass brought in makes a later event below
/// it refused, and nothing is written through it.
#[test]
fn a_symlink_from_an_earlier_chunk_refuses_the_events_below_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (origin, target) = (tmp.path().join("origin"), tmp.path().join("target"));
    write(&origin, "good.txt", "good\n");
    write(&origin, "sub/keep", "keep\n");
    Rrr::new().args(["init", s(&origin)]).assert_ok();
    let d = crate::util::rsyncd::RsyncDaemon::start(&[("origin", &origin)]);
    let src = format!("{}/RECENT.recent", d.url("origin"));
    pass(&src, &target, &[], 0);

    write(&origin, "dir/f", "below\n");
    record(&origin, "new dir/f\n");
    std::fs::remove_dir_all(origin.join("dir")).unwrap();
    write(&origin, "sub/f", "through the link\n");
    std::os::unix::fs::symlink("sub", origin.join("dir")).unwrap();
    record(&origin, "new dir\n");
    // One path a chunk: `dir` (the newer event) goes first.
    let (v, o) = target_pass(&src, &target, &["--max-files-per-connection", "1"], 1);
    let refused: Vec<&str> = v["refused"].as_array().unwrap().iter().filter_map(|r| r["path"].as_str()).collect();
    assert_eq!(refused, ["dir/f"], "{v}\n{}", stderr(&o));
    assert!(std::fs::symlink_metadata(target.join("dir")).unwrap().file_type().is_symlink());
    assert!(!target.join("sub/f").exists(), "wrote through a symlink");
}

/// One `--json` pass of `target` from `src`, exiting `code`: its report
/// and output.
fn target_pass(src: &str, target: &std::path::Path, extra: &[&str], code: i32) -> (Value, std::process::Output) {
    let mut args = vec!["--remote", src, "--localroot", s(target), "--json"];
    args.extend_from_slice(extra);
    let o = rmirror(&args);
    assert_eq!(o.status.code(), Some(code), "{}", stderr(&o));
    let v: Value = serde_json::from_str(stdout(&o).lines().last().unwrap_or_default()).unwrap();
    (v, o)
}

/// A failing path whose newer event then arrives leaves the failing list
/// (the newer event's transfer is what brings it, not the retry of the
/// failing one, which it supersedes): the pass report, the state and
/// `status --json` list nothing failing.
#[test]
fn a_failing_path_that_arrives_with_a_newer_event_is_no_longer_failing() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let (origin, target) = (tmp.path().join("origin"), tmp.path().join("target"));
    make_origin(&origin, 2);
    for d in [tmp.path().to_path_buf(), origin.clone(), origin.join("id")] {
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    // The daemon runs as nobody: a file of mode 0600 it cannot send.
    let d = crate::util::rsyncd::RsyncDaemon::start_as_nobody(&[("origin", &origin)]);
    let src = format!("{}/RECENT.recent", d.url("origin"));
    pass(&src, &target, &[], 0);
    write(&origin, "id/secret.txt", "secret\n");
    std::fs::set_permissions(origin.join("id/secret.txt"), std::fs::Permissions::from_mode(0o600)).unwrap();
    record(&origin, "new id/secret.txt\n");
    let v = pass(&src, &target, &[], 1);
    assert_eq!(v["failing"][0]["path"], "id/secret.txt", "{v}");

    std::fs::set_permissions(origin.join("id/secret.txt"), std::fs::Permissions::from_mode(0o644)).unwrap();
    record(&origin, "new id/secret.txt\n");
    let v = pass(&src, &target, &[], 0);
    assert_eq!(v["failing"], serde_json::json!([]), "{v}");
    assert_eq!(std::fs::read_to_string(target.join("id/secret.txt")).unwrap(), "secret\n");
    assert_eq!(state(&target)["failing"], serde_json::json!([]));
    let st: Value = serde_json::from_str(&ok(&["status", "--json", "--localroot", s(&target)])).unwrap();
    assert_eq!(st["failing"], serde_json::json!([]), "{st}");
}
