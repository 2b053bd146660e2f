//! The origin commands replaying the Perl reference's scenarios with a
//! pinned clock: same events, epochs, live sets and (YAML) bytes except
//! `Producers`, plus the cases where rrr deliberately differs.

mod common;

use common::*;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

const AGG: &str = "1h,6h,1d,1W,1M,1Q,1Y,Z";

fn set_mtime(p: &Path, secs: u64) {
    let f = fs::File::options().write(true).open(p).unwrap();
    f.set_modified(UNIX_EPOCH + Duration::from_secs(secs)).unwrap();
}

fn touch(root: &Path, rel: &str, mtime: Option<u64>) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(&p, rel).unwrap();
    if let Some(m) = mtime {
        set_mtime(&p, m);
    }
}

/// The tree of a fixture step: its files with the mtimes of their `new` events.
fn tree_from_fixture(step: &Path, root: &Path) {
    let state = fs::read_to_string(step.join("_index_state.tsv")).unwrap();
    for line in state.lines() {
        let cols: Vec<&str> = line.split('\t').collect();
        if cols[1] == "new" {
            let secs = cols[0].split('.').next().unwrap().parse().unwrap();
            touch(root, cols[2], Some(secs));
        }
    }
}

fn principal(root: &Path) -> String {
    root.join("RECENT.recent").to_str().unwrap().to_string()
}

fn at(now: &str, args: &[&str]) -> String {
    let mut a = vec!["--now", now];
    a.extend_from_slice(args);
    ok(&a)
}

/// Every recentfile of the fixture step equals ours (YAML bytes except
/// Producers; JSON as documents), with the same mtimes.
fn assert_same_as(step: &Path, root: &Path) {
    let mut names: Vec<String> = fs::read_dir(step)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_str().unwrap().to_string())
        .filter(|n| n.starts_with("RECENT-"))
        .collect();
    names.sort();
    let mut ours: Vec<String> = fs::read_dir(root)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_str().unwrap().to_string())
        .filter(|n| n.starts_with("RECENT-"))
        .collect();
    ours.sort();
    assert_eq!(ours, names, "recentfiles in {}", step.display());
    let mtimes = fs::read_to_string(step.join("_mtimes.txt")).unwrap();
    for name in &names {
        let want = fs::read_to_string(step.join(name)).unwrap();
        let got = fs::read_to_string(root.join(name)).unwrap();
        if name.ends_with(".yaml") {
            assert_eq!(mask_producers(&got), mask_producers(&want), "{} {name}", step.display());
        } else {
            let a = rrr::store::read_file(&root.join(name)).unwrap().unwrap();
            let b = rrr::store::read_file(&step.join(name)).unwrap().unwrap();
            assert_eq!(a.events, b.events, "{} {name}", step.display());
            let (mut ma, mut mb) = (a.meta.clone(), b.meta.clone());
            ma.producers.clear();
            mb.producers.clear();
            assert_eq!(ma, mb, "{} {name}", step.display());
        }
        let want_mtime: u64 = mtimes
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{name} in _mtimes.txt"))
            .parse()
            .unwrap();
        let got_mtime = fs::metadata(root.join(name)).unwrap().modified().unwrap().duration_since(UNIX_EPOCH).unwrap();
        assert_eq!(got_mtime.as_secs(), want_mtime, "mtime of {name} in {}", step.display());
    }
    assert_eq!(fs::read_link(root.join("RECENT.recent")).unwrap(), fs::read_link(step.join("RECENT.recent")).unwrap());
    let news = ok(&["news", "--local", &principal(root)]);
    assert_eq!(news, fs::read_to_string(step.join("_index_state.tsv")).unwrap(), "{}", step.display());
}

fn scenario(name: &str) -> PathBuf {
    fixtures().join("perl-0.4.3").join(name)
}

fn step(scen: &Path, prefix: &str) -> PathBuf {
    fs::read_dir(scen)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.file_name().unwrap().to_str().unwrap().starts_with(prefix))
        .unwrap()
}

/// s1 then s2: init, aggregate, news, deletes, aggregation over 400 days.
#[test]
fn replay_s1_and_s2() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("origin");
    fs::create_dir(&root).unwrap();
    let s1 = scenario("s1-init20");
    tree_from_fixture(&step(&s1, "step1"), &root);
    at("1700000000.5", &["init", "--aggregator", AGG, root.to_str().unwrap()]);
    assert_same_as(&step(&s1, "step1"), &root);
    at("1700000060.5", &["aggregate", &principal(&root)]);
    assert_same_as(&step(&s1, "step2"), &root);

    let s2 = scenario("s2-news-deletes-aggregate");
    for k in 1..=5u64 {
        let t = 1_700_000_600 + (k - 1) * 600;
        let rel = format!("id/N/NE/NEWAUTHOR/New-Dist-1.0{k}.tar.gz");
        touch(&root, &rel, Some(t));
        at(&format!("{t}.5"), &["update", &principal(&root), &rel]);
        at(&format!("{}.5", t + 1), &["aggregate", &principal(&root)]);
    }
    assert_same_as(&step(&s2, "step1"), &root);
    for (t, rel) in [
        (1_700_003_600u64, "id/C/CJ/CJXBY/Acme-Math-4.20.tar.gz"),
        (1_700_004_200, "id/N/NE/NEWAUTHOR/New-Dist-1.02.tar.gz"),
    ] {
        fs::remove_file(root.join(rel)).unwrap();
        at(&format!("{t}.5"), &["update", "--delete", &principal(&root), rel]);
        at(&format!("{}.5", t + 1), &["aggregate", &principal(&root)]);
    }
    assert_same_as(&step(&s2, "step2"), &root);
    for (n, offset) in [(3, 10_800u64), (4, 90_000), (5, 691_200), (6, 3_456_000), (7, 8_640_000), (8, 34_560_000)] {
        at(&format!("{}.5", 1_700_000_000 + offset), &["aggregate", &principal(&root)]);
        assert_same_as(&step(&s2, &format!("step{n}")), &root);
    }
    let t = 1_700_000_000 + 34_560_000 + 60;
    let rel = "id/L/LA/LATECOMER/Late-1.00.tar.gz";
    touch(&root, rel, Some(t));
    at(&format!("{t}.5"), &["update", &principal(&root), rel]);
    at(&format!("{}.5", t + 1), &["aggregate", &principal(&root)]);
    assert_same_as(&step(&s2, "step9"), &root);
    // And the tree agrees with the index.
    let o = rrr(&["fsck", &principal(&root)]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
}

/// s5: the JSON serializer.
#[test]
fn replay_s5_json() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("origin");
    fs::create_dir(&root).unwrap();
    let s5 = scenario("s5-json");
    tree_from_fixture(&step(&s5, "step1"), &root);
    at("1700000000.5", &["init", "--format", "json", "--aggregator", "1h,1d,Z", root.to_str().unwrap()]);
    at("1700000060.5", &["aggregate", &principal(&root)]);
    assert_same_as(&step(&s5, "step1"), &root);
    touch(&root, "id/J/JS/JSON/Js-6.tar.gz", Some(1_700_000_100));
    at("1700000100.5", &["update", &principal(&root), "id/J/JS/JSON/Js-6.tar.gz"]);
    fs::remove_file(root.join("id/J/JS/JSON/Js-1.tar.gz")).unwrap();
    at("1700000160.5", &["update", "--delete", &principal(&root), "id/J/JS/JSON/Js-1.tar.gz"]);
    at("1700000200.5", &["aggregate", &principal(&root)]);
    assert_same_as(&step(&s5, "step2"), &root);
    let text = fs::read_to_string(root.join("RECENT-1h.json")).unwrap();
    assert!(!text.ends_with('\n'));
    assert!(text.contains("\"epoch\":\"1700000160.5\""), "epochs are strings: {text}");
}
