//! The origin's beacon on a mirror (issue 35, docs/decisions.md#freshness):
//! a whole-tree pass finds `<principal>.beacon.json` in the index; from
//! then on every pass fetches it with the principal (one more name in the
//! same rsync call, no connection of its own) and, once
//! the pass has installed the recentfiles, installs it byte for byte beside
//! them, so that a downstream tier fetches the origin's own beacon from us
//! and `origin_lag` (now − the beacon's `time`, `mirror::health`) measures
//! every tier against the origin, not against its upstream.
//!
//! A beacon is held only when it is valid, not older than the one held
//! from the same origin, and says no newer epoch than the principal this
//! mirror installed (else it describes recentfiles we do not hold, and
//! would claim a freshness we lack). An upstream without a beacon (an
//! origin older than the beacon, or a Perl one) changes nothing: the
//! mirror keeps what it holds, and `origin_lag` is absent.
//!
//! Verifying a signed beacon (`--trust-key`) is `mirror::trusted`'s; this
//! module only reads what the pass fetched.

use super::remote::FetchDir;
use super::state::HeldBeacon;
use super::Mirror;
use crate::store;
use ::recentfile::beacon::{self, Beacon};
use anyhow::{Context, Result};
use std::fs;

/// The bytes of the small regular file at `path`, `None` when there is
/// none (or it is not a regular file of at most `limit` bytes).
fn small_file(path: &std::path::Path, limit: u64) -> Result<Option<Vec<u8>>> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_file() && m.len() <= limit => {
            Ok(Some(fs::read(path).with_context(|| format!("cannot read {}", path.display()))?))
        }
        _ => Ok(None),
    }
}

/// A beacon as fetched: its bytes (republished as they are) and content.
pub(super) type Read = (Vec<u8>, Beacon);

/// The beacon of `principal` fetched into `dir`: `None` when there is
/// none, `Some(Err(why))` when it is not a small regular file or not a
/// valid beacon, else its bytes and content. Hostile input: read with a
/// bound, never followed through a symlink.
pub(super) fn fetched_beacon(dir: &FetchDir, principal: &str) -> Result<Option<Result<Read, String>>> {
    let path = dir.file(&beacon::beacon_name(principal));
    match fs::symlink_metadata(&path) {
        Ok(m) if m.file_type().is_file() && m.len() <= beacon::MAX_BYTES as u64 => {
            let bytes = fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
            Ok(Some(Beacon::parse(&bytes).map(|b| (bytes, b)).map_err(|e| e.to_string())))
        }
        Ok(_) => Ok(Some(Err("not a small regular file".to_string()))),
        Err(_) => Ok(None),
    }
}

impl Mirror<'_> {
    /// After a pass that installed the recentfiles of `principal`: install
    /// the beacon fetched with it, if there is one and it may be held
    /// (module docs). A beacon that is refused is logged, never an error
    /// of the pass.
    pub(super) fn install_origin_beacon(&mut self, dir: &FetchDir, principal: &str) -> Result<()> {
        if self.cfg.dry_run {
            return Ok(());
        }
        let name = beacon::beacon_name(principal);
        let (bytes, b) = match fetched_beacon(dir, principal)? {
            None => return Ok(()),
            Some(Err(e)) => {
                tracing::warn!("{}: {e}; not held", self.cfg.remote.source(&name));
                return Ok(());
            }
            Some(Ok(x)) => x,
        };
        if let Some(held) = self.state.origin_beacon.as_ref().filter(|h| h.origin == b.origin) {
            if b.time < held.time {
                return Ok(());
            }
        }
        let ours = self.state.installed.get(principal);
        if b.newest_epoch.as_ref().is_some_and(|n| ours.is_none_or(|o| n > o)) {
            tracing::info!("{}: describes events newer than ours, not held yet", self.cfg.remote.source(&name));
            return Ok(());
        }
        // With --trust-key the verified beacon and its signature are
        // installed as a pair by `trusted::install_beacon`. Without, the
        // signature fetched with the beacon is republished beside it, byte
        // for byte and unverified, as the origin writes them (beacon, then
        // signature), so that a tier below with --trust-key can verify
        // through this one; a tier that fetched none removes its own, which
        // no longer belongs to the beacon it serves.
        if self.trust.is_none() {
            let dst = self.cfg.localroot.join(&name);
            store::write_atomic(&dst, &bytes, None).with_context(|| format!("cannot install {}", dst.display()))?;
            let sig_name = beacon::signature_name(principal);
            let sig_dst = self.cfg.localroot.join(&sig_name);
            match small_file(&dir.file(&sig_name), crate::trust::MAX_SIG_BYTES as u64)? {
                Some(sig) => store::write_atomic(&sig_dst, &sig, None)
                    .with_context(|| format!("cannot install {}", sig_dst.display()))?,
                None => match fs::remove_file(&sig_dst) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        return Err(e).with_context(|| format!("cannot remove {}", sig_dst.display()));
                    }
                    _ => {}
                },
            }
        }
        self.state.origin_beacon =
            Some(HeldBeacon { origin: b.origin, time: b.time, interval: b.interval, signed: b.signed });
        Ok(())
    }
}
