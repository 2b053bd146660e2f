//! `rmirror --trust-key` and the per-file check (issue 34,
//! `mirror::staging`): an origin whose signed events carry `size` and
//! `sha256`, mirrored through a tier on a loopback daemon. A file altered
//! at tier 1 (a byte appended, a same-size replacement) is never installed
//! at tier 2: it is quarantined, `check` says CRITICAL "tampered", the pass
//! is not complete; once tier 1 is repaired the next pass installs it and
//! clears the record. A file injected at tier 1 without an event is not
//! fetched by an incremental pass. A staged file a killed run left behind
//! is never installed.

use crate::trust::keypair;
use crate::util::fixture::{Mirror, Origin};
use crate::util::mirror::assert_same_tree;
use crate::util::rsyncd::RsyncDaemon;
use crate::util::{principal, s, stdout, write, Rrr};
use std::fs;
use std::path::{Path, PathBuf};

/// A signed origin whose events carry size and sha256 (`--hash sha256`), with a tier 1
/// mirrored from it and served by a daemon, and a tier 2 mirroring that.
struct Tiers {
    _keys: tempfile::TempDir,
    key: PathBuf,
    allowed: PathBuf,
    origin: Origin,
    tier1: Mirror,
    _daemon: RsyncDaemon,
    tier2: Mirror,
}

impl Tiers {
    fn new(n: usize) -> Tiers {
        let keys = tempfile::tempdir().unwrap();
        let (key, allowed) = keypair(keys.path(), "origin");
        let files = (0..n).map(|i| (format!("d/f{i}.txt"), format!("file {i}\n")));
        // The origin records the hashes itself (`--hash sha256`, kept in the principal's meta).
        let origin = Origin::new(
            files,
            &["init", "--aggregate", "--hash", "sha256", "--sign-key", s(&key), "--origin-name", "org"],
        );
        let tier1 = origin.mirror_at(origin.dir().join("tier1"));
        let daemon = RsyncDaemon::start(&[("tier1", &tier1.root)]);
        let tier2 =
            Mirror { root: origin.dir().join("tier2"), remote: format!("{}/RECENT.recent", daemon.url("tier1")) };
        let t = Tiers { _keys: keys, key, allowed, origin, tier1, _daemon: daemon, tier2 };
        t.tier1.pass(&t.trust(), 0);
        t
    }

    /// [`Tiers::new`], and tier 2's first pass.
    fn mirrored(n: usize) -> Tiers {
        let t = Tiers::new(n);
        t.tier2.pass(&t.trust(), 0);
        t
    }

    /// Copy the origin's `paths` over tier 1's (an operator's repair).
    fn repair(&self, paths: &[&str]) {
        for p in paths {
            fs::copy(self.origin.root.join(p), self.tier1.root.join(p)).unwrap();
        }
    }

    fn trust(&self) -> [&str; 2] {
        ["--trust-key", s(&self.allowed)]
    }

    /// New files at the origin, recorded with their hashes and signed;
    /// tier 1 mirrors them.
    fn add(&self, files: &[(&str, &str)]) {
        let mut lines = String::new();
        for (p, content) in files {
            write(&self.origin.root, p, content);
            lines.push_str(&format!("new {p}\n"));
        }
        let p = principal(&self.origin.root);
        Rrr::new().args(["update", "--sign-key", s(&self.key), "--stdin", &p]).stdin(lines).assert_ok();
        self.tier1.pass(&self.trust(), 0);
    }

    /// `rrr check` on tier 2: (exit code, line).
    fn check(&self) -> (i32, String) {
        let o = Rrr::new()
            .args(["check", "--warn", "3600", "--crit", "7200", "--localroot"])
            .arg(&self.tier2.root)
            .output();
        (o.status.code().unwrap_or(-1), stdout(&o))
    }
}

/// The files kept in tier 2's quarantine.
fn quarantined(root: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(root.join(".rrr/quarantine"))
        .map(|rd| rd.flatten().map(|d| d.file_name().into_string().unwrap()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn files_altered_at_tier_one_are_quarantined_at_tier_two_until_repaired() {
    let t = Tiers::mirrored(3);
    assert_same_tree(&t.origin.root, &t.tier2.root);
    t.add(&[("d/grown.txt", "grown\n"), ("d/same.txt", "same size\n"), ("d/good.txt", "good\n")]);
    // Tier 1 alters two of them: a byte appended, a same-size replacement.
    write(&t.tier1.root, "d/grown.txt", "grown\nX");
    write(&t.tier1.root, "d/same.txt", "SAME SIZE\n");
    // And injects a file no event lists.
    write(&t.tier1.root, "d/injected.txt", "evil\n");

    let v = t.tier2.pass(&t.trust(), 1);
    assert_eq!(v["complete"], false, "{v}");
    let tampered: Vec<&str> = v["tampered"].as_array().unwrap().iter().map(|x| x["path"].as_str().unwrap()).collect();
    assert_eq!(tampered, ["d/grown.txt", "d/same.txt"], "{v}");
    assert!(!t.tier2.root.join("d/grown.txt").exists(), "a file of the wrong size was installed");
    assert!(!t.tier2.root.join("d/same.txt").exists(), "a same-size replacement was installed");
    assert_eq!(fs::read_to_string(t.tier2.root.join("d/good.txt")).unwrap(), "good\n");
    assert!(!t.tier2.root.join("d/injected.txt").exists(), "an incremental pass fetched a file no event lists");
    assert!(!t.tier2.root.join(".rrr/staging").exists(), "the staging dir is left behind");
    let kept = quarantined(&t.tier2.root);
    assert_eq!(kept.len(), 2, "{kept:?}");
    let bytes: Vec<String> =
        kept.iter().map(|k| fs::read_to_string(t.tier2.root.join(".rrr/quarantine").join(k)).unwrap()).collect();
    assert!(bytes.contains(&"grown\nX".to_string()) && bytes.contains(&"SAME SIZE\n".to_string()), "{bytes:?}");
    // Not republished: our copy of the principal leaves them out.
    let ours = fs::read_to_string(t.tier2.root.join("RECENT-1h.yaml")).unwrap();
    assert!(!ours.contains("d/same.txt") && ours.contains("d/good.txt"), "{ours}");

    let m = t.tier2.monitoring(&[]);
    let (code, line) = m.check();
    assert_eq!(code, Some(2), "{line}");
    assert!(line.contains("tampered: d/grown.txt and 1 more (received 7 bytes"), "{line}");
    assert_eq!(m.status["tampered"].as_array().unwrap().len(), 2, "{}", m.status);
    assert!(m.plain.contains("tampered         2"), "{}", m.plain);
    assert_eq!(m.gauge("rrr_mirror_tampered_paths"), Some("2"), "{}", m.prometheus);

    // Still altered upstream: fetched again, still refused.
    let v = t.tier2.pass(&t.trust(), 1);
    assert_eq!(v["tampered"].as_array().unwrap().len(), 2, "{v}");
    assert!(!t.tier2.root.join("d/same.txt").exists());
    assert_eq!(quarantined(&t.tier2.root).len(), 2, "one kept copy per path");

    // Tier 1 repaired (its next pass sees nothing new: an operator copies
    // the origin's files back): the next pass installs them and clears all.
    t.repair(&["d/grown.txt", "d/same.txt"]);
    let v = t.tier2.pass(&t.trust(), 0);
    assert_eq!(v["complete"], true, "{v}");
    assert_eq!(v["tampered"].as_array().unwrap().len(), 0, "{v}");
    fs::remove_file(t.tier1.root.join("d/injected.txt")).unwrap();
    assert_same_tree(&t.origin.root, &t.tier2.root);
    assert_eq!(t.tier2.state().get("tampered"), None, "{}", t.tier2.state());
    let (code, line) = t.check();
    assert_eq!(code, 0, "{line}");
}

#[test]
fn a_file_staged_by_a_killed_run_is_never_installed() {
    let t = Tiers::mirrored(2);
    // What a run killed between its transfer and its check leaves.
    write(&t.tier2.root, ".rrr/staging/d/stale.txt", "stale, never checked\n");
    t.add(&[("d/new.txt", "new\n")]);
    t.tier2.pass(&t.trust(), 0);
    assert!(!t.tier2.root.join("d/stale.txt").exists(), "a stale staged file was installed");
    assert!(!t.tier2.root.join(".rrr/staging").exists(), "the staging dir is left behind");
    assert_same_tree(&t.origin.root, &t.tier2.root);
}

/// The paths `v` (a pass report or `status --json`) lists as tampered.
fn tampered(v: &serde_json::Value) -> Vec<String> {
    v["tampered"].as_array().map_or(Vec::new(), |a| a.iter().map(|x| x["path"].as_str().unwrap().to_string()).collect())
}

#[test]
fn a_whole_tree_pass_moves_altered_files_out_of_the_tree() {
    let t = Tiers::new(3);
    // Tier 1 serves a same-size replacement to a first mirror (bootstrap).
    write(&t.tier1.root, "d/f1.txt", "FILE 1\n");
    let v = t.tier2.pass(&t.trust(), 1);
    assert_eq!(v["bootstrap"], true, "{v}");
    assert_eq!(v["complete"], false, "{v}");
    assert_eq!(tampered(&v), ["d/f1.txt"], "{v}");
    assert!(!t.tier2.root.join("d/f1.txt").exists(), "an altered file stayed in the tree");
    assert_eq!(fs::read_to_string(t.tier2.root.join("d/f0.txt")).unwrap(), "file 0\n");
    assert_eq!(quarantined(&t.tier2.root).len(), 1);
    let (code, line) = t.check();
    assert_eq!(code, 2, "{line}");
    assert!(line.contains("tampered: d/f1.txt (received 7 bytes, sha256 "), "{line}");

    // Repaired: the next (incremental) pass fetches it again, staged.
    t.repair(&["d/f1.txt"]);
    let v = t.tier2.pass(&t.trust(), 0);
    assert_eq!((v["bootstrap"].as_bool(), v["complete"].as_bool()), (Some(false), Some(true)), "{v}");
    assert_same_tree(&t.origin.root, &t.tier2.root);

    // --full against a tier that altered a file (another size).
    write(&t.tier1.root, "d/f2.txt", "file 2, altered\n");
    let v = t.tier2.pass(&["--full", "--trust-key", s(&t.allowed)], 1);
    assert_eq!(tampered(&v), ["d/f2.txt"], "{v}");
    assert!(!t.tier2.root.join("d/f2.txt").exists(), "--full left an altered file in the tree");
    t.repair(&["d/f2.txt"]);
    t.tier2.pass(&t.trust(), 0);
    assert_same_tree(&t.origin.root, &t.tier2.root);
    assert_eq!(t.check().0, 0);
}

#[test]
fn a_newer_event_of_a_tampered_path_is_judged_by_its_own_hash() {
    let t = Tiers::mirrored(2);
    t.add(&[("d/x.txt", "version 1\n")]);
    write(&t.tier1.root, "d/x.txt", "VERSION 1\n");
    assert_eq!(tampered(&t.tier2.pass(&t.trust(), 1)), ["d/x.txt"]);
    // The origin publishes version 2; tier 1 takes it (staged and checked
    // there too, replacing its altered copy); tier 2 installs it.
    t.add(&[("d/x.txt", "version 2, longer\n")]);
    assert_eq!(fs::read_to_string(t.tier1.root.join("d/x.txt")).unwrap(), "version 2, longer\n");
    let v = t.tier2.pass(&t.trust(), 0);
    assert_eq!((tampered(&v).len(), v["complete"].as_bool()), (0, Some(true)), "{v}");
    assert_eq!(fs::read_to_string(t.tier2.root.join("d/x.txt")).unwrap(), "version 2, longer\n");
    // Version 3 altered at tier 1: refused by version 3's hash.
    t.add(&[("d/x.txt", "version 3\n")]);
    write(&t.tier1.root, "d/x.txt", "version 2, longer\n");
    let v = t.tier2.pass(&t.trust(), 1);
    assert_eq!(tampered(&v), ["d/x.txt"], "{v}");
    assert_eq!(v["tampered"][0]["expected"]["size"], 10, "{v}");
    assert_eq!(
        fs::read_to_string(t.tier2.root.join("d/x.txt")).unwrap(),
        "version 2, longer\n",
        "the old good copy stays"
    );
    assert_eq!(t.tier2.state()["tampered"][0]["epoch"], t.tier2.state()["failing"][0]["epoch"]);
}
