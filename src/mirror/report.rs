//! What a pass reports and the types the mirror's files share: the pass
//! report ([`PassReport`]) with its refused events and failing paths, a
//! fetched recentfile, rsync's itemized output counted, and the test hook
//! that aborts at a named point. A leaf: the mirror's files import it,
//! it imports none of them.

use crate::epoch::Epoch;
use crate::recentfile::{EventKind, Recentfile, RelPath};
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
    /// With several upstreams: the one this pass read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
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
    /// With `--trust-key`: paths whose bytes did not match their signed
    /// event, after this pass (never installed; `mirror::staging`).
    pub tampered: Vec<crate::mirror::state::Tampered>,
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
