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
