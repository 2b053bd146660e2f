//! [`RelPath`]: an event's path as the bytes of a file name.
//!
//! A path is what the kernel, rsync and the Perl tools take: any bytes but
//! NUL, `/`-separated, UTF-8 or not (protocol.md 4.2, 14). It is compared,
//! hashed and ordered as bytes, goes to the filesystem through
//! [`OsStrExt::from_bytes`] unchanged, and is shown to humans escaped the
//! way `ls -b` shows it ([`escape_path`](crate::format::escape_path)).
//!
//! It is a newtype rather than `bstr::BString` so that its `Display` can only
//! be the escaped form (a raw name with a newline or an escape sequence never
//! reaches a terminal or a log line by accident) and so that `ev.path == "a/b"`
//! and `Event::new(epoch, "a/b", kind)` keep working without a crate.

use std::borrow::Borrow;
use std::ffi::OsStr;
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// An event's path: a byte string relative to the collection's root.
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RelPath(Vec<u8>);

impl RelPath {
    /// The path's bytes, exactly as the file's name has them.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
    /// The bytes, owned.
    pub fn into_bytes(self) -> Vec<u8> {
        self.0
    }
    /// The path as text, if it is UTF-8 (for formats that need text).
    pub fn to_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.0).ok()
    }
    /// The path for the filesystem: the same bytes.
    pub fn as_os_str(&self) -> &OsStr {
        OsStr::from_bytes(&self.0)
    }
    /// The path for the filesystem, relative (join it to a root).
    pub fn as_path(&self) -> &Path {
        Path::new(self.as_os_str())
    }
    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }
    /// Whether it has no bytes (never true of a valid path).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// Whether it starts with these bytes.
    pub fn starts_with(&self, prefix: impl AsRef<[u8]>) -> bool {
        self.0.starts_with(prefix.as_ref())
    }
    /// Whether it holds this byte string.
    pub fn contains(&self, needle: impl AsRef<[u8]>) -> bool {
        let needle = needle.as_ref();
        needle.is_empty() || self.0.windows(needle.len()).any(|w| w == needle)
    }
    /// The `/`-separated components.
    pub fn components(&self) -> impl Iterator<Item = &[u8]> {
        self.0.split(|&b| b == b'/')
    }
    /// The escaped form for humans, `ls -b` style (as `Display` shows it).
    pub fn escaped(&self) -> String {
        crate::format::escape_path(&self.0)
    }
}

impl fmt::Display for RelPath {
    /// Escaped like `ls -b`: a name with control characters or bytes that
    /// are not UTF-8 prints as one line of text.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.to_str() {
            Some(s) if !crate::format::needs_escape(s) => f.pad(s),
            _ => f.pad(&self.escaped()),
        }
    }
}

impl fmt::Debug for RelPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.to_str() {
            Some(s) => fmt::Debug::fmt(s, f),
            None => write!(f, "b\"{}\"", self.0.escape_ascii()),
        }
    }
}

impl From<&str> for RelPath {
    fn from(s: &str) -> RelPath {
        RelPath(s.as_bytes().to_vec())
    }
}
impl From<String> for RelPath {
    fn from(s: String) -> RelPath {
        RelPath(s.into_bytes())
    }
}
impl From<&String> for RelPath {
    fn from(s: &String) -> RelPath {
        RelPath(s.as_bytes().to_vec())
    }
}
impl From<Vec<u8>> for RelPath {
    fn from(b: Vec<u8>) -> RelPath {
        RelPath(b)
    }
}
impl From<&[u8]> for RelPath {
    fn from(b: &[u8]) -> RelPath {
        RelPath(b.to_vec())
    }
}
impl From<&RelPath> for RelPath {
    fn from(p: &RelPath) -> RelPath {
        p.clone()
    }
}
impl From<&OsStr> for RelPath {
    fn from(s: &OsStr) -> RelPath {
        RelPath(s.as_bytes().to_vec())
    }
}
impl From<&Path> for RelPath {
    fn from(p: &Path) -> RelPath {
        RelPath(p.as_os_str().as_bytes().to_vec())
    }
}

impl AsRef<[u8]> for RelPath {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}
impl AsRef<OsStr> for RelPath {
    fn as_ref(&self) -> &OsStr {
        self.as_os_str()
    }
}
impl AsRef<Path> for RelPath {
    fn as_ref(&self) -> &Path {
        self.as_path()
    }
}
impl Borrow<[u8]> for RelPath {
    fn borrow(&self) -> &[u8] {
        &self.0
    }
}

impl PartialEq<str> for RelPath {
    fn eq(&self, other: &str) -> bool {
        self.0 == other.as_bytes()
    }
}
impl PartialEq<&str> for RelPath {
    fn eq(&self, other: &&str) -> bool {
        self.0 == other.as_bytes()
    }
}
impl PartialEq<String> for RelPath {
    fn eq(&self, other: &String) -> bool {
        self.0 == other.as_bytes()
    }
}
impl PartialEq<[u8]> for RelPath {
    fn eq(&self, other: &[u8]) -> bool {
        self.0 == other
    }
}
impl PartialEq<RelPath> for str {
    fn eq(&self, other: &RelPath) -> bool {
        self.as_bytes() == other.0
    }
}
impl PartialEq<RelPath> for &str {
    fn eq(&self, other: &RelPath) -> bool {
        self.as_bytes() == other.0
    }
}
impl PartialEq<RelPath> for String {
    fn eq(&self, other: &RelPath) -> bool {
        self.as_bytes() == other.0
    }
}

impl serde::Serialize for RelPath {
    /// UTF-8 paths as strings; any other as the object `{"bytes": "<hex>"}`
    /// (the one lossless JSON form rrr uses: see [`RelPath::to_json`]).
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.to_str() {
            Some(text) => s.serialize_str(text),
            None => {
                use serde::ser::SerializeMap;
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry("bytes", &hex(&self.0))?;
                m.end()
            }
        }
    }
}

impl<'de> serde::Deserialize<'de> for RelPath {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<RelPath, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum Form {
            Text(String),
            Bytes { bytes: String },
        }
        match Form::deserialize(d)? {
            Form::Text(s) => Ok(RelPath::from(s)),
            Form::Bytes { bytes } => unhex(&bytes)
                .map(RelPath)
                .ok_or_else(|| serde::de::Error::custom("`bytes` is not an even number of hex digits")),
        }
    }
}

impl RelPath {
    /// The JSON value rrr's own JSON (state, `--json` output) writes for
    /// the path: a string when it is UTF-8, else `{"bytes": "<hex>"}`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("a path serializes")
    }
}

/// Lower-case hex of `b`.
pub(crate) fn hex(b: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(b.len() * 2);
    for &c in b {
        out.push(HEX[usize::from(c >> 4)] as char);
        out.push(HEX[usize::from(c & 15)] as char);
    }
    out
}

/// The bytes of a hex string, or `None`.
pub(crate) fn unhex(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    if !b.len().is_multiple_of(2) {
        return None;
    }
    b.chunks(2)
        .map(|p| {
            let hi = (p[0] as char).to_digit(16)?;
            let lo = (p[1] as char).to_digit(16)?;
            Some((hi * 16 + lo) as u8)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_compare_convert_and_show() {
        let p = RelPath::from(b"a/\xff\tb".to_vec());
        assert_eq!(p.as_bytes(), b"a/\xff\tb");
        assert_eq!(p.to_string(), "a/\\377\\tb");
        assert_eq!(p.as_os_str().as_bytes(), b"a/\xff\tb");
        assert!(p.to_str().is_none());
        assert_eq!(RelPath::from("x/y"), "x/y");
        let (ascii, high) = (RelPath::from("a"), RelPath::from(b"\x80".to_vec()));
        assert!(ascii < high, "ordered as bytes");
        assert_eq!(serde_json::to_string(&p).unwrap(), r#"{"bytes":"612fff0962"}"#);
        assert_eq!(serde_json::from_str::<RelPath>(r#"{"bytes":"612fff0962"}"#).unwrap(), p);
        assert_eq!(serde_json::from_str::<RelPath>(r#""a/é""#).unwrap(), "a/é");
        assert!(serde_json::from_str::<RelPath>(r#"{"bytes":"6"}"#).is_err());
    }
}

#[cfg(test)]
mod pins;
