//! The watch daemon's log: one line per batch (and per start, rescan,
//! aggregate, stop, warning, error, and every few seconds while a backlog
//! is read) through the common channel, and the
//! counters since the start that the `--prometheus` textfile reports.

use super::wall;
use serde_json::Value;
use std::cell::Cell;
use std::time::{Duration, Instant};

/// The log: one line per batch (and per start, rescan, aggregate, stop,
/// warning, error) through the common channel ([`crate::output::log`]: text or
/// JSON Lines with a `kind` field, in the `watch` span naming the root),
/// and the counts the `--prometheus` textfile reports.
#[derive(Default)]
pub(super) struct Log {
    pub(super) batches: Cell<u64>,
    pub(super) news: Cell<u64>,
    pub(super) deletes: Cell<u64>,
    pub(super) rescans: Cell<u64>,
    /// Cascades run to the end (rrrgo's `rrr_aggregation_runs_total`).
    pub(super) aggregations: Cell<u64>,
    /// Acknowledged events recorded again (`rerecorded` lines).
    pub(super) rerecorded: Cell<u64>,
    pub(super) warnings: Cell<u64>,
    pub(super) errors: Cell<u64>,
    pub(super) last_batch: Cell<Option<f64>>,
    pub(super) last_aggregate: Cell<Option<f64>>,
    /// When the last line was written.
    last_line: Cell<Option<Instant>>,
}

impl Log {
    /// How long since the last line (since ever: no line yet).
    pub(super) fn silent_for(&self) -> Duration {
        self.last_line.get().map_or(Duration::MAX, |t| t.elapsed())
    }

    pub(super) fn emit(&self, kind: &str, fields: Value, plain: impl FnOnce() -> String) {
        let add = |c: &Cell<u64>, key: &str| c.set(c.get() + fields[key].as_u64().unwrap_or(0));
        match kind {
            "batch" => {
                self.batches.set(self.batches.get() + 1);
                self.last_batch.set(Some(wall()));
            }
            "rescan" => self.rescans.set(self.rescans.get() + 1),
            "rerecorded" => add(&self.rerecorded, "count"),
            "aggregate" => self.last_aggregate.set(Some(wall())),
            _ => {}
        }
        if matches!(kind, "batch" | "rescan" | "start") {
            add(&self.news, "new");
            add(&self.deletes, "delete");
        }
        self.last_line.set(Some(Instant::now()));
        crate::output::log::emit(tracing::Level::INFO, kind, &fields, &plain());
    }

    pub(super) fn warn(&self, message: String) {
        self.warnings.set(self.warnings.get() + 1);
        self.last_line.set(Some(Instant::now()));
        tracing::warn!("{message}");
    }

    pub(super) fn error(&self, message: String) {
        self.errors.set(self.errors.get() + 1);
        self.last_line.set(Some(Instant::now()));
        tracing::error!("{message}");
    }
}
