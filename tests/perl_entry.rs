//! The Perl entry points in bin/ (`rrr-news`, `rrr-init`, …) accept the
//! Perl tools' option spellings and run the same rrr code.

mod common;

use common::*;
use std::fs;
use std::path::Path;
use std::process::{Command, Output};

fn tool(name: &str, args: &[&str]) -> Output {
    Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("bin").join(name))
        .args(args)
        .env("RRR", rrr_bin())
        .env("TZ", "UTC")
        .env("TERM", "dumb")
        .output()
        .expect("run wrapper")
}

#[track_caller]
fn tool_ok(name: &str, args: &[&str]) -> String {
    let o = tool(name, args);
    assert!(o.status.success(), "{name} {args:?}: {}\n{}", o.status, stderr(&o));
    stdout(&o)
}

/// The reference's output with its duplicates removed (first occurrence per path).
fn dedup_by_path(text: &str) -> String {
    let mut seen = std::collections::HashSet::new();
    text.lines().filter(|l| seen.insert(l.rsplit(' ').next().unwrap().to_string())).map(|l| format!("{l}\n")).collect()
}

#[test]
fn rrr_news_prints_the_reference_lines_once_each() {
    for step in fixture_steps() {
        let p = step.join("RECENT.recent");
        let got = tool_ok("rrr-news", &["-local", p.to_str().unwrap()]);
        let want = dedup_by_path(&fs::read_to_string(step.join("_rrr-news.txt")).unwrap());
        assert_eq!(got, want, "{}", step.display());
    }
    let step = fixtures().join("perl-0.4.3/s2-news-deletes-aggregate/step2-after-2-deletes");
    let p = step.join("RECENT.recent");
    let want = dedup_by_path(&fs::read_to_string(step.join("_rrr-news-after-1700001800.5.txt")).unwrap());
    assert_eq!(want.lines().count(), 4);
    let ps = p.to_str().unwrap();
    for args in [
        ["-after", "1700001800.5", "-local", ps],
        ["--after=1700001800.5", "--local", ps, "--"],
        ["--aft", "1700001800.5", "--LOCAL", ps],
    ] {
        assert_eq!(tool_ok("rrr-news", &args), want, "{args:?}");
    }
    let two = tool_ok("rrr-news", &["-max", "2", "-skip-deletes", "-local", p.to_str().unwrap()]);
    assert_eq!(two.lines().count(), 2);
    let one = tool_ok(
        "rrr-news",
        &["--contains_path", "id/J/JX/JXNABUB/HTTP-Ref-2.92.tar.gz", "-local", p.to_str().unwrap()],
    );
    assert!(one.lines().count() <= 1);
    let o = tool("rrr-news", &["--bogus", "-local", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("unknown option"), "{}", stderr(&o));
    let o = tool("rrr-news", &["-rsync", "compress=1", "-max", "1", "-local", p.to_str().unwrap()]);
    assert!(o.status.success());
    assert!(stderr(&o).contains("--rsync is ignored"), "{}", stderr(&o));
}

#[test]
fn origin_tools_keep_perl_behaviour() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("t");
    fs::create_dir_all(root.join("a")).unwrap();
    fs::write(root.join("a/one"), "1").unwrap();
    // rrr-init: Perl default aggregator 1h,1d,1M,1Y,Z, -f spelling.
    tool_ok("rrr-init", &["--verbose", root.to_str().unwrap()]);
    let rf = rrr::store::read_file(&root.join("RECENT-1h.yaml")).unwrap().unwrap();
    assert_eq!(rf.meta.aggregator, ["1h", "1d", "1M", "1Y", "Z"]);
    tool_ok("rrr-init", &["-f", "--aggregator=1h,6h,Z", root.to_str().unwrap()]);
    let rf = rrr::store::read_file(&root.join("RECENT-1h.yaml")).unwrap().unwrap();
    assert_eq!(rf.meta.aggregator, ["1h", "6h", "Z"]);
    let p = root.join("RECENT.recent");
    let p = p.to_str().unwrap();
    // rrr-aggregate, with --dry-run a no-op.
    tool_ok("rrr-aggregate", &["--dry-run", p]);
    assert!(!root.join("RECENT-6h.yaml").exists());
    tool_ok("rrr-aggregate", &["-locktimeout", "5", p]);
    assert!(root.join("RECENT-Z.yaml").exists());
    // rrr-update aggregates afterwards, so the event reaches 6h at once.
    fs::write(root.join("a/two"), "2").unwrap();
    tool_ok("rrr-update", &["--add", p, "a/two"]);
    let six = rrr::store::read_file(&root.join("RECENT-6h.yaml")).unwrap().unwrap();
    assert!(six.events.iter().any(|e| e.path == "a/two"));
    // A path outside the root is a warning there, an error in `rrr update`.
    let o = tool("rrr-update", &[p, "/etc/passwd"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("outside"));
    assert_eq!(rrr(&["update", p, "/etc/passwd"]).status.code(), Some(2));
    // rrr-fsck repairs unless -n.
    fs::write(root.join("a/three"), "3").unwrap();
    let o = tool("rrr-fsck", &["-n", p]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("missing-in-index\ta/three"));
    let _ = tool("rrr-fsck", &["--yes", p]);
    assert_eq!(rrr(&["fsck", p]).status.code(), Some(0));
    // rrr-overview with -verbose.
    let ov = tool_ok("rrr-overview", &["-verbose", p]);
    assert!(ov.starts_with("Ival Cnt     Dirtymark"), "{ov}");
}
