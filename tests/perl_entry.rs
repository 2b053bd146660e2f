//! The Perl entry points in bin/ (`rrr-news`, `rrr-init`, …) accept the
//! Perl tools' option spellings and run the same rrr code.

use crate::util::*;
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
    assert!(stderr(&o).contains("--rsync_options is ignored"), "{}", stderr(&o));
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
    // rrr-update only updates the principal, as the Perl script does ...
    fs::write(root.join("a/two"), "2").unwrap();
    let six_before = fs::read(root.join("RECENT-6h.yaml")).unwrap();
    tool_ok("rrr-update", &["--add", p, "a/two"]);
    assert_eq!(fs::read(root.join("RECENT-6h.yaml")).unwrap(), six_before, "no aggregate without --epoch");
    let one = rrr::store::read_file(&root.join("RECENT-1h.yaml")).unwrap().unwrap();
    assert!(one.events.iter().any(|e| e.path == "a/two"));
    // ... and, with --epoch, aggregates twice with force, so the dirty event
    // reaches Z at once (and, being old, is cut from the smaller files).
    tool_ok("rrr-update", &["--epoch", "1600000000", p, "a/one"]);
    let z = rrr::store::read_file(&root.join("RECENT-Z.yaml")).unwrap().unwrap();
    assert!(z.events.iter().any(|e| e.path == "a/one" && e.epoch.as_str() == "1600000000.0"), "{:?}", z.events);
    assert!(ok(&["news", "--local", p]).contains("1600000000.0\tnew\ta/one\n"));
    // A path outside the root is a warning there, an error in `rrr update`.
    let o = tool("rrr-update", &[p, "/etc/passwd"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("outside"));
    assert_eq!(rrr(&["update", p, "/etc/passwd"]).status.code(), Some(2));
    // rrr-fsck repairs unless -n.
    fs::write(root.join("a/three"), "3").unwrap();
    let o = tool("rrr-fsck", &["-n", p]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("missing_in_index\ta/three"));
    let _ = tool("rrr-fsck", &["--yes", p]);
    assert_eq!(rrr(&["fsck", p]).status.code(), Some(0));
    // rrr-overview with -verbose.
    let ov = tool_ok("rrr-overview", &["-verbose", p]);
    assert!(ov.starts_with("Ival Cnt     Dirtymark"), "{ov}");
}

#[test]
fn rrr_update_keeps_the_perl_scripts_checks() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("t");
    fs::create_dir_all(root.join("a")).unwrap();
    fs::write(root.join("a/one"), "1").unwrap();
    tool_ok("rrr-init", &[root.to_str().unwrap()]);
    let p = root.join("RECENT.recent");
    let p = p.to_str().unwrap();
    let principal = root.join("RECENT-1h.yaml");
    let before = fs::read(&principal).unwrap();
    // A delete of a path the collection never listed dies, as in Perl.
    let o = tool("rrr-update", &["--delete", p, "a/never"]);
    assert_ne!(o.status.code(), Some(0));
    assert!(stderr(&o).contains("Didn't find 'a/never' in this recentfile collection, giving up."), "{}", stderr(&o));
    // rrr's own files and a non-positive epoch are refused here too.
    for args in [vec![p, "RECENT-1h.yaml"], vec![p, "RECENT-1h.yaml.lock/process"], vec!["--epoch", "0", p, "a/one"]] {
        let o = tool("rrr-update", &args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
    }
    assert_eq!(fs::read(&principal).unwrap(), before, "nothing recorded");
    // A delete of a listed path says what it found; the disk is not
    // consulted (the Perl script records a file that is not there), and a
    // future --epoch becomes the clock.
    let o = tool("rrr-update", &["--delete", p, "a/one"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).starts_with("Found file:\n--- \n- \n  epoch: '"), "{}", stderr(&o));
    tool_ok("rrr-update", &[p, "a/not-on-disk"]);
    let o = tool("rrr-update", &["--epoch", "99999999999", p, "a/not-on-disk-either"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rf = rrr::store::read_file(&principal).unwrap().unwrap();
    let e = rf.events.iter().find(|e| e.path == "a/not-on-disk-either").unwrap();
    assert!(e.epoch.as_str().starts_with("17") || e.epoch.as_str().starts_with("18"), "{}", e.epoch);
    assert!(rf.events.iter().any(|e| e.path == "a/one" && e.kind == rrr::recentfile::EventKind::Delete));
    // --epoch then aggregates; when that fails the update still stands: exit 1, saying so.
    // (rrr-init's cascade is the Perl default, 1h 1d 1M 1Y Z.)
    fs::remove_file(root.join("RECENT-1d.yaml")).ok();
    fs::create_dir(root.join("RECENT-1d.yaml")).unwrap();
    let o = tool("rrr-update", &["--epoch", "1700000000", p, "a/dirty"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("recorded; aggregate failed"), "{}", stderr(&o));
    let rf = rrr::store::read_file(&principal).unwrap().unwrap();
    assert!(rf.events.iter().any(|e| e.path == "a/dirty"));
}

#[test]
fn help_is_the_perl_scripts_usage() {
    for name in rrr::perl_compat::TOOLS {
        for flag in ["--help", "-h"] {
            let got = tool_ok(name, &[flag]);
            assert_eq!(got, rrr::perl_compat::perl_usage(name), "{name} {flag}");
            assert!(got.starts_with(&format!("Usage:\n      {name} ")), "{name}: {got}");
            assert!(!got.contains("Usage: rrr"), "{name}: not rrr's own usage: {got}");
        }
    }
    let client = tool_ok("rrr-client", &["--help"]);
    assert!(client.contains("--source=s") && client.contains("--target=s"), "{client}");
    assert!(!client.contains("--remote") && !client.contains("--localroot"), "{client}");
}

#[test]
fn rrr_overview_of_an_empty_collection_is_perls() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("t");
    fs::create_dir_all(&root).unwrap();
    tool_ok("rrr-init", &[root.to_str().unwrap()]);
    assert_eq!(tool_ok("rrr-overview", &[root.join("RECENT.recent").to_str().unwrap()]), "\n\n");
    // rrr overview says it in words.
    let words = ok(&["overview", root.join("RECENT.recent").to_str().unwrap()]);
    assert!(words.ends_with(": no events yet (no recentfile of this collection lists any)\n"), "{words:?}");
}

fn spawn_tool(name: &str, args: &[&str]) -> std::process::Child {
    Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("bin").join(name))
        .args(args)
        .env("RRR", rrr_bin())
        .env("TERM", "dumb")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

fn term(child: &mut std::process::Child) -> i32 {
    let _ = kill(child.id() as i32, libc::SIGTERM);
    child.wait().unwrap().code().unwrap_or(-1)
}

/// rrr-server watches like rrr watch; rrr-client mirrors like rrr rmirror --loop.
#[test]
fn server_and_client_run_watch_and_rmirror() {
    let tmp = tempfile::tempdir().unwrap();
    let origin = tmp.path().join("origin");
    fs::create_dir_all(origin.join("id/A")).unwrap();
    fs::write(origin.join("id/A/one"), "1").unwrap();
    tool_ok("rrr-init", &["--aggregator=1h,6h,Z", origin.to_str().unwrap()]);
    let p = origin.join("RECENT.recent");
    let mut server = spawn_tool("rrr-server", &["--verbose", p.to_str().unwrap()]);
    wait_for("the watch heartbeat", std::time::Duration::from_secs(30), || origin.join(".rrr/watch.json").exists());
    fs::write(origin.join("id/A/two"), "2").unwrap();
    wait_for("the watched upload in the index", std::time::Duration::from_secs(30), || {
        ok(&["news", "--local", p.to_str().unwrap()]).contains("id/A/two")
    });
    assert_eq!(term(&mut server), 0, "rrr-server stops cleanly on SIGTERM");

    let daemon = crate::util::rsyncd::RsyncDaemon::start(&[("CPAN", &origin)]);
    let target = tmp.path().join("mirror");
    let source = format!("{}/RECENT.recent", daemon.url("CPAN"));
    let mut client = spawn_tool(
        "rrr-client",
        &["--source", &source, "--target", target.to_str().unwrap(), "--tmpdir", "/tmp", "--skip-deletes", "--verbose"],
    );
    wait_for("the mirror", std::time::Duration::from_secs(30), || {
        target.join("id/A/two").exists() && target.join("RECENT.recent").exists()
    });
    assert_eq!(fs::read_to_string(target.join("id/A/two")).unwrap(), "2");
    assert_eq!(term(&mut client), 130, "rrr-client's loop saves state and exits 130 on SIGTERM");
    let mut err = String::new();
    use std::io::Read;
    client.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(err.contains("--tmpdir is ignored"), "{err}");
    assert!(target.join(".rrr/state.json").exists());
}
