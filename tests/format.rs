//! The format core against the Perl reference: every fixture file read and
//! written again gives the same bytes (except `Producers`), news equals the
//! ground truth, overview equals the reference's table, bad input fails clearly.

use crate::util::names::{hex, unhex};
use crate::util::*;
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

/// The reference prints the principal twice (protocol.md 11.4); rrr once.
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
        // The 2008 principal says `interval: Z` in RECENT-1h.yaml (docs/decisions.md#format: fsck warns).
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
    // A path that is not UTF-8 is read as its bytes (news escapes them as
    // `ls -b` does); a meta value that is not UTF-8 breaks the file.
    let mut bytes = HEAD.as_bytes().to_vec();
    bytes.extend_from_slice(b"  - \n    epoch: '1700000002.0'\n    path: caf\xe9\n    type: new\n");
    bytes.extend_from_slice(ev("1700000001.0", "b").as_bytes());
    let f = dir.path().join("RECENT-1h.yaml");
    fs::write(&f, &bytes).unwrap();
    let o = rrr(&["news", "--local", dir.path().join("RECENT.recent").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "1700000002.0\tnew\tcaf\\351\n1700000001.0\tnew\tb\n");
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
    let bad_meta = [b"--- \nmeta: \n  comment: caf\xe9\n".as_slice(), &bytes[12..]].concat();
    fs::write(&f, bad_meta).unwrap();
    let o = rrr(&["news", "--local", dir.path().join("RECENT.recent").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("line 3: not valid UTF-8"), "{}", stderr(&o));
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

// ---------------------------------------------------------------------------
// Differential tests against the real YAML::Syck (Perl, libyaml-syck-perl).

/// The installed YAML::Syck, driven through `tests/util/syck.pl`.
/// Missing Perl or YAML::Syck fails the test: these checks are the proof
/// that rrr's files are Perl's, and must not pass by being skipped.
struct Syck {
    script: std::path::PathBuf,
}

impl Syck {
    fn new() -> Syck {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/util/syck.pl");
        let syck = Syck { script };
        let version = syck.run("version\n");
        assert_eq!(
            version.trim(),
            "1.34",
            "the differential tests need YAML::Syck 1.34 (Debian: apt-get install libyaml-syck-perl)"
        );
        syck
    }

    /// One answer line per command line.
    fn run(&self, commands: &str) -> String {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("commands");
        fs::write(&input, commands).unwrap();
        let out = std::process::Command::new("perl")
            .arg(&self.script)
            .stdin(fs::File::open(&input).unwrap())
            .output()
            .unwrap_or_else(|e| panic!("cannot run perl (needed for the YAML::Syck differential tests): {e}"));
        assert!(
            out.status.success(),
            "perl {} failed ({}): {}\n(the differential tests need perl and YAML::Syck 1.34: apt-get install libyaml-syck-perl)",
            self.script.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// `Dump({path => P})` for each name.
    fn dumps(&self, names: &[String]) -> Vec<String> {
        let commands: String = names.iter().map(|n| format!("dump {}\n", hex(n.as_bytes()))).collect();
        let out = self.run(&commands);
        let lines: Vec<String> = out.lines().map(|l| String::from_utf8(unhex(l)).expect("Syck wrote UTF-8")).collect();
        assert_eq!(lines.len(), names.len());
        lines
    }
}

/// Pieces of names that YAML or Perl might read as something other than
/// a plain string: every indicator, YAML 1.1 bools, nulls, numbers,
/// sexagesimals, dates, merge keys, Perl's numbers (`0 but true`, `inf`,
/// `nan(1)`), quotes, backslashes, spaces, non-ASCII.
const ATOMS: &[&str] = &[
    "-",
    "?",
    ":",
    ",",
    "[",
    "]",
    "{",
    "}",
    "#",
    "&",
    "*",
    "!",
    "|",
    ">",
    "'",
    "\"",
    "%",
    "@",
    "`",
    "^",
    "~",
    "=",
    "<",
    "+",
    ".",
    "\\",
    "/",
    " ",
    "  ",
    "- ",
    "? ",
    ": ",
    " #",
    "::",
    ",,",
    "--",
    "---",
    "...",
    "<<",
    "''",
    "\\\"",
    "\\x41",
    "\\n",
    "y",
    "n",
    "Y",
    "N",
    "yes",
    "No",
    "TRUE",
    "true",
    "False",
    "off",
    "On",
    "null",
    "Null",
    "NULL",
    "nil",
    "0",
    "7",
    "007",
    "-0",
    "+5",
    "-5",
    "123456789",
    "1234567890",
    "-12345678",
    "-123456789",
    "1.5",
    ".5",
    "1.",
    "-.5",
    "1e5",
    "1E+5",
    "1.5e-3",
    "1e",
    "0x1F",
    "0o17",
    "017",
    "1_000",
    "1,000",
    "0b101",
    ".inf",
    "-.Inf",
    ".NaN",
    "inf",
    "-inf",
    "Infinity",
    "nan",
    "NaN",
    "nanq",
    "snan",
    "1.#INF",
    "1#IND",
    "nan(12)",
    "nan(0x1f)",
    "nan( 1)",
    "0 but true",
    "1:20",
    "190:20:30",
    "190:20:30.15",
    "-1:30",
    "2001-12-14",
    "2001-12-14t21:59:43.10-05:00",
    "2001-12-14 21:59:43.10 -5",
    "2002-12-14T21:59:43Z",
    "é",
    "€",
    "𝄞",
    "\u{a0}",
    "\u{2028}",
    "\u{feff}",
    "e\u{301}",
    "Ä: b",
    "a",
    "b",
    "Foo-1.0",
    "id/A/AB",
    "x.tar.gz",
    "dir",
    "1700000000.5",
];

/// Every atom alone, at the start and the end of a word, after and before
/// a space, inside a path; every pair of short atoms; then `random` names drawn by
/// proptest from up to five atoms joined by nothing, spaces or slashes,
/// and long names (up to the reader's 4096-byte limit).
fn generated_names(random: usize) -> Vec<String> {
    use proptest::prelude::*;
    use proptest::strategy::ValueTree;
    let mut names: Vec<String> = Vec::new();
    for a in ATOMS {
        for form in ["{}", "{}a", "a{}", "a {}", "{} a", "dir/{}", "{}/f", "id/A/AB/{}.tar.gz", "{}é", "{}\u{a0}/f"] {
            names.push(form.replace("{}", a));
        }
    }
    // Pairs of the short atoms (the indicators and their neighbours):
    // every two-character start and end.
    let short: Vec<&str> = ATOMS.iter().copied().filter(|a| a.len() <= 2).collect();
    for a in &short {
        for b in &short {
            names.push(format!("{a}{b}"));
        }
    }
    let atom = prop::sample::select(ATOMS);
    let joined = (prop::collection::vec(atom.clone(), 1..6), prop::sample::select(&["", " ", "/", "", "-"][..]))
        .prop_map(|(parts, sep)| parts.join(sep));
    let long = (atom, 20usize..1300).prop_map(|(a, n)| a.repeat(n).chars().take(4000).collect::<String>());
    let strategy = prop_oneof![9 => joined, 1 => long];
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    for _ in 0..random {
        names.push(strategy.new_tree(&mut runner).unwrap().current());
    }
    names.extend(control_names());
    // Paths are non-empty, without NUL, at most 4096 bytes.
    names.retain(|n| !n.is_empty() && n.len() <= 4096 && !n.contains('\0'));
    let mut seen = std::collections::HashSet::new();
    names.retain(|n| seen.insert(n.clone()));
    names
}

/// Every C0 control character, DEL, a sample of C1 controls and of other
/// characters that YAML or Syck treat specially (NBSP, NEL, the Unicode
/// line and paragraph separators, BOM), alone and in every position of a
/// name: the names the kernel allows that writers once refused.
fn control_names() -> Vec<String> {
    let mut chars: Vec<char> = (1u8..0x20).map(char::from).collect();
    chars.extend(['\x7f', '\u{80}', '\u{85}', '\u{8d}', '\u{9f}', '\u{a0}', '\u{2028}', '\u{2029}', '\u{feff}']);
    let mut names = Vec::new();
    for c in chars {
        for form in [
            "{}",
            "{}{}",
            "a{}",
            "{}a",
            "a{}b",
            "dir/{}/f",
            "id/A/x{}.tar.gz",
            "{} ",
            " {}",
            "'{}",
            "\"{}",
            "a: {}",
            "{}#",
        ] {
            names.push(form.replace("{}", &c.to_string()));
        }
    }
    names.push("\t\n\r\x0b\x0c\x1b[31mred\x1b[0m".into());
    names
}

/// Whether YAML::Syck itself loses `name` when it loads its own dump: it
/// writes a name ending in CR plain (`path: a\r`) and its reader takes that
/// CR for part of the line end. rrr reads such a name back exactly.
fn syck_loses(name: &str) -> bool {
    name.ends_with('\r') && !recentfile::syck::scalar(name).starts_with('"')
}

/// How many random names the differential tests draw: a few thousand in CI
/// (seconds); `bench/syck-differential.sh` sets RRR_SYCK_CASES higher.
fn random_cases() -> usize {
    std::env::var("RRR_SYCK_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(1000)
}

/// A principal as the reference writes it, holding `names` as paths.
fn doc_with_paths(names: &[String]) -> (recentfile::Recentfile, Producer) {
    let step = fixtures().join("perl-0.4.3/s2-news-deletes-aggregate/step2-after-2-deletes");
    let mut rf = store::read_file(&step.join("RECENT-1h.yaml")).unwrap().unwrap();
    rf.events = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let epoch = Epoch::parse(&format!("{}.5", 1_700_100_000 - i as u64)).unwrap();
            recentfile::Event::new(epoch, n.clone(), recentfile::EventKind::New)
        })
        .collect();
    let producer = Producer { program: "rrr".into(), time: Epoch::parse("1700100000.5").unwrap() };
    (rf, producer)
}

#[test]
fn emitter_quotes_every_generated_name_as_yaml_syck_does() {
    let syck = Syck::new();
    let names = generated_names(random_cases());
    let dumps = syck.dumps(&names);
    let mut wrong = Vec::new();
    let mut styles: std::collections::BTreeMap<&str, (usize, Vec<&str>)> = Default::default();
    for (name, dump) in names.iter().zip(&dumps) {
        let ours = format!("--- \npath: {}\n", recentfile::syck::scalar(name));
        if ours != *dump {
            wrong.push(format!("{name:?}: Syck {dump:?}, rrr {ours:?}"));
        }
        let value = dump.strip_prefix("--- \npath: ").unwrap_or(dump);
        let style = match value.as_bytes()[0] {
            b'\'' => "single-quoted",
            b'"' => "double-quoted",
            _ => "plain",
        };
        let entry = styles.entry(style).or_default();
        entry.0 += 1;
        if entry.1.len() < 12 {
            entry.1.push(name);
        }
    }
    eprintln!("{} generated names compared with YAML::Syck's Dump:", names.len());
    for (style, (n, examples)) in &styles {
        eprintln!("  {style}: {n}, e.g. {examples:?}");
    }
    assert!(wrong.is_empty(), "{} of {} names differ:\n{}", wrong.len(), names.len(), wrong.join("\n"));
}

#[test]
fn yaml_syck_loads_what_rrr_writes_and_rrr_reads_what_yaml_syck_writes() {
    let syck = Syck::new();
    let names = generated_names(random_cases());
    let dir = tempfile::tempdir().unwrap();
    let mut commands = String::new();
    let chunks: Vec<&[String]> = names.chunks(250).collect();
    let mut written = Vec::new();
    for (i, chunk) in chunks.iter().enumerate() {
        let (rf, producer) = doc_with_paths(chunk);
        let ours = dir.path().join(format!("rrr-{i}.yaml"));
        let bytes = recentfile::serialize(&rf, Format::Yaml, &producer);
        fs::write(&ours, &bytes).unwrap();
        let theirs = dir.path().join(format!("syck-{i}.yaml"));
        commands.push_str(&format!("load {}\nredump {} {}\n", ours.display(), ours.display(), theirs.display()));
        let own = dir.path().join(format!("syck-own-{i}.yaml"));
        let hexes: Vec<String> = chunk.iter().map(|n| hex(n.as_bytes())).collect();
        commands.push_str(&format!("write {} {}\n", own.display(), hexes.join(" ")));
        written.push((bytes, theirs, own));
    }
    let answers = syck.run(&commands);
    let answers: Vec<&str> = answers.lines().collect();
    assert_eq!(answers.len(), 3 * chunks.len());
    let mut problems = Vec::new();
    for (i, chunk) in chunks.iter().enumerate() {
        // Syck's LoadFile of rrr's file gives every path back.
        match answers[3 * i].strip_prefix("ok") {
            None => problems.push(format!("chunk {i}: YAML::Syck cannot load rrr's file: {}", answers[3 * i])),
            Some(paths) => {
                let loaded: Vec<String> = paths
                    .split_whitespace()
                    .map(|h| if h == "undef" { h.to_string() } else { String::from_utf8_lossy(&unhex(h)).into_owned() })
                    .collect();
                for (want, got) in chunk.iter().zip(&loaded) {
                    if syck_loses(want) {
                        let lost = &want[..want.len() - 1];
                        if *got != if lost.is_empty() { "undef" } else { lost } {
                            problems.push(format!("{want:?}: YAML::Syck loads {got:?}, not even its own loss"));
                        }
                    } else if want != got {
                        problems.push(format!("{want:?}: YAML::Syck loads {got:?}"));
                    }
                }
                if loaded.len() != chunk.len() {
                    problems.push(format!("chunk {i}: YAML::Syck loads {} paths of {}", loaded.len(), chunk.len()));
                }
            }
        }
        let (ours, theirs, own) = &written[i];
        // Syck writes the loaded document back byte for byte as rrr wrote it ...
        if answers[3 * i + 1] == "ok" && !chunk.iter().any(|n| syck_loses(n)) {
            let syck_bytes = fs::read(theirs).unwrap();
            if syck_bytes != *ours {
                let a = String::from_utf8_lossy(ours);
                let b = String::from_utf8_lossy(&syck_bytes);
                let first = a.lines().zip(b.lines()).find(|(x, y)| x != y);
                problems.push(format!("chunk {i}: YAML::Syck rewrites rrr's file differently, first at {first:?}"));
            }
        }
        // ... and rrr reads what Syck writes of its own data, every path
        // exactly, on every read path: the strict one (which takes Syck's
        // layout), the line reader, and whatever the full read picks.
        assert_eq!(answers[3 * i + 2], "ok");
        let text = String::from_utf8(fs::read(own).unwrap()).unwrap();
        let reads = [
            ("strict reader", rrr::recentfile::yaml::parse_syck(&text).ok_or("declined".to_string())),
            (
                "line reader",
                recentfile::yaml::parse(&text).and_then(recentfile::read::validate).map_err(|e| e.to_string()),
            ),
            ("reader", recentfile::parse_bytes(text.as_bytes(), Format::Yaml).map_err(|e| e.to_string())),
        ];
        for (how, rf) in reads {
            match rf {
                Ok(rf) => {
                    let paths: Vec<&rrr::recentfile::RelPath> = rf.events.iter().map(|e| &e.path).collect();
                    if paths != chunk.iter().collect::<Vec<_>>() {
                        let bad = chunk.iter().zip(&paths).find(|(a, b)| a != *b);
                        problems.push(format!("chunk {i}: rrr's {how} reads Syck's file differently: {bad:?}"));
                    }
                }
                // The strict reader is a fast path: it may leave a name
                // ending in CR to the line reader.
                Err(_) if how == "strict reader" && chunk.iter().any(|n| n.ends_with('\r')) => {}
                Err(e) => problems.push(format!("chunk {i}: rrr's {how} cannot read Syck's file: {e}")),
            }
        }
    }
    eprintln!(
        "{} generated names in {} files: loaded and rewritten by YAML::Syck; its own files read back by rrr",
        names.len(),
        chunks.len()
    );
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
}

#[test]
fn reads_and_rewrites_the_references_long_same_mtime_epochs() {
    // The reference's init of 200 files of one mtime: epochs of up to 84
    // characters, distinct as decimals. rrr reads them (they used to be
    // refused as longer than 64), rewrites them byte for byte, and records
    // another file of that mtime without a duplicate number.
    let src = fixtures().join("perl-same-mtime/RECENT-1h.yaml");
    let text = fs::read_to_string(&src).unwrap();
    let rf = store::read_file(&src).unwrap().unwrap();
    assert_eq!(rf.events.len(), 200);
    assert!(rf.events.iter().any(|e| e.epoch.as_str().len() > 64));
    let program = rf.meta.producers.iter().find(|(k, _)| k == "$0").unwrap().1.clone();
    let time = Epoch::parse(rf.meta.produced().unwrap()).unwrap();
    let written = String::from_utf8(recentfile::serialize(&rf, Format::Yaml, &Producer { program, time })).unwrap();
    assert_eq!(mask_producers(&written), mask_producers(&text));
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::copy(&src, root.join("RECENT-1h.yaml")).unwrap();
    std::os::unix::fs::symlink("RECENT-1h.yaml", root.join("RECENT.recent")).unwrap();
    fs::write(root.join("f200"), "x").unwrap();
    let p = root.join("RECENT.recent");
    ok(&["--now", "1700000200.5", "update", "--epoch", "1700000000", p.to_str().unwrap(), "f200"]);
    let after = store::read_file(&root.join("RECENT-1h.yaml")).unwrap().unwrap();
    assert_eq!(after.events.len(), 201);
    for w in after.events.windows(2) {
        assert_eq!(w[0].epoch.cmp_value(&w[1].epoch), std::cmp::Ordering::Greater, "{} {}", w[0].epoch, w[1].epoch);
    }
    assert_eq!(ok(&["news", "--local", p.to_str().unwrap()]).lines().count(), 201);
}

/// Events with `size` and `sha256` (protocol.md 4.2) are written as
/// YAML::Syck dumps them from Perl data (the size a Perl integer), and
/// YAML::Syck loads and rewrites rrr's hashed file byte for byte: a Perl
/// writer's load-and-dump keeps the keys.
#[test]
fn hashed_events_are_yaml_syck_s_bytes() {
    use ::recentfile::beacon::{FileDigest, Sha256Hex};
    let syck = Syck::new();
    let shas = [
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "1234567890123456789012345678901234567890123456789012345678901234",
        "1234567890123456789012345678901234567890123456789012345678901e23",
    ];
    let sizes = [0u64, 7, 123_456_789, 1_234_567_890, u64::MAX];
    let mut commands = String::new();
    let mut cases = Vec::new();
    for sha in shas {
        for size in sizes {
            commands.push_str(&format!("hashed {sha} {size}\n"));
            cases.push((sha, size));
        }
    }
    let answers = syck.run(&commands);
    let producer = Producer { program: "t".into(), time: Epoch::parse("1700000000.5").unwrap() };
    for ((sha, size), answer) in cases.iter().zip(answers.lines()) {
        let theirs = String::from_utf8(unhex(answer)).unwrap();
        let digest = FileDigest { size: *size, sha256: Sha256Hex::parse(sha).unwrap() };
        let ev = recentfile::Event::new(Epoch::parse("1700000000.5").unwrap(), "a", recentfile::EventKind::New)
            .with_digest(Some(digest));
        let ours =
            recentfile::serialize(&recentfile::Recentfile::from_events(vec![ev.clone()]), Format::Yaml, &producer);
        let ours = String::from_utf8(ours).unwrap();
        let ours = &ours[ours.find("recent: \n").unwrap()..];
        assert_eq!(ours, theirs.strip_prefix("--- \n").unwrap(), "sha {sha} size {size}");
        assert_eq!(
            recentfile::parse_bytes(format!("--- \nmeta: \n  protocol: 1\n{ours}").as_bytes(), Format::Yaml)
                .unwrap()
                .events,
            [ev]
        );
    }
    // A whole hashed file, loaded and dumped again by YAML::Syck.
    let dir = tempfile::tempdir().unwrap();
    let (mut rf, producer) = doc_with_paths(&["x/a.tar.gz".to_string(), "x/b.tar.gz".to_string()]);
    rf.events[0] = rf.events[0].clone().with_digest(Some(FileDigest::of(b"hello")));
    let ours = dir.path().join("rrr.yaml");
    let theirs = dir.path().join("syck.yaml");
    let bytes = recentfile::serialize(&rf, Format::Yaml, &producer);
    fs::write(&ours, &bytes).unwrap();
    assert!(String::from_utf8_lossy(&bytes).contains("\n    size: 5\n"));
    assert_eq!(syck.run(&format!("redump {} {}\n", ours.display(), theirs.display())).trim(), "ok");
    assert_eq!(fs::read(&theirs).unwrap(), bytes);
}

/// A collection hashed by `rrr init`/`rrr update --hash sha256` (the meta
/// key `Hash`, hashed events beside an unhashed symlink and a delete):
/// YAML::Syck loads it, and its `Dump` of what it loaded is rrr's file
/// byte for byte, so the capitalised meta key sits where Syck sorts it.
#[test]
fn a_principal_hashed_by_rrr_update_is_what_yaml_syck_dumps() {
    let syck = Syck::new();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("o");
    fs::create_dir_all(root.join("id")).unwrap();
    fs::write(root.join("id/a.tar.gz"), "a\n").unwrap();
    std::os::unix::fs::symlink("a.tar.gz", root.join("id/l")).unwrap();
    Rrr::new().args(["init", s(&root)]).assert_ok();
    fs::write(root.join("id/b.tar.gz"), vec![7u8; 67_890]).unwrap();
    fs::write(root.join("gone"), "").unwrap();
    let p = principal(&root);
    Rrr::new().args(["update", &p, "--hash", "sha256", "id/b.tar.gz", "gone"]).assert_ok();
    fs::remove_file(root.join("gone")).unwrap();
    Rrr::new().args(["update", &p, "--delete", "gone"]).assert_ok();
    let ours = root.join("RECENT-1h.yaml");
    let bytes = fs::read(&ours).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    assert!(text.contains("\n  Hash: sha256\n") && text.contains("\n    size: 67890\n"), "{text}");
    let loaded = syck.run(&format!("load {}\n", ours.display()));
    assert!(loaded.starts_with("ok "), "{loaded}");
    let theirs = dir.path().join("syck.yaml");
    assert_eq!(syck.run(&format!("redump {} {}\n", ours.display(), theirs.display())).trim(), "ok");
    assert_eq!(String::from_utf8_lossy(&fs::read(&theirs).unwrap()), text);
}
