//! Monitoring sees every failure: a tree that was tried and never
//! succeeded, an interrupted first pass, held-back deletes, `check` as a
//! Nagios plugin (its usage errors are UNKNOWN), a state file this rrr
//! cannot use, and log lines that name their tree at every level. Each
//! against a real `rsync --daemon` on 127.0.0.1 and real signals.

use crate::util::fixture::{Mirror, Origin};
use crate::util::*;
use serde_json::Value;
use std::fs;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

/// An origin of `n` small files, indexed and aggregated, served by a daemon
/// as module `origin`; the mirror's target (not created).
struct Setup {
    origin: Origin,
    target: Mirror,
}

impl Setup {
    fn new(n: usize) -> Setup {
        let origin = Origin::numbered(n, |i| format!("id/f{i:03}.txt"));
        let target = origin.mirror();
        Setup { origin, target }
    }

    fn src(&self) -> String {
        self.origin.src()
    }

    /// SRC in a module the daemon does not have: it refuses every attempt.
    fn refused_src(&self) -> String {
        format!("{}/RECENT.recent", self.origin.daemon.url("nosuch"))
    }

    fn rmirror(&self, src: &str, extra: &[&str]) -> Output {
        let mut args = vec!["rmirror", "--remote", src, "--localroot", s(&self.target)];
        args.extend_from_slice(extra);
        rrr(&args)
    }

    fn check(&self) -> (i32, String) {
        let o = rrr(&["check", "--warn", "600", "--crit", "3600", "--localroot", s(&self.target)]);
        (o.status.code().unwrap(), stdout(&o))
    }

    fn status_json(&self) -> Value {
        let o = rrr(&["status", "--json", "--localroot", s(&self.target)]);
        serde_json::from_str(stdout(&o).trim()).unwrap_or_else(|e| panic!("{e}: {}{}", stdout(&o), stderr(&o)))
    }

    /// The textfile `status --prometheus` writes.
    fn prometheus(&self) -> String {
        let file = self.target.with_file_name("rrr.prom");
        let o = rrr(&["status", "--localroot", s(&self.target), "--prometheus", s(&file)]);
        assert!(o.status.code().is_some_and(|c| c <= 1), "{}", stderr(&o));
        fs::read_to_string(file).unwrap()
    }

    fn state(&self) -> Value {
        self.target.state()
    }
}

#[track_caller]
fn assert_exit(o: &Output, code: i32) {
    assert_eq!(o.status.code(), Some(code), "stdout: {}\nstderr: {}", stdout(o), stderr(o));
}

/// The sample of `metric` (its name and labels as a prefix) in a textfile.
fn sample(text: &str, metric: &str) -> Option<String> {
    text.lines().find(|l| l.starts_with(metric)).map(|l| l.rsplit_once(' ').unwrap().1.to_string())
}

#[test]
fn a_tree_that_never_succeeded_is_seen_from_the_first_attempt() {
    let t = Setup::new(3);
    // Never tried: UNKNOWN, and the keys an alert reads say so.
    let (code, line) = t.check();
    assert_eq!(code, 3, "{line}");
    assert!(line.starts_with("RRR UNKNOWN - ") && line.contains("never tried"), "{line}");
    let never = t.status_json();
    assert_eq!((never["state"].clone(), never["consecutive_failures"].as_u64()), (Value::Null, Some(0)), "{never}");

    // The upstream refuses: the missing localroot gets a state recording it.
    assert_exit(&t.rmirror(&t.refused_src(), &[]), 2);
    let (code, line) = t.check();
    assert_eq!(code, 2, "{line}");
    assert!(line.starts_with("RRR CRITICAL - "), "{line}");
    assert!(line.contains("never complete; 1 failed attempt in a row: ") && line.contains("Unknown module"), "{line}");
    assert!(line.contains(&format!("'consecutive_failures {}'=1", s(&t.target))), "{line}");

    assert_exit(&t.rmirror(&t.refused_src(), &[]), 2);
    let st = t.status_json();
    assert!(st["last_error"].as_str().is_some_and(|e| e.contains("Unknown module")), "{st}");
    assert!(st["last_error_time"].is_string() && st["last_attempt"].is_string(), "{st}");
    assert_eq!((st["consecutive_failures"].as_u64(), st["attempts"].as_u64()), (Some(2), Some(2)), "{st}");
    assert_eq!((st["last_outcome"].as_str(), st["last_success"].clone()), (Some("failed"), Value::Null), "{st}");
    let text = stdout(&rrr(&["status", "--localroot", s(&t.target)]));
    assert!(text.contains("failures         2 in a row\n") && text.contains("2 attempts, 0 passes,"), "{text}");
    assert!(text.contains("last error       ") && text.contains("Unknown module"), "{text}");

    let prom = t.prometheus();
    let l = format!("{{localroot=\"{}\",remote=\"{}\"", s(&t.target), t.refused_src());
    assert_eq!(sample(&prom, &format!("rrr_mirror_consecutive_failures{l}}}")).as_deref(), Some("2"), "{prom}");
    assert_eq!(sample(&prom, &format!("rrr_mirror_attempts_total{l}}}")).as_deref(), Some("2"), "{prom}");
    let unknown_module = format!("rrr_mirror_errors_total{l},class=\"unknown_module\"}}");
    assert_eq!(sample(&prom, &unknown_module).as_deref(), Some("2"), "{prom}");
    assert!(sample(&prom, &format!("rrr_mirror_last_attempt_timestamp_seconds{l}}}")).is_some(), "{prom}");
    assert!(sample(&prom, &format!("rrr_mirror_last_error_timestamp_seconds{l}}}")).is_some(), "{prom}");
    assert!(sample(&prom, &format!("rrr_mirror_started_timestamp_seconds{l}}}")).is_some(), "{prom}");
    assert_eq!(sample(&prom, &format!("rrr_mirror_last_outcome{l},outcome=\"failed\"}}")).as_deref(), Some("1"));
    assert!(prom.contains(&format!("rrr_mirror_last_error_info{l},error=\"")) && prom.contains("Unknown module"));

    // The right module: the tried tree becomes a mirror, the record goes on.
    assert_exit(&t.rmirror(&t.src(), &[]), 0);
    let st = t.state();
    assert_eq!((st["consecutive_failures"].as_u64(), st["counters"]["attempts"].as_u64()), (Some(0), Some(3)), "{st}");
    assert_eq!((st["last_outcome"].as_str(), st["last_error"].clone()), (Some("success"), Value::Null), "{st}");
    assert_eq!(fs::read(t.target.join("id/f000.txt")).unwrap(), fs::read(t.origin.join("id/f000.txt")).unwrap());
    let (code, line) = t.check();
    assert_eq!(code, 0, "{line}");
}

#[test]
fn a_filled_tree_that_is_not_a_mirror_is_left_as_it_was() {
    let t = Setup::new(1);
    write(&t.target, "thesis.txt", "mine\n");
    assert_exit(&t.rmirror(&t.refused_src(), &[]), 2);
    let names: Vec<_> = fs::read_dir(&t.target).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["thesis.txt"], "nothing written there");
    assert_eq!(t.check().0, 3);
}

#[test]
fn an_interrupted_first_pass_is_recorded_as_interrupted() {
    let t = Setup::new(1);
    for i in 0..10 {
        write(&t.origin, &format!("slow/s{i}.bin"), &"y".repeat(200_000));
    }
    let mut child = Rrr::new()
        .args(["rmirror", "--remote", &t.src(), "--localroot", s(&t.target), "--rsync-option=--bwlimit=100"])
        .stderr(Stdio::null())
        .spawn();
    wait_for("the bootstrap to transfer", Duration::from_secs(20), || {
        fs::read_dir(t.target.join("slow")).is_ok_and(|mut rd| rd.next().is_some())
    });
    child.signal(libc::SIGINT);
    assert_eq!(child.wait().unwrap().code(), Some(130));

    let st = t.state();
    assert_eq!(st["last_outcome"], "interrupted", "{st}");
    assert_eq!((st["consecutive_failures"].as_u64(), st["last_error"].clone()), (Some(0), Value::Null), "{st}");
    assert_eq!(st["running"], Value::Null, "{st}");
    let errors = st["counters"]["errors"].as_object().unwrap();
    assert!(errors.values().all(|n| n == 0), "the stop is not an error: {st}");
    let (code, line) = t.check();
    assert_eq!(code, 1, "{line}");
    assert!(line.contains("first pass interrupted") && !line.contains("running"), "{line}");
    let prom = t.prometheus();
    assert!(prom
        .lines()
        .any(|l| l.starts_with("rrr_mirror_last_outcome{") && l.ends_with(",outcome=\"interrupted\"} 1")));
}

#[test]
fn deletes_held_back_by_max_delete_are_a_warning() {
    let t = Setup::new(5);
    assert_exit(&t.rmirror(&t.src(), &[]), 0);
    assert_eq!(t.check().0, 0);
    for i in 0..3 {
        fs::remove_file(t.origin.join(format!("id/f{i:03}.txt"))).unwrap();
    }
    let p = principal(&t.origin);
    ok(&["update", "--delete", &p, "id/f000.txt", "id/f001.txt", "id/f002.txt"]);
    assert_exit(&t.rmirror(&t.src(), &["--max-delete", "1"]), 1);
    let (code, line) = t.check();
    assert_eq!(code, 1, "{line}");
    assert!(line.starts_with("RRR WARNING - ") && line.contains("2 deletes held back (--max-delete)"), "{line}");
    assert!(line.contains(", 2 pending deletes;"), "{line}");
}

#[test]
fn check_usage_errors_are_unknown() {
    let t = tempfile::tempdir().unwrap();
    let root = s(t.path());
    let o = rrr(&["check", "--warn", "3600", "--crit", "300", "--localroot", root]);
    assert_exit(&o, 3);
    assert!(stdout(&o).starts_with("RRR UNKNOWN - usage: --warn 3600 is above --crit 300"), "{}", stdout(&o));
    // A missing or bad --warn/--crit is clap's, said as a Nagios plugin's UNKNOWN line.
    let o = rrr(&["check", "--localroot", root]);
    assert_exit(&o, 3);
    assert_eq!(
        stdout(&o),
        "RRR UNKNOWN - usage: the following required arguments were not provided: --warn <SECONDS> --crit <SECONDS>\n"
    );
    let o = rrr(&["check", "--crit", "300", "--localroot", root]);
    assert_exit(&o, 3);
    assert!(
        stdout(&o).starts_with("RRR UNKNOWN - usage: ") && stdout(&o).contains("--warn <SECONDS>"),
        "{}",
        stdout(&o)
    );
    let o = rrr(&["--now", "1700000000", "check", "--warn", "x", "--crit", "300", "--localroot", root]);
    assert_exit(&o, 3);
    assert!(stdout(&o).starts_with("RRR UNKNOWN - usage: invalid value 'x' for '--warn <SECONDS>'"), "{}", stdout(&o));
    // Other commands keep 2 for usage errors.
    assert_exit(&rrr(&["status", "--no-such-flag"]), 2);
}

#[test]
fn several_trees_put_the_worst_first() {
    let t = Setup::new(2);
    assert_exit(&t.rmirror(&t.refused_src(), &[]), 2);
    let never = t.target.with_file_name("never");
    let cfg = t.target.with_file_name("mirror.toml");
    let tree = |src: &str, root: &Path| format!("[[tree]]\nremote = {src:?}\nlocalroot = {:?}\n\n", s(root));
    fs::write(&cfg, tree(&t.src(), &never) + &tree(&t.refused_src(), &t.target)).unwrap();
    let o = rrr(&["check", "--warn", "600", "--crit", "3600", "--config", s(&cfg)]);
    assert_exit(&o, 2);
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(lines[0].starts_with("RRR CRITICAL - ") && lines[1].starts_with("RRR UNKNOWN - "), "{out}");
    assert!(lines[0].contains(&format!("'lag {}'", s(&t.target))), "perfdata names the tree: {out}");
}

#[test]
fn an_unknown_state_version_is_refused_with_the_way_out() {
    let t = Setup::new(2);
    assert_exit(&t.rmirror(&t.src(), &[]), 0);
    let file = t.target.join(".rrr/state.json");
    let mut st = t.state();
    st["version"] = 2.into();
    let written = serde_json::to_vec_pretty(&st).unwrap();
    fs::write(&file, &written).unwrap();
    let o = t.rmirror(&t.src(), &[]);
    assert_exit(&o, 2);
    let err = stderr(&o);
    assert!(err.contains(&format!("mirror state {}: version 2 is not one this rrr knows", file.display())), "{err}");
    assert!(err.contains("reads version 1") && err.contains("move the file away") && err.contains("--adopt"), "{err}");
    assert_eq!(fs::read(&file).unwrap(), written, "left as it was");
    assert_exit(&rrr(&["status", "--localroot", s(&t.target)]), 2);

    fs::write(&file, b"{\"version\": 1, \"done\": [").unwrap();
    let err = stderr(&t.rmirror(&t.src(), &[]));
    assert!(err.contains(&format!("mirror state {}: not valid JSON", file.display())), "{err}");
    assert!(err.contains("To recover, move the file away") && err.contains("--adopt"), "{err}");
}

#[test]
fn quiet_log_lines_name_their_tree() {
    let t = Setup::new(1);
    let cfg = t.target.with_file_name("mirror.toml");
    fs::write(&cfg, format!("[[tree]]\nremote = {:?}\nlocalroot = {:?}\n", t.refused_src(), s(&t.target))).unwrap();
    let o = rrr(&["-q", "rmirror", "--config", s(&cfg)]);
    let err = stderr(&o);
    let failed: Vec<&str> = err.lines().filter(|l| l.contains("pass failed")).collect();
    assert!(!failed.is_empty(), "{err}");
    for l in failed {
        assert!(l.contains(&format!(" ERROR rmirror {}: pass failed: ", s(&t.target))), "{err}");
    }
    // A one-shot run's closing error too.
    let o = rrr(&["-q", "rmirror", "--remote", &t.refused_src(), "--localroot", s(&t.target)]);
    assert_exit(&o, 2);
    let err = stderr(&o);
    assert!(err.lines().all(|l| l.contains(&format!("rmirror {}: ", s(&t.target)))), "{err}");
}

#[test]
fn a_transport_error_says_what_the_remote_shell_said() {
    let t = tempfile::tempdir().unwrap();
    let target = t.path().join("target");
    // A real ssh to a closed port of this host.
    let o = rrr(&[
        "rmirror",
        "--remote",
        "127.0.0.1:/srv/origin/RECENT.recent",
        "--localroot",
        s(&target),
        "--rsync-option=--rsh=ssh -p 1 -o BatchMode=yes -o StrictHostKeyChecking=no",
    ]);
    assert_exit(&o, 2);
    let err = stderr(&o);
    let last = err.lines().last().unwrap_or_default();
    assert!(last.contains("Connection refused"), "the cause, not only the symptom: {err}");
    let st: Value = serde_json::from_slice(&fs::read(target.join(".rrr/state.json")).unwrap()).unwrap();
    assert!(st["last_error"].as_str().is_some_and(|e| e.contains("Connection refused")), "{st}");
}
