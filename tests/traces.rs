//! ftpsync traces and the timestamp file written by mirrors (`rmirror
//! --trace DIR --trace-host NAME --timestamp FILE`, issue 35), against
//! real loopback rsync daemons, the clock pinned with `--now`: only a
//! complete pass writes them; a tier keeps its upstream's traces and
//! appends itself to `_hierarchy`; a whole-tree pass keeps them.

use crate::util::fixture::{change_with, Mirror, Origin};
use crate::util::rsyncd::RsyncDaemon;
use crate::util::{ok, principal, wait_for, write};
use crate::watch::WAIT;
use rrr::monitor::trace::{self, Trace};
use rrr::monitor::trace_write::write_master_trace;
use std::fs;
use std::path::Path;

const T0: i64 = 1_796_274_942;
const DIR: &str = "project/trace";

fn at(t: i64) -> String {
    t.to_string()
}

/// The origin's master trace as an origin writes it at `date`.
fn master(root: &Path, date: i64) {
    let t = Trace {
        date,
        date_started: None,
        archive_serial: Some(format!("{date}.5")),
        host: "origin.example".into(),
        maintainer: None,
        upstream: None,
        trigger: None,
        extra: vec![],
    };
    write_master_trace(root, Path::new(DIR), &t).unwrap();
}

fn read_trace(root: &Path, name: &str) -> trace::ParsedTrace {
    let bytes = fs::read(root.join(DIR).join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    trace::parse(&bytes).unwrap()
}

fn trace_args(host: &str) -> Vec<String> {
    ["--trace", DIR, "--trace-host", host, "--timestamp", "indices/timestamp.txt"].map(String::from).to_vec()
}

fn names(dir: &Path) -> Vec<String> {
    let mut n: Vec<String> =
        fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    n.sort();
    n
}

#[test]
fn only_a_complete_pass_writes_the_trace_hierarchy_and_timestamp() {
    let origin = Origin::new([("a.txt", "a\n"), ("b.txt", "b\n"), ("c.txt", "c\n")], &["--now", &at(T0), "init"]);
    master(&origin, T0 + 5);
    let m = origin.mirror();
    let args = trace_args("t1.example");
    let with = |t: i64| -> Vec<String> { [vec!["--now".into(), at(t)], args.clone()].concat() };
    let run = |t: i64, code: i32| {
        let a = with(t);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        m.pass(&a, code)
    };

    let p = run(T0 + 10, 0);
    assert_eq!(p["complete"], true, "{p}");
    let tdir = m.root.join(DIR);
    assert_eq!(names(&tdir), ["_hierarchy", "master", "t1.example"], "the origin has no _hierarchy");
    let own = read_trace(&m.root, "t1.example");
    assert_eq!(own.date, T0 + 10);
    assert_eq!(own.upstream(), Some("127.0.0.1"));
    assert_eq!(own.get("trigger"), Some("cron"));
    assert!(own.archive_serial().is_some_and(|s| s.starts_with(&at(T0))), "{own:?}");
    assert_eq!(read_trace(&m.root, "master").date, T0 + 5, "the origin's master is kept as fetched");
    let h = fs::read_to_string(tdir.join("_hierarchy")).unwrap();
    let line: Vec<&str> = h.lines().last().unwrap().split(' ').collect();
    assert_eq!((line[0], line[1], line[3]), ("t1.example", "t1.example", "127.0.0.1"), "{h}");
    // The timestamp file holds the origin time (the master trace's), not the pass's.
    let ts = fs::read_to_string(m.root.join("indices/timestamp.txt")).unwrap();
    assert!(ts.starts_with(&format!("{} ", T0 + 5)), "{ts}");
    // rrr's own: not in the recentfiles the mirror republishes, nor
    // unknown files to `rrr verify` run by hand (recorded in .rrr/own-paths).
    assert!(!fs::read_to_string(m.root.join("RECENT-1h.yaml")).unwrap().contains("project/trace"));
    let v = crate::util::Rrr::new().args(["verify", "--localroot", crate::util::s(&m.root)]).output();
    assert_eq!(v.status.code(), Some(0), "{}{}", crate::util::stdout(&v), crate::util::stderr(&v));

    // A partial pass (a delete held back by --max-delete) writes nothing.
    master(&origin, T0 + 50);
    change_with(&origin, &[], &["a.txt", "b.txt"], &["--now", &at(T0 + 55)]);
    let before: Vec<Vec<u8>> =
        ["t1.example", "_hierarchy", "master"].iter().map(|n| fs::read(tdir.join(n)).unwrap()).collect();
    let ts_before = fs::read(m.root.join("indices/timestamp.txt")).unwrap();
    let mut a = with(T0 + 60);
    a.extend(["--max-delete".into(), "1".into()]);
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let p = m.pass(&a, 1);
    assert_eq!((p["complete"].clone(), p["deletes_pending"].clone()), (false.into(), 1.into()), "{p}");
    let after: Vec<Vec<u8>> =
        ["t1.example", "_hierarchy", "master"].iter().map(|n| fs::read(tdir.join(n)).unwrap()).collect();
    assert_eq!(after, before, "a partial pass leaves the traces as they were");
    assert_eq!(fs::read(m.root.join("indices/timestamp.txt")).unwrap(), ts_before);

    // A failed pass (the upstream refuses) writes nothing either.
    let bad = Mirror { root: m.root.clone(), remote: format!("{}/RECENT.recent", origin.daemon.url("nosuchmodule")) };
    let a = with(T0 + 70);
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    bad.rmirror().args(&a).assert_exit(2);
    assert_eq!(fs::read(tdir.join("t1.example")).unwrap(), before[0]);

    // The next complete pass writes them, with the master fetched before it.
    let p = run(T0 + 80, 0);
    assert_eq!(p["complete"], true, "{p}");
    assert_eq!(read_trace(&m.root, "t1.example").date, T0 + 80);
    assert_eq!(read_trace(&m.root, "master").date, T0 + 50);
    let ts = fs::read_to_string(m.root.join("indices/timestamp.txt")).unwrap();
    assert!(ts.starts_with(&format!("{} ", T0 + 50)), "{ts}");
}

#[test]
fn a_tier_keeps_its_upstreams_traces_through_whole_tree_passes() {
    let origin = Origin::new([("a.txt", "a\n")], &["--now", &at(T0), "init"]);
    master(&origin, T0 + 5);
    let t1 = origin.mirror_at(origin.dir().join("tier1"));
    fs::create_dir_all(&t1.root).unwrap();
    let d1 = RsyncDaemon::start(&[("tier", &t1.root)]);
    let t2 = Mirror { root: origin.dir().join("tier2"), remote: format!("{}/RECENT.recent", d1.url("tier")) };
    let pass = |m: &Mirror, host: &str, t: i64, extra: &[&str]| {
        let mut a: Vec<String> = vec!["--now".into(), at(t), "--trace".into(), DIR.into()];
        a.extend(["--trace-host".into(), host.into()]);
        a.extend(extra.iter().map(|x| x.to_string()));
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        m.pass(&a, 0)
    };
    pass(&t1, "t1.example", T0 + 10, &[]);
    pass(&t2, "t2.example", T0 + 20, &[]);
    let tdir = t2.root.join(DIR);
    assert_eq!(names(&tdir), ["_hierarchy", "_hierarchy.mirror", "master", "t1.example", "t2.example"]);
    assert_eq!(read_trace(&t2.root, "t1.example").date, T0 + 10, "tier 1's trace, kept");
    assert_eq!(read_trace(&t2.root, "master").date, T0 + 5);
    let h = fs::read_to_string(tdir.join("_hierarchy")).unwrap();
    let first: Vec<&str> = h.lines().map(|l| l.split(' ').next().unwrap()).collect();
    assert_eq!(first, ["t1.example", "t2.example"], "{h}");

    // Whole-tree passes (rsync --delete) leave the trace directory alone:
    // nothing in it is deleted or fetched as data (the traces come
    // through their own fetch), so a tier's own trace never vanishes.
    for (m, host, t) in [(&t1, "t1.example", T0 + 30), (&t2, "t2.example", T0 + 40)] {
        let p = pass(m, host, t, &["--full"]);
        assert_eq!((p["deleted"].as_u64(), p["transferred"].as_u64()), (Some(0), Some(0)), "{host}: {p}");
    }
    assert_eq!(names(&tdir), ["_hierarchy", "_hierarchy.mirror", "master", "t1.example", "t2.example"]);
    assert_eq!(names(&t1.root.join(DIR)), ["_hierarchy", "master", "t1.example"]);
    assert_eq!(read_trace(&t2.root, "t2.example").date, T0 + 40);
    assert_eq!(read_trace(&t2.root, "t1.example").date, T0 + 30);
    let h2 = fs::read_to_string(tdir.join("_hierarchy")).unwrap();
    assert_eq!(h2.lines().count(), 2, "{h2}");
}

/// The origin: `rrr beacon --trace --timestamp` writes the master trace
/// and the timestamp file at its (pinned) time; `rrr watch` rewrites them
/// at its heartbeats, and writing them is never an event (real inotify).
#[test]
fn the_origin_writes_its_master_trace_and_never_records_it() {
    use crate::watch::{news, tree, wait_kind, Daemon};
    let (_tmp, root) = tree(&["a.txt"]);
    let p = principal(&root);
    let files = ["--trace", DIR, "--timestamp", "indices/timestamp.txt"];
    let mut beacon = vec!["--now", "1796274942", "beacon", &p];
    beacon.extend(files);
    ok(&beacon);
    let m = read_trace(&root, "master");
    assert_eq!(m.date, T0);
    assert!(m.upstream().is_none() && m.archive_serial().is_some(), "{m:?}");
    let ts = fs::read_to_string(root.join("indices/timestamp.txt")).unwrap();
    assert!(ts.starts_with(&format!("{T0} ")), "{ts}");

    // The daemon writes them at its first heartbeat (the real clock now),
    // and again at the heartbeat that follows a change (interval 1 s).
    let mut args = vec!["--beacon-interval", "1"];
    args.extend(files);
    let d = Daemon::start(&root, &args);
    let date = || trace::parse(&fs::read(root.join(DIR).join("master")).unwrap_or_default()).map(|t| t.date).ok();
    wait_for("the daemon's master trace", WAIT, || date().is_some_and(|t| t > T0 + 3600));
    let first = date().unwrap();
    write(&root, "b.txt", "b");
    wait_kind(&root, "b.txt", "new");
    wait_for("a master trace of a later heartbeat", WAIT, || date().is_some_and(|t| t > first));
    let ts = fs::read_to_string(root.join("indices/timestamp.txt")).unwrap();
    assert!(!ts.starts_with(&format!("{T0} ")), "rewritten: {ts}");
    assert_eq!(d.stop().0, 0);
    // Only the data: no event for the trace files, in the index or the log.
    let mut paths: Vec<String> = news(&root).into_keys().collect();
    paths.sort();
    assert_eq!(paths, ["a.txt", "b.txt"]);
    // fsck, told nothing, knows them as rrr's own (.rrr/own-paths): clean,
    // and its --repair indexes nothing.
    ok(&["fsck", "--repair", &p]);
    let f = crate::util::Rrr::new().args(["fsck", &p]).output();
    assert_eq!(f.status.code(), Some(0), "{}{}", crate::util::stdout(&f), crate::util::stderr(&f));
    assert_eq!(news(&root).len(), 2);
}

/// `rrr probe` reads what an rrr mirror wrote: the master trace it holds
/// (the origin time) and its own trace (its upstream and serial).
#[test]
fn probe_reads_the_traces_a_mirror_wrote() {
    let origin = Origin::new([("a.txt", "a\n")], &["--now", &at(T0), "init"]);
    master(&origin, T0 + 5);
    let t1 = origin.mirror_at(origin.dir().join("tier1"));
    t1.pass(&["--now", &at(T0 + 10), "--trace", DIR, "--trace-host", "t1.example"], 0);
    let d = RsyncDaemon::start(&[("tier", &t1.root)]);
    let o = crate::util::Rrr::new().args(["--now", &at(T0 + 60), "probe", "--json", &d.url("tier")]).output();
    let r: serde_json::Value = serde_json::from_str(crate::util::stdout(&o).trim()).unwrap();
    assert_eq!(o.status.code(), Some(0), "{r}");
    assert_eq!((r["status"].as_str(), r["origin_time"].as_i64()), (Some("fresh"), Some(T0 + 5)), "{r}");
    assert_eq!((r["trace"].as_str(), r["upstream"].as_str()), (Some("t1.example"), Some("127.0.0.1")), "{r}");
    assert_eq!(r["trace_time"].as_i64(), Some(T0 + 10), "{r}");
    assert!(r["archive_serial"].as_str().is_some_and(|s| s.starts_with(&at(T0))), "{r}");
}

/// A loop's passes say `Trigger: loop`; one woken by `rrr trigger` (a
/// push) says `Trigger: push`.
#[test]
fn a_pushed_pass_says_so_in_its_trace() {
    use crate::util::{s, Rrr};
    let origin = Origin::new([("a.txt", "a\n")], &["init"]);
    let m = origin.mirror();
    let running = m
        .rmirror()
        .args(["--loop", "--interval", "600", "--trace", DIR, "--trace-host", "t1.example"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    let trigger = || {
        let t = trace::parse(&fs::read(m.root.join(DIR).join("t1.example")).unwrap_or_default()).ok()?;
        t.get("trigger").map(String::from)
    };
    wait_for("the first pass's trace", WAIT, || trigger().is_some());
    assert_eq!(trigger().as_deref(), Some("loop"));
    Rrr::new().args(["trigger", "--localroot", s(&m.root)]).assert_ok();
    wait_for("the pushed pass's trace", WAIT, || trigger().as_deref() == Some("push"));
    running.signal(libc::SIGTERM);
    let _ = running.wait_with_output();
}
