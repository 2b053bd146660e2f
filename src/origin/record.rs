//! Recording a batch of events in the principal under its lock, all or
//! nothing, surviving a Perl writer's take-over of the lock.

use crate::collection::Collection;
use crate::epoch::Epoch;
use crate::origin::{self, hashing, journal, Writer};
use crate::recentfile::{Event, EventKind, Recentfile, RelPath};
use crate::update::{batch_update, Change};
use anyhow::Result;

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
///
/// A Perl writer may also rename an older copy over the principal after
/// an rrr writer exited (the double break): each record first records
/// again the acknowledged events of the journal ([`journal`]) that the
/// collection no longer holds, and notes its own in the journal before it
/// returns.
pub(crate) fn record(coll: &Collection, changes: &[Change], w: &Writer) -> Result<Recorded> {
    let principal = coll.principal().clone();
    let journal = journal::read(coll);
    // The batch, and the acknowledged events found missing, recorded again.
    let mut changes: Vec<Change> = changes.to_vec();
    // Hashes are taken before the lock and confirmed under it (origin::hashing).
    let mut early = crate::store::read_early(&coll.path_of(&principal)).ok();
    let beacon_hash = origin::beacon::hash_of(coll);
    let hashes = hashing::Setting::of(w.hash, early.as_ref().and_then(|e| e.recentfile()), beacon_hash.as_deref())?;
    let prehashed =
        if hashes.hashes() { hashing::prehash(&coll.root, &mut changes) } else { hashing::Prehashed::default() };
    let mut rerecorded: Vec<Change> = Vec::new();
    // The event each change last went in as; `None`: not yet recorded.
    let mut recorded: Vec<Option<Event>> = vec![None; changes.len()];
    let mut identity = None;
    let mut written = Recentfile::default();
    let mut before = None;
    let mut attempts = 0;
    for attempt in 1..=MAX_TAKEOVERS + 1 {
        attempts = attempt;
        let mut loaded = origin::load_after(coll, &principal, w, early.take())?;
        let hashes = hashing::Setting::of(w.hash, Some(&loaded.rf), beacon_hash.as_deref())?;
        if attempt == 1 {
            before = loaded.seen_id();
        }
        if attempt == 1 && crate::sys::signals::wait_interrupted() {
            return Err(anyhow::Error::new(crate::sys::signals::Interrupted).context("nothing was recorded"));
        }
        // Acknowledged events that another writer's rename took away
        // (after a take-over, too: the intruder's copy may lack more).
        let lost = journal::lost(coll, &loaded.rf, &journal)?;
        let again = journal::rerecords(&coll.root, &lost, &changes);
        if !again.is_empty() {
            tracing::warn!(
                "{} acknowledged event{} missing from {} (a writer renamed an older copy over it): re-recorded: {}",
                again.len(),
                if again.len() == 1 { " was" } else { "s were" },
                loaded.path.display(),
                again.iter().take(5).map(|c| c.path.to_string()).collect::<Vec<_>>().join(", ")
                    + if again.len() > 5 { ", …" } else { "" }
            );
            let n = again.len();
            rerecorded.extend(again.iter().cloned());
            // Older than the batch: recorded before it.
            changes.splice(0..0, again);
            recorded.splice(0..0, std::iter::repeat_n(None, n));
        }
        let todo: Vec<usize> = if attempt == 1 {
            (0..changes.len()).collect()
        } else {
            let mut missing = missing_events(coll, &loaded.rf, &recorded)?;
            missing.extend((0..changes.len()).filter(|&i| recorded[i].is_none()));
            missing.sort_unstable();
            missing.dedup();
            if missing.is_empty() {
                tracing::info!("every event of this batch is in {}", loaded.path.display());
                identity = journal::file_id(&loaded.path);
                written = std::mem::take(&mut loaded.rf);
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
        let mut batch: Vec<Change> = todo.iter().map(|&i| changes[i].clone()).collect();
        if hashes.hashes() {
            hashing::confirm(&coll.root, &mut batch, &prehashed);
        }
        hashes.apply(&mut loaded.rf);
        let done = batch_update(&mut loaded.rf, principal.seconds(), &batch, &w.clock.now());
        // One map of the principal, not a scan of it per change: a watch
        // batch of 10,000 changes into a principal of 60,000 events would
        // otherwise compare 600 million paths.
        let newest = journal::newest_by_path(&loaded.rf);
        for &i in &todo {
            recorded[i] = newest.get(&changes[i].path).map(|&e| e.clone());
        }
        if !done.write {
            identity = journal::file_id(&loaded.path);
            written = std::mem::take(&mut loaded.rf);
            break;
        }
        match loaded.save(coll, w) {
            Ok(()) => {
                identity = journal::file_id(&loaded.path);
                written = std::mem::take(&mut loaded.rf);
                break;
            }
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
    let acknowledged: Vec<Event> = recorded.into_iter().flatten().collect();
    let journal = journal::acknowledge(coll, journal, &acknowledged, rerecorded.len(), &written).err();
    Ok(Recorded { rerecorded, principal: identity, before: before.filter(|_| attempts == 1), journal_error: journal })
}

/// What [`record`] did.
#[derive(Debug)]
pub(crate) struct Recorded {
    /// Acknowledged events that had gone missing, recorded again (as the
    /// tree is now), before the batch.
    pub rerecorded: Vec<Change>,
    /// The principal as the record left it, for the watch daemon's
    /// re-check ([`journal::CHECK_EVERY`]).
    pub principal: Option<journal::FileId>,
    /// The principal this record found under its lock, when it wrote it
    /// in one go (no take-over): the caller that knew that file knows the
    /// new one as it plus the batch and the re-records.
    pub before: Option<journal::FileId>,
    /// The batch is recorded, but the journal of acknowledged events could
    /// not be written: a Perl writer's overwrite would not be undone.
    pub journal_error: Option<anyhow::Error>,
}

impl Recorded {
    /// The error to end a command with when the journal could not be
    /// written (the events are in the principal, unprotected).
    pub fn journal_result(self) -> Result<Recorded> {
        match self.journal_error {
            Some(e) => Err(e.context(
                "the events were recorded, but are not protected against an older copy a Perl writer may rename \
                 over the principal",
            )),
            None => Ok(self),
        }
    }
}

/// Record again the acknowledged events that the collection no longer
/// holds (see [`journal`]), if any: `None` when nothing was missing (and
/// nothing was written). For the writers that record no batch of their
/// own: `aggregate` before its cascade, the watch daemon's re-check,
/// `fsck --repair`.
pub(crate) fn restore_acknowledged(coll: &Collection, w: &Writer) -> Result<Option<Recorded>> {
    let path = coll.path_of(coll.principal());
    let Some(rf) = crate::store::read_file(&path)? else { return Ok(None) };
    if journal::lost(coll, &rf, &journal::read(coll))?.is_empty() {
        return Ok(None);
    }
    record(coll, &[], w).map(Some)
}

/// Writes of one batch whose lock was taken over before `record` gives up
/// (each waits for the intruder first, so this is never reached by chance).
const MAX_TAKEOVERS: usize = 20;

/// Indices of `recorded` events that the collection no longer holds
/// ([`journal::unheld`], the rule the journal's entries are checked by).
fn missing_events(coll: &Collection, principal: &Recentfile, recorded: &[Option<Event>]) -> Result<Vec<usize>> {
    let (index, events): (Vec<usize>, Vec<(&RelPath, &Epoch, EventKind)>) =
        recorded.iter().enumerate().filter_map(|(i, e)| e.as_ref().map(|e| (i, (&e.path, &e.epoch, e.kind)))).unzip();
    Ok(journal::unheld(coll, principal, &events)?.into_iter().map(|k| index[k]).collect())
}
