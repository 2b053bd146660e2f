//! Operator features against a real loopback rsync daemon: a TOML config
//! with two trees (the HOWTO's authors + modules), `rrr status` (plain,
//! JSON, Prometheus textfile) and `rrr check` exit codes.

use crate::util::rsyncd::RsyncDaemon;
use crate::util::*;
use std::fs;
use std::path::Path;

fn origin(root: &Path, prefix: &str, n: usize) {
    for i in 0..n {
        let p = root.join(format!("id/{prefix}/f{i}.tar.gz"));
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, format!("{prefix} {i}\n")).unwrap();
    }
    ok(&["init", "--aggregate", s(root)]);
}

fn same_tree(a: &Path, b: &Path) {
    let list = |r: &Path| {
        let mut v: Vec<String> = walkdir::WalkDir::new(r)
            .into_iter()
            .flatten()
            .filter(|e| e.file_type().is_file())
            .map(|e| e.path().strip_prefix(r).unwrap().to_str().unwrap().to_string())
            .filter(|p| p.starts_with("id/"))
            .collect();
        v.sort();
        v
    };
    assert_eq!(list(a), list(b));
    for p in list(a) {
        assert_eq!(fs::read(a.join(&p)).unwrap(), fs::read(b.join(&p)).unwrap(), "{p}");
    }
}

#[test]
fn config_with_two_trees_status_and_check() {
    let tmp = tempfile::tempdir().unwrap();
    let (authors, modules) = (tmp.path().join("o/authors"), tmp.path().join("o/modules"));
    fs::create_dir_all(&authors).unwrap();
    fs::create_dir_all(&modules).unwrap();
    origin(&authors, "A", 12);
    origin(&modules, "M", 7);
    let daemon = RsyncDaemon::start(&[("CPAN", &tmp.path().join("o"))]);
    let (ma, mm) = (tmp.path().join("m/authors"), tmp.path().join("m/modules"));
    let config = tmp.path().join("mirror.toml");
    fs::write(
        &config,
        format!(
            "interval = 1\nmax_files_per_connection = 5\n\n[[tree]]\nremote = \"{}/authors/RECENT.recent\"\nlocalroot = \"{}\"\n\n[[tree]]\nremote = \"{}/modules/RECENT.recent\"\nlocalroot = \"{}\"\nskip_deletes = true\n",
            daemon.url("CPAN"),
            ma.display(),
            daemon.url("CPAN"),
            mm.display()
        ),
    )
    .unwrap();
    // Before any pass: check is UNKNOWN (3), status says there is no state (1).
    let o = rrr(&["check", "--warn", "60", "--crit", "600", "--config", s(&config)]);
    assert_eq!(o.status.code(), Some(3), "{}", stdout(&o));
    assert!(stdout(&o).starts_with("RRR UNKNOWN"));
    assert_eq!(rrr(&["status", "--config", s(&config)]).status.code(), Some(1));

    let o = rrr(&["rmirror", "--config", s(&config), "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let passes: Vec<serde_json::Value> = stdout(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(passes.len(), 2, "one pass per tree");
    same_tree(&authors, &ma);
    same_tree(&modules, &mm);

    // Changes in both trees; the modules tree skips deletes (per-tree option).
    fs::write(authors.join("id/A/new.tar.gz"), "new").unwrap();
    ok(&["update", s(&authors.join("RECENT.recent")), "id/A/new.tar.gz"]);
    fs::remove_file(modules.join("id/M/f0.tar.gz")).unwrap();
    ok(&["update", "--delete", s(&modules.join("RECENT.recent")), "id/M/f0.tar.gz"]);
    let o = rrr(&["rmirror", "--config", s(&config)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(fs::read_to_string(ma.join("id/A/new.tar.gz")).ok().as_deref(), Some("new"), "{}", stderr(&o));
    assert!(mm.join("id/M/f0.tar.gz").exists(), "skip_deletes from the config kept it");

    // status: plain, JSON, and a Prometheus textfile.
    let prom = tmp.path().join("rrr.prom");
    let plain = ok(&["status", "--config", s(&config), "--prometheus", s(&prom)]);
    assert!(plain.contains(&format!("localroot        {}", ma.display())), "{plain}");
    assert!(plain.contains("lag              "));
    let json = ok(&["status", "--json", "--localroot", s(&ma)]);
    let r: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert!(r["passes"].as_u64().unwrap() >= 2);
    assert!(r["lag_seconds"].as_f64().unwrap() < 600.0);
    let text = fs::read_to_string(&prom).unwrap();
    for name in [
        "rrr_mirror_last_complete_timestamp_seconds",
        "rrr_mirror_heartbeat_timestamp_seconds",
        "rrr_mirror_files_total",
    ] {
        assert!(text.contains(&format!("# TYPE {name} ")), "{name}: {text}");
        assert_eq!(text.lines().filter(|l| l.starts_with(&format!("{name}{{"))).count(), 2, "{name} per tree");
    }
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (_, v) = line.rsplit_once(' ').unwrap();
        v.parse::<f64>().unwrap_or_else(|_| panic!("value in {line}"));
    }

    // check: OK now; WARNING/CRITICAL when the clock says the last complete pass is old.
    let o = rrr(&["check", "--warn", "600", "--crit", "3600", "--localroot", s(&ma)]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).starts_with("RRR OK"));
    let later = |secs: f64| {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64() + secs;
        format!("{now:.1}")
    };
    let o = rrr(&["--now", &later(1200.0), "check", "--warn", "600", "--crit", "3600", "--localroot", s(&ma)]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let o = rrr(&["--now", &later(7200.0), "check", "--warn", "600", "--crit", "3600", "--config", s(&config)]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert_eq!(stdout(&o).lines().count(), 2);
}

#[test]
fn config_errors_name_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("bad.toml");
    fs::write(&config, "[[tree]]\nremote = \"x::m/RECENT.recent\"\nlocalroot = \"/nonexistent\"\nmax_dleete = 3\n")
        .unwrap();
    let o = rrr(&["rmirror", "--config", s(&config)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("bad.toml") && stderr(&o).contains("max_dleete"), "{}", stderr(&o));
}

/// A text log line: RFC 3339 UTC timestamp, level, what and which tree.
fn log_line_ok(line: &str) -> bool {
    let b = line.as_bytes();
    let ts = b.len() > 25
        && line[..24].chars().enumerate().all(|(i, c)| match i {
            4 | 7 => c == '-',
            10 => c == 'T',
            13 | 16 => c == ':',
            19 => c == '.',
            23 => c == 'Z',
            _ => c.is_ascii_digit(),
        });
    let level = line.get(24..30).is_some_and(|l| ["  INFO", "  WARN", " ERROR", " DEBUG", " TRACE"].contains(&l));
    ts && level && line[31..].contains(": ")
}

fn spawn_rrr(args: &[&str], env: &[(&str, &str)]) -> Running {
    let mut c = Rrr::new();
    c.args(args).env("TERM", "dumb").stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    c.spawn()
}

fn stop(child: &mut std::process::Child) -> std::process::Output {
    let _ = kill(child.id() as i32, libc::SIGTERM);
    let mut stdout = String::new();
    let mut stderr = String::new();
    use std::io::Read;
    child.stdout.take().unwrap().read_to_string(&mut stdout).unwrap();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    let status = child.wait().unwrap();
    std::process::Output { status, stdout: stdout.into_bytes(), stderr: stderr.into_bytes() }
}

/// Two trees in one `--loop`, one of them failing: every log line says
/// when, how bad and which tree; the good tree's idle passes are not
/// logged at the default level; the failing tree backs off; the textfile
/// holds both trees with timestamps and counters.
#[test]
fn two_tree_loop_with_one_failing_tree_logs_for_operators() {
    let tmp = tempfile::tempdir().unwrap();
    let authors = tmp.path().join("o/authors");
    fs::create_dir_all(&authors).unwrap();
    origin(&authors, "A", 5);
    let daemon = RsyncDaemon::start(&[("CPAN", &tmp.path().join("o"))]);
    let (good, bad) = (tmp.path().join("m/authors"), tmp.path().join("m/broken"));
    let config = tmp.path().join("mirror.toml");
    fs::write(
        &config,
        format!(
            "interval = 1\n[[tree]]\nremote = \"{}/authors/RECENT.recent\"\nlocalroot = \"{}\"\n\n[[tree]]\nremote = \"{}/RECENT.recent\"\nlocalroot = \"{}\"\n",
            daemon.url("CPAN"),
            good.display(),
            daemon.url("no-such-module"),
            bad.display()
        ),
    )
    .unwrap();
    let prom = tmp.path().join("rrr.prom");
    let mut child = spawn_rrr(&["rmirror", "--loop", "--config", s(&config), "--prometheus", s(&prom)], &[]);
    wait_for("three passes of the good tree", std::time::Duration::from_secs(60), || {
        rrr(&["status", "--json", "--localroot", s(&good)])
            .stdout
            .split(|b| *b == b'\n')
            .filter_map(|l| serde_json::from_slice::<serde_json::Value>(l).ok())
            .any(|v| v["passes"].as_u64().unwrap_or(0) >= 3)
    });
    let text = fs::read_to_string(&prom).unwrap();
    let o = stop(&mut child);
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    let log = stderr(&o);
    for line in log.lines() {
        assert!(log_line_ok(line), "not an operator's log line: {line:?}\n{log}");
    }
    let good_abs = good.display().to_string();
    let bad_abs = bad.display().to_string();
    let bootstrap: Vec<&str> = log.lines().filter(|l| l.contains(" INFO rmirror ") && l.contains(": pass")).collect();
    assert_eq!(bootstrap.len(), 1, "only the first (bootstrap) pass at info; idle ones at debug:\n{log}");
    assert!(bootstrap[0].contains(&format!("rmirror {good_abs}: pass (bootstrap): 5 transferred")), "{log}");
    let failures: Vec<&str> = log.lines().filter(|l| l.contains(&format!("rmirror {bad_abs}: "))).collect();
    assert!(failures.iter().any(|l| l.contains(" ERROR ") && l.contains("unknown module")), "{log}");
    assert!(
        failures.iter().any(|l| l.contains(" WARN ") && l.contains("failed pass") && l.contains("; next pass in ")),
        "{log}"
    );
    assert!(failures.iter().all(|l| !l.contains('\n') && l.len() < 600), "one line each: {failures:?}");
    // The textfile: both trees (absolute paths), timestamps, counters with samples.
    let lbl = |root: &str, remote: &str| format!("{{localroot=\"{root}\",remote=\"{remote}\"}}");
    let good_l = lbl(&good_abs, &format!("{}/authors/RECENT.recent", daemon.url("CPAN")));
    for name in ["rrr_mirror_last_complete_timestamp_seconds", "rrr_mirror_heartbeat_timestamp_seconds"] {
        let v: f64 = text
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}{good_l} ")))
            .unwrap_or_else(|| panic!("{name} for the good tree: {text}"))
            .parse()
            .unwrap();
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
        assert!((now - v).abs() < 120.0, "{name} is a timestamp: {v}");
    }
    assert!(text.contains(&format!("rrr_mirror_files_total{good_l} 5\n")), "{text}");
    assert!(text.contains(&format!("rrr_mirror_complete{good_l} 1\n")), "{text}");
    let bad_l = lbl(&bad_abs, &format!("{}/RECENT.recent", daemon.url("no-such-module")));
    assert!(
        text.contains(&format!("rrr_mirror_complete{bad_l} 0\n")),
        "a tree that never reached its upstream is never complete: {text}"
    );
    // Its loop holds it from the first attempt on: its heartbeat says it lives.
    assert!(text.contains(&format!("rrr_mirror_heartbeat_timestamp_seconds{bad_l}")), "{text}");
    assert!(text.contains("rrr_mirror_errors_total{") && text.contains("class=\"connection\"} 0\n"), "{text}");
}

/// `--log-format json`: every line one flat object with the documented
/// fields; the `--json` pass objects (stdout) name the tree and remote.
#[test]
fn json_logs_and_pass_objects_follow_the_schema() {
    #[derive(serde::Deserialize)]
    #[allow(dead_code)]
    struct LogObject {
        kind: String,
        time: String,
        timestamp: String,
        level: String,
        localroot: Option<String>,
        remote: Option<String>,
        message: String,
        #[serde(flatten)]
        rest: serde_json::Map<String, serde_json::Value>,
    }
    let tmp = tempfile::tempdir().unwrap();
    let o = tmp.path().join("o");
    fs::create_dir_all(&o).unwrap();
    origin(&o, "A", 3);
    let m = tmp.path().join("m");
    let src = o.join("RECENT.recent");
    let out = rrr(&["--log-format", "json", "rmirror", "--remote", s(&src), "--localroot", s(&m), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let objects: Vec<LogObject> =
        stderr(&out).lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}"))).collect();
    let pass = objects.iter().find(|o| o.kind == "pass").expect("a pass line");
    assert_eq!(pass.level, "info");
    assert_eq!(pass.localroot.as_deref(), Some(m.to_str().unwrap()));
    assert_eq!(pass.remote.as_deref(), Some(src.to_str().unwrap()));
    assert_eq!(pass.rest["transferred"], 3);
    assert!(pass.time.parse::<f64>().is_ok() && pass.timestamp.ends_with('Z'), "{}", pass.timestamp);
    let p: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!((p["kind"].as_str(), p["localroot"].as_str()), (Some("pass"), m.to_str()));
    assert_eq!(p["remote"].as_str(), src.to_str());

    // A failed one-shot run still says so on stdout.
    let out = rrr(&[
        "rmirror",
        "--remote",
        &format!("{}/nothing/RECENT.recent", o.display()),
        "--localroot",
        s(&tmp.path().join("x")),
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let e: serde_json::Value =
        serde_json::from_str(stdout(&out).trim()).unwrap_or_else(|e| panic!("{}: {e}", stdout(&out)));
    assert_eq!(e["kind"], "error");
    assert!(e["message"].as_str().unwrap().contains("rsync"), "{e}");
}

/// `rmirror --loop 2>&1 | head -2`: the log stream closes; rmirror saves
/// its state and exits 1 (a supervisor restarts it), never a panic.
#[test]
fn a_closed_log_ends_the_loop_with_1() {
    let tmp = tempfile::tempdir().unwrap();
    let o = tmp.path().join("o");
    fs::create_dir_all(&o).unwrap();
    origin(&o, "A", 3);
    let config = tmp.path().join("mirror.toml");
    let m2 = tmp.path().join("m2");
    fs::write(
        &config,
        format!("[[tree]]\nremote = \"{}\"\nlocalroot = \"{}\"\n", o.join("RECENT.recent").display(), m2.display()),
    )
    .unwrap();
    // The log closed (`2>&1 | head -2`), or stdout of --json (`| head -1`), one tree or a config.
    let m = tmp.path().join("m");
    let src = o.join("RECENT.recent");
    let one: Vec<&str> = vec!["-v", "rmirror", "--loop", "--interval", "1", "--remote", s(&src), "--localroot", s(&m)];
    let mut json_one = one.clone();
    json_one.push("--json");
    let json_config = vec!["rmirror", "--loop", "--interval", "1", "--json", "--config", s(&config)];
    for (args, closed_stdout, tree) in [(one, false, &m), (json_one, true, &m), (json_config, true, &m2)] {
        let mut c = Rrr::new();
        c.args(&args);
        if closed_stdout {
            c.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::null());
        } else {
            c.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped());
        }
        let mut child = c.spawn();
        {
            use std::io::BufRead;
            let stream: Box<dyn std::io::Read> = if closed_stdout {
                Box::new(child.stdout.take().unwrap())
            } else {
                Box::new(child.stderr.take().unwrap())
            };
            let mut r = std::io::BufReader::new(stream);
            let mut line = String::new();
            for _ in 0..2 {
                r.read_line(&mut line).unwrap();
            }
        } // the reader goes away, as `head -2` does
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let status = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break st;
            }
            assert!(std::time::Instant::now() < deadline, "{args:?} went on with its output closed");
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        assert_eq!(status.code(), Some(1), "{args:?}: {status:?}");
        let st = crate::util::fixture::state(tree);
        assert!(st["last_complete"].is_string(), "state saved: {st}");
    }
}

/// `status` during a slow first bootstrap shows the running pass, `check`
/// says WARNING (never OK before a first complete pass), and without a
/// terminal the progress comes as log lines.
#[test]
fn status_and_check_during_a_slow_bootstrap() {
    let tmp = tempfile::tempdir().unwrap();
    let o = tmp.path().join("o");
    fs::create_dir_all(o.join("big")).unwrap();
    for i in 0..4 {
        fs::write(o.join(format!("big/f{i}")), vec![b'x'; 400_000]).unwrap();
    }
    ok(&["init", s(&o)]);
    let m = tmp.path().join("m");
    let src = o.join("RECENT.recent");
    let child = spawn_rrr(
        &["rmirror", "--remote", s(&src), "--localroot", s(&m), "--rsync-option=--bwlimit=400"],
        &[("RRR_TEST_PROGRESS_MS", "300")],
    );
    let mut seen = String::new();
    // Without a terminal rsync prints no progress lines: the bytes come
    // from /proc (a local source: what rsync read), the heartbeat from the clock.
    wait_for("status to show the running bootstrap and what arrived", std::time::Duration::from_secs(60), || {
        seen = stdout(&rrr(&["status", "--localroot", s(&m)]));
        seen.contains("running          bootstrap since")
            && seen.contains(" read from the local source (")
            && !seen.contains(": 0 B ")
    });
    let c = rrr(&["check", "--warn", "60", "--crit", "600", "--localroot", s(&m)]);
    assert_eq!(c.status.code(), Some(1), "{}", stdout(&c));
    assert!(stdout(&c).contains("first pass running: bootstrap"), "{}", stdout(&c));
    let out = child.wait_with_output();
    assert!(out.status.success(), "{}", stderr(&out));
    let log = stderr(&out);
    assert!(
        log.lines().filter(|l| l.contains(": progress: bootstrap ")).count() >= 2,
        "periodic progress lines: {log}"
    );
    let after = stdout(&rrr(&["status", "--localroot", s(&m)]));
    assert!(!after.contains("running "), "the pass is over: {after}");
    let c = rrr(&["check", "--warn", "60", "--crit", "600", "--localroot", s(&m)]);
    assert_eq!(c.status.code(), Some(0), "{}", stdout(&c));
}

/// `--on-pass`: the hook gets the pass in RRR_* variables; one that fails
/// or runs out of time is a warning and changes nothing else.
#[test]
fn on_pass_hooks_that_work_fail_and_time_out() {
    let tmp = tempfile::tempdir().unwrap();
    let o = tmp.path().join("o");
    fs::create_dir_all(&o).unwrap();
    origin(&o, "A", 3);
    let src = o.join("RECENT.recent");
    let seen = tmp.path().join("hook.env");
    let m = tmp.path().join("m");
    let hook = format!("env | grep ^RRR_ | sort > {}", seen.display());
    let out = rrr(&["rmirror", "--remote", s(&src), "--localroot", s(&m), "--on-pass", &hook]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let env = fs::read_to_string(&seen).unwrap();
    for want in ["RRR_STATUS=ok", "RRR_EXIT=0", "RRR_TRANSFERRED=3", "RRR_BOOTSTRAP=1", "RRR_COMPLETE=1"] {
        assert!(env.lines().any(|l| l == want), "{want} in {env}");
    }
    assert!(env.contains(&format!("RRR_LOCALROOT={}", m.display())), "{env}");
    // An idle pass calls no hook.
    fs::remove_file(&seen).unwrap();
    assert_eq!(rrr(&["rmirror", "--remote", s(&src), "--localroot", s(&m), "--on-pass", &hook]).status.code(), Some(0));
    assert!(!seen.exists(), "idle pass ran the hook");

    fs::write(o.join("id/A/later.tar.gz"), "x").unwrap();
    ok(&["update", s(&src), "id/A/later.tar.gz"]);
    let out = rrr(&["rmirror", "--remote", s(&src), "--localroot", s(&m), "--on-pass", "echo broken >&2; exit 3"]);
    assert_eq!(out.status.code(), Some(0), "a failing hook does not fail the pass: {}", stderr(&out));
    assert!(stderr(&out).contains("failed with exit status 3; its last line: broken"), "{}", stderr(&out));

    fs::write(o.join("id/A/later2.tar.gz"), "x").unwrap();
    ok(&["update", s(&src), "id/A/later2.tar.gz"]);
    let started = std::time::Instant::now();
    let out = rrr(&[
        "rmirror",
        "--remote",
        s(&src),
        "--localroot",
        s(&m),
        "--on-pass",
        "sleep 60",
        "--on-pass-timeout",
        "0.5",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains(" WARN ") && stderr(&out).contains("killed"), "{}", stderr(&out));
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    let c = rrr(&["check", "--warn", "60", "--crit", "600", "--localroot", s(&m)]);
    assert_eq!(c.status.code(), Some(0), "hooks do not change check: {}", stdout(&c));
}

/// Per-tree `exclude` in the config: passed to rsync and applied to the
/// events; `--full-every` makes a whole-tree pass when the last is old.
#[test]
fn config_exclude_and_full_every() {
    let tmp = tempfile::tempdir().unwrap();
    let o = tmp.path().join("o");
    fs::create_dir_all(o.join("id/A")).unwrap();
    fs::create_dir_all(o.join("incoming")).unwrap();
    fs::write(o.join("id/A/keep.tar.gz"), "k").unwrap();
    fs::write(o.join("id/A/skip.tmp"), "s").unwrap();
    fs::write(o.join("incoming/half"), "h").unwrap();
    ok(&["init", s(&o)]);
    let m = tmp.path().join("m");
    let config = tmp.path().join("mirror.toml");
    fs::write(
        &config,
        format!(
            "[[tree]]\nremote = \"{}\"\nlocalroot = \"{}\"\nexclude = [\"*.tmp\", \"/incoming/\"]\n",
            o.join("RECENT.recent").display(),
            m.display()
        ),
    )
    .unwrap();
    let out = rrr(&["rmirror", "--config", s(&config)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(m.join("id/A/keep.tar.gz").exists());
    assert!(!m.join("id/A/skip.tmp").exists() && !m.join("incoming").exists(), "excluded in the bootstrap");
    fs::write(o.join("id/A/new.tmp"), "n").unwrap();
    fs::write(o.join("id/A/new.tar.gz"), "n").unwrap();
    ok(&["update", s(&o.join("RECENT.recent")), "id/A/new.tmp", "id/A/new.tar.gz"]);
    let out = rrr(&["rmirror", "--config", s(&config), "--json"]);
    assert_eq!(out.status.code(), Some(0), "excluded events are not refused: {}", stderr(&out));
    assert!(m.join("id/A/new.tar.gz").exists() && !m.join("id/A/new.tmp").exists());
    let listed = ok(&["news", "--local", s(&m.join("RECENT.recent"))]);
    assert!(!listed.contains(".tmp"), "excluded paths are not republished: {listed}");
    let bad = tmp.path().join("bad.toml");
    fs::write(&bad, "exclude = [\"/\"]\n[[tree]]\nremote = \"x/RECENT.recent\"\nlocalroot = \"/x\"\n").unwrap();
    let out = rrr(&["rmirror", "--config", s(&bad)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("bad.toml") && stderr(&out).contains("matches nothing"), "{}", stderr(&out));

    // --full-every: nothing is due at once; a week later it is.
    let src = o.join("RECENT.recent");
    let one = |now: Option<&str>| {
        let mut args: Vec<&str> = Vec::new();
        if let Some(n) = now {
            args.extend(["--now", n]);
        }
        args.extend(["rmirror", "--remote", s(&src), "--localroot", s(&m), "--full-every", "7d", "--json"]);
        let out = rrr(&args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        serde_json::from_str::<serde_json::Value>(stdout(&out).trim()).unwrap()
    };
    assert_eq!(one(None)["bootstrap"], false);
    let later = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() + 8 * 86_400;
    assert_eq!(one(Some(&later.to_string()))["bootstrap"], true, "a whole-tree pass after a week");
}

/// The systemd units of contrib/ pass `systemd-analyze verify` (where it
/// is installed), with rrr's path in ExecStart and an instance for each
/// template; any complaint (an unknown key, a bad value) fails.
#[test]
fn contrib_units_verify() {
    if std::process::Command::new("systemd-analyze").arg("--version").output().is_err() {
        eprintln!("systemd-analyze is not installed: units not verified");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let contrib = Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/systemd");
    let mut units = Vec::new();
    for e in fs::read_dir(&contrib).unwrap().flatten() {
        let name = e.file_name().to_str().unwrap().replace("@.", "@x.");
        let text = fs::read_to_string(e.path()).unwrap().replace("/usr/bin/rrr", rrr_bin());
        fs::write(tmp.path().join(&name), text).unwrap();
        units.push(format!("./{name}"));
    }
    assert!(units.len() >= 4, "{units:?}");
    let o = std::process::Command::new("systemd-analyze")
        .arg("verify")
        .args(&units)
        .current_dir(tmp.path())
        .output()
        .unwrap();
    let said = format!("{}{}", stdout(&o), stderr(&o));
    assert!(o.status.success() && said.trim().is_empty(), "systemd-analyze verify {units:?}:\n{said}");
    for unit in
        fs::read_dir(&contrib).unwrap().flatten().filter(|e| e.file_name().to_str().unwrap().ends_with(".service"))
    {
        let text = fs::read_to_string(unit.path()).unwrap();
        for want in
            ["ProtectSystem=strict", "ReadWritePaths=", "NoNewPrivileges=yes", "PrivateTmp=yes", "RequiresMountsFor="]
        {
            assert!(text.contains(want), "{:?} lacks {want}", unit.file_name());
        }
        assert!(!text.contains("User=root"), "one user owns the tree");
    }
    let cron = fs::read_to_string(contrib.join("../cron/rrr.cron")).unwrap();
    let active: Vec<&str> = cron.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()).collect();
    assert!(active.iter().all(|l| !l.contains(" root ") && !l.contains(" --full ")), "{active:?}");
    assert!(active.iter().all(|l| !l.contains(" aggregate ")), "watch aggregates: {active:?}");
}
