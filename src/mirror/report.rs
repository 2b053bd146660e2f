//! What a pass reports and the types the mirror's files share: the pass
//! report ([`PassReport`]) with its refused events and failing paths, a
//! fetched recentfile, rsync's itemized output counted, and the test hook
//! that aborts at a named point. A leaf: the mirror's files import it,
//! it imports none of them.

use crate::epoch::Epoch;
use crate::recentfile::{shown_path, EventKind, Recentfile, RelPath};
use serde::Serialize;

/// A failing (or missing) path as the pass reports it.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct FailingReport {
    pub path: RelPath,
    pub epoch: Option<Epoch>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    pub attempts: u64,
}

impl From<&crate::mirror::Failing> for FailingReport {
    fn from(f: &crate::mirror::Failing) -> FailingReport {
        FailingReport { path: f.path.clone(), epoch: f.epoch.clone(), message: f.message.clone(), attempts: f.attempts }
    }
}

/// What one pass did (the `--json` object has `"kind": "pass"`).
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct PassReport {
    pub kind: &'static str,
    /// The tree (absolute) and SRC, so that the passes of several trees can be told apart.
    pub localroot: String,
    pub remote: String,
    /// The pass finished without errors (refused events are not errors).
    pub ok: bool,
    /// Every event of the principal and the files it needs is done.
    pub complete: bool,
    pub bootstrap: bool,
    pub dry_run: bool,
    /// Recentfiles read this pass, smallest first.
    pub read: Vec<String>,
    /// Files rsync really transferred (its itemized output).
    pub transferred: u64,
    pub bytes: u64,
    pub deleted: u64,
    /// Delete events skipped (`--skip-deletes`) or left pending (`--max-delete`).
    pub deletes_skipped: u64,
    pub deletes_pending: u64,
    /// `--max-delete` stopped deletes in this run (or [`Self::mass_deletes_held`]).
    pub max_delete_reached: bool,
    /// A whole-tree pass stopped before deleting more than 10 % of the
    /// mirror, or the delete events of an incremental pass were held for
    /// the same reason (`--max-delete N` covering it, or
    /// `--accept-deletes`, go on).
    pub mass_deletes_held: bool,
    /// Deletes the mass-delete guard held in this pass: the whole-tree
    /// pass's files, or the delete events kept pending.
    pub deletes_held: u64,
    pub refused: Vec<Refusal>,
    /// Paths the origin could not send, after this pass.
    pub failing: Vec<FailingReport>,
    /// Paths rsync cannot carry, after this pass (docs/decisions.md#quarantine).
    pub quarantined: Vec<FailingReport>,
    /// Paths new events list that the origin has not had for the grace
    /// (docs/decisions.md#missing-upstream), after this pass: the pass is
    /// not complete while there are any.
    pub missing_upstream: Vec<FailingReport>,
    /// Events skipped because their epoch is more than an hour ahead.
    pub future: u64,
    pub vanished: u64,
    /// Errors, each with its message.
    pub errors: Vec<String>,
    pub newest_applied: Option<Epoch>,
    pub dirtymark_changed: bool,
    pub seconds: f64,
    /// `--dry-run`: what would be done, `new PATH` / `delete PATH`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub would: Vec<String>,
}

/// A fetched recentfile, parsed.
pub(super) struct Fetched {
    pub(super) name: String,
    pub(super) rf: Recentfile,
}

/// One refused event, as reported.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Refusal {
    pub file: String,
    pub epoch: Epoch,
    #[serde(rename = "type")]
    pub kind: Option<EventKind>,
    pub path: RelPath,
    pub reason: String,
}

/// Test hook (debug builds only: a release rrr ignores the variable):
/// `RRR_TEST_ABORT_AT=before-deletes` or `after-chunk:N` aborts the process
/// there (like kill -9: no cleanup), for the resume tests.
pub(super) fn abort_point(what: &str, n: u64) {
    #[cfg(not(debug_assertions))]
    let _ = (what, n);
    #[cfg(debug_assertions)]
    if let Ok(v) = std::env::var("RRR_TEST_ABORT_AT") {
        let hit = match v.split_once(':') {
            Some((w, k)) => w == what && k.parse::<u64>().ok() == Some(n),
            None => v == what,
        };
        if hit {
            tracing::error!("test hook: aborting at {v}");
            std::process::abort();
        }
    }
}

/// What rsync's `transfer::OUT_FORMAT` lines said: one line per item it changed,
/// so this counts what really arrived (not what was asked for).
#[derive(Debug, Default)]
pub(super) struct Itemized {
    pub(super) files: u64,
    pub(super) bytes: u64,
    pub(super) deleted: u64,
    /// Of those, files (not directories: a dry run names them with a `/`).
    pub(super) deleted_files: u64,
    /// Keep [`Itemized::would`] (a dry run).
    pub(super) listing: bool,
    /// rsync said "IO error encountered -- skipping file deletion" (on its
    /// stdout: an I/O error at the origin made it leave `--delete` undone,
    /// from there on).
    pub(super) deletion_skipped: bool,
    /// `new PATH` / `delete PATH`.
    pub(super) would: Vec<String>,
}

impl Itemized {
    pub(super) fn listing(listing: bool) -> Itemized {
        Itemized { listing, ..Itemized::default() }
    }

    pub(super) fn line(&mut self, line: &str) {
        if self.stats_line(line) {
            return;
        }
        if line.starts_with("IO error encountered -- skipping file deletion") {
            self.deletion_skipped = true;
            return;
        }
        if let Some(rest) = line.strip_prefix("*deleting") {
            self.deleted += 1;
            let name = rest.trim_start().split_once(' ').map_or("", |(_, n)| n);
            if !name.ends_with('/') {
                self.deleted_files += 1;
            }
            if self.listing {
                self.would.push(format!("delete {}", shown_path(crate::sys::rsync::unescape(name))));
            }
            return;
        }
        let mut it = line.splitn(3, ' ');
        let (Some(item), Some(len), Some(name)) = (it.next(), it.next(), it.next()) else { return };
        let b = item.as_bytes();
        if b.len() != 11 {
            return;
        }
        // `>f`: a file received; `cL` etc.: a symlink (or device) created.
        let received = b[0] == b'>' && b[1] == b'f';
        let created = b[0] == b'c' && b[1] != b'd';
        if received || created {
            self.files += 1;
            if received {
                self.bytes += len.parse::<u64>().unwrap_or(0);
            }
            if self.listing {
                self.would.push(format!("new {}", shown_path(crate::sys::rsync::unescape(name))));
            }
        }
    }

    /// A line of rsync's `--stats` (a whole-tree pass that lists nothing:
    /// see [`Mirror::bootstrap_command`]), counted the way the itemized
    /// lines would be: regular files received and links, devices or
    /// specials created; their bytes; deletes. Returns whether it was one.
    fn stats_line(&mut self, line: &str) -> bool {
        fn number(s: &str) -> u64 {
            let digits: String = s.trim_start().chars().take_while(|c| c.is_ascii_digit() || *c == ',').collect();
            digits.replace(',', "").parse().unwrap_or(0)
        }
        if let Some(rest) = line.strip_prefix("Number of regular files transferred:") {
            self.files += number(rest);
        } else if let Some(rest) = line.strip_prefix("Total transferred file size:") {
            self.bytes += number(rest);
        } else if let Some(rest) = line.strip_prefix("Number of deleted files:") {
            self.deleted += number(rest);
        } else if let Some(rest) = line.strip_prefix("Number of created files:") {
            // "424 (reg: 382, dir: 41, link: 1)": the regular ones are
            // among those transferred.
            let kinds = rest.split_once('(').map_or("", |(_, k)| k.trim_end_matches(')'));
            for kind in kinds.split(',') {
                if let Some((k, n)) = kind.split_once(':') {
                    if matches!(k.trim(), "link" | "dev" | "special") {
                        self.files += number(n);
                    }
                }
            }
        } else {
            return false;
        }
        true
    }
}
