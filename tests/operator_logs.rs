//! Logs an operator can filter, against a real loopback rsync daemon:
//! under journald (`JOURNAL_STREAM` names stderr) every line carries its
//! syslog priority `<N>`; every line names its tree, rsync's own stderr
//! lines at `-v` and a failed one-shot's JSON error record included;
//! `STATUS=` names the tree; and rsync's first error line is kept and
//! classified (a wrong path inside a correct module is not retried as a
//! network fault).

use crate::util::fixture::Origin;
use crate::util::net::NotifySocket;
use crate::util::*;
use serde_json::Value;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::Duration;

/// `rrr ARGS` with stderr into `log`, `JOURNAL_STREAM` naming that file
/// (`matching`) or another one; its stderr as text.
fn under_journald(args: &[&str], log: &Path, matching: bool) -> (i32, String) {
    let file = fs::File::create(log).unwrap();
    let m = file.metadata().unwrap();
    let stream = if matching { format!("{}:{}", m.dev(), m.ino()) } else { format!("{}:{}", m.dev(), m.ino() + 1) };
    let mut child =
        Rrr::new().args(args).env("JOURNAL_STREAM", stream).stdout(std::process::Stdio::null()).stderr(file).spawn();
    let code = child.wait().unwrap().code().unwrap();
    (code, fs::read_to_string(log).unwrap())
}

#[test]
fn a_wrong_path_in_a_module_is_named_once_each_line_with_its_tree_and_priority() {
    let origin = Origin::numbered(3, |i| format!("id/f{i}.txt"));
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("m");
    let root = target.display().to_string();
    // `author` instead of `authors`: the module is right, the path is not.
    let src = format!("{}/author/RECENT.recent", origin.daemon.url("origin"));
    let log = tmp.path().join("log");
    let (code, text) = under_journald(&["-v", "rmirror", "--remote", &src, "--localroot", &root], &log, true);
    assert_eq!(code, 2, "{text}");
    assert!(!text.contains("retrying"), "a missing path is not retried: {text}");
    assert_eq!(origin.daemon.transfers(), 1, "one call: {text}");
    let error: Vec<&str> = text.lines().filter(|l| l.starts_with("<3>")).collect();
    assert_eq!(error.len(), 1, "{text}");
    assert!(
        error[0].contains(&format!(" ERROR rmirror {root}: fetching the recentfiles of "))
            && error[0].contains("(no such path, not retried): rsync failed with code 23: rsync: [sender] change_dir \"author\" (in origin) failed: No such file or directory (2)"),
        "rsync's own first line, classified: {text}"
    );
    for line in text.lines() {
        let (prio, rest) = line.split_at(3);
        assert!(["<3>", "<4>", "<6>", "<7>"].contains(&prio), "a priority on every line: {line:?}\n{text}");
        let level = rest.get(24..30).unwrap_or_default().trim();
        let want = match level {
            "ERROR" => "<3>",
            "WARN" => "<4>",
            "INFO" => "<6>",
            _ => "<7>",
        };
        assert_eq!(prio, want, "{line}");
        assert!(
            rest.get(31..).is_some_and(|r| r.starts_with(&format!("rmirror {root}: "))),
            "names its tree: {line:?}"
        );
    }
    let rsync_line = format!(" DEBUG rmirror {root}: rsync: [sender] change_dir \"author\"");
    assert!(text.lines().any(|l| l.starts_with("<7>") && l.contains(&rsync_line)), "-v shows rsync's stderr: {text}");

    // A stream that is not ours (a child's stderr went elsewhere): no prefixes.
    let (_, text) = under_journald(&["rmirror", "--remote", &src, "--localroot", &root], &log, false);
    assert!(text.lines().all(|l| !l.starts_with('<')), "{text}");

    // The failed one-shot's JSON error record names the tree.
    let o = rrr(&["--log-format", "json", "rmirror", "--remote", &src, "--localroot", &root]);
    assert_eq!(o.status.code(), Some(2));
    let errors: Vec<Value> = stderr(&o)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["kind"] == "error")
        .collect();
    assert_eq!(errors.len(), 1, "{}", stderr(&o));
    assert_eq!(
        (errors[0]["localroot"].as_str(), errors[0]["remote"].as_str()),
        (Some(root.as_str()), Some(src.as_str()))
    );
}

#[test]
fn sd_notify_status_names_the_tree() {
    let origin = Origin::numbered(3, |i| format!("id/f{i}.txt"));
    let tmp = tempfile::tempdir().unwrap();
    let mut notify = NotifySocket::bind(tmp.path());
    let target = tmp.path().join("m");
    let o = Rrr::new()
        .args(["rmirror", "--remote", &origin.src(), "--localroot", s(&target)])
        .env("NOTIFY_SOCKET", notify.path())
        .output();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let status = format!("STATUS={}: pass (bootstrap): 3 transferred", target.display());
    assert!(notify.wait_for(Duration::from_secs(5), |m| m.starts_with(&status)).is_some(), "{:?}", notify.seen());
    assert!(notify.wait_for(Duration::from_secs(5), |m| m == "STOPPING=1").is_some(), "{:?}", notify.seen());
    let first: Vec<&String> = notify.seen().iter().take(1).collect();
    assert_eq!(first, ["READY=1"], "{:?}", notify.seen());
}
