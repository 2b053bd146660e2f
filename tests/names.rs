//! Names as the kernel allows them, through a real `rsync --daemon` on
//! 127.0.0.1: an origin's event that rrr cannot read is one refused event
//! (the rest of the file is mirrored), and names with control characters
//! are indexed, written, read back and mirrored exactly.

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
    // of ordinary files: a name that is not UTF-8, the `~` Perl writes
    // back for a name of "\r", an item no YAML reader takes, a type that
    // is neither new nor delete.
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
    for says in [
        "refused event 1700000200.8 caf\u{FFFD}.txt: the path is not valid UTF-8",
        "refused event 1700000200.7 : the event has no path",
        "refused event 1700000200.6 : the event cannot be read",
        "refused event 1700000200.5 a.txt: unknown event type \"changed\"",
    ] {
        assert!(err.contains(says), "{says:?} not in:\n{err}");
    }
    let v: Value = serde_json::from_str(stdout(&o).lines().last().unwrap()).unwrap();
    assert_eq!(v["refused"].as_array().unwrap().len(), 4, "{v}");
    // The copy installed for downstream mirrors leaves them out.
    let installed = fs::read(target.join("RECENT-1h.yaml")).unwrap();
    let installed = String::from_utf8(installed).expect("the installed copy is UTF-8");
    assert!(installed.contains("1700000200.9") && installed.contains("1700000200.4"), "{installed}");
    for gone in ["1700000200.8", "1700000200.7", "1700000200.6", "1700000200.5"] {
        assert!(!installed.contains(gone), "{gone} republished:\n{installed}");
    }

    // Refused events are done: the next pass is clean.
    let again = rmirror(&src, &target);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
}
