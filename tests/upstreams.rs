//! A tree with several upstreams (`--remote` repeated): each pass reads
//! the freshest that answers, never one behind what the mirror installed,
//! never one of another collection (docs/decisions.md#several-upstreams).
//! Real daemons on loopback: a fresh one serving the origin, a stale one
//! serving a copy of it frozen earlier, one of another collection; the
//! fresh one turned into a black hole (its daemon stopped: the kernel
//! still accepts, nothing answers).

use crate::util::fixture::{Mirror, Origin};
use crate::util::rsyncd::RsyncDaemon;
use crate::util::{s, stderr};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// `from` copied to `to` as it is now (symlinks, times): a stale upstream.
fn freeze(from: &Path, to: &Path) {
    let ok = Command::new("rsync").args(["-a", "--delete"]).arg(format!("{}/", s(from))).arg(to).status().unwrap();
    assert!(ok.success());
}

/// An origin of `n` files and a copy of it frozen now (`copy`), served by
/// a daemon of its own: its root, daemon and principal URL.
fn origin_and_copy(n: usize) -> (Origin, std::path::PathBuf, RsyncDaemon, String) {
    let origin = Origin::numbered(n, |i| format!("d/f{i}.txt"));
    let copy_root = origin.dir().join("copy");
    freeze(&origin, &copy_root);
    let copy = RsyncDaemon::start(&[("origin", &copy_root)]);
    let copy_src = format!("{}/RECENT.recent", copy.url("origin"));
    (origin, copy_root, copy, copy_src)
}

/// The state's record of `remote` among its upstreams.
fn record<'a>(st: &'a Value, remote: &str) -> &'a Value {
    st["upstreams"].as_array().unwrap().iter().find(|u| u["remote"] == remote).unwrap_or_else(|| panic!("{st}"))
}

/// Stop (`true`) or continue a daemon: stopped, it is a black hole.
fn stop(d: &RsyncDaemon, stopped: bool) {
    let sig = if stopped { "-STOP" } else { "-CONT" };
    assert!(Command::new("kill").args([sig, &d.pid().to_string()]).status().unwrap().success());
}

#[test]
fn the_freshest_upstream_is_read_never_an_older_or_foreign_one() {
    let fresh = Origin::numbered(3, |i| format!("id/f{i}.txt"));
    let stale_root = fresh.dir().join("stale");
    freeze(&fresh, &stale_root);
    let stale = RsyncDaemon::start(&[("origin", &stale_root)]);
    let stale_src = format!("{}/RECENT.recent", stale.url("origin"));
    // Another collection: the same file names, its own dirtymark.
    let foreign = Origin::new([("id/other.txt", "x\n")], &["--now", "1600000000", "init", "--aggregate"]);
    // Given first, so that only the rule keeps it out.
    let m = Mirror { root: fresh.dir().join("target"), remote: foreign.src() };
    let more = ["--remote", &stale_src, "--remote", &fresh.src(), "--timeout", "2"];

    // A new mirror takes the collection most upstreams have; the stale
    // copy is as new as the origin yet, and given first of the two.
    let (p, out) = m.pass_output(&more, 0);
    assert_eq!(p["upstream"], stale_src.as_str(), "{p}");
    assert!(m.root.join("id/f2.txt").is_file() && !m.root.join("id/other.txt").exists());
    let st = m.state();
    assert_eq!(st["remote"], foreign.src().as_str(), "the tree is named by its first upstream: {st}");
    assert_eq!(record(&st, &foreign.src())["result"], "foreign", "{st}");
    assert!(record(&st, &foreign.src())["message"].as_str().unwrap().contains("another collection"), "{st}");
    assert!(stderr(&out).contains(&format!("upstream {}: foreign", foreign.src())), "{}", stderr(&out));

    // The origin moves on; the copy does not: the fresh one is read.
    fresh.change(&["id/new.txt"], &[]);
    let p = m.pass(&more, 0);
    assert_eq!(p["upstream"], fresh.src().as_str(), "{p}");
    assert_eq!(p["transferred"], 1, "{p}");
    assert!(m.root.join("id/new.txt").is_file());
    let st = m.state();
    assert_eq!(
        (st["upstream"].as_str(), &record(&st, &stale_src)["result"]),
        (Some(fresh.src().as_str()), &"stale".into())
    );

    // The fresh one goes silent. The copy is older than what the mirror
    // installed: refused, the pass fails, nothing is deleted.
    stop(&fresh.daemon, true);
    let (e, _) = m.pass_output(&more, 2);
    stop(&fresh.daemon, false);
    let msg = e["message"].as_str().unwrap();
    assert!(msg.contains("no upstream can be used") && msg.contains(&stale_src) && msg.contains("behind"), "{msg}");
    assert!(m.root.join("id/new.txt").is_file(), "never backwards: nothing deleted");
    let mon = m.monitoring(&[]);
    assert_eq!(record(&mon.status, &stale_src)["result"], "behind", "{}", mon.status);
    assert_eq!(record(&mon.status, &fresh.src())["result"], "unreachable", "{}", mon.status);
    assert!(mon.plain.contains(&format!("  {stale_src}  behind")), "{}", mon.plain);
    let used = format!("upstream=\"{}\",result=\"unreachable\",used=\"1\"", fresh.src());
    assert!(mon.prometheus.contains(&used), "{}", mon.prometheus);

    // A state written before rrr kept the newest epoch per dirtymark (a
    // mirror given a second upstream later): its copies tell instead.
    let file = m.root.join(".rrr/state.json");
    let mut raw: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    raw.as_object_mut().unwrap().remove("newest_by_dirtymark");
    std::fs::write(&file, raw.to_string()).unwrap();
    stop(&fresh.daemon, true);
    let (e, _) = m.pass_output(&more, 2);
    stop(&fresh.daemon, false);
    assert!(e["message"].as_str().unwrap().contains(&format!("{stale_src} behind")), "{e}");

    // The copy catches up while the fresh one stays silent (and backs
    // off: not asked again yet): the copy is read, nothing is fetched or
    // deleted again.
    stop(&fresh.daemon, true);
    freeze(&fresh, &stale_root);
    let p = m.pass(&more, 0);
    stop(&fresh.daemon, false);
    assert_eq!(p["upstream"], stale_src.as_str(), "{p}");
    assert_eq!((p["transferred"].as_u64(), p["deleted"].as_u64()), (Some(0), Some(0)), "{p}");
    let st = m.state();
    assert_eq!(record(&st, &fresh.src())["result"], "unreachable", "{st}");
    assert!(record(&st, &fresh.src())["next_try"].is_string(), "backing off: {st}");
    crate::util::mirror::assert_same_tree(&fresh, &m.root);
}

/// A config's tree with two upstreams, the first a black hole: the loop's
/// first pass reads the other one once the hole's call timed out; the
/// hole then backs off (not asked by the pass a trigger wakes), and push
/// works as with one upstream.
#[test]
fn a_loop_backs_off_from_a_black_hole_upstream_and_a_trigger_still_wakes_it() {
    use crate::util::fixture::passes_counted;
    use crate::util::net::BlackHole;
    use crate::util::{wait_for, Rrr};
    use std::time::Duration;
    let origin = Origin::numbered(3, |i| format!("d/f{i}.txt"));
    let hole = BlackHole::start();
    let target = origin.dir().join("target");
    let file = origin.dir().join("m.toml");
    let text = format!(
        "interval = 300\ntimeout = 2\n[[tree]]\nremote = [\"{}\", \"{}\"]\nlocalroot = \"{}\"\n",
        hole.src(),
        origin.src(),
        s(&target)
    );
    std::fs::write(&file, text).unwrap();
    let child = Rrr::new()
        .args(["rmirror", "--loop", "--config", s(&file)])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let limit = Duration::from_secs(60);
    wait_for("the first pass", limit, || passes_counted(&target) >= 1);
    assert!(target.join("d/f2.txt").is_file());
    let st = crate::util::fixture::state(&target);
    assert_eq!(st["upstream"], origin.src().as_str(), "{st}");
    assert_eq!(record(&st, &hole.src())["result"], "unreachable", "{st}");
    let asked = hole.connections();
    assert!(asked >= 1);

    origin.change(&["d/pushed.txt"], &[]);
    let o = crate::util::rrr(&["trigger", "--localroot", s(&target)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    wait_for("the triggered pass", limit, || passes_counted(&target) >= 2);
    assert!(target.join("d/pushed.txt").is_file(), "the triggered pass took the new file");
    assert_eq!(hole.connections(), asked, "backing off: the hole was not asked again");
    child.signal(libc::SIGTERM);
    let out = child.wait_with_output();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(stderr(&out).contains(&format!("upstream {}: unreachable", hole.src())), "{}", stderr(&out));
}

/// A localroot inside the tree of any of its local upstreams is refused
/// before anything runs, the second one as the first.
#[test]
fn a_localroot_inside_a_second_local_upstream_is_refused() {
    let a = Origin::numbered(1, |i| format!("f{i}.txt"));
    let b = Origin::numbered(1, |i| format!("f{i}.txt"));
    let inside = b.join("sub");
    let o = crate::util::Rrr::new()
        .args(["rmirror", "--remote", &crate::util::principal(&a), "--remote", &crate::util::principal(&b)])
        .args(["--localroot", s(&inside)])
        .output();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("overlaps its own remote's tree"), "{}", stderr(&o));
    assert!(!inside.exists(), "nothing was created");
}

/// The origin's dirtymark changes (a dirty insert in the past): while one
/// upstream still has the old one, the new one is foreign and the mirror
/// keeps what it has; once every upstream shows the new one, it is the
/// protocol's "dirtymark changed": forget, resync, the insert arrives.
#[test]
fn a_new_dirtymark_is_taken_only_once_every_upstream_has_it() {
    let (origin, copy_root, _copy, copy_src) = origin_and_copy(3);
    let m = origin.mirror();
    let more = ["--remote", copy_src.as_str()];
    m.pass(&more, 0);

    crate::util::write(&origin, "old/inserted.txt", "late\n");
    crate::util::ok(&["update", "--epoch", "1600000000.5", &crate::util::principal(&origin), "old/inserted.txt"]);
    let p = m.pass(&more, 0);
    assert_eq!((p["upstream"].as_str(), &p["dirtymark_changed"]), (Some(copy_src.as_str()), &false.into()), "{p}");
    assert!(!m.root.join("old/inserted.txt").exists());
    assert_eq!(record(&m.state(), &origin.src())["result"], "foreign");

    freeze(&origin, &copy_root);
    let p = m.pass(&more, 0);
    assert_eq!((p["upstream"].as_str(), &p["dirtymark_changed"]), (Some(origin.src().as_str()), &true.into()), "{p}");
    assert!(m.root.join("old/inserted.txt").is_file());
    crate::util::mirror::assert_same_tree(&origin, &m.root);
}

/// Two origins with the same filenameroot and dirtymark (both indexed at
/// one pinned time), told apart only by the origin their beacons name:
/// the one the mirror does not follow is foreign, even when it is the
/// freshest, and the error names both origins.
#[test]
fn an_upstream_whose_beacon_names_another_origin_is_foreign() {
    use crate::util::{ok, principal};
    let init = ["--now", "1600000000", "init", "--aggregate"];
    let a = Origin::new([("id/a.txt", "a\n")], &init);
    let b = Origin::new([("id/a.txt", "a\n")], &init);
    ok(&["--now", "1600000100", "beacon", "--origin-name", "a.example", &principal(&a)]);
    ok(&["--now", "1600000100", "beacon", "--origin-name", "b.example", &principal(&b)]);
    let m = a.mirror();
    let more = ["--remote", &b.src()];
    let p = m.pass(&more, 0);
    assert_eq!(p["upstream"], a.src().as_str(), "a tie: the first given: {p}");
    let st = m.state();
    assert_eq!(record(&st, &b.src())["result"], "foreign", "{st}");

    // b moves on: the freshest now, and still another origin's.
    b.change(&["id/b-only.txt"], &[]);
    let (p, out) = m.pass_output(&more, 0);
    assert_eq!(p["upstream"], a.src().as_str(), "{p}");
    assert!(!m.root.join("id/b-only.txt").exists(), "nothing of b's was taken");
    let st = m.state();
    let why = record(&st, &b.src())["message"].as_str().unwrap().to_string();
    assert_eq!(record(&st, &b.src())["result"], "foreign", "{st}");
    assert!(why.contains("\"b.example\"") && why.contains("\"a.example\""), "{why}");
    assert!(!stderr(&out).contains("b-only"), "{}", stderr(&out));

    crate::util::mirror::assert_same_tree(&a, &m.root);
}

/// An idle origin: two upstreams serve the same index; the one whose
/// beacon is newer (it keeps fetching the origin's) is read, though given
/// second. A copy whose beacon names a newer epoch than its own principal
/// (a beacon copied from a fresher place: a lying upstream) is ranked by
/// its index alone.
#[test]
fn the_upstream_with_the_newer_beacon_is_read_and_a_lying_beacon_is_ignored() {
    use crate::util::{ok, principal};
    let origin = Origin::new([("id/a.txt", "a\n")], &["--now", "1600000000", "init", "--aggregate"]);
    ok(&["--now", "1600001000", "beacon", "--origin-name", "o.example", &principal(&origin)]);
    let stale_root = origin.dir().join("stale");
    freeze(&origin, &stale_root);
    let liar_root = origin.dir().join("liar");
    freeze(&origin, &liar_root);
    let stale = RsyncDaemon::start(&[("origin", &stale_root), ("liar", &liar_root)]);
    let stale_src = format!("{}/RECENT.recent", stale.url("origin"));
    let liar_src = format!("{}/RECENT.recent", stale.url("liar"));
    // The origin, idle, refreshes its beacon; the stale copy does not.
    ok(&["--now", "1600002000", "beacon", &principal(&origin)]);

    let m = origin.mirror_at(origin.dir().join("m1"));
    let m = Mirror { remote: stale_src.clone(), ..m };
    let p = m.pass(&["--remote", &origin.src()], 0);
    assert_eq!(p["upstream"], origin.src().as_str(), "the newer beacon: {p}");
    assert_eq!(record(&m.state(), &stale_src)["result"], "stale", "{}", m.state());

    // The origin moves on; its new beacon is copied beside the liar's old index.
    origin.change(&["id/new.txt"], &[]);
    let beacon = "RECENT-1h.yaml.beacon.json";
    std::fs::copy(origin.join(beacon), liar_root.join(beacon)).unwrap();
    let m2 = Mirror { root: origin.dir().join("m2"), remote: liar_src.clone() };
    let p = m2.pass(&["--remote", &stale_src], 0);
    assert_eq!(p["upstream"], stale_src.as_str(), "the liar's beacon does not count: {p}");
    let st = m2.state();
    let liar = record(&st, &liar_src);
    assert_eq!(liar["result"], "stale", "{st}");
    assert!(liar["message"].as_str().unwrap().contains("newer than its principal"), "{st}");
}

/// With `--trust-key`, an upstream claims the freshest index but its
/// beacon is signed by a key the mirror does not trust (the probe does not
/// verify: it is chosen). The pass falls back to the next usable upstream
/// instead of failing; the bad one backs off and is named with why.
#[test]
fn a_chosen_upstream_that_fails_verification_falls_back_to_the_next() {
    use crate::util::fixture::change_with;
    let keys = tempfile::tempdir().unwrap();
    let (key, allowed) = crate::trust::keypair(keys.path(), "origin");
    let (other, _) = crate::trust::keypair(keys.path(), "other");
    let init = ["init", "--aggregate", "--sign-key", s(&key), "--origin-name", "org"];
    let origin = Origin::new([("d/a.txt", "a\n")], &init);
    let bad_root = origin.dir().join("bad");
    freeze(&origin, &bad_root);
    change_with(&bad_root, &["d/evil.txt"], &[], &["--sign-key", s(&other)]);
    let bad = RsyncDaemon::start(&[("origin", &bad_root)]);
    let bad_src = format!("{}/RECENT.recent", bad.url("origin"));
    let m = Mirror { root: origin.dir().join("target"), remote: bad_src.clone() };
    let more = ["--remote", &origin.src(), "--trust-key", s(&allowed)];

    let (p, out) = m.pass_output(&more, 0);
    assert_eq!(p["upstream"], origin.src().as_str(), "{p}");
    assert!(!m.root.join("d/evil.txt").exists(), "nothing of the bad one's");
    crate::util::mirror::assert_same_tree(&origin, &m.root);
    let err = stderr(&out);
    assert!(err.contains(&format!("upstream {bad_src}: chosen, then failed")), "{err}");
    let st = m.state();
    let rec = record(&st, &bad_src);
    assert_eq!(rec["result"], "unreachable", "{st}");
    assert!(rec["message"].as_str().unwrap().contains("not a trusted key"), "{st}");
    assert!(rec["next_try"].is_string(), "it backs off: {st}");
    assert!(st["trust_error"].is_null(), "the pass verified what it read: {st}");

    // Backing off, it is not asked by the next pass; the origin is read.
    change_with(&origin, &["d/b.txt"], &[], &["--sign-key", s(&key)]);
    let p = m.pass(&more, 0);
    assert_eq!((p["upstream"].as_str(), p["transferred"].as_u64()), (Some(origin.src().as_str()), Some(1)), "{p}");
}

/// With several upstreams, an origin that starts publishing a beacon is
/// found by the next incremental pass (the probe saw it), not only by the
/// next whole-tree pass.
#[test]
fn a_new_beacon_is_held_after_the_next_pass_with_several_upstreams() {
    use crate::util::{ok, principal};
    let (origin, _, _copy, copy_src) = origin_and_copy(2);
    let m = origin.mirror();
    let more = ["--remote", copy_src.as_str()];
    m.pass(&more, 0);
    assert!(m.state()["origin_beacon"].is_null());
    ok(&["beacon", "--origin-name", "o.example", &principal(&origin)]);
    let p = m.pass(&more, 0);
    assert_eq!((p["upstream"].as_str(), &p["bootstrap"]), (Some(origin.src().as_str()), &false.into()), "{p}");
    assert_eq!(m.state()["origin_beacon"]["origin"], "o.example", "{}", m.state());
    let beacon = "RECENT-1h.yaml.beacon.json";
    assert_eq!(std::fs::read(m.root.join(beacon)).unwrap(), std::fs::read(origin.join(beacon)).unwrap());
}
