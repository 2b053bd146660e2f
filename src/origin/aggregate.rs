//! The aggregate engine: the cascade from the principal into the larger
//! files (protocol.md 10), for `rrr aggregate`, `init --aggregate` and the
//! watch daemon. Cheap when nothing is due: the cascade stops at the first
//! file whose age does not call for a merge, which it learns from `stat`
//! alone, so the big files are not read then.

use crate::aggregate::{file_age, merge, merge_due};
use crate::collection::Collection;
use crate::origin::{self, Writer};
use crate::update::batch_update;
use anyhow::Result;

/// What one aggregate run did: the intervals written.
#[derive(Debug, Default, serde::Serialize)]
pub(crate) struct Report {
    pub written: Vec<String>,
    pub merges: usize,
    /// Acknowledged events recorded again before the cascade (see
    /// [`crate::origin::journal`]); `--json` prints their count.
    #[serde(rename = "rerecorded", serialize_with = "count")]
    pub rerecorded: Option<crate::origin::record::Recorded>,
}

fn count<S: serde::Serializer>(r: &Option<crate::origin::record::Recorded>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(r.as_ref().map_or(0, |r| r.rerecorded.len() as u64))
}

/// Merge each due file into the next larger one; the intervals written.
pub(crate) fn aggregate(coll: &Collection, force: bool, keep_deletes: bool, w: &Writer) -> Result<Report> {
    // What a writer's older copy of the principal took away goes back first.
    let mut report = Report { rerecorded: crate::origin::record::restore_acknowledged(coll, w)?, ..Report::default() };
    let ivs = &coll.intervals;
    let now = w.clock.now();
    let last = ivs.len() - 1;
    let due = |i: usize| merge_due(i, ivs, force, target_age(coll, &ivs[i + 1], &now));
    let last_path = coll.path_of(&ivs[last]);
    std::thread::scope(|scope| -> Result<Report> {
        // The largest file is most of the reading (Z: 100 MB at a million
        // events). When the cascade will reach it (the ages, from `stat`,
        // do not change before then), it is read on another thread while
        // the smaller merges run, without its lock: the lock is taken in
        // its turn, smallest first as every writer does, and the early
        // read is used only if the file is still the one read. Any problem
        // with the early read (or no thread) means the usual read under
        // the lock, which reports it.
        let mut prefetch = (last > 0 && (0..last).all(due))
            .then(|| std::thread::Builder::new().spawn_scoped(scope, || crate::store::read_early(&last_path).ok()).ok())
            .flatten();
        let mut small = origin::load(coll, &ivs[0], w)?;
        if batch_update(&mut small.rf, ivs[0].seconds(), &[], &now).write {
            small.save(coll, w)?;
            report.written.push(ivs[0].spec().to_string());
        }
        for i in 0..last {
            if !due(i) {
                break;
            }
            // Between merges every file is whole: a signal may stop the cascade here.
            if crate::sys::signals::wait_interrupted() {
                return Err(crate::sys::signals::Interrupted.into());
            }
            let early = prefetch
                .take_if(|_| i + 1 == last)
                .and_then(|handle| handle.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
            let mut big = origin::load_after(coll, &ivs[i + 1], w, early)?;
            if merge(&mut big.rf, &ivs[i + 1], &mut small.rf, &ivs[i], &now, keep_deletes) {
                big.save(coll, w)?;
                small.save(coll, w)?;
                report.merges += 1;
                for s in [ivs[i + 1].spec(), ivs[i].spec()] {
                    if !report.written.iter().any(|x| x == s) {
                        report.written.push(s.to_string());
                    }
                }
            }
            small = big;
        }
        drop(small);
        origin::ensure_principal_link(coll)?;
        Ok(report)
    })
}

/// Seconds since `iv`'s file was last written, as the reference counts
/// them ([`file_age`]; `None`: no such file).
fn target_age(coll: &Collection, iv: &crate::interval::Interval, now: &crate::epoch::Epoch) -> Option<f64> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(coll.path_of(iv)).ok()?;
    Some(file_age(now, meta.mtime()))
}
