//! Mass deletes are held (docs/decisions.md#mass-deletes), against a real
//! `rsync --daemon` on 127.0.0.1: delete events of one incremental pass for
//! more than 10 % of the mirror (and at least 1,000 files) wait for
//! `--accept-deletes` or a `--max-delete` that covers them, while ordinary
//! deletes go on; and a whole-tree pass that would delete more than half
//! of a small mirror (a module re-pointed at another collection) stops too.

use crate::util::fixture::{Mirror, Origin};
use crate::util::rsyncd::RsyncDaemon;
use crate::util::*;
use serde_json::Value;
use std::fs;
use std::path::Path;

fn files_under(root: &Path) -> usize {
    walkdir::WalkDir::new(root)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .filter(|e| !e.path().strip_prefix(root).unwrap().starts_with(".rrr"))
        .filter(|e| !e.file_name().to_string_lossy().starts_with("RECENT"))
        .count()
}

#[test]
fn delete_events_for_a_mass_of_the_mirror_are_held() {
    let origin = Origin::new((0..2100).map(|i| (format!("d{}/f{i:04}", i % 20), "f\n")), &["init"]);
    let mirror = origin.mirror();
    mirror.pass(&[], 0);
    assert_eq!(files_under(&mirror), 2100);
    // An ordinary delete goes through.
    let few: String = (0..50).map(|i| format!("delete d{}/f{i:04}\n", i % 20)).collect();
    origin.record(&few);
    let v = mirror.pass(&[], 0);
    assert_eq!(v["deleted"], 50, "{v}");
    // The origin lists deletes of 1,000 files it still has (49 %): held,
    // nothing deleted, kept pending, exit 1, and the way on named.
    let many: String = (50..1050).map(|i| format!("delete d{}/f{i:04}\n", i % 20)).collect();
    origin.record(&many);
    for _ in 0..2 {
        let (v, o) = mirror.pass_output(&[], 1);
        assert_eq!((v["mass_deletes_held"].clone(), v["deleted"].clone()), (Value::Bool(true), 0.into()), "{v}");
        assert_eq!(v["complete"], false, "{v}");
        assert!(stderr(&o).contains("would delete 1000 of the mirror's 2050 files"), "{}", stderr(&o));
        assert!(stderr(&o).contains("--max-delete 1000") && stderr(&o).contains("--accept-deletes"), "{}", stderr(&o));
        assert_eq!(files_under(&mirror), 2050);
    }
    assert_eq!(mirror.state()["pending_deletes"].as_array().unwrap().len(), 1000);
    assert_eq!(mirror.state()["last_outcome"], "held");
    let seen = mirror.monitoring(&[]);
    let st = &seen.status;
    assert_eq!((st["held_deletes"].clone(), st["pending_deletes"].clone()), (1000.into(), 1000.into()), "{st}");
    assert_eq!(seen.gauge("rrr_mirror_held_deletes"), Some("1000"), "{}", seen.prometheus);
    let (code, line) = seen.check();
    assert_eq!(code, Some(1), "{line}");
    assert!(line.contains("held back a mass delete"), "{line}");
    // A --max-delete below the count does not let them go; one covering it does.
    mirror.pass(&["--max-delete", "999"], 1);
    assert_eq!(files_under(&mirror), 2050);
    let v = mirror.pass(&["--max-delete", "1000"], 0);
    assert_eq!(v["deleted"], 1000, "{v}");
    assert_eq!(files_under(&mirror), 1050);

    // --accept-deletes lets the next one go.
    let more: String = (1050..2050).map(|i| format!("delete d{}/f{i:04}\n", i % 20)).collect();
    origin.record(&more);
    mirror.pass(&[], 1);
    assert_eq!(files_under(&mirror), 1050);
    let v = mirror.pass(&["--accept-deletes"], 0);
    assert_eq!(v["deleted"], 1000, "{v}");
    assert_eq!(files_under(&mirror), 50);
}

/// A daemon module that an operator re-points at another collection (its
/// path a symlink): the mirror's state names the same remote, the
/// dirtymark changed, and the whole-tree pass would delete 29 of its 30
/// files. More than half of a mirror of any size is held.
#[test]
fn a_small_mirror_re_pointed_at_another_collection_is_not_emptied() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, module) = (tmp.path().join("a"), tmp.path().join("b"), tmp.path().join("module"));
    for i in 0..30 {
        write(&a, &format!("a{i:02}"), "a\n");
    }
    write(&b, "b00", "b\n");
    ok(&["--now", "1790000000", "init", s(&a)]);
    ok(&["--now", "1790000100", "init", s(&b)]);
    std::os::unix::fs::symlink(&a, &module).unwrap();
    let daemon = RsyncDaemon::start(&[("origin", &module)]);
    let mirror = Mirror { root: tmp.path().join("target"), remote: format!("{}/RECENT.recent", daemon.url("origin")) };
    mirror.pass(&["--now", "1790000200"], 0);
    assert_eq!(files_under(&mirror), 30);
    fs::remove_file(&module).unwrap();
    std::os::unix::fs::symlink(&b, &module).unwrap();
    let (v, o) = mirror.pass_output(&["--now", "1790000200"], 1);
    assert_eq!(v["mass_deletes_held"], true, "{v}");
    assert!(stderr(&o).contains("would delete 30 of the mirror's 30 files"), "{}", stderr(&o));
    assert_eq!(files_under(&mirror), 30, "nothing deleted");
    assert_eq!(v["deletes_held"], 30, "{v}");
    let v = mirror.pass(&["--now", "1790000200", "--accept-deletes"], 0);
    assert!(v["deleted"].as_u64().unwrap() >= 30, "{v}");
    assert_eq!(files_under(&mirror), 1);
}
