//! What the `rmirror_*` test modules share: the usual origin-and-mirror
//! [`Setup`], a pass with `--json`, and comparisons of a mirror with its
//! origin (files, leftovers, ownership).

use super::fixture::{Mirror, Origin};
use super::rsyncd::RsyncDaemon;
use super::{principal, s, stderr, stdout, write, Rrr};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::process::Output;

pub use super::fixture::{change, passes_counted, state, state_if_any};

/// An origin of `n` files in five directories (`id/A/f000.txt` …
/// `id/E/…`), indexed and aggregated, served by a daemon; and a mirror
/// of it at `<temp>/target`, not yet made.
pub struct Setup {
    pub origin: Origin,
    pub target: Mirror,
}

impl Setup {
    pub fn new(n: usize) -> Setup {
        let origin = Origin::numbered(n, five_dirs);
        let target = origin.mirror();
        Setup { origin, target }
    }

    /// The origin's principal on the daemon.
    pub fn src(&self) -> String {
        self.origin.src()
    }

    /// The origin's daemon.
    pub fn daemon(&self) -> &RsyncDaemon {
        &self.origin.daemon
    }

    /// The temp directory holding both trees: room for more beside them.
    pub fn dir(&self) -> &Path {
        self.origin.dir()
    }
}

/// The `i`th file of a [`Setup`] origin.
fn five_dirs(i: usize) -> String {
    format!("id/{}/f{i:03}.txt", (b'A' + (i % 5) as u8) as char)
}

/// The files of a [`Setup`] origin written at `root`, indexed and
/// aggregated, not served (for a second origin, or a local-path source).
pub fn make_origin(root: &Path, n: usize) {
    for i in 0..n {
        write(root, &five_dirs(i), &format!("file {i}\n"));
    }
    Rrr::new().args(["init", "--aggregate", s(root)]).assert_ok();
}

/// `rrr rmirror ARGS` with `env` set; never panics on the exit code.
pub fn rmirror_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Rrr::new();
    c.arg("rmirror").args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output()
}

/// `rrr rmirror ARGS`; never panics on the exit code.
pub fn rmirror(args: &[&str]) -> Output {
    rmirror_env(args, &[])
}

/// Run a pass from `src` into `target` with `--json`; assert exit `code`;
/// return the pass object.
#[track_caller]
pub fn pass(src: &str, target: &Path, extra: &[&str], code: i32) -> Value {
    Mirror { root: target.to_path_buf(), remote: src.to_string() }.pass(extra, code)
}

/// Record events at `root` without touching the files (`new` for paths
/// that may not be readable, or not even exist as files).
#[track_caller]
pub fn record(root: &Path, lines: &str) {
    Rrr::new().args(["update", "--stdin", &principal(root)]).stdin(lines).assert_ok();
}

/// rel path -> content (files) or "-> target" (symlinks), without rrr's
/// state and without the recentfiles.
pub fn tree(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for de in walkdir::WalkDir::new(root).min_depth(1) {
        let de = de.unwrap();
        let rel = de.path().strip_prefix(root).unwrap().to_str().unwrap().to_string();
        if rel.starts_with(".rrr") || rel.starts_with("RECENT") || de.file_type().is_dir() {
            continue;
        }
        let v = if de.file_type().is_symlink() {
            format!("-> {}", fs::read_link(de.path()).unwrap().display())
        } else {
            fs::read_to_string(de.path()).unwrap()
        };
        out.insert(rel, v);
    }
    out
}

/// `a` and `b` hold the same files and symlinks (and `a` is not empty).
#[track_caller]
pub fn assert_same_tree(a: &Path, b: &Path) {
    let (ta, tb) = (tree(a), tree(b));
    assert!(!ta.is_empty());
    let only_a: Vec<&String> = ta.keys().filter(|k| !tb.contains_key(*k)).collect();
    let only_b: Vec<&String> = tb.keys().filter(|k| !ta.contains_key(*k)).collect();
    let differ: Vec<&String> = ta.keys().filter(|k| tb.get(*k).is_some_and(|v| v != &ta[*k])).collect();
    assert!(
        only_a.is_empty() && only_b.is_empty() && differ.is_empty(),
        "trees differ: only in {}: {only_a:?}; only in {}: {only_b:?}; content differs: {differ:?}",
        a.display(),
        b.display()
    );
}

/// No temp files of ours (or the Perl client's) left in the target.
#[track_caller]
pub fn assert_no_temp_left(target: &Path) {
    let mut names: Vec<String> =
        fs::read_dir(target).unwrap().flatten().map(|e| e.file_name().to_str().unwrap().to_string()).collect();
    names.extend(
        fs::read_dir(target.join(".rrr"))
            .unwrap()
            .flatten()
            .map(|e| format!(".rrr/{}", e.file_name().to_str().unwrap())),
    );
    if let Ok(rd) = fs::read_dir(target.join(".rrr/tmp")) {
        names.extend(rd.flatten().map(|e| format!(".rrr/tmp/{}", e.file_name().to_str().unwrap())));
    }
    for n in names {
        assert!(!n.starts_with(".rrr/tmp/"), "rsync temp file left over: {n}");
        assert!(!n.contains("FRMRecent") && !n.contains("fetch-") && !n.contains("files-from"), "left over: {n}");
    }
}

/// Every entry under `root` (relative paths, `/` after directories).
pub fn listing(root: &Path) -> Vec<String> {
    let mut v: Vec<String> = walkdir::WalkDir::new(root)
        .min_depth(1)
        .into_iter()
        .map(|e| {
            let e = e.unwrap();
            let rel = e.path().strip_prefix(root).unwrap().to_str().unwrap().to_string();
            if e.file_type().is_dir() {
                rel + "/"
            } else {
                rel
            }
        })
        .collect();
    v.sort();
    v
}

/// The tree holds nothing but `.rrr/` with a state that records a failed
/// attempt and owns nothing (docs/decisions.md#ownership), and a loop's
/// trigger pipe.
pub fn only_a_failed_attempt(target: &Path) -> bool {
    let st = state(target);
    let mut names = listing(target);
    names.retain(|n| n != ".rrr/trigger");
    names == [".rrr/", ".rrr/id", ".rrr/rmirror.flock", ".rrr/state.json"]
        && st["last_outcome"] == "failed"
        && st["filenameroot"].is_null()
        && st["done"].as_object().is_some_and(|d| d.is_empty())
}

/// Whether `epoch` lies in one of the state's done spans (exact epoch order).
pub fn covered(st: &Value, epoch: &str) -> bool {
    let sets: BTreeMap<String, rrr::done::DoneSet> = serde_json::from_value(st["done"].clone()).unwrap();
    rrr::done::DoneSet::union(sets.values()).covered(&rrr::epoch::Epoch::parse(epoch).unwrap())
}

/// A hand-written YAML principal in YAML::Syck's layout (`RECENT-1h.yaml`,
/// aggregator 1h, Z) with `protocol`, and `RECENT.recent` pointing at it.
pub fn yaml_index(root: &Path, protocol: &str, events: &[(&str, &str, &str)]) {
    let mut y = format!(
        "--- \nmeta: \n  aggregator: \n    - 1h\n    - Z\n  dirtymark: '1700000000.5'\n  filenameroot: RECENT\n  \
         interval: 1h\n  protocol: {protocol}\n  serializer_suffix: .yaml\nrecent: \n"
    );
    for (e, t, p) in events {
        y.push_str(&format!("  - \n    epoch: '{e}'\n    path: {p}\n    type: {t}\n"));
    }
    fs::create_dir_all(root).unwrap();
    fs::write(root.join("RECENT-1h.yaml"), y).unwrap();
    let link = root.join("RECENT.recent");
    if fs::symlink_metadata(&link).is_err() {
        std::os::unix::fs::symlink("RECENT-1h.yaml", &link).unwrap();
    }
}

/// The paths of a YAML recentfile as Perl's YAML::Syck reads them: what a
/// downstream Perl `rrr-client` of this mirror would act on.
pub fn perl_paths(file: &Path) -> Vec<String> {
    let o = std::process::Command::new("perl")
        .args(["-MYAML::Syck", "-e", "my $d = LoadFile(shift); print qq{$_->{path}\\n} for @{$d->{recent}}"])
        .arg(file)
        .output()
        .expect("perl with YAML::Syck (libyaml-syck-perl)");
    assert!(o.status.success(), "YAML::Syck cannot read {}: {}", file.display(), stderr(&o));
    stdout(&o).lines().map(str::to_string).collect()
}
