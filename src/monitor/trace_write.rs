//! Writing trace files into a tree: a mirror's own trace and its
//! `_hierarchy` after a complete pass ([`write_mirror_trace`]), the
//! origin's `master` ([`write_master_trace`]) and the epoch-first timestamp
//! file ([`write_timestamp`]). Each file is written atomically (a temp file
//! in the same directory, renamed: `store::write_atomic`), so a downstream
//! or a web server never sees half a trace.
//!
//! The trace directory is given relative to the tree (`project/trace`, as
//! ftpsync's) and must stay inside it: no absolute path, no `..`, no
//! symlink on the way (a hostile upstream could plant one). The upstream's
//! traces in it are kept; its `_hierarchy` is read from
//! `_hierarchy.mirror`, where fetching the upstream's trace directory puts
//! it (as ftpsync keeps the base of its chain), so that a pass appends this
//! host to the upstream's chain and never to its own previous line.

use super::trace::{hierarchy, HierarchyLine, Trace, MAX_TRACE_BYTES};
use anyhow::{bail, Context, Result};
use std::io::Read;
use std::path::{Component, Path, PathBuf};

/// The name of the hierarchy file in the trace directory.
pub const HIERARCHY: &str = "_hierarchy";
/// Where the upstream's `_hierarchy` is kept (the base of ours).
pub const UPSTREAM_HIERARCHY: &str = "_hierarchy.mirror";
/// The origin's trace.
pub const MASTER: &str = "master";

/// This machine's host name (ftpsync's `hostname -f` for its trace's
/// name and `Running on host`), or `localhost` when it cannot be read.
pub fn host_name() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .filter(|h| !h.is_empty() && check_trace_name(h).is_ok())
        .unwrap_or_else(|| "localhost".to_string())
}

/// `dir` checked as a directory inside `root` (relative, no `.`/`..`), its
/// missing parts created, none of them a symlink: the absolute path.
pub fn trace_dir(root: &Path, dir: &Path) -> Result<PathBuf> {
    if dir.as_os_str().is_empty() || !dir.components().all(|c| matches!(c, Component::Normal(_))) {
        bail!(
            "trace directory {}: must be a relative path inside the tree without '..' (e.g. project/trace)",
            dir.display()
        );
    }
    let mut at = root.to_path_buf();
    for c in dir.components() {
        at.push(c);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => bail!("trace directory: {} is not a directory (a symlink is never followed)", at.display()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir(&at).with_context(|| format!("cannot create trace directory {}", at.display()))?
            }
            Err(e) => return Err(e).with_context(|| format!("cannot read trace directory {}", at.display())),
        }
    }
    Ok(at)
}

/// A trace file's name: one path component that is not `.`/`..`, no
/// leading `_` (ftpsync's own files) or `.` (temp and hidden files), no
/// blank or control character (`_hierarchy` splits at blanks).
pub fn check_trace_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 255
        && !name.starts_with(['_', '.'])
        && !name.chars().any(|c| c == '/' || c.is_whitespace() || c.is_control());
    if !ok {
        bail!("trace name {name:?}: must be one file name (a host name), without '/', blanks or a leading '_' or '.'");
    }
    Ok(())
}

/// Read at most [`MAX_TRACE_BYTES`] of `path`; a missing file is empty.
/// A symlink is not followed.
pub fn read_bounded(path: &Path) -> Result<Vec<u8>> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(path);
    let mut f = match f {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let mut buf = Vec::new();
    f.by_ref()
        .take(MAX_TRACE_BYTES as u64 + 1)
        .read_to_end(&mut buf)
        .with_context(|| format!("cannot read {}", path.display()))?;
    if buf.len() > MAX_TRACE_BYTES {
        bail!("{}: over {MAX_TRACE_BYTES} bytes, not a trace file", path.display());
    }
    Ok(buf)
}

fn write(path: &Path, text: &str) -> Result<()> {
    crate::store::write_atomic(path, text.as_bytes(), None).with_context(|| format!("cannot write {}", path.display()))
}

/// After a complete pass: `<root>/<dir>/<name>` (the trace, `name` being
/// the mirror's name, by default its host name) and `<root>/<dir>/_hierarchy`
/// (the upstream's chain from `_hierarchy.mirror`, then this mirror).
/// The upstream's traces in the directory stay as they are. Returns the
/// trace's path.
pub fn write_mirror_trace(root: &Path, dir: &Path, name: &str, trace: &Trace) -> Result<PathBuf> {
    check_trace_name(name)?;
    let at = trace_dir(root, dir)?;
    let file = at.join(name);
    write(&file, &trace.render())?;
    let upstream = read_bounded(&at.join(UPSTREAM_HIERARCHY))?;
    let me = HierarchyLine {
        trace: name.to_string(),
        mirror: name.to_string(),
        host: trace.host.clone(),
        upstream: trace.upstream.clone().unwrap_or_default(),
    };
    write(&at.join(HIERARCHY), &hierarchy(&upstream, &me))?;
    Ok(file)
}

/// The upstream's traces, fetched into `fetched` (by
/// [`super::probe::fetch`]), installed into `<root>/<dir>` before this
/// mirror writes its own: every file that reads as a trace, except one
/// named `own` (this mirror's is its own to write), each atomically; the
/// upstream's `_hierarchy` becomes `_hierarchy.mirror`, the base of ours.
/// Other names (hidden, `_` files, non-traces) are left out. Returns how
/// many files were installed.
pub fn install_upstream_traces(fetched: &Path, root: &Path, dir: &Path, own: &str) -> Result<usize> {
    let at = trace_dir(root, dir)?;
    let mut n = 0;
    for e in std::fs::read_dir(fetched).with_context(|| format!("cannot read {}", fetched.display()))? {
        let e = e?;
        let Ok(name) = e.file_name().into_string() else { continue };
        if !e.file_type()?.is_file() || name == own {
            continue;
        }
        let bytes = read_bounded(&e.path())?;
        if name == HIERARCHY {
            crate::store::write_atomic(&at.join(UPSTREAM_HIERARCHY), &bytes, None)
                .with_context(|| format!("cannot write {}", at.join(UPSTREAM_HIERARCHY).display()))?;
        } else if check_trace_name(&name).is_ok() && super::trace::parse(&bytes).is_ok() {
            crate::store::write_atomic(&at.join(&name), &bytes, None)
                .with_context(|| format!("cannot write {}", at.join(&name).display()))?;
        } else {
            continue;
        }
        n += 1;
    }
    Ok(n)
}

/// The origin's trace, `<root>/<dir>/master`. Returns its path.
pub fn write_master_trace(root: &Path, dir: &Path, trace: &Trace) -> Result<PathBuf> {
    let file = trace_dir(root, dir)?.join(MASTER);
    write(&file, &trace.render())?;
    Ok(file)
}

/// Where a tree records the paths rrr writes there besides the index
/// (`--trace`, `--timestamp`), one a line, relative to the root, so that
/// every command that builds the ignore set (`init`, `fsck`, `watch`,
/// `verify`) leaves them out even when it is not told: an operator's
/// `rrr fsck --repair` never indexes a trace.
pub const OWN_PATHS: &str = ".rrr/own-paths";

/// The paths recorded in `<root>/.rrr/own-paths` (none when there is no
/// such file; lines that are not a relative path inside the tree are
/// skipped).
pub fn recorded_own(root: &Path) -> Vec<String> {
    let Ok(bytes) = read_bounded(&root.join(OWN_PATHS)) else { return Vec::new() };
    String::from_utf8_lossy(&bytes)
        .lines()
        .map(|l| l.trim().trim_end_matches('/').to_string())
        .filter(|l| !l.is_empty() && Path::new(l).components().all(|c| matches!(c, Component::Normal(_))))
        .collect()
}

/// Add `paths` to `<root>/.rrr/own-paths` (written only when one is new).
pub fn record_own<'a>(root: &Path, paths: impl IntoIterator<Item = &'a Path>) -> Result<()> {
    let mut all = recorded_own(root);
    let before = all.len();
    for p in paths {
        let p = p.to_string_lossy().trim_end_matches('/').to_string();
        if !all.contains(&p) {
            all.push(p);
        }
    }
    if all.len() == before {
        return Ok(());
    }
    let file = root.join(OWN_PATHS);
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    write(&file, &(all.join("\n") + "\n"))
}

/// The origin's trace files (`rrr watch`, `rrr beacon`: `--trace DIR`,
/// `--timestamp FILE`), relative to the root; rrr's own, never recorded.
#[derive(Clone, Debug, Default)]
pub struct OriginFiles {
    /// The trace directory: `DIR/master` is written.
    pub trace: Option<PathBuf>,
    /// The timestamp file.
    pub timestamp: Option<PathBuf>,
}

impl OriginFiles {
    /// The paths the ignore set must hold as rrr's own.
    pub fn own_paths(&self) -> impl Iterator<Item = &Path> {
        self.trace.iter().chain(&self.timestamp).map(PathBuf::as_path)
    }

    /// The file whose age says when they were last written.
    pub fn probe_file(&self, root: &Path) -> Option<PathBuf> {
        match (&self.trace, &self.timestamp) {
            (Some(d), _) => Some(root.join(d).join(MASTER)),
            (None, Some(f)) => Some(root.join(f)),
            (None, None) => None,
        }
    }

    /// Write the master trace (its `Archive serial` the principal's newest
    /// epoch) and the timestamp file of `coll` at `now` (the origin's data
    /// clock), each atomically.
    pub fn write(&self, coll: &crate::collection::Collection, now: i64) -> Result<()> {
        record_own(&coll.root, self.own_paths())?;
        if let Some(dir) = &self.trace {
            let principal = coll.path_of(coll.principal());
            let serial = crate::store::read_file(&principal)
                .with_context(|| format!("cannot read {}", principal.display()))?
                .and_then(|rf| rf.events.first().map(|e| e.epoch.to_string()));
            let t = Trace {
                date: now,
                date_started: None,
                archive_serial: serial,
                host: host_name(),
                maintainer: None,
                upstream: None,
                trigger: None,
                extra: Vec::new(),
            };
            write_master_trace(&coll.root, dir, &t).context("--trace")?;
        }
        if let Some(file) = &self.timestamp {
            write_timestamp(&coll.root, file, now).context("--timestamp")?;
        }
        Ok(())
    }
}

/// The epoch-first timestamp file `<root>/<file>` (e.g. `indices/timestamp.txt`).
pub fn write_timestamp(root: &Path, file: &Path, secs: i64) -> Result<PathBuf> {
    let parent = file.parent().filter(|p| !p.as_os_str().is_empty());
    let name = file.file_name().filter(|_| file.components().all(|c| matches!(c, Component::Normal(_))));
    let Some(name) = name else {
        bail!("timestamp file {}: must be a relative path inside the tree without '..'", file.display());
    };
    let dir = match parent {
        Some(p) => trace_dir(root, p)?,
        None => root.to_path_buf(),
    };
    let path = dir.join(name);
    write(&path, &super::trace::timestamp_file(secs))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::trace::{parse, Trigger};

    fn trace(host: &str, upstream: Option<&str>) -> Trace {
        Trace {
            date: 1_796_274_942,
            date_started: Some(1_796_274_900),
            archive_serial: Some("1796274941.5".into()),
            host: host.into(),
            maintainer: None,
            upstream: upstream.map(Into::into),
            trigger: upstream.map(|_| Trigger::Cron),
            extra: vec![],
        }
    }

    #[test]
    fn mirror_trace_keeps_upstreams_and_appends_to_hierarchy() {
        let t = tempfile::tempdir().unwrap();
        let dir = Path::new("project/trace");
        // The origin's master and tier 1's trace, as they arrive from upstream.
        write_master_trace(t.path(), dir, &trace("origin.example", None)).unwrap();
        let tdir = t.path().join(dir);
        std::fs::write(tdir.join("t1.example"), trace("t1.example", Some("origin.example")).render()).unwrap();
        std::fs::write(tdir.join(UPSTREAM_HIERARCHY), "t1.example t1.example t1.example origin.example\n").unwrap();
        let f = write_mirror_trace(t.path(), dir, "t2.example", &trace("t2.example", Some("t1.example"))).unwrap();
        assert_eq!(f, tdir.join("t2.example"));
        let p = parse(&std::fs::read(&f).unwrap()).unwrap();
        assert_eq!(p.upstream(), Some("t1.example"));
        assert!(parse(&std::fs::read(tdir.join("master")).unwrap()).unwrap().upstream().is_none());
        assert!(tdir.join("t1.example").exists(), "the upstream's trace is kept");
        let h = std::fs::read_to_string(tdir.join(HIERARCHY)).unwrap();
        assert_eq!(h, "t1.example t1.example t1.example origin.example\nt2.example t2.example t2.example t1.example\n");
        // A second pass replaces its line.
        write_mirror_trace(t.path(), dir, "t2.example", &trace("t2.example", Some("t1.example"))).unwrap();
        assert_eq!(std::fs::read_to_string(tdir.join(HIERARCHY)).unwrap(), h);
        // No temp file is left behind.
        let mut names: Vec<String> =
            std::fs::read_dir(&tdir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        names.sort();
        assert_eq!(names, ["_hierarchy", "_hierarchy.mirror", "master", "t1.example", "t2.example"]);
    }

    #[test]
    fn upstream_traces_are_installed_and_ours_kept() {
        let up = tempfile::tempdir().unwrap();
        let t = tempfile::tempdir().unwrap();
        let dir = Path::new("project/trace");
        std::fs::write(up.path().join("master"), trace("origin.example", None).render()).unwrap();
        std::fs::write(up.path().join("t1.example"), trace("t1.example", Some("origin.example")).render()).unwrap();
        std::fs::write(up.path().join("t2.example"), "an upstream's copy of our trace").unwrap();
        std::fs::write(up.path().join(HIERARCHY), "t1.example t1.example t1.example origin.example\n").unwrap();
        std::fs::write(up.path().join("junk"), "<html>not a trace</html>").unwrap();
        std::fs::write(up.path().join("_traces"), "master\n").unwrap();
        let n = install_upstream_traces(up.path(), t.path(), dir, "t2.example").unwrap();
        assert_eq!(n, 3);
        write_mirror_trace(t.path(), dir, "t2.example", &trace("t2.example", Some("t1.example"))).unwrap();
        let tdir = t.path().join(dir);
        let mut names: Vec<String> =
            std::fs::read_dir(&tdir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        names.sort();
        assert_eq!(names, ["_hierarchy", "_hierarchy.mirror", "master", "t1.example", "t2.example"]);
        let h = std::fs::read_to_string(tdir.join(HIERARCHY)).unwrap();
        assert_eq!(h, "t1.example t1.example t1.example origin.example\nt2.example t2.example t2.example t1.example\n");
        assert!(parse(&std::fs::read(tdir.join("t2.example")).unwrap()).is_ok(), "ours, not the upstream's copy");
    }

    #[test]
    fn the_trace_directory_stays_inside_the_tree() {
        let t = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let tr = trace("h", None);
        for bad in ["/abs", "../up", "a/../b", "", "./x"] {
            assert!(write_master_trace(t.path(), Path::new(bad), &tr).is_err(), "{bad}");
        }
        std::os::unix::fs::symlink(outside.path(), t.path().join("link")).unwrap();
        let e = write_master_trace(t.path(), Path::new("link/trace"), &tr).unwrap_err();
        assert!(format!("{e:#}").contains("symlink is never followed"), "{e:#}");
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
        for bad in ["a/b", "_hierarchy", ".x", "a b", "", "..", "x\ny"] {
            assert!(write_mirror_trace(t.path(), Path::new("trace"), bad, &tr).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn host_name_is_a_trace_name() {
        let h = host_name();
        assert!(check_trace_name(&h).is_ok(), "{h:?}");
    }

    #[test]
    fn timestamp_file_in_the_tree() {
        let t = tempfile::tempdir().unwrap();
        let p = write_timestamp(t.path(), Path::new("indices/timestamp.txt"), 1_796_274_942).unwrap();
        assert_eq!(std::fs::read_to_string(p).unwrap(), "1796274942 2026-12-03T05:15:42Z\n");
        assert!(write_timestamp(t.path(), Path::new("../t.txt"), 1).is_err());
    }
}

#[cfg(test)]
mod ignore_tests {
    use crate::tree::{IgnoreSet, Ignored};

    /// Traces are rrr's own files: the one ignore set leaves them out of
    /// init, fsck and watch once the trace directory is named.
    #[test]
    fn the_trace_directory_is_rrrs_own() {
        let ig = IgnoreSet::new("RECENT", &[]).with_own_dir("project/trace/");
        for own in ["project/trace", "project/trace/master", "project/trace/_hierarchy", "project/trace/h.1.new"] {
            assert_eq!(ig.why_ignored(own, false), Some(Ignored::Own), "{own}");
        }
        for not in ["project/tracer", "project/tr", "project", "x/project/trace/master"] {
            assert!(!ig.is_ignored(not), "{not}");
        }
        assert!(!IgnoreSet::new("RECENT", &[]).is_ignored("project/trace/master"));
    }
}
