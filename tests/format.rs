//! The format core against the Perl reference: every fixture file read and
//! written again gives the same bytes (except `Producers`), news equals the
//! ground truth, overview equals the reference's table, bad input fails clearly.

mod common;

use common::*;
use rrr::epoch::Epoch;
use rrr::recentfile::{self, Format, Producer};
use rrr::store;
use std::fs;
use std::path::Path;

fn recentfiles_in(step: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = fs::read_dir(step)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_str().unwrap();
            n.starts_with("RECENT-") && (n.ends_with(".yaml") || n.ends_with(".json"))
        })
        .collect();
    v.sort();
    v
}

#[test]
fn every_fixture_file_roundtrips() {
    let mut yaml_files = 0;
    let mut json_files = 0;
    for step in fixture_steps() {
        for file in recentfiles_in(&step) {
            let original = fs::read_to_string(&file).unwrap();
            let rf = store::read_file(&file).unwrap().unwrap();
            let program = rf.meta.producers.iter().find(|(k, _)| k == "$0").unwrap().1.clone();
            let time = Epoch::parse(rf.meta.produced().unwrap()).unwrap();
            let format = store::format_of(&file).unwrap();
            let written = String::from_utf8(recentfile::serialize(&rf, format, &Producer { program, time })).unwrap();
            match format {
                Format::Yaml => {
                    yaml_files += 1;
                    assert_eq!(mask_producers(&written), mask_producers(&original), "{}", file.display());
                }
                Format::Json => {
                    json_files += 1;
                    assert!(!written.ends_with('\n') && !written.contains('\n'));
                    let again = recentfile::parse_bytes(written.as_bytes(), Format::Json).unwrap();
                    assert_eq!(again.events, rf.events, "{}", file.display());
                    let mut m1 = again.meta.clone();
                    let mut m2 = rf.meta.clone();
                    m1.producers.clear();
                    m2.producers.clear();
                    assert_eq!(m1, m2, "{}", file.display());
                }
            }
        }
    }
    assert!(yaml_files > 80 && json_files == 6, "{yaml_files} yaml, {json_files} json");
}

#[test]
fn news_equals_index_state_and_live_set_equals_tree() {
    for step in fixture_steps() {
        let principal = step.join("RECENT.recent");
        let got = ok(&["news", "--local", principal.to_str().unwrap()]);
        let want = fs::read_to_string(step.join("_index_state.tsv")).unwrap();
        assert_eq!(got, want, "{}", step.display());
        let mut live: Vec<&str> = got
            .lines()
            .filter(|l| l.split('\t').nth(1) == Some("new"))
            .map(|l| l.split('\t').nth(2).unwrap())
            .collect();
        live.sort();
        let mut tree: Vec<String> =
            fs::read_to_string(step.join("_tree_files.txt")).unwrap().lines().map(str::to_string).collect();
        tree.sort();
        assert_eq!(live, tree, "{}", step.display());
    }
}

/// The reference prints the principal twice (spec 11.2); rrr once.
fn without_duplicate_rows(table: &str) -> String {
    let mut seen = std::collections::HashSet::new();
    table.split_inclusive('\n').filter(|l| seen.insert(l.to_string())).collect()
}

#[test]
fn overview_equals_reference_table() {
    for step in fixture_steps() {
        let principal = step.join("RECENT.recent");
        for (args, file) in [(vec![], "_rrr-overview.txt"), (vec!["--verbose"], "_rrr-overview-verbose.txt")] {
            let mut a = vec!["overview", principal.to_str().unwrap()];
            a.extend(args);
            let got = ok(&a);
            let want = without_duplicate_rows(&fs::read_to_string(step.join(file)).unwrap());
            assert_eq!(got, want, "{} {file}", step.display());
        }
    }
}

#[test]
fn news_json_lines_deserialize() {
    let step = fixtures().join("perl-0.4.3/s2-news-deletes-aggregate/step2-after-2-deletes");
    let out =
        ok(&["news", "--json", "--after", "1700001800.5", "--local", step.join("RECENT.recent").to_str().unwrap()]);
    let rows: Vec<serde_json::Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let got: Vec<(&str, &str)> =
        rows.iter().map(|r| (r["epoch"].as_str().unwrap(), r["type"].as_str().unwrap())).collect();
    assert_eq!(
        got,
        [("1700004200.5", "delete"), ("1700003600.5", "delete"), ("1700003000.5", "new"), ("1700002400.5", "new")]
    );
}

#[test]
fn cpan_2008_files_read_with_exact_epochs() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/cpan-2008");
    if !dir.exists() {
        eprintln!("skipping: {} not present (read-only reference data, not committed)", dir.display());
        return;
    }
    for name in ["RECENT-1h.yaml", "RECENT-6h.yaml"] {
        let text = fs::read_to_string(dir.join(name)).unwrap();
        let rf = store::read_file(&dir.join(name)).unwrap().unwrap();
        let epochs_in_text: Vec<&str> =
            text.lines().filter_map(|l| l.trim().strip_prefix("epoch: ")).map(|e| e.trim_matches('\'')).collect();
        let read: Vec<&str> = rf.events.iter().map(|e| e.epoch.as_str()).collect();
        assert_eq!(read, epochs_in_text, "{name}");
        assert!(!read.is_empty());
        // The 2008 principal says `interval: Z` in RECENT-1h.yaml (DECISIONS: fsck warns).
        let want = if name == "RECENT-1h.yaml" { "Z" } else { "6h" };
        assert_eq!(rf.meta.interval.as_deref(), Some(want));
    }
}

fn write_bad(dir: &Path, body: &str) -> std::path::PathBuf {
    let f = dir.join("RECENT-1h.yaml");
    fs::write(&f, body).unwrap();
    let _ = fs::remove_file(dir.join("RECENT.recent"));
    std::os::unix::fs::symlink("RECENT-1h.yaml", dir.join("RECENT.recent")).unwrap();
    f
}

const HEAD: &str = "--- \nmeta: \n  aggregator: \n    - 1h\n    - Z\n  filenameroot: RECENT\n  interval: 1h\n  protocol: 1\n  serializer_suffix: .yaml\nrecent: \n";

fn ev(epoch: &str, path: &str) -> String {
    format!("  - \n    epoch: '{epoch}'\n    path: {path}\n    type: new\n")
}

#[test]
fn bad_input_fails_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let cases: Vec<(&str, String, &str)> = vec![
        ("truncated", format!("{HEAD}{}  - \n    epoch: '17000", ev("1700000002.0", "a")), "line"),
        ("non-decimal epoch", format!("{HEAD}{}", ev("17000abc", "a")), "line 11"),
        ("unsorted", format!("{HEAD}{}{}", ev("1700000001.0", "a"), ev("1700000002.0", "b")), "line 15"),
        ("duplicate epoch", format!("{HEAD}{}{}", ev("1700000001.0", "a"), ev("1700000001.0", "b")), "duplicates"),
        ("10 MB line", format!("{HEAD}  - \n    epoch: '1700000001.0'\n    path: {}\n    type: new\n", "x".repeat(10 << 20)), "line 13"),
        (
            "alias bomb",
            "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\ng: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]\nh: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]\nmeta: *h\nrecent: *h\n".to_string(),
            "RECENT-1h.yaml",
        ),
        ("empty", String::new(), "empty"),
    ];
    for (what, body, needle) in cases {
        let f = write_bad(dir.path(), &body);
        let o = rrr(&["news", "--local", dir.path().join("RECENT.recent").to_str().unwrap()]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{what}: {err}");
        assert!(err.contains(f.file_name().unwrap().to_str().unwrap()), "{what}: names the file: {err}");
        assert!(err.contains(needle), "{what}: wanted {needle:?} in {err}");
        assert!(!err.contains("panicked"), "{what}: {err}");
        eprintln!("{what}: {err}");
    }
    // A non-UTF-8 path.
    let mut bytes = HEAD.as_bytes().to_vec();
    bytes.extend_from_slice(b"  - \n    epoch: '1700000001.0'\n    path: caf\xe9\n    type: new\n");
    let f = dir.path().join("RECENT-1h.yaml");
    fs::write(&f, bytes).unwrap();
    let o = rrr(&["news", "--local", dir.path().join("RECENT.recent").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("line 13") && stderr(&o).contains("UTF-8"), "{}", stderr(&o));
}

#[test]
fn unknown_meta_keys_and_types_are_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let body = HEAD.replace("  protocol: 1\n", "  foo: bar\n  protocol: 1\n")
        + &ev("1700000002.0", "a")
        + "  - \n    epoch: '1700000001.0'\n    path: b\n    type: brandnew\n";
    write_bad(dir.path(), &body);
    let o = rrr(&["news", "--local", dir.path().join("RECENT.recent").to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "1700000002.0\tnew\ta\n");
    assert!(stderr(&o).contains("brandnew"));
}
