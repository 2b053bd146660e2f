//! Hostile upstreams: indexes written by hand with paths that escape the
//! tree, bad file name roots, unknown protocols, oversized recentfiles,
//! over-long paths and epochs from the future. Nothing is written outside
//! the target, nothing hostile is republished (also as Perl's YAML::Syck
//! reads it), and the mirror never stalls.

use crate::util::mirror::*;
use crate::util::rsyncd::RsyncDaemon;
use crate::util::*;
use serde_json::Value;
use std::fs;
use std::path::Path;

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
