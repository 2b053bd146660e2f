//! The origin commands replaying the Perl reference's scenarios with a
//! pinned clock: same events, epochs, live sets and (YAML) bytes except
//! `Producers`, plus the cases where rrr deliberately differs.

use crate::util::*;
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

/// A small origin: `n` files, init + aggregate at T0.
fn small_origin(n: usize) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("origin");
    fs::create_dir(&root).unwrap();
    for i in 0..n {
        touch(&root, &format!("d/f{i}"), Some(1_699_990_000 + i as u64 * 10));
    }
    at("1700000000.5", &["init", root.to_str().unwrap()]);
    at("1700000001.5", &["aggregate", "--force", &principal(&root)]);
    (tmp, root)
}

fn z_paths(root: &Path) -> Vec<(String, String)> {
    let z = rrr::store::read_file(&root.join("RECENT-Z.yaml")).unwrap().unwrap();
    z.events.iter().map(|e| (e.path.to_str().unwrap().to_string(), e.kind.to_string())).collect()
}

/// An aggregate with nothing due stops before the big files (a broken Z
/// does not matter then); a forced one reads Z, on its second thread, and
/// its error names the file.
#[test]
fn aggregate_reads_z_only_when_the_cascade_reaches_it() {
    let (_tmp, root) = small_origin(3);
    let z = root.join("RECENT-Z.yaml");
    fs::write(&z, "--- \nmeta: [broken\n").unwrap();
    set_mtime(&z, 1_700_000_001);
    touch(&root, "d/new", None);
    at("1700000100.5", &["update", &principal(&root), "d/new"]);
    at("1700000101.5", &["aggregate", &principal(&root)]);
    let o = rrr(&["--now", "1700000102.5", "aggregate", "--force", &principal(&root)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("RECENT-Z.yaml"), "{}", stderr(&o));
    assert_eq!(fs::read_to_string(&z).unwrap(), "--- \nmeta: [broken\n", "Z untouched");
}

/// Locks go smallest first for every writer. aggregate reads Z ahead on a
/// second thread, but must not take Z's lock before its turn: holding Z
/// while waiting for 1d could deadlock with a writer holding 1d and waiting
/// for Z. Here a live process holds 1d's lock; Z's lock stays free until
/// it lets go, then the aggregate completes.
#[test]
fn aggregate_takes_locks_smallest_first() {
    let (_tmp, root) = small_origin(3);
    let mut holder = std::process::Command::new("sleep").arg("60").spawn().unwrap();
    let lock = root.join("RECENT-1d.yaml.lock");
    fs::create_dir(&lock).unwrap();
    fs::write(lock.join("process"), format!("{}\n", holder.id())).unwrap();
    let mut agg = Rrr::new()
        .args(["--now", "1700000101.5", "--locktimeout", "60", "aggregate", "--force", &principal(&root)])
        .spawn();
    let z_lock = root.join("RECENT-Z.yaml.lock");
    for _ in 0..20 {
        std::thread::sleep(Duration::from_millis(50));
        assert!(agg.try_wait().unwrap().is_none(), "aggregate did not wait for the 1d lock");
        assert!(!z_lock.exists(), "Z locked while waiting for 1d");
    }
    holder.kill().unwrap();
    holder.wait().unwrap();
    assert!(agg.wait().unwrap().success());
    assert!(!z_lock.exists() && !lock.exists());
}

/// Spec 9.4 fixed: a delete that is the only change reaching Z removes the
/// path from Z, and the path does not come back after the delete ages out.
#[test]
fn delete_only_change_reaches_z() {
    let (_tmp, root) = small_origin(3);
    assert!(z_paths(&root).iter().any(|(p, _)| p == "d/f1"));
    fs::remove_file(root.join("d/f1")).unwrap();
    at("1700000100.5", &["update", "--delete", &principal(&root), "d/f1"]);
    at("1700000101.5", &["aggregate", "--force", &principal(&root)]);
    assert!(!z_paths(&root).iter().any(|(p, _)| p == "d/f1"), "{:?}", z_paths(&root));
    // A year later, with the delete aged out of every smaller file, the path stays gone.
    for t in ["1700100000.5", "1701000000.5", "1710000000.5", "1740000000.5"] {
        at(t, &["aggregate", "--force", &principal(&root)]);
    }
    let news = ok(&["news", "--local", &principal(&root), "--skip-deletes"]);
    assert!(!news.contains("d/f1"), "{news}");
    let o = rrr(&["fsck", &principal(&root)]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    // With --keep-deletes the delete itself stays in Z.
    let (_tmp2, root2) = small_origin(2);
    fs::remove_file(root2.join("d/f0")).unwrap();
    at("1700000100.5", &["update", "--delete", &principal(&root2), "d/f0"]);
    at("1700000101.5", &["aggregate", "--force", "--keep-deletes", &principal(&root2)]);
    assert!(z_paths(&root2).contains(&("d/f0".to_string(), "delete".to_string())));
}

#[test]
fn news_edges_are_exact_and_strict() {
    let (_tmp, root) = small_origin(2);
    for (t, p) in [("1700000100.5", "n/a"), ("1700000100.5", "n/b"), ("1700000100.5", "n/c")] {
        touch(&root, p, None);
        at(t, &["update", &principal(&root), p]);
    }
    // Same tick: bumped epochs that a float compare would call equal.
    let all = ok(&["news", "--local", &principal(&root)]);
    let first3: Vec<&str> = all.lines().take(3).map(|l| l.split('\t').next().unwrap()).collect();
    assert_eq!(first3, ["1700000100.50000016", "1700000100.5000001", "1700000100.5"]);
    let after = ok(&["news", "--local", &principal(&root), "--after", "1700000100.5"]);
    assert_eq!(after.lines().count(), 2, "strictly after, exact: {after}");
    let after_future = ok(&["news", "--local", &principal(&root), "--after", "1800000000"]);
    assert_eq!(after_future, "", "a future --after gives nothing (the reference gave everything)");
    let before = ok(&["news", "--local", &principal(&root), "--before", "1700000100.5000001"]);
    assert!(before.lines().next().unwrap().starts_with("1700000100.5\t"), "{before}");
    let max = ok(&["news", "--local", &principal(&root), "--max", "2"]);
    assert_eq!(max.lines().count(), 2);
    let one = ok(&["news", "--local", &principal(&root), "--contains-path", "d/f0"]);
    assert_eq!(one.lines().count(), 1);
    assert!(one.ends_with("\tnew\td/f0\n"));
    let none = ok(&["news", "--local", &principal(&root), "--before", "0"]);
    assert_eq!(none, "");
}

#[test]
fn fsck_finds_each_kind_of_difference_and_repairs() {
    let (_tmp, root) = small_origin(3);
    assert_eq!(rrr(&["fsck", &principal(&root)]).status.code(), Some(0));
    touch(&root, "extra/new-file", None);
    fs::remove_file(root.join("d/f2")).unwrap();
    let o = rrr(&["fsck", "--json", &principal(&root)]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let kinds: Vec<serde_json::Value> = stdout(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(kinds.iter().any(|k| k["kind"] == "missing_in_index" && k["path"] == "extra/new-file"), "{kinds:?}");
    assert!(kinds.iter().any(|k| k["kind"] == "missing_on_disk" && k["path"] == "d/f2"), "{kinds:?}");
    assert_eq!(kinds.last().unwrap()["kind"], "summary");
    // Repair records them at the current time without moving the dirtymark.
    let before = rrr::store::read_file(&root.join("RECENT-1h.yaml")).unwrap().unwrap().meta.dirtymark;
    let o = rrr(&["--now", "1700000200.5", "fsck", "--repair", &principal(&root)]);
    assert_eq!(o.status.code(), Some(1));
    let after = rrr::store::read_file(&root.join("RECENT-1h.yaml")).unwrap().unwrap();
    assert_eq!(after.meta.dirtymark, before);
    assert!(after.events.iter().all(|e| e.epoch.as_str().starts_with("1700000200.5")));
    assert_eq!(rrr(&["fsck", &principal(&root)]).status.code(), Some(0));
    // A gap between adjacent files, and an unreadable one.
    let six = root.join("RECENT-6h.yaml");
    let text = fs::read_to_string(&six).unwrap();
    let mut rf = rrr::store::read_file(&six).unwrap().unwrap();
    rf.events.clear();
    rf.events.push(rrr::recentfile::Event::new(
        rrr::epoch::Epoch::parse("1600000000.0").unwrap(),
        "old",
        rrr::recentfile::EventKind::New,
    ));
    let prod = rrr::recentfile::Producer { program: "t".into(), time: rrr::epoch::Epoch::parse("1").unwrap() };
    fs::write(&six, rrr::recentfile::serialize(&rf, rrr::recentfile::Format::Yaml, &prod)).unwrap();
    let o = rrr(&["fsck", &principal(&root)]);
    assert!(stdout(&o).contains("gap\tRECENT-6h.yaml") || stdout(&o).contains("gap\tRECENT-1h.yaml"), "{}", stdout(&o));
    fs::write(&six, text.replacen("epoch: '", "epoch: 'x", 1)).unwrap();
    let o = rrr(&["fsck", "--repair", &principal(&root)]);
    assert_eq!(o.status.code(), Some(2), "repair refused on an unreadable file");
    assert!(stdout(&o).contains("unreadable\tRECENT-6h.yaml"), "{}", stdout(&o));
}

#[test]
fn racing_updates_lose_nothing() {
    let (_tmp, root) = small_origin(1);
    let p = principal(&root);
    for w in 0..4 {
        for i in 0..50 {
            touch(&root, &format!("w{w}/f{i}"), None);
        }
    }
    for i in 0..20 {
        touch(&root, &format!("single/s{i}"), None);
    }
    let children: Vec<_> = (0..4)
        .map(|w| {
            let input: String = (0..50).map(|i| format!("new w{w}/f{i}\n")).collect();
            (w, Rrr::new().args(["update", "--stdin", &p]).stdin(input).spawn())
        })
        .collect();
    let more: Vec<_> = (0..20).map(|i| Rrr::new().args(["update", &p, &format!("single/s{i}")]).spawn()).collect();
    for (_, mut c) in children {
        assert!(c.wait().unwrap().success());
    }
    for mut c in more {
        assert!(c.wait().unwrap().success());
    }
    let news = ok(&["news", "--local", &p]);
    assert_eq!(news.lines().count(), 1 + 4 * 50 + 20, "{news}");
    let rf = rrr::store::read_file(&root.join("RECENT-1h.yaml")).unwrap().unwrap();
    assert!(rf.events.windows(2).all(|w| w[0].epoch > w[1].epoch));
    assert!(!root.join("RECENT-1h.yaml.lock").exists());
    let temps: Vec<_> =
        fs::read_dir(&root).unwrap().flatten().filter(|e| e.file_name().to_string_lossy().ends_with(".new")).collect();
    assert!(temps.is_empty(), "no writer's temp file is left: {temps:?}");
}

#[test]
fn update_refuses_paths_outside_the_root() {
    let (tmp, root) = small_origin(1);
    let sibling = tmp.path().join("origin2/file");
    for bad in [sibling.to_str().unwrap(), "/etc/passwd", "../x"] {
        let o = rrr(&["update", &principal(&root), bad]);
        assert_eq!(o.status.code(), Some(2), "{bad:?}");
        assert!(stderr(&o).contains("outside"), "{bad:?}: {}", stderr(&o));
    }
    let inside = root.join("d/../d/f0");
    ok(&["update", &principal(&root), inside.to_str().unwrap()]);
    assert!(ok(&["news", "--local", &principal(&root), "--max", "1"]).ends_with("\td/f0\n"));
}

#[test]
fn update_refuses_what_would_record_nonsense() {
    let (tmp, root) = small_origin(1);
    fs::create_dir_all(root.join(".rrr")).unwrap();
    fs::write(root.join(".rrr/state.json"), "{}").unwrap();
    let p = principal(&root);
    let principal_file = root.join("RECENT-1h.yaml");
    let before = fs::read(&principal_file).unwrap();
    let refused = |args: &[&str], needle: &str| {
        let mut a = vec!["--now", "1700000100.5", "update"];
        a.extend_from_slice(args);
        let o = rrr(&a);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{args:?}: wanted {needle:?} in {}", stderr(&o));
    };
    refused(&[&p, "d/missing"], "d/missing: no such file");
    refused(&[&p, "d"], "d: is a directory");
    for own in [
        "RECENT-1h.yaml",
        "RECENT.recent",
        "RECENT-Z.yaml",
        "RECENT-1h.yaml.lock/process",
        "RECENT-1h.yaml.new",
        ".rrr/state.json",
    ] {
        refused(&[&p, own], "one of rrr's own files");
    }
    refused(&[&p, root.join("RECENT-6h.yaml").to_str().unwrap()], "RECENT-6h.yaml");
    for (epoch, needle) in
        [("99999999999", "more than an hour after the clock"), ("0", "not a positive"), ("0.0", "not a positive")]
    {
        refused(&["--epoch", epoch, &p, "d/f0"], needle);
    }
    refused(&["--epoch", "abc", &p, "d/f0"], "not a decimal number");
    // A whole batch is refused for one bad line.
    let o = Rrr::new().args(["update", "--stdin", &p]).stdin("new d/f0\n0 new d/f0\n").output();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("stdin line 2: epoch 0"), "{}", stderr(&o));
    // A path relative to the current directory, not the root: named with
    // the path to give instead, for a new file and for a delete.
    let origin_name = root.file_name().unwrap().to_str().unwrap();
    for (args, wanted) in [(vec!["update"], "d/f0"), (vec!["update", "--delete"], "d/gone")] {
        let (raw, principal_arg) = (format!("{origin_name}/{wanted}"), format!("{origin_name}/RECENT.recent"));
        let mut a = args.clone();
        a.extend([&*principal_arg, &*raw]);
        let o = Rrr::new().args(&a).current_dir(tmp.path()).output();
        assert_eq!(o.status.code(), Some(2), "{a:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(&format!("give {wanted} or an absolute path")), "{}", stderr(&o));
    }
    assert_eq!(fs::read(&principal_file).unwrap(), before, "nothing was recorded");
    // What is fine: a file on disk, a delete of a gone one, an epoch within the hour.
    at("1700000100.5", &["update", &p, "d/f0"]);
    at("1700000100.5", &["update", "--delete", &p, "d/gone"]);
    at("1700000100.5", &["update", "--epoch", "1700003000", &p, "d/f0"]);
}

#[test]
fn fsck_after_a_plain_init_is_clean() {
    // Only the principal exists until the first aggregate: the other files
    // are not missing yet (the reference's fsck exits 0 too).
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("t");
    touch(&root, "a/one", Some(1_700_000_000));
    at("1700000100.5", &["init", "--aggregator", AGG, root.to_str().unwrap()]);
    let o = rrr(&["fsck", &principal(&root)]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    at("1700000200.5", &["aggregate", &principal(&root)]);
    assert_eq!(rrr(&["fsck", &principal(&root)]).status.code(), Some(0));
    // Once written, a missing file is a finding, at the end of the chain too.
    fs::remove_file(root.join("RECENT-Z.yaml")).unwrap();
    let o = rrr(&["fsck", &principal(&root)]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stdout(&o), "missing_recentfile\tRECENT-Z.yaml\n");
    fs::remove_file(root.join("RECENT-1d.yaml")).unwrap();
    let o = rrr(&["fsck", &principal(&root)]);
    assert!(stdout(&o).contains("missing_recentfile\tRECENT-1d.yaml"), "{}", stdout(&o));
}

#[test]
fn init_refuses_existing_collection_and_ignores_own_files() {
    let (_tmp, root) = small_origin(2);
    fs::create_dir_all(root.join(".rrr")).unwrap();
    fs::write(root.join(".rrr/state.json"), "{}").unwrap();
    fs::create_dir_all(root.join("RECENT-1h.yaml.lock")).unwrap();
    fs::write(root.join("RECENT-1h.yaml.lock/process"), "1\n").unwrap();
    fs::write(root.join("RECENT-6h.yaml.4242.new"), "a writer's temp file").unwrap();
    let o = rrr(&["init", root.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--force"), "{}", stderr(&o));
    fs::remove_dir_all(root.join("RECENT-1h.yaml.lock")).unwrap();
    ok(&["--now", "1700000500.5", "init", "--force", root.to_str().unwrap()]);
    let news = ok(&["news", "--local", &principal(&root)]);
    let paths: Vec<&str> = news.lines().map(|l| l.split('\t').nth(2).unwrap()).collect();
    assert_eq!(paths.len(), 2, "only the two tree files: {paths:?}");
    assert!(!root.join("RECENT-Z.yaml").exists(), "--force replaced the whole collection");
}

#[test]
fn init_of_2000_same_mtime_files_writes_distinct_decimal_epochs() {
    // A freshly unpacked tree: every file has one mtime. Past about 142
    // files the bump must not fall back on `1700000000.00`, the same
    // number as `1700000000.0`: the epochs must differ as numbers.
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("t");
    for i in 0..2000 {
        touch(&root, &format!("d{}/f{i}", i % 7), Some(1_700_000_000));
    }
    at("1700000100.5", &["init", root.to_str().unwrap()]);
    let text = fs::read_to_string(root.join("RECENT-1h.yaml")).unwrap();
    let epochs: Vec<&str> =
        text.lines().filter_map(|l| l.strip_prefix("    epoch: ")).map(|e| e.trim_matches('\'')).collect();
    assert_eq!(epochs.len(), 2000);
    for w in epochs.windows(2) {
        assert!(decimal_key(w[0]) > decimal_key(w[1]), "{} and {} are not strictly decreasing numbers", w[0], w[1]);
    }
    assert!(epochs.iter().all(|e| e.len() <= 64), "epochs stay at most 64 characters");
    assert_eq!(*epochs.last().unwrap(), "1700000000.0");
    // Same-tick updates (a pinned clock) stay distinct numbers too.
    let p = principal(&root);
    for i in 0..20 {
        at("1700000200", &["update", &p, &format!("d{}/f{i}", i % 7)]);
    }
    let rf = rrr::store::read_file(&root.join("RECENT-1h.yaml")).unwrap().unwrap();
    let keys: Vec<String> = rf.events.iter().map(|e| decimal_key(e.epoch.as_str())).collect();
    assert!(keys.windows(2).all(|w| w[0] > w[1]));
    assert_eq!(rf.events.last().unwrap().epoch.as_str(), "1700000000.0");
    assert!(rf.events.iter().take(20).all(|e| e.epoch.as_str().starts_with("1700000200.")), "{:?}", &rf.events[..3]);
}

/// No name is special by accident (issue 31): ordinary files that look
/// like rsync's temp files (`.env.sample`: a dot, a name, a dot and six
/// characters) or start like rrr's own are indexed, updated and checked
/// like any other. Only a file of that shape that changed within the last
/// minute (an rsync transfer in flight) is left out, and never in silence:
/// init warns and fsck names it (`not_indexed`, exit 0), as it names the
/// working files of other tools (`.~tmp~/`, `.FRMRecent-*`).
#[test]
fn names_that_only_look_special_are_indexed() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("origin");
    let temp_shaped = [".env.sample", "www/.htaccess.backup", ".bashrc.custom"];
    let near_ours = ["RECENT-1h.yaml.backup", "RECENT-notes.txt", "notes.new", "www/x.lock/process"];
    for n in temp_shaped.iter().chain(&near_ours).chain(&["d/f"]) {
        touch(&root, n, Some(1_699_990_000));
    }
    touch(&root, "a/.~tmp~/partial", None);
    touch(&root, ".FRMRecent-RECENT-1h.yaml-abcd.yaml", None);
    // Just written: each of the three may be an rsync temp file in flight.
    let o = Rrr::new().args(["init", s(&root)]).assert_ok();
    for n in temp_shaped {
        assert!(stderr(&o).contains(&format!("not indexed: {}", root.join(n).display())), "{n}: {}", stderr(&o));
    }
    let paths = |root: &Path| -> Vec<String> {
        let news = ok(&["news", "--local", &principal(root)]);
        let mut v: Vec<String> = news.lines().map(|l| l.split('\t').nth(2).unwrap().to_string()).collect();
        v.sort();
        v
    };
    let mut want: Vec<String> = near_ours.iter().chain(&["d/f"]).map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(paths(&root), want);
    let o = rrr(&["fsck", "--json", &principal(&root)]);
    assert_eq!(o.status.code(), Some(0), "files in flight are no difference: {}", stdout(&o));
    let lines: Vec<serde_json::Value> = stdout(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let not_indexed: Vec<&str> =
        lines.iter().filter(|v| v["kind"] == "not_indexed").map(|v| v["path"].as_str().unwrap()).collect();
    for n in temp_shaped.iter().chain(&["a/.~tmp~", ".FRMRecent-RECENT-1h.yaml-abcd.yaml"]) {
        assert!(not_indexed.contains(n), "{n} not reported: {not_indexed:?}");
    }
    assert_eq!(lines.last().unwrap()["not_indexed"], 5, "{:?}", lines.last());
    // Two minutes later (the clock pinned there) they are ordinary files.
    let later = (std::time::SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() + 120).to_string();
    let o = rrr(&["--now", &later, "fsck", &principal(&root)]);
    assert_eq!(o.status.code(), Some(1));
    for n in temp_shaped {
        assert!(stdout(&o).contains(&format!("missing_in_index\t{n}")), "{n}: {}", stdout(&o));
    }
    ok(&["--now", &later, "init", "--force", s(&root)]);
    let mut want: Vec<String> = temp_shaped.iter().chain(&near_ours).chain(&["d/f"]).map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(paths(&root), want);
    // update takes them as any file; rrr's own names it still refuses.
    ok(&["update", &principal(&root), ".env.sample", "RECENT-1h.yaml.backup"]);
    fs::remove_file(root.join(".bashrc.custom")).unwrap();
    ok(&["update", "--delete", &principal(&root), ".bashrc.custom"]);
    fs::write(root.join("RECENT-1h.yaml.4242.new"), "x").unwrap();
    let o = rrr(&["update", &principal(&root), "RECENT-1h.yaml.4242.new"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    fs::remove_file(root.join("RECENT-1h.yaml.4242.new")).unwrap();
    let o = rrr(&["--now", &later, "fsck", &principal(&root)]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}
