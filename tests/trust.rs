//! The origin's signed beacon `RECENT-1h.yaml.beacon.json` (issues 34, 35): every
//! origin writer keeps it current in the right order, signs it with
//! `--sign-key` so that the real `ssh-keygen -Y verify -n rrr` accepts it,
//! refuses bad keys at start and unsigned writes to a signed collection,
//! `rrr beacon` and the watch heartbeat refresh it, and it is never
//! indexed as an event.

use crate::util::{self, s, stderr, write, Rrr};
use recentfile::beacon::{Beacon, FileDigest};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// A fresh ed25519 key pair made by the real ssh-keygen: (private, allowed_signers).
pub(crate) fn keypair(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let key = dir.join(name);
    let st = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", name, "-f"])
        .arg(&key)
        .status()
        .expect("ssh-keygen (openssh-client) is installed");
    assert!(st.success());
    let public = std::fs::read_to_string(key.with_extension("pub")).unwrap();
    let allowed = dir.join(format!("{name}.allowed"));
    let mut fields = public.split_whitespace();
    let line = format!("{name} {} {}\n", fields.next().unwrap(), fields.next().unwrap());
    std::fs::write(&allowed, line).unwrap();
    (key, allowed)
}

/// `ssh-keygen -Y verify` of the beacon against `allowed` as identity `id`.
fn ssh_verify(root: &Path, allowed: &Path, id: &str) -> bool {
    let beacon = std::fs::File::open(root.join("RECENT-1h.yaml.beacon.json")).unwrap();
    let out = Command::new("ssh-keygen")
        .args(["-Y", "verify", "-n", "rrr", "-I", id, "-f"])
        .arg(allowed)
        .arg("-s")
        .arg(root.join("RECENT-1h.yaml.beacon.json.sig"))
        .stdin(beacon)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    out.status.success()
}

fn beacon(root: &Path) -> Beacon {
    Beacon::parse(&std::fs::read(root.join("RECENT-1h.yaml.beacon.json")).unwrap()).unwrap()
}

fn digest(p: &Path) -> FileDigest {
    FileDigest::of(&std::fs::read(p).unwrap())
}

#[test]
fn writers_sign_the_beacon_in_order_and_ssh_keygen_verifies_it() {
    let t = tempfile::tempdir().unwrap();
    let (key, allowed) = keypair(t.path(), "origin");
    let (other, other_allowed) = keypair(t.path(), "other");
    let root = t.path().join("tree");
    write(&root, "a/x", "x");
    util::ok(&["--now", "1700000000", "init", "--sign-key", s(&key), "--origin-name", "org", s(&root)]);
    assert!(ssh_verify(&root, &allowed, "origin"), "ssh-keygen -Y verify refused rrr's signature");
    assert!(!ssh_verify(&root, &other_allowed, "other"), "a signature for another key was accepted");
    let b = beacon(&root);
    let principal = root.join("RECENT-1h.yaml");
    assert_eq!(b.origin, "org");
    assert!(b.signed);
    assert_eq!(b.files["RECENT-1h.yaml"].sha256, digest(&principal).sha256);
    let rf = recentfile::parse_bytes(&std::fs::read(&principal).unwrap(), recentfile::Format::Yaml).unwrap();
    assert_eq!(b.newest_epoch, rf.newest().map(|e| e.epoch.clone()));
    assert_eq!(b.dirtymark, rf.meta.dirtymark);

    // update: the replaced version becomes the previous one.
    let before = digest(&principal);
    write(&root, "a/y", "y");
    let p = util::principal(&root);
    util::ok(&["--now", "1700000010", "update", "--sign-key", s(&key), &p, "a/y"]);
    let b2 = beacon(&root);
    assert_eq!(b2.files["RECENT-1h.yaml"].sha256, digest(&principal).sha256);
    assert_eq!(b2.files["RECENT-1h.yaml"].previous_sha256.as_ref(), Some(&before.sha256));
    assert_eq!(b2.check_progress(&b), Ok(()), "the new beacon is newer than the old");
    assert!(b.check_progress(&b2).is_err(), "the old beacon replayed is a rollback");
    assert!(ssh_verify(&root, &allowed, "origin"));

    // Without the key: refused at start, nothing recorded, the beacon untouched.
    let text = std::fs::read(&principal).unwrap();
    write(&root, "a/z", "z");
    let out = Rrr::new().args(["update", &p, "a/z"]).assert_exit(2);
    assert!(stderr(&out).contains("says the collection is signed"), "{}", stderr(&out));
    assert_eq!(std::fs::read(&principal).unwrap(), text);
    // Another key is allowed (rotation is the mirror's --trust-key list); its signature is the other's.
    util::ok(&["update", "--sign-key", s(&other), &p, "a/z"]);
    assert!(ssh_verify(&root, &other_allowed, "other"));
    // --unsign: the signature goes, the beacon says unsigned.
    util::ok(&["aggregate", "--unsign", &p]);
    assert!(!root.join("RECENT-1h.yaml.beacon.json.sig").exists());
    let b3 = beacon(&root);
    assert!(!b3.signed);
    // Every current recentfile is listed with its current bytes.
    for name in std::fs::read_dir(&root).unwrap().flatten().map(|e| e.file_name().into_string().unwrap()) {
        if name.starts_with("RECENT-") && !name.contains(".beacon.json") {
            assert_eq!(b3.files[&name].sha256, digest(&root.join(&name)).sha256, "{name}");
        }
    }
    // fsck does not report rrr's own files.
    let fsck = util::ok(&["fsck", "--json", &p]);
    assert!(!fsck.contains("beacon"), "{fsck}");
}

#[test]
fn bad_keys_are_refused_at_start_naming_the_file() {
    let t = tempfile::tempdir().unwrap();
    let (key, _) = keypair(t.path(), "k");
    let root = t.path().join("tree");
    write(&root, "a", "a");
    let encrypted = t.path().join("enc");
    assert!(Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "secret", "-f"])
        .arg(&encrypted)
        .status()
        .unwrap()
        .success());
    let rsa = t.path().join("rsa");
    assert!(Command::new("ssh-keygen")
        .args(["-q", "-t", "rsa", "-b", "1024", "-N", "", "-f"])
        .arg(&rsa)
        .status()
        .unwrap()
        .success());
    let public = key.with_extension("pub");
    let missing = t.path().join("missing");
    for (bad, want) in [
        (&missing, "cannot read the signing key"),
        (&public, "not an OpenSSH private key"),
        (&encrypted, "encrypted"),
        (&rsa, "ed25519 keys only"),
    ] {
        let out = Rrr::new().args(["init", "--sign-key", s(bad), s(&root)]).assert_exit(2);
        let err = stderr(&out);
        assert!(err.contains(s(bad)) && err.contains(want), "{want}: {err}");
        assert!(!root.join("RECENT-1h.yaml").exists(), "init wrote the index with a bad key");
    }
}

#[test]
fn beacon_command_and_watch_refresh_it() {
    let t = tempfile::tempdir().unwrap();
    let (key, allowed) = keypair(t.path(), "k");
    let root = t.path().join("tree");
    write(&root, "a", "a");
    util::ok(&["--now", "1700000000", "init", s(&root)]);
    assert!(!root.join("RECENT-1h.yaml.beacon.json").exists(), "no beacon unless asked for");
    let p = util::principal(&root);
    util::ok(&["--now", "1700000100", "beacon", "--sign-key", s(&key), "--beacon-interval", "1", &p]);
    assert!(ssh_verify(&root, &allowed, "k"));
    let first = beacon(&root);
    assert_eq!(first.time.as_str(), "1700000100");
    assert_eq!(first.interval, 1);
    assert_eq!(first.files["RECENT-1h.yaml"].previous_sha256, None);
    // The watch daemon rewrites it (time moves) although nothing changes.
    let watch = Rrr::new().args(["watch", "--sign-key", s(&key), &p]).stderr(Stdio::null()).spawn();
    util::wait_for("a refreshed beacon", Duration::from_secs(20), || {
        std::fs::read(root.join("RECENT-1h.yaml.beacon.json"))
            .ok()
            .and_then(|b| Beacon::parse(&b).ok())
            .is_some_and(|b| b.time > first.time)
    });
    watch.signal(libc::SIGTERM);
    let _ = watch.wait_with_output();
    assert!(ssh_verify(&root, &allowed, "k"));
    let later = beacon(&root);
    assert_eq!(later.check_progress(&first), Ok(()));
    // Never an event: neither the daemon nor its start-up scan indexed it.
    let principal = std::fs::read_to_string(root.join("RECENT-1h.yaml")).unwrap();
    assert!(!principal.contains(".beacon.json"), "{principal}");
    // The daemon's start-up writes list the principal as it is now.
    assert_eq!(later.files["RECENT-1h.yaml"].sha256, digest(&root.join("RECENT-1h.yaml")).sha256);
}

/// The Perl `rrr-server` (File::Rsync::Mirror::Recent 0.4.3, bin/rrr-server)
/// ignores top-level names matching `^<root>-[0-9]*[smhdWMQYZ]<suffix>` (a
/// prefix); the beacon's names, and their lock and temp names, match it,
/// so a Perl daemon on an rrr origin never records them as events.
#[test]
fn the_perl_server_ignore_rule_covers_the_beacon() {
    let perl_rule = regex::Regex::new(r"^RECENT-[0-9]*[smhdWMQYZ]\.yaml").unwrap();
    let t = tempfile::tempdir().unwrap();
    let (key, _) = keypair(t.path(), "k");
    let root = t.path().join("tree");
    write(&root, "a", "a");
    util::ok(&["init", "--sign-key", s(&key), s(&root)]);
    for e in std::fs::read_dir(&root).unwrap().flatten() {
        let name = e.file_name().into_string().unwrap();
        if name.contains("beacon") {
            assert!(perl_rule.is_match(&name), "{name} is not ignored by the Perl rrr-server");
        }
    }
    assert!(perl_rule.is_match("RECENT-1h.yaml.beacon.json.4242.new"));
}

/// An index that lists the beacon as a file (the Perl `rrr-fsck` without
/// `--dry-run` does that: tests/perl_reference_trust.rs): `fsck` names it
/// one of rrr's own files, not a file missing on disk (it is there), and
/// `--repair` records its delete and leaves the beacon in place.
#[test]
fn fsck_names_an_indexed_beacon_as_rrrs_own_file() {
    let t = tempfile::tempdir().unwrap();
    let (key, _) = keypair(t.path(), "k");
    let root = t.path().join("tree");
    write(&root, "a", "a");
    util::ok(&["init", "--sign-key", s(&key), s(&root)]);
    let file = root.join("RECENT-1h.yaml");
    let mut rf = recentfile::parse_bytes(&std::fs::read(&file).unwrap(), recentfile::Format::Yaml).unwrap();
    let epoch = recentfile::Epoch::parse("1.5").unwrap();
    rf.events.push(recentfile::Event::new(epoch, "RECENT-1h.yaml.beacon.json", recentfile::EventKind::New));
    let producer = recentfile::format::Producer { program: "t".into(), time: recentfile::Epoch::parse("2").unwrap() };
    std::fs::write(&file, recentfile::serialize(&rf, recentfile::Format::Yaml, &producer)).unwrap();
    let principal = util::principal(&root);
    let o = util::rrr(&["fsck", "--json", &principal]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let findings: Vec<serde_json::Value> = util::stdout(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(findings[0]["kind"], "own_file_indexed", "{findings:?}");
    assert_eq!(findings[0]["path"], "RECENT-1h.yaml.beacon.json");
    assert_eq!(findings.len(), 2, "{findings:?}");
    let o = util::rrr(&["fsck", "--repair", "--sign-key", s(&key), &principal]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(util::stdout(&o).starts_with("own_file_indexed\tRECENT-1h.yaml.beacon.json\n"), "{}", util::stdout(&o));
    util::ok(&["fsck", &principal]);
    assert!(root.join("RECENT-1h.yaml.beacon.json").is_file());
}
