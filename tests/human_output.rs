//! The human outputs, whole: `--help` of rrr and of each command,
//! `overview`, `status` and a few error messages, as insta snapshots in
//! tests/snapshots/ (temp paths, ports and pass timings redacted). A change
//! shows as a diff; accept it on purpose with `cargo insta review` (or
//! `INSTA_UPDATE=always cargo test --test integration human_output::`) and
//! commit the .snap files.

use crate::util::fixture::Origin;
use crate::util::*;
use std::fs;
use std::path::Path;

/// The clock every command here runs at (`--now`).
const NOW: &str = "1700000000";

/// insta settings that replace `dir` (a temp directory) by `[TMP]`, a
/// loopback port by `[PORT]` and a log line's wall-clock time (which
/// `--now` does not pin) by `[TIME]`.
fn redacting(dir: &Path) -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(&regex_escape(s(dir)), "[TMP]");
    settings.add_filter(r"127\.0\.0\.1:\d+", "127.0.0.1:[PORT]");
    settings.add_filter(r"(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z ", "[TIME] ");
    settings.set_prepend_module_to_snapshot(false);
    settings
}

fn regex_escape(text: &str) -> String {
    text.chars().flat_map(|c| if c.is_ascii_alphanumeric() || c == '/' { vec![c] } else { vec!['\\', c] }).collect()
}

#[test]
fn help_of_rrr_and_of_each_command() {
    insta::with_settings!({ prepend_module_to_snapshot => false }, {
        insta::assert_snapshot!("help", ok(&["--help"]));
        for cmd in
            ["init", "update", "aggregate", "news", "overview", "fsck", "completions", "manpages", "rmirror", "status", "check", "trigger", "watch"]
        {
            insta::assert_snapshot!(format!("help_{cmd}"), ok(&[cmd, "--help"]));
        }
    });
}

#[test]
fn overview_of_a_small_collection() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("origin");
    for i in 0..3 {
        write(&root, &format!("d/f{i}"), "x\n");
    }
    ok(&["--now", NOW, "init", "--aggregate", s(&root)]);
    let out = ok(&["--now", "1700000100", "overview", &principal(&root)]);
    redacting(tmp.path()).bind(|| insta::assert_snapshot!("overview", out));
}

#[test]
fn status_after_one_pass() {
    let origin = Origin::new([("a/one", "1\n"), ("b/two", "2\n")], &["--now", NOW, "init", "--aggregate"]);
    let mirror = origin.mirror();
    mirror.rmirror().args(["--now", NOW]).assert_ok();
    let out = ok(&["--now", "1700000060", "status", "--localroot", s(&mirror.root)]);
    redacting(origin.dir()).bind(|| insta::assert_snapshot!("status", out));
}

#[test]
fn error_messages() {
    let tmp = tempfile::tempdir().unwrap();
    let flat = tmp.path().join("RECENT.recent");
    fs::write(&flat, "copied without its link\n").unwrap();
    let mut said = String::new();
    for args in [
        vec!["init", "--interval", "5Z", s(tmp.path())],
        vec!["overview", s(&flat)],
        vec!["fsck", "--exclude", "/", s(&flat)],
        vec!["news"],
        vec!["frobnicate"],
    ] {
        let o = rrr(&args);
        said.push_str(&format!("$ rrr {}\nexit {:?}\n{}\n", args.join(" "), o.status.code(), stderr(&o)));
    }
    redacting(tmp.path()).bind(|| insta::assert_snapshot!("errors", said));
}
