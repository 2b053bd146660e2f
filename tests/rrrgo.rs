//! Collections written by abh/rrrgo (the Go port of the origin tools that
//! very likely writes CPAN's recentfiles since 2025), read and mirrored by
//! rrr: the trees of `fixtures/rrrgo-9c6e135/` (written by rrrgo's own
//! code) through `news`, `overview` and `fsck`; a mirror of an rrrgo YAML
//! origin through a real `rsync --daemon`, bootstrap and an incremental
//! pass over events appended in rrrgo's exact layout; an incremental pass
//! over rrrgo JSON events whose names are in U+0080..U+00FF; and rrr's
//! writers (`update`, `aggregate`) on an rrrgo tree (issue 30).
//!
//! The epochs' oracle is independent of rrr's reader: rrrgo writes float64
//! values in Go's shortest form (`%g` in YAML, `f` in JSON), and Rust's
//! `Display` of an `f64` prints the same shortest digits in plain decimal,
//! which is the exact decimal rrr must read them as.

use crate::util::cmd::describe;
use crate::util::fixture;
use crate::util::names::{tree_files, unhex};
use crate::util::rsyncd::RsyncDaemon;
use crate::util::*;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Every archive of the fixture set.
const TREES: &[&str] = &[
    "go-cpan-yaml",
    "go-cpan-json",
    "go-awkward-yaml",
    "go-awkward-json",
    "go-controls-yaml",
    "go-controls-json",
    "go-empty-yaml",
    "go-noagg-yaml",
    "go-big200k-yaml",
];

/// `fixtures/rrrgo-9c6e135/<name>.tar.xz` unpacked into a temp directory
/// (GNU tar keeps the mtimes and takes any name); the tree is `<tmp>/<name>`.
fn unpack(name: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let archive = fixtures().join("rrrgo-9c6e135").join(format!("{name}.tar.xz"));
    let out = Command::new("tar").arg("-xJf").arg(&archive).arg("-C").arg(tmp.path()).output().unwrap();
    assert!(out.status.success(), "tar -xJf {}: {}", archive.display(), stderr(&out));
    let root = tmp.path().join(name);
    assert!(root.is_dir(), "{name}.tar.xz holds no {name}/");
    (tmp, root)
}

/// The tree's principal: the link, or the 1h file where rrrgo has not
/// made the link yet (go-empty-yaml).
fn principal_of(root: &Path) -> String {
    let link = root.join("RECENT.recent");
    if fs::symlink_metadata(&link).is_ok() {
        return s(&link).to_string();
    }
    let suffix = if root.join("RECENT-1h.json").exists() { "json" } else { "yaml" };
    s(&root.join(format!("RECENT-1h.{suffix}"))).to_string()
}

/// The exact decimal of a float64 epoch as rrrgo writes it (see the module docs).
fn decimal(text: &str) -> String {
    let f: f64 = text.parse().unwrap_or_else(|_| panic!("{text:?} is no number"));
    format!("{f}")
}

/// The epochs of every event of every recentfile of `root`, read as the
/// oracle reads them (per file: the events' epochs in order).
fn oracle_epochs(root: &Path) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for e in fs::read_dir(root).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_str().unwrap().to_string();
        if !name.starts_with("RECENT-") || p.is_symlink() {
            continue;
        }
        let text = fs::read_to_string(&p).unwrap();
        let epochs = if name.ends_with(".json") {
            let v: Value = serde_json::from_str(&text).unwrap();
            // serde_json without arbitrary precision in the oracle: to_string of the f64.
            v["recent"].as_array().unwrap().iter().map(|e| decimal(&e["epoch"].to_string())).collect()
        } else {
            text.lines().filter_map(|l| l.trim_start().strip_prefix("- epoch: ")).map(decimal).collect()
        };
        out.insert(name.trim_start_matches("RECENT-").split('.').next().unwrap().to_string(), epochs);
    }
    out
}

/// `news --json` of a principal: (epoch, type, path bytes), newest first.
fn news(principal: &str) -> Vec<(String, String, Vec<u8>)> {
    ok(&["news", "--local", principal, "--json"])
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let path = match &v["path"] {
                Value::String(s) => s.as_bytes().to_vec(),
                p => unhex(p["bytes"].as_str().unwrap_or_else(|| panic!("{l}"))),
            };
            (v["epoch"].as_str().unwrap().to_string(), v["type"].as_str().unwrap().to_string(), path)
        })
        .collect()
}

/// `overview --json`: interval -> (count, max, min).
fn overview(principal: &str) -> BTreeMap<String, (u64, String, String)> {
    ok(&["overview", principal, "--json"])
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let text = |k: &str| v[k].as_str().unwrap_or("").to_string();
            (text("interval"), (v["count"].as_u64().unwrap(), text("max"), text("min")))
        })
        .collect()
}

/// `news` and `overview` read every tree rrrgo wrote, each epoch as the
/// exact decimal of its float64 (by the oracle), each name as the bytes
/// on disk: the paths whose newest event is `new` are the tree's files.
/// Seen failing before issue 30: every YAML tree exited 2 ("epoch
/// \"1.79624748999797e+09\" is not a decimal number"), and the JSON
/// trees read `unicode/café.txt` as `caf\xe9.txt`.
#[test]
fn news_and_overview_read_every_rrrgo_tree() {
    for name in TREES {
        let (_tmp, root) = unpack(name);
        let principal = principal_of(&root);
        let oracle = oracle_epochs(&root);
        let every: BTreeSet<&String> = oracle.values().flatten().collect();
        let news = news(&principal);
        for (epoch, _, path) in &news {
            assert!(
                every.contains(epoch),
                "{name}: news epoch {epoch} of {} is no event's",
                String::from_utf8_lossy(path)
            );
        }
        let paths: BTreeSet<&Vec<u8>> = news.iter().map(|(_, _, p)| p).collect();
        assert_eq!(paths.len(), news.len(), "{name}: one line per path");
        if *name == "go-big200k-yaml" {
            assert_eq!(news.len(), 200_001, "{name}");
            assert_eq!(news[0].2, b"authors/id/X/XX/NEW/New-1.0.tar.gz", "{name}");
        } else if *name != "go-empty-yaml" {
            let alive: Vec<Vec<u8>> = {
                let mut v: Vec<Vec<u8>> = news.iter().filter(|n| n.1 == "new").map(|n| n.2.clone()).collect();
                v.sort();
                v
            };
            assert_eq!(alive, tree_files(&root), "{name}: the paths news lists as new are the tree's files");
        } else {
            assert!(news.is_empty(), "{name}: {news:?}");
        }
        let table = overview(&principal);
        for (interval, epochs) in &oracle {
            let Some((count, max, min)) = table.get(interval) else { panic!("{name}: overview has no {interval}") };
            assert_eq!(*count, epochs.len() as u64, "{name} {interval}");
            if let (Some(first), Some(last)) = (epochs.first(), epochs.last()) {
                assert_eq!((max, min), (first, last), "{name} {interval}");
            }
        }
    }
}

/// `fsck` finds every rrrgo tree consistent (control characters and
/// unicode names included); the fresh collection's files are not indexed
/// yet, and fsck says so. go-big200k-yaml has no files. Seen failing
/// before issue 30: exit 2 on every YAML tree, and `missing_in_index
/// unicode/café.txt` / `missing_on_disk unicode/caf\351.txt` on
/// go-awkward-json.
#[test]
fn rrrgo_trees_are_fsck_clean() {
    for name in TREES.iter().filter(|n| **n != "go-big200k-yaml") {
        let (_tmp, root) = unpack(name);
        let principal = principal_of(&root);
        let out = Rrr::new().args(["fsck", "--json", &principal]).output();
        let findings: Vec<Value> = stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let kinds: Vec<&str> = findings.iter().map(|f| f["kind"].as_str().unwrap()).collect();
        if *name == "go-empty-yaml" {
            assert_eq!(out.status.code(), Some(1), "{name}: {}", describe("fsck", &out));
            assert_eq!(kinds.iter().filter(|k| **k == "missing_in_index").count(), 40, "{name}: {kinds:?}");
            assert_eq!(kinds.len(), 41, "{name}: {kinds:?}");
        } else {
            assert_eq!(out.status.code(), Some(0), "{name}: {}", describe("fsck", &out));
            assert_eq!(kinds, ["summary"], "{name}: {findings:?}");
        }
    }
}

/// The data clock for the commands on these trees: about an hour after
/// rrrgo wrote them (their epochs are 1796247489…1796248811), so that
/// none is "from the future" whenever the suite runs.
const NOW: &str = "1796252000";

/// A file at `root/rel` (bytes) holding `content`, its directories made.
fn put(root: &Path, rel: &[u8], content: &str) {
    let p = root.join(std::ffi::OsStr::from_bytes(rel));
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, content).unwrap();
}

/// Every file below `root` but the recentfiles and `.rrr/`: name -> content.
fn contents(root: &Path) -> BTreeMap<Vec<u8>, Vec<u8>> {
    tree_files(root)
        .into_iter()
        .map(|n| (n.clone(), fs::read(root.join(std::ffi::OsStr::from_bytes(&n))).unwrap()))
        .collect()
}

/// The mirror holds exactly the origin's files, byte for byte.
#[track_caller]
fn assert_mirrored(origin: &Path, mirror: &Path) {
    let (a, b) = (contents(origin), contents(mirror));
    let shown = |m: &BTreeMap<Vec<u8>, Vec<u8>>, other: &BTreeMap<Vec<u8>, Vec<u8>>| -> Vec<String> {
        m.iter()
            .filter(|(k, v)| other.get(*k) != Some(v))
            .map(|(k, _)| format!("{:?}", String::from_utf8_lossy(k)))
            .collect()
    };
    assert!(a == b, "origin only or different: {:?}; mirror only or different: {:?}", shown(&a, &b), shown(&b, &a));
}

/// `text` with `items` (already in the writer's layout) put first in its
/// `recent` list, after the line `recent:` (YAML) or `"recent": [` (JSON).
fn prepend_items(file: &Path, items: &str) {
    let text = fs::read_to_string(file).unwrap();
    let mark = if text.starts_with('{') { "\"recent\": [\n" } else { "recent:\n" };
    let at = text.find(mark).unwrap_or_else(|| panic!("{}: no {mark:?}", file.display())) + mark.len();
    fs::write(file, format!("{}{items}{}", &text[..at], &text[at..])).unwrap();
}

/// A mirror pass of `origin` (served by `daemon`) into `mirror` at [`NOW`]:
/// exit 0 and complete; its report.
#[track_caller]
fn complete_pass(daemon: &RsyncDaemon, mirror: &Path) -> Value {
    let remote = format!("{}/RECENT.recent", daemon.url("origin"));
    let m = fixture::Mirror { root: mirror.to_path_buf(), remote };
    let v = m.pass(&["--now", NOW], 0);
    assert_eq!(v["complete"], true, "{v}");
    assert!(v["refused"].as_array().is_none_or(|r| r.is_empty()), "{v}");
    v
}

/// An rrrgo YAML origin is mirrored through a real rsync daemon: the
/// bootstrap, then an incremental pass over events appended to its
/// principal in rrrgo's exact layout (yaml.v3: compact items, `%g`
/// epochs, a plain UTF-8 name, yaml.v3's double-quoted escapes for TAB
/// and the C1 controls U+0085 and U+0080, a `|-` block for a newline, a
/// delete). Seen failing before issue 30: the first pass exited 2 at the
/// first recentfile ("epoch \"1.79624749105424e+09\" is not a decimal
/// number"), nothing mirrored.
#[test]
fn an_rrrgo_yaml_origin_is_mirrored_bootstrap_then_incremental() {
    for name in ["go-cpan-yaml", "go-awkward-yaml", "go-controls-yaml"] {
        let (tmp, origin) = unpack(name);
        let daemon = RsyncDaemon::start(&[("origin", &origin)]);
        let mirror = tmp.path().join("mirror");
        let v = complete_pass(&daemon, &mirror);
        assert_eq!(v["bootstrap"], true, "{name}: {v}");
        assert_mirrored(&origin, &mirror);

        // rrrgo records new files and a delete in its principal.
        let new: [(&[u8], &str); 5] = [
            (b"inc/plain-1.0.tar.gz", "inc/plain-1.0.tar.gz"),
            ("inc/naïve.txt".as_bytes(), "inc/naïve.txt"),
            (b"inc/tab\there.txt", r#""inc/tab\there.txt""#),
            ("inc/c1\u{85}\u{80}.txt".as_bytes(), r#""inc/c1\N\x80.txt""#),
            (b"inc/two\nlines.txt", "|-\n        inc/two\n        lines.txt"),
        ];
        let mut items = String::new();
        for (i, (bytes, yaml)) in new.iter().enumerate() {
            put(&origin, bytes, &format!("{name} new {i}\n"));
            items = format!("    - epoch: 1.7962475100000{i}e+09\n      path: {yaml}\n      type: new\n{items}");
        }
        fs::remove_file(origin.join("dirty/batch-dirty.tar.gz")).unwrap();
        items =
            format!("    - epoch: 1.796247511e+09\n      path: dirty/batch-dirty.tar.gz\n      type: delete\n{items}");
        prepend_items(&origin.join("RECENT-1h.yaml"), &items);

        let v = complete_pass(&daemon, &mirror);
        assert_eq!(
            (v["bootstrap"].as_bool(), v["transferred"].as_u64(), v["deleted"].as_u64()),
            (Some(false), Some(5), Some(1)),
            "{name}: {v}"
        );
        assert_eq!(v["read"], serde_json::json!(["RECENT-1h.yaml"]), "{name}: {v}");
        assert_mirrored(&origin, &mirror);
        let listed: BTreeSet<Vec<u8>> = news(s(&mirror.join("RECENT.recent"))).into_iter().map(|n| n.2).collect();
        for (bytes, _) in new {
            assert!(listed.contains(bytes), "{name}: the mirror's news lacks {:?}", String::from_utf8_lossy(bytes));
        }
    }
}

/// An incremental pass over rrrgo JSON events whose names are in
/// U+0080..U+00FF: `inc/naïve.txt` and `inc/résumé.txt` arrive, and a
/// new version of `unicode/café.txt` replaces the old one. Seen failing
/// before issue 30: the pass exited 0, said complete, and asked rsync for
/// `inc/na\357ve.txt` and the like, which do not exist; nothing arrived.
#[test]
fn rrrgo_json_names_in_latin1_range_arrive_by_an_incremental_pass() {
    let (tmp, origin) = unpack("go-awkward-json");
    let daemon = RsyncDaemon::start(&[("origin", &origin)]);
    let mirror = tmp.path().join("mirror");
    let v = complete_pass(&daemon, &mirror);
    assert_eq!(v["bootstrap"], true, "{v}");
    assert_mirrored(&origin, &mirror);

    let names = ["inc/naïve.txt", "inc/résumé.txt", "unicode/café.txt"];
    let mut items = String::new();
    for (i, name) in names.iter().enumerate() {
        put(&origin, name.as_bytes(), &format!("version 2 of {name}\n"));
        // encoding/json's MarshalIndent, as rrrgo writes its files.
        items = format!(
            "    {{\n      \"epoch\": 1796247491.{}1,\n      \"path\": {},\n      \"type\": \"new\"\n    }},\n{items}",
            i + 1,
            serde_json::to_string(name).unwrap()
        );
    }
    prepend_items(&origin.join("RECENT-1h.json"), &items);
    let v = complete_pass(&daemon, &mirror);
    assert_eq!((v["bootstrap"].as_bool(), v["transferred"].as_u64()), (Some(false), Some(3)), "{v}");
    assert_mirrored(&origin, &mirror);
    for name in names {
        assert_eq!(fs::read_to_string(mirror.join(name)).unwrap(), format!("version 2 of {name}\n"));
    }
}

/// `rrr update` and `rrr aggregate` on a tree rrrgo wrote: every event is
/// kept with its epoch's value, the new one is recorded, the dirtymark is
/// kept, and every file rrr rewrites is in rrr's own format (YAML::Syck's
/// layout, decimal epochs, rrr's Producers); `fsck` stays clean, and a
/// mirror of the tree made while rrrgo wrote it goes on incrementally (the
/// switch of writers README.mirror section 1 describes). Seen failing
/// before issue 30: both writers exited 2 at the first recentfile.
#[test]
fn rrr_writers_on_an_rrrgo_tree_keep_every_event() {
    for name in ["go-cpan-yaml", "go-controls-yaml", "go-cpan-json", "go-awkward-json"] {
        let (tmp, root) = unpack(name);
        let principal = principal_of(&root);
        let daemon = RsyncDaemon::start(&[("origin", &root)]);
        let mirror = tmp.path().join("mirror");
        complete_pass(&daemon, &mirror);
        let dirtymark = |p: &str| {
            let file = fs::canonicalize(p).unwrap();
            let json = file.extension().is_some_and(|x| x == "json");
            let fmt = if json { rrr::recentfile::Format::Json } else { rrr::recentfile::Format::Yaml };
            rrr::recentfile::parse_bytes(&fs::read(file).unwrap(), fmt).unwrap().meta.dirtymark.map(|e| e.into_string())
        };
        let marked = dirtymark(&principal);
        let before = news(&principal);
        let oracle = oracle_epochs(&root);
        put(&root, b"inc/new-1.0.tar.gz", "new\n");
        Rrr::new().args(["--now", NOW, "update", &principal, s(&root.join("inc/new-1.0.tar.gz"))]).assert_ok();
        Rrr::new().args(["--now", NOW, "aggregate", "--force", &principal]).assert_ok();
        let after = news(&principal);
        assert_eq!(after[0], (format!("{NOW}.0"), "new".to_string(), b"inc/new-1.0.tar.gz".to_vec()), "{name}");
        assert_eq!(after[1..], before[..], "{name}: every path's newest event, epochs by value");
        // Every file of the cascade, rewritten by aggregate --force, in rrr's format.
        let suffix = if name.ends_with("json") { "json" } else { "yaml" };
        for interval in oracle.keys() {
            let text = fs::read_to_string(root.join(format!("RECENT-{interval}.{suffix}"))).unwrap();
            if suffix == "yaml" {
                assert!(text.starts_with("--- \nmeta: \n  Producers: \n"), "{name} {interval}: {text}");
            } else {
                assert!(!text.contains('\n') && text.contains("\"rrr\":"), "{name} {interval}: {text}");
            }
            assert!(!text.contains("e+09"), "{name} {interval}: an exponent epoch left");
        }
        // Z, into which aggregate --force cascaded everything, holds every
        // live path's newest event with its epoch's value (the news above
        // are checked against the oracle's epochs by the first test).
        let z = fs::read(root.join(format!("RECENT-Z.{suffix}"))).unwrap();
        let fmt = if suffix == "json" { rrr::recentfile::Format::Json } else { rrr::recentfile::Format::Yaml };
        let z = rrr::recentfile::parse_bytes(&z, fmt).unwrap();
        let have: BTreeSet<(&str, &[u8])> = z.events.iter().map(|e| (e.epoch.as_str(), e.path.as_bytes())).collect();
        for (epoch, kind, path) in after.iter().filter(|n| n.1 == "new") {
            assert!(
                have.contains(&(epoch.as_str(), path.as_slice())),
                "{name}: Z lacks {kind} {epoch} {:?}",
                String::from_utf8_lossy(path)
            );
        }
        let out = Rrr::new().args(["fsck", "--json", &principal]).output();
        assert_eq!(out.status.code(), Some(0), "{name}: {}", describe("fsck", &out));
        assert_eq!(dirtymark(&principal), marked, "{name}");
        let v = complete_pass(&daemon, &mirror);
        assert_eq!((v["bootstrap"].as_bool(), v["transferred"].as_u64()), (Some(false), Some(1)), "{name}: {v}");
        assert_mirrored(&root, &mirror);
    }
}
