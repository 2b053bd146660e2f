//! Perl writers beside rrr writers on one tree (docs/decisions.md#locks): a
//! Perl 0.4.3 writer breaks a lock whose pid is not running by sleeping
//! a second and writing its own pid into the lock directory, which by then
//! may be a live rrr holder's. Whatever it does, every event an rrr
//! process acknowledged with exit 0 must be in the index afterwards.
//!
//! The Perl side is `tests/util/perl_writer.pl` (the reference's lock, its
//! sleep included, and its shared `.new` temp name). The take-over is
//! forced at each point of rrr's write with a failpoint, rather than hoped
//! for; one test also runs both kinds of writer in loops.

use crate::util::*;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A tree with one file, indexed; returns (tempdir, root).
fn origin() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("origin");
    fs::create_dir_all(root.join("d")).unwrap();
    fs::write(root.join("d/f0"), "0").unwrap();
    ok(&["init", s(&root)]);
    (tmp, root)
}

fn perl_writer(rfile: &Path, path: &str, marks: Option<&Path>) -> Command {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/util/perl_writer.pl");
    let mut c = Command::new("perl");
    c.arg(script).arg(rfile).arg(path);
    if let Some(m) = marks {
        c.arg(m);
    }
    c
}

/// An origin whose principal a Perl writer is about to take over: the
/// failpoint and the Perl writer's mark directories are made.
struct Takeover {
    tmp: tempfile::TempDir,
    root: PathBuf,
    rfile: PathBuf,
    lock: PathBuf,
    marks: PathBuf,
    fp: PathBuf,
}

impl Takeover {
    fn new() -> Takeover {
        let (tmp, root) = origin();
        let (marks, fp) = (tmp.path().join("marks"), tmp.path().join("failpoint"));
        fs::create_dir(&marks).unwrap();
        fs::create_dir(&fp).unwrap();
        let (rfile, lock) = (root.join("RECENT-1h.yaml"), root.join("RECENT-1h.yaml.lock"));
        Takeover { tmp, root, rfile, lock, marks, fp }
    }

    /// Leave a stale lock (a dead owner) and start the Perl writer, which
    /// judges it stale and then waits at its `breaking` mark.
    fn perl_breaking_a_stale_lock(&self) -> Child {
        fs::create_dir(&self.lock).unwrap();
        fs::write(self.lock.join("process"), format!("{}\n", dead_pid())).unwrap();
        let perl = perl_writer(&self.rfile, "perl/p", Some(&self.marks)).stderr(Stdio::null()).spawn().unwrap();
        let marks = &self.marks;
        wait_for("the Perl writer to judge the lock stale", Duration::from_secs(20), || {
            marks.join("breaking").exists()
        });
        perl
    }
}

fn dead_pid() -> u32 {
    let mut c = Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    pid
}

fn news_paths(root: &Path) -> Vec<String> {
    let news = ok(&["news", "--local", &principal(root)]);
    news.lines().map(|l| l.split('\t').nth(2).unwrap().to_string()).collect()
}

fn reached(fp: &Path) -> bool {
    fs::read_dir(fp).unwrap().flatten().any(|e| e.file_name().to_string_lossy().starts_with("reached."))
}

/// One forced take-over: a Perl writer judges the lock's holder dead
/// (a stale lock); `rrr update` breaks that lock, takes it and stops at
/// `failpoint`; the Perl writer then sleeps its second, writes its pid
/// into rrr's lock and reads the principal; rrr goes on, and the Perl
/// writer writes last. rrr must exit 0 with both events in the index.
/// With `init`, the rrr writer is `init --force` (and its event is a file
/// that only the new index lists).
fn forced_takeover(failpoint: &str, round: usize, init: bool) {
    let writer = if init { RrrWriter::InitForce } else { RrrWriter::Update };
    forced_takeover_of(writer, failpoint, round);
}

/// Which rrr writer a forced take-over runs against.
#[derive(Clone, Copy, PartialEq, Debug)]
enum RrrWriter {
    /// `rrr update PRINCIPAL FILE`
    Update,
    /// `rrr init --force ROOT`
    InitForce,
    /// `rrr aggregate --force PRINCIPAL`, with rrr's event recorded before.
    Aggregate,
}

/// See [`forced_takeover`]; returns rrr's exit code and stderr.
fn forced_takeover_of(writer: RrrWriter, failpoint: &str, round: usize) -> (Option<i32>, String) {
    let t = Takeover::new();
    let (tmp, root, lock, marks, fp) = (&t.tmp, &t.root, &t.lock, &t.marks, &t.fp);
    let ours = format!("d/rrr{round}");
    fs::write(root.join(&ours), "x").unwrap();
    if writer == RrrWriter::Aggregate {
        ok(&["update", &principal(root), s(&root.join(&ours))]);
    }
    let mut perl = t.perl_breaking_a_stale_lock();
    let log = tmp.path().join("rrr.stderr");
    let args = match writer {
        RrrWriter::InitForce => vec!["init".to_string(), "--force".to_string(), s(root).to_string()],
        RrrWriter::Update => vec!["update".to_string(), principal(root), s(&root.join(&ours)).to_string()],
        RrrWriter::Aggregate => {
            // Recorded before the Perl writer came: the stale lock is
            // planted after.
            vec!["aggregate".to_string(), "--force".to_string(), principal(root)]
        }
    };
    let mut rrr_update = Rrr::new()
        .args(&args)
        .env(format!("RRR_FAILPOINT_{failpoint}"), fp)
        .stderr(fs::File::create(&log).unwrap())
        .spawn();
    wait_for("rrr to hold the lock", Duration::from_secs(20), || reached(fp));
    fs::write(marks.join("wake"), "").unwrap();
    wait_for("the Perl writer to take the lock over and read", Duration::from_secs(20), || marks.join("read").exists());
    fs::write(fp.join("go"), "").unwrap();
    // rrr finishes, or notices the take-over (or, before its claim, waits
    // for the Perl writer without a word).
    poll_until(Duration::from_secs(1), || {
        rrr_update.try_wait().unwrap().is_some() || fs::read_to_string(&log).unwrap().contains("taken over")
    });
    fs::write(marks.join("go"), "").unwrap();
    assert!(perl.wait().unwrap().success(), "the Perl writer failed");
    let status = rrr_update.wait().unwrap();
    let err = fs::read_to_string(&log).unwrap();
    let got = news_paths(root);
    if status.success() {
        assert!(
            got.contains(&ours),
            "{failpoint}, round {round}: rrr acknowledged {ours} but the index lost it: {got:?}\n{err}"
        );
    }
    if writer == RrrWriter::Aggregate {
        assert!(got.contains(&ours), "{failpoint}, round {round}: aggregate lost {ours}: {got:?}\n{err}");
        assert!(got.contains(&"d/f0".to_string()), "{failpoint}: aggregate lost d/f0: {got:?}\n{err}");
    } else {
        assert_eq!(status.code(), Some(0), "{failpoint}: {err}");
    }
    assert!(got.contains(&"perl/p".to_string()), "{failpoint}: the Perl writer's event is kept too: {got:?}");
    assert!(!lock.exists(), "{failpoint}: the lock is released");
    let left: Vec<String> = fs::read_dir(root)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".new"))
        .collect();
    assert!(left.is_empty(), "no temp file is left: {left:?}");
    (status.code(), err)
}

/// The Perl writer's pid lands while rrr claims the lock (between its
/// `process.<pid>` and `process`): rrr must not replace it, and waits.
#[test]
fn perl_takeover_during_rrr_claim() {
    for round in 0..2 {
        forced_takeover("LOCK_CLAIM", round, false);
    }
}

/// The Perl writer's pid lands while rrr holds the lock, before it
/// writes: rrr must not rename over what the Perl writer read.
#[test]
fn perl_takeover_before_rrr_writes() {
    for round in 0..2 {
        forced_takeover("LOCK_HELD", round, false);
    }
}

/// The Perl writer's pid lands after rrr's last check and before its
/// rename, and the Perl writer writes over rrr's file: rrr records its
/// event again before it exits 0.
#[test]
fn perl_takeover_just_before_rrr_renames() {
    for round in 0..2 {
        forced_takeover("WRITE_RENAME", round, false);
    }
}

/// `init --force` holds every lock to put its new principal in place
/// when the Perl writer takes the principal's over: the new index is in
/// place afterwards, with the Perl writer's event carried over.
#[test]
fn perl_takeover_during_init_force() {
    forced_takeover("LOCK_HELD", 0, true);
}

/// Unforced: a loop of Perl writers' processes beside three loops of
/// `rrr update` processes. Every acknowledged event is in the index, and
/// no rrr process fails on a file two writers wrote at once.
#[test]
fn perl_and_rrr_writer_loops() {
    let (_tmp, root) = origin();
    let p = principal(&root);
    let rfile = root.join("RECENT-1h.yaml");
    let names: Vec<Vec<String>> = (0..3).map(|w| (0..40).map(|i| format!("w{w}/f{i}")).collect()).collect();
    for rel in names.iter().flatten() {
        write(&root, rel, rel);
    }
    let stop = std::sync::atomic::AtomicBool::new(false);
    let results: Vec<(String, std::process::Output)> = std::thread::scope(|scope| {
        let perl = scope.spawn(|| {
            let mut i = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let _ = perl_writer(&rfile, &format!("perl/f{i}"), None).stderr(Stdio::null()).status();
                i += 1;
            }
        });
        let loops: Vec<_> = names
            .iter()
            .map(|names| {
                scope.spawn(|| {
                    names
                        .iter()
                        .map(|rel| {
                            let out = Rrr::new().args(["update", &p, s(&root.join(rel))]).env("TERM", "dumb").output();
                            (rel.clone(), out)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let results = loops.into_iter().flat_map(|h| h.join().unwrap()).collect();
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        perl.join().unwrap();
        results
    });
    let got = news_paths(&root);
    let lost: Vec<&String> =
        results.iter().filter(|(rel, out)| out.status.success() && !got.contains(rel)).map(|(rel, _)| rel).collect();
    assert!(lost.is_empty(), "acknowledged by rrr but not in the index: {lost:?}");
    for (rel, out) in &results {
        assert!(out.status.success(), "update {rel}: {}", stderr(out));
    }
}

/// `rrr aggregate` holds the principal's lock (it merges the principal
/// into the larger files, then truncates it) when a Perl writer takes the
/// lock over: no event is lost, and aggregate does not exit 0 on a
/// truncation that the Perl writer may have overwritten: it stops before
/// truncating, with exit 2 and a message naming the take-over.
#[test]
fn perl_takeover_while_aggregate_holds_the_lock() {
    for fp in ["LOCK_HELD", "WRITE_RENAME"] {
        let (code, err) = forced_takeover_of(RrrWriter::Aggregate, fp, 0);
        assert_eq!(code, Some(2), "{fp}: {err}");
        assert!(err.contains("taken over"), "{fp}: {err}");
    }
}

/// The watch daemon holds the principal's lock to record a batch when a
/// Perl writer takes it over: the daemon notices, says so, waits for the
/// Perl writer, and records its batch again; it keeps running, and both
/// the watched file and the Perl writer's event are in the index.
#[test]
fn perl_takeover_while_watch_records_a_batch() {
    let t = Takeover::new();
    let (root, marks, fp) = (&t.root, &t.marks, &t.fp);
    // Open while the daemon starts and cascades the fresh index, shut after.
    fs::write(fp.join("go"), "").unwrap();
    let env = format!("RRR_FAILPOINT_LOCK_HELD={}", fp.display());
    let mut d = crate::watch::Daemon::start_under(&["env", &env], root, &[]);
    d.wait_log("\"kind\":\"aggregate\"");
    for e in fs::read_dir(fp).unwrap().flatten() {
        fs::remove_file(e.path()).unwrap();
    }
    let mut perl = t.perl_breaking_a_stale_lock();
    write(root, "d/watched", "x");
    wait_for("the daemon to hold the lock for its batch", Duration::from_secs(20), || reached(fp));
    fs::write(marks.join("wake"), "").unwrap();
    wait_for("the Perl writer to take the lock over and read", Duration::from_secs(20), || marks.join("read").exists());
    fs::write(fp.join("go"), "").unwrap();
    d.wait_log("taken over");
    fs::write(marks.join("go"), "").unwrap();
    assert!(perl.wait().unwrap().success(), "the Perl writer failed");
    let both = poll_until(crate::watch::WAIT, || {
        let got = news_paths(root);
        got.contains(&"d/watched".to_string()) && got.contains(&"perl/p".to_string())
    });
    assert!(both, "the daemon's batch or the Perl writer's event is missing: {:?}\n{}", news_paths(root), d.log());
    assert!(d.running(), "the daemon keeps running:\n{}", d.log());
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    assert!(log.contains("\"kind\":\"batch\""), "the batch is logged once recorded:\n{log}");
}

/// The double break (issue 31): a writer died holding the principal's
/// lock; two Perl writers judge it stale together and both go ahead, the
/// second one slow (it reads, then waits before its write). The first
/// writes and unlocks; `rrr update` then takes a fresh lock, records,
/// checks and exits 0; and the second Perl writer, still believing it
/// holds the lock, renames its older copy over the principal. rrr cannot
/// stop that rename (it happens after rrr exited), so its event is gone
/// from the principal for a moment; the journal of acknowledged events
/// (`.rrr/acknowledged-RECENT.json`) lets the next rrr writer put it back.
/// Returns the tempdir, the root and rrr's acknowledged path.
fn double_break(watch: Option<&[&str]>) -> (tempfile::TempDir, PathBuf, String, Option<crate::watch::Daemon>) {
    let t = Takeover::new();
    let (root, rfile, lock) = (t.root.clone(), t.rfile.clone(), t.lock.clone());
    let ours = "d/acknowledged".to_string();
    // Before a watch starts: the daemon would record it (and break the
    // planted lock) itself.
    fs::write(root.join(&ours), "x").unwrap();
    let daemon = watch.map(|extra| {
        let d = crate::watch::Daemon::start(&root, extra);
        d.wait_log("\"kind\":\"aggregate\"");
        d
    });
    // The writer that died holding the lock.
    fs::create_dir(&lock).unwrap();
    fs::write(lock.join("process"), format!("{}\n", dead_pid())).unwrap();
    let (ma, mb) = (t.tmp.path().join("marks-a"), t.tmp.path().join("marks-b"));
    fs::create_dir(&ma).unwrap();
    fs::create_dir(&mb).unwrap();
    let mut a = perl_writer(&rfile, "perl/a", Some(&ma)).stderr(Stdio::null()).spawn().unwrap();
    let mut b = perl_writer(&rfile, "perl/b", Some(&mb)).stderr(Stdio::null()).spawn().unwrap();
    wait_for("both Perl writers to judge the lock stale", Duration::from_secs(20), || {
        ma.join("breaking").exists() && mb.join("breaking").exists()
    });
    // A goes ahead and reads; then B (the slow one) writes its pid and reads the same file.
    fs::write(ma.join("wake"), "").unwrap();
    wait_for("Perl writer A to read", Duration::from_secs(20), || ma.join("read").exists());
    fs::write(mb.join("wake"), "").unwrap();
    wait_for("Perl writer B to read", Duration::from_secs(20), || mb.join("read").exists());
    // A writes and unlocks (removing the lock directory B believes it holds).
    fs::write(ma.join("go"), "").unwrap();
    assert!(a.wait().unwrap().success(), "Perl writer A failed");
    assert!(!lock.exists(), "A removed the lock");
    // rrr takes a fresh lock, records and acknowledges.
    Rrr::new().args(["update", &principal(&root), s(&root.join(&ours))]).assert_ok();
    assert!(news_paths(&root).contains(&ours));
    // B renames its older copy over the principal.
    fs::write(mb.join("go"), "").unwrap();
    assert!(b.wait().unwrap().success(), "Perl writer B failed");
    (t.tmp, root, ours, daemon)
}

/// The acknowledged count in `fsck --json`'s summary.
fn rerecorded_total(root: &Path) -> u64 {
    let out = Rrr::new().args(["fsck", "--json", &principal(root)]).output();
    let summary = stdout(&out).lines().last().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()).unwrap();
    summary["rerecorded"].as_u64().unwrap_or_else(|| panic!("no rerecorded count in {summary}"))
}

/// After the double break, the next `rrr update` (of another file) puts
/// the acknowledged event back, with a fresh epoch, and fsck counts it.
#[test]
fn double_break_acknowledged_event_comes_back_with_the_next_update() {
    let (_tmp, root, ours, _) = double_break(None);
    let got = news_paths(&root);
    assert!(got.contains(&"perl/b".to_string()), "{got:?}");
    if got.contains(&ours) {
        panic!("the double break did not hide rrr's event (the scenario no longer happens?): {got:?}");
    }
    write(&root, "d/next", "y");
    let out = Rrr::new().args(["update", &principal(&root), s(&root.join("d/next"))]).assert_ok();
    let got = news_paths(&root);
    assert!(
        got.contains(&ours),
        "the next rrr write did not put the acknowledged event back: {got:?}\n{}",
        stderr(&out)
    );
    assert!(got.contains(&"d/next".to_string()));
    assert!(stderr(&out).contains("re-recorded"), "the re-record is logged: {}", stderr(&out));
    assert_eq!(rerecorded_total(&root), 1);
    // Idempotent: the next write has nothing to put back.
    ok(&["aggregate", &principal(&root)]);
    assert_eq!(rerecorded_total(&root), 1);
}

/// `rrr aggregate` is a later rrr write too.
#[test]
fn double_break_acknowledged_event_comes_back_with_aggregate() {
    let (_tmp, root, ours, _) = double_break(None);
    assert!(!news_paths(&root).contains(&ours));
    ok(&["aggregate", &principal(&root)]);
    assert!(news_paths(&root).contains(&ours), "aggregate did not put the acknowledged event back");
}

/// Under a running watch the event comes back within seconds, without
/// another write, and the daemon logs and counts it.
#[test]
fn double_break_acknowledged_event_comes_back_under_a_watch() {
    let prom = tempfile::tempdir().unwrap();
    let textfile = prom.path().join("rrr-watch.prom");
    let (_tmp, root, ours, daemon) = double_break(Some(&["--prometheus", s(&textfile)]));
    let d = daemon.unwrap();
    d.wait_log("\"kind\":\"rerecorded\"");
    assert!(news_paths(&root).contains(&ours), "{}", d.log());
    // Counted where a monitor reads it.
    wait_for("the textfile to count the re-record", Duration::from_secs(20), || {
        fs::read_to_string(&textfile)
            .is_ok_and(|t| t.lines().any(|l| l.starts_with("rrr_watch_rerecorded_total{") && l.ends_with(" 1")))
    });
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
}
