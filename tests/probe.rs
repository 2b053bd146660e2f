//! `rrr probe` against real loopback rsync daemons: a fresh mirror, a
//! stale one and a dead one (a black hole that accepts and never answers),
//! each mirror's traces as an rrr mirror writes them.

use crate::util::net::BlackHole;
use crate::util::rsyncd::RsyncDaemon;
use crate::util::*;
use rrr::monitor::trace::{Trace, Trigger};
use rrr::monitor::trace_write::{write_master_trace, write_mirror_trace};
use std::path::Path;

const NOW: i64 = 1_796_274_942;

/// A mirror tree holding the origin's master trace of `origin_time` and
/// its own trace, written `name` after a pass from `upstream`.
fn mirror_tree(root: &Path, name: &str, upstream: &str, origin_time: i64) {
    std::fs::create_dir_all(root).unwrap();
    let dir = Path::new("project/trace");
    let master = Trace {
        date: origin_time,
        date_started: None,
        archive_serial: Some(format!("{origin_time}.5")),
        host: "origin.example".into(),
        maintainer: None,
        upstream: None,
        trigger: None,
        extra: vec![],
    };
    write_master_trace(root, dir, &master).unwrap();
    let own = Trace {
        date: origin_time + 30,
        date_started: Some(origin_time + 10),
        host: name.into(),
        upstream: Some(upstream.into()),
        trigger: Some(Trigger::Loop),
        ..master
    };
    write_mirror_trace(root, dir, name, &own).unwrap();
    std::fs::write(root.join("data.txt"), "payload\n").unwrap();
}

fn probe(args: &[&str]) -> (Option<i32>, Vec<serde_json::Value>, String) {
    let o = Rrr::new().args(["--now", &NOW.to_string(), "probe", "--json"]).args(args).output();
    let lines = stdout(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    (o.status.code(), lines, stderr(&o))
}

#[test]
fn fresh_stale_and_dead_mirrors() {
    let t = tempfile::tempdir().unwrap();
    let (fresh, stale) = (t.path().join("fresh"), t.path().join("stale"));
    mirror_tree(&fresh, "fresh.example", "origin.example", NOW - 60);
    mirror_tree(&stale, "stale.example", "tier1.example", NOW - 10 * 3600);
    let d = RsyncDaemon::start(&[("fresh", &fresh), ("stale", &stale)]);
    let hole = BlackHole::start();
    let dead = format!("rsync://127.0.0.1:{}/M", hole.port);

    let (code, r, err) = probe(&["--timeout", "2", &d.url("fresh"), &d.url("stale"), &dead]);
    assert_eq!(code, Some(3), "one unreachable: exit 3\n{err}\n{r:?}");
    assert_eq!(r.len(), 3, "{r:?}");
    assert_eq!(r[0]["status"], "fresh");
    assert_eq!(r[0]["lag"], 0.0);
    assert_eq!(r[0]["score"], 5);
    assert_eq!(r[0]["origin_time"], NOW - 60);
    assert_eq!(r[0]["upstream"], "origin.example");
    assert_eq!(r[0]["trace"], "fresh.example");
    assert_eq!(r[0]["age"], 60.0);
    assert_eq!(r[1]["status"], "stale");
    assert_eq!(r[1]["lag"], (10 * 3600 - 60) as f64);
    assert_eq!(r[1]["score"], 1, "between 4 h and 12 h: mirror-status's +1");
    assert_eq!(r[1]["upstream"], "tier1.example");
    assert_eq!(r[2]["status"], "unreachable");
    assert_eq!(r[2]["score"], -30);
    assert!(r[2]["error"].as_str().unwrap().contains("timeout"), "{r:?}");
    assert!(hole.connections() >= 1, "the dead mirror was asked");

    // Without the dead one: a stale mirror is exit 1; --origin measures behind it.
    let (code, r, _) = probe(&["--origin", &d.url("fresh"), &d.url("stale")]);
    assert_eq!(code, Some(1));
    assert_eq!(r.len(), 1);
    assert_eq!(r[0]["lag"], (10 * 3600 - 60) as f64);
    // An origin that cannot be read leaves no lag, and says why.
    let (code, r, _) = probe(&["--origin", &d.url("nosuch"), &d.url("fresh")]);
    assert_eq!(code, Some(3));
    let why = r[0]["error"].as_str().unwrap();
    assert!(why.contains("the origin") && why.contains("nosuch"), "{why}");
    let (code, _, _) = probe(&["--max-lag", "86400", &d.url("fresh"), &d.url("stale")]);
    assert_eq!(code, Some(0), "within --max-lag: fresh");

    // The table and Prometheus.
    let o = Rrr::new().args(["probe", &d.url("fresh"), &d.url("stale")]).output();
    let table = stdout(&o);
    assert!(table.starts_with("STATUS"), "{table}");
    assert!(table.lines().nth(2).unwrap().starts_with("stale "), "{table}");
    let o = Rrr::new().args(["probe", "--prometheus", &d.url("fresh")]).output();
    let prom = stdout(&o);
    assert!(prom.contains(&format!("rrr_probe_lag_seconds{{mirror=\"{}\"}} 0", d.url("fresh"))), "{prom}");
    // A URL that is not rsync:// is a usage error.
    let o = Rrr::new().args(["probe", "http://example.org/x"]).output();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// A mirror that trickles its traces (a daemon limited to 1 KiB/s serving
/// 60 KiB) keeps the stall timeout from firing: the hard deadline (twice
/// `--timeout`) stops it, and the fresh mirror beside it is reported.
#[test]
fn a_trickling_mirror_is_stopped_at_the_deadline() {
    let t = tempfile::tempdir().unwrap();
    let (fresh, slow) = (t.path().join("fresh"), t.path().join("slow"));
    mirror_tree(&fresh, "fresh.example", "origin.example", NOW - 60);
    mirror_tree(&slow, "slow.example", "origin.example", NOW - 60);
    let big: String = "Padding: x\n".repeat(60 * 1024 / 11);
    let text = std::fs::read_to_string(slow.join("project/trace/slow.example")).unwrap() + &big;
    std::fs::write(slow.join("project/trace/slow.example"), text).unwrap();
    let fast = RsyncDaemon::start(&[("fresh", &fresh)]);
    let d = RsyncDaemon::start_limited(&[("slow", &slow)], "", &["--bwlimit=1"]);
    let (code, r, err) = probe(&["--timeout", "2", &fast.url("fresh"), &d.url("slow")]);
    assert_eq!(code, Some(3), "{err}\n{r:?}");
    assert_eq!(r[0]["status"], "fresh");
    assert_eq!(r[1]["status"], "unreachable");
    assert!(r[1]["error"].as_str().unwrap().contains("still fetching after 4 s"), "{r:?}");
}

/// An indexed tree whose origin beacon (`RECENT-1h.yaml.beacon.json`,
/// written by `rrr beacon`) says `time`.
fn beacon_tree(root: &Path, time: i64) {
    std::fs::create_dir_all(root).unwrap();
    std::fs::write(root.join("data.txt"), "payload\n").unwrap();
    ok(&["--now", &(time - 100).to_string(), "init", "--aggregate", s(root)]);
    let principal = s(&root.join("RECENT-1h.yaml")).to_string();
    ok(&["--now", &time.to_string(), "beacon", "--origin-name", "origin.example", &principal]);
}

/// The origin time comes from the beacon a mirror serves beside its
/// principal, or from the master trace when it has no beacon or the
/// trace is newer; the report says which (table, JSON, Prometheus). Both
/// are fetched in the one bounded call per mirror.
#[test]
fn the_origin_time_comes_from_the_beacon_or_the_trace() {
    let t = tempfile::tempdir().unwrap();
    let dir = |n: &str| t.path().join(n);
    beacon_tree(&dir("beacon"), NOW - 120);
    mirror_tree(&dir("trace"), "trace.example", "origin.example", NOW - 60);
    beacon_tree(&dir("both"), NOW - 30);
    mirror_tree(&dir("both"), "both.example", "origin.example", NOW - 600);
    beacon_tree(&dir("older"), NOW - 900);
    mirror_tree(&dir("older"), "older.example", "origin.example", NOW - 300);
    std::fs::create_dir_all(dir("neither")).unwrap();
    std::fs::write(dir("neither").join("data.txt"), "payload\n").unwrap();
    let names = ["beacon", "trace", "both", "older", "neither"];
    let modules: Vec<(&str, std::path::PathBuf)> = names.iter().map(|n| (*n, dir(n))).collect();
    let modules: Vec<(&str, &Path)> = modules.iter().map(|(n, p)| (*n, p.as_path())).collect();
    let d = RsyncDaemon::start(&modules);
    let urls: Vec<String> = names.iter().map(|n| d.url(n)).collect();
    let args: Vec<&str> = urls.iter().map(String::as_str).collect();

    let (code, r, err) = probe(&args);
    assert_eq!(code, Some(3), "the one with neither is unreachable\n{err}\n{r:?}");
    let got: Vec<(&str, Option<i64>)> =
        r.iter().map(|r| (r["origin_source"].as_str().unwrap_or("-"), r["origin_time"].as_i64())).collect();
    assert_eq!(
        got,
        [
            ("beacon", Some(NOW - 120)),
            ("trace", Some(NOW - 60)),
            ("beacon", Some(NOW - 30)),
            ("trace", Some(NOW - 300)),
            ("-", None)
        ],
        "{r:?}"
    );
    assert_eq!(r[0]["origin"], "origin.example");
    assert_eq!(r[2]["lag"], 0.0, "the freshest: the beacon of `both`");
    assert_eq!(r[2]["upstream"], "origin.example", "its own trace is read beside the beacon");
    assert_eq!(r[1]["lag"], 30.0);
    assert!(r[4]["error"].as_str().unwrap().contains("no origin beacon, and no master trace"), "{r:?}");

    let o = Rrr::new().args(["--now", &NOW.to_string(), "probe"]).args(&args[..2]).output();
    let table = stdout(&o);
    assert!(table.lines().next().unwrap().contains(" SOURCE "), "{table}");
    assert!(table.lines().nth(1).unwrap().contains(" beacon "), "{table}");
    assert!(table.lines().nth(2).unwrap().contains(" trace "), "{table}");
    let o = Rrr::new().args(["--now", &NOW.to_string(), "probe", "--prometheus"]).args(&args[..2]).output();
    let prom = stdout(&o);
    let line = format!("rrr_probe_origin_source_info{{mirror=\"{}\",source=\"beacon\"}} 1", urls[0]);
    assert!(prom.contains(&line), "{prom}");
    let (ok, out) = crate::metrics_http::promtool(&prom);
    assert!(ok, "promtool check metrics: {out}\n{prom}");
    // A trace dir that would climb out of the mirror's root is a usage error.
    let o = Rrr::new().args(["probe", "--trace-dir", "../x", &urls[0]]).output();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}
