//! The run lock and `--loop`: a stale lock of an older rrr is removed,
//! a held one exits 75 naming its holder, the loop survives failing passes
//! (backing off) and stops on SIGTERM with its state saved, and two first
//! runs racing for one new target never refuse each other.

use crate::util::mirror::*;
use crate::util::*;
use serde_json::Value;
use std::fs;

#[test]
fn lock_loop_and_signals() {
    let t = Setup::new(5);
    // A lock directory of an older rrr naming a live unrelated pid (pid
    // reuse after a reboot) stops nothing, and is removed.
    let legacy = t.target.join(".rrr/rmirror.lock");
    fs::create_dir_all(&legacy).unwrap();
    fs::write(legacy.join("process"), "1\n").unwrap();
    let o = rmirror(&["--remote", &t.src(), "--localroot", s(&t.target)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!legacy.exists(), "legacy lock directory removed");
    // Another live run holds the lock: exit 75 at once, naming it.
    let lock = t.target.join(".rrr/rmirror.flock");
    let held = fs::File::options().write(true).open(&lock).unwrap();
    held.lock().unwrap();
    fs::write(&lock, format!("{}\nrrr rmirror --loop\n", std::process::id())).unwrap();
    let o = rmirror(&["--remote", &t.src(), "--localroot", s(&t.target)]);
    assert_eq!(o.status.code(), Some(75), "{}", stderr(&o));
    assert!(stderr(&o).contains(&format!("process {} (rrr rmirror --loop)", std::process::id())), "{}", stderr(&o));
    drop(held);

    // --loop survives passes; SIGTERM stops it cleanly (130) with the state saved.
    let before = passes_counted(&t.target);
    let child = Rrr::new()
        .args(["rmirror", "--remote", &t.src(), "--localroot", s(&t.target), "--loop", "--interval", "1", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while passes_counted(&t.target) < before + 2 {
        assert!(std::time::Instant::now() < deadline, "loop made no passes");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.signal(libc::SIGTERM);
    let o = child.wait_with_output();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    assert!(stdout(&o).lines().count() >= 2);
    assert!(fs::File::open(&lock).unwrap().try_lock().is_ok(), "lock released");
    assert_same_tree(&t.origin, &t.target);
}

#[test]
fn loop_survives_a_failing_pass() {
    let tmp = tempfile::tempdir().unwrap();
    let (origin, target) = (tmp.path().join("o"), tmp.path().join("t"));
    make_origin(&origin, 4);
    let good = fs::read(origin.join("RECENT-1h.yaml")).unwrap();
    fs::write(origin.join("RECENT-1h.yaml"), "--- {not: [a recentfile\n").unwrap();
    let child = Rrr::new()
        .args(["rmirror", "--remote", &principal(&origin), "--localroot", s(&target), "--loop", "--interval", "1"])
        .arg("--json")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn();
    // Failing before the first byte: only the attempts are recorded, and
    // the passes back off: the pause doubles after each failure in a row.
    let failures = || state_if_any(&target).and_then(|st| st["consecutive_failures"].as_u64()).unwrap_or(0);
    wait_for("three failed passes", std::time::Duration::from_secs(60), || failures() >= 3);
    assert!(only_a_failed_attempt(&target), "a failing first pass wrote more: {:?}", listing(&target));
    fs::write(origin.join("RECENT-1h.yaml"), good).unwrap();
    wait_for("a good pass", std::time::Duration::from_secs(60), || {
        state_if_any(&target).is_some_and(|st| st["last_complete"].is_string())
    });
    child.signal(libc::SIGTERM);
    let o = child.wait_with_output();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    let kinds: Vec<String> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["kind"].as_str().unwrap().to_string())
        .collect();
    // The failed passes, then the good one; nothing after a good pass fails.
    let errors = kinds.iter().take_while(|k| *k == "error").count();
    assert!(errors >= 3 && kinds[errors..].iter().all(|k| k == "pass") && kinds.len() > errors, "{kinds:?}");
    let err = stderr(&o);
    let backoffs: Vec<&str> = err.lines().filter(|l| l.contains("next pass in")).collect();
    assert_eq!(backoffs.len(), errors, "{err}");
    for (line, want) in backoffs.iter().zip([
        "1 failed pass; next pass in 1.00 s",
        "2 failed passes in a row; next pass in 2.00 s",
        "3 failed passes in a row; next pass in 4.00 s",
    ]) {
        assert!(line.ends_with(want), "{line:?} should end with {want:?}\n{err}");
    }
    // And each pause is really taken: the next pass starts no sooner.
    let logged: Vec<(f64, &str)> = err.lines().filter_map(|l| Some((log_seconds(l)?, l))).collect();
    for (i, (at, line)) in logged.iter().enumerate().filter(|(_, (_, l))| l.contains("next pass in")) {
        let pause: f64 = line.rsplit("next pass in ").next().unwrap().trim_end_matches(" s").parse().unwrap();
        if let Some((next, _)) =
            logged[i + 1..].iter().find(|(_, l)| l.contains("pass failed") || l.contains("mirrored"))
        {
            let waited = (next - at).rem_euclid(86400.0);
            assert!(waited >= pause - 0.05, "waited {waited:.3} s after {line:?}\n{err}");
        }
    }
    assert_same_tree(&origin, &target);
}

/// The time of day of a log line (`2026-12-02T03:53:56.834Z  WARN …`), in seconds.
fn log_seconds(line: &str) -> Option<f64> {
    let (stamp, _) = line.split_once("Z ")?;
    let (_, time) = stamp.split_once('T')?;
    let mut parts = time.split(':').map(|p| p.parse::<f64>());
    let (h, m, s) = (parts.next()?.ok()?, parts.next()?.ok()?, parts.next()?.ok()?);
    Some(h * 3600.0 + m * 60.0 + s)
}

#[test]
fn two_first_runs_racing_for_one_new_target() {
    let t = Setup::new(20);
    for _ in 0..3 {
        let _ = fs::remove_dir_all(&t.target);
        let spawn = || {
            Rrr::new()
                .args(["rmirror", "--remote", &t.src(), "--localroot", s(&t.target)])
                .stderr(std::process::Stdio::piped())
                .spawn()
        };
        let (a, b) = (spawn(), spawn());
        let (a, b) = (a.wait_with_output(), b.wait_with_output());
        let mut codes = [a.status.code(), b.status.code()];
        codes.sort();
        // One mirrors; the other finds the lock held (75), or comes after
        // and finds a mirror of its own remote (0): never a refusal.
        assert!(
            codes == [Some(0), Some(75)] || codes == [Some(0), Some(0)],
            "{codes:?}\n{}\n{}",
            stderr(&a),
            stderr(&b)
        );
        assert_same_tree(&t.origin, &t.target);
    }
}
