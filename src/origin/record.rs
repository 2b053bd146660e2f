//! Recording a batch of events in the principal under its lock, all or
//! nothing, surviving a Perl writer's take-over of the lock.

use crate::collection::Collection;
use crate::origin::{self, Writer};
use crate::recentfile::{Event, Recentfile, RelPath};
use crate::update::{batch_update, Change, Outcome};
use anyhow::Result;
use std::collections::HashMap;

/// Record `changes` in the principal of `coll` under its lock, all or
/// nothing: `Ok` only once the whole batch is durably in the principal.
/// For the `update` command ([`crate::sys::signals::install_for_short_command`])
/// a SIGINT/SIGTERM before the write starts ends it with nothing written;
/// one that arrives later waits until the batch is committed. The watch
/// daemon's flush after a stop request goes through.
///
/// A Perl writer may take the lock over while it is held
/// (docs/decisions.md#locks). When [`origin::Loaded::save`] reports that,
/// the write may be
/// lost: wait for the lock again (the intruder holds it until it is
/// done), look for every event of the batch in the collection, and record
/// again what is missing, until a write keeps its lock throughout.
pub(crate) fn record(coll: &Collection, changes: &[Change], w: &Writer) -> Result<Outcome> {
    let principal = coll.principal().clone();
    // The event each change last went in as; `None`: not yet recorded.
    let mut recorded: Vec<Option<Event>> = vec![None; changes.len()];
    let mut outcome = None;
    for attempt in 1..=MAX_TAKEOVERS + 1 {
        let mut loaded = origin::load(coll, &principal, w)?;
        let todo: Vec<usize> = if attempt == 1 {
            if crate::sys::signals::wait_interrupted() {
                return Err(anyhow::Error::new(crate::sys::signals::Interrupted).context("nothing was recorded"));
            }
            (0..changes.len()).collect()
        } else {
            let missing = missing_events(coll, &loaded.rf, &recorded)?;
            if missing.is_empty() {
                tracing::info!("every event of this batch is in {}", loaded.path.display());
                break;
            }
            tracing::warn!(
                "recording {} of {} events again in {}: another writer overwrote them",
                missing.len(),
                changes.len(),
                loaded.path.display()
            );
            missing
        };
        let batch: Vec<Change> = todo.iter().map(|&i| changes[i].clone()).collect();
        let done = batch_update(&mut loaded.rf, principal.seconds(), &batch, &w.clock.now());
        // One map of the principal, not a scan of it per change: a watch
        // batch of 10,000 changes into a principal of 60,000 events would
        // otherwise compare 600 million paths.
        let newest = newest_by_path(&loaded.rf);
        for &i in &todo {
            recorded[i] = newest.get(&changes[i].path).map(|&e| e.clone());
        }
        let write = done.write;
        outcome.get_or_insert(done);
        if !write {
            break;
        }
        match loaded.save(coll, w) {
            Ok(()) => break,
            Err(e) if e.downcast_ref::<origin::TakenOver>().is_some() => {
                tracing::warn!("{e:#}; waiting for its lock, then checking that this batch is in the index");
                if attempt == MAX_TAKEOVERS + 1 {
                    return Err(e.context(format!(
                        "gave up after {MAX_TAKEOVERS} take-overs of the lock; some of this batch may be missing"
                    )));
                }
            }
            Err(e) => {
                let committed = e.downcast_ref::<crate::store::WriteError>().is_some_and(|w| w.committed);
                return Err(if committed {
                    e.context(format!("the events were recorded in {}", loaded.path.display()))
                } else {
                    e.context(format!("nothing was recorded in {}", loaded.path.display()))
                });
            }
        }
    }
    origin::ensure_principal_link(coll)?;
    Ok(outcome.unwrap_or_default())
}

/// Writes of one batch whose lock was taken over before `record` gives up
/// (each waits for the intruder first, so this is never reached by chance).
const MAX_TAKEOVERS: usize = 20;

/// Indices of `recorded` events that the collection no longer holds. An
/// event is held when the principal lists its path with that epoch or a
/// later one (a later event of the path supersedes it), or, once the
/// principal's `merged` has passed its epoch, when a larger file does.
fn missing_events(coll: &Collection, principal: &Recentfile, recorded: &[Option<Event>]) -> Result<Vec<usize>> {
    let held =
        |by_path: &HashMap<&RelPath, &Event>, e: &Event| by_path.get(&e.path).is_some_and(|x| x.epoch >= e.epoch);
    let in_principal = newest_by_path(principal);
    let merged = principal.meta.merged.epoch();
    let mut larger: Vec<Recentfile> = Vec::new();
    let mut out = Vec::new();
    for (i, e) in recorded.iter().enumerate() {
        let Some(e) = e else { continue };
        if held(&in_principal, e) {
            continue;
        }
        if merged.is_some_and(|m| *m >= e.epoch) {
            if larger.is_empty() {
                for iv in coll.intervals.iter().skip(1) {
                    if let Some(rf) = coll.read(iv)? {
                        larger.push(rf);
                    }
                }
            }
            if larger.iter().any(|rf| rf.events.iter().any(|x| x.path == e.path && x.epoch >= e.epoch)) {
                continue;
            }
        }
        out.push(i);
    }
    Ok(out)
}

/// Each path's newest event in `rf` (events are newest first).
fn newest_by_path(rf: &Recentfile) -> HashMap<&RelPath, &Event> {
    let mut by_path = HashMap::with_capacity(rf.events.len());
    for e in &rf.events {
        by_path.entry(&e.path).or_insert(e);
    }
    by_path
}
