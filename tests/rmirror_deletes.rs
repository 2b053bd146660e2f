//! What a mirror deletes, and when: deletes survive a kill between the
//! transfers and the deletes, `--max-delete` stops and keeps the rest
//! pending (also for a whole-tree pass, which then is not complete), and a
//! directory renamed at the origin leaves no empty directory behind.

use crate::util::mirror::*;
use crate::util::*;
use std::fs;

#[test]
fn killed_between_transfers_and_deletes_loses_no_delete() {
    let t = Setup::new(10);
    pass(&t.src(), &t.target, &[], 0);
    t.origin.change(&["id/new.txt"], &["id/A/f000.txt", "id/B/f001.txt"]);
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
    t.origin.change(&[], &["id/A/f000.txt", "id/B/f001.txt", "id/C/f002.txt"]);
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
