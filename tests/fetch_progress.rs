//! Every run heartbeats while it fetches, a one-shot's first fetch
//! included, and reports only what the network delivered: against a real
//! loopback daemon, a principal fetch slowed down by `--bwlimit` moves the
//! heartbeat and logs progress whether rsync prints lines or not; the bytes
//! shown never include rsync's reads of its libraries or of the basis file
//! (`--copy-dest`), and a black hole shows 0.

use crate::util::fixture::{state_if_any, Origin};
use crate::util::net::BlackHole;
use crate::util::*;
use std::process::Stdio;
use std::time::Duration;

/// A guard against a hang, not a speed assertion.
const LIMIT: Duration = Duration::from_secs(60);

/// A long name: each event of it adds about 280 bytes to the principal.
fn long_name(i: usize) -> String {
    format!("id/{}/f{i:05}", "n".repeat(200))
}

/// `n` new files at the origin, recorded (the principal grows by about
/// 280 bytes each).
fn publish(origin: &Origin, from: usize, n: usize) {
    let mut lines = String::new();
    for i in from..from + n {
        write(origin, &long_name(i), "x\n");
        lines.push_str(&format!("new {}\n", long_name(i)));
    }
    Rrr::new().args(["update", "--stdin", &principal(origin)]).stdin(lines).assert_ok();
}

/// (heartbeat, bytes) of the running fetch of recentfiles while `child`
/// runs, each new heartbeat once.
fn beats_while_fetching(target: &std::path::Path, child: &mut Running) -> Vec<(String, u64)> {
    let mut seen: Vec<(String, u64)> = Vec::new();
    let end = std::time::Instant::now() + LIMIT;
    while child.try_wait().unwrap().is_none() && std::time::Instant::now() < end {
        if let Some(st) = state_if_any(target) {
            let run = &st["running"];
            if run["phase"] == "recentfiles" {
                let beat = (st["heartbeat"].as_str().unwrap_or("").to_string(), run["bytes"].as_u64().unwrap());
                if seen.last().is_none_or(|(h, _)| *h != beat.0) {
                    seen.push(beat);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    seen
}

#[test]
fn a_slow_principal_fetch_beats_logs_and_counts_only_network_bytes() {
    let origin = Origin::numbered(3, |i| format!("id/f{i}.txt"));
    publish(&origin, 0, 1000);
    let mirror = origin.mirror();
    let target = mirror.root.clone();
    mirror.pass(&[], 0);
    let basis = std::fs::metadata(target.join("RECENT-1h.yaml")).unwrap().len();
    assert!(basis > 250_000, "a large principal, our copy the basis of the next fetch: {basis}");

    for (round, extra) in [
        (1, &["--rsync-option=--bwlimit=40"][..]),
        (2, &["--rsync-option=--bwlimit=40", "--rsync-option=--info=progress2"]),
    ] {
        // About 90 KB more principal: a few seconds at 40 KB/s.
        publish(&origin, round * 10_000, 320);
        let mut child = mirror
            .rmirror()
            .args(extra)
            .env("RRR_TEST_PROGRESS_MS", "300")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn();
        let beats = beats_while_fetching(&target, &mut child);
        let o = child.wait_with_output();
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert!(beats.len() >= 3, "round {round}: the heartbeat moves while the fetch moves: {beats:?}");
        let log = stderr(&o);
        assert!(log.lines().any(|l| l.contains("progress: recentfiles ")), "round {round}: a slow fetch logs: {log}");
        if round == 2 {
            // rsync prints lines (--info=progress2): its own figures are shown.
            continue;
        }
        let bytes: Vec<u64> = beats.iter().map(|(_, b)| *b).collect();
        assert!(bytes.windows(2).all(|w| w[0] <= w[1]) && bytes.last() > bytes.first(), "round {round}: {bytes:?}");
        // What the network delivered: the new events and rsync's protocol,
        // never the basis file (our principal, read for the delta) or
        // rsync's libraries.
        let max = *bytes.iter().max().unwrap();
        assert!(max < 150_000 && max < basis, "round {round}: {max} bytes is more than arrived: {bytes:?}");
        assert!(log.lines().any(|l| l.contains("progress: recentfiles ") && l.contains(" received")), "{log}");
    }
}

#[test]
fn a_black_hole_delivers_nothing() {
    let hole = BlackHole::start();
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("m");
    let child = Rrr::new()
        .args(["rmirror", "--remote", &hole.src(), "--localroot", s(&target), "--timeout", "60"])
        .env("RRR_TEST_PROGRESS_MS", "200")
        .stderr(Stdio::piped())
        .spawn();
    wait_for("a heartbeat with the running fetch", LIMIT, || {
        state_if_any(&target).is_some_and(|st| st["running"]["rate"].is_string() && st["running"]["rate"] != "")
    });
    let st = state_if_any(&target).unwrap();
    assert_eq!((st["running"]["bytes"].as_u64(), st["running"]["local"].as_bool()), (Some(0), Some(false)), "{st}");
    child.signal(libc::SIGTERM);
    let o = child.wait_with_output();
    let log = stderr(&o);
    assert!(log.contains("progress: recentfiles 0 B received"), "{log}");
    assert!(!log.contains("KiB received"), "{log}");
}
