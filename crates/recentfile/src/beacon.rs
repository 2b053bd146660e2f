//! The beacon `RECENT-1h.yaml.beacon.json` (the principal's name with
//! `.beacon.json`, see [`beacon_name`]): one small, canonical JSON manifest
//! beside the principal that is at once the origin's freshness beacon
//! (issue 35: who the origin is, its clock when written, the newest epoch
//! and dirtymark) and, when the collection is signed, the one signed
//! document that vouches for every current recentfile by its sha256
//! (issue 34). Its SSHSIG signature is the sidecar `….beacon.json.sig`
//! (made and checked at the edge, `rrr::trust`); this module is the pure
//! part: the format, its hostile-input reader, and the rules a mirror
//! applies (docs/protocol.md section 15, docs/decisions.md#the-signed-beacon):
//!
//! - [`Beacon::accept`]: a fetched recentfile is good when its sha256 is
//!   the manifest's current *or previous* one for that name (the writer
//!   writes the manifest before it renames the recentfile);
//! - [`Beacon::check_progress`]: never older than what was accepted
//!   (rollback), never another origin or generation;
//! - [`Beacon::check_age`]: never older than `max-signature-age` (freeze);
//! - [`FileDigest::check`]: a file's bytes against an event's size/sha256.
//!
//! Canonical form: keys sorted, two-space indentation, no floats (epochs
//! are decimal strings like the recentfiles', sizes and the interval are
//! integers), one trailing newline. The reader accepts only that form
//! ([`Beacon::parse`] re-serializes and compares), so one content has one
//! byte string, and a signature covers exactly what a reader sees.

use crate::epoch::Epoch;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fmt;

/// The `format` key.
pub const FORMAT_TAG: &str = "rrr-beacon";
/// The `version` key this reader knows.
pub const VERSION: u64 = 1;
/// The largest manifest a reader parses (a collection has a handful of
/// recentfiles; 64 KiB is hundreds of entries).
pub const MAX_BYTES: usize = 64 * 1024;
/// The SSHSIG namespace of the beacon's signature.
pub const SIG_NAMESPACE: &str = "rrr";
/// The refresh interval `rrr watch` uses when not told (seconds).
pub const DEFAULT_INTERVAL: u64 = 60;

/// `RECENT-1h.yaml.beacon.json` for the principal `RECENT-1h.yaml`: a
/// name that starts with a recentfile's, which the Perl `rrr-server`
/// ignores as it ignores the writers' temp files (its rule is
/// `^RECENT-[0-9]*[smhdWMQYZ]\.yaml`, a prefix), so that a Perl daemon on
/// the same tree never records the beacon as an event.
pub fn beacon_name(principal_file_name: &str) -> String {
    format!("{principal_file_name}.beacon.json")
}

/// `RECENT-1h.yaml.beacon.json.sig`: the SSHSIG sidecar of [`beacon_name`].
pub fn signature_name(principal_file_name: &str) -> String {
    format!("{principal_file_name}.beacon.json.sig")
}

/// A sha256 as 64 lowercase hex digits (checked on construction).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Sha256Hex(String);

impl Sha256Hex {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Sha256Hex {
        Sha256Hex::from_digest(&Sha256::digest(bytes))
    }

    /// From a finished [`Sha256`] hasher's output.
    pub fn from_digest(d: &[u8]) -> Sha256Hex {
        use std::fmt::Write;
        let mut s = String::with_capacity(64);
        for b in d {
            let _ = write!(s, "{b:02x}");
        }
        Sha256Hex(s)
    }

    /// Parse hostile text: exactly 64 lowercase hex digits.
    pub fn parse(s: &str) -> Result<Sha256Hex, String> {
        if s.len() == 64 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
            Ok(Sha256Hex(s.to_string()))
        } else {
            Err(format!("{:?} is not a sha256 (64 lowercase hex digits)", truncate(s)))
        }
    }

    /// The hex text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Sha256Hex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A streaming sha256 with a byte count, for files too big to hold.
#[derive(Clone, Default)]
pub struct Hasher {
    inner: Sha256,
    size: u64,
}

impl Hasher {
    /// Feed bytes.
    pub fn update(&mut self, bytes: &[u8]) {
        self.inner.update(bytes);
        self.size += bytes.len() as u64;
    }

    /// The size and digest of everything fed.
    pub fn finish(self) -> FileDigest {
        FileDigest { size: self.size, sha256: Sha256Hex::from_digest(&self.inner.finalize()) }
    }
}

/// A file's size and sha256: what an event with hashes records, and what
/// a manifest entry records of a recentfile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileDigest {
    /// Bytes.
    pub size: u64,
    /// sha256 of the bytes.
    pub sha256: Sha256Hex,
}

impl FileDigest {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> FileDigest {
        FileDigest { size: bytes.len() as u64, sha256: Sha256Hex::of(bytes) }
    }

    /// `actual` (what was fetched) against `self` (what the signed index
    /// says): a different size or hash is [`TrustError::Tampered`].
    pub fn check(&self, path: &str, actual: &FileDigest) -> Result<(), TrustError> {
        if self == actual {
            Ok(())
        } else {
            Err(TrustError::Tampered { path: path.to_string(), expected: self.clone(), actual: actual.clone() })
        }
    }
}

/// What the manifest says of one current recentfile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileEntry {
    /// Size of the current version.
    pub size: u64,
    /// sha256 of the current version.
    pub sha256: Sha256Hex,
    /// sha256 of the version the current one replaced (`None`: the first).
    pub previous_sha256: Option<Sha256Hex>,
}

/// The manifest. Build one with [`Beacon::new`], record each recentfile
/// written with [`Beacon::replace`], serialize with [`Beacon::to_bytes`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Beacon {
    /// The origin's identity (`--origin-name`, default the host name).
    pub origin: String,
    /// The origin's clock when this manifest was written (the signed time).
    pub time: Epoch,
    /// The newest epoch of the collection (the principal's first event).
    pub newest_epoch: Option<Epoch>,
    /// The collection's dirtymark (its generation).
    pub dirtymark: Option<Epoch>,
    /// How often the origin promises to rewrite this file (seconds).
    pub interval: u64,
    /// The hash algorithm recorded in `new` events (`Some("sha256")`), or none.
    pub hash: Option<String>,
    /// Whether the origin signs: a collection once signed is refused
    /// unsigned writes without `--unsign` (docs/decisions.md#the-signed-beacon).
    pub signed: bool,
    /// Every current recentfile, by bare file name.
    pub files: BTreeMap<String, FileEntry>,
}

/// Why a manifest, a recentfile or a file is not trusted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TrustError {
    /// The manifest is not a valid, canonical version-1 beacon.
    Malformed(String),
    /// The recentfile is not listed in the manifest.
    NotListed {
        /// Its name.
        name: String,
    },
    /// The recentfile's sha256 is neither the current nor the previous one
    /// (fetched across two writes: fetch again).
    Mismatch {
        /// Its name.
        name: String,
        /// What was fetched.
        got: Sha256Hex,
    },
    /// The manifest names another origin than the one accepted before.
    OtherOrigin {
        /// Accepted before.
        accepted: String,
        /// Offered now.
        offered: String,
    },
    /// Same origin, other dirtymark: another generation of the collection.
    OtherGeneration {
        /// Accepted before.
        accepted: Option<Epoch>,
        /// Offered now.
        offered: Option<Epoch>,
    },
    /// Older than the manifest accepted before (replay, or a stale tier).
    Rollback {
        /// Which field went back: `newest_epoch` or `time`.
        field: &'static str,
        /// Accepted before.
        accepted: String,
        /// Offered now.
        offered: String,
    },
    /// The origin's signed time is older than allowed (freeze).
    Stale {
        /// now − time, seconds.
        age: u64,
        /// The allowed age, seconds.
        max_age: u64,
    },
    /// A file's bytes differ from the signed event.
    Tampered {
        /// The file.
        path: String,
        /// What the event says.
        expected: FileDigest,
        /// What is there.
        actual: FileDigest,
    },
}

impl fmt::Display for TrustError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrustError::Malformed(why) => write!(f, "not a valid beacon: {why}"),
            TrustError::NotListed { name } => write!(f, "{name} is not listed in the beacon"),
            TrustError::Mismatch { name, got } => write!(
                f,
                "{name} (sha256 {got}) is neither the beacon's current nor its previous version \
                 (fetched while the origin wrote twice, or altered): fetch again"
            ),
            TrustError::OtherOrigin { accepted, offered } => {
                write!(f, "the beacon is of origin {offered:?}, but this mirror follows {accepted:?}")
            }
            TrustError::OtherGeneration { accepted, offered } => write!(
                f,
                "the beacon's dirtymark {} differs from the accepted {} (another generation of the collection)",
                opt(offered),
                opt(accepted)
            ),
            TrustError::Rollback { field, accepted, offered } => write!(
                f,
                "the beacon's {field} {offered} is older than the accepted {accepted} (an old index replayed, or a stale upstream)"
            ),
            TrustError::Stale { age, max_age } => {
                write!(f, "the origin's signed time is {age} s old, older than the allowed {max_age} s")
            }
            TrustError::Tampered { path, expected, actual } => write!(
                f,
                "{path}: {} bytes, sha256 {}, but the signed index says {} bytes, sha256 {}",
                actual.size, actual.sha256, expected.size, expected.sha256
            ),
        }
    }
}

impl std::error::Error for TrustError {}

fn opt(e: &Option<Epoch>) -> String {
    e.as_ref().map_or_else(|| "(none)".to_string(), |e| e.to_string())
}

fn truncate(s: &str) -> &str {
    match s.char_indices().nth(80) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// Which version of a recentfile the manifest vouches for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accepted {
    /// The manifest's current version.
    Current,
    /// The version the current one replaced (the writer wrote the manifest
    /// and had not yet renamed the recentfile, or renamed it after the
    /// mirror fetched the recentfile).
    Previous,
}

impl Beacon {
    /// An empty manifest.
    pub fn new(origin: impl Into<String>, time: Epoch) -> Beacon {
        Beacon {
            origin: origin.into(),
            time,
            newest_epoch: None,
            dirtymark: None,
            interval: DEFAULT_INTERVAL,
            hash: None,
            signed: false,
            files: BTreeMap::new(),
        }
    }

    /// Record that `name` is about to be replaced by a version with
    /// `digest`: the old current hash becomes the previous one. Recording
    /// the same digest again (a rewrite with identical bytes) keeps the
    /// entry as it is, so a mirror holding the version before still passes.
    pub fn replace(&mut self, name: &str, digest: FileDigest) {
        let previous = match self.files.get(name) {
            Some(old) if old.sha256 == digest.sha256 => return,
            Some(old) => Some(old.sha256.clone()),
            None => None,
        };
        self.files.insert(
            name.to_string(),
            FileEntry { size: digest.size, sha256: digest.sha256, previous_sha256: previous },
        );
    }

    /// The acceptance rule (docs/decisions.md#the-signed-beacon): a
    /// recentfile fetched *before* the manifest is good when its sha256 is
    /// the manifest's current or previous one for `name`.
    pub fn accept(&self, name: &str, got: &Sha256Hex) -> Result<Accepted, TrustError> {
        let e = self.files.get(name).ok_or_else(|| TrustError::NotListed { name: name.to_string() })?;
        if &e.sha256 == got {
            Ok(Accepted::Current)
        } else if e.previous_sha256.as_ref() == Some(got) {
            Ok(Accepted::Previous)
        } else {
            Err(TrustError::Mismatch { name: name.to_string(), got: got.clone() })
        }
    }

    /// Rollback: `self` (offered) must be of the origin and generation of
    /// `accepted` and not older by newest epoch or by signed time. Equal
    /// is fine (the same manifest fetched again).
    pub fn check_progress(&self, accepted: &Beacon) -> Result<(), TrustError> {
        if self.origin != accepted.origin {
            return Err(TrustError::OtherOrigin { accepted: accepted.origin.clone(), offered: self.origin.clone() });
        }
        if self.dirtymark != accepted.dirtymark {
            return Err(TrustError::OtherGeneration {
                accepted: accepted.dirtymark.clone(),
                offered: self.dirtymark.clone(),
            });
        }
        if let Some(a) = &accepted.newest_epoch {
            if self.newest_epoch.as_ref().is_none_or(|o| o < a) {
                return Err(TrustError::Rollback {
                    field: "newest_epoch",
                    accepted: a.to_string(),
                    offered: opt(&self.newest_epoch),
                });
            }
        }
        if self.time < accepted.time {
            return Err(TrustError::Rollback {
                field: "time",
                accepted: accepted.time.to_string(),
                offered: self.time.to_string(),
            });
        }
        Ok(())
    }

    /// Freeze: the signed time must be at most `max_age` seconds before
    /// `now`. A time ahead of `now` (clock skew) is not stale.
    pub fn check_age(&self, now: &Epoch, max_age: u64) -> Result<(), TrustError> {
        let age = now.whole_seconds().saturating_sub(self.time.whole_seconds());
        if age > 0 && age as u64 > max_age {
            Err(TrustError::Stale { age: age as u64, max_age })
        } else {
            Ok(())
        }
    }

    /// The canonical bytes (see the module doc).
    pub fn to_bytes(&self) -> Vec<u8> {
        let q = |s: &str| serde_json::to_string(s).expect("a string serializes");
        let oq = |e: &Option<Epoch>| e.as_ref().map_or_else(|| "null".to_string(), |e| q(e.as_str()));
        let mut out = String::with_capacity(256 + 200 * self.files.len());
        out.push_str("{\n");
        out.push_str(&format!("  \"dirtymark\": {},\n", oq(&self.dirtymark)));
        if self.files.is_empty() {
            out.push_str("  \"files\": {},\n");
        } else {
            out.push_str("  \"files\": {\n");
            let n = self.files.len();
            for (i, (name, e)) in self.files.iter().enumerate() {
                let prev = e.previous_sha256.as_ref().map_or_else(|| "null".to_string(), |p| q(p.as_str()));
                out.push_str(&format!(
                    "    {}: {{\"previous_sha256\": {prev}, \"sha256\": {}, \"size\": {}}}{}\n",
                    q(name),
                    q(e.sha256.as_str()),
                    e.size,
                    if i + 1 < n { "," } else { "" }
                ));
            }
            out.push_str("  },\n");
        }
        out.push_str(&format!("  \"format\": {},\n", q(FORMAT_TAG)));
        out.push_str(&format!("  \"hash\": {},\n", self.hash.as_deref().map_or_else(|| "null".to_string(), q)));
        out.push_str(&format!("  \"interval\": {},\n", self.interval));
        out.push_str(&format!("  \"newest_epoch\": {},\n", oq(&self.newest_epoch)));
        out.push_str(&format!("  \"origin\": {},\n", q(&self.origin)));
        out.push_str(&format!("  \"signed\": {},\n", self.signed));
        out.push_str(&format!("  \"time\": {},\n", q(self.time.as_str())));
        out.push_str(&format!("  \"version\": {VERSION}\n"));
        out.push_str("}\n");
        out.into_bytes()
    }

    /// Read a manifest from hostile bytes: at most [`MAX_BYTES`], the
    /// version-1 schema exactly (no unknown or missing key), valid values,
    /// and byte-for-byte the canonical form.
    pub fn parse(bytes: &[u8]) -> Result<Beacon, TrustError> {
        let bad = |why: String| TrustError::Malformed(why);
        if bytes.len() > MAX_BYTES {
            return Err(bad(format!("{} bytes, more than the {MAX_BYTES} a beacon may have", bytes.len())));
        }
        let raw: RawBeacon = serde_json::from_slice(bytes).map_err(|e| bad(e.to_string()))?;
        if raw.format != FORMAT_TAG {
            return Err(bad(format!("format {:?}, expected {FORMAT_TAG:?}", truncate(&raw.format))));
        }
        if raw.version != VERSION {
            return Err(bad(format!("version {} (this rrr reads version {VERSION})", raw.version)));
        }
        let epoch = |what: &str, s: &str| Epoch::parse(s).map_err(|e| bad(format!("{what}: {e}")));
        let oepoch = |what: &str, s: &Option<String>| s.as_deref().map(|s| epoch(what, s)).transpose();
        if raw.origin.is_empty() || raw.origin.len() > 255 || raw.origin.chars().any(char::is_control) {
            return Err(bad(format!("origin {:?}: 1 to 255 bytes, no control characters", truncate(&raw.origin))));
        }
        if let Some(h) = &raw.hash {
            if h != "sha256" {
                return Err(bad(format!("hash {:?}: only \"sha256\" or null", truncate(h))));
            }
        }
        let mut files = BTreeMap::new();
        for (name, e) in raw.files {
            if name.is_empty()
                || name.len() > 255
                || name == "."
                || name == ".."
                || name.contains('/')
                || name.chars().any(char::is_control)
            {
                return Err(bad(format!("files: {:?} is not a bare file name", truncate(&name))));
            }
            let sha = |s: &str| Sha256Hex::parse(s).map_err(|w| bad(format!("files.{name}: {w}")));
            let entry = FileEntry {
                size: e.size,
                sha256: sha(&e.sha256)?,
                previous_sha256: e.previous_sha256.as_deref().map(sha).transpose()?,
            };
            files.insert(name, entry);
        }
        let b = Beacon {
            origin: raw.origin,
            time: epoch("time", &raw.time)?,
            newest_epoch: oepoch("newest_epoch", &raw.newest_epoch)?,
            dirtymark: oepoch("dirtymark", &raw.dirtymark)?,
            interval: raw.interval,
            hash: raw.hash,
            signed: raw.signed,
            files,
        };
        if b.to_bytes() != bytes {
            return Err(bad("not in canonical form (sorted keys, the layout rrr writes)".to_string()));
        }
        Ok(b)
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBeacon {
    dirtymark: Option<String>,
    files: BTreeMap<String, RawEntry>,
    format: String,
    hash: Option<String>,
    interval: u64,
    newest_epoch: Option<String>,
    origin: String,
    signed: bool,
    time: String,
    version: u64,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    previous_sha256: Option<String>,
    sha256: String,
    size: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ep(s: &str) -> Epoch {
        Epoch::parse(s).unwrap()
    }

    fn sample() -> Beacon {
        let mut b = Beacon::new("origin.example", ep("1700000100"));
        b.newest_epoch = Some(ep("1700000099.5"));
        b.dirtymark = Some(ep("1690000000.25"));
        b.signed = true;
        b.hash = Some("sha256".into());
        b.replace("RECENT-1h.yaml", FileDigest::of(b"one"));
        b.replace("RECENT-Z.yaml", FileDigest::of(b"zet"));
        b
    }

    #[test]
    fn round_trip_is_canonical() {
        let b = sample();
        let bytes = b.to_bytes();
        assert_eq!(Beacon::parse(&bytes).unwrap(), b);
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(text.starts_with("{\n  \"dirtymark\": \"1690000000.25\",\n  \"files\": {\n    \"RECENT-1h.yaml\": "));
        assert!(text.ends_with("  \"time\": \"1700000100\",\n  \"version\": 1\n}\n"), "{text}");
        // An empty manifest too.
        let e = Beacon::new("o", ep("1"));
        assert_eq!(Beacon::parse(&e.to_bytes()).unwrap(), e);
    }

    #[test]
    fn hostile_input_is_refused() {
        let good = String::from_utf8(sample().to_bytes()).unwrap();
        let cases: Vec<(String, &str)> = vec![
            (good.replace("\"version\": 1", "\"version\": 2"), "version 2"),
            (good.replace("\"format\": \"rrr-beacon\"", "\"format\": \"x\""), "format"),
            (good.replace("\"interval\": 60", "\"interval\": 60.5"), "invalid type"),
            (good.replace("\"interval\": 60", "\"interval\": -1"), "invalid"),
            (good.replace("\"time\": \"1700000100\"", "\"time\": \"1e9\""), "time"),
            (good.replace("\"time\": \"1700000100\"", "\"time\": 1700000100"), "invalid type"),
            (good.replace("\"signed\": true,", "\"signed\": true, \"extra\": 1,"), "unknown field"),
            (good.replace("  \"signed\": true,\n", ""), "missing field"),
            (good.replace("\"hash\": \"sha256\"", "\"hash\": \"md5\""), "only \"sha256\""),
            (good.replace("RECENT-1h.yaml", "../RECENT-1h.yaml"), "bare file name"),
            (good.replace("\"origin\": \"origin.example\"", "\"origin\": \"\""), "origin"),
            (good.replacen("\"sha256\": \"", "\"sha256\": \"A", 1), "sha256"),
            (good.replacen("\"size\": 3", "\"size\": 03", 1), ""),
            (good.replace("\n  ", "\n   "), "canonical"),
            (good.replace('\n', "\r\n"), "canonical"),
            ("[]".into(), "expected struct"),
            (" ".repeat(MAX_BYTES + 1), "more than"),
        ];
        for (text, want) in cases {
            let e = Beacon::parse(text.as_bytes()).expect_err(&text);
            assert!(matches!(e, TrustError::Malformed(_)), "{e}");
            assert!(e.to_string().contains(want), "{want:?} not in {e}");
        }
    }

    #[test]
    fn duplicate_file_names_are_refused() {
        let good = String::from_utf8(sample().to_bytes()).unwrap();
        let bad = good.replace("RECENT-Z.yaml", "RECENT-1h.yaml");
        assert!(Beacon::parse(bad.as_bytes()).is_err());
    }

    /// The write order (manifest first, then the rename) and the rule:
    /// every interleaving of one writer with a mirror that fetches the
    /// recentfile first and the manifest second is accepted; a mirror
    /// that fetched across two writes retries.
    #[test]
    fn acceptance_rule_over_interleavings() {
        let name = "RECENT-1h.yaml";
        let (v1, v2, v3) = (FileDigest::of(b"v1"), FileDigest::of(b"v2"), FileDigest::of(b"v3"));
        let mut m1 = Beacon::new("o", ep("1"));
        m1.replace(name, v1.clone());
        let mut m2 = m1.clone();
        m2.replace(name, v2.clone());
        let mut m3 = m2.clone();
        m3.replace(name, v3.clone());
        assert_eq!(m2.files[name].previous_sha256.as_ref(), Some(&v1.sha256));
        // Fetched v1 and then the manifest before the rename: previous.
        assert_eq!(m2.accept(name, &v1.sha256), Ok(Accepted::Previous));
        // Fetched v1 before the manifest was written and v2's manifest after the rename: previous.
        // Fetched v2 after the rename: current.
        assert_eq!(m2.accept(name, &v2.sha256), Ok(Accepted::Current));
        // Before either: the old manifest and the old file.
        assert_eq!(m1.accept(name, &v1.sha256), Ok(Accepted::Current));
        // Two quick writes between the two fetches: a retry, never trust.
        assert!(matches!(m3.accept(name, &v1.sha256), Err(TrustError::Mismatch { .. })));
        // Altered bytes, an unlisted name.
        assert!(matches!(m2.accept(name, &Sha256Hex::of(b"evil")), Err(TrustError::Mismatch { .. })));
        assert!(matches!(m2.accept("RECENT-6h.yaml", &v1.sha256), Err(TrustError::NotListed { .. })));
        // A rewrite with the same bytes keeps the previous version acceptable.
        let mut again = m2.clone();
        again.replace(name, v2.clone());
        assert_eq!(again, m2);
    }

    #[test]
    fn rollback_generation_and_origin() {
        let a = sample();
        assert_eq!(a.check_progress(&a), Ok(()));
        let mut newer = a.clone();
        newer.time = ep("1700000200");
        newer.newest_epoch = Some(ep("1700000150"));
        assert_eq!(newer.check_progress(&a), Ok(()));
        assert!(matches!(a.check_progress(&newer), Err(TrustError::Rollback { field: "newest_epoch", .. })));
        let mut same_epoch_older_time = newer.clone();
        same_epoch_older_time.time = ep("1700000199.9");
        assert!(matches!(
            same_epoch_older_time.check_progress(&newer),
            Err(TrustError::Rollback { field: "time", .. })
        ));
        let mut empty = newer.clone();
        empty.newest_epoch = None;
        assert!(matches!(empty.check_progress(&newer), Err(TrustError::Rollback { .. })));
        let mut other = newer.clone();
        other.origin = "elsewhere".into();
        assert!(matches!(other.check_progress(&newer), Err(TrustError::OtherOrigin { .. })));
        let mut regen = newer.clone();
        regen.dirtymark = Some(ep("1700000300"));
        assert!(matches!(regen.check_progress(&newer), Err(TrustError::OtherGeneration { .. })));
    }

    #[test]
    fn freeze() {
        let b = sample(); // time 1700000100
        assert_eq!(b.check_age(&ep("1700086500"), 86400), Ok(()));
        assert_eq!(b.check_age(&ep("1700086501"), 86400), Err(TrustError::Stale { age: 86401, max_age: 86400 }));
        // Skew: a time ahead of the reader's clock is not stale.
        assert_eq!(b.check_age(&ep("1600000000"), 10), Ok(()));
    }

    #[test]
    fn file_digests() {
        let want = FileDigest::of(b"hello\n");
        assert_eq!(want.sha256.as_str(), "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03");
        let mut h = Hasher::default();
        h.update(b"hel");
        h.update(b"lo\n");
        assert_eq!(h.finish(), want);
        assert_eq!(want.check("a", &FileDigest::of(b"hello\n")), Ok(()));
        // A changed byte, a same-size replacement, a truncation.
        for other in [&b"hellO\n"[..], b"world\n", b"hello"] {
            assert!(matches!(want.check("a", &FileDigest::of(other)), Err(TrustError::Tampered { .. })));
        }
        assert!(Sha256Hex::parse(&"0".repeat(63)).is_err());
        assert!(Sha256Hex::parse(&"g".repeat(64)).is_err());
    }
}
