//! A failing path that the origin's later events make moot leaves the
//! failing list without a transfer, against a real `rsync --daemon` on
//! 127.0.0.1: the retry of failing paths drops it (README.mirror, "Type
//! changes"), so the pass exits 0 and nothing stays failing forever.

use crate::util::fixture::Origin;
use crate::util::*;
use std::fs;

#[test]
fn a_type_change_that_the_origin_undid_is_no_longer_failing() {
    let origin = Origin::new([("keep", "k\n"), ("p/a", "a\n")], &["init"]);
    let mirror = origin.mirror();
    mirror.pass(&["--skip-deletes"], 0);
    // The origin makes the directory p a file: under --skip-deletes the
    // mirror keeps its directory, and the new file p is failing.
    fs::remove_dir_all(origin.join("p")).unwrap();
    write(&origin, "p", "p is a file\n");
    origin.record("delete p/a\nnew p\n");
    let v = mirror.pass(&["--skip-deletes"], 1);
    let failing: Vec<&str> = v["failing"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap()).collect();
    assert_eq!(failing, ["p"], "{v}");
    // The origin makes p a directory again, recording only the new file
    // below it: the failing event of p is superseded, not retried.
    fs::remove_file(origin.join("p")).unwrap();
    write(&origin, "p/b", "b\n");
    origin.record("new p/b\n");
    let v = mirror.pass(&["--skip-deletes"], 0);
    assert_eq!(v["failing"], serde_json::json!([]), "{v}");
    assert_eq!(mirror.state()["failing"], serde_json::json!([]), "{}", mirror.state());
    assert_eq!(fs::read_to_string(mirror.join("p/b")).unwrap(), "b\n");
}

/// A path that failed and that the operator then excludes leaves the
/// failing list at the next pass, like any excluded event (README.mirror,
/// `--exclude`), instead of being retried, and failing, every pass.
#[test]
fn a_failing_path_that_is_then_excluded_is_no_longer_retried() {
    let origin = Origin::new([("keep", "k\n")], &["init"]);
    let mirror = origin.mirror();
    mirror.pass(&[], 0);
    // A path through a symlink out of the module: the daemon cannot send it.
    fs::create_dir_all(origin.join("sub")).unwrap();
    std::os::unix::fs::symlink("/etc", origin.join("sub/link")).unwrap();
    origin.record("new sub/link/hostname\n");
    let v = mirror.pass(&[], 1);
    assert_eq!(v["failing"][0]["path"], "sub/link/hostname", "{v}");
    let (v, o) = mirror.pass_output(&["--exclude", "hostname"], 0);
    assert_eq!(v["failing"], serde_json::json!([]), "{v}");
    assert_eq!(mirror.state()["failing"], serde_json::json!([]), "{}", mirror.state());
    assert!(stderr(&o).contains("no longer retrying sub/link/hostname: excluded"), "{}", stderr(&o));
    assert!(!mirror.join("sub/link").exists());
}
