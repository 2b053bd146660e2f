//! An event always moves its bytes, against a real `rsync --daemon` on
//! 127.0.0.1 (README.mirror, "Same size, same second"): a file rewritten
//! within its second at the same size arrives, a principal rewritten so is
//! read, `--full --checksum` repairs bytes no event named, and a file that
//! becomes a directory and a file again, many times within one second,
//! always converges.

use crate::util::fixture::Origin;
use crate::util::mirror::assert_same_tree;
use crate::util::*;
use std::fs;
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

/// Set `p`'s mtime to exactly `secs` (whole seconds, no nanoseconds).
fn set_mtime(p: &Path, secs: u64) {
    let f = fs::File::options().write(true).open(p).unwrap();
    f.set_modified(UNIX_EPOCH + Duration::from_secs(secs)).unwrap();
}

/// `rel` under `root` rewritten with `content`, its mtime exactly `secs`.
fn rewrite(root: &Path, rel: &str, content: &str, secs: u64) {
    write(root, rel, content);
    set_mtime(&root.join(rel), secs);
}

#[test]
fn a_file_rewritten_within_its_second_at_the_same_size_arrives() {
    let origin = Origin::new([("keep", "k\n"), ("f", "aaaa\n")], &["init"]);
    set_mtime(&origin.join("f"), 1_700_000_000);
    let mirror = origin.mirror();
    mirror.pass(&[], 0);
    assert_eq!(fs::read_to_string(mirror.join("f")).unwrap(), "aaaa\n");
    // New bytes, the same size, the same mtime to the nanosecond: rsync's
    // quick check alone would call it up to date. The event says otherwise.
    rewrite(&origin, "f", "bbbb\n", 1_700_000_000);
    origin.record("new f\n");
    let v = mirror.pass(&[], 0);
    assert_eq!(fs::read_to_string(mirror.join("f")).unwrap(), "bbbb\n", "{v}");
    assert_eq!(v["transferred"], 1, "{v}");

    // Bytes that changed without an event: --full trusts size and mtime,
    // --full --checksum compares the contents.
    rewrite(&origin, "f", "cccc\n", 1_700_000_000);
    mirror.pass(&["--full"], 0);
    assert_eq!(fs::read_to_string(mirror.join("f")).unwrap(), "bbbb\n");
    let v = mirror.pass(&["--full", "--checksum"], 0);
    assert_eq!(fs::read_to_string(mirror.join("f")).unwrap(), "cccc\n", "{v}");
    assert_eq!(v["transferred"], 1, "only the file that differs: {v}");
}

#[test]
fn a_principal_rewritten_within_its_second_at_the_same_size_is_read() {
    let origin = Origin::new([("keep", "k\n")], &["--now", "1790000000", "init"]);
    write(&origin, "x1", "x\n");
    Rrr::new().args(["--now", "1790000100", "update", &principal(&origin), "x1"]).assert_ok();
    let mirror = origin.mirror();
    mirror.pass(&["--now", "1790000200"], 0);
    assert!(mirror.join("x1").exists());
    // The origin's principal now lists another event, newer, at the same
    // size and in the same second (its mtime exactly as before).
    let p = origin.join("RECENT-1h.yaml");
    let text = fs::read_to_string(&p).unwrap();
    let edited = text.replace("'1790000100.0'", "'1790000100.5'").replace("path: x1", "path: x2");
    assert_eq!((edited.len(), edited.matches("x2").count()), (text.len(), 1), "{edited}");
    write(&origin, "x2", "y\n");
    fs::write(&p, edited).unwrap();
    set_mtime(&p, 1_790_000_100);
    let v = mirror.pass(&["--now", "1790000200"], 0);
    assert_eq!(fs::read_to_string(mirror.join("x2")).unwrap(), "y\n", "{v}");
    assert_eq!(fs::read(mirror.join("RECENT-1h.yaml")).unwrap(), fs::read(&p).unwrap());
}

/// The origin turns `d/f3` into a directory `d/f3/in` and back into a
/// file, each step recorded one event at a time under a pinned clock:
/// every rewrite of the principal has the same size (622 bytes) and the
/// same mtime. After every step the mirror's pass converges.
#[test]
fn a_file_that_becomes_a_directory_and_back_within_a_second_always_converges() {
    let origin = Origin::new([("keep", "k\n"), ("d/f3", "f3\n")], &["--now", "1790000000", "init"]);
    let mirror = origin.mirror();
    mirror.pass(&["--now", "1790000200"], 0);
    // Epochs of one length, none ending in 0 (a trailing 0 is dropped).
    let mut n = 100;
    let mut record = |line: &str| {
        n += if (n + 1) % 10 == 0 { 2 } else { 1 };
        Rrr::new()
            .args(["--now", &format!("1790000100.{n}"), "update", "--stdin", &principal(&origin)])
            .stdin(line)
            .assert_ok();
    };
    let mut sizes = std::collections::BTreeSet::new();
    for cycle in 0..8 {
        fs::remove_file(origin.join("d/f3")).unwrap();
        write(&origin, "d/f3/in", &format!("in {cycle}\n"));
        record("delete d/f3\n");
        record("new d/f3/in\n");
        sizes.insert(fs::metadata(origin.join("RECENT-1h.yaml")).unwrap().len());
        mirror.pass(&["--now", "1790000200"], 0);
        assert_same_tree(&origin, &mirror);
        fs::remove_dir_all(origin.join("d/f3")).unwrap();
        write(&origin, "d/f3", &format!("f3 {cycle}\n"));
        record("delete d/f3/in\n");
        record("new d/f3\n");
        sizes.insert(fs::metadata(origin.join("RECENT-1h.yaml")).unwrap().len());
        mirror.pass(&["--now", "1790000200"], 0);
        assert_same_tree(&origin, &mirror);
        assert!(fs::metadata(mirror.join("d/f3")).unwrap().is_file(), "cycle {cycle}");
    }
    assert_eq!(sizes.len(), 1, "every principal the same size: {sizes:?}");
}
