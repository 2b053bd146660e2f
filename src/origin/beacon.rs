//! Writing the beacon `RECENT-1h.yaml.beacon.json` (and its signature
//! `….beacon.json.sig`) at the origin: the edge half of
//! `recentfile::beacon` (docs/decisions.md#the-signed-beacon).
//!
//! A collection has a beacon once a writer was given `--sign-key` or
//! `--origin-name`, or `rrr beacon` ran on it; from then on every rrr
//! writer keeps it current, because the file exists. Under the beacon's
//! own lock (`….beacon.json.lock`, always taken after a recentfile's,
//! so never a deadlock), a writer that replaces a recentfile first writes
//! the new manifest (the new bytes' sha256 as current, the replaced one's
//! as previous) and its signature, then renames the recentfile
//! ([`before_rename`]); [`refresh`] rewrites it with a new time when
//! nothing changed (the watch heartbeat, `rrr beacon`).

use crate::collection::Collection;
use crate::origin::Writer;
use crate::store::{self, Lock};
use crate::trust::SignKey;
use anyhow::{bail, Context, Result};
use recentfile::beacon::{self, Beacon, FileDigest, Hasher};
use recentfile::Recentfile;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// Recentfiles up to this size are hashed again on every refresh; larger
/// ones (a big Z) keep their entry while their size agrees with it.
const REHASH_BELOW: u64 = 1 << 20;

/// What the origin's writers were told about the beacon.
#[derive(Clone, Debug, Default)]
pub struct BeaconSettings {
    /// `--sign-key`, loaded and checked at start.
    pub sign: Option<SignKey>,
    /// `--origin-name` (default: the one in the beacon, else the host name).
    pub origin_name: Option<String>,
    /// `--beacon-interval` in seconds (default: the beacon's, else 60).
    pub interval: Option<u64>,
    /// `--unsign`: write a once-signed collection's beacon unsigned.
    pub unsign: bool,
}

impl BeaconSettings {
    /// Whether these settings ask for a beacon where none exists yet.
    pub fn asks(&self) -> bool {
        self.sign.is_some() || self.origin_name.is_some() || self.interval.is_some()
    }
}

/// The beacon's path in `coll`.
pub fn beacon_path(coll: &Collection) -> PathBuf {
    coll.root.join(beacon::beacon_name(&coll.file_name(coll.principal())))
}

/// The signature's path in `coll`.
pub fn signature_path(coll: &Collection) -> PathBuf {
    coll.root.join(beacon::signature_name(&coll.file_name(coll.principal())))
}

/// Whether writers of `coll` keep a beacon: asked for, or one exists.
pub fn active(coll: &Collection, w: &Writer) -> bool {
    w.beacon.asks() || beacon_path(coll).exists()
}

/// At a writer's start: a collection whose beacon says signed is not
/// written without `--sign-key` or `--unsign` (refused now, not mid-batch).
pub fn check_start(coll: &Collection, w: &Writer) -> Result<()> {
    let path = beacon_path(coll);
    if w.beacon.sign.is_none() && !w.beacon.unsign && read(&path)?.is_some_and(|b| b.signed) {
        bail!(
            "{} says the collection is signed: give --sign-key (or --unsign to stop signing; \
             mirrors with --trust-key then refuse it)",
            path.display()
        );
    }
    Ok(())
}

/// The beacon's `hash` (`None` without a readable beacon): the
/// collection's hashing setting survives a Perl writer that drops the
/// principal's meta key (origin::hashing).
pub(crate) fn hash_of(coll: &Collection) -> Option<String> {
    read(&beacon_path(coll)).ok().flatten().and_then(|b| b.hash)
}

/// The host name, the default origin identity.
fn host_name() -> String {
    nix::unistd::gethostname().ok().and_then(|h| h.into_string().ok()).unwrap_or_else(|| "localhost".to_string())
}

/// Read the current beacon, if any (a broken one is an error naming it:
/// rrr does not silently replace what a mirror would refuse).
fn read(path: &Path) -> Result<Option<Beacon>> {
    match std::fs::read(path) {
        Ok(bytes) => Beacon::parse(&bytes)
            .map(Some)
            .with_context(|| format!("{}: cannot read the beacon (remove it to start a new one)", path.display())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// The size and sha256 of a file on disk, streamed.
pub fn digest_file(path: &Path) -> io::Result<FileDigest> {
    let mut f = std::fs::File::open(path)?;
    let mut h = Hasher::default();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            return Ok(h.finish());
        }
        h.update(&buf[..n]);
    }
}

/// A writer that hashes what passes through it (the recentfile being
/// written: its digest comes from the bytes written, never a re-read).
pub(crate) struct Tee<'a> {
    pub out: &'a mut dyn Write,
    pub hasher: &'a mut Hasher,
}

impl Write for Tee<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.out.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// Under the beacon's lock: read the old beacon, let `change` update it,
/// fill in what every write sets, write it and its signature.
fn rewrite(coll: &Collection, w: &Writer, change: impl FnOnce(&mut Beacon) -> Result<()>) -> Result<()> {
    let path = beacon_path(coll);
    let _lock = Lock::acquire(&path, w.lock_timeout)?;
    let old = read(&path)?;
    let s = &w.beacon;
    let was_signed = old.as_ref().is_some_and(|b| b.signed);
    if was_signed && s.sign.is_none() && !s.unsign {
        bail!(
            "{} says the collection is signed: give --sign-key (or --unsign to stop signing; \
             mirrors with --trust-key then refuse it)",
            path.display()
        );
    }
    let now = w.clock.now();
    let mut b = old.clone().unwrap_or_else(|| Beacon::new(host_name(), now.clone()));
    if let Some(o) = &s.origin_name {
        b.origin = o.clone();
    }
    if let Some(i) = s.interval {
        b.interval = i;
    }
    b.signed = s.sign.is_some();
    change(&mut b)?;
    // Every current recentfile is listed: those the change did not touch
    // keep their entry while it still describes them.
    for iv in &coll.intervals {
        let name = coll.file_name(iv);
        let p = coll.path_of(iv);
        let Ok(meta) = std::fs::metadata(&p) else {
            continue;
        };
        let changed = old.as_ref().and_then(|o| o.files.get(&name)) != b.files.get(&name);
        let carried = b.files.get(&name).is_some_and(|e| e.size == meta.len() && meta.len() >= REHASH_BELOW);
        if !changed && !carried {
            let d = digest_file(&p).with_context(|| format!("cannot hash {}", p.display()))?;
            b.replace(&name, d);
        }
    }
    let names: Vec<String> = coll.intervals.iter().map(|iv| coll.file_name(iv)).collect();
    b.files.retain(|n, _| names.contains(n));
    // Time never goes back (a clock set back, or --now in tests).
    b.time = match &old {
        Some(o) if o.time > now => o.time.clone(),
        _ => now,
    };
    let bytes = b.to_bytes();
    store::write_atomic(&path, &bytes, None)?;
    let sig = signature_path(coll);
    match &s.sign {
        Some(key) => store::write_atomic(&sig, key.sign(&bytes)?.as_bytes(), None)?,
        None => match std::fs::remove_file(&sig) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                return Err(e).with_context(|| format!("cannot remove {}", sig.display()))
            }
            _ => {}
        },
    }
    Ok(())
}

/// The collection's newest epoch and dirtymark from the principal.
fn principal_marks(coll: &Collection, b: &mut Beacon, principal: Option<&Recentfile>) -> Result<()> {
    let read;
    let rf = match principal {
        Some(rf) => Some(rf),
        None => {
            read = coll.read(coll.principal())?;
            read.as_ref()
        }
    };
    if let Some(rf) = rf {
        b.newest_epoch = rf.newest().map(|e| e.epoch.clone());
        b.dirtymark = rf.meta.dirtymark.clone();
        // The principal's `Hash` key (origin::hashing).
        b.hash = rf.meta.hash.clone();
    }
    Ok(())
}

/// Before `target` (a recentfile of `coll`) is replaced by bytes with
/// `digest`: the beacon lists them as current, the replaced version as
/// previous. `rf` is the content (its marks go into the beacon when it is
/// the principal). A no-op for a collection without a beacon.
pub(crate) fn before_rename(
    coll: &Collection,
    w: &Writer,
    target: &Path,
    digest: FileDigest,
    rf: &Recentfile,
) -> Result<()> {
    if !active(coll, w) {
        return Ok(());
    }
    let Some(name) = coll.intervals.iter().map(|iv| coll.file_name(iv)).find(|n| coll.root.join(n) == target) else {
        return Ok(());
    };
    let is_principal = name == coll.file_name(coll.principal());
    rewrite(coll, w, |b| {
        // The version being replaced is the one on disk now.
        if !b.files.contains_key(&name) {
            if let Ok(d) = digest_file(target) {
                b.replace(&name, d);
            }
        }
        b.replace(&name, digest);
        principal_marks(coll, b, is_principal.then_some(rf))
    })
}

/// Rewrite the beacon with the current time (the heartbeat, `rrr beacon`).
pub fn refresh(coll: &Collection, w: &Writer) -> Result<()> {
    rewrite(coll, w, |b| principal_marks(coll, b, None))
}
