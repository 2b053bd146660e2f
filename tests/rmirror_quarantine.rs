//! One bad path never stops a tree (docs/decisions.md#quarantine), against
//! a real `rsync --daemon` on 127.0.0.1: a path rsync cannot carry (deeper
//! than its 4,096-byte limit: "filename overflows max-path len") is
//! quarantined; the rest of the bootstrap and of `--full` arrives, deletes
//! included, the passes are complete with failures (exit 1), and `status`
//! and `check` name it.

use crate::util::fixture::Origin;
use crate::util::*;
use serde_json::Value;
use std::fs;
use std::path::Path;

/// A file `deep.txt` below `depth` directories of 249 bytes each under
/// `root` (a path longer than a system call takes). Returns the first
/// directory's name.
fn deep_file(root: &Path, depth: usize) -> String {
    let dirs: Vec<String> = (0..depth).map(|i| format!("d{i:03}{}", "x".repeat(245))).collect();
    write_deep(root, &dirs, &["deep.txt".to_string()]);
    dirs[0].clone()
}

#[test]
fn a_path_rsync_cannot_carry_is_quarantined_and_the_tree_goes_on() {
    let origin = Origin::new([("keep", "k\n"), ("j", "j\n")], &["init"]);
    let top = deep_file(&origin, 17);
    let mirror = origin.mirror();
    // The bootstrap: everything else arrives; rsync skipped its deletes
    // for the path it could not name, so the whole-tree pass is owed once.
    let (v, o) = mirror.pass_output(&[], 1);
    assert_eq!((v["bootstrap"].clone(), v["errors"].clone()), (Value::Bool(true), serde_json::json!([])), "{v}");
    let q = &v["quarantined"][0];
    let path = q["path"].as_str().unwrap();
    assert!(path.starts_with(&format!("{top}/")), "{path}");
    assert!(path.len() > 4096, "{}", path.len());
    assert!(q["message"].as_str().unwrap().starts_with("filename overflows max-path len by"), "{v}");
    assert!(stderr(&o).contains("quarantined d000"), "{}", stderr(&o));
    assert_eq!(fs::read_to_string(mirror.join("keep")).unwrap(), "k\n");
    assert_eq!(fs::read_to_string(mirror.join("j")).unwrap(), "j\n");
    // The whole-tree pass again, without the quarantined directory: complete.
    let v = mirror.pass(&[], 1);
    assert_eq!((v["bootstrap"].clone(), v["complete"].clone()), (Value::Bool(true), Value::Bool(true)), "{v}");
    let v = mirror.pass(&[], 1);
    assert_eq!((v["bootstrap"].clone(), v["complete"].clone()), (Value::Bool(false), Value::Bool(true)), "{v}");
    assert_eq!(v["quarantined"].as_array().unwrap().len(), 1, "{v}");
    // status, the textfile and check name it.
    let seen = mirror.monitoring(&[]);
    assert_eq!(seen.status["quarantined"][0]["path"], path, "{}", seen.status);
    assert!(seen.plain.contains("quarantined      1"), "{}", seen.plain);
    assert_eq!(seen.gauge("rrr_mirror_quarantined_paths"), Some("1"), "{}", seen.prometheus);
    let (code, line) = seen.check();
    assert_eq!(code, Some(1), "{line}");
    assert!(line.contains("1 quarantined path (e.g. d000x"), "{line}");

    // A --full pass on the complete mirror looks at it again and goes on:
    // a file the origin added and one it removed, both without events.
    write(&origin, "n", "n\n");
    fs::remove_file(origin.join("j")).unwrap();
    let v = mirror.pass(&["--full"], 1);
    assert_eq!(fs::read_to_string(mirror.join("n")).unwrap(), "n\n", "{v}");
    assert_eq!(v["quarantined"].as_array().unwrap().len(), 1, "{v}");
    // Its deletes, which rsync skipped, follow in the next pass.
    let v = mirror.pass(&[], 1);
    assert!(!mirror.join("j").exists(), "{v}");
    assert_eq!(v["complete"], true, "{v}");

    // The origin removes it: the next --full pass lifts the quarantine.
    fs::remove_dir_all(origin.join(&top)).unwrap();
    let v = mirror.pass(&["--full"], 0);
    assert_eq!(v["quarantined"], serde_json::json!([]), "{v}");
    assert!(!mirror.join(&top).exists(), "{v}");
}

/// Many quarantined paths (a broken or hostile origin): their directories
/// are left out of the next whole-tree pass without a command line longer
/// than the kernel takes (ARG_MAX, 2 MiB by default; 560 directories of
/// 4 KB are more): past a budget, ancestors are left out instead.
#[test]
fn many_quarantined_paths_do_not_overflow_rsyncs_command_line() {
    let origin = Origin::new([("keep", "k\n")], &["init"]);
    // q/ and 15 directories of 249 bytes shared, then 560 of 249 bytes
    // (each a quarantined path's directory, 4,002 bytes), each with a file
    // of a 249-byte name (4,252 bytes: more than rsync can carry).
    let shared: Vec<String> =
        std::iter::once("q".to_string()).chain((0..15).map(|i| format!("d{i:03}{}", "x".repeat(245)))).collect();
    for b in 0..560 {
        let dirs: Vec<String> = shared.iter().cloned().chain([format!("b{b:03}{}", "y".repeat(245))]).collect();
        write_deep(&origin, &dirs, &["f".repeat(249)]);
    }
    write(&origin, "q/near.txt", "near\n");
    let mirror = origin.mirror();
    let v = mirror.pass(&[], 1);
    assert_eq!(v["quarantined"].as_array().unwrap().len(), 560, "{}", v["quarantined"][0]);
    // The whole-tree pass again, without them: it runs, and completes.
    let (v, o) = mirror.pass_output(&[], 1);
    assert_eq!(
        (v["bootstrap"].clone(), v["complete"].clone()),
        (Value::Bool(true), Value::Bool(true)),
        "{v} {}",
        stderr(&o)
    );
    assert_eq!(fs::read_to_string(mirror.join("q/near.txt")).unwrap(), "near\n");
}
