//! The harness itself ([`crate::util::cmd`]): a failed expectation shows
//! what ran and what it said, and a dropped guard leaves no rrr running;
//! and the one test binary holds every tests/*.rs.

use crate::util::*;
use std::path::Path;
use std::time::Duration;

#[test]
fn a_failed_expectation_shows_the_command_and_its_output() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("no-such-tree/RECENT.recent");
    let caught = std::panic::catch_unwind(|| {
        Rrr::new().args(["news", "--local", s(&missing)]).env("RRR_TEST_MARK", "x").assert_exit(0);
    });
    let payload = caught.expect_err("exit 0 was expected of a failing rrr: assert_exit must panic");
    let message = payload.downcast_ref::<String>().expect("a formatted panic message");
    assert!(message.contains(&format!("command: RRR_TEST_MARK=x rrr news --local {}", s(&missing))), "{message}");
    assert!(message.contains("status:  exit status: 2"), "{message}");
    let stderr = message.split_once("--- stderr ---\n").map_or("", |(_, e)| e);
    assert!(stderr.contains("cannot open collection") && stderr.contains("no-such-tree"), "{message}");
}

#[test]
fn a_dropped_guard_kills_and_reaps_rrr() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("tree");
    write(&root, "a", "a\n");
    ok(&["init", s(&root)]);
    let watch = Rrr::new().args(["watch", s(&root)]).stderr(std::process::Stdio::null()).spawn();
    let pid = watch.id();
    wait_for("the watch's heartbeat", Duration::from_secs(20), || root.join(".rrr/watch.json").exists());
    drop(watch);
    // Reaped, not a zombie: the pid is gone from /proc.
    assert!(!Path::new(&format!("/proc/{pid}")).exists(), "rrr watch {pid} outlived its guard");
}

/// Every tests/NAME.rs is a `mod NAME;` of tests/tests.rs: autotests are
/// off (Cargo.toml), so a file left out would never be built or run.
#[test]
fn every_test_file_is_a_module_of_the_one_binary() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let main = std::fs::read_to_string(dir.join("tests.rs")).unwrap();
    let mods: std::collections::HashSet<&str> =
        main.lines().filter_map(|l| l.trim().strip_prefix("mod ")?.strip_suffix(';')).collect();
    let mut missing: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.strip_suffix(".rs").is_some_and(|m| m != "tests" && !mods.contains(m)))
        .collect();
    missing.sort();
    assert!(missing.is_empty(), "tests/tests.rs lacks `mod` lines for {missing:?}: they are never built or run");
}
