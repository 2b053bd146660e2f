//! `rrr rmirror` against a real `rsync --daemon` on 127.0.0.1, the plain
//! cases: a first pass, incremental passes with news and deletes, a
//! relative localroot, `--skip-deletes` and `--dry-run`, a dirtymark
//! change, a tier mirroring a mirror, a local-path source, and the whole
//! tree's leftovers. Origins are built with the real `rrr init/update/
//! aggregate`, and mirrors compared with them file by file.

use crate::util::mirror::*;
use crate::util::rsyncd::RsyncDaemon;
use crate::util::*;
use std::fs;
use std::path::Path;

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

    t.origin
        .change(&["id/N/new1.txt", "id/N/new2.txt", "id/A/f000.txt", "top.txt"], &["id/B/f001.txt", "id/C/f002.txt"]);
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
    t.origin.change(&["id/N/rel1.txt"], &[]);
    run();
    assert_same_tree(&t.origin, &t.target);
    assert_no_temp_left(&t.target);
}

#[test]
fn skip_deletes_keeps_files_and_dry_run_changes_nothing() {
    let t = Setup::new(10);
    pass(&t.src(), &t.target, &[], 0);
    t.origin.change(&["id/new.txt"], &["id/A/f000.txt"]);

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

#[test]
fn a_whole_tree_pass_deletes_rsync_temp_files_a_killed_transfer_left() {
    // The whole-tree rsync writes its temp files beside their files (much
    // faster than --temp-dir for many small files); one that an rsync
    // killed outright left is gone after the next whole-tree pass, as a
    // file the remote does not have. The remote's files are all mirrored,
    // whatever they are named: `.NAME.XXXXXX` is also `.env.sample`.
    let t = Setup::new(5);
    write(&t.origin, "id/A/.upload.tar.gz.Q1w2E3", "the origin's own file\n");
    pass(&t.src(), &t.target, &[], 0);
    assert!(t.target.join("id/A/.upload.tar.gz.Q1w2E3").exists(), "a file of the remote was not mirrored");
    write(&t.target, "id/B/.f001.txt.Ab12Cd", "half a file\n");
    write(&t.target, "id/B/.keep.txt", "not a temp name\n");
    pass(&t.src(), &t.target, &["--skip-deletes", "--full"], 0);
    assert!(t.target.join("id/B/.f001.txt.Ab12Cd").exists(), "--skip-deletes deleted something");
    let v = pass(&t.src(), &t.target, &["--full"], 0);
    assert!(!t.target.join("id/B/.f001.txt.Ab12Cd").exists(), "a leftover temp file stayed: {v}");
    assert!(!t.target.join("id/B/.keep.txt").exists(), "not at the origin, so deleted as before");
    assert_same_tree(&t.origin, &t.target);
}

#[test]
fn three_tier_cascade_ends_identical() {
    let t = Setup::new(20);
    let tier2 = t.dir().join("tier2");
    let d1 = RsyncDaemon::start(&[("tier1", &t.target)]);
    let src1 = format!("{}/RECENT.recent", d1.url("tier1"));
    pass(&t.src(), &t.target, &[], 0);
    pass(&src1, &tier2, &[], 0);
    assert_same_tree(&t.origin, &tier2);

    t.origin.change(&["id/Z/z1.txt", "id/A/f000.txt"], &["id/B/f001.txt"]);
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

/// Why a mirror's larger recentfiles lag the origin's (README.mirror,
/// "The larger recentfiles"): an incremental pass fetches the principal
/// and walks into a larger file only when the smaller one no longer
/// reaches what is done, so our copy of 1d stays the one last installed
/// while the origin's aggregate grows it. It lists fewer events, but every
/// event it lacks is in a smaller file we installed: the collection reads
/// the same (news), fsck is clean, and a downstream of ours misses nothing.
#[test]
fn larger_recentfiles_lag_but_the_collection_reads_the_same() {
    let tmp = tempfile::tempdir().unwrap();
    let (origin, target) = (tmp.path().join("o"), tmp.path().join("t"));
    let t0 = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() - 4 * 3600;
    write(&origin, "f0", "0\n");
    ok(&["--now", &t0.to_string(), "init", "--aggregate", s(&origin)]);
    let d = RsyncDaemon::start(&[("o", &origin)]);
    let src = format!("{}/RECENT.recent", d.url("o"));
    pass(&src, &target, &[], 0);
    // Every 10 minutes of the origin's clock a file and an aggregate, a pass after each.
    for k in 1..=12u64 {
        let now = (t0 + k * 600).to_string();
        write(&origin, &format!("g{k}"), "g\n");
        ok(&["--now", &now, "update", &principal(&origin), &format!("g{k}")]);
        ok(&["--now", &now, "aggregate", &principal(&origin)]);
        pass(&src, &target, &[], 0);
    }
    let events = |root: &Path, iv: &str| {
        fs::read_to_string(root.join(format!("RECENT-{iv}.yaml"))).unwrap().matches("epoch:").count()
    };
    assert!(events(&target, "1d") < events(&origin, "1d"), "our 1d is an older copy of theirs");
    assert_eq!(ok(&["news", "--local", &principal(&target)]), ok(&["news", "--local", &principal(&origin)]));
    ok(&["fsck", &principal(&target)]);
    assert_same_tree(&origin, &target);
}

/// An ssh port (README.mirror, "An ssh port"): `RSYNC_RSH` and
/// `--rsync-option=--rsh=…` both reach rsync, which runs that command
/// with the port; a stand-in for ssh records its arguments and runs the
/// remote rsync here (no sshd in the test environment).
#[test]
fn an_ssh_port_through_rsync_rsh_or_the_rsh_option() {
    let tmp = tempfile::tempdir().unwrap();
    let origin = tmp.path().join("o");
    make_origin(&origin, 3);
    let calls = tmp.path().join("calls");
    let fake_ssh = tmp.path().join("fake-ssh");
    fs::write(
        &fake_ssh,
        format!(
            "#!/bin/sh\n# ssh [-p PORT] [-l USER] HOST COMMAND...\necho \"$*\" >> {}\n\
             while [ \"${{1#-}}\" != \"$1\" ]; do shift 2; done\nshift\nexec \"$@\"\n",
            calls.display()
        ),
    )
    .unwrap();
    fs::set_permissions(&fake_ssh, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let src = format!("mirror.example.org:{}", principal(&origin));
    let by_env = tmp.path().join("by-env");
    let o = Rrr::new()
        .args(["rmirror", "--remote", &src, "--localroot", s(&by_env)])
        .env("RSYNC_RSH", format!("{} -p 2222", fake_ssh.display()))
        .output();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_same_tree(&origin, &by_env);
    let by_option = tmp.path().join("by-option");
    let rsh = format!("--rsync-option=--rsh={} -p 2223", fake_ssh.display());
    let o = rrr(&["rmirror", "--remote", &src, "--localroot", s(&by_option), &rsh]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_same_tree(&origin, &by_option);
    let calls = fs::read_to_string(&calls).unwrap();
    assert!(calls.lines().any(|l| l.starts_with("-p 2222 mirror.example.org rsync --server")), "{calls}");
    assert!(calls.lines().any(|l| l.starts_with("-p 2223 mirror.example.org rsync --server")), "{calls}");
}

/// No name is special by accident (issue 31): an origin's `.env.sample`,
/// `.htaccess.backup` and `.bashrc.custom` (named like rsync's temp
/// files) are indexed, reach the mirror by the bootstrap and by events,
/// and a `--full` pass keeps them.
#[test]
fn files_named_like_rsync_temp_files_are_mirrored_and_kept() {
    let names = [".env.sample", "www/.htaccess.backup", ".bashrc.custom"];
    let o = crate::util::fixture::Origin::new(
        names.iter().map(|n| (n.to_string(), format!("{n}\n"))).chain([("d/f".to_string(), "f\n".to_string())]),
        &["init", "--aggregate"],
    );
    // Just written, init left them out as possible transfers in flight;
    // update takes any file.
    let mut args = vec!["update".to_string(), principal(&o.root)];
    args.extend(names.iter().map(|n| n.to_string()));
    Rrr::new().args(&args).assert_ok();
    let m = o.mirror();
    m.pass(&[], 0);
    for n in names {
        assert!(m.root.join(n).exists(), "{n} was not mirrored");
    }
    m.pass(&["--full"], 0);
    write(&o.root, "www/.profile.custom", "by event\n");
    ok(&["update", &principal(&o.root), "www/.profile.custom"]);
    m.pass(&[], 0);
    assert!(m.root.join("www/.profile.custom").exists(), "an event's file named like a temp file was not fetched");
    m.pass(&["--full"], 0);
    for n in names.iter().chain(&["www/.profile.custom"]) {
        assert!(m.root.join(n).exists(), "--full deleted {n}");
    }
    assert_same_tree(&o.root, &m.root);
}
