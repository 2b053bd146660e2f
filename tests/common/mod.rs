//! Shared harness for the integration tests: run the real `rrr` binary,
//! find fixtures, build temp trees.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn rrr_bin() -> &'static str {
    env!("CARGO_BIN_EXE_rrr")
}

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// Run rrr with args; returns the output (never panics on non-zero exit).
pub fn rrr(args: &[&str]) -> Output {
    Command::new(rrr_bin()).args(args).env("TERM", "dumb").output().expect("run rrr")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Assert success and return stdout.
#[track_caller]
pub fn ok(args: &[&str]) -> String {
    let o = rrr(args);
    assert!(o.status.success(), "rrr {args:?} failed: {}\n{}", o.status, stderr(&o));
    stdout(&o)
}

/// Every step directory of the Perl reference fixtures.
pub fn fixture_steps() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let base = fixtures().join("perl-0.4.3");
    for scen in std::fs::read_dir(&base).unwrap().flatten() {
        if !scen.path().is_dir() {
            continue;
        }
        for step in std::fs::read_dir(scen.path()).unwrap().flatten() {
            if step.path().join("RECENT.recent").exists() {
                out.push(step.path());
            }
        }
    }
    out.sort();
    assert!(out.len() >= 13, "fixture steps missing under {}", base.display());
    out
}

/// Remove the `Producers` block (YAML) so files by different producers compare.
pub fn mask_producers(yaml: &str) -> String {
    let mut out = String::new();
    let mut skipping = false;
    for line in yaml.split_inclusive('\n') {
        if line.starts_with("  Producers:") {
            skipping = true;
            continue;
        }
        if skipping && line.starts_with("    ") {
            continue;
        }
        skipping = false;
        out.push_str(line);
    }
    out
}
