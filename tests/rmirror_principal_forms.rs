//! A mirror reads what the origin has (issue 30), against a real
//! `rsync --daemon` on 127.0.0.1: a collection without its `RECENT.recent`
//! link (a fresh rrrgo collection has none until its first update) through
//! `--remote …/RECENT-1h.yaml`, and a `RECENT.recent` that is a regular
//! file (rrrgo's library replaces the link by a copy of the principal, and
//! then updates the copy).

use crate::util::fixture::Origin;
use crate::util::*;
use std::fs;

#[test]
fn a_collection_without_its_link_is_mirrored_through_the_principal_name() {
    let origin = Origin::new([("keep", "k\n")], &["init"]);
    fs::remove_file(origin.join("RECENT.recent")).unwrap();
    let mut mirror = origin.mirror();
    mirror.remote = format!("{}/RECENT-1h.yaml", origin.daemon.url("origin"));
    let v = mirror.pass(&[], 0);
    assert_eq!((v["bootstrap"].clone(), v["complete"].clone()), (true.into(), true.into()), "{v}");
    assert_eq!(fs::read_to_string(mirror.join("keep")).unwrap(), "k\n");
    write(&origin, "new.txt", "new\n");
    Rrr::new().args(["update", &format!("{}/RECENT-1h.yaml", origin.display()), "new.txt"]).assert_ok();
    let v = mirror.pass(&[], 0);
    assert_eq!((v["bootstrap"].clone(), v["transferred"].clone()), (false.into(), 1.into()), "{v}");
    assert_eq!(fs::read_to_string(mirror.join("new.txt")).unwrap(), "new\n");
    assert!(fs::symlink_metadata(mirror.join("RECENT.recent")).is_err(), "no link invented");
}

#[test]
fn a_principal_that_is_a_regular_file_is_read_on_the_mirror() {
    let origin = Origin::new([("keep", "k\n")], &["init"]);
    let mirror = origin.mirror();
    mirror.pass(&[], 0);
    // Its writer replaced the link by a copy of the principal and records
    // into the copy: x2 is listed only there.
    let principal = origin.join("RECENT-1h.yaml");
    let before = fs::read(&principal).unwrap();
    write(&origin, "x2", "x2\n");
    Rrr::new().args(["update", &format!("{}", principal.display()), "x2"]).assert_ok();
    let copy = fs::read(&principal).unwrap();
    fs::write(&principal, before).unwrap();
    fs::remove_file(origin.join("RECENT.recent")).unwrap();
    fs::write(origin.join("RECENT.recent"), &copy).unwrap();
    let v = mirror.pass(&[], 0);
    assert_eq!(fs::read_to_string(mirror.join("x2")).unwrap(), "x2\n", "{v}");
    assert_eq!(fs::read(mirror.join("RECENT-1h.yaml")).unwrap(), copy, "the copy is the principal");
    assert_eq!(fs::read_link(mirror.join("RECENT.recent")).unwrap(), std::path::Path::new("RECENT-1h.yaml"));
    // A first mirror of such an origin, and `news --remote`, read it too.
    let fresh = origin.mirror_at(origin.dir().join("fresh"));
    fresh.pass(&[], 0);
    assert_eq!(fs::read_to_string(fresh.join("x2")).unwrap(), "x2\n");
    // Our own link, should it be such a copy, is ours to replace.
    fs::remove_file(fresh.join("RECENT.recent")).unwrap();
    fs::write(fresh.join("RECENT.recent"), &copy).unwrap();
    fresh.pass(&[], 0);
    assert_eq!(fs::read_link(fresh.join("RECENT.recent")).unwrap(), std::path::Path::new("RECENT-1h.yaml"));
    let news = ok(&["news", "--remote", &origin.src(), "--max", "1"]);
    assert!(news.trim_end().ends_with("\tnew\tx2"), "{news}");
}
