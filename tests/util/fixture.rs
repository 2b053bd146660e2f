//! Fixtures for the mirroring tests: an [`Origin`] (a tree in a temp
//! directory, indexed by the real `rrr init`, served by a real
//! `rsync --daemon` on 127.0.0.1) and a [`Mirror`] (a localroot beside it
//! that `rrr rmirror` fills).
//!
//! Both deref to their directory, so `t.origin.join("a")`,
//! `write(&t.origin, …)` and `s(&t.target)` read as they did when the
//! tests held bare paths.
//!
//! ```ignore
//! let origin = Origin::numbered(10, "id/f{i}.txt");
//! let mirror = origin.mirror();
//! let pass = mirror.pass(&[], 0);
//! origin.change(&["id/new.txt"], &["id/f1.txt"]);
//! ```

use super::rsyncd::RsyncDaemon;
use super::{principal, s, stderr, stdout, write, Rrr};
use serde_json::Value;
use std::fs;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::process::Output;

/// A tree at `<temp>/origin`, indexed, served as the daemon's module `origin`.
pub struct Origin {
    tmp: tempfile::TempDir,
    pub root: PathBuf,
    pub daemon: RsyncDaemon,
}

impl Origin {
    /// `files` (path, content) written, indexed with `rrr INIT… ROOT`
    /// (`init` e.g. `["init", "--aggregate"]` or `["--now", E, "init"]`),
    /// then served.
    pub fn new<P: AsRef<str>, C: AsRef<str>>(files: impl IntoIterator<Item = (P, C)>, init: &[&str]) -> Origin {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("origin");
        fs::create_dir_all(&root).unwrap();
        for (path, content) in files {
            write(&root, path.as_ref(), content.as_ref());
        }
        Rrr::new().args(init).arg(&root).assert_ok();
        let daemon = RsyncDaemon::start(&[("origin", &root)]);
        Origin { tmp, root, daemon }
    }

    /// `n` files, the `i`th at `path(i)` holding `file {i}\n`, indexed
    /// and aggregated (`rrr init --aggregate`).
    pub fn numbered(n: usize, path: impl Fn(usize) -> String) -> Origin {
        Origin::new((0..n).map(|i| (path(i), format!("file {i}\n"))), &["init", "--aggregate"])
    }

    /// The principal's URL on the daemon: what `--remote` takes.
    pub fn src(&self) -> String {
        format!("{}/RECENT.recent", self.daemon.url("origin"))
    }

    /// The temp directory holding the origin (and, by default, its mirror):
    /// a scratch place beside the trees.
    pub fn dir(&self) -> &Path {
        self.tmp.path()
    }

    /// A mirror of this origin at `<temp>/target` (not yet created).
    pub fn mirror(&self) -> Mirror {
        self.mirror_at(self.dir().join("target"))
    }

    /// A mirror of this origin at `localroot`.
    pub fn mirror_at(&self, localroot: PathBuf) -> Mirror {
        Mirror { root: localroot, remote: self.src() }
    }

    /// Record `lines` ("new PATH" / "delete PATH", one a line) in the
    /// index with `rrr update --stdin`, without touching the files.
    #[track_caller]
    pub fn record(&self, lines: &str) {
        Rrr::new().args(["update", "--stdin", &principal(&self.root)]).stdin(lines).assert_ok();
    }

    /// Files of `new` written (content `new content of PATH\n`), those of
    /// `delete` removed; both recorded, then aggregated.
    #[track_caller]
    pub fn change(&self, new: &[&str], delete: &[&str]) {
        change(&self.root, new, delete)
    }
}

/// [`Origin::change`] for any indexed tree.
#[track_caller]
pub fn change(root: &Path, new: &[&str], delete: &[&str]) {
    change_with(root, new, delete, &[])
}

/// [`change`] with `writer_args` given to its `update` and `aggregate`
/// (e.g. `["--sign-key", KEY]` for a signed collection).
#[track_caller]
pub fn change_with(root: &Path, new: &[&str], delete: &[&str], writer_args: &[&str]) {
    let mut lines = String::new();
    for p in new {
        write(root, p, &format!("new content of {p}\n"));
        lines.push_str(&format!("new {p}\n"));
    }
    for p in delete {
        fs::remove_file(root.join(p)).unwrap();
        lines.push_str(&format!("delete {p}\n"));
    }
    Rrr::new().arg("update").args(writer_args).args(["--stdin", &principal(root)]).stdin(lines).assert_ok();
    Rrr::new().arg("aggregate").args(writer_args).arg(principal(root)).assert_ok();
}

impl Deref for Origin {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.root
    }
}

impl AsRef<Path> for Origin {
    fn as_ref(&self) -> &Path {
        &self.root
    }
}

/// A mirror's localroot and the remote it mirrors.
pub struct Mirror {
    pub root: PathBuf,
    pub remote: String,
}

impl Mirror {
    /// `rrr rmirror --remote REMOTE --localroot ROOT`, to add to and run.
    pub fn rmirror(&self) -> Rrr {
        let mut cmd = Rrr::new();
        cmd.args(["rmirror", "--remote", &self.remote, "--localroot", s(&self.root)]);
        cmd
    }

    /// One run with `extra` arguments and `--json`, asserting exit
    /// `code`: its last JSON line (a pass report, or an error) and the output.
    #[track_caller]
    pub fn pass_output(&self, extra: &[&str], code: i32) -> (Value, Output) {
        let o = self.rmirror().args(extra).arg("--json").assert_exit(code);
        let line = stdout(&o).lines().last().unwrap_or_default().to_string();
        let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}\n{}", stderr(&o)));
        (v, o)
    }

    /// One pass (see [`pass_output`](Mirror::pass_output)): its report,
    /// asserted to be one.
    #[track_caller]
    pub fn pass(&self, extra: &[&str], code: i32) -> Value {
        let v = self.pass_output(extra, code).0;
        assert_eq!(v["kind"], "pass", "{v}");
        v
    }

    /// The mirror's `.rrr/state.json`, parsed.
    pub fn state(&self) -> Value {
        state(&self.root)
    }

    /// What monitoring sees of the mirror, with `global` options first
    /// (`["--now", E]`, or none): `status --json`, plain `status`, the
    /// Prometheus textfile and `rrr check --warn 3600 --crit 7200`.
    pub fn monitoring(&self, global: &[&str]) -> Monitoring {
        let run = |args: &[&str]| Rrr::new().args(global).args(args).arg("--localroot").arg(&self.root).output();
        let ok = |args: &[&str]| {
            let o = run(args);
            assert!(o.status.success(), "{args:?}: {}", stderr(&o));
            stdout(&o)
        };
        let status = serde_json::from_str(&ok(&["status", "--json"])).unwrap();
        let plain = ok(&["status"]);
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("rrr.prom");
        ok(&["status", "--prometheus", s(&file)]);
        let prometheus = fs::read_to_string(&file).unwrap();
        let check = run(&["check", "--warn", "3600", "--crit", "7200"]);
        Monitoring { status, plain, prometheus, check }
    }
}

/// [`Mirror::monitoring`]'s views.
pub struct Monitoring {
    pub status: Value,
    pub plain: String,
    pub prometheus: String,
    pub check: Output,
}

impl Monitoring {
    /// The value of the textfile's sample of `metric` (one tree), as written.
    pub fn gauge(&self, metric: &str) -> Option<&str> {
        self.prometheus.lines().find(|l| l.starts_with(&format!("{metric}{{"))).and_then(|l| l.rsplit(' ').next())
    }

    /// `check`'s exit status and its line.
    pub fn check(&self) -> (Option<i32>, String) {
        (self.check.status.code(), stdout(&self.check))
    }
}

/// `root/.rrr/state.json`, parsed, or `None` while there is none (or it
/// cannot be read yet): for polling a running loop.
pub fn state_if_any(root: &Path) -> Option<Value> {
    fs::read(root.join(".rrr/state.json")).ok().and_then(|b| serde_json::from_slice(&b).ok())
}

/// The passes the tree's state has counted so far (0 before the first).
pub fn passes_counted(root: &Path) -> u64 {
    state_if_any(root).and_then(|v| v["counters"]["passes"].as_u64()).unwrap_or(0)
}

/// `root/.rrr/state.json`, parsed.
#[track_caller]
pub fn state(root: &Path) -> Value {
    let bytes = fs::read(root.join(".rrr/state.json")).unwrap_or_else(|e| panic!("{}: {e}", root.display()));
    serde_json::from_slice(&bytes).unwrap()
}

impl Deref for Mirror {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.root
    }
}

impl AsRef<Path> for Mirror {
    fn as_ref(&self) -> &Path {
        &self.root
    }
}
