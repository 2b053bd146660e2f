//! Names as bytes in tests: trees of arbitrary byte-string names, their
//! listing, and what `news --json` says of them (the `{"bytes": HEX}`
//! form decoded). Shared by the names, names_bytes and perl_reference
//! modules.

use super::{ok, principal};
use serde_json::Value;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Lowercase hex of `b`, as rrr's `{"bytes": …}` form writes it.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The bytes of lowercase or uppercase hex `s`.
pub fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

/// A tree holding `names` (each file's content its hex), under `root`.
pub fn make_tree(root: &Path, names: &[Vec<u8>]) {
    for n in names {
        let p = root.join(OsStr::from_bytes(n));
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(&p, hex(n)).unwrap();
    }
}

/// Every file below `root` as bytes relative to it (sorted), the
/// recentfiles and rrr's own state left out.
pub fn tree_files(root: &Path) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().as_os_str().as_bytes().to_vec();
            if rel == b".rrr" || rel.starts_with(b"RECENT") {
                continue;
            }
            if p.is_dir() {
                dirs.push(p);
            } else {
                out.push(rel);
            }
        }
    }
    out.sort();
    out
}

/// The paths `news --local --json` lists (sorted), `{"bytes": HEX}`
/// decoded; a string path with U+FFFD fails (a lossy conversion).
pub fn news_json(root: &Path) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = ok(&["news", "--local", &principal(root), "--json"])
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            match &v["path"] {
                Value::String(s) => {
                    assert!(!s.contains('\u{fffd}'), "a lossy path in {l}");
                    s.as_bytes().to_vec()
                }
                p => unhex(p["bytes"].as_str().unwrap_or_else(|| panic!("{l}"))),
            }
        })
        .collect();
    out.sort();
    out
}
