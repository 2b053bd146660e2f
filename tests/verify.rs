//! `rrr verify` (docs/decisions.md#verify): a real mirror, filled by
//! `rrr rmirror` from a real `rsync --daemon` on 127.0.0.1, against its own
//! copies of the recentfiles: complete (exit 0), a deleted and an injected
//! file (exit 1, named in the lines, the JSON and the fetch list), an
//! incomplete mirror, and names with a newline and a byte that is not UTF-8.

use crate::util::fixture::Origin;
use crate::util::*;
use serde_json::Value;
use std::fs;
use std::os::unix::ffi::OsStrExt;

fn verify(root: &std::path::Path, extra: &[&str], code: i32) -> (String, std::process::Output) {
    let o = Rrr::new().args(["verify", "--localroot", s(root)]).args(extra).assert_exit(code);
    (stdout(&o), o)
}

fn json(root: &std::path::Path, extra: &[&str], code: i32) -> Value {
    let (out, _) = verify(root, &[&["--json"], extra].concat(), code);
    assert_eq!(out.lines().count(), 1, "one object: {out}");
    serde_json::from_str(&out).unwrap()
}

#[test]
fn a_complete_mirror_then_a_deleted_and_an_injected_file() {
    let origin = Origin::numbered(5, |i| format!("id/f{i}.txt"));
    let mirror = origin.mirror();
    mirror.pass(&[], 0);
    let v = json(&mirror, &[], 0);
    assert_eq!(v["kind"], "verify", "{v}");
    assert_eq!(v["complete"], true, "{v}");
    assert_eq!(v["indexed"], 5, "{v}");
    assert_eq!(v["present"], 5, "{v}");
    // rrr's own files (.rrr/, the recentfiles, RECENT.recent) are not unknown.
    assert_eq!(v["unknown"], serde_json::json!([]), "{v}");
    assert_eq!(v["horizon"], Value::Null, "a cascade ending in Z forgets nothing: {v}");
    let (out, _) = verify(&mirror, &["--hash"], 0);
    assert!(out.starts_with("verify: complete: 5 indexed files"), "{out}");
    assert!(out.contains("5 files hashed"), "{out}");

    // Tampered: one file gone, one injected.
    fs::remove_file(mirror.join("id/f3.txt")).unwrap();
    write(&mirror, "id/evil.txt", "injected\n");
    let list = origin.dir().join("fetch");
    let (out, _) = verify(&mirror, &["--fetch-list", s(&list)], 1);
    assert!(out.contains("missing\tid/f3.txt\n"), "{out}");
    assert!(out.contains("unknown\tid/evil.txt\n"), "{out}");
    assert!(
        out.contains("verify: DIFFERENCES: 5 indexed files, 4 present, 1 missing, 0 different, 1 unknown"),
        "{out}"
    );
    assert_eq!(fs::read(&list).unwrap(), b"id/f3.txt\0");
    let v = json(&mirror, &[], 1);
    assert_eq!(v["complete"], false, "{v}");
    assert_eq!(v["missing"], serde_json::json!(["id/f3.txt"]), "{v}");
    assert_eq!(v["unknown"], serde_json::json!(["id/evil.txt"]), "{v}");
    // The fetch list feeds plain rsync: the missing file comes back.
    let o = std::process::Command::new("rsync")
        .args(["-a", "--from0", &format!("--files-from={}", s(&list))])
        .arg(format!("{}/", origin.daemon.url("origin")))
        .arg(format!("{}/", s(&mirror)))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // An excluded path is neither unknown nor checked.
    let v = json(&mirror, &["--exclude", "evil.txt"], 0);
    assert_eq!(v["complete"], true, "{v}");
}

#[test]
fn an_incomplete_mirror_and_a_delete_the_mirror_has_not_applied() {
    let origin = Origin::numbered(3, |i| format!("f{i}"));
    let mirror = origin.mirror();
    mirror.pass(&[], 0);
    // The mirror's copies say f1 exists: a file lost behind rrr's back.
    fs::remove_file(mirror.join("f1")).unwrap();
    fs::remove_file(mirror.join("f2")).unwrap();
    let v = json(&mirror, &[], 1);
    assert_eq!(v["missing"], serde_json::json!(["f1", "f2"]), "{v}");
    // A pass does not notice (the events are done): that is what verify is for.
    mirror.pass(&[], 0);
    json(&mirror, &[], 1);
    // An origin delete, mirrored: deletes remove the path from the index.
    origin.change(&[], &["f1"]);
    mirror.pass(&[], 0);
    let v = json(&mirror, &[], 1);
    assert_eq!(v["missing"], serde_json::json!(["f2"]), "{v}");
    // A tree that is no mirror: an error, exit 2.
    let empty = origin.dir().join("empty");
    fs::create_dir(&empty).unwrap();
    let (_, o) = verify(&empty, &[], 2);
    assert!(stderr(&o).contains("not a mirror"), "{}", stderr(&o));
}

#[test]
fn odd_names_are_escaped_in_lines_lossless_in_json_raw_in_the_fetch_list() {
    let origin = Origin::new([("a\nb", "x\n"), ("ok", "y\n")], &["init"]);
    let bad = origin.join(std::ffi::OsStr::from_bytes(b"caf\xe9"));
    fs::write(&bad, "z\n").unwrap();
    Rrr::new().args(["fsck", "--repair", &principal(&origin)]).assert_exit(1);
    let mirror = origin.mirror();
    mirror.pass(&[], 0);
    json(&mirror, &[], 0);
    fs::remove_file(mirror.join("a\nb")).unwrap();
    fs::remove_file(mirror.join(std::ffi::OsStr::from_bytes(b"caf\xe9"))).unwrap();
    let list = origin.dir().join("fetch");
    let (out, _) = verify(&mirror, &["--fetch-list", s(&list)], 1);
    assert!(out.contains("missing\ta\\nb\n"), "{out}");
    assert!(out.contains("missing\tcaf\\351\n"), "{out}");
    let v = json(&mirror, &[], 1);
    assert_eq!(v["missing"], serde_json::json!(["a\nb", {"bytes": "636166e9"}]), "{v}");
    assert_eq!(fs::read(&list).unwrap(), b"a\nb\0caf\xe9\0");
}

#[test]
fn verify_every_makes_a_pass_fetch_a_file_lost_behind_its_back() {
    let origin = Origin::numbered(3, |i| format!("id/f{i}"));
    let mirror = origin.mirror();
    let t0 = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() + 5;
    let at = |s: u64| (t0 + s).to_string();
    mirror.pass(&["--now", &at(0), "--verify-every", "1d"], 0);
    fs::remove_file(mirror.join("id/f1")).unwrap();
    // Not due yet (the mirror started less than a day ago): nothing noticed.
    mirror.pass(&["--now", &at(60), "--verify-every", "1d"], 0);
    assert!(!mirror.join("id/f1").exists());
    assert!(mirror.state().get("last_verify").is_none_or(Value::is_null), "{}", mirror.state());
    // Due: verify finds it, the same pass fetches it, without --full.
    let v = mirror.pass(&["--now", &at(86_460), "--verify-every", "1d"], 0);
    assert_eq!(v["bootstrap"], false, "no whole-tree pass: {v}");
    assert_eq!(fs::read_to_string(mirror.join("id/f1")).unwrap(), "file 1\n");
    let st = mirror.state();
    assert_eq!(st["last_verify"]["missing"], 1, "{st}");
    assert_eq!(st["last_verify"]["time"], at(86_460), "{st}");
    assert_eq!(st["failing"], serde_json::json!([]), "{st}");
    let seen = mirror.monitoring(&["--now", &at(86_470)]);
    assert_eq!(seen.status["last_verify"]["missing"], 1, "{}", seen.status);
    assert!(seen.plain.contains("last verify "), "{}", seen.plain);
    assert_eq!(seen.gauge("rrr_mirror_verify_differences"), Some("1"), "{}", seen.prometheus);
    json(&mirror, &[], 0);
}

/// Right after `init --aggregate` every recentfile repeats every event
/// (verify parses the repeats once: docs/decisions.md#verify); after an
/// update and an aggregate the smaller files hold newer events and a
/// delete that the larger ones' repeats of older events must not undo.
#[test]
fn a_cascade_that_repeats_itself_is_read_as_its_union() {
    let origin = Origin::numbered(4, |i| format!("d/f{i}"));
    let v = json(&origin, &[], 0);
    assert_eq!(v["indexed"], 4, "{v}");
    origin.change(&["d/g"], &["d/f1"]);
    let v = json(&origin, &[], 0);
    assert_eq!(v["indexed"], 4, "f1 deleted, g new: {v}");
    fs::remove_file(origin.join("d/f2")).unwrap();
    fs::remove_file(origin.join("d/g")).unwrap();
    write(&origin, "d/f1", "back\n");
    let v = json(&origin, &[], 1);
    assert_eq!(v["missing"], serde_json::json!(["d/f2", "d/g"]), "{v}");
    assert_eq!(v["unknown"], serde_json::json!(["d/f1"]), "{v}");
}

/// An index that records `size` and `sha256` (protocol.md 4.2): verify
/// compares the size always and the sha256 with `--hash`. (Before, the
/// recorded values were not read: a file of another size or content was
/// "complete".)
#[test]
fn recorded_sizes_and_hashes_are_compared() {
    let origin = Origin::new([("a", "x\n"), ("b", "y\n")], &["init"]);
    // sha256("x\n"), as `sha256sum` prints it.
    let o = std::process::Command::new("sha256sum").arg(origin.join("a")).output().unwrap();
    let sha = String::from_utf8(o.stdout).unwrap().split(' ').next().unwrap().to_string();
    assert_eq!(sha.len(), 64, "{sha}");
    let principal = fs::canonicalize(origin.join("RECENT.recent")).unwrap();
    let text = fs::read_to_string(&principal).unwrap();
    let at = text.find("    path: a\n").unwrap() + "    path: a\n".len();
    let text = format!("{}    sha256: {sha}\n    size: 2\n{}", &text[..at], &text[at..]);
    fs::write(&principal, text).unwrap();
    let v = json(&origin, &["--hash"], 0);
    assert_eq!((v["checked_size"].clone(), v["checked_sha256"].clone()), (1.into(), 1.into()), "{v}");
    // The same size, other bytes: only --hash sees it.
    write(&origin, "a", "z\n");
    json(&origin, &[], 0);
    let v = json(&origin, &["--hash"], 1);
    assert_eq!(v["different"][0]["path"], "a", "{v}");
    assert_eq!(v["different"][0]["expected_sha256"], sha.as_str(), "{v}");
    // Another size: seen without --hash.
    write(&origin, "a", "zz\n");
    let (out, _) = verify(&origin, &[], 1);
    assert!(out.contains("different\ta\tsize 3 (index 2)\n"), "{out}");
}
