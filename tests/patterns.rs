//! `--exclude` patterns mean what they mean to rsync: a table of patterns
//! over one tree, rrr's matcher against `rsync --dry-run` itself.

use crate::util::Rrr;
use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::process::Command;

const FILES: &[&str] = &[
    "a.gz",
    "d/a.gz",
    "xd/a.gz",
    "x/d/a.gz",
    "d/e/f",
    "d/e/a.gz",
    "abc",
    "bx",
    "cx",
    "7up",
    "private/x",
    "private2",
    "dx",
    "a*b",
    "axb",
    "a\\b",
    "[",
    "x[",
    "deep/private/y",
    "e/d/f/g.gz",
    "sp ace/x",
    "A.GZ",
    "id/K/KA/KAWASAKI/Foo-1.0.tar.gz",
    "id/K/KA/KAWASAKI/Foo-1.0.meta",
    "id/K/KA/KAWASAKI/CHECKSUMS",
    "a-b",
];

const PATTERNS: &[&str] = &[
    "*.gz",
    "d/*.gz",
    "/d/*.gz",
    "d/*",
    "*",
    "**.gz",
    "a?c",
    "[ab]x",
    "[!ab]x",
    "[^ab]x",
    "[[:digit:]]*",
    "private/",
    "private",
    "d/***",
    "a\\*b",
    "a\\b",
    "[",
    "x[",
    "*/a.gz",
    "d/",
    "/d/",
    "**/a.gz",
    "e/**",
    "[a-c]*",
    "?x",
    "*[!a-z]*",
    "**/private/*",
    "sp ace",
    "*.GZ",
    "id/*/*/*/*.meta",
    "id/**/CHECKSUMS",
    "/*/d",
    "a[-]b",
    "[]a]*",
    "**",
    "*a*a*a*a*a*a*a*b",
];

fn all_paths(root: &Path) -> Vec<(String, bool)> {
    walkdir::WalkDir::new(root)
        .min_depth(1)
        .into_iter()
        .map(|e| {
            let e = e.unwrap();
            let rel = e.path().strip_prefix(root).unwrap().to_str().unwrap().to_string();
            (rel, e.file_type().is_dir())
        })
        .collect()
}

/// What `rsync -r --exclude PAT` transfers: paths, directories without `/`.
fn rsync_keeps(src: &Path, dst: &Path, pattern: &str) -> BTreeSet<String> {
    let out = Command::new("rsync")
        .args(["-r", "--dry-run", "--out-format=%n", &format!("--exclude={pattern}")])
        .arg(format!("{}/", src.display()))
        .arg(dst)
        .output()
        .expect("rsync on PATH");
    assert!(out.status.success(), "rsync: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.trim_end_matches('/').to_string())
        .filter(|l| !l.is_empty() && l != ".")
        .collect()
}

#[test]
fn excludes_match_rsync_itself() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    for f in FILES {
        let p = src.join(f);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(&p, f).unwrap();
    }
    let paths = all_paths(&src);
    let mut differ = Vec::new();
    for pattern in PATTERNS {
        let p = rrr::pattern::Pattern::parse(pattern).unwrap();
        let ours: BTreeSet<String> =
            paths.iter().filter(|(rel, is_dir)| !p.excludes(rel, *is_dir)).map(|(rel, _)| rel.clone()).collect();
        let theirs = rsync_keeps(&src, &tmp.path().join("dst"), pattern);
        if ours != theirs {
            differ.push(format!(
                "{pattern:?}: only rrr keeps {:?}; only rsync keeps {:?}",
                ours.difference(&theirs).collect::<Vec<_>>(),
                theirs.difference(&ours).collect::<Vec<_>>()
            ));
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

/// A pattern that takes a backtracking matcher hours on one long name
/// (the old matcher: over a minute for 8 stars on 60 characters) ends
/// under a generous watchdog; the real figure is in BENCHMARKS.md.
#[test]
fn pathological_exclude_finishes() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    fs::create_dir_all(&root).unwrap();
    fs::write(root.join("a".repeat(200)), "x").unwrap();
    Rrr::new().args(["--now", "1700000000.5", "init", "--aggregate"]).arg(&root).assert_ok();
    let pattern = format!("{}b", "*a".repeat(20));
    let mut child = Rrr::new()
        .args(["fsck", "--exclude", &pattern])
        .arg(root.join("RECENT.recent"))
        .stdout(std::process::Stdio::null())
        .spawn();
    let start = std::time::Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            assert_eq!(st.code(), Some(0));
            break;
        }
        if start.elapsed() > std::time::Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("fsck with a pathological --exclude ran for over 60 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
