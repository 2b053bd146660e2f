//! Deterministic failures: a path the origin cannot send (unreadable, or
//! through a symlink) holds back nothing else and is retried every pass;
//! a full disk is not retried, and a full disk at the run lock is not
//! reported as another run.

use crate::util::mirror::*;
use crate::util::rsyncd::RsyncDaemon;
use crate::util::*;
use serde_json::Value;
use std::fs;
use std::path::Path;

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
    let o = rmirror(&["--remote", &src, "--localroot", s(&target), "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(!stderr(&o).contains("retrying"), "{}", stderr(&o));
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    // Tried once in this pass, not retried with a back-off inside it.
    for f in v["failing"].as_array().unwrap() {
        assert_eq!(f["attempts"], 1, "{v}");
    }
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
    let o = rmirror(&["--remote", &t.src(), "--localroot", s(&t.target)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("No space left on device") && stderr(&o).contains("no space, not retried"),
        "{}",
        stderr(&o)
    );
    assert!(!stderr(&o).contains("retrying"), "{}", stderr(&o));
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

/// rsync missing from PATH: the message says what to do, and a loop ends
/// (exit 2) instead of retrying for ever what no pass can cure; the
/// on-pass hook of the failed pass gets its error count and time.
#[test]
fn a_missing_rsync_ends_even_a_loop_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let origin = tmp.path().join("o");
    make_origin(&origin, 2);
    let target = tmp.path().join("t");
    let env_file = tmp.path().join("hook.env");
    // Shell builtins only: the hook has the same PATH.
    let hook = format!("echo \"$RRR_STATUS $RRR_ERRORS $RRR_SECONDS\" > {}", env_file.display());
    let o = Rrr::new()
        .args(["rmirror", "--loop", "--interval", "1", "--remote", &principal(&origin), "--localroot", s(&target)])
        .args(["--on-pass", &hook])
        .env("PATH", tmp.path().join("no-bin"))
        .output();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let log = stderr(&o);
    assert!(log.contains("no rsync, not retried") && log.contains("apt-get install rsync"), "{log}");
    assert!(!log.contains("next pass"), "not retried by the loop: {log}");
    let env = fs::read_to_string(&env_file).unwrap();
    let words: Vec<&str> = env.split_whitespace().collect();
    assert_eq!(words[..2], ["failed", "1"], "{env}");
    assert!(words[2].parse::<f64>().is_ok_and(|s| s > 0.0), "the failed pass's own time: {env}");
}
