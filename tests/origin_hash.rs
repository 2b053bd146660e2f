//! `--hash sha256` on the origin writers (rrr::origin::hashing,
//! protocol.md 4.1/4.2): each new regular file's event carries the size
//! and sha256 that `sha256sum` computes, the setting lives in the
//! principal's meta (`Hash: sha256`) so later writers go on without the
//! flag, `--hash none` stops it, an unreadable file is recorded unhashed
//! with a warning, and the real YAML::Syck loads and dumps what rrr wrote.

use crate::util::*;
use rrr::recentfile::{Event, EventKind, Recentfile};
use std::fs;
use std::path::Path;

/// `sha256sum`'s digest of `file`.
fn sha256sum(file: &Path) -> String {
    let o = std::process::Command::new("sha256sum").arg(file).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap().split_whitespace().next().unwrap().to_string()
}

fn principal_rf(root: &Path) -> Recentfile {
    rrr::store::read_file(&root.join("RECENT-1h.yaml")).unwrap().unwrap()
}

fn event<'a>(rf: &'a Recentfile, path: &str) -> &'a Event {
    rf.events.iter().find(|e| e.path == *path).unwrap_or_else(|| panic!("{path} in {:?}", rf.events))
}

/// The event of `path` records the file's size and `sha256sum`'s digest.
fn assert_hashed(root: &Path, path: &str) {
    let rf = principal_rf(root);
    let e = event(&rf, path);
    assert_eq!(e.kind, EventKind::New);
    assert_eq!(e.size, Some(fs::metadata(root.join(path)).unwrap().len()), "{path}: {e:?}");
    assert_eq!(e.sha256.as_ref().map(|h| h.to_string()), Some(sha256sum(&root.join(path))), "{path}: {e:?}");
}

fn assert_unhashed(root: &Path, path: &str) {
    let rf = principal_rf(root);
    let e = event(&rf, path);
    assert_eq!((e.size, &e.sha256), (None, &None), "{path}: {e:?}");
}

/// A tree with an empty file, a small one, one of several read buffers,
/// a symlink and a directory.
fn tree() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("origin");
    fs::create_dir_all(root.join("a/sub")).unwrap();
    fs::write(root.join("a/x.txt"), "hello\n").unwrap();
    fs::write(root.join("empty"), "").unwrap();
    let big: Vec<u8> = (0..700_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    fs::write(root.join("big.bin"), big).unwrap();
    std::os::unix::fs::symlink("a/x.txt", root.join("link")).unwrap();
    (tmp, root)
}

#[test]
fn init_and_update_record_sha256sum_s_digest_and_the_setting_persists() {
    let (_tmp, root) = tree();
    let p = principal(&root);
    Rrr::new().args(["init", s(&root), "--hash", "sha256"]).assert_ok();
    let rf = principal_rf(&root);
    assert_eq!(rf.meta.hash.as_deref(), Some("sha256"));
    let yaml = fs::read_to_string(root.join("RECENT-1h.yaml")).unwrap();
    assert!(yaml.starts_with("--- \nmeta: \n  Hash: sha256\n  Producers: \n"), "{yaml}");
    for f in ["a/x.txt", "empty", "big.bin"] {
        assert_hashed(&root, f);
    }
    // A symlink gets no hash.
    assert_unhashed(&root, "link");

    // The next writer hashes without the flag; a delete has no hash.
    fs::write(root.join("b.txt"), "world\n").unwrap();
    Rrr::new().args(["update", &p, "b.txt"]).assert_ok();
    assert_hashed(&root, "b.txt");
    fs::remove_file(root.join("empty")).unwrap();
    Rrr::new().args(["update", &p, "--delete", "empty"]).assert_ok();
    assert_unhashed(&root, "empty");
    fs::write(root.join("c.txt"), "via stdin\n").unwrap();
    Rrr::new().args(["update", &p, "--stdin"]).stdin("new c.txt\n").assert_ok();
    assert_hashed(&root, "c.txt");
    assert_eq!(principal_rf(&root).meta.hash.as_deref(), Some("sha256"));

    // --hash none: this event unhashed, the key gone, and so for later writers.
    fs::write(root.join("a/x.txt"), "changed\n").unwrap();
    Rrr::new().args(["update", &p, "--hash", "none", "a/x.txt"]).assert_ok();
    assert_unhashed(&root, "a/x.txt");
    assert_eq!(principal_rf(&root).meta.hash, None);
    fs::write(root.join("d.txt"), "d\n").unwrap();
    Rrr::new().args(["update", &p, "d.txt"]).assert_ok();
    assert_unhashed(&root, "d.txt");
    // Hashes already recorded stay with their events.
    assert_hashed(&root, "b.txt");

    // Turned on again by update; init --force keeps the collection's setting.
    Rrr::new().args(["update", &p, "--hash", "sha256", "d.txt"]).assert_ok();
    assert_hashed(&root, "d.txt");
    Rrr::new().args(["init", "--force", s(&root)]).assert_ok();
    assert_eq!(principal_rf(&root).meta.hash.as_deref(), Some("sha256"));
    assert_hashed(&root, "a/x.txt");
    Rrr::new().args(["init", "--force", s(&root), "--hash", "none"]).assert_ok();
    assert_eq!(principal_rf(&root).meta.hash, None);
    assert_unhashed(&root, "a/x.txt");
}

#[test]
fn without_the_flag_nothing_is_hashed() {
    let (_tmp, root) = tree();
    Rrr::new().args(["init", s(&root)]).assert_ok();
    fs::write(root.join("b.txt"), "world\n").unwrap();
    Rrr::new().args(["update", &principal(&root), "b.txt"]).assert_ok();
    let rf = principal_rf(&root);
    assert_eq!(rf.meta.hash, None);
    assert!(rf.events.iter().all(|e| e.size.is_none() && e.sha256.is_none()), "{:?}", rf.events);
    let yaml = fs::read_to_string(root.join("RECENT-1h.yaml")).unwrap();
    assert!(!yaml.contains("Hash"), "{yaml}");
}

/// A file rrr cannot read (root's, mode 0600, rrr running as `nobody`):
/// its event is recorded all the same, unhashed, with a warning naming it.
#[test]
fn an_unreadable_file_is_recorded_unhashed_with_a_warning() {
    use std::os::unix::fs::{chown, PermissionsExt};
    if !nix::unistd::geteuid().is_root() {
        panic!("this test needs root (CI runs as root) to make a file rrr cannot read");
    }
    let (tmp, root) = tree();
    Rrr::new().args(["init", s(&root), "--hash", "sha256"]).assert_ok();
    fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let nobody = 65534;
    for e in walkdir::WalkDir::new(&root) {
        chown(e.unwrap().path(), Some(nobody), Some(nobody)).unwrap();
    }
    fs::write(root.join("secret"), "not for nobody\n").unwrap();
    fs::set_permissions(root.join("secret"), fs::Permissions::from_mode(0o600)).unwrap();
    fs::write(root.join("open"), "for all\n").unwrap();
    let o = Rrr::new().args(["update", &principal(&root), "secret", "open"]).user(nobody, nobody).assert_ok();
    let err = stderr(&o);
    assert!(err.contains("cannot hash secret: Permission denied"), "{err}");
    assert!(err.contains("recorded without size and sha256"), "{err}");
    assert_unhashed(&root, "secret");
    assert_hashed(&root, "open");
}

fn fsck_json(root: &Path, extra: &[&str], code: i32) -> Vec<serde_json::Value> {
    let o = Rrr::new().args(["fsck", "--json", &principal(root)]).args(extra).assert_exit(code);
    stdout(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn fsck_finds_a_changed_byte_and_a_same_size_replacement_and_repair_records_them_again() {
    let (tmp, root) = tree();
    Rrr::new().args(["init", s(&root), "--hash", "sha256"]).assert_ok();
    fsck_json(&root, &[], 0);
    let old_x = sha256sum(&root.join("a/x.txt"));
    // One byte changed in place, the size kept.
    fs::write(root.join("a/x.txt"), "hellO\n").unwrap();
    // Replaced by another file of the same size (a rename over it).
    let other = tmp.path().join("other");
    let mut bytes = fs::read(root.join("big.bin")).unwrap();
    bytes[123_456] ^= 0x20;
    fs::write(&other, &bytes).unwrap();
    fs::rename(&other, root.join("big.bin")).unwrap();
    // Grown: the size tells, nothing is read.
    fs::write(root.join("empty"), "now").unwrap();
    // And a file the index does not know yet.
    fs::write(root.join("new.txt"), "new\n").unwrap();

    let found = fsck_json(&root, &[], 1);
    let content: Vec<&serde_json::Value> = found.iter().filter(|f| f["kind"] == "content_mismatch").collect();
    assert_eq!(content.len(), 3, "{found:?}");
    let x = content.iter().find(|f| f["path"] == "a/x.txt").unwrap();
    assert_eq!(x["indexed_sha256"], old_x.as_str(), "{x}");
    assert_eq!(x["sha256"], sha256sum(&root.join("a/x.txt")).as_str(), "{x}");
    assert_eq!((x["size"].as_u64(), x["indexed_size"].as_u64()), (Some(6), Some(6)), "{x}");
    let big = content.iter().find(|f| f["path"] == "big.bin").unwrap();
    assert_eq!(big["sha256"], sha256sum(&root.join("big.bin")).as_str(), "{big}");
    let e = content.iter().find(|f| f["path"] == "empty").unwrap();
    assert_eq!(
        (e["size"].as_u64(), e["indexed_size"].as_u64(), &e["sha256"]),
        (Some(3), Some(0), &serde_json::Value::Null)
    );
    let plain = stdout(&Rrr::new().args(["fsck", &principal(&root)]).assert_exit(1));
    assert!(plain.contains("content_mismatch\ta/x.txt\tsize 6 (indexed 6), sha256 "), "{plain}");

    // --repair records each again with its current hash (and hashes the new file).
    Rrr::new().args(["fsck", "--repair", &principal(&root)]).assert_exit(1);
    for f in ["a/x.txt", "big.bin", "empty", "new.txt"] {
        assert_hashed(&root, f);
    }
    fsck_json(&root, &[], 0);
}

#[test]
fn watch_records_hashes_and_keeps_doing_so_without_the_flag() {
    use crate::watch::Daemon;
    let (_tmp, root) = tree();
    Rrr::new().args(["init", s(&root)]).assert_ok();
    let hashed = |path: &str| {
        let rf = principal_rf(&root);
        rf.events.iter().any(|e| e.path == *path && e.sha256.is_some())
    };
    let d = Daemon::start(&root, &["--hash", "sha256"]);
    fs::write(root.join("w1.txt"), "watched\n").unwrap();
    wait_for("w1.txt recorded with its hash", crate::watch::WAIT, || hashed("w1.txt"));
    assert_hashed(&root, "w1.txt");
    assert_eq!(principal_rf(&root).meta.hash.as_deref(), Some("sha256"));
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    // Written while no watch ran (its start-up records it), then one after: hashed without the flag.
    fs::write(root.join("while-down.txt"), "down\n").unwrap();
    let d = Daemon::start(&root, &[]);
    fs::write(root.join("w2.txt"), "again\n").unwrap();
    wait_for("w2.txt recorded with its hash", crate::watch::WAIT, || hashed("w2.txt") && hashed("while-down.txt"));
    assert_hashed(&root, "w2.txt");
    assert_hashed(&root, "while-down.txt");
    d.stop();
}

/// The beacon's `hash` follows the principal's `Hash`; a principal whose
/// key was dropped (as a Perl writer's rewrite drops it) while the beacon
/// says `sha256` goes on hashing and gets the key back.
#[test]
fn the_beacon_says_sha256_and_remembers_it_for_a_principal_that_lost_the_key() {
    let (_tmp, root) = tree();
    let p = principal(&root);
    let beacon_hash = || {
        let b: serde_json::Value =
            serde_json::from_slice(&fs::read(root.join("RECENT-1h.yaml.beacon.json")).unwrap()).unwrap();
        b["hash"].clone()
    };
    Rrr::new().args(["init", s(&root), "--origin-name", "o.example"]).assert_ok();
    assert_eq!(beacon_hash(), serde_json::Value::Null);
    fs::write(root.join("b.txt"), "b\n").unwrap();
    Rrr::new().args(["update", &p, "--hash", "sha256", "b.txt"]).assert_ok();
    assert_eq!(beacon_hash(), "sha256");
    // The key removed from the principal behind rrr's back.
    let yaml = fs::read_to_string(root.join("RECENT-1h.yaml")).unwrap();
    fs::write(root.join("RECENT-1h.yaml"), yaml.replace("  Hash: sha256\n", "")).unwrap();
    assert_eq!(principal_rf(&root).meta.hash, None);
    fs::write(root.join("c.txt"), "c\n").unwrap();
    Rrr::new().args(["update", &p, "c.txt"]).assert_ok();
    assert_hashed(&root, "c.txt");
    assert_eq!(principal_rf(&root).meta.hash.as_deref(), Some("sha256"));
    Rrr::new().args(["update", &p, "--hash", "none", "c.txt"]).assert_ok();
    assert_eq!(beacon_hash(), serde_json::Value::Null);
    assert_unhashed(&root, "c.txt");
}
