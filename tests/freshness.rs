//! Freshness measured from the origin across a chain of mirrors (issue
//! 35): origin → tier 1 → tier 2 → tier 3, each tier an rrr mirror served
//! by its own loopback rsync daemon, the clock pinned with `--now`. Every
//! tier holds and republishes the origin's beacon byte for byte; when
//! tier 1 stops, tier 2 and tier 3 keep passing (pass lag near 0) while
//! their `origin_lag` grows, and `check` goes WARNING, then CRITICAL.

use crate::util::fixture::{Mirror, Origin};
use crate::util::rsyncd::RsyncDaemon;
use crate::util::*;
use std::fs;

const T0: i64 = 1_796_274_942;
const BEACON: &str = "RECENT-1h.yaml.beacon.json";

fn at(t: i64) -> String {
    t.to_string()
}

#[test]
fn a_stalled_tier_1_turns_check_warning_then_critical_below_it() {
    let origin = Origin::new([("a.txt", "a\n")], &["--now", &at(T0), "init", "--aggregate"]);
    let tiers: Vec<Mirror> = (1..=3).map(|i| origin.mirror_at(origin.dir().join(format!("tier{i}")))).collect();
    for m in &tiers {
        fs::create_dir_all(&m.root).unwrap();
    }
    let daemons: Vec<RsyncDaemon> = tiers.iter().map(|m| RsyncDaemon::start(&[("tier", &m.root)])).collect();
    let chain: Vec<Mirror> = tiers
        .iter()
        .enumerate()
        .map(|(i, m)| Mirror {
            root: m.root.clone(),
            remote: if i == 0 { origin.src() } else { format!("{}/RECENT.recent", daemons[i - 1].url("tier")) },
        })
        .collect();
    let pass_all = |t: i64, from: usize| {
        for m in &chain[from..] {
            m.pass(&["--now", &at(t)], 0);
        }
    };

    // An origin without a beacon (an old one): nothing changes, no origin lag.
    pass_all(T0 + 10, 0);
    let mon = chain[2].monitoring(&["--now", &at(T0 + 20)]);
    assert!(mon.status["origin_lag_seconds"].is_null(), "{}", mon.status);
    assert!(!mon.plain.contains("origin lag"), "{}", mon.plain);
    assert!(!mon.prometheus.contains("rrr_mirror_origin_timestamp_seconds{"), "{}", mon.prometheus);
    assert!(!chain[2].root.join(BEACON).exists());

    // The origin writes its beacon: found by the next whole-tree pass,
    // then every tier holds it, byte for byte, and every pass refreshes it.
    ok(&["--now", &at(T0 + 30), "beacon", "--origin-name", "origin.example", &principal(&origin)]);
    for m in &chain {
        m.pass(&["--now", &at(T0 + 35), "--full"], 0);
    }
    ok(&["--now", &at(T0 + 30), "beacon", &principal(&origin)]);
    pass_all(T0 + 40, 0);
    let bytes = fs::read(origin.join(BEACON)).unwrap();
    for m in &chain {
        assert_eq!(fs::read(m.root.join(BEACON)).unwrap(), bytes, "{}", m.root.display());
    }
    let mon = chain[2].monitoring(&["--now", &at(T0 + 50)]);
    assert_eq!(mon.status["origin_lag_seconds"], 20.0, "{}", mon.status);
    assert_eq!(mon.status["origin"], "origin.example");
    assert_eq!(mon.gauge("rrr_mirror_origin_timestamp_seconds"), Some(at(T0 + 30).as_str()), "{}", mon.prometheus);
    assert!(mon.plain.contains("origin lag       20 s (origin.example's beacon of "), "{}", mon.plain);
    let (code, line) = mon.check();
    assert_eq!(code, Some(0), "{line}");
    assert!(line.contains("'origin_lag ") && line.contains("=20s;3600;7200;0"), "{line}");

    // Tier 1 stops; the origin goes on (a change, a fresh beacon every interval).
    write(&origin, "b.txt", "b\n");
    ok(&["--now", &at(T0 + 2000), "update", &principal(&origin), "b.txt"]);
    ok(&["--now", &at(T0 + 2000), "aggregate", &principal(&origin)]);
    ok(&["--now", &at(T0 + 3000), "beacon", &principal(&origin)]);
    // Tiers 2 and 3 pass with nothing new: their pass lag stays near 0.
    pass_all(T0 + 4000, 1);
    let mon = chain[2].monitoring(&["--now", &at(T0 + 4000)]);
    let (code, line) = mon.check();
    assert_eq!(mon.status["lag_seconds"], 0.0, "{}", mon.status);
    assert_eq!(code, Some(1), "WARNING on origin lag: {line}");
    assert!(line.starts_with("RRR WARNING") && line.contains("origin lag 1 h 06 min"), "{line}");
    let (code, line) = chain[1].monitoring(&["--now", &at(T0 + 4000)]).check();
    assert_eq!(code, Some(1), "tier 2 too: {line}");

    pass_all(T0 + 8000, 1);
    let mon = chain[2].monitoring(&["--now", &at(T0 + 8000)]);
    let (code, line) = mon.check();
    assert_eq!(mon.status["lag_seconds"], 0.0, "{}", mon.status);
    assert_eq!(code, Some(2), "CRITICAL on origin lag: {line}");
    assert!(line.contains("origin lag 2 h 12 min") && line.contains("from origin.example"), "{line}");
    assert!(!chain[2].root.join("b.txt").exists(), "tier 1 never had it");

    // Tier 1 comes back: the origin's newer beacon flows down with its change.
    pass_all(T0 + 8100, 0);
    let mon = chain[2].monitoring(&["--now", &at(T0 + 8100)]);
    assert_eq!(mon.status["origin_lag_seconds"], 5100.0, "the origin's last beacon, written at T0+3000");
    assert!(chain[2].root.join("b.txt").exists());
    assert_eq!(fs::read(chain[2].root.join(BEACON)).unwrap(), fs::read(origin.join(BEACON)).unwrap());
}

/// A tier without `--trust-key` republishes the origin's signature beside
/// the beacon, byte for byte (found in the whole-tree pass's index, then
/// fetched with the beacon while it says signed), so that a tier below
/// with `--trust-key` verifies the origin's key through it.
#[test]
fn an_unverifying_tier_republishes_the_signature_for_a_verifying_tier_below() {
    use crate::util::fixture::change_with;
    let keys = tempfile::tempdir().unwrap();
    let (key, allowed) = crate::trust::keypair(keys.path(), "origin");
    let signing = ["--sign-key", s(&key)];
    let origin =
        Origin::new([("d/a.txt", "a\n")], &["init", "--aggregate", "--sign-key", s(&key), "--origin-name", "org"]);
    let tier1 = origin.mirror_at(origin.dir().join("tier1"));
    tier1.pass(&[], 0);
    let sig = format!("{BEACON}.sig");
    let same = |name: &str| fs::read(tier1.root.join(name)).ok() == fs::read(origin.join(name)).ok();
    assert!(same(BEACON) && same(&sig), "the pair, byte for byte");
    let d1 = RsyncDaemon::start(&[("tier", &tier1.root)]);
    let tier2 = Mirror { root: origin.dir().join("tier2"), remote: format!("{}/RECENT.recent", d1.url("tier")) };
    tier2.pass(&["--trust-key", s(&allowed)], 0);
    crate::util::mirror::assert_same_tree(&origin, &tier2.root);

    // The origin changes (signed): tier 1's incremental pass fetches the
    // new pair with the principal; tier 2 verifies it and takes the change.
    change_with(&origin, &["d/new.txt"], &[], &signing);
    let p = tier1.pass(&[], 0);
    assert_eq!(p["bootstrap"], false, "{p}");
    assert!(same(BEACON) && same(&sig), "the new pair, byte for byte");
    let p = tier2.pass(&["--trust-key", s(&allowed)], 0);
    assert_eq!(p["transferred"], 1, "{p}");
    crate::util::mirror::assert_same_tree(&origin, &tier2.root);
}
