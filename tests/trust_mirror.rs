//! `rmirror --trust-key` against real loopback daemons (issue 34): a
//! signed origin mirrored through two tiers verifies at tier 2 against the
//! origin's key; a recentfile replaced at tier 1, an old signed index
//! replayed there, a signature by another key and an unsigned upstream are
//! refused (nothing installed, `check` CRITICAL "signature"); a stale
//! signature deletes nothing and makes `check` CRITICAL "signature stale".

use crate::trust::keypair;
use crate::util::fixture::{change_with, Mirror, Origin};
use crate::util::mirror::{assert_same_tree, Setup};
use crate::util::rsyncd::RsyncDaemon;
use crate::util::{principal, s, stderr, stdout, write, Rrr};
use std::fs;
use std::path::{Path, PathBuf};

/// A signed origin of `n` files (`d/fI.txt`), served, with its key pair.
struct Signed {
    _keys: tempfile::TempDir,
    key: PathBuf,
    /// An allowed_signers line of the origin's key.
    allowed: PathBuf,
    /// The plain `ssh-ed25519 AAAA…` file ssh-keygen wrote.
    public: PathBuf,
    origin: Origin,
}

impl Signed {
    fn new(n: usize) -> Signed {
        let keys = tempfile::tempdir().unwrap();
        let (key, allowed) = keypair(keys.path(), "origin");
        let public = key.with_extension("pub");
        let files = (0..n).map(|i| (format!("d/f{i}.txt"), format!("file {i}\n")));
        let origin = Origin::new(files, &["init", "--aggregate", "--sign-key", s(&key), "--origin-name", "org"]);
        Signed { _keys: keys, key, allowed, public, origin }
    }

    /// Write `new`, remove `delete`, record both signed, aggregate signed.
    fn change(&self, new: &[&str], delete: &[&str]) {
        change_with(&self.origin.root, new, delete, &["--sign-key", s(&self.key)]);
    }

    /// `--trust-key` with the origin's allowed_signers line.
    fn trust(&self) -> [&str; 2] {
        ["--trust-key", s(&self.allowed)]
    }
}

/// A pass that must be refused: its exit code is not 0, nothing of it is
/// installed (checked by the caller), and its error is returned (stderr
/// and the state's last error).
#[track_caller]
fn refused(m: &Mirror, extra: &[&str]) -> String {
    let o = m.rmirror().args(extra).arg("--json").output();
    assert!(!o.status.success(), "the pass was not refused: {}", stdout(&o));
    let st = m.state();
    format!("{}\n{}", stderr(&o), st["last_error"].as_str().unwrap_or_default())
}

/// `rrr check` on `m`: (exit code, line).
fn check(m: &Mirror, global: &[&str]) -> (i32, String) {
    let o = Rrr::new()
        .args(global)
        .args(["check", "--warn", "3600", "--crit", "7200", "--localroot"])
        .arg(&m.root)
        .output();
    (o.status.code().unwrap_or(-1), stdout(&o))
}

fn recentfiles(root: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = fs::read_dir(root)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().into_string().unwrap())
        .filter(|n| n.starts_with("RECENT"))
        .map(|n| {
            let p = root.join(&n);
            let bytes = match fs::symlink_metadata(&p).unwrap().file_type().is_symlink() {
                true => fs::read_link(&p).unwrap().into_os_string().into_encoded_bytes(),
                false => fs::read(&p).unwrap(),
            };
            (n, bytes)
        })
        .collect();
    v.sort();
    v
}

#[test]
fn tier_two_verifies_the_origin_key_and_refuses_a_replaced_recentfile() {
    let o = Signed::new(8);
    let tier1 = o.origin.mirror_at(o.origin.dir().join("tier1"));
    tier1.pass(&o.trust(), 0);
    // The tier republishes the origin's beacon and signature byte for byte.
    for n in ["RECENT-1h.yaml.beacon.json", "RECENT-1h.yaml.beacon.json.sig"] {
        assert_eq!(fs::read(tier1.root.join(n)).unwrap(), fs::read(o.origin.root.join(n)).unwrap(), "{n}");
    }
    let d1 = RsyncDaemon::start(&[("tier1", &tier1.root)]);
    let tier2 = Mirror { root: o.origin.dir().join("tier2"), remote: format!("{}/RECENT.recent", d1.url("tier1")) };
    // The plain public key file works as well as the allowed_signers line.
    tier2.pass(&["--trust-key", s(&o.public)], 0);
    assert_same_tree(&o.origin.root, &tier2.root);
    o.change(&["d/new.txt"], &["d/f1.txt"]);
    tier1.pass(&o.trust(), 0);
    let v = tier2.pass(&o.trust(), 0);
    assert_eq!((v["transferred"].as_u64(), v["deleted"].as_u64()), (Some(1), Some(1)), "{v}");
    assert_same_tree(&o.origin.root, &tier2.root);
    let (code, line) = check(&tier2, &[]);
    assert_eq!(code, 0, "{line}");
    let status = Rrr::new().args(["status", "--json", "--localroot"]).arg(&tier2.root).assert_ok();
    let st: serde_json::Value = serde_json::from_str(&stdout(&status)).unwrap();
    let sig = &st["signature"];
    assert_eq!(sig["origin"], "org", "{st}");
    assert_eq!(sig["stale"], false, "{st}");

    // Tier 1 injects a file: its principal lists it (same event, another path).
    let before = recentfiles(&tier2.root);
    let p1 = tier1.root.join("RECENT-1h.yaml");
    let text = fs::read_to_string(&p1).unwrap().replace("d/new.txt", "d/evil.txt");
    fs::write(&p1, text).unwrap();
    write(&tier1.root, "d/evil.txt", "evil\n");
    let err = refused(&tier2, &o.trust());
    assert!(err.contains("RECENT-1h.yaml") && err.contains("neither the beacon's current nor its previous"), "{err}");
    assert!(!tier2.root.join("d/evil.txt").exists(), "a file of a refused index was transferred");
    assert_eq!(recentfiles(&tier2.root), before, "a refused recentfile was installed");
    let (code, line) = check(&tier2, &[]);
    assert_eq!(code, 2, "{line}");
    assert!(line.contains("signature: "), "{line}");
}

#[test]
fn an_old_signed_index_replayed_upstream_is_a_rollback() {
    let o = Signed::new(6);
    let tier1 = o.origin.mirror_at(o.origin.dir().join("tier1"));
    tier1.pass(&o.trust(), 0);
    let old = recentfiles(&tier1.root);
    let d1 = RsyncDaemon::start(&[("tier1", &tier1.root)]);
    let tier2 = Mirror { root: o.origin.dir().join("tier2"), remote: format!("{}/RECENT.recent", d1.url("tier1")) };
    o.change(&["d/new.txt"], &[]);
    tier1.pass(&o.trust(), 0);
    tier2.pass(&o.trust(), 0);
    assert!(tier2.root.join("d/new.txt").exists());
    // Tier 1 serves the old, genuinely signed index again.
    for (n, bytes) in &old {
        let p = tier1.root.join(n);
        if !fs::symlink_metadata(&p).is_ok_and(|m| m.file_type().is_symlink()) {
            fs::write(&p, bytes).unwrap();
        }
    }
    let before = recentfiles(&tier2.root);
    let err = refused(&tier2, &o.trust());
    assert!(err.contains("older than the accepted"), "{err}");
    assert_eq!(recentfiles(&tier2.root), before, "a replayed recentfile was installed");
    assert!(check(&tier2, &[]).1.contains("signature: "));
}

#[test]
fn another_key_and_an_unsigned_upstream_are_refused() {
    let o = Signed::new(3);
    let keys = tempfile::tempdir().unwrap();
    let (_, other) = keypair(keys.path(), "other");
    let m = o.origin.mirror();
    let err = refused(&m, &["--trust-key", s(&other)]);
    assert!(err.contains("not a trusted key"), "{err}");
    assert!(!m.root.join("d/f0.txt").exists(), "a file of an untrusted index was transferred");
    assert!(!m.root.join("RECENT-1h.yaml").exists());
    let (code, line) = check(&m, &[]);
    assert_eq!(code, 2, "{line}");
    assert!(line.contains("not a trusted key"), "{line}");
    // Rotation: the old and the new key both trusted.
    m.pass(&["--trust-key", s(&other), "--trust-key", s(&o.public)], 0);
    assert_same_tree(&o.origin.root, &m.root);

    let plain = Setup::new(3);
    let err = refused(&plain.target, &["--trust-key", s(&o.allowed)]);
    assert!(err.contains("not signed"), "{err}");
    assert!(!plain.target.join("RECENT-1h.yaml").exists());
    // A key file that is not one: refused at start.
    let bad = keys.path().join("bad.pub");
    fs::write(&bad, "hello\n").unwrap();
    let out = plain.target.rmirror().args(["--trust-key", s(&bad)]).output();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("bad.pub:1"), "{}", stderr(&out));
}

#[test]
fn a_stale_signature_deletes_nothing_and_check_says_critical() {
    let o = Signed::new(4);
    let m = o.origin.mirror();
    m.pass(&o.trust(), 0);
    o.change(&["d/new.txt"], &["d/f2.txt"]);
    // Two days later by the mirror's clock, the origin's signature unchanged.
    let later = (std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() + 2 * 86_400)
        .to_string();
    let o2 = Rrr::new()
        .args(["--now", &later, "rmirror", "--remote", &m.remote, "--localroot"])
        .arg(&m.root)
        .args(o.trust())
        .arg("--json")
        .output();
    assert!(m.root.join("d/new.txt").exists(), "the new file is vouched for: {}", stderr(&o2));
    assert!(m.root.join("d/f2.txt").exists(), "a stale index deleted a file");
    let (code, line) = check(&m, &["--now", &later]);
    assert_eq!(code, 2, "{line}");
    assert!(line.contains("signature stale"), "{line}");
    let status = Rrr::new().args(["--now", &later, "status", "--localroot"]).arg(&m.root).assert_ok();
    assert!(stdout(&status).contains("STALE"), "{}", stdout(&status));
    // Fresh again: the delete goes.
    Rrr::new().args(["beacon", "--sign-key", s(&o.key), &principal(&o.origin.root)]).assert_ok();
    m.pass(&o.trust(), 0);
    assert!(!m.root.join("d/f2.txt").exists());
}

#[test]
fn news_remote_verifies_with_trust_key() {
    let o = Signed::new(3);
    let keys = tempfile::tempdir().unwrap();
    let (_, other) = keypair(keys.path(), "other");
    let news = |key: &Path| Rrr::new().args(["news", "--remote", &o.origin.src(), "--trust-key", s(key)]).output();
    let ok = news(&o.allowed);
    assert!(ok.status.success(), "{}", stderr(&ok));
    assert!(stdout(&ok).contains("d/f2.txt"), "{}", stdout(&ok));
    let bad = news(&other);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("not a trusted key"), "{}", stderr(&bad));
    assert!(stdout(&bad).is_empty(), "an untrusted index was listed: {}", stdout(&bad));
    // A replaced principal at the source: refused, naming it.
    let p = o.origin.root.join("RECENT-1h.yaml");
    let text = fs::read_to_string(&p).unwrap().replace("d/f2.txt", "d/evil.txt");
    fs::write(&p, text).unwrap();
    let tampered = news(&o.allowed);
    assert_eq!(tampered.status.code(), Some(2));
    assert!(stderr(&tampered).contains("RECENT-1h.yaml"), "{}", stderr(&tampered));
}
