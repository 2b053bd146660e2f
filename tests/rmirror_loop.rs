//! The run lock and `--loop`: a stale lock of an older rrr is removed,
//! a held one exits 75 naming its holder, the loop survives failing passes
//! (backing off) and stops on SIGTERM with its state saved, and two first
//! runs racing for one new target never refuse each other.

use crate::util::mirror::*;
use crate::util::*;
use serde_json::Value;
use std::fs;
use std::path::Path;

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
    let before = state_passes(&t.target);
    let child = Rrr::new()
        .args(["rmirror", "--remote", &t.src(), "--localroot", s(&t.target), "--loop", "--interval", "1", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while state_passes(&t.target) < before + 2 {
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

fn state_passes(target: &Path) -> u64 {
    fs::read(target.join(".rrr/state.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .and_then(|v| v["counters"]["passes"].as_u64())
        .unwrap_or(0)
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
    // the passes back off (1 s, 2 s, 4 s, …: about 2 in 2.5 s, not 25).
    std::thread::sleep(std::time::Duration::from_millis(2500));
    assert!(only_a_failed_attempt(&target), "a failing first pass wrote more: {:?}", listing(&target));
    let tried = state(&target)["consecutive_failures"].as_u64().unwrap();
    assert!((2..=10).contains(&tried), "{tried} failed attempts in 2.5 s");
    fs::write(origin.join("RECENT-1h.yaml"), good).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let st = fs::read(target.join(".rrr/state.json")).ok().and_then(|b| serde_json::from_slice::<Value>(&b).ok());
        if st.is_some_and(|st| st["last_complete"].is_string()) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "timed out waiting for a good pass");
        std::thread::sleep(std::time::Duration::from_millis(30));
    }
    child.signal(libc::SIGTERM);
    let o = child.wait_with_output();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    let kinds: Vec<String> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["kind"].as_str().unwrap().to_string())
        .collect();
    let errors = kinds.iter().filter(|k| *k == "error").count();
    assert!((2..=8).contains(&errors), "{errors} failed passes in 2.5 s: {kinds:?}\n{}", stderr(&o));
    assert!(kinds.contains(&"pass".to_string()), "{kinds:?}");
    assert!(stderr(&o).contains("failed passes in a row; next pass in"), "{}", stderr(&o));
    assert_same_tree(&origin, &target);
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
