//! Operator features against a real loopback rsync daemon: a TOML config
//! with two trees (the HOWTO's authors + modules), `rrr status` (plain,
//! JSON, Prometheus textfile) and `rrr check` exit codes.

mod common;
mod support;

use common::*;
use std::fs;
use std::path::Path;
use support::rsyncd::RsyncDaemon;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

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
    for name in ["rrr_mirror_last_complete_timestamp_seconds", "rrr_mirror_heartbeat_timestamp_seconds", "rrr_mirror_files_total"] {
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
