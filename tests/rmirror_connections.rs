//! How a pass fetches the index: connections (each costs ~0.1 s, more
//! than the rest of a pass) are counted in the daemon's log; the tree and
//! the `--files-from` transfer start once the recentfiles are in place, not
//! after the index rsync's teardown; a truncated principal and a mirror that
//! was down fetch the larger recentfiles they need with the principal.

use crate::util::mirror::*;
use crate::util::rsyncd::RsyncDaemon;
use crate::util::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

/// `rrr rmirror --now NOW --json`, asserting exit 0; the pass object and
/// how many transfers the daemon served for it (from its log).
fn pass_at(d: &RsyncDaemon, src: &str, target: &Path, now: &str) -> (Value, usize) {
    let before = d.transfers();
    let o = rrr(&["--now", now, "rmirror", "--remote", src, "--localroot", s(target), "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(stdout(&o).lines().last().unwrap()).unwrap();
    (v, d.transfers() - before)
}

#[test]
fn a_first_pass_is_two_connections_and_an_unchanged_pass_one() {
    let t = Setup::new(30);
    let now = "9999999999";
    let (v, n) = pass_at(t.daemon(), &t.src(), &t.target, now);
    assert_eq!((v["bootstrap"].as_bool(), n), (Some(true), 2), "the index and the tree: {v}\n{}", t.daemon().log());
    assert_same_tree(&t.origin, &t.target);
    for iv in ["1h", "6h", "1d", "1W", "1M", "1Q", "1Y", "Z"] {
        assert!(t.target.join(format!("RECENT-{iv}.yaml")).exists(), "{iv} not installed");
    }
    let (v, n) = pass_at(t.daemon(), &t.src(), &t.target, now);
    assert_eq!((v["transferred"].as_u64(), n), (Some(0), 1), "an unchanged pass: {v}\n{}", t.daemon().log());
    // New files: the principal, then one --files-from transfer.
    t.origin.change(&["id/N/new1.txt", "id/A/f000.txt"], &["id/B/f001.txt"]);
    let (v, n) = pass_at(t.daemon(), &t.src(), &t.target, now);
    assert_eq!((v["transferred"].as_u64(), v["deleted"].as_u64(), n), (Some(2), Some(1), 2), "{v}");
    // Deletes only: applied here, no second connection.
    t.origin.change(&[], &["id/C/f002.txt"]);
    let (v, n) = pass_at(t.daemon(), &t.src(), &t.target, now);
    assert_eq!((v["deleted"].as_u64(), n), (Some(1), 1), "{v}");
    assert_same_tree(&t.origin, &t.target);
}

/// Run rmirror on `t` with `extra` arguments and `RRR_RSYNC` set to a
/// wrapper: the rsync call whose arguments match the shell pattern `slow`
/// records its destination, runs with `slow_opts`, then holds on for 1 s
/// (a stretched teardown) before it logs `slow end`; the call matching
/// `watched` logs `watched start` and lists that destination. Returns the
/// output and the log.
fn with_stretched_teardown(t: &Setup, slow: &str, slow_opts: &str, watched: &str, extra: &[&str]) -> (Output, String) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let wrapper = dir.path().join("rsync");
    let script = format!(
        r#"#!/bin/sh
log={log}
case " $* " in
  {watched})
    echo "watched start" >> "$log"
    ls "$(cat "$log.dest")" >> "$log" 2>&1
    exec rsync "$@" ;;
  {slow})
    for a; do dest=$a; done
    echo "$dest" > "$log.dest"
    rsync {slow_opts} "$@"; rc=$?
    sleep 1
    echo "slow end" >> "$log"
    exit $rc ;;
esac
exec rsync "$@"
"#,
        log = log.display(),
    );
    fs::write(&wrapper, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&wrapper, fs::Permissions::from_mode(0o755)).unwrap();
    let src = t.src();
    let mut args = vec!["--remote", src.as_str(), "--localroot", s(&t.target)];
    args.extend_from_slice(extra);
    let o = rmirror_env(&args, &[("RRR_RSYNC", wrapper.to_str().unwrap())]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let calls = fs::read_to_string(&log).unwrap();
    (o, calls)
}

/// What the `watched` call of [`with_stretched_teardown`] saw: it started
/// before the slow call's teardown ended; the listing of the slow call's
/// destination at that moment.
#[track_caller]
fn started_during_teardown(calls: &str) -> &str {
    let at = |what: &str| calls.find(what).unwrap_or_else(|| panic!("{what} in {calls}"));
    assert!(at("watched start") < at("slow end"), "it waited for the teardown:\n{calls}");
    &calls[at("watched start")..at("slow end")]
}

/// A first pass starts the whole-tree rsync as soon as every recentfile
/// it installs is in place, while the index rsync is still finishing (its
/// teardown is 65 ms with a default daemon), and never before: the index
/// call is slowed (`--bwlimit`) and its teardown stretched to 1 s.
#[test]
fn the_tree_starts_once_the_index_is_in_place_not_after_its_teardown() {
    let t = Setup::new(30);
    let (_, calls) = with_stretched_teardown(&t, r#"*" --dirs "*"#, "--bwlimit=20", r#"*" --safe-links "*"#, &[]);
    assert_same_tree(&t.origin, &t.target);
    let listing = started_during_teardown(&calls);
    for iv in ["1h", "6h", "1d", "1W", "1M", "1Q", "1Y", "Z"] {
        assert!(
            listing.contains(&format!("RECENT-{iv}.yaml\n")),
            "RECENT-{iv}.yaml not in place when the tree started:\n{calls}"
        );
    }
    for iv in ["1h", "6h", "Z"] {
        assert!(t.target.join(format!("RECENT-{iv}.yaml")).exists(), "{iv} installed");
    }
}

/// An incremental pass likewise: its `--files-from` transfer starts once
/// the principal and its link are in place, while the principal call (its
/// teardown stretched to 1 s) is still finishing.
#[test]
fn an_incremental_transfer_starts_once_the_principal_is_in_place() {
    let t = Setup::new(30);
    pass(&t.src(), &t.target, &[], 0);
    t.origin.change(&["id/N/late.txt"], &[]);
    let (o, calls) = with_stretched_teardown(&t, r#"*"/RECENT.recent "*"#, "", r#"*" --files-from"*"#, &["--json"]);
    let v: Value = serde_json::from_str(stdout(&o).lines().last().unwrap()).unwrap();
    assert_eq!((v["bootstrap"].as_bool(), v["transferred"].as_u64()), (Some(false), Some(1)), "{v}");
    assert_same_tree(&t.origin, &t.target);
    let listing = started_during_teardown(&calls);
    assert!(listing.contains("RECENT-1h.yaml\n") && listing.contains("RECENT.recent\n"), "{calls}");
}

/// (min, max) epoch of each of our recentfiles, by interval.
fn spans(target: &Path) -> BTreeMap<String, (f64, f64)> {
    let o = ok(&["overview", "--json", s(&target.join("RECENT.recent"))]);
    let num = |v: &Value| v.as_str().and_then(|x| x.parse::<f64>().ok()).unwrap_or(f64::NAN);
    o.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|v| (v["interval"].as_str().unwrap().to_string(), (num(&v["min"]), num(&v["max"]))))
        .collect()
}

/// An origin of three files written at 1699999900, indexed (`init
/// --aggregate`) at 1700000000 and served by a daemon: (temp dir, origin,
/// daemon, the principal's URL). Tests then move `--now` on.
fn origin_indexed_at_1700000000() -> (tempfile::TempDir, PathBuf, RsyncDaemon, String) {
    let tmp = tempfile::tempdir().unwrap();
    let origin = tmp.path().join("origin");
    for i in 0..3 {
        write(&origin, &format!("id/f{i}"), "old\n");
        let f = fs::File::options().append(true).open(origin.join(format!("id/f{i}"))).unwrap();
        f.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_699_999_900)).unwrap();
    }
    ok(&["--now", "1700000000", "init", "--aggregate", s(&origin)]);
    let d = RsyncDaemon::start(&[("origin", &origin)]);
    let src = format!("{}/RECENT.recent", d.url("origin"));
    (tmp, origin, d, src)
}

#[test]
fn a_truncated_principal_waits_for_our_next_copy_without_a_third_connection() {
    // The origin's aggregate truncates its principal past the events of
    // our copy of RECENT-6h.yaml: installing the new principal at once
    // would leave a mirror reading ours a gap between the two. rrr used to
    // fetch 6h right then, a third connection in that pass.
    let (tmp, origin, d, src) = origin_indexed_at_1700000000();
    let target = tmp.path().join("target");
    let no_gap = |target: &Path| {
        let sp = spans(target);
        assert!(sp["1h"].0 <= sp["6h"].1, "a gap between our 1h and our 6h: {sp:?}");
    };
    let (_, n) = pass_at(&d, &src, &target, "1700000000");
    assert_eq!(n, 2);
    let step = |name: &str, now: &str| {
        write(&origin, name, "new\n");
        ok(&["--now", now, "update", &principal(&origin), name]);
        ok(&["--now", now, "aggregate", &principal(&origin)]);
    };
    // Two hours later: the principal still reaches our 6h.
    step("id/new1", "1700007200");
    let (v, n) = pass_at(&d, &src, &target, "1700007200");
    assert_eq!((v["transferred"].as_u64(), n), (Some(1), 2), "{v}");
    no_gap(&target);
    // A pass just before (a mirror passes every 20 s or so: it does not
    // expect to be behind), then the origin's principal starts after our
    // 6h ends.
    assert_eq!(pass_at(&d, &src, &target, "1700014390").1, 1);
    step("id/new2", "1700014400");
    let (v, n) = pass_at(&d, &src, &target, "1700014400");
    assert_eq!((v["transferred"].as_u64(), v["complete"].as_bool(), n), (Some(1), Some(true), 2), "{v}");
    assert!(target.join("id/new2").exists());
    no_gap(&target);
    assert!(!perl_paths(&target.join("RECENT-1h.yaml")).contains(&"id/new2".to_string()), "installed with a gap");
    assert_eq!(state(&target)["refetch"], serde_json::json!(["RECENT-6h.yaml"]));
    // The next pass fetches 6h with the principal, in one connection, and
    // installs both.
    let (v, n) = pass_at(&d, &src, &target, "1700014400");
    assert_eq!((v["transferred"].as_u64(), n), (Some(0), 1), "{v}");
    no_gap(&target);
    assert!(perl_paths(&target.join("RECENT-1h.yaml")).contains(&"id/new2".to_string()));
    assert_eq!(state(&target)["refetch"], serde_json::json!([]));
    assert_same_tree(&origin, &target);
}

#[test]
fn a_mirror_that_was_down_fetches_the_larger_files_it_needs_with_the_principal() {
    // Down for two days: the principal no longer reaches what is done, and
    // the walk needs 6h, 1d and 1W. They come in the principal's connection
    // (by the time since the last complete pass), not one connection each.
    let (tmp, origin, d, src) = origin_indexed_at_1700000000();
    let target = tmp.path().join("target");
    pass_at(&d, &src, &target, "1700000000");
    for (i, now) in ["1700010800", "1700086400", "1700172800"].iter().enumerate() {
        write(&origin, &format!("id/new{i}"), "new\n");
        ok(&["--now", now, "update", &principal(&origin), &format!("id/new{i}")]);
        ok(&["--now", now, "aggregate", &principal(&origin)]);
    }
    let index_fetches =
        |d: &RsyncDaemon| d.log().lines().filter(|l| l.contains("] rsync on ") && l.contains("RECENT")).count();
    let before = index_fetches(&d);
    let (v, _) = pass_at(&d, &src, &target, "1700172800");
    assert_eq!(v["read"], serde_json::json!(["RECENT-1h.yaml", "RECENT-6h.yaml", "RECENT-1d.yaml", "RECENT-1W.yaml"]));
    assert_eq!((v["transferred"].as_u64(), v["complete"].as_bool()), (Some(3), Some(true)), "{v}");
    // (Each file with new events still has its own --files-from transfer.)
    assert_eq!(index_fetches(&d) - before, 1, "one connection for the recentfiles: {v}\n{}", d.log());
    assert_same_tree(&origin, &target);
    let sp = spans(&target);
    assert!(sp["1h"].0 <= sp["6h"].1 && sp["6h"].0 <= sp["1d"].1, "a gap in our copies: {sp:?}");
}
