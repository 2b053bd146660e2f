//! A new tree exists for monitoring from its first attempt: against an
//! upstream that never answers (a black hole) or refuses (a closed port),
//! `rmirror --loop` holds the tree's run lock and records the running
//! attempt from its first second (`status`, `check`), says `READY=1` to
//! systemd at once, answers `rrr trigger`, and a second run on the tree
//! exits 75; later attempts show as they run.

use crate::util::fixture::state;
use crate::util::mirror::listing;
use crate::util::net::{closed_port, BlackHole, NotifySocket};
use crate::util::*;
use serde_json::Value;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

/// A guard against a hang, not a speed assertion.
const LIMIT: Duration = Duration::from_secs(60);

/// `rmirror --loop` from `src` into `target`, telling `notify`, its log
/// in `log`; heartbeats every 200 ms (a debug build's `RRR_TEST_PROGRESS_MS`).
fn start_loop(src: &str, target: &Path, notify: &NotifySocket, log: &Path, extra: &[&str]) -> Running {
    Rrr::new()
        .args(["rmirror", "--loop", "--remote", src, "--localroot", s(target)])
        .args(extra)
        .env("NOTIFY_SOCKET", notify.path())
        .env("RRR_TEST_PROGRESS_MS", "200")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
}

fn status_text(target: &Path) -> String {
    stdout(&rrr(&["status", "--localroot", s(target)]))
}

fn status_json(target: &Path) -> Value {
    let o = rrr(&["status", "--json", "--localroot", s(target)]);
    serde_json::from_str(stdout(&o).trim()).unwrap_or_else(|e| panic!("{e}: {}{}", stdout(&o), stderr(&o)))
}

fn check(target: &Path, warn: &str, crit: &str) -> (i32, String) {
    let o = rrr(&["check", "--warn", warn, "--crit", crit, "--localroot", s(target)]);
    (o.status.code().unwrap(), stdout(&o))
}

#[test]
fn a_first_attempt_against_a_black_hole_is_held_visible_and_woken() {
    let hole = BlackHole::start();
    let tmp = tempfile::tempdir().unwrap();
    let mut notify = NotifySocket::bind(tmp.path());
    // A parent that does not exist yet is made as `mkdir -p` would.
    let target = tmp.path().join("srv/new");
    let log = tmp.path().join("loop.log");
    let child = start_loop(&hole.src(), &target, &notify, &log, &["--timeout", "120"]);
    assert!(
        notify.wait_for(LIMIT, |m| m.contains("READY=1")).is_some(),
        "READY=1 while the upstream has not answered: {:?}",
        notify.seen()
    );
    wait_for("the black hole's connection", LIMIT, || hole.connections() >= 1);
    wait_for("the running attempt in the state", LIMIT, || {
        status_text(&target).contains("fetching the recentfiles of")
    });

    let text = status_text(&target);
    let call = format!("fetching the recentfiles of rsync://127.0.0.1:{}/M, attempt 1 of 3", hole.port);
    assert!(text.contains("state            first attempt running since "), "{text}");
    assert!(text.contains(&call), "{text}");
    assert!(text.contains(", running\n") && text.contains("counters         1 attempt, 0 passes"), "{text}");
    let st = status_json(&target);
    assert_eq!((st["attempts"].as_u64(), st["attempt_running"].as_bool()), (Some(1), Some(true)), "{st}");
    assert_eq!((st["last_outcome"].clone(), st["running"]["attempt"].as_u64()), (Value::Null, Some(1)), "{st}");

    // WARNING while the first attempt is younger than --crit, CRITICAL after.
    let (code, line) = check(&target, "60", "3600");
    assert_eq!(code, 1, "{line}");
    assert!(line.starts_with("RRR WARNING - ") && line.contains("first pass running: recentfiles"), "{line}");
    wait_for("an attempt two seconds old", LIMIT, || {
        status_json(&target)["attempt_age_seconds"].as_f64().is_some_and(|a| a >= 2.5)
    });
    let (code, line) = check(&target, "1", "2");
    assert_eq!(code, 2, "{line}");
    assert!(line.contains("never complete; first attempt running for "), "{line}");

    // The tree is held: a second loop and a one-shot exit 75 at once.
    let holder = format!("process {}", child.id());
    let src = hole.src();
    for extra in [&["--loop"][..], &[]] {
        let mut args = vec!["rmirror", "--remote", &src, "--localroot", s(&target)];
        args.extend_from_slice(extra);
        let o = rrr(&args);
        assert_eq!(o.status.code(), Some(75), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(&holder), "{}", stderr(&o));
    }
    assert_eq!(hole.connections(), 1, "the second runs never asked the upstream");
    // rrr trigger reaches the loop.
    let o = rrr(&["trigger", "--localroot", s(&target)]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    // Signals before the first contact: SIGUSR1 is a wake-up (counted),
    // SIGHUP a logged no-op for a tree from the command line; neither ends it.
    let ignored =
        format!("rmirror {}: SIGHUP ignored: a tree given on the command line has no config", target.display());
    let logged =
        || std::fs::read_to_string(&log).unwrap().lines().any(|l| l.contains(" WARN ") && l.contains(&ignored));
    child.signal(libc::SIGUSR1);
    child.signal(libc::SIGHUP);
    wait_for("the SIGHUP's warning", LIMIT, logged);
    child.signal(libc::SIGUSR1);
    let st = status_json(&target);
    assert_eq!(st["attempt_running"], true, "still the first attempt: {st}");
    child.signal(libc::SIGTERM);
    let o = child.wait_with_output();
    assert_eq!(o.status.code(), Some(130), "{}", std::fs::read_to_string(&log).unwrap());
    // Only `.rrr/` was made: no file of a mirror before the remote answered.
    // (Looked at once the run ended: a heartbeat's atomic write has a
    // temp file beside the state for a moment.)
    assert_eq!(listing(&target), [".rrr/", ".rrr/id", ".rrr/rmirror.flock", ".rrr/state.json", ".rrr/trigger"]);
    let st = state(&target);
    assert_eq!((st["last_outcome"].as_str(), st["running"].clone()), (Some("interrupted"), Value::Null), "{st}");
}

#[test]
fn later_attempts_against_a_closed_port_show_as_they_run() {
    let tmp = tempfile::tempdir().unwrap();
    let mut notify = NotifySocket::bind(tmp.path());
    let target = tmp.path().join("new");
    let src = format!("rsync://127.0.0.1:{}/M/RECENT.recent", closed_port());
    let log = tmp.path().join("loop.log");
    let child = start_loop(&src, &target, &notify, &log, &["--interval", "1"]);
    assert!(notify.wait_for(LIMIT, |m| m.contains("READY=1")).is_some(), "{:?}", notify.seen());

    // The second attempt, while its rsync call retries, says so.
    let mut text = String::new();
    wait_for("the second attempt's retry in status", LIMIT, || {
        text = status_text(&target);
        text.contains("state            attempt 2 (never complete) running since")
            && text.contains("attempt 2 of 3, last error: ")
    });
    assert!(text.contains("Connection refused"), "{text}");
    assert!(
        text.contains(", running (the one before: failed)") && text.contains("counters         2 attempts"),
        "{text}"
    );
    let st = status_json(&target);
    assert_eq!((st["attempts"].as_u64(), st["consecutive_failures"].as_u64()), (Some(2), Some(1)), "{st}");
    assert!(st["last_attempt"].as_str() > st["last_error_time"].as_str(), "the running attempt is the last one: {st}");
    let (code, line) = check(&target, "60", "3600");
    assert_eq!(code, 2, "a first pass that failed is CRITICAL: {line}");
    assert!(
        line.contains("never complete; 1 failed attempt in a row: ") && line.contains("Connection refused"),
        "{line}"
    );
    let o = rrr(&["trigger", "--localroot", s(&target)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));

    child.signal(libc::SIGTERM);
    let o = child.wait_with_output();
    assert_eq!(o.status.code(), Some(130), "{}", std::fs::read_to_string(&log).unwrap());
}
