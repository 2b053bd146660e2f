//! Names as the kernel allows them, through a real `rsync --daemon` on
//! 127.0.0.1: an origin's event that rrr cannot read is one refused event
//! (the rest of the file is mirrored), and names with control characters
//! are indexed, written, read back and mirrored exactly.

use crate::util::names::tree_files;
use crate::util::rsyncd::RsyncDaemon;
use crate::util::*;
use serde_json::Value;
use std::fs;
use std::path::Path;
use std::process::Output;

fn rmirror(src: &str, target: &Path) -> Output {
    rrr(&["rmirror", "--remote", src, "--localroot", s(target), "--json"])
}

/// The principal's YAML with `items` (raw bytes, Syck item blocks) put
/// before its first event: they are newer than every event in it.
fn prepend_items(root: &Path, items: &[u8]) {
    let file = root.join("RECENT-1h.yaml");
    let text = fs::read(&file).unwrap();
    let at = text.windows(9).position(|w| w == b"recent: \n").unwrap() + 9;
    let mut out = text[..at].to_vec();
    out.extend_from_slice(items);
    out.extend_from_slice(&text[at..]);
    fs::write(&file, out).unwrap();
}

fn item(epoch: &str, path: &[u8], kind: &str) -> Vec<u8> {
    [b"  - \n    epoch: '", epoch.as_bytes(), b"'\n    path: ", path, b"\n    type: ", kind.as_bytes(), b"\n"].concat()
}

#[test]
fn an_unreadable_upstream_event_is_one_refused_event() {
    let tmp = tempfile::tempdir().unwrap();
    let (origin, target) = (tmp.path().join("origin"), tmp.path().join("target"));
    write(&origin, "a.txt", "a\n");
    ok(&["--now", "1700000000.5", "init", s(&origin)]);
    let d = RsyncDaemon::start(&[("origin", &origin)]);
    let src = format!("{}/RECENT.recent", d.url("origin"));
    let first = rmirror(&src, &target);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));

    // What a Perl origin writes of names rrr cannot read, between events
    // of ordinary files: the `~` Perl writes back for a name of "\r", an
    // item no YAML reader takes, a type that is neither new nor delete;
    // and a name that is not UTF-8, which is read and mirrored.
    write(&origin, "new1.txt", "1\n");
    write(&origin, "new2.txt", "2\n");
    fs::write(origin.join(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(b"caf\xe9.txt")), "latin-1\n")
        .unwrap();
    let items = [
        item("1700000200.9", b"new1.txt", "new"),
        item("1700000200.8", b"caf\xe9.txt", "new"),
        item("1700000200.7", b"~", "new"),
        item("1700000200.6", b"\"unterminated", "new"),
        item("1700000200.5", b"a.txt", "changed"),
        item("1700000200.4", b"new2.txt", "new"),
    ]
    .concat();
    prepend_items(&origin, &items);

    let o = rmirror(&src, &target);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(fs::read_to_string(target.join("new1.txt")).unwrap(), "1\n", "{err}");
    assert_eq!(fs::read_to_string(target.join("new2.txt")).unwrap(), "2\n", "{err}");
    assert_eq!(
        fs::read(target.join(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(b"caf\xe9.txt"))).unwrap(),
        b"latin-1\n",
        "{err}"
    );
    for says in [
        "refused event 1700000200.7 : the event has no path",
        "refused event 1700000200.6 : the event cannot be read",
        "refused event 1700000200.5 a.txt: unknown event type \"changed\"",
    ] {
        assert!(err.contains(says), "{says:?} not in:\n{err}");
    }
    let v: Value = serde_json::from_str(stdout(&o).lines().last().unwrap()).unwrap();
    assert_eq!(v["refused"].as_array().unwrap().len(), 3, "{v}");
    // The copy installed for downstream mirrors leaves them out.
    let installed = fs::read(target.join("RECENT-1h.yaml")).unwrap();
    assert!(installed.windows(19).any(|w| w == b"path: caf\xe9.txt\n    "), "{}", String::from_utf8_lossy(&installed));
    let installed = String::from_utf8_lossy(&installed);
    assert!(installed.contains("1700000200.9") && installed.contains("1700000200.4"), "{installed}");
    for gone in ["1700000200.7", "1700000200.6", "1700000200.5"] {
        assert!(!installed.contains(gone), "{gone} republished:\n{installed}");
    }

    // Refused events are done: the next pass is clean.
    let again = rmirror(&src, &target);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
}

/// Names with control characters (valid UTF-8), each as the kernel, the
/// Perl tools and rsync take it.
const CONTROL_NAMES: &[&str] = &[
    "tab\there",
    "new\nline",
    "cr\r",
    "\r",
    "\rlead",
    "bell\x07",
    "esc\x1b[1m",
    "del\x7f",
    "c1\u{85}nel\u{9f}",
    "dir\twith/ctl\x01file",
    "back\\slash\\n",
    " lead space",
    "trail space ",
    "\u{2028}sep",
];

#[test]
fn names_with_control_characters_are_indexed_and_mirrored() {
    let tmp = tempfile::tempdir().unwrap();
    let (origin, target) = (tmp.path().join("origin"), tmp.path().join("target"));
    let (first, later) = CONTROL_NAMES.split_at(CONTROL_NAMES.len() / 2);
    write(&origin, "plain.txt", "plain\n");
    for n in first {
        write(&origin, n, &format!("{n:?}\n"));
    }
    let init = rrr(&["init", s(&origin)]);
    assert_eq!(init.status.code(), Some(0), "{}", stderr(&init));
    let d = RsyncDaemon::start(&[("origin", &origin)]);
    let src = format!("{}/RECENT.recent", d.url("origin"));
    let o = rmirror(&src, &target);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(files(&target), files(&origin));

    // Later ones through `rrr update` and an incremental pass (a
    // --files-from list of exactly these names).
    let mut args: Vec<String> = vec!["update".into(), principal(&origin)];
    for n in later {
        write(&origin, n, &format!("{n:?}\n"));
        args.push(origin.join(n).to_str().unwrap().to_string());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    ok(&args);
    let o = rmirror(&src, &target);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(stdout(&o).lines().last().unwrap()).unwrap();
    assert_eq!(v["transferred"], later.len(), "{v}");
    assert_eq!(files(&target), files(&origin));
    for n in CONTROL_NAMES {
        assert_eq!(fs::read_to_string(target.join(n)).unwrap(), format!("{n:?}\n"), "{n:?}");
    }

    // news: one line per path, control characters escaped as `ls -b`
    // does; --json gives every name back exactly.
    let text = ok(&["news", "--local", &principal(&origin)]);
    assert_eq!(text.lines().count(), CONTROL_NAMES.len() + 1, "{text}");
    for (name, shown) in
        [("new\nline", "new\\nline"), ("esc\x1b[1m", "esc\\033[1m"), ("back\\slash\\n", "back\\\\slash\\\\n")]
    {
        assert!(text.contains(&format!("\tnew\t{shown}\n")), "{shown:?} for {name:?} in {text}");
    }
    assert!(!text.contains('\r') && !text.contains('\x1b'), "{text:?}");
    let json = ok(&["news", "--local", &principal(&origin), "--json"]);
    let mut listed: Vec<String> =
        json.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()["path"].as_str().unwrap().to_string()).collect();
    listed.sort();
    assert_eq!(listed, files(&origin));
    // fsck agrees with the tree.
    let fsck = rrr(&["fsck", &principal(&origin)]);
    assert_eq!(fsck.status.code(), Some(0), "{}{}", stdout(&fsck), stderr(&fsck));
}

/// The paths `news --json` lists for the collection at `root`.
fn listed(root: &Path) -> Vec<String> {
    let json = ok(&["news", "--local", &principal(root), "--json"]);
    let mut out: Vec<String> =
        json.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()["path"].as_str().unwrap().to_string()).collect();
    out.sort();
    out
}

#[test]
fn watch_records_names_with_control_characters() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("origin");
    write(&root, "plain.txt", "plain\n");
    ok(&["init", s(&root)]);
    let daemon = crate::watch::Daemon::start(&root, &[]);
    for n in CONTROL_NAMES {
        write(&root, n, &format!("{n:?}\n"));
    }
    let all_listed = poll_until(std::time::Duration::from_secs(20), || listed(&root) == files(&root));
    let (code, log) = daemon.stop();
    assert!(all_listed, "listed {:?}\nfiles {:?}\n{log}", listed(&root), files(&root));
    assert_eq!(code, 0, "{log}");
    assert!(!log.contains("\"level\":\"warn"), "{log}");
    let fsck = rrr(&["fsck", &principal(&root)]);
    assert_eq!(fsck.status.code(), Some(0), "{}{}", stdout(&fsck), stderr(&fsck));
}

#[test]
fn a_writer_never_drops_an_event_it_cannot_read() {
    let tmp = tempfile::tempdir().unwrap();
    let origin = tmp.path().join("origin");
    write(&origin, "a.txt", "a\n");
    ok(&["--now", "1700000000.5", "init", s(&origin)]);
    // Another writer on the same tree wrote an item no YAML reader takes.
    prepend_items(&origin, &item("1700000100.5", b"\"caf\\xE9.txt", "new"));
    let before = fs::read(origin.join("RECENT-1h.yaml")).unwrap();
    write(&origin, "b.txt", "b\n");
    let o = rrr(&["update", &principal(&origin), s(&origin.join("b.txt"))]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("event 1700000100.5 : the event cannot be read")
            && stderr(&o).contains("rrr would drop it"),
        "{}",
        stderr(&o)
    );
    assert_eq!(fs::read(origin.join("RECENT-1h.yaml")).unwrap(), before, "the file was rewritten");
}

/// Every file below `root` (relative, sorted, as text), without rrr's own files.
fn files(root: &Path) -> Vec<String> {
    tree_files(root).into_iter().map(|p| String::from_utf8(p).unwrap()).collect()
}
