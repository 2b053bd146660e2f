//! A tree with several upstreams (docs/decisions.md#several-upstreams):
//! which one a pass reads, never going backwards.
//!
//! `--remote` repeated, or `remote = ["…", "…"]` in a `[[tree]]` table,
//! names copies of one collection at several places (every one the same
//! principal file name, `options::upstreams_of`). With one upstream none
//! of this runs: the pass reads it as it always did.
//!
//! With several, before a pass fetches its principal
//! ([`Mirror::choose_upstream`]), every upstream that is not backing off
//! is asked for its principal and the origin's beacon beside it
//! (`<principal>.beacon.json`, in the same call) at once, each on a thread
//! of its own, each one rsync call bounded by the tree's `--timeout` (`contimeout` for the
//! connection): a dead upstream delays the pass by at most that, however
//! many there are (the heartbeat goes on meanwhile, as during a long
//! fetch). [`select`] (pure) then judges each answer against what
//! this mirror already has ([`Known`]):
//!
//! - **foreign**: another collection: another filenameroot, or another
//!   dirtymark than the one the state records, or a beacon naming another
//!   origin than the one whose beacon this mirror holds (two origins may
//!   share a filenameroot and even a dirtymark; an upstream without a
//!   beacon names none and is judged by the rest). A changed dirtymark
//!   (or origin) is the
//!   protocol's "the origin rewrote its past, forget what is done" only
//!   when *every* upstream answered with the same new one: a single
//!   upstream of another collection, or a lone survivor, never makes a
//!   mirror forget (and resync against, deleting what it lacks). A mirror
//!   that owns nothing yet takes the collection most upstreams answer
//!   with, the first given on a tie;
//! - **behind**: its principal's newest epoch is older than the newest
//!   this mirror installed or applied under that dirtymark
//!   (`State::newest_by_dirtymark`): reading it would republish an older
//!   index downstream, and its whole-tree pass would delete newer files;
//! - **unreachable**: it did not answer (or answered with no valid
//!   principal); it backs off: skipped for the loop's pause after as many
//!   failures in a row (`looping::pause_after`: the interval, doubled per
//!   failure, at most 10 minutes), then asked again. When every upstream
//!   is backing off, all are asked. Foreign and behind ones are asked
//!   every pass (they answer; they may catch up, or the origin's new
//!   dirtymark reach every upstream);
//! - of the rest the **fresh**est is used ([`freshness_of`]: the origin's
//!   time in its beacon, else its newest epoch; the first given on a tie),
//!   the others are **stale** (usable, older). A beacon that names a newer
//!   epoch than the principal beside it, or another dirtymark, is ignored
//!   ([`beacon_claim`]): copied from elsewhere, it would rank a stale or
//!   lying upstream freshest.
//!
//! No usable upstream fails the pass, its error naming each upstream and
//! why. A chosen upstream whose principal then fails in the pass (fetch,
//! parse, `--trust-key` verification, the check below) is counted
//! unreachable and the next usable one is read ([`Mirror::reject_chosen`]),
//! each at most once per pass. The pass then fetches its principal from the chosen upstream as
//! with one remote (one more connection, to it), and checks that principal
//! once more ([`Mirror::check_upstream_answer`]): it may have moved
//! meanwhile. The state records the upstream used and each one's result
//! ([`UpstreamRecord`]); `status`, `status --json` and the Prometheus
//! textfile show them (`mirror::health`).

use super::ownership::CollectionId;
use super::remote::{check_meta, FetchDir, FetchWatch, Remote, RsyncSettings};
use super::report::Fetched;
use super::Mirror;
use crate::epoch::Epoch;
use crate::recentfile::Recentfile;
use ::recentfile::beacon::Beacon;
use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What one upstream's last answer was worth.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Verdict {
    /// The freshest that answered (the one used, or as fresh as it).
    Fresh,
    /// Usable, but older than the one used.
    Stale,
    /// Older than what this mirror installed from the same collection: refused.
    Behind,
    /// Another collection (filenameroot or dirtymark): refused.
    Foreign,
    /// No answer, or no valid principal.
    Unreachable,
}

impl Verdict {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Verdict::Fresh => "fresh",
            Verdict::Stale => "stale",
            Verdict::Behind => "behind",
            Verdict::Foreign => "foreign",
            Verdict::Unreachable => "unreachable",
        }
    }

    /// A failing upstream, which backs off. A foreign one answered, and is
    /// asked every pass: the pass in which every upstream shows the same
    /// new dirtymark is the origin's dirtymark change.
    fn fails(self) -> bool {
        self == Verdict::Unreachable
    }

    /// An upstream that may be read.
    fn usable(self) -> bool {
        matches!(self, Verdict::Fresh | Verdict::Stale)
    }
}

/// One upstream's last result, as the state keeps it (in the order given).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct UpstreamRecord {
    /// The upstream, as given.
    pub remote: String,
    /// Its last result; `None` before it was first asked.
    pub result: Option<Verdict>,
    /// Why it was refused or not reached.
    pub message: Option<String>,
    /// The newest epoch of its principal at its last answer.
    pub newest: Option<Epoch>,
    /// When it was last asked.
    pub last_try: Option<Epoch>,
    /// Failures (unreachable) in a row.
    pub failures: u32,
    /// Not asked again before this (backing off).
    pub next_try: Option<Epoch>,
}

/// What an upstream answered: its collection and how fresh it is.
#[derive(Clone, Debug, PartialEq, Default)]
pub(crate) struct Answer {
    pub collection: CollectionId,
    /// The origin its beacon names (`None`: it serves no beacon that
    /// may be read, [`beacon_claim`]).
    pub origin: Option<String>,
    /// Why the beacon it serves was ignored, if it was.
    pub beacon_ignored: Option<String>,
    /// The newest epoch its principal knows ([`newest_epoch`]).
    pub newest: Option<Epoch>,
    /// What ranks it ([`freshness_of`]).
    pub freshness: Option<Epoch>,
}

/// What the mirror already has, that an upstream must not go back behind.
#[derive(Clone, Debug, Default)]
pub(crate) struct Known {
    /// The collection the state records, once it owns something.
    pub collection: Option<CollectionId>,
    /// The origin whose beacon this mirror holds (or, with `--trust-key`,
    /// accepted last), once it owns something.
    pub origin: Option<String>,
    /// `State::newest_by_dirtymark`.
    pub newest_by_dirtymark: BTreeMap<String, Epoch>,
}

/// The key of `State::newest_by_dirtymark`: the dirtymark, `""` for none.
pub(crate) fn dirtymark_key(dm: Option<&Epoch>) -> String {
    dm.map_or_else(String::new, |d| d.as_str().to_string())
}

/// The newest epoch a principal knows: its newest event, or the epoch it
/// merged into the next file through (an origin quiet for longer than the
/// principal spans lists no event).
pub(crate) fn newest_epoch(rf: &Recentfile) -> Option<Epoch> {
    let newest = rf.newest().map(|e| e.epoch.clone());
    let merged = rf.meta.merged.epoch().cloned();
    newest.max(merged)
}

/// Whether an upstream's beacon may speak for the principal it serves
/// (pure): not when it is of another generation (dirtymark), nor when it
/// names a newer epoch than that principal knows. The latter describes an
/// index this upstream does not serve: a lying or broken upstream could
/// otherwise be ranked freshest by a copied newer beacon. An ignored
/// beacon gives neither freshness nor identity (`Err`: why).
pub(crate) fn beacon_claim(b: &Beacon, principal: &Recentfile) -> Result<(), String> {
    if b.dirtymark != principal.meta.dirtymark {
        return Err(format!(
            "its beacon is of dirtymark {}, its principal of {}: beacon ignored",
            b.dirtymark.as_ref().map_or("none", |d| d.as_str()),
            principal.meta.dirtymark.as_ref().map_or("none", |d| d.as_str())
        ));
    }
    let newest = newest_epoch(principal);
    if let Some(n) = b.newest_epoch.as_ref().filter(|n| newest.as_ref().is_none_or(|m| *n > m)) {
        return Err(format!(
            "its beacon names epoch {n}, newer than its principal's {}: beacon ignored",
            newest.as_ref().map_or("nothing", |m| m.as_str())
        ));
    }
    Ok(())
}

/// How fresh an upstream is, to rank those that answered (pure): the
/// origin's time in its beacon ([`beacon_claim`] allowing), the time up to
/// which the origin vouches that this index is current, even when nothing
/// changed since; else (or when newer) the newest epoch its principal
/// knows. An idle origin's tier that stopped holds an old beacon and ranks
/// below one that keeps fetching fresh ones. "Behind" stays judged by
/// [`newest_epoch`], which is what an index installs.
pub(crate) fn freshness_of(beacon: Option<&Beacon>, principal: &Recentfile) -> Option<Epoch> {
    let time = beacon.filter(|b| beacon_claim(b, principal).is_ok()).map(|b| b.time.clone());
    newest_epoch(principal).max(time)
}

/// An upstream's answer: the principal `name` (`rf`) fetched into `dir`
/// with its beacon, if it serves one.
fn answer_of(dir: &FetchDir, name: &str, rf: &Recentfile, filenameroot: &str) -> Result<Answer> {
    let (beacon, beacon_ignored) = match super::freshness::fetched_beacon(dir, name)? {
        None => (None, None),
        Some(Err(e)) => (None, Some(format!("its beacon: {e}; ignored"))),
        Some(Ok((_, b))) => match beacon_claim(&b, rf) {
            Ok(()) => (Some(b), None),
            Err(e) => (None, Some(e)),
        },
    };
    Ok(Answer {
        collection: CollectionId { filenameroot: filenameroot.to_string(), dirtymark: rf.meta.dirtymark.clone() },
        origin: beacon.as_ref().map(|b| b.origin.clone()),
        beacon_ignored,
        newest: newest_epoch(rf),
        freshness: freshness_of(beacon.as_ref(), rf),
    })
}

/// The result of [`select`].
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Selection {
    /// The upstream to use.
    pub chosen: Option<usize>,
    /// Per upstream (as given): its verdict and why, or `None` when it was
    /// not asked (backing off).
    pub verdicts: Vec<Option<(Verdict, String)>>,
    /// The collection the chosen one belongs to.
    pub collection: Option<CollectionId>,
    /// The origin it belongs to, when a beacon names it.
    pub origin: Option<String>,
}

/// Judge the answers (per upstream, as given; `None`: not asked) against
/// what the mirror has (see the module docs). Pure.
pub(crate) fn select(answers: &[Option<Result<Answer, String>>], known: &Known) -> Selection {
    let ok: Vec<(usize, &Answer)> =
        answers.iter().enumerate().filter_map(|(i, a)| Some((i, a.as_ref()?.as_ref().ok()?))).collect();
    let all_answered = answers.iter().all(|a| matches!(a, Some(Ok(_))));
    let reference = match &known.collection {
        Some(c) => {
            // Every upstream agrees on a new dirtymark of the same files:
            // the origin rewrote its past (protocol: forget and resync).
            let first = ok.first().map(|(_, a)| &a.collection);
            match first {
                Some(new)
                    if all_answered
                        && new.filenameroot == c.filenameroot
                        && new != c
                        && ok.iter().all(|(_, a)| a.collection == *new) =>
                {
                    Some(new.clone())
                }
                _ => Some(c.clone()),
            }
        }
        None => {
            // The collection most upstreams answer with, the first on a tie.
            let count = |c: &CollectionId| ok.iter().filter(|(_, a)| a.collection == *c).count();
            let mut best: Option<&CollectionId> = None;
            for (_, a) in &ok {
                if best.is_none_or(|b| count(&a.collection) > count(b)) {
                    best = Some(&a.collection);
                }
            }
            best.cloned()
        }
    };
    let origin = reference_origin(&ok, known, all_answered, reference.as_ref());
    let floor = reference.as_ref().and_then(|r| known.newest_by_dirtymark.get(&dirtymark_key(r.dirtymark.as_ref())));
    let mut verdicts: Vec<Option<(Verdict, String)>> = answers
        .iter()
        .map(|a| match a {
            None => None,
            Some(Err(e)) => Some((Verdict::Unreachable, e.clone())),
            Some(Ok(a)) => Some(match (&reference, floor) {
                (Some(r), _) if a.collection != *r => (
                    Verdict::Foreign,
                    format!("another collection ({}) than this mirror's ({r}): refused", a.collection),
                ),
                (_, _) if a.origin.is_some() && origin.is_some() && a.origin != origin => (
                    Verdict::Foreign,
                    format!(
                        "its beacon names origin {:?}, but this mirror follows origin {:?}: another \
                         collection, refused",
                        a.origin.as_deref().unwrap_or_default(),
                        origin.as_deref().unwrap_or_default()
                    ),
                ),
                (_, Some(floor)) if a.newest.as_ref().is_none_or(|n| n < floor) => (
                    Verdict::Behind,
                    format!(
                        "its index ends at {}, older than {} this mirror already has: refused (never backwards)",
                        a.newest.as_ref().map_or("nothing", |n| n.as_str()),
                        floor.as_str()
                    ),
                ),
                _ => (Verdict::Fresh, a.beacon_ignored.clone().unwrap_or_default()),
            }),
        })
        .collect();
    let usable: Vec<bool> = verdicts.iter().map(|v| matches!(v, Some((Verdict::Fresh, _)))).collect();
    let mut chosen: Option<usize> = None;
    for &(i, a) in &ok {
        if usable[i] && chosen.is_none_or(|c| a.freshness > ok.iter().find(|(j, _)| *j == c).unwrap().1.freshness) {
            chosen = Some(i);
        }
    }
    if let Some(c) = chosen {
        let best = ok.iter().find(|(j, _)| *j == c).map(|(_, a)| a.freshness.clone()).unwrap_or_default();
        for &(i, a) in &ok {
            if usable[i] && a.freshness < best {
                let n = a.newest.as_ref().map_or("nothing", |n| n.as_str());
                let mut why = format!("older than the one used (its index ends at {n})");
                if let Some(note) = &a.beacon_ignored {
                    why.push_str(&format!("; {note}"));
                }
                verdicts[i] = Some((Verdict::Stale, why));
            }
        }
    }
    Selection { chosen, verdicts, collection: chosen.and(reference), origin: chosen.and(origin) }
}

/// The origin the answers are judged against (as [`select`]'s collection
/// is): the one this mirror follows, unless every upstream answered with
/// a beacon naming the same other one (the origin was renamed, or the
/// mirror moved with every upstream: as a new dirtymark, a change seen
/// everywhere is the origin's). A mirror that follows none yet takes the
/// one most upstreams of `collection` name, the first given on a tie.
/// Upstreams without a beacon name none and are judged by the rest.
fn reference_origin(
    ok: &[(usize, &Answer)],
    known: &Known,
    all_answered: bool,
    collection: Option<&CollectionId>,
) -> Option<String> {
    let named: Vec<&String> = ok
        .iter()
        .filter(|(_, a)| collection.is_none_or(|c| a.collection == *c))
        .filter_map(|(_, a)| a.origin.as_ref())
        .collect();
    if let Some(k) = &known.origin {
        let moved = all_answered
            && named.len() == ok.len()
            && named.first().is_some_and(|n| *n != k && named.iter().all(|m| m == n));
        return Some(if moved { named[0].clone() } else { k.clone() });
    }
    let count = |o: &String| named.iter().filter(|m| **m == o).count();
    let mut best: Option<&String> = None;
    for o in &named {
        if best.is_none_or(|b| count(o) > count(b)) {
            best = Some(o);
        }
    }
    best.cloned()
}

/// What the upstreams answered in one pass ([`Mirror::ask_upstreams`]):
/// chosen from once, and again when the chosen one fails in the pass.
pub(super) struct Asked {
    /// Each upstream's record before this pass's verdicts.
    records: Vec<UpstreamRecord>,
    /// Per upstream (as given); `None`: not asked (backing off).
    answers: Vec<Option<Result<Answer, String>>>,
    /// When they were asked.
    now: Epoch,
    /// The one chosen last.
    chosen: Option<usize>,
}

/// What a selection decided, kept until the pass that uses it records it
/// in the state (a selection made before ownership was settled would be
/// lost with the state it replaced).
#[derive(Clone, Debug)]
pub(crate) struct Selected {
    /// The upstream used, as given.
    pub remote: String,
    /// Its collection, which the pass's own fetch must show again.
    pub collection: CollectionId,
    /// Its origin, when a beacon names it: the pass's fetch must not name another.
    pub origin: Option<String>,
    /// It served a beacon when asked: the pass fetches it with the
    /// principal (an origin that starts publishing one is found at once).
    pub has_beacon: bool,
    /// Every upstream's record after this selection.
    pub records: Vec<UpstreamRecord>,
}

/// Ask one upstream for its principal and its beacon: one rsync call for
/// the link (with the principal it pointed to last time and that one's
/// beacon), one more when it points elsewhere now; no retry (a dead
/// upstream costs one `--timeout`). A beacon the upstream lacks is simply
/// absent (this call is waited for to its end anyway).
fn probe(remote: &Remote, settings: &RsyncSettings, last: Option<&str>, max_size: u64) -> Result<Answer> {
    let dir = FetchDir::new(&std::env::temp_dir())?;
    let fetch = |names: &[&str]| -> Result<()> {
        let mut quiet = |_: super::transport::Output<'_>| {};
        let mut watch = FetchWatch { max_size, on_output: &mut quiet, quiet: super::pass_progress::quiet_period() };
        dir.fetch_until_landed(remote, settings, names, &mut watch)?;
        dir.settle()
    };
    let mut names = vec![remote.name.as_str()];
    if remote.is_link() {
        names.extend(last.filter(|l| *l != remote.name));
    }
    let beacon = (!remote.is_link() || last.is_some()).then(|| {
        ::recentfile::beacon::beacon_name(if remote.is_link() { last.unwrap_or_default() } else { &remote.name })
    });
    names.extend(beacon.as_deref());
    fetch(&names)?;
    let name = if remote.is_link() {
        let Some(target) = dir.resolve_principal(&remote.name, max_size)? else {
            bail!("{} does not exist", remote.source(&remote.name));
        };
        if !dir.landed(&target) {
            fetch(&[&target, &::recentfile::beacon::beacon_name(&target)])?;
        }
        target
    } else {
        remote.name.clone()
    };
    let Some(rf) = dir.read(&name, max_size)? else {
        bail!("principal {} does not exist", remote.source(&name));
    };
    let layout = check_meta(&name, &rf)?;
    answer_of(&dir, &name, &rf, &layout.filenameroot)
}

impl Mirror<'_> {
    /// What the state says the mirror has: its collection once it owns
    /// something, and the newest epochs per dirtymark.
    fn known(&self) -> Known {
        let owns = !self.state.installed.is_empty() || !self.state.done_union().is_empty();
        let mut newest_by_dirtymark = self.state.newest_by_dirtymark.clone();
        if owns {
            // A state written before it kept this (a mirror given a second
            // upstream later): its copies and applied events tell.
            let had = self.state.installed.values().chain(&self.state.newest_applied).max().cloned();
            let key = dirtymark_key(self.state.dirtymark.as_ref());
            if let (Some(had), false) = (had, newest_by_dirtymark.contains_key(&key)) {
                newest_by_dirtymark.insert(key, had);
            }
        }
        let origin = self
            .state
            .trusted
            .as_ref()
            .map(|t| t.origin.clone())
            .or_else(|| self.state.origin_beacon.as_ref().map(|b| b.origin.clone()))
            .filter(|_| owns);
        Known { collection: self.state.collection().filter(|_| owns), origin, newest_by_dirtymark }
    }

    /// With several upstreams, before the principal is fetched: ask each
    /// that is not backing off (at once, bounded), for
    /// [`Mirror::choose_upstream`].
    pub(super) fn ask_upstreams(&mut self) -> Result<Asked> {
        let now = self.clock.now();
        let upstreams = self.cfg.upstreams.clone();
        let records: Vec<UpstreamRecord> = upstreams
            .iter()
            .map(|u| {
                let old = self.state.upstreams.iter().find(|r| r.remote == u.src);
                UpstreamRecord { remote: u.src.clone(), ..old.cloned().unwrap_or_default() }
            })
            .collect();
        let due: Vec<bool> =
            records.iter().map(|r| r.next_try.as_ref().is_none_or(|t| t.to_f64() <= now.to_f64())).collect();
        let every = !due.contains(&true);
        let (settings, last, max) =
            (self.cfg.rsync.clone(), self.state.principal.clone(), self.cfg.max_recentfile_size);
        let mut answers: Vec<Option<Result<Answer, String>>> = vec![None; upstreams.len()];
        std::thread::scope(|s| {
            let (tx, rx) = std::sync::mpsc::channel();
            let mut waiting = 0;
            for (i, u) in upstreams.iter().enumerate().filter(|(i, _)| due[*i] || every) {
                let (tx, settings, last) = (tx.clone(), &settings, last.as_deref());
                waiting += 1;
                s.spawn(move || {
                    let answer = probe(u, settings, last, max).map_err(|e| format!("{e:#}"));
                    let _ = tx.send((i, answer));
                });
            }
            drop(tx);
            // A slow upstream keeps the heartbeat going, as a long fetch does.
            while waiting > 0 {
                match rx.recv_timeout(super::pass_progress::quiet_period()) {
                    Ok((i, answer)) => {
                        answers[i] = Some(answer);
                        waiting -= 1;
                    }
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => self.beat_now("recentfiles"),
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
                }
            }
        });
        for (i, a) in answers.iter_mut().enumerate() {
            if a.is_none() && (due[i] || every) {
                *a = Some(Err("internal error: the probe ended without an answer".into()));
            }
        }
        if self.stopped() {
            return Err(crate::sys::signals::Interrupted.into());
        }
        Ok(Asked { records, answers, now, chosen: None })
    }

    /// [`select`] from what was asked, and read the chosen one from here on
    /// (`cfg.remote` and the transport). An error names every upstream and
    /// why none can be used. `again`: a choice after the chosen one failed
    /// ([`Mirror::reject_chosen`]): the others' lines were logged already.
    pub(super) fn choose_upstream(&mut self, asked: &mut Asked, again: bool) -> Result<()> {
        let (now, answers) = (asked.now.clone(), &asked.answers);
        let upstreams = self.cfg.upstreams.clone();
        let mut records = asked.records.clone();
        let sel = select(answers, &self.known());
        for ((r, a), v) in records.iter_mut().zip(answers).zip(&sel.verdicts) {
            let Some((verdict, why)) = v else { continue };
            // A warning when an upstream's result changes, not every pass
            // (a tier-1 that stays behind would say so 4,320 times a day).
            let news = r.result != Some(*verdict);
            r.result = Some(*verdict);
            r.message = Some(why.clone()).filter(|w| !w.is_empty());
            r.newest = a.as_ref().and_then(|a| a.as_ref().ok()).and_then(|a| a.newest.clone());
            r.last_try = Some(now.clone());
            if verdict.fails() {
                r.failures += 1;
                let pause = super::looping::pause_after(self.cfg.interval, r.failures);
                r.next_try = Some(Epoch::from_clock(now.to_f64() + pause.as_secs_f64()));
            } else {
                r.failures = 0;
                r.next_try = None;
            }
            if verdict.usable() {
                continue;
            }
            let mut line = format!("upstream {}: {} ({why})", r.remote, verdict.as_str());
            if let Some(t) = &r.next_try {
                let pause = (t.to_f64() - now.to_f64()).max(0.0);
                line.push_str(&format!("; asked again after {}", crate::output::human::duration(pause)));
            }
            if news && !again {
                tracing::warn!("{line}");
            } else {
                tracing::debug!("{line}");
            }
        }
        self.state.upstreams = records.clone();
        asked.chosen = sel.chosen;
        let (Some(i), Some(collection)) = (sel.chosen, sel.collection) else {
            let why: Vec<String> = records
                .iter()
                .map(|r| {
                    let v = r.result.map_or("not asked", Verdict::as_str);
                    let m = r.message.as_deref().map_or(String::new(), |m| format!(": {m}"));
                    format!("{} {v}{m}", r.remote)
                })
                .collect();
            bail!("no upstream can be used: {}", why.join("; "));
        };
        let chosen = upstreams[i].clone();
        if chosen.src != self.cfg.remote.src {
            tracing::info!("reading upstream {} (was {})", chosen.src, self.cfg.remote.src);
            self.transport = std::rc::Rc::new(super::transport::rsync::RsyncTransport::new(
                chosen.clone(),
                self.cfg.rsync.clone(),
                &self.state.no_overlap,
            ));
            self.cfg.remote = chosen;
        }
        self.state.upstream = Some(self.cfg.remote.src.clone());
        let has_beacon = answers[i].as_ref().and_then(|a| a.as_ref().ok()).is_some_and(|a| a.origin.is_some());
        self.selected =
            Some(Selected { remote: self.cfg.remote.src.clone(), collection, origin: sel.origin, has_beacon, records });
        Ok(())
    }

    /// The chosen upstream failed in the pass (its principal could not be
    /// fetched, read or verified, or its answer changed): it counts as
    /// unreachable for this selection (it backs off), and the pass may
    /// choose another ([`Mirror::choose_upstream`] again). Each upstream is
    /// read at most once per pass this way.
    pub(super) fn reject_chosen(&mut self, asked: &mut Asked, e: &anyhow::Error) {
        let Some(i) = asked.chosen.take() else { return };
        tracing::warn!(
            "upstream {}: chosen, then failed: {e:#}; trying the next usable one",
            self.cfg.upstreams[i].src
        );
        asked.answers[i] = Some(Err(format!("chosen, then failed in the pass: {e:#}")));
        self.selected = None;
    }

    /// The principal the pass fetched from the chosen upstream, once more
    /// against the selection: the same collection, not behind (it may
    /// have changed since it was asked). A refusal names the upstream.
    pub(super) fn check_upstream_answer(&self, dir: &FetchDir, f: &Fetched, filenameroot: &str) -> Result<()> {
        let Some(sel) = &self.selected else { return Ok(()) };
        let answer = answer_of(dir, &f.name, &f.rf, filenameroot)?;
        let known = Known { collection: Some(sel.collection.clone()), origin: sel.origin.clone(), ..self.known() };
        if let Some((v, why)) = select(&[Some(Ok(answer))], &known).verdicts.remove(0) {
            if !v.usable() {
                bail!("upstream {}: {why}", sel.remote);
            }
        }
        Ok(())
    }

    /// Record the selection the pass used in its state (after ownership
    /// replaced the state the selection was made with, if it did).
    pub(super) fn record_selection(&mut self) {
        if let Some(sel) = &self.selected {
            self.state.upstreams = sel.records.clone();
            self.state.upstream = Some(sel.remote.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(s: &str) -> Epoch {
        s.parse().unwrap()
    }

    fn coll(root: &str, dm: &str) -> CollectionId {
        CollectionId { filenameroot: root.into(), dirtymark: Some(e(dm)) }
    }

    fn ans(dm: &str, newest: &str) -> Option<Result<Answer, String>> {
        Some(Ok(Answer {
            collection: coll("RECENT", dm),
            newest: Some(e(newest)),
            freshness: Some(e(newest)),
            ..Answer::default()
        }))
    }

    fn known(dm: &str, newest: &str) -> Known {
        Known {
            collection: Some(coll("RECENT", dm)),
            origin: None,
            newest_by_dirtymark: [(dm.to_string(), e(newest))].into_iter().collect(),
        }
    }

    fn words(s: &Selection) -> Vec<&'static str> {
        s.verdicts.iter().map(|v| v.as_ref().map_or("-", |(v, _)| v.as_str())).collect()
    }

    #[test]
    fn the_freshest_that_answers_is_used() {
        let s = select(
            &[ans("1.5", "100"), ans("1.5", "200"), Some(Err("connection refused".into()))],
            &known("1.5", "90"),
        );
        assert_eq!((s.chosen, words(&s)), (Some(1), vec!["stale", "fresh", "unreachable"]));
        // A tie: the first given.
        let s = select(&[ans("1.5", "200"), ans("1.5", "200")], &known("1.5", "90"));
        assert_eq!((s.chosen, words(&s)), (Some(0), vec!["fresh", "fresh"]));
        // Not asked (backing off): no verdict, not used.
        let s = select(&[None, ans("1.5", "100")], &known("1.5", "90"));
        assert_eq!((s.chosen, words(&s)), (Some(1), vec!["-", "fresh"]));
    }

    #[test]
    fn never_backwards() {
        // The fresh one is gone; the stale one is older than what we have.
        let s = select(&[ans("1.5", "100"), Some(Err("timeout".into()))], &known("1.5", "150"));
        assert_eq!((s.chosen, words(&s)), (None, vec!["behind", "unreachable"]));
        assert!(s.verdicts[0].as_ref().unwrap().1.contains("never backwards"));
        // As new as what we have is not behind.
        let s = select(&[ans("1.5", "150")], &known("1.5", "150"));
        assert_eq!(s.chosen, Some(0));
        // What we had under another dirtymark does not count.
        let mut k = known("1.5", "150");
        k.newest_by_dirtymark.insert("2.5".into(), e("10"));
        k.collection = Some(coll("RECENT", "2.5"));
        assert_eq!(select(&[ans("2.5", "100")], &k).chosen, Some(0));
    }

    #[test]
    fn another_collection_is_refused_unless_every_upstream_moved() {
        let s = select(&[ans("9.5", "300"), ans("1.5", "200")], &known("1.5", "90"));
        assert_eq!((s.chosen, words(&s)), (Some(1), vec!["foreign", "fresh"]));
        assert!(s.verdicts[0].as_ref().unwrap().1.contains("another collection"), "{:?}", s.verdicts);
        // Every upstream answers with the same new dirtymark: the origin's
        // "dirtymark changed, forget" (the pass then forgets and resyncs).
        let s = select(&[ans("9.5", "300"), ans("9.5", "200")], &known("1.5", "900"));
        assert_eq!((s.chosen, s.collection.clone()), (Some(0), Some(coll("RECENT", "9.5"))));
        // One did not answer: it may still be on the old one; no change.
        let s = select(&[ans("9.5", "300"), Some(Err("down".into()))], &known("1.5", "90"));
        assert_eq!((s.chosen, words(&s)), (None, vec!["foreign", "unreachable"]));
        // Another filenameroot is never the same collection.
        let other = Some(Ok(Answer {
            collection: coll("OTHER", "1.5"),
            newest: Some(e("5")),
            freshness: Some(e("5")),
            ..Answer::default()
        }));
        let s = select(&[other.clone(), other], &known("1.5", "1"));
        assert_eq!((s.chosen, words(&s)), (None, vec!["foreign", "foreign"]));
    }

    #[test]
    fn a_new_mirror_takes_the_collection_most_upstreams_have() {
        let s = select(&[ans("9.5", "300"), ans("1.5", "100"), ans("1.5", "200")], &Known::default());
        assert_eq!((s.chosen, words(&s)), (Some(2), vec!["foreign", "stale", "fresh"]));
        let s = select(&[ans("9.5", "300"), ans("1.5", "100")], &Known::default());
        assert_eq!((s.chosen, words(&s)), (Some(0), vec!["fresh", "foreign"]), "a tie: the first given");
        let s = select(&[Some(Err("down".into()))], &Known::default());
        assert_eq!((s.chosen, s.collection), (None, None));
    }

    fn named(dm: &str, newest: &str, origin: &str) -> Option<Result<Answer, String>> {
        let mut a = ans(dm, newest);
        if let Some(Ok(a)) = &mut a {
            a.origin = Some(origin.into());
        }
        a
    }

    #[test]
    fn another_origin_is_another_collection() {
        let mut k = known("1.5", "90");
        k.origin = Some("a.example".into());
        // Same filenameroot and dirtymark, fresher, but another origin.
        let s = select(&[named("1.5", "300", "b.example"), named("1.5", "100", "a.example")], &k);
        assert_eq!((s.chosen, words(&s)), (Some(1), vec!["foreign", "fresh"]));
        let why = &s.verdicts[0].as_ref().unwrap().1;
        assert!(why.contains("\"b.example\"") && why.contains("\"a.example\"") && why.contains("refused"), "{why}");
        assert_eq!(s.origin.as_deref(), Some("a.example"));
        // An upstream without a beacon names no origin: judged by the rest.
        let s = select(&[ans("1.5", "300"), named("1.5", "100", "a.example")], &k);
        assert_eq!((s.chosen, words(&s)), (Some(0), vec!["fresh", "stale"]));
        // Every upstream names the same other origin (renamed): followed.
        let s = select(&[named("1.5", "300", "c.example"), named("1.5", "100", "c.example")], &k);
        assert_eq!((s.chosen, s.origin.as_deref()), (Some(0), Some("c.example")));
        // ... but not while one is silent, or one has no beacon.
        let s = select(&[named("1.5", "300", "c.example"), Some(Err("down".into()))], &k);
        assert_eq!((s.chosen, words(&s)), (None, vec!["foreign", "unreachable"]));
        let s = select(&[named("1.5", "300", "c.example"), ans("1.5", "100")], &k);
        assert_eq!((s.chosen, words(&s)), (Some(1), vec!["foreign", "fresh"]));
        // A new mirror follows the origin most upstreams name, the first on a tie.
        let s = select(
            &[named("1.5", "300", "b.example"), named("1.5", "100", "a.example"), named("1.5", "200", "a.example")],
            &Known::default(),
        );
        assert_eq!((s.chosen, words(&s)), (Some(2), vec!["foreign", "stale", "fresh"]));
        let s = select(&[named("1.5", "100", "a.example"), named("1.5", "300", "b.example")], &Known::default());
        assert_eq!((s.chosen, words(&s)), (Some(0), vec!["fresh", "foreign"]));
    }

    fn principal(dm: &str, newest: &str) -> Recentfile {
        let mut rf = Recentfile::from_events(vec![crate::recentfile::Event::new(
            e(newest),
            "a.txt",
            crate::recentfile::EventKind::New,
        )]);
        rf.meta.dirtymark = Some(e(dm));
        rf
    }

    fn beacon(dm: &str, time: &str, newest: &str) -> Beacon {
        let mut b = Beacon::new("a.example", e(time));
        b.dirtymark = Some(e(dm));
        b.newest_epoch = Some(e(newest));
        b
    }

    #[test]
    fn freshness_is_the_beacons_time_unless_it_lies() {
        let rf = principal("1.5", "100");
        assert_eq!(freshness_of(None, &rf), Some(e("100")), "no beacon: the newest epoch");
        // An idle origin still vouches for this index at its beacon's time.
        assert_eq!(freshness_of(Some(&beacon("1.5", "500", "100")), &rf), Some(e("500")));
        assert_eq!(freshness_of(Some(&beacon("1.5", "500", "90")), &rf), Some(e("500")));
        // A beacon behind its principal never makes it look older.
        assert_eq!(freshness_of(Some(&beacon("1.5", "95", "90")), &rf), Some(e("100")));
        // A beacon naming a newer epoch than the principal it stands
        // beside (copied from a fresher tier), or of another generation:
        // ignored.
        let lie = beacon("1.5", "900", "200");
        assert!(beacon_claim(&lie, &rf).unwrap_err().contains("newer than its principal"));
        assert_eq!(freshness_of(Some(&lie), &rf), Some(e("100")));
        let other = beacon("2.5", "900", "100");
        assert!(beacon_claim(&other, &rf).unwrap_err().contains("dirtymark"));
        assert_eq!(freshness_of(Some(&other), &rf), Some(e("100")));
    }
}
