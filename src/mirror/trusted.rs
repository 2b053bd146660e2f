//! Verifying what a mirror fetched against the origin's signed beacon
//! (issue 34; `--trust-key`, docs/decisions.md#the-signed-beacon): the
//! mirror half of `recentfile::beacon` and `crate::trust`.
//!
//! With trust keys, every recentfile a pass fetches is checked before it
//! is read for anything but its layout ([`Mirror::trust_fetched`]): once
//! the recentfiles are in the fetch dir, a *second* transport call fetches
//! the beacon and its signature. Because the origin writes the beacon
//! before it renames a recentfile, a beacon fetched after a recentfile
//! vouches for it as its current or its previous version
//! ([`Beacon::accept`]); one fetched in the same call might not (rsync
//! sends in name order: `RECENT-6h.yaml` after `RECENT-1h.yaml.beacon.json`),
//! so the order is made by two calls, at the price of one connection per
//! fetch. The signature must verify with a trusted key, the beacon must not
//! go back behind the last one accepted (`State::trusted`: rollback, other
//! origin, an older generation), and each fetched recentfile must be
//! vouched for; a mismatch (the origin wrote twice between our two calls)
//! fetches the file and the beacon again, [`ATTEMPTS`] times in all,
//! then fails the pass naming the file. Nothing of a refused fetch is
//! installed or used: the pass fails before it reads the events.
//!
//! A beacon older than `--max-signature-age` is *stale* (freeze): the
//! pass goes on with what the signature vouches for, but deletes nothing
//! on its strength ([`Mirror::index_stale`]: deletes stay pending, a
//! whole-tree pass keeps extraneous files), and `check` says CRITICAL.
//!
//! A tier republishes byte for byte: the beacon and its signature are
//! installed beside our copies of the recentfiles ([`Mirror::install_beacon`],
//! before the principal, as the origin orders them), so that a tier-2
//! mirror verifies against the origin's key through any number of tiers.
//!
//! The files the accepted recentfiles list are checked against their
//! signed events' `size`/`sha256` by `mirror::staging`.

use super::remote::FetchDir;
use super::state::TrustedBeacon;
use super::Mirror;
use crate::store;
use crate::trust::TrustKeys;
use anyhow::{bail, Context, Result};
use recentfile::beacon::{self, Beacon, Sha256Hex, TrustError};
use std::fs;
use std::io;

/// Rounds of (fetch the beacon, check the recentfiles against it) before
/// a mismatch fails the pass.
pub(super) const ATTEMPTS: u32 = 3;

/// A trust failure, kept in the state for `check` ("signature").
#[derive(Debug)]
pub(crate) struct Untrusted(pub String);

impl std::fmt::Display for Untrusted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Untrusted {}

impl TrustedBeacon {
    fn of(b: &Beacon, key: String, now: &crate::epoch::Epoch, max_age: u64) -> TrustedBeacon {
        TrustedBeacon {
            origin: b.origin.clone(),
            time: b.time.clone(),
            newest_epoch: b.newest_epoch.clone(),
            dirtymark: b.dirtymark.clone(),
            key,
            accepted: Some(now.clone()),
            max_age,
        }
    }

    /// As a file-less beacon, for [`Beacon::check_progress`].
    fn as_beacon(&self) -> Beacon {
        let mut b = Beacon::new(self.origin.clone(), self.time.clone());
        b.newest_epoch = self.newest_epoch.clone();
        b.dirtymark = self.dirtymark.clone();
        b
    }
}

/// Whether `offered` may follow `accepted`: [`Beacon::check_progress`],
/// except that a *newer* dirtymark is the origin's next generation (a
/// dirtymark is the epoch it was set at, so a replay cannot carry a newer
/// one than the accepted beacon's): accepted, as the mirror resyncs on it.
fn progress(offered: &Beacon, accepted: &Beacon) -> Result<(), TrustError> {
    match offered.check_progress(accepted) {
        Err(TrustError::OtherGeneration { accepted: a, offered: Some(o) }) if a.as_ref().is_none_or(|a| &o > a) => {
            Ok(())
        }
        r => r,
    }
}

/// Read a fetched file, at most `limit` bytes; `None` when it is absent.
fn read_small(dir: &FetchDir, name: &str, limit: usize) -> Result<Option<Vec<u8>>> {
    let p = dir.file(name);
    match fs::symlink_metadata(&p) {
        Ok(m) if !m.file_type().is_file() => bail!("remote {name} is not a regular file"),
        Ok(m) if m.len() > limit as u64 => bail!("remote {name} has {} bytes, more than {limit}", m.len()),
        Ok(_) => Ok(Some(fs::read(&p).with_context(|| format!("cannot read {}", p.display()))?)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", p.display())),
    }
}

/// What [`verify_fetched`] needs of its caller: fetching more names into
/// the fetch dir, naming a file for errors, and judging an accepted
/// beacon against what was accepted before (rollback).
pub(crate) trait Verifier {
    /// Fetch `names` into `dir` (one transport call, with the caller's retries).
    fn fetch_names(&mut self, dir: &FetchDir, names: &[&str]) -> Result<()>;
    /// `name` as its source shows it (`rsync://host/module/name`).
    fn source(&self, name: &str) -> String;
    /// A beacon whose signature verified (by the key `key`): refuse it
    /// when it goes back behind the one accepted before, else record it.
    fn accept_beacon(&mut self, b: &Beacon, key: String) -> Result<(), TrustError>;
}

/// Check the recentfiles `names` fetched into `dir` (those absent are
/// skipped: the origin has none) against the beacon of `principal`,
/// fetched after them (module docs): [`ATTEMPTS`] rounds, then the
/// error names the file. Shared by rmirror and `news --remote`.
pub(crate) fn verify_fetched(
    v: &mut dyn Verifier,
    keys: &TrustKeys,
    dir: &FetchDir,
    principal: &str,
    names: &[String],
    limit: u64,
) -> Result<()> {
    let (bname, sname) = (beacon::beacon_name(principal), beacon::signature_name(principal));
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let mut attempt = 1;
    loop {
        dir.settle()?;
        // The beacon of an earlier call (a whole index fetches it too)
        // must not count as arrived: this call's is the one after the files.
        for n in [&bname, &sname] {
            let _ = fs::remove_file(dir.file(n));
        }
        v.fetch_names(dir, &[&bname, &sname])?;
        dir.settle()?;
        let Some(bytes) = read_small(dir, &bname, beacon::MAX_BYTES)? else {
            bail!("{} does not exist: the upstream is not signed, and --trust-key refuses it", v.source(&bname));
        };
        let Some(sig) = read_small(dir, &sname, crate::trust::MAX_SIG_BYTES)? else {
            bail!("{} does not exist: the upstream is not signed, and --trust-key refuses it", v.source(&sname));
        };
        let key = keys.verify(&bytes, &sig).map_err(|e| anyhow::anyhow!("{}: {e}", v.source(&sname)))?;
        let b = Beacon::parse(&bytes).map_err(|e| anyhow::anyhow!("{}: {e}", v.source(&bname)))?;
        v.accept_beacon(&b, key).map_err(|e| anyhow::anyhow!("{}: {e}", v.source(&bname)))?;
        let mut mismatched = Vec::new();
        for name in names {
            let Some(bytes) = read_small(dir, name, limit)? else { continue };
            match b.accept(name, &Sha256Hex::of(&bytes)) {
                Ok(_) => {}
                Err(e @ TrustError::NotListed { .. }) => bail!("{}: {e}", v.source(name)),
                Err(e) => mismatched.push((name.clone(), e)),
            }
        }
        let Some((first, e)) = mismatched.first() else { return Ok(()) };
        if attempt >= ATTEMPTS {
            bail!("{}: not vouched for by the signed beacon after {ATTEMPTS} fetches: {e}", v.source(first));
        }
        attempt += 1;
        tracing::info!("{first}: fetched while the origin wrote it, fetching again");
        let again: Vec<&str> = mismatched.iter().map(|(n, _)| n.as_str()).collect();
        for n in &again {
            let _ = fs::remove_file(dir.file(n));
        }
        v.fetch_names(dir, &again)?;
    }
}

impl Verifier for Mirror<'_> {
    fn fetch_names(&mut self, dir: &FetchDir, names: &[&str]) -> Result<()> {
        self.fetch(dir, names)
    }

    fn source(&self, name: &str) -> String {
        self.cfg.remote.source(name)
    }

    fn accept_beacon(&mut self, b: &Beacon, key: String) -> Result<(), TrustError> {
        if let Some(t) = &self.state.trusted {
            progress(b, &t.as_beacon())?;
        }
        let max_age = self.cfg.max_signature_age.as_secs();
        self.state.trusted = Some(TrustedBeacon::of(b, key, &self.clock.now(), max_age));
        Ok(())
    }
}

impl Mirror<'_> {
    /// Whether deletes are held because the accepted beacon is older than
    /// `--max-signature-age` (freeze).
    pub(super) fn index_stale(&self) -> bool {
        self.trust.is_some() && self.stale_reason().is_some()
    }

    /// Why the last accepted beacon is stale, if it is.
    fn stale_reason(&self) -> Option<TrustError> {
        let t = self.state.trusted.as_ref()?;
        t.as_beacon().check_age(&self.clock.now(), self.cfg.max_signature_age.as_secs()).err()
    }

    /// With `--trust-key`: check the recentfiles `names` fetched into `dir`
    /// (those absent are skipped: the origin has none) against the beacon
    /// of `principal`, fetched after them (module docs). Without, nothing.
    /// A refusal is recorded in the state (`trust_error`) and fails the pass.
    pub(super) fn trust_fetched(&mut self, dir: &FetchDir, principal: &str, names: &[String]) -> Result<()> {
        if self.trust.is_none() {
            return Ok(());
        }
        let keys = self.trust.clone().expect("checked above");
        let limit = self.cfg.max_recentfile_size;
        match verify_fetched(self, &keys, dir, principal, names, limit) {
            Ok(()) => {
                self.state.trust_error = None;
                if let Some(TrustError::Stale { age, max_age }) = self.stale_reason() {
                    tracing::warn!(
                        "the origin's signature is {age} s old, older than --max-signature-age {max_age} s: \
                         nothing is deleted on the strength of this index"
                    );
                }
                Ok(())
            }
            Err(e) => {
                let msg = format!("{e:#}");
                self.state.error("signature");
                self.state.trust_error = Some(msg.clone());
                Err(Untrusted(msg).into())
            }
        }
    }

    /// Republish the beacon and its signature as fetched into `dir`
    /// (module docs): installed before the principal, as the origin
    /// orders them. Without `--trust-key`, or when the fetch has none
    /// (never fetched in this pass), nothing.
    pub(super) fn install_beacon(&mut self, dir: &FetchDir, principal: &str) -> Result<()> {
        if self.trust.is_none() || self.cfg.dry_run {
            return Ok(());
        }
        for name in [beacon::beacon_name(principal), beacon::signature_name(principal)] {
            let Some(bytes) = read_small(dir, &name, beacon::MAX_BYTES)? else { continue };
            let dst = self.cfg.localroot.join(&name);
            store::write_atomic(&dst, &bytes, None).with_context(|| format!("cannot install {}", dst.display()))?;
        }
        Ok(())
    }
}
