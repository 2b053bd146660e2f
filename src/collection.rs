//! A collection on disk: the principal and the larger recentfiles named by
//! its aggregator, found from the principal symlink or any file's name.
//!
//! Names are `<filenameroot>-<interval><suffix>` (protocol.md 2), split with
//! `^(.+)-([^-.]+)(\.[^.]+)$`. The principal symlink `<filenameroot>.recent`
//! names the principal's bare file name; a target with `/` is refused.

use crate::interval::{self, Interval};
use crate::recentfile::{Format, ReadError, Recentfile};
use crate::store;
use anyhow::{bail, Context, Result};
use std::fs;
use std::path::{Path, PathBuf};

/// Where a collection lives and what it consists of.
#[derive(Clone, Debug)]
pub struct Collection {
    pub root: PathBuf,
    pub filenameroot: String,
    pub format: Format,
    /// The principal first, then the larger intervals, ascending.
    pub intervals: Vec<Interval>,
    /// `meta.aggregator` as the principal carries it (the principal's own first).
    pub aggregator: Vec<String>,
}

/// Split `RECENT-1h.yaml` into (`RECENT`, `1h`, `.yaml`).
pub fn split_name(name: &str) -> Option<(&str, &str, &str)> {
    let dot = name.rfind('.')?;
    let (stem, suffix) = name.split_at(dot);
    if suffix.len() < 2 {
        return None;
    }
    let dash = stem.rfind('-')?;
    let (root, iv) = (&stem[..dash], &stem[dash + 1..]);
    if root.is_empty() || iv.is_empty() || iv.contains('.') {
        return None;
    }
    Some((root, iv, suffix))
}

impl Collection {
    /// Open from a principal argument: `RECENT.recent`, a recentfile, or a directory holding `RECENT.recent`.
    pub fn open(arg: &Path) -> Result<Collection> {
        let path = principal_path(arg)?;
        let root = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let (name, meta) = principal_name(arg, &path)?;
        let (froot, iv, suffix) = split_name(&name).with_context(|| not_a_recentfile(&path, &name, &meta))?;
        let format = Format::from_suffix(suffix)
            .with_context(|| format!("{name}: unsupported serializer suffix {suffix:?} (rrr reads .yaml and .json)"))?;
        let principal = Interval::parse(iv).map_err(anyhow::Error::msg).with_context(|| name.clone())?;
        let rf = store::read_file(&root.join(&name))?
            .with_context(|| format!("principal {} does not exist", root.join(&name).display()))?;
        let aggregator = rf.meta.aggregator.clone();
        let parsed: Vec<Interval> = aggregator
            .iter()
            .map(|s| Interval::parse(s))
            .collect::<Result<_, _>>()
            .map_err(anyhow::Error::msg)
            .with_context(|| format!("{}: meta.aggregator", root.join(&name).display()))?;
        let intervals = interval::cascade(&principal, &parsed).map_err(anyhow::Error::msg)?;
        Ok(Collection { root, filenameroot: froot.to_string(), format, intervals, aggregator })
    }

    /// A collection that may not exist yet (init).
    pub fn new(root: PathBuf, filenameroot: String, format: Format, intervals: Vec<Interval>) -> Collection {
        let aggregator = intervals.iter().map(|i| i.spec().to_string()).collect();
        Collection { root, filenameroot, format, intervals, aggregator }
    }

    pub fn principal(&self) -> &Interval {
        &self.intervals[0]
    }

    /// `RECENT-1h.yaml`
    pub fn file_name(&self, iv: &Interval) -> String {
        format!("{}-{}{}", self.filenameroot, iv.spec(), self.format.suffix())
    }

    pub fn path_of(&self, iv: &Interval) -> PathBuf {
        self.root.join(self.file_name(iv))
    }

    /// `RECENT.recent`
    pub fn link_name(&self) -> String {
        format!("{}.recent", self.filenameroot)
    }

    /// Read one file of the collection (`None`: not written yet).
    pub fn read(&self, iv: &Interval) -> Result<Option<Recentfile>, ReadError> {
        store::read_file(&self.path_of(iv))
    }
}

/// The principal as `open`'s argument names it: a directory is the tree's
/// root, holding `RECENT.recent`; but a principal link whose target became
/// a directory is named as what it is. (A link to the tree's root, e.g.
/// /srv/cpan -> /data/cpan, is fine.)
fn principal_path(arg: &Path) -> Result<PathBuf> {
    if !arg.is_dir() {
        return Ok(arg.to_path_buf());
    }
    let target = fs::read_link(arg).unwrap_or_default();
    let principal_link = arg.extension().is_some_and(|x| x == "recent")
        || target.to_str().is_some_and(|t| !t.contains('/') && split_name(t).is_some());
    if principal_link {
        bail!(
            "{}: its target {} is a directory, not a recentfile (the tree's root is {})",
            arg.display(),
            target.display(),
            arg.parent().map_or_else(|| ".".into(), |p| p.display().to_string())
        );
    }
    Ok(arg.join("RECENT.recent"))
}

/// The principal's file name and what `path` is: a symlink is followed
/// (its target must be a bare file name), a small file that is no
/// recentfile is read as a link a checkout without symlinks stored as
/// text, anything else names itself.
fn principal_name(arg: &Path, path: &Path) -> Result<(String, fs::Metadata)> {
    let mut name = path
        .file_name()
        .and_then(|n| n.to_str())
        .with_context(|| format!("{}: not a recentfile name", arg.display()))?
        .to_string();
    let meta = fs::symlink_metadata(path).with_context(|| format!("cannot open collection {}", path.display()))?;
    if meta.file_type().is_symlink() {
        let target = fs::read_link(path).with_context(|| format!("cannot read symlink {}", path.display()))?;
        let target = target.to_str().with_context(|| format!("{}: target is not UTF-8", path.display()))?;
        if target.contains('/') {
            bail!("{}: symlink target {target:?} contains '/' (must be a bare file name)", path.display());
        }
        name = target.to_string();
    } else if meta.len() < 256 && !name.ends_with(".yaml") && !name.ends_with(".json") {
        let text = fs::read_to_string(path).unwrap_or_default();
        let target = text.trim_end_matches('\n');
        if !target.is_empty() && !target.contains('/') && split_name(target).is_some() {
            name = target.to_string();
        }
    }
    Ok((name, meta))
}

/// Why `name` (found at `path`) names no recentfile; a `.recent` that is a
/// regular file is usually a copy that turned the link into a file.
fn not_a_recentfile(path: &Path, name: &str, meta: &fs::Metadata) -> String {
    if meta.file_type().is_file() && name.ends_with(".recent") {
        format!(
            "{} is a regular file, not a symlink to the principal (e.g. RECENT-1h.yaml); \
             give the principal itself, or restore the link: ln -sf RECENT-1h.yaml {}",
            path.display(),
            path.display()
        )
    } else {
        format!("{}: {name:?} is not a recentfile name like RECENT-1h.yaml", path.display())
    }
}

/// The collection's own names, exactly, at the top level: `RECENT.recent`
/// and the link's temp name `RECENT.recent.<pid>`; `RECENT-<ival><suffix>`
/// (a valid interval, `.yaml` or `.json`), its lock directory
/// `….lock` and what is inside it, the Perl writers' shared temp file
/// `….new` and rrr's own `….<pid>.new`. Anything else that merely starts
/// like them (`RECENT-1h.yaml.backup`, `RECENT-notes.txt`) is an ordinary
/// file. The beacon `RECENT-1h.yaml.beacon.json` and its signature
/// `….sig` are the collection's own files too (with their lock and temp names).
pub fn is_recentfile_name(rel: &str, filenameroot: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let Some(rest) = rel.strip_prefix(filenameroot) else { return false };
    if rest == ".recent" {
        return true;
    }
    if let Some(pid) = rest.strip_prefix(".recent.") {
        return digits(pid);
    }
    let Some(rest) = rest.strip_prefix('-') else { return false };
    // The beacon and its signature (recentfile::beacon::beacon_name), their
    // lock directory and what is inside it, their temp files `….<pid>.new`.
    if let Some((file, tail)) = rest.split_once(".beacon.json") {
        let tail = tail.strip_prefix(".sig").unwrap_or(tail);
        let tail_ok = tail.is_empty()
            || tail.strip_prefix(".lock").is_some_and(|l| l.is_empty() || l.starts_with('/'))
            || tail.strip_prefix('.').and_then(|t| t.strip_suffix(".new")).is_some_and(digits);
        return tail_ok
            && file
                .rfind('.')
                .is_some_and(|i| Interval::parse(&file[..i]).is_ok() && Format::from_suffix(&file[i..]).is_some());
    }
    let base = match rest.split_once('/') {
        // Inside a lock directory.
        Some((dir, _)) => match dir.strip_suffix(".lock") {
            Some(base) => base,
            None => return false,
        },
        None => match (rest.strip_suffix(".lock"), rest.strip_suffix(".new")) {
            (Some(base), _) => base,
            (None, Some(base)) => match base.rsplit_once('.') {
                Some((file, pid)) if digits(pid) => file,
                _ => base,
            },
            (None, None) => rest,
        },
    };
    match base.rfind('.') {
        Some(i) => Interval::parse(&base[..i]).is_ok() && Format::from_suffix(&base[i..]).is_some(),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(split_name("RECENT-1h.yaml"), Some(("RECENT", "1h", ".yaml")));
        assert_eq!(split_name("MY-RECENT-Z.json"), Some(("MY-RECENT", "Z", ".json")));
        assert_eq!(split_name("RECENT.recent"), None);
        assert!(is_recentfile_name("RECENT-1h.yaml", "RECENT"));
        assert!(is_recentfile_name("RECENT-Z.yaml.lock/process", "RECENT"));
        assert!(is_recentfile_name("RECENT-6h.json.new", "RECENT"));
        assert!(is_recentfile_name("RECENT.recent", "RECENT"));
        assert!(!is_recentfile_name("RECENT-notes.txt", "RECENT"));
        assert!(!is_recentfile_name("id/RECENT-1h.yaml", "RECENT"));
        assert!(is_recentfile_name("RECENT-1h.yaml.4242.new", "RECENT"));
        assert!(is_recentfile_name("RECENT-1h.yaml.lock", "RECENT"));
        assert!(is_recentfile_name("RECENT.recent.4242", "RECENT"));
        for beacon in [
            "RECENT-1h.yaml.beacon.json",
            "RECENT-1h.yaml.beacon.json.sig",
            "RECENT-1h.yaml.beacon.json.lock",
            "RECENT-1h.yaml.beacon.json.lock/process",
            "RECENT-1h.yaml.beacon.json.4242.new",
            "RECENT-1h.yaml.beacon.json.sig.4242.new",
            "RECENT-6h.json.beacon.json",
        ] {
            assert!(is_recentfile_name(beacon, "RECENT"), "{beacon}");
        }
        for no in [
            "RECENT.beacon.json",
            "RECENT-1x.yaml.beacon.json",
            "RECENT-1h.yaml.beacon.json.bak",
            "RECENT-1h.yaml.beacon.jsonx",
            "RECENT-1h.yaml.beacon.json.x.new",
            "RECENT-1h.yaml.beacon.json.sig.lock.x",
        ] {
            assert!(!is_recentfile_name(no, "RECENT"), "{no}");
        }
        for no in ["RECENT-1h.yaml.backup", "RECENT-1h.yaml.x.new", "RECENT-1h.txt", "RECENT-1h.yaml.lockx/a"] {
            assert!(!is_recentfile_name(no, "RECENT"), "{no}");
        }
    }
}
