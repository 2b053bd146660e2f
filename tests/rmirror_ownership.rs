//! What rrr may delete: a localroot that is not a mirror is refused
//! unless `--adopt` (counted against `--max-delete`), a failed first pass
//! leaves the localroot as it was, a changed remote is refused unless it is
//! the same collection, a Perl client's or rsync's tree is adopted, and a
//! mountpoint with only `lost+found` counts as empty, an unmounted one not.

use crate::util::mirror::*;
use crate::util::rsyncd::RsyncDaemon;
use crate::util::*;
use serde_json::Value;
use std::fs;
use std::path::Path;
use std::process::Command;

#[test]
fn a_typo_in_localroot_is_refused_and_adopt_counts_first() {
    let t = Setup::new(6);
    let precious = t.dir().join("precious");
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
    let target = t.dir().join("new-mirror");
    let cases = [
        (format!("{}/RECENT.recent", t.daemon().url("no-such-module")), "unknown module"),
        ("rsync://no-such-host.invalid/m/RECENT.recent".to_string(), "unknown host"),
        ("http://127.0.0.1/CPAN/RECENT.recent".to_string(), "is not an rsync source"),
    ];
    for (src, what) in &cases {
        let o = rmirror(&["--remote", src, "--localroot", s(&target)]);
        assert_eq!(o.status.code(), Some(2), "{src}: {}", stderr(&o));
        assert!(stderr(&o).contains(what), "{src}: {}", stderr(&o));
        assert!(!stderr(&o).contains("retrying"), "a deterministic failure is not retried: {}", stderr(&o));
        assert!(!target.exists() || only_a_failed_attempt(&target), "{src}: {:?}", listing(&target));
    }
    // An existing empty localroot gets the record of the attempt only.
    fs::remove_dir_all(&target).unwrap();
    fs::create_dir(&target).unwrap();
    let o = rmirror(&["--remote", &cases[0].0, "--localroot", s(&target)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(only_a_failed_attempt(&target), "{:?}", listing(&target));
}

#[test]
fn a_changed_remote_is_refused_unless_it_is_the_same_collection() {
    let t = Setup::new(5);
    pass(&t.src(), &t.target, &[], 0);
    let st_before = fs::read(t.target.join(".rrr/state.json")).unwrap();
    // Another collection (another origin, its own dirtymark).
    let other = t.dir().join("other");
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
    t.origin.change(&["id/N/after-switch.txt"], &[]);
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
    let state_file = t.dir().join("var/state.json");
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
