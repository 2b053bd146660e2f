//! What the Debian package installs and an operator enables as it is: the
//! units run the packaged `/usr/bin/rrr` as the system user `rrr`, an
//! optional directory stays optional, the cron file starts nothing until
//! edited, and a host without node-exporter gets no textfile warning every
//! pass. (The package itself is built and installed by `.ci/package.sh`.)

use crate::util::*;
use std::fs;
use std::path::{Path, PathBuf};

fn contrib() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib")
}

fn services() -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = fs::read_dir(contrib().join("systemd"))
        .unwrap()
        .flatten()
        .map(|e| (e.file_name().to_str().unwrap().to_string(), fs::read_to_string(e.path()).unwrap()))
        .filter(|(name, _)| name.ends_with(".service"))
        .collect();
    v.sort();
    v
}

#[test]
fn units_run_the_packaged_binary_as_rrr() {
    let units = services();
    assert_eq!(units.len(), 3, "{:?}", units.iter().map(|u| &u.0).collect::<Vec<_>>());
    for (name, text) in &units {
        let exec: Vec<&str> = text.lines().filter(|l| l.starts_with("ExecStart=")).collect();
        assert_eq!(exec.len(), 1, "{name}");
        assert!(exec[0].starts_with("ExecStart=/usr/bin/rrr "), "{name}: {}", exec[0]);
        assert!(text.contains("\nUser=rrr\n") && text.contains("\nGroup=rrr\n"), "{name} runs as rrr");
        let rw = text.lines().find(|l| l.starts_with("ReadWritePaths=")).unwrap();
        assert!(rw.contains(" -/var/lib/prometheus/node-exporter"), "{name}: the textfile directory is optional: {rw}");
        assert!(text.contains("\nStateDirectory=rrr\n"), "{name}");
    }
    let all = fs::read_dir(contrib().join("systemd"))
        .unwrap()
        .flatten()
        .chain(fs::read_dir(contrib().join("cron")).unwrap().flatten());
    for e in all {
        let text = fs::read_to_string(e.path()).unwrap();
        assert!(!text.contains("/usr/local/bin/rrr"), "{:?} names a path the package does not install", e.path());
    }
}

#[test]
fn cron_file_is_examples_only() {
    let cron = fs::read_to_string(contrib().join("cron/rrr.cron")).unwrap();
    let active: Vec<&str> = cron.lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#')).collect();
    assert!(active.is_empty(), "a copied cron file must start nothing: {active:?}");
    assert!(cron.contains("# * * * * *   rrr    /usr/bin/rrr --quiet rmirror "), "{cron}");
}

/// The example config shipped in /usr/share/doc/rrr/examples reads as a
/// config: `status` names both its trees (never tried yet).
#[test]
fn example_config_is_valid() {
    let o = rrr(&["status", "--config", s(&contrib().join("examples/mirror.toml"))]);
    let out = stdout(&o);
    assert!(out.contains("/srv/CPAN/authors") && out.contains("/srv/CPAN/modules"), "{out}\n{}", stderr(&o));
    let env = fs::read_to_string(contrib().join("examples/cpan-authors.env")).unwrap();
    for var in ["RRR_REMOTE=", "RRR_LOCALROOT=", "RRR_OPTS="] {
        assert!(env.lines().any(|l| l.starts_with(var)), "{var}");
    }
}

/// A one-shot `rmirror -q` (a cron run) on a host without node-exporter
/// says nothing about the textfile in the default directory, but still
/// warns about a directory the operator chose that is missing.
#[test]
fn missing_default_textfile_directory_is_silent() {
    let default_dir = Path::new("/var/lib/prometheus/node-exporter");
    if default_dir.exists() {
        eprintln!("{} exists here: not writing into it", default_dir.display());
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let origin = tmp.path().join("origin");
    write(&origin, "id/A/a.tar.gz", "a\n");
    ok(&["init", s(&origin)]);
    let remote = origin.join("RECENT.recent");
    let pass = |mirror: &str, prom: &Path| {
        let mirror = tmp.path().join(mirror);
        rrr(&["--quiet", "rmirror", "--remote", s(&remote), "--localroot", s(&mirror), "--prometheus", s(prom)])
    };

    let o = pass("m1", &default_dir.join(format!("rrr-test-{}.prom", std::process::id())));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stderr(&o), "", "no node-exporter here: nothing to say");
    assert!(tmp.path().join("m1/id/A/a.tar.gz").exists());

    let chosen = tmp.path().join("no-such-dir/rrr.prom");
    let o = pass("m2", &chosen);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("cannot write the Prometheus textfile"), "{}", stderr(&o));
    assert!(stderr(&o).contains(s(&chosen)), "names the file: {}", stderr(&o));
}

/// The same for the origin's daemon: `rrr -q watch` writes the textfile
/// with every heartbeat (one at start-up, one at SIGTERM).
#[test]
fn watch_skips_a_missing_default_textfile_directory_silently() {
    let default_dir = Path::new("/var/lib/prometheus/node-exporter");
    if default_dir.exists() {
        eprintln!("{} exists here: not writing into it", default_dir.display());
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let run = |name: &str, prom: &Path| -> String {
        let root = tmp.path().join(name);
        write(&root, "id/A/a.tar.gz", "a\n");
        ok(&["init", s(&root)]);
        let log = tmp.path().join(format!("{name}.log"));
        let mut child = Rrr::new()
            .args(["--quiet", "watch", s(&root), "--prometheus", s(prom)])
            .stderr(fs::File::create(&log).unwrap())
            .spawn();
        wait_for("the start-up heartbeat", std::time::Duration::from_secs(60), || {
            root.join(".rrr/watch.json").exists()
        });
        // SAFETY: kill(2) on our own child's pid.
        assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
        assert_eq!(child.wait().unwrap().code(), Some(0), "{}", fs::read_to_string(&log).unwrap());
        fs::read_to_string(&log).unwrap()
    };
    let said = run("t1", &default_dir.join(format!("rrr-test-{}.prom", std::process::id())));
    assert!(!said.contains("Prometheus"), "no node-exporter here: nothing to say: {said}");
    let chosen = tmp.path().join("no-such-dir/rrr.prom");
    let said = run("t2", &chosen);
    assert!(said.contains("cannot write the Prometheus textfile") && said.contains(s(&chosen)), "{said}");
}
