//! Which trees a mirror may write into and delete from
//! (docs/decisions.md#ownership). The decision is pure (`decide`: facts
//! in, a verdict
//! out); the facts are gathered at the edge (`tree_kind`, `read_marker`,
//! `local_collection`) by `Mirror::settle_ownership`, before rrr writes
//! anything into the target.
//!
//! rrr deletes only in a tree that is a mirror of the remote's collection:
//!
//! * its state names the same collection: the same normalised remote, or
//!   another remote whose principal has the same filenameroot and
//!   dirtymark (a switch to another mirror of the same origin);
//! * it has no state but holds a principal of the remote's collection (a
//!   tree made by the Perl `rrr-client` or by rsync from the same origin):
//!   adopted automatically;
//! * it is empty or missing (`lost+found` and a `.rrr/` without state do
//!   not count).
//!
//! Anything else is refused unless `--adopt` is given. When the state file
//! lives outside the tree, the tree must hold the marker `.rrr/id` with the
//! state's id: an unmounted filesystem (an empty mountpoint) must never
//! look like a mirror that only needs a fresh copy.

use crate::epoch::Epoch;
use std::fs;
use std::io::{self, Read};
use std::path::Path;

/// What identifies a collection across mirrors: the filenameroot and the
/// dirtymark of its principal.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct CollectionId {
    pub filenameroot: String,
    pub dirtymark: Option<Epoch>,
}

impl std::fmt::Display for CollectionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "filenameroot {}, dirtymark {}",
            crate::recentfile::shown_path(&self.filenameroot),
            self.dirtymark.as_ref().map_or("none", |d| d.as_str())
        )
    }
}

/// What the localroot holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TreeKind {
    Missing,
    /// Nothing but `lost+found` or rrr's own `.rrr/`.
    Empty,
    NonEmpty,
}

/// What is known when deciding.
#[derive(Clone, Debug, Default)]
pub(crate) struct Facts {
    /// A state file exists.
    pub has_state: bool,
    /// The state's id (`None`: a state written before ids existed).
    pub state_id: Option<String>,
    /// The collection the state belongs to, if it says.
    pub state_collection: Option<CollectionId>,
    /// The state's remote and SRC are one after normalisation.
    pub same_remote: bool,
    /// The state file is not inside the localroot.
    pub external_state: bool,
    /// The content of `<localroot>/.rrr/id`.
    pub marker: Option<String>,
    pub tree: Option<TreeKind>,
    /// The remote principal's collection; `None` when not fetched yet.
    pub remote: Option<CollectionId>,
    /// The collection of the principal found in the localroot, if any.
    pub local: Option<CollectionId>,
    /// `--adopt` was given.
    pub adopt: bool,
}

/// Why a tree is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Not empty, no state, not a mirror of this collection (a typo?).
    NotAMirror,
    /// The state belongs to another collection.
    OtherCollection,
    /// The state lives outside the tree and the tree lacks its marker.
    NoMarker,
}

/// The verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    /// The state belongs to this remote: go on.
    Owned,
    /// The state belongs to another remote of the same collection.
    Switch,
    /// An empty or missing tree: start a new mirror.
    Fresh,
    /// No state, but the tree holds this collection's principal.
    AutoAdopt,
    /// `--adopt`: make the tree a mirror of the remote.
    Adopt,
    /// The remote principal must be fetched to decide.
    NeedPrincipal,
    Refuse(Refusal),
}

/// Decide what rrr may do with the tree (module docs).
pub(crate) fn decide(f: &Facts) -> Decision {
    let refuse = |r: Refusal| if f.adopt { Decision::Adopt } else { Decision::Refuse(r) };
    if f.has_state {
        if f.external_state && (f.state_id.is_none() || f.marker != f.state_id) {
            // A state from before ids existed: its tree must show its collection.
            let legacy_ok = f.state_id.is_none()
                && f.marker.is_none()
                && f.local.is_some()
                && f.local == f.state_collection
                && f.tree == Some(TreeKind::NonEmpty);
            return if legacy_ok { Decision::Owned } else { refuse(Refusal::NoMarker) };
        }
        if f.same_remote {
            return Decision::Owned;
        }
        return match &f.remote {
            None => Decision::NeedPrincipal,
            Some(r) if f.state_collection.as_ref() == Some(r) => Decision::Switch,
            Some(_) => refuse(Refusal::OtherCollection),
        };
    }
    match f.tree {
        None | Some(TreeKind::Missing) | Some(TreeKind::Empty) => Decision::Fresh,
        Some(TreeKind::NonEmpty) => match &f.remote {
            None => Decision::NeedPrincipal,
            Some(r) if f.local.as_ref() == Some(r) => Decision::AutoAdopt,
            Some(_) => refuse(Refusal::NotAMirror),
        },
    }
}

/// What `dir` holds, for [`Facts::tree`].
pub(crate) fn tree_kind(dir: &Path) -> io::Result<TreeKind> {
    let rd = match fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(TreeKind::Missing),
        Err(e) => return Err(io::Error::new(e.kind(), format!("cannot read {}: {e}", dir.display()))),
    };
    for de in rd {
        let de = de?;
        let name = de.file_name();
        if name != "lost+found" && name != ".rrr" {
            return Ok(TreeKind::NonEmpty);
        }
    }
    Ok(TreeKind::Empty)
}

/// The marker file inside the tree.
pub(crate) fn marker_path(localroot: &Path) -> std::path::PathBuf {
    localroot.join(".rrr").join("id")
}

/// The id in `<localroot>/.rrr/id`, if there is one.
pub(crate) fn read_marker(localroot: &Path) -> Option<String> {
    let mut s = String::new();
    fs::File::open(marker_path(localroot)).ok()?.take(256).read_to_string(&mut s).ok()?;
    Some(s.trim().to_string()).filter(|s| !s.is_empty())
}

/// Write `<localroot>/.rrr/id` (atomically; the caller holds the lock).
pub(crate) fn write_marker(localroot: &Path, id: &str) -> io::Result<()> {
    let p = marker_path(localroot);
    if let Some(dir) = p.parent() {
        fs::create_dir_all(dir)?;
    }
    Ok(crate::store::write_atomic(&p, format!("{id}\n").as_bytes(), None)?)
}

/// A new random id for a state (128 bits, hex).
pub(crate) fn new_id() -> String {
    let mut b = [0u8; 16];
    let ok = fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut b)).is_ok();
    if !ok {
        // No /dev/urandom: time and pid are still unique enough per host.
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
        b.copy_from_slice(&(t ^ (u128::from(std::process::id()) << 96)).to_le_bytes());
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Whether the state file lies outside the localroot (lexically, after
/// making both absolute).
pub(crate) fn is_external(state_file: &Path, localroot: &Path) -> bool {
    let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    !abs(state_file).starts_with(abs(localroot))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn coll(root: &str, dm: &str) -> Option<CollectionId> {
        Some(CollectionId { filenameroot: root.into(), dirtymark: Some(Epoch::parse(dm).unwrap()) })
    }

    #[test]
    fn table() {
        use Decision::*;
        let base = Facts::default;
        let with_state = || Facts {
            has_state: true,
            state_id: Some("abc".into()),
            state_collection: coll("RECENT", "1.5"),
            tree: Some(TreeKind::NonEmpty),
            ..base()
        };
        let cases: Vec<(&str, Facts, Decision)> = vec![
            ("missing tree", Facts { tree: Some(TreeKind::Missing), ..base() }, Fresh),
            ("lost+found only", Facts { tree: Some(TreeKind::Empty), ..base() }, Fresh),
            ("a typo: undecided before the fetch", Facts { tree: Some(TreeKind::NonEmpty), ..base() }, NeedPrincipal),
            (
                "a typo",
                Facts { tree: Some(TreeKind::NonEmpty), remote: coll("RECENT", "1.5"), ..base() },
                Refuse(Refusal::NotAMirror),
            ),
            (
                "a typo, --adopt",
                Facts { tree: Some(TreeKind::NonEmpty), remote: coll("RECENT", "1.5"), adopt: true, ..base() },
                Adopt,
            ),
            (
                "a Perl client's mirror",
                Facts {
                    tree: Some(TreeKind::NonEmpty),
                    remote: coll("RECENT", "1.5"),
                    local: coll("RECENT", "1.5"),
                    ..base()
                },
                AutoAdopt,
            ),
            (
                "a mirror of another dirtymark",
                Facts {
                    tree: Some(TreeKind::NonEmpty),
                    remote: coll("RECENT", "2.5"),
                    local: coll("RECENT", "1.5"),
                    ..base()
                },
                Refuse(Refusal::NotAMirror),
            ),
            ("same remote", Facts { same_remote: true, ..with_state() }, Owned),
            ("other remote, undecided", with_state(), NeedPrincipal),
            ("other remote, same collection", Facts { remote: coll("RECENT", "1.5"), ..with_state() }, Switch),
            (
                "other remote, other collection",
                Facts { remote: coll("RECENT", "9.5"), ..with_state() },
                Refuse(Refusal::OtherCollection),
            ),
            ("other collection, --adopt", Facts { remote: coll("RECENT", "9.5"), adopt: true, ..with_state() }, Adopt),
            (
                "external state, marker matches",
                Facts { external_state: true, marker: Some("abc".into()), same_remote: true, ..with_state() },
                Owned,
            ),
            (
                "external state, unmounted tree",
                Facts { external_state: true, same_remote: true, tree: Some(TreeKind::Empty), ..with_state() },
                Refuse(Refusal::NoMarker),
            ),
            (
                "external state, another tree's marker",
                Facts { external_state: true, marker: Some("zzz".into()), same_remote: true, ..with_state() },
                Refuse(Refusal::NoMarker),
            ),
            (
                "external legacy state, tree shows the collection",
                Facts {
                    external_state: true,
                    state_id: None,
                    same_remote: true,
                    local: coll("RECENT", "1.5"),
                    ..with_state()
                },
                Owned,
            ),
            (
                "external legacy state, empty mountpoint",
                Facts {
                    external_state: true,
                    state_id: None,
                    same_remote: true,
                    tree: Some(TreeKind::Empty),
                    ..with_state()
                },
                Refuse(Refusal::NoMarker),
            ),
        ];
        for (what, facts, want) in cases {
            assert_eq!(decide(&facts), want, "{what}");
        }
    }

    #[test]
    fn tree_kinds_and_marker() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("t");
        assert_eq!(tree_kind(&root).unwrap(), TreeKind::Missing);
        fs::create_dir_all(root.join("lost+found")).unwrap();
        fs::create_dir_all(root.join(".rrr")).unwrap();
        assert_eq!(tree_kind(&root).unwrap(), TreeKind::Empty);
        assert_eq!(read_marker(&root), None);
        let id = new_id();
        assert_eq!(id.len(), 32);
        assert_ne!(id, new_id());
        write_marker(&root, &id).unwrap();
        assert_eq!(read_marker(&root), Some(id));
        fs::write(root.join("thesis.txt"), "x").unwrap();
        assert_eq!(tree_kind(&root).unwrap(), TreeKind::NonEmpty);
        assert!(is_external(Path::new("/var/lib/rrr/s.json"), Path::new("/srv/m")));
        assert!(!is_external(Path::new("/srv/m/.rrr/state.json"), Path::new("/srv/m")));
        assert!(is_external(Path::new("/srv/mirror2/s.json"), Path::new("/srv/m")));
    }
}
