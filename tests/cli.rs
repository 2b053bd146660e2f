//! The command line as an operator meets it: progress bars only on a
//! terminal, completions and man pages from the clap definitions.

use crate::util::*;
use std::fs;
use std::process::Command;

fn tree(n: usize) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for i in 0..n {
        let d = tmp.path().join(format!("t/d{}", i % 10));
        fs::create_dir_all(&d).unwrap();
        fs::write(d.join(format!("f{i}")), "x").unwrap();
    }
    tmp
}

/// Run `rrr ARGS` under a pseudo-terminal (`script`); what the terminal showed.
fn under_pty(args: &str) -> (bool, String) {
    let out = Command::new("script")
        .args(["-qec", &format!("{} {args}", rrr_bin()), "/dev/null"])
        .env_remove("CI")
        .env("TERM", "xterm")
        .output()
        .unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Under a pseudo-terminal (`script`), `rrr init` draws its progress bar on
/// stderr; through a pipe it prints none.
#[test]
fn progress_bar_only_on_a_terminal() {
    if Command::new("script").arg("--version").output().is_err() {
        panic!("`script` (util-linux) is needed for the pty test");
    }
    let tmp = tree(200);
    let root = tmp.path().join("t");
    let (ok, on_tty) = under_pty(&format!("init {}", root.display()));
    assert!(ok, "{on_tty}");
    assert!(on_tty.contains("indexing"), "bar expected on a terminal: {on_tty:?}");
    let piped = rrr(&["init", "--force", root.to_str().unwrap()]);
    assert!(piped.status.success());
    assert!(!stderr(&piped).contains("indexing"), "no bar through a pipe: {}", stderr(&piped));
    assert!(!stderr(&piped).contains('\u{1b}'), "no escape codes through a pipe");
    // --quiet silences it on a terminal too.
    let (ok, quiet) = under_pty(&format!("init --quiet --force {}", root.display()));
    assert!(ok && !quiet.contains("indexing"), "{quiet}");
}

/// On a terminal a first mirror's bar is rsync's `--info=progress2`
/// (percentage and time left); through a pipe rsync prints no line per
/// file and the bar is not drawn.
#[test]
fn first_mirror_bar_only_on_a_terminal() {
    let tmp = tempfile::tempdir().unwrap();
    let o = tmp.path().join("o");
    fs::create_dir_all(&o).unwrap();
    fs::write(o.join("blob"), vec![b'x'; 1_000_000]).unwrap();
    ok(&["init", o.to_str().unwrap()]);
    let src = o.join("RECENT.recent");
    let m = tmp.path().join("m");
    let args = format!("rmirror --remote {} --localroot {} --rsync-option=--bwlimit=400", src.display(), m.display());
    let (ok_run, on_tty) = under_pty(&args);
    assert!(ok_run, "{on_tty}");
    assert!(
        on_tty.contains("rmirror bootstrap") && on_tty.contains(" left"),
        "rsync's progress in the bar: {on_tty:?}"
    );
    let m2 = tmp.path().join("m2");
    let piped = rrr(&["rmirror", "--remote", src.to_str().unwrap(), "--localroot", m2.to_str().unwrap()]);
    assert!(piped.status.success(), "{}", stderr(&piped));
    assert!(!stderr(&piped).contains("rmirror bootstrap ["), "no bar through a pipe: {}", stderr(&piped));
}

#[test]
fn completions_and_man_pages() {
    let bash = ok(&["completions", "bash"]);
    assert!(bash.contains("_rrr()") && bash.contains("aggregate"), "{}", &bash[..200.min(bash.len())]);
    assert!(ok(&["completions", "zsh"]).contains("#compdef rrr"));
    let dir = tempfile::tempdir().unwrap();
    ok(&["manpages", dir.path().to_str().unwrap()]);
    for page in ["rrr.1", "rrr-news.1", "rrr-init.1", "rrr-fsck.1"] {
        let text = fs::read_to_string(dir.path().join(page)).unwrap();
        assert!(text.contains(".TH"), "{page}");
    }
    assert!(fs::read_to_string(dir.path().join("rrr-news.1")).unwrap().contains("skip\\-deletes"));
    // Every page an operator may look for, with the sections beyond the options.
    for page in ["rrr", "rrr-rmirror", "rrr-check", "rrr-watch", "rrr-client", "rrr-server", "rrr-news", "rrr-update"] {
        let text = fs::read_to_string(dir.path().join(format!("{page}.1"))).unwrap_or_else(|e| panic!("{page}: {e}"));
        for sh in [".SH \"EXIT STATUS\"", ".SH FILES", ".SH ENVIRONMENT", ".SH \"SEE ALSO\""] {
            assert!(text.contains(sh), "{page}.1 lacks {sh}");
        }
        assert!(text.contains("RRR_RSYNC"), "{page}.1 documents RRR_RSYNC");
    }
    let rmirror = fs::read_to_string(dir.path().join("rrr-rmirror.1")).unwrap();
    assert!(rmirror.contains(".SH EXAMPLES") && rmirror.contains("\\-\\-full\\-every 7d"), "{rmirror}");
    assert!(fs::read_to_string(dir.path().join("rrr-client.1")).unwrap().contains("\\-\\-source"));
    assert!(fs::read_to_string(dir.path().join("rrr-news.1")).unwrap().contains(".SH \"OPTIONS OF rrr\\-news\""));
    // --help: examples and exit codes for each command; no empty descriptions.
    for cmd in ["init", "update", "aggregate", "news", "overview", "fsck", "rmirror", "status", "check", "watch"] {
        let help = ok(&[cmd, "--help"]);
        assert!(help.contains("\nExamples:\n  # ") && help.contains("\nExit status:\n"), "{cmd}: {help}");
        for line in help.lines().filter(|l| l.trim_start().starts_with('-') || l.trim_start().starts_with('<')) {
            let words: Vec<&str> = line.split("  ").map(str::trim).filter(|w| !w.is_empty()).collect();
            assert!(words.len() >= 2, "{cmd}: an argument without a description: {line:?}");
        }
    }
    assert!(!ok(&["news", "--help"]).contains("--locktimeout"), "a lock timeout means nothing to news");
    assert!(ok(&["update", "--help"]).contains("--locktimeout"));
    assert!(ok(&["check", "--help"]).contains("3  UNKNOWN"));
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(rrr(&["news"]).status.code(), Some(2));
    assert_eq!(rrr(&["frobnicate"]).status.code(), Some(2));
    assert_eq!(rrr(&["--now", "abc", "overview", "x"]).status.code(), Some(2));
    let o = rrr(&["init", "--interval", "5Z", "/tmp"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("takes no count"), "{}", stderr(&o));
    // The message says what is wrong with what was given.
    let tmp = tempfile::tempdir().unwrap();
    let o = rrr(&["init", tmp.path().join("nonexistent").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("No such file or directory"), "{}", stderr(&o));
    let flat = tmp.path().join("RECENT.recent");
    fs::write(&flat, "copied without its link\n").unwrap();
    let o = rrr(&["overview", flat.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("is a regular file, not a symlink"), "{}", stderr(&o));
    let o = rrr(&["fsck", "--exclude", "/", flat.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("matches nothing"), "{}", stderr(&o));
}

/// A listing whose reader goes away (`| head -1`) ends with 0 and says
/// nothing, for outputs far larger than a pipe buffer.
#[test]
fn closed_stdout_ends_a_listing_quietly() {
    let tmp = tree(20_000);
    let root = tmp.path().join("t");
    ok(&["init", root.to_str().unwrap()]);
    let p = root.join("RECENT.recent");
    for args in [vec!["news", "--json"], vec!["news"], vec!["news", "--perl-format"]] {
        let mut child = Rrr::new()
            .args(&args)
            .args(["--local", p.to_str().unwrap()])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn();
        let mut line = String::new();
        use std::io::BufRead;
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        assert!(!line.is_empty());
        // The reader is gone (dropped above): the next writes fail with EPIPE.
        let out = child.assert_exit(0);
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{args:?}");
    }
}
