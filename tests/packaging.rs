//! What the Debian package installs and an operator enables as it is: the
//! units run the packaged `/usr/bin/rrr` as the system user `rrr`, an
//! optional directory or env file stays optional, the cron file starts
//! nothing until edited, a host without node-exporter gets no textfile
//! warning every pass, the man pages describe each name they are installed
//! under, and bash completes what people type. (The package itself is
//! built, linted, installed, run, removed and purged by `.ci/package.sh`.)

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
        assert_eq!(kill(child.id() as i32, libc::SIGTERM), Ok(()));
        assert_eq!(child.wait().unwrap().code(), Some(0), "{}", fs::read_to_string(&log).unwrap());
        fs::read_to_string(&log).unwrap()
    };
    let said = run("t1", &default_dir.join(format!("rrr-test-{}.prom", std::process::id())));
    assert!(!said.contains("Prometheus"), "no node-exporter here: nothing to say: {said}");
    let chosen = tmp.path().join("no-such-dir/rrr.prom");
    let said = run("t2", &chosen);
    assert!(said.contains("cannot write the Prometheus textfile") && said.contains(s(&chosen)), "{said}");
}

/// A `--config` instance (a drop-in replacing ExecStart) needs no env
/// file: systemd refuses to start a unit whose EnvironmentFile is missing
/// unless it is marked optional with `-`. The units say what the file may hold.
#[test]
fn instance_env_file_is_optional_and_documented() {
    for (name, text) in services() {
        for l in text.lines().filter(|l| l.starts_with("EnvironmentFile=")) {
            assert!(l.starts_with("EnvironmentFile=-"), "{name}: {l}");
        }
    }
    let unit = fs::read_to_string(contrib().join("systemd/rrr-rmirror@.service")).unwrap();
    for doc in ["RRR_REMOTE ", "RRR_LOCALROOT ", "RRR_OPTS ", "RSYNC_PASSWORD", "--config /etc/rrr/mirror.toml"] {
        assert!(unit.contains(doc), "rrr-rmirror@.service does not document {doc}");
    }
}

/// The package's changelog names the version Cargo builds (lintian and
/// `apt changelog` read it), and its copyright file has a copyright notice.
#[test]
fn changelog_and_copyright() {
    let changelog = fs::read_to_string(contrib().join("debian/changelog")).unwrap();
    let first = changelog.lines().next().unwrap();
    assert_eq!(first, format!("rrr ({}) unstable; urgency=medium", env!("CARGO_PKG_VERSION")));
    assert!(changelog.lines().any(|l| l.starts_with(" -- ") && l.contains('@') && !l.contains("localhost")));
    let copyright = fs::read_to_string(contrib().join("debian/copyright")).unwrap();
    assert!(copyright.lines().any(|l| l.starts_with("Copyright: ")), "{copyright}");
    for script in ["postinst", "prerm", "postrm"] {
        let text = fs::read_to_string(contrib().join("debian").join(script)).unwrap();
        assert!(!text.contains("#DEBHELPER#"), "{script}: cargo-deb does not expand #DEBHELPER#");
    }
}

/// The pages installed under the Perl tools' names describe those entry
/// points first (`/usr/bin/rrr-fsck` repairs; `rrr fsck` does not), every
/// synopsis names each option's argument, no page shows a hidden option,
/// rrr-rmirror(1) documents the config file, and SEE ALSO names the
/// installed README.mirror.
#[test]
fn man_pages_describe_the_names_they_are_installed_under() {
    let dir = tempfile::tempdir().unwrap();
    ok(&["manpages", s(dir.path())]);
    let page = |name: &str| fs::read_to_string(dir.path().join(format!("{name}.1"))).unwrap();
    let synopsis = |text: &str| -> String {
        let start = text.find(".SH SYNOPSIS\n").unwrap() + ".SH SYNOPSIS\n".len();
        text[start..].split("\n.SH ").next().unwrap().to_string()
    };
    let fsck = page("rrr-fsck");
    let syn = synopsis(&fsck);
    assert!(syn.starts_with("\\fBrrr\\-fsck\\fR [\\fB\\-n\\fR|\\fB\\-\\-dry\\-run\\fR]"), "{syn}");
    assert!(syn.contains("\n\\fBrrr fsck\\fR") && syn.contains("[\\fB\\-\\-repair\\fR]"), "{syn}");
    assert!(fsck.contains("Repairs by default"), "{fsck}");
    assert!(fsck.contains(".SH \"OPTIONS OF rrr\\-fsck\"") && fsck.contains(".SH \"OPTIONS OF rrr fsck\""));
    for tool in ["rrr-init", "rrr-update", "rrr-aggregate", "rrr-news", "rrr-overview", "rrr-client", "rrr-server"] {
        let syn = synopsis(&page(tool));
        let bold = format!("\\fB{}\\fR", tool.replace('-', "\\-"));
        assert!(syn.starts_with(&bold), "{tool}: {syn}");
    }
    assert!(synopsis(&page("rrr-client")).contains("\\fB\\-\\-source\\fR \\fISRC\\fR"));
    let rmirror = page("rrr-rmirror");
    let syn = synopsis(&rmirror);
    for arg in [
        "\\fB\\-\\-remote\\fR \\fISRC\\fR",
        "\\fB\\-\\-exclude\\fR \\fIPATTERN\\fR]...",
        "\\fB\\-\\-config\\fR \\fIFILE\\fR",
    ] {
        assert!(syn.contains(arg), "{arg} in {syn}");
    }
    assert!(rmirror.contains(".SH \"CONFIGURATION FILE\"") && rmirror.contains("\\fBmax_delete = N\\fR"), "{rmirror}");
    assert!(synopsis(&page("rrr-check")).contains("\\fB\\-\\-warn\\fR \\fISECONDS\\fR"));
    for e in fs::read_dir(dir.path()).unwrap().flatten() {
        let text = fs::read_to_string(e.path()).unwrap();
        let name = e.file_name();
        for hidden in ["\\-\\-now", "perl\\-format", "\\-\\-perl\\fR"] {
            assert!(!synopsis(&text).contains(hidden), "{name:?} shows the hidden {hidden}");
        }
        assert!(text.contains("/usr/share/doc/rrr/README.mirror"), "{name:?}: SEE ALSO");
        assert!(text.is_ascii(), "{name:?}: non-ASCII roff");
    }
}

/// Bash completion, run in a real bash: no hidden option is offered, a
/// subcommand's options are, and the Perl entry points' names complete
/// their own options.
#[test]
fn bash_completion_hides_hidden_options_and_knows_the_perl_names() {
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join("rrr.bash");
    fs::write(&script, ok(&["completions", "bash"])).unwrap();
    let complete = |words: &[&str]| -> Vec<String> {
        let line = words.join(" ");
        let func = if words[0] == "rrr" { "_rrr" } else { "_rrr_perl_tool" };
        let prog = format!(
            "source {script}; COMP_WORDS=({line}); COMP_CWORD={cword}; COMP_LINE='{line}'; COMP_POINT=${{#COMP_LINE}}; \
             {func} {cmd} '{cur}' '{prev}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"; complete -p {cmd}",
            script = s(&script),
            cword = words.len() - 1,
            cmd = words[0],
            cur = words[words.len() - 1],
            prev = words[words.len().saturating_sub(2)],
        );
        let o = std::process::Command::new("bash").arg("-c").arg(&prog).output().unwrap();
        assert!(o.status.success(), "{prog}: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap().lines().map(str::to_string).collect()
    };
    let top = complete(&["rrr", "--"]);
    assert!(top.contains(&"--quiet".to_string()), "{top:?}");
    assert!(!top.iter().any(|w| w == "--now" || w == "--locktimeout"), "hidden options offered: {top:?}");
    let news = complete(&["rrr", "news", "--"]);
    assert!(news.contains(&"--skip-deletes".to_string()), "{news:?}");
    assert!(!news.iter().any(|w| w.starts_with("--perl") || w == "--now"), "hidden options offered: {news:?}");
    let fsck = complete(&["rrr-fsck", "--d"]);
    assert_eq!(fsck[0], "--dry-run", "{fsck:?}");
    assert!(fsck.last().unwrap().contains(" -F _rrr_perl_tool rrr-fsck"), "{fsck:?}");
    let client = complete(&["rrr-client", "--s"]);
    assert!(client.contains(&"--source".to_string()) && client.contains(&"--skip-deletes".to_string()), "{client:?}");
}

/// README.md's first screen: what rrr is, then the two commands (the demo
/// and the test suite); the hours-long mutation run is CONTRIBUTING.md's.
#[test]
fn readme_opens_with_what_rrr_is_then_two_commands() {
    let readme = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let fence = readme.find("```").unwrap();
    assert!(readme[..fence].contains("rrr keeps a huge tree"), "the first paragraph says what rrr is");
    let block = readme[fence..].split("```").nth(1).unwrap();
    let commands: Vec<&str> =
        block.lines().skip(1).filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#')).collect();
    assert_eq!(commands.len(), 2, "{commands:?}");
    assert!(commands[0].starts_with("./bin/demo ") && commands[1].starts_with("cargo test --workspace --locked"));
    let install = readme.find("## Install").unwrap();
    assert!(!readme[..install].contains("cargo mutants"), "the mutation run belongs in CONTRIBUTING.md");
    assert!(fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("CONTRIBUTING.md"))
        .unwrap()
        .contains("cargo mutants"));
}

/// README.mirror starts with its table of contents, which names every
/// numbered section as it is titled, and the quick start right after it.
#[test]
fn readme_mirror_contents_name_every_section() {
    let text = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.mirror")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.iter().position(|l| *l == "Contents").expect("a Contents block");
    let quick = lines.iter().position(|l| *l == "Quick start: a CPAN mirror").expect("a quick start");
    let sections: Vec<&str> = lines
        .windows(2)
        .filter(|w| w[1].starts_with("---") && w[0].split_once(". ").is_some_and(|(n, _)| n.parse::<u32>().is_ok()))
        .map(|w| w[0])
        .collect();
    assert!(sections.len() >= 13, "{sections:?}");
    let contents = lines[start..quick].join("\n");
    for s in &sections {
        let (n, title) = s.split_once(". ").unwrap();
        assert!(contents.contains(&format!("{n:>2}. {title}")), "Contents lacks {s:?}:\n{contents}");
    }
    let first = lines.iter().position(|l| *l == sections[0]).unwrap();
    assert!(start < quick && quick < first, "Contents, then the quick start, then section 1");
}
