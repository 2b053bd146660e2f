//! A new event whose file the origin does not have (docs/decisions.md#missing-upstream),
//! against a real `rsync --daemon` on 127.0.0.1: quiet while a delete
//! event may still explain it (two passes and 10 minutes of the mirror's
//! clock), then `missing upstream`: the pass is not complete and exits 1,
//! `status`, `check` and the Prometheus textfile name it, and later passes
//! retry it without a connection of their own while they transfer anyway.

use crate::util::fixture::{self, Origin};
use crate::util::*;
use serde_json::Value;
use std::fs;

/// An origin holding `keep`, its mirror after a first pass, and the
/// mirror's clock: `at(s)` is `--now` for `s` seconds after that pass.
fn mirrored() -> (Origin, fixture::Mirror, impl Fn(u64) -> String) {
    let origin = Origin::new([("keep", "k\n")], &["init"]);
    let mirror = origin.mirror();
    let t0 = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() + 5;
    let at = move |s: u64| (t0 + s).to_string();
    mirror.pass(&["--now", &at(0)], 0);
    (origin, mirror, at)
}

/// `ghost.txt` recorded as new at the origin, then removed without a
/// delete event (`rrr update` refuses to record a file that is not there).
fn ghost(origin: &Origin) {
    write(origin, "ghost.txt", "boo\n");
    origin.record("new ghost.txt\n");
    fs::remove_file(origin.join("ghost.txt")).unwrap();
}

fn paths(v: &Value) -> Vec<String> {
    v.as_array().unwrap_or(&Vec::new()).iter().map(|m| m["path"].as_str().unwrap().to_string()).collect()
}

#[test]
fn a_listed_file_the_origin_lacks_is_missing_upstream_after_the_grace() {
    let (origin, mirror, at) = mirrored();
    // The origin lists a file it does not have, and never deletes it.
    ghost(&origin);
    let v = mirror.pass(&["--now", &at(10)], 0);
    assert_eq!(v["complete"], true, "quiet during the grace: {v}");
    assert_eq!(v["missing_upstream"], serde_json::json!([]), "{v}");
    assert_eq!(paths(&mirror.state()["missing"]), ["ghost.txt"], "{}", mirror.state());
    // Left out of our copy of the principal meanwhile.
    assert!(!fs::read_to_string(mirror.join("RECENT-1h.yaml")).unwrap().contains("ghost"));
    // A second pass, still within 10 minutes: quiet.
    let v = mirror.pass(&["--now", &at(60)], 0);
    assert_eq!(v["complete"], true, "{v}");
    // Past the grace: not complete, exit 1, named everywhere.
    let (v, o) = mirror.pass_output(&["--now", &at(700)], 1);
    assert_eq!(v["complete"], false, "{v}");
    assert_eq!(paths(&v["missing_upstream"]), ["ghost.txt"], "{v}");
    assert!(stderr(&o).contains("ghost.txt"), "{}", stderr(&o));
    let seen = mirror.monitoring(&["--now", &at(700)]);
    assert_eq!(paths(&seen.status["missing_upstream"]), ["ghost.txt"], "{}", seen.status);
    assert!(seen.plain.contains("missing upstream 1"), "{}", seen.plain);
    assert_eq!(seen.gauge("rrr_mirror_missing_upstream_paths"), Some("1"), "{}", seen.prometheus);
    let (code, line) = seen.check();
    assert_eq!(code, Some(1), "{line}");
    assert!(line.contains("missing upstream") && line.contains("ghost.txt"), "{line}");

    // The origin gets the file after all: the next pass that transfers
    // anything takes it along, in the same connection.
    write(&origin, "ghost.txt", "here now\n");
    write(&origin, "other.txt", "other\n");
    origin.record("new other.txt\n");
    let before = origin.daemon.transfers();
    let v = mirror.pass(&["--now", &at(720)], 0);
    assert_eq!(origin.daemon.transfers() - before, 2, "the principal and one transfer: {v}");
    assert_eq!(fs::read_to_string(mirror.join("ghost.txt")).unwrap(), "here now\n");
    assert_eq!(v["complete"], true, "{v}");
    assert_eq!(mirror.state()["missing"], serde_json::json!([]), "{}", mirror.state());
    assert!(fs::read_to_string(mirror.join("RECENT-1h.yaml")).unwrap().contains("ghost.txt"));
}

#[test]
fn an_upload_followed_by_its_delete_stays_quiet() {
    let (origin, mirror, at) = mirrored();
    // Uploaded and recorded, then removed before the mirror came; the
    // delete event is recorded a little later.
    write(&origin, "brief.txt", "brief\n");
    origin.record("new brief.txt\n");
    fs::remove_file(origin.join("brief.txt")).unwrap();
    let v = mirror.pass(&["--now", &at(10)], 0);
    assert_eq!(v["complete"], true, "{v}");
    origin.record("delete brief.txt\n");
    let v = mirror.pass(&["--now", &at(20)], 0);
    assert_eq!(v["complete"], true, "{v}");
    assert_eq!(mirror.state()["missing"], serde_json::json!([]), "{}", mirror.state());
    // Even long after: nothing is missing.
    let v = mirror.pass(&["--now", &at(2000)], 0);
    assert_eq!((v["complete"].clone(), v["missing_upstream"].clone()), (Value::Bool(true), serde_json::json!([])));
}

/// With nothing else to transfer, a missing path is retried on its own
/// only once the grace has passed: idle passes cost no connection for it.
#[test]
fn a_missing_path_costs_idle_passes_no_connection() {
    let (origin, mirror, at) = mirrored();
    ghost(&origin);
    mirror.pass(&["--now", &at(10)], 0);
    let before = origin.daemon.transfers();
    for s in [30, 50, 70] {
        mirror.pass(&["--now", &at(s)], 0);
    }
    assert_eq!(origin.daemon.transfers() - before, 3, "one principal fetch a pass");
    // Once the grace is over it is tried again, found missing, and reported.
    let v = mirror.pass(&["--now", &at(700)], 1);
    assert_eq!(paths(&v["missing_upstream"]), ["ghost.txt"], "{v}");
    assert_eq!(v["missing_upstream"][0]["attempts"], 2, "{v}");
}

/// A Perl writer records `trailcr\r` (YAML::Syck dumps it plain, with the
/// CR before the line end); its next write reads the file back with
/// YAML::Syck, which cuts that CR: the origin's index now names `trailcr`.
/// The mirror finds `trailcr` missing and, retrying, asks for the name
/// with its CR too: the file arrives.
#[test]
fn a_name_whose_trailing_cr_a_perl_writer_lost_is_fetched() {
    let (origin, mirror, at) = mirrored();
    let perl = |path: &str| {
        let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/util/perl_writer.pl");
        let o = std::process::Command::new("perl")
            .arg(script)
            .arg(origin.join("RECENT-1h.yaml"))
            .arg(path)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    };
    write(&origin, "trailcr\r", "cr\n");
    perl("trailcr\r");
    write(&origin, "other", "o\n");
    perl("other");
    let index = fs::read_to_string(origin.join("RECENT-1h.yaml")).unwrap();
    assert!(index.contains("path: trailcr\n") && !index.contains("trailcr\r"), "{index:?}");
    let v = mirror.pass(&["--now", &at(10)], 0);
    assert_eq!(fs::read_to_string(mirror.join("other")).unwrap(), "o\n", "{v}");
    assert_eq!(paths(&mirror.state()["missing"]), ["trailcr"]);
    let (v, o) = mirror.pass_output(&["--now", &at(700)], 0);
    assert_eq!(fs::read_to_string(mirror.join("trailcr\r")).unwrap(), "cr\n", "{v}");
    assert!(stderr(&o).contains("the origin's index lost the name's trailing CR"), "{}", stderr(&o));
    assert_eq!(mirror.state()["missing"], serde_json::json!([]), "{}", mirror.state());
}

/// The `missing` list is kept sorted (each lookup is a binary search); a
/// state edited by hand is sorted again when it is taken, so that paths
/// that arrive leave the list instead of being reported later as missing
/// upstream while they are in place.
#[test]
fn a_hand_edited_missing_list_is_sorted_again() {
    let (origin, mirror, at) = mirrored();
    let names = ["a.txt", "b.txt", "c.txt"];
    for n in names {
        write(&origin, n, "x\n");
        origin.record(&format!("new {n}\n"));
        fs::remove_file(origin.join(n)).unwrap();
    }
    mirror.pass(&["--now", &at(10)], 0);
    assert_eq!(paths(&mirror.state()["missing"]), names);
    let file = mirror.join(".rrr/state.json");
    let mut st: Value = serde_json::from_slice(&fs::read(&file).unwrap()).unwrap();
    st["missing"].as_array_mut().unwrap().reverse();
    fs::write(&file, serde_json::to_vec(&st).unwrap()).unwrap();
    // They arrive along with the next transfer.
    for n in names.iter().chain(&["other.txt"]) {
        write(&origin, n, "here\n");
    }
    origin.record("new other.txt\n");
    let v = mirror.pass(&["--now", &at(20)], 0);
    assert_eq!(fs::read_to_string(mirror.join("a.txt")).unwrap(), "here\n", "{v}");
    assert_eq!(mirror.state()["missing"], serde_json::json!([]), "{}", mirror.state());
}
