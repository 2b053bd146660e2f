//! A fleet of trees in one config, against a real loopback rsync daemon:
//! each tree runs on its own thread and holds its run lock for the whole
//! loop (a one-shot or a second loop on it exits 75 naming the holder),
//! a hung upstream delays only its own tree, overlapping trees and a
//! mirror into its own origin are refused before anything runs, and the
//! options' layers (command line > tree table > file defaults > built-in)
//! hold end to end.

use crate::util::fixture::{passes_counted, state};
use crate::util::net::BlackHole;
use crate::util::rsyncd::RsyncDaemon;
use crate::util::*;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// A guard against a hang, not a speed assertion.
const LIMIT: Duration = Duration::from_secs(60);

fn origin(root: &Path, n: usize) {
    for i in 0..n {
        write(root, &format!("id/A/f{i}.tar.gz"), &format!("{i}\n"));
    }
    ok(&["init", "--aggregate", s(root)]);
}

/// A config of `(remote, localroot, table lines)` trees under `top`.
fn config(file: &Path, top: &str, trees: &[(&str, &Path, &str)]) {
    let mut text = format!("{top}\n");
    for (remote, root, extra) in trees {
        text.push_str(&format!("[[tree]]\nremote = \"{remote}\"\nlocalroot = \"{}\"\n{extra}\n", root.display()));
    }
    fs::write(file, text).unwrap();
}

/// `rrr ARGS` in the background, its log in `log`.
fn spawn(args: &[&str], log: &Path) -> Running {
    Rrr::new().args(args).stdout(Stdio::null()).stderr(fs::File::create(log).unwrap()).spawn()
}

fn sigterm(child: &mut Child) -> ExitStatus {
    let _ = kill(child.id() as i32, libc::SIGTERM);
    let mut status = None;
    wait_for("the run to stop after SIGTERM", LIMIT, || {
        status = child.try_wait().unwrap();
        status.is_some()
    });
    status.unwrap()
}

fn abs(p: &Path) -> String {
    std::path::absolute(p).unwrap().display().to_string()
}

/// Every file under `root`, relative, sorted.
fn listing(root: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = walkdir::WalkDir::new(root)
        .into_iter()
        .flatten()
        .map(|e| e.path().strip_prefix(root).unwrap().into())
        .collect();
    v.sort();
    v
}

/// Three origins `o/a`, `o/b`, `o/c` served as module `M`, and where
/// their mirrors go (`m/a`, `m/b`, `m/c`, not created).
struct Abc {
    tmp: tempfile::TempDir,
    o: PathBuf,
    daemon: RsyncDaemon,
    a: PathBuf,
    b: PathBuf,
    c: PathBuf,
}

impl Abc {
    fn new() -> Abc {
        let tmp = tempfile::tempdir().unwrap();
        let o = tmp.path().join("o");
        for t in ["a", "b", "c"] {
            origin(&o.join(t), 3);
        }
        let daemon = RsyncDaemon::start(&[("M", &o)]);
        let (a, b, c) = (tmp.path().join("m/a"), tmp.path().join("m/b"), tmp.path().join("m/c"));
        Abc { tmp, o, daemon, a, b, c }
    }
}

#[test]
fn a_config_loop_holds_its_trees_against_one_shots_and_other_loops() {
    let Abc { tmp, o: _, daemon, a, b, c } = Abc::new();
    let src = |t: &str| format!("{}/{t}/RECENT.recent", daemon.url("M"));
    let first = tmp.path().join("first.toml");
    config(&first, "interval = 1", &[(&src("a"), &a, ""), (&src("b"), &b, "")]);
    let log1 = tmp.path().join("first.log");
    let mut loop1 = spawn(&["rmirror", "--loop", "--config", s(&first)], &log1);
    wait_for("both trees' first passes", LIMIT, || passes_counted(&a) >= 1 && passes_counted(&b) >= 1);
    let holder = format!("process {}", loop1.id());

    // Between the loop's passes, a one-shot on one of its trees is refused.
    for _ in 0..3 {
        let o = rrr(&["rmirror", "--remote", &src("a"), "--localroot", s(&a)]);
        assert_eq!(o.status.code(), Some(75), "{}", stderr(&o));
        assert!(stderr(&o).contains(&holder), "names the holder: {}", stderr(&o));
        std::thread::sleep(Duration::from_millis(400));
    }
    // A second loop over the same trees has nothing to take: 75, naming both.
    let o = rrr(&["rmirror", "--loop", "--config", s(&first)]);
    assert_eq!(o.status.code(), Some(75), "{}", stderr(&o));
    assert!(stderr(&o).contains(&abs(&a)) && stderr(&o).contains(&abs(&b)), "{}", stderr(&o));
    assert!(stderr(&o).contains(&holder), "{}", stderr(&o));

    // A second loop over a held tree and a free one takes the free one,
    // and the held one as soon as its holder has gone.
    let second = tmp.path().join("second.toml");
    config(&second, "interval = 1", &[(&src("a"), &a, ""), (&src("c"), &c, "")]);
    let log2 = tmp.path().join("second.log");
    let mut loop2 = spawn(&["rmirror", "--loop", "--config", s(&second)], &log2);
    wait_for("the free tree's passes", LIMIT, || passes_counted(&c) >= 2);
    let a_passes = passes_counted(&a);
    wait_for("the first loop's next pass on its tree", LIMIT, || passes_counted(&a) > a_passes);
    let log = fs::read_to_string(&log2).unwrap();
    assert!(log.contains(&format!("rmirror {}: another rmirror runs on this target", abs(&a))), "{log}");
    assert!(log.contains("waiting for that run to end to take the tree"), "{log}");

    assert_eq!(sigterm(&mut loop1).code(), Some(130));
    let log = fs::read_to_string(&log1).unwrap();
    assert!(!log.contains("held by"), "the first loop kept both trees: {log}");
    let a_passes = passes_counted(&a);
    wait_for("the second loop's passes on the freed tree", LIMIT, || passes_counted(&a) >= a_passes + 2);
    let o = rrr(&["rmirror", "--remote", &src("a"), "--localroot", s(&a)]);
    assert_eq!(o.status.code(), Some(75), "the second loop holds it now: {}", stderr(&o));
    assert!(stderr(&o).contains(&format!("process {}", loop2.id())), "{}", stderr(&o));
    assert_eq!(sigterm(&mut loop2).code(), Some(130));
    let log = fs::read_to_string(&log2).unwrap();
    assert!(log.contains("the run that held the tree has ended: taking it"), "{log}");
    // The lock went with its holder.
    let o = rrr(&["rmirror", "--remote", &src("a"), "--localroot", s(&a)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn overlapping_trees_and_a_mirror_into_its_origin_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let o = tmp.path().join("o");
    origin(&o, 3);
    let daemon = RsyncDaemon::start(&[("M", &o)]);
    let src = format!("{}/RECENT.recent", daemon.url("M"));
    let m = tmp.path().join("m");
    let refused = |file: &Path, what: &str| {
        let out = rrr(&["rmirror", "--config", s(file)]);
        assert_eq!(out.status.code(), Some(2), "{what}: {}", stderr(&out));
        assert!(stderr(&out).contains("overlap"), "{what}: {}", stderr(&out));
        assert!(!m.exists(), "{what}: nothing may be written");
        assert_eq!(daemon.transfers(), 0, "{what}: refused before the remote is asked");
    };
    let file = tmp.path().join("nested.toml");
    config(&file, "", &[(&src, &m, ""), (&src, &m.join("inner"), "")]);
    refused(&file, "a tree inside another");
    config(&file, "", &[(&src, &m.join("x/../inner"), ""), (&src, &m, "")]);
    refused(&file, "the same, spelt with ..");
    let file = tmp.path().join("state.toml");
    let other = tmp.path().join("other");
    let state = format!("state = \"{}\"", m.join("state.json").display());
    config(&file, "", &[(&src, &m.join("tree"), ""), (&src, &other, &state)]);
    refused(&file, "a tree inside another's state directory");

    // The origin into itself: directly, through `..`, through a symlink.
    let link = tmp.path().join("link");
    std::os::unix::fs::symlink(&o, &link).unwrap();
    let before = listing(&o);
    let principal = o.join("RECENT.recent");
    for root in [o.clone(), o.join("id/../."), link.clone(), o.join("id")] {
        let out = rrr(&["rmirror", "--remote", s(&principal), "--localroot", s(&root)]);
        assert_eq!(out.status.code(), Some(2), "{}: {}", root.display(), stderr(&out));
        assert!(stderr(&out).contains("into itself"), "{}", stderr(&out));
    }
    let out = rrr(&["rmirror", "--remote", s(&link.join("RECENT.recent")), "--localroot", s(&o)]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(listing(&o), before, "the origin is untouched");

    // A one-shot config whose tree fails says so once, with no next pass.
    let file = tmp.path().join("failing.toml");
    config(&file, "", &[(&format!("{}/RECENT.recent", daemon.url("nope")), &m, "")]);
    let out = rrr(&["rmirror", "--config", s(&file)]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(!stderr(&out).contains("next pass"), "a one-shot has no next pass: {}", stderr(&out));
}

/// Two trees in one config: `good` from a real daemon serving `o`, `hung`
/// from a black hole that accepts and never answers.
struct HungFleet {
    _tmp: tempfile::TempDir,
    o: PathBuf,
    _daemon: RsyncDaemon,
    hole: BlackHole,
    good: PathBuf,
    hung: PathBuf,
    file: PathBuf,
    log: PathBuf,
}

impl HungFleet {
    fn new(interval: u64) -> HungFleet {
        let tmp = tempfile::tempdir().unwrap();
        let o = tmp.path().join("o");
        origin(&o, 3);
        let daemon = RsyncDaemon::start(&[("M", &o)]);
        let hole = BlackHole::start();
        let (good, hung) = (tmp.path().join("m/good"), tmp.path().join("m/hung"));
        let file = tmp.path().join("fleet.toml");
        let hole_src = format!("rsync://127.0.0.1:{}/M/RECENT.recent", hole.port);
        config(
            &file,
            &format!("interval = {interval}"),
            // The healthy tree writes traces (a per-tree option of the one
            // model), so a tree's own options are seen working beside a hung one.
            &[
                (&hole_src, &hung, ""),
                (
                    &format!("{}/RECENT.recent", daemon.url("M")),
                    &good,
                    "trace = \"project/trace\"\ntrace_host = \"good.example\"",
                ),
            ],
        );
        let log = tmp.path().join("fleet.log");
        HungFleet { _tmp: tmp, o, _daemon: daemon, hole, good, hung, file, log }
    }
}

#[test]
fn a_hung_upstream_delays_only_its_own_tree() {
    let HungFleet { _tmp, o: _, _daemon, hole, good, hung, file, log } = HungFleet::new(1);
    let mut child = spawn(&["-v", "rmirror", "--loop", "--config", s(&file)], &log);
    wait_for("the hung tree's connection", LIMIT, || hole.accepted.load(Ordering::SeqCst) >= 1);
    let start = passes_counted(&good);
    // While the hung tree's one rsync waits (300 s, the default timeout),
    // the healthy tree makes pass after pass.
    wait_for("three passes of the healthy tree", LIMIT, || passes_counted(&good) >= start + 3);
    assert_eq!(hole.accepted.load(Ordering::SeqCst), 1, "the hung tree's first call still hangs");
    let status = sigterm(&mut child);
    assert_eq!(status.code(), Some(130));
    assert_eq!(hole.accepted.load(Ordering::SeqCst), 1, "stopped, not retried");
    let st = state(&good);
    assert!(st["counters"]["passes"].as_u64().unwrap() >= start + 3, "{st}");
    assert!(st["last_complete"].is_string(), "{st}");
    let trace = fs::read_to_string(good.join("project/trace/good.example")).unwrap();
    assert!(trace.contains("\nTrigger: loop\n"), "{trace}");
    assert!(fs::read_to_string(good.join("project/trace/_hierarchy")).unwrap().contains("good.example"));
    let text = fs::read_to_string(&log).unwrap();
    for root in [&good, &hung] {
        assert!(
            text.lines().any(|l| l.contains(&format!("rmirror {}", abs(root))) && l.contains("interrupted")),
            "{} says it stopped: {text}",
            root.display()
        );
    }
    // The hung tree holds its lock and the record of its attempt, nothing else.
    let names: Vec<String> =
        fs::read_dir(hung.join(".rrr")).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    assert_eq!(
        listing(&hung),
        [
            PathBuf::from(""),
            ".rrr".into(),
            ".rrr/id".into(),
            ".rrr/rmirror.flock".into(),
            ".rrr/state.json".into(),
            ".rrr/trigger".into()
        ],
        "{names:?}"
    );
    let st = state(&hung);
    assert_eq!(
        (st["last_outcome"].as_str(), st["counters"]["attempts"].as_u64()),
        (Some("interrupted"), Some(1)),
        "{st}"
    );
}

/// `rrr trigger --config` beside a hung tree: the healthy tree's loop (its
/// own thread, its own pipe) is woken and passes at once with a 300 s
/// interval; the hung one's loop holds its tree from its first second, so
/// it is woken too (its pass follows the one that hangs).
#[test]
fn trigger_wakes_the_healthy_tree_of_a_config_beside_a_hung_one() {
    let HungFleet { _tmp, o, _daemon, hole, good, hung, file, log } = HungFleet::new(300);
    let mut child = spawn(&["rmirror", "--loop", "--config", s(&file)], &log);
    wait_for("the healthy tree's first pass", LIMIT, || passes_counted(&good) >= 1);
    wait_for("the hung tree's connection", LIMIT, || hole.accepted.load(Ordering::SeqCst) >= 1);
    write(&o, "id/B/pushed.tar.gz", "pushed\n");
    ok(&["update", &format!("{}/RECENT.recent", o.display()), "id/B/pushed.tar.gz"]);
    let out = rrr(&["trigger", "--config", s(&file)]);
    assert_eq!(out.status.code(), Some(0), "one loop woken: {}", stderr(&out));
    assert!(stdout(&out).contains(&format!("woke the loop on {}", good.display())), "{}", stdout(&out));
    assert!(stdout(&out).contains(&format!("woke the loop on {}", hung.display())), "{}", stdout(&out));
    wait_for("the triggered pass", LIMIT, || passes_counted(&good) >= 2);
    assert!(good.join("id/B/pushed.tar.gz").exists());
    let out = rrr(&["trigger", "--config", s(&file), "--tree", s(&hung)]);
    assert_eq!(out.status.code(), Some(0), "the hung tree's loop runs: {}", stderr(&out));
    assert_eq!(sigterm(&mut child).code(), Some(130));
}

#[test]
fn options_come_from_the_command_line_the_table_and_the_defaults() {
    let tmp = tempfile::tempdir().unwrap();
    let o = tmp.path().join("o");
    for ext in ["a", "b", "c"] {
        write(&o, &format!("id/f.{ext}"), ext);
    }
    ok(&["init", s(&o)]);
    let daemon = RsyncDaemon::start(&[("M", &o)]);
    let src = format!("{}/RECENT.recent", daemon.url("M"));
    let dir = tmp.path().join("etc");
    fs::create_dir(&dir).unwrap();
    let file = dir.join("m.toml");
    // Relative localroots: against the config's directory, not the cwd.
    fs::write(
        &file,
        format!(
            "interval = 600\nexclude = [\"*.a\"]\n\
             [[tree]]\nremote = \"{src}\"\nlocalroot = \"t1\"\nexclude = [\"*.b\"]\n\
             [[tree]]\nremote = \"{src}\"\nlocalroot = \"t2\"\n"
        ),
    )
    .unwrap();
    let have = |root: &str| -> Vec<String> {
        ["a", "b", "c"]
            .iter()
            .filter(|e| dir.join(root).join(format!("id/f.{e}")).exists())
            .map(|e| e.to_string())
            .collect()
    };
    let run = |args: &[&str]| {
        let out = Rrr::new().args(args).current_dir(tmp.path()).output();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
    };
    run(&["rmirror", "--config", s(&file)]);
    assert!(!tmp.path().join("t1").exists(), "not against the current directory");
    assert_eq!(have("t1"), ["a", "c"], "the tree's table beats the file's defaults");
    assert_eq!(have("t2"), ["b", "c"], "the file's defaults");
    fs::remove_dir_all(dir.join("t1")).unwrap();
    fs::remove_dir_all(dir.join("t2")).unwrap();
    run(&["rmirror", "--config", s(&file), "--exclude", "*.c"]);
    assert_eq!(
        (have("t1"), have("t2")),
        (vec!["a".into(), "b".into()], vec!["a".into(), "b".into()]),
        "the command line wins"
    );

    // --interval beats the file's 600 s: the loop makes a second pass.
    let log = tmp.path().join("loop.log");
    let mut child = spawn(&["rmirror", "--loop", "--interval", "1", "--config", s(&file)], &log);
    let before = passes_counted(&dir.join("t1"));
    wait_for("a second pass a second later", LIMIT, || passes_counted(&dir.join("t1")) >= before + 2);
    assert_eq!(sigterm(&mut child).code(), Some(130));

    // A number through the layers: the file's limit refuses the principal
    // unread, the command line's lifts it.
    let t4 = tmp.path().join("t4");
    fs::write(
        &file,
        format!("max_recentfile_size = 10\n[[tree]]\nremote = \"{src}\"\nlocalroot = \"{}\"\n", t4.display()),
    )
    .unwrap();
    let out = rrr(&["rmirror", "--config", s(&file)]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("larger than the limit of 10 bytes"), "{}", stderr(&out));
    let tried: Vec<_> = fs::read_dir(&t4).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(tried, [".rrr"], "a refused first pass records its attempt and nothing else");
    run(&["rmirror", "--config", s(&file), "--max-recentfile-size", "100000"]);
    assert!(t4.join("id/f.a").exists());

    // An interval under 1 s is a usage error, from either layer.
    let out = rrr(&["rmirror", "--loop", "--interval", "0", "--remote", &src, "--localroot", s(&dir.join("x"))]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--interval") && stderr(&out).contains("at least 1"), "{}", stderr(&out));
    fs::write(&file, format!("interval = 0.5\n[[tree]]\nremote = \"{src}\"\nlocalroot = \"t3\"\n")).unwrap();
    let out = rrr(&["rmirror", "--loop", "--config", s(&file)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("m.toml") && stderr(&out).contains("at least 1"), "{}", stderr(&out));
    assert!(!dir.join("x").exists() && !dir.join("t3").exists());
}

/// SIGHUP makes a config loop read its file again: a tree no longer in it
/// stops (its lock freed, its state saved), a tree with new options starts
/// again with them, a new one starts; each is logged. A file that does not
/// read changes nothing. A one-shot config run ignores SIGHUP, logged.
#[test]
fn sighup_reloads_a_config_loop() {
    let Abc { tmp, o, daemon, a, b, c } = Abc::new();
    let src = |t: &str| format!("{}/{t}/RECENT.recent", daemon.url("M"));
    let file = tmp.path().join("fleet.toml");
    config(&file, "interval = 300", &[(&src("a"), &a, ""), (&src("b"), &b, "")]);
    let log = tmp.path().join("fleet.log");
    let mut child = spawn(&["rmirror", "--loop", "--config", s(&file)], &log);
    wait_for("both trees' first passes", LIMIT, || passes_counted(&a) >= 1 && passes_counted(&b) >= 1);

    // b removed, a changed (an exclude), c added.
    config(&file, "interval = 300", &[(&src("a"), &a, "exclude = [\"*.x\"]"), (&src("c"), &c, "")]);
    let _ = kill(child.id() as i32, libc::SIGHUP);
    wait_for("the new tree's first pass", LIMIT, || passes_counted(&c) >= 1);
    wait_for("the changed tree's pass with its new options", LIMIT, || passes_counted(&a) >= 2);
    let text = fs::read_to_string(&log).unwrap();
    assert!(text.contains(&format!("SIGHUP: {} is no longer in {}: stopping it", abs(&b), file.display())), "{text}");
    assert!(text.contains(&format!("SIGHUP: {} has new options in", abs(&a))), "{text}");
    assert!(text.contains(&format!("SIGHUP: {} is new in", abs(&c))), "{text}");
    assert!(text.contains("1 new, 1 changed, 1 removed, 0 unchanged"), "{text}");
    assert!(text.contains(&format!("rmirror {}: interrupted", abs(&b))), "the removed tree saved its state: {text}");
    // The removed tree is free, the others are held.
    let one_shot = |t: &str, root: &Path| rrr(&["rmirror", "--remote", &src(t), "--localroot", s(root)]);
    assert_eq!(one_shot("b", &b).status.code(), Some(0));
    assert_eq!(one_shot("a", &a).status.code(), Some(75));
    assert_eq!(one_shot("c", &c).status.code(), Some(75));

    // A broken file changes nothing.
    fs::write(&file, "interval = \"often\"\n").unwrap();
    let _ = kill(child.id() as i32, libc::SIGHUP);
    wait_for("the reload's error", LIMIT, || fs::read_to_string(&log).unwrap().contains("SIGHUP: cannot reload"));
    assert_eq!(one_shot("a", &a).status.code(), Some(75), "still held");
    assert_eq!(sigterm(&mut child).code(), Some(130));

    // A one-shot config run logs that it does not reload.
    config(&file, "", &[(&src("a"), &a, "rsync_options = [\"--bwlimit=1\"]")]);
    fs::write(o.join("a/big"), vec![b'x'; 4000]).unwrap();
    ok(&["update", s(&o.join("a/RECENT.recent")), "big"]);
    let mut once = spawn(&["-v", "rmirror", "--config", s(&file)], &log);
    wait_for("the one-shot's rsync", LIMIT, || fs::read_to_string(&log).unwrap().contains("--bwlimit=1 "));
    let _ = kill(once.id() as i32, libc::SIGHUP);
    let status = once.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{}", fs::read_to_string(&log).unwrap());
    assert!(fs::read_to_string(&log).unwrap().contains("SIGHUP ignored: a one-shot run does not reload"));
}

/// `checksum` through the config's layers, beside a hung tree: the file's
/// top level sets it, one tree's table turns it off again. A copy whose
/// bytes changed at the same size and mtime (no event says so) is
/// repaired by a `--full` loop's first pass where the tree compares
/// contents, and kept where it does not (rsync's quick check), while the
/// hung tree's one call still hangs.
#[test]
fn checksum_comes_from_the_config_beside_a_hung_tree() {
    let tmp = tempfile::tempdir().unwrap();
    let o = tmp.path().join("o");
    origin(&o, 3);
    let daemon = RsyncDaemon::start(&[("M", &o)]);
    let src = format!("{}/RECENT.recent", daemon.url("M"));
    let hole = BlackHole::start();
    let (sum, nosum, hung) = (tmp.path().join("m/sum"), tmp.path().join("m/nosum"), tmp.path().join("m/hung"));
    let f0 = "id/A/f0.tar.gz";
    let mtime = fs::metadata(o.join(f0)).unwrap().modified().unwrap();
    for root in [&sum, &nosum] {
        ok(&["rmirror", "--remote", &src, "--localroot", s(root)]);
        fs::write(root.join(f0), "X\n").unwrap();
        fs::File::options().write(true).open(root.join(f0)).unwrap().set_modified(mtime).unwrap();
    }
    let file = tmp.path().join("fleet.toml");
    config(
        &file,
        "interval = 300\nchecksum = true",
        &[(&hole.src(), &hung, ""), (&src, &sum, ""), (&src, &nosum, "checksum = false")],
    );
    let log = tmp.path().join("fleet.log");
    let mut child = spawn(&["rmirror", "--loop", "--full", "--config", s(&file)], &log);
    wait_for("both healthy trees' --full passes", LIMIT, || passes_counted(&sum) >= 2 && passes_counted(&nosum) >= 2);
    assert_eq!(fs::read_to_string(sum.join(f0)).unwrap(), "0\n", "compared by content: repaired");
    assert_eq!(fs::read_to_string(nosum.join(f0)).unwrap(), "X\n", "the table's `checksum = false`: quick check");
    assert_eq!(hole.connections(), 1, "the hung tree's first call still hangs");
    assert_eq!(sigterm(&mut child).code(), Some(130), "{}", fs::read_to_string(&log).unwrap());
}

/// `--accept-deletes` lets the first run of each tree of a config loop
/// through a mass delete; a tree that a SIGHUP reload starts again (its
/// options changed) does not get that consent a second time: its next
/// mass delete is held. A hung tree beside it hangs on, untouched.
#[test]
fn a_reload_does_not_renew_accept_deletes() {
    let tmp = tempfile::tempdir().unwrap();
    let o = tmp.path().join("o");
    origin(&o, 10);
    let daemon = RsyncDaemon::start(&[("M", &o)]);
    let src = format!("{}/RECENT.recent", daemon.url("M"));
    let a = tmp.path().join("m/a");
    ok(&["rmirror", "--remote", &src, "--localroot", s(&a)]);
    let f = |i: usize| format!("id/A/f{i}.tar.gz");
    // The origin loses 6 of its 10 files without events: a whole-tree
    // pass would delete more than half of the mirror.
    for i in 0..6 {
        fs::remove_file(o.join(f(i))).unwrap();
    }
    let hole = BlackHole::start();
    let hung = tmp.path().join("m/hung");
    let file = tmp.path().join("fleet.toml");
    config(&file, "interval = 300", &[(&hole.src(), &hung, ""), (&src, &a, "")]);
    let log = tmp.path().join("fleet.log");
    let mut child = spawn(&["rmirror", "--loop", "--full", "--accept-deletes", "--config", s(&file)], &log);
    wait_for("the accepted --full pass", LIMIT, || passes_counted(&a) >= 2);
    assert!(!a.join(f(0)).exists() && a.join(f(6)).exists(), "{}", fs::read_to_string(&log).unwrap());
    // Three of the four left go too; the tree gets a new option: reloaded.
    for i in 6..9 {
        fs::remove_file(o.join(f(i))).unwrap();
    }
    config(&file, "interval = 300", &[(&hole.src(), &hung, ""), (&src, &a, "timeout = 200")]);
    let _ = kill(child.id() as i32, libc::SIGHUP);
    wait_for("the restarted tree's --full pass", LIMIT, || state(&a)["last_outcome"] == "held");
    assert!(a.join(f(6)).exists(), "held, nothing deleted: {}", fs::read_to_string(&log).unwrap());
    assert!(fs::read_to_string(&log).unwrap().contains("1 changed, 0 removed, 1 unchanged"));
    assert_eq!(hole.connections(), 1, "the hung tree's first call still hangs");
    assert_eq!(sigterm(&mut child).code(), Some(130));
}

/// One config, two trees (one from a black hole that never answers), an
/// option set at each of the three layers, each tree's values seen in
/// what it does: the file's top level gives both trees `--bwlimit=7001`
/// and `checksum`, the hung tree's table replaces the bwlimit, the good
/// tree's table turns checksum off, and the command line's `--exclude`
/// holds for both. A bad value's error names its layer and its line
/// (the command line's names its flag), and nothing runs.
#[test]
fn each_tree_gets_its_own_layers_and_a_bad_value_names_its_layer_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let o = tmp.path().join("o");
    write(&o, "id/A/kept.tar.gz", "kept\n");
    write(&o, "id/A/left.skip", "left\n");
    ok(&["init", s(&o)]);
    let daemon = RsyncDaemon::start(&[("M", &o)]);
    let src = format!("{}/RECENT.recent", daemon.url("M"));
    let hole = BlackHole::start();
    let (good, hung) = (tmp.path().join("m/good"), tmp.path().join("m/hung"));
    let file = tmp.path().join("fleet.toml");
    config(
        &file,
        "interval = 300\nrsync_options = [\"--bwlimit=7001\"]\nchecksum = true",
        &[(&hole.src(), &hung, "rsync_options = [\"--bwlimit=7002\"]"), (&src, &good, "checksum = false")],
    );
    let log = tmp.path().join("fleet.log");
    let mut child = spawn(&["-v", "rmirror", "--loop", "--exclude", "*.skip", "--config", s(&file)], &log);
    wait_for("the good tree's first pass", LIMIT, || passes_counted(&good) >= 1);
    wait_for("the hung tree's connection", LIMIT, || hole.connections() >= 1);
    assert_eq!(sigterm(&mut child).code(), Some(130));
    let text = fs::read_to_string(&log).unwrap();
    let rsyncs = |root: &Path| -> Vec<String> {
        let tree = format!("rmirror {}", abs(root));
        text.lines().filter(|l| l.contains(&tree) && l.contains("running ")).map(String::from).collect()
    };
    let (good_calls, hung_calls) = (rsyncs(&good), rsyncs(&hung));
    assert!(!good_calls.is_empty() && !hung_calls.is_empty(), "{text}");
    assert!(good_calls.iter().all(|l| l.contains("--bwlimit=7001 ")), "the file's top level: {good_calls:#?}");
    assert!(hung_calls.iter().all(|l| l.contains("--bwlimit=7002 ")), "the tree's table: {hung_calls:#?}");
    let whole_tree: Vec<&String> = good_calls.iter().filter(|l| l.contains(" -rlt ")).collect();
    assert!(!whole_tree.is_empty(), "a bootstrap is a whole-tree rsync: {good_calls:#?}");
    assert!(whole_tree.iter().all(|l| l.contains("--exclude=*.skip") && !l.contains("--checksum")), "{whole_tree:#?}");
    assert!(good.join("id/A/kept.tar.gz").exists());
    assert!(!good.join("id/A/left.skip").exists(), "the command line's --exclude");

    // A bad value: its layer and line, from the file; its flag, from the
    // command line. Nothing runs.
    let refused = |args: &[&str], what: &str| {
        let out = rrr(args);
        assert_eq!(out.status.code(), Some(2), "{what}: {}", stderr(&out));
        stderr(&out)
    };
    let fresh = tmp.path().join("m/fresh");
    let text = format!(
        "interval = 300\n\n[[tree]]\nremote = \"{src}\"\nlocalroot = \"{}\"\n\n[[tree]]\nremote = \"{}\"\nlocalroot = \"{}\"\non_pass_timeout = -1\n",
        fresh.display(),
        hole.src(),
        hung.display()
    );
    fs::write(&file, &text).unwrap();
    let e = refused(&["rmirror", "--config", s(&file)], "a tree's table");
    let want = format!(
        "config {} line 10 ([[tree]] 2, localroot {}): `on_pass_timeout = -1`: -1 is not a number of seconds",
        file.display(),
        hung.display()
    );
    assert!(e.contains(&want), "{e}");
    fs::write(&file, text.replace("interval = 300", "interval = 0.5").replace("on_pass_timeout = -1", "")).unwrap();
    let e = refused(&["rmirror", "--config", s(&file)], "the file's top level");
    assert!(
        e.contains(&format!(
            "config {} line 1 (top-level defaults): `interval = 0.5`: 0.5 s: must be at least 1 s",
            file.display()
        )),
        "{e}"
    );
    let e = refused(&["rmirror", "--max-files-per-connection", "0", "--remote", &src, "--localroot", s(&fresh)], "cli");
    assert!(e.contains("'--max-files-per-connection <N>'") && e.contains("must be at least 1"), "{e}");
    assert!(!fresh.exists(), "nothing ran");
    assert_eq!(hole.connections(), 1, "nothing ran");
}
