//! Exact decimal epochs: the reference's comparator and its "increase a bit" bump.
//!
//! An *epoch* is the time of an event in a recentfile, in Unix seconds,
//! written as a decimal string: digits, optionally followed by `.` and more
//! digits (`1700000000`, `1700000000.5`, `1700000000.500000476837158203125`).
//! Every distinct string is an identity: clients compare epochs with `eq`,
//! and the done-set stores intervals of the strings themselves (protocol.md 7.1).
//! [`Epoch`] therefore keeps the exact text it was read or made with, and it
//! is never round-tripped through `f64`. An `f64` holds about 16 significant
//! digits, while a bumped epoch can have 30 and more; two distinct epochs
//! would collapse into one, and even a harmless-looking re-print turns
//! `1700000000.0` into `1700000000`, a different string for every client.
//!
//! Where epochs come from (protocol.md 7.1):
//! - a clock reading, printed like Perl's `%.15g` ([`Epoch::from_clock`]);
//! - an integer mtime or `--epoch`, stored as `<N>.0`
//!   ([`Epoch::from_whole_seconds`], [`Epoch::with_dot`]);
//! - a bump of another epoch ([`Epoch::inc`], [`Epoch::inc_towards`]).
//!
//! # Ordering (protocol.md 7.2)
//!
//! [`cmp_epochs`] is the reference comparator (`_bigfloatcmp` of
//! File::Rsync::Mirror::Recentfile::FakeBigFloat 0.0.8, as shipped with
//! File-Rsync-Mirror-Recent 0.4.3): identical strings are equal; if either
//! string has a `.`, the one without gets `.0`, and a float difference of
//! more than 1 decides; two dot-less strings are compared as numbers. Any
//! remaining tie is broken by left-padding the string whose `.` comes first
//! with `0`s and comparing bytes. Consequences: `1.5 < 1.50`, and
//! `1700000000 == 1700000000.0`. `Ord`, `PartialOrd` and `PartialEq` of
//! [`Epoch`] are this comparator, so equality is *not* string equality and
//! there is deliberately no `Hash` impl; key maps by [`Epoch::as_str`].
//!
//! # Bump (protocol.md 7.3)
//!
//! [`Epoch::inc`] returns a short string just above an epoch;
//! [`Epoch::inc_towards`] returns one strictly between an epoch and an
//! upper neighbour. Both reproduce the reference's `_increase_a_bit`
//! byte for byte (float midpoint first, then the string midpoint with its
//! chop loop, including the reference's in-place side effects on its
//! operands), checked against `fixtures/vectors/fakebigfloat.tsv`.
//!
//! ```
//! use recentfile::epoch::{cmp_epochs, Epoch};
//! use std::cmp::Ordering;
//!
//! let e = Epoch::parse("1700000100.5").unwrap();
//! let e1 = e.inc();
//! let e2 = e1.inc();
//! assert_eq!(e1.as_str(), "1700000100.5000001");
//! assert_eq!(e2.as_str(), "1700000100.50000016");
//! assert!(e < e1 && e1 < e2);
//! assert_eq!(e.inc_towards(&e1).unwrap().as_str(), "1700000100.50000005");
//!
//! assert_eq!(cmp_epochs("1.5", "1.50"), Ordering::Less);
//! assert_eq!(Epoch::parse("1700000000").unwrap(), Epoch::parse("1700000000.0").unwrap());
//! assert_eq!(Epoch::from_clock(1796007695.882461).as_str(), "1796007695.88246");
//! assert_eq!(Epoch::from_whole_seconds(1700000000).as_str(), "1700000000.0");
//! ```
//!
//! # Deliberate limits (choices of this port)
//!
//! - Epochs rrr makes (bumps) have at most 64 characters; past that, a
//!   collision is resolved otherwise (see `update`). [`Epoch::parse`]
//!   accepts up to 4096, because the reference's own bisection is not
//!   capped: its init of 2000 files of one mtime writes epochs of 684
//!   characters, and rrr must read (and mirror) such a collection.
//! - [`Epoch::parse`] accepts no leading zeros on a
//!   dot-less epoch (`0100`) and at most 19 digits on a dot-less epoch. In
//!   exactly those cases the reference comparator is not transitive
//!   (`0100 < 100`, yet both equal `100.0`; dot-less values beyond `u64`
//!   are compared as floats). With this grammar [`cmp_epochs`] is a total
//!   order on parsed epochs, so sorting can never panic on a hostile file.
//!   Leading zeros *before a dot* are accepted: the reference itself can
//!   produce them (its padding side effect) and they compare correctly.
//! - The reference bump misbehaves far away from real epochs (values
//!   below about 1e-4, operands whose integer parts differ in length, the
//!   64-character limit): it can return a value that is not greater, a
//!   string ending in `.`, or even loop forever. Where the faithful result
//!   is not a valid epoch strictly in range, this port substitutes a safe
//!   one (see [`Epoch::inc`]). For clock-like epochs this never triggers.
//! - Perl keeps dot-less integers that fit in 64 bits as integers (exact);
//!   this port does the same. Dotted values are always treated as doubles.
//!   The two differ from Perl's own mixed integer/float arithmetic only for
//!   magnitudes beyond 2^53, never for epochs.

use std::cmp::Ordering;
use std::fmt;

/// Longest epoch rrr makes: a bump that would be longer is not taken.
const MAX_LEN: usize = 64;
/// Longest text [`Epoch::parse`] accepts (the reader's path limit too).
const MAX_READ_LEN: usize = 4096;
/// Most digits of a dot-less epoch (all such values fit in a `u64`).
const MAX_DOTLESS_DIGITS: usize = 19;

/// An epoch: the exact decimal text as read or made (see the module docs).
///
/// Equality and order follow [`cmp_epochs`], so `1700000000` equals
/// `1700000000.0`; use [`Epoch::as_str`] for identity.
///
/// ```
/// use recentfile::Epoch;
///
/// let a: Epoch = "1700000400.5".parse()?;
/// let b = Epoch::parse("1700000400.25")?;
/// assert!(a > b);
/// // The text is kept exactly as read, digits a double would lose included.
/// let long = Epoch::parse("1700000400.50000000000001")?;
/// assert_eq!(long.as_str(), "1700000400.50000000000001");
/// assert!(long > a);
/// // Equal values, different texts: equal epochs, distinct strings.
/// assert_eq!(Epoch::parse("1700000000")?, Epoch::parse("1700000000.0")?);
/// // Hostile text is refused.
/// assert!(Epoch::parse("1e9").is_err() && Epoch::parse("-1").is_err() && Epoch::parse("").is_err());
/// # Ok::<(), recentfile::epoch::EpochError>(())
/// ```
#[derive(Clone, Debug)]
pub struct Epoch(EpochText);

/// An epoch's text, inline when it fits, as nearly every epoch does
/// (`1700000000.123456` is 17 bytes). A Z file holds a million epochs:
/// inline they cost no allocation each and compare without a pointer chase.
#[derive(Clone)]
enum EpochText {
    Inline { len: u8, bytes: [u8; INLINE_MAX] },
    Heap(Box<str>),
}

/// Longest epoch text stored inline (the enum stays the size of a `String`).
const INLINE_MAX: usize = 22;

impl EpochText {
    fn new(s: &str) -> EpochText {
        if s.len() <= INLINE_MAX {
            let mut bytes = [0; INLINE_MAX];
            bytes[..s.len()].copy_from_slice(s.as_bytes());
            EpochText::Inline { len: s.len() as u8, bytes }
        } else {
            EpochText::Heap(s.into())
        }
    }
}

impl From<String> for EpochText {
    fn from(s: String) -> EpochText {
        if s.len() <= INLINE_MAX {
            EpochText::new(&s)
        } else {
            EpochText::Heap(s.into_boxed_str())
        }
    }
}

impl std::ops::Deref for EpochText {
    type Target = str;
    fn deref(&self) -> &str {
        match self {
            // `bytes[..len]` is a copy of a whole `&str` (`EpochText::new`):
            // the check (at most 23 bytes) cannot fail.
            EpochText::Inline { len, bytes } => {
                std::str::from_utf8(&bytes[..*len as usize]).expect("an inline epoch is a whole str")
            }
            EpochText::Heap(s) => s,
        }
    }
}

impl fmt::Debug for EpochText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// Why a string is not an epoch. The message quotes the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EpochError(pub String);

impl fmt::Display for EpochError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for EpochError {}

impl Epoch {
    /// Parses an epoch: ASCII digits, optionally followed by `.` and one or
    /// more digits (`1700000000`, `1700000000.5`, `0.5`).
    ///
    /// Rejected: the empty string, signs, exponents, spaces, other
    /// characters, more than one `.`, a leading or trailing `.`, more than
    /// 4096 characters, and (see the module docs) leading zeros or more than
    /// 19 digits on an epoch without a dot. The error quotes the input with
    /// control characters escaped, shortened to 40 characters.
    pub fn parse(s: &str) -> Result<Epoch, EpochError> {
        check(s, MAX_READ_LEN)?;
        Ok(Epoch(EpochText::new(s)))
    }

    /// Reads an epoch in any notation a known writer uses (protocol.md
    /// 7.1): what [`Epoch::parse`] takes, and the exponent form that
    /// writers of float64 epochs produce (abh/rrrgo through gopkg.in/yaml.v3:
    /// `1.79624748999797e+09`, also `E`, a `-` or no sign in the exponent,
    /// any number of mantissa digits). The exponent form is turned into the
    /// exact decimal by moving the point, never through a float
    /// (`1.79624748999797e+09` → `1796247489.99797`, `1.79624749e+09` →
    /// `1796247490`, `15e-1` → `1.5`), so an epoch is one value whatever
    /// notation carried it: rrrgo's YAML and JSON spell the same float64
    /// as `1.79624748999797e+09` and `1796247489.99797`, and both read as
    /// the latter. Every digit written is kept (`1.50e+00` → `1.50`),
    /// leading zeros of the integer part are dropped.
    ///
    /// An exponent above 4096 is refused before anything is allocated (the
    /// result could not be a valid epoch), so `1e999999999` is a clear
    /// error; the result must pass [`Epoch::parse`].
    ///
    /// ```
    /// use recentfile::Epoch;
    /// assert_eq!(Epoch::read("1.79624748999797e+09")?.as_str(), "1796247489.99797");
    /// assert_eq!(Epoch::read("1.7962474918942301E+09")?.as_str(), "1796247491.8942301");
    /// assert_eq!(Epoch::read("1796247489.99797")?.as_str(), "1796247489.99797");
    /// assert!(Epoch::read("1e999999999").unwrap_err().to_string().contains("out of range"));
    /// # Ok::<(), recentfile::epoch::EpochError>(())
    /// ```
    pub fn read(s: &str) -> Result<Epoch, EpochError> {
        match s.bytes().position(|c| c == b'e' || c == b'E') {
            None => Epoch::parse(s),
            Some(e) => {
                let mut buf = [0; 64];
                match g_form_decimal(s.as_bytes(), &mut buf) {
                    Some((decimal, _)) => Ok(Epoch(EpochText::new(decimal))),
                    None => read_exponent(s, e),
                }
            }
        }
    }

    /// The exact text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The exact text, by value.
    pub fn into_string(self) -> String {
        self.0.to_string()
    }

    /// A clock reading as the reference prints it: C's `%.15g` of the
    /// seconds (`1700000100.5` → `1700000100.5`, `1796007695.882461` →
    /// `1796007695.88246`, a whole number → `1796007882`, no dot).
    ///
    /// This is exactly `%.15g` for `1e-4 <= secs < 1e15`. Outside that
    /// range `%.15g` switches to exponent form, which is not an epoch; this
    /// function then writes the same 15 significant digits in plain
    /// notation (`1e15` → `1000000000000000`), and gives `0` for values
    /// whose plain form would exceed 64 characters. Values of `1e19` and
    /// above are clamped to `9999999999999990000`. NaN and negative values
    /// are caller bugs: they debug-assert and give `0` in release builds.
    pub fn from_clock(secs: f64) -> Epoch {
        debug_assert!(secs.is_finite() && secs >= 0.0, "Epoch::from_clock({secs}): not a clock reading");
        if secs.is_nan() || secs <= 0.0 {
            return Epoch(EpochText::new("0"));
        }
        let secs = secs.min(9.99999999999999e18);
        let text = format_g15(secs);
        if !text.contains('e') {
            return Epoch(text.into());
        }
        let plain = g15_plain(secs);
        if plain.len() <= MAX_LEN {
            Epoch(plain.into())
        } else {
            Epoch(EpochText::new("0"))
        }
    }

    /// Integer seconds as the reference stores them: `<N>.0`
    /// (mtime `1700000000` → `1700000000.0`).
    ///
    /// Epochs cannot be negative: a negative value (an mtime before 1970)
    /// gives `0.0`.
    pub fn from_whole_seconds(secs: i64) -> Epoch {
        Epoch(format!("{}.0", secs.max(0)).into())
    }

    /// This epoch with `.0` appended if it has no dot. This is the in-place
    /// side effect the reference's comparator has on dot-less operands
    /// (protocol.md 7.1 item 2); it is why integer mtimes end up as `N.0` in files.
    pub fn with_dot(&self) -> Epoch {
        if self.has_dot() {
            self.clone()
        } else {
            Epoch(format!("{}.0", self.as_str()).into())
        }
    }

    /// Whether the text contains a `.`.
    pub(crate) fn has_dot(&self) -> bool {
        self.0.contains('.')
    }

    /// The nearest `f64` (correctly rounded, like the reference's `strtod`).
    /// For the code paths the reference runs in float arithmetic; never use
    /// it to make a new epoch.
    pub fn to_f64(&self) -> f64 {
        perl_float(&self.0)
    }

    /// The one-argument bump `inc(l)` of protocol.md 7.3: a short string `s`
    /// above `self` as a decimal number, byte-identical to the reference
    /// (`1700000000.5` → `1700000000.5000001` → `1700000000.50000016`).
    ///
    /// If the reference's result would not be a valid epoch above `self`
    /// (only far from real epochs, see the module docs), the result is
    /// `self` (with `.0` if dot-less) followed by `1`, or, if that exceeds
    /// 64 characters, `self` incremented in its last decimal place.
    pub fn inc(&self) -> Epoch {
        let s = increase_a_bit(&self.0, None);
        if is_valid(&s) && cmp_decimal(&self.0, &s) == Ordering::Less {
            return Epoch(s.into());
        }
        fallback_above(&self.0)
    }

    /// The two-argument bump `inc(l, r)` of protocol.md 7.3: a short string `s`
    /// strictly between `self` and `upper` as decimal numbers,
    /// byte-identical to the reference (`inc(1700000100.5,
    /// 1700000100.5000001)` = `1700000100.50000005`). An `upper` more than
    /// one second above is first lowered to `int(self) + 1`, as in the
    /// reference.
    ///
    /// Where the reference's result is not a valid epoch strictly between
    /// (far from real epochs, or when it would be only a longer spelling of
    /// a neighbour, such as `1.50` for `1.5`), a short valid epoch between
    /// is substituted. `None` when none of at most 64 characters exists,
    /// or `upper` is not above `self` as a number.
    pub fn inc_towards(&self, upper: &Epoch) -> Option<Epoch> {
        if cmp_decimal(&self.0, &upper.0) != Ordering::Less {
            return None;
        }
        let s = increase_a_bit(&self.0, Some(&upper.0));
        if is_valid(&s) && strictly_between(&self.0, &s, &upper.0) {
            return Some(Epoch(s.into()));
        }
        fallback_between(&self.0, &upper.0)
    }

    /// Compare as decimal numbers, exactly: `1.5 == 1.50 == 01.5`, unlike
    /// the reference comparator ([`Ord`]), which orders such spellings by
    /// their bytes. Every epoch rrr makes differs from its neighbours by
    /// this comparison, not only by the comparator, because readers that
    /// take epochs as numbers (Perl's `-after`, JSON, rrrgo) see equal
    /// numbers as duplicates.
    pub fn cmp_value(&self, other: &Epoch) -> Ordering {
        cmp_decimal(&self.0, &other.0)
    }

    /// The integer seconds (floor), from the digits before the dot; exact
    /// even where `f64` would round up (`1700000000.99999999999` →
    /// `1700000000`). Saturates at `i64::MAX`.
    pub fn whole_seconds(&self) -> i64 {
        let int_part = self.0.split('.').next().unwrap_or("");
        int_part.bytes().try_fold(0i64, |n, d| n.checked_mul(10)?.checked_add(i64::from(d - b'0'))).unwrap_or(i64::MAX)
    }
}

/// A number as a Perl variable holds it for `List::Util::min`: the double
/// that `min` compares, and the text the variable prints as.
#[derive(Clone, Debug)]
pub(crate) struct PerlNum {
    pub value: f64,
    pub text: Epoch,
}

impl PerlNum {
    /// A computed double (`$epoch - $secs`): prints as `%.15g`, compares
    /// unrounded. Not below 0 (no epoch is, so a negative bound cuts
    /// nothing, as 0 does).
    pub(crate) fn float(x: f64) -> PerlNum {
        let x = x.max(0.0);
        PerlNum { value: x, text: Epoch::from_clock(x) }
    }

    /// A string (an epoch read from a file): compares as its nearest double.
    pub(crate) fn text(e: &Epoch) -> PerlNum {
        PerlNum { value: e.to_f64(), text: e.clone() }
    }
}

/// `List::Util::min(@args)`: compares the doubles and returns the winning
/// argument itself, so a string keeps its exact text (`1700000060.5000001`
/// stays that; printed back from a double it would be `1700000060.5`).
/// The first of equal doubles wins (protocol.md 8.3 step 2, 9 step 4).
pub(crate) fn perl_min(args: &[PerlNum]) -> Option<Epoch> {
    let mut best: Option<&PerlNum> = None;
    for a in args {
        if best.is_none_or(|b| a.value < b.value) {
            best = Some(a);
        }
    }
    best.map(|b| b.text.clone())
}

/// The reference comparator of protocol.md 7.2 on raw strings (see the module
/// docs). Meant for decimal strings; for other input it returns some
/// ordering, not necessarily Perl's.
///
/// Does not allocate. The common case, both dots at the same index (or no
/// dots and equal lengths), is one byte comparison.
pub fn cmp_epochs(a: &str, b: &str) -> Ordering {
    let (x, y) = (a.as_bytes(), b.as_bytes());
    let (dx, dy) = (dot_index(x), dot_index(y));
    // Fast path: both dots at the same index (or no dots and equal
    // lengths). Plain byte order equals the reference here:
    // - Identical strings are equal both ways.
    // - Dots aligned: the reference returns the sign of the float
    //   difference if it exceeds 1, else compares bytes (no padding needed).
    //   Rounding a decimal to the nearest double is monotonic, so a float
    //   difference above 1 (or below -1) implies the same strict order of
    //   the exact values. With the dots aligned, the integer parts have
    //   equal width, so byte order compares them numerically and then the
    //   fractions digit by digit: byte order refines numeric order, and
    //   both steps agree with it.
    // - No dots, equal lengths: the reference compares the numbers (as
    //   exact integers when they fit in 64 bits, else as monotonically
    //   rounded doubles) and falls back to bytes on a tie; for digit
    //   strings of equal length numeric and byte order coincide.
    if dx == dy && (dx.is_some() || x.len() == y.len()) {
        return x.cmp(y);
    }
    cmp_slow(x, y, dx, dy)
}

/// The rest of [`cmp_epochs`]: the reference's steps with virtual padding.
fn cmp_slow(a: &[u8], b: &[u8], da: Option<usize>, db: Option<usize>) -> Ordering {
    if da.is_none() && db.is_none() {
        // Both dot-less, different lengths (equal lengths took the fast path).
        let native = num_cmp(perl_num_bytes(a), perl_num_bytes(b));
        if native != Ordering::Equal {
            return native;
        }
        return a.cmp(b);
    }
    // At least one dot: a dot-less operand behaves as if it had `.0`, which
    // changes neither its value nor where its dot is (at its length).
    let ia = da.unwrap_or(a.len());
    let ib = db.unwrap_or(b.len());
    // The reference's float step (a difference of more than 1 decides) is
    // left out: it never disagrees with the padded bytes below. Rounding to
    // doubles is monotonic, so such a difference implies the same strict
    // order of the exact values; once padded, the integer parts have equal
    // width and the dots one index, so the bytes order the integer parts
    // numerically and then the fractions digit by digit, which agrees with
    // the exact order wherever the values differ.
    let suffix_a: &[u8] = if da.is_none() { b".0" } else { b"" };
    let suffix_b: &[u8] = if db.is_none() { b".0" } else { b"" };
    let padded_a =
        std::iter::repeat_n(b'0', ib.saturating_sub(ia)).chain(a.iter().copied()).chain(suffix_a.iter().copied());
    let padded_b =
        std::iter::repeat_n(b'0', ia.saturating_sub(ib)).chain(b.iter().copied()).chain(suffix_b.iter().copied());
    padded_a.cmp(padded_b)
}

/// The index of the first `.`, eight bytes at a time (no allocation, few
/// branches: this runs twice per comparison).
#[inline]
fn dot_index(s: &[u8]) -> Option<usize> {
    const DOTS: u64 = u64::from_le_bytes([b'.'; 8]);
    const LOW: u64 = u64::from_le_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_le_bytes([0x80; 8]);
    let mut chunks = s.chunks_exact(8);
    let mut base = 0;
    for chunk in &mut chunks {
        let v = u64::from_le_bytes(chunk.try_into().expect("8 bytes")) ^ DOTS;
        // The lowest set bit marks the first zero byte of v, i.e. the
        // first '.' (false positives can only appear above a true one).
        let zero = v.wrapping_sub(LOW) & !v & HIGH;
        if zero != 0 {
            return Some(base + (zero.trailing_zeros() / 8) as usize);
        }
        base += 8;
    }
    chunks.remainder().iter().position(|&c| c == b'.').map(|p| base + p)
}

impl PartialEq for Epoch {
    fn eq(&self, other: &Epoch) -> bool {
        cmp_epochs(&self.0, &other.0) == Ordering::Equal
    }
}

impl Eq for Epoch {}

impl PartialOrd for Epoch {
    fn partial_cmp(&self, other: &Epoch) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Epoch {
    fn cmp(&self, other: &Epoch) -> Ordering {
        cmp_epochs(&self.0, &other.0)
    }
}

impl fmt::Display for Epoch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for Epoch {
    type Err = EpochError;

    fn from_str(s: &str) -> Result<Epoch, EpochError> {
        Epoch::parse(s)
    }
}

impl serde::Serialize for Epoch {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for Epoch {
    /// Accepts a string, validated with [`Epoch::parse`]. Formats that hand
    /// over an unsigned integer instead are accepted too (its decimal text);
    /// floats are refused, because their text is already lost.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Epoch, D::Error> {
        struct EpochVisitor;

        impl serde::de::Visitor<'_> for EpochVisitor {
            type Value = Epoch;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an epoch as a decimal string, such as \"1700000000.5\"")
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Epoch, E> {
                Epoch::parse(v).map_err(E::custom)
            }

            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Epoch, E> {
                Epoch::parse(&v.to_string()).map_err(E::custom)
            }

            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Epoch, E> {
                Epoch::parse(&v.to_string()).map_err(E::custom)
            }
        }

        deserializer.deserialize_str(EpochVisitor)
    }
}

// ---------------------------------------------------------------------------
// Validation

/// An epoch rrr may make (at most 64 characters).
fn is_valid(s: &str) -> bool {
    check(s, MAX_LEN).is_ok()
}

fn check(s: &str, max_len: usize) -> Result<(), EpochError> {
    let bad = |what: String| Err(EpochError(format!("epoch {} {what}", quote(s))));
    if s.is_empty() {
        return Err(EpochError("empty epoch (expected a decimal number such as 1700000000.5)".to_owned()));
    }
    let mut dot = None;
    for (i, c) in s.chars().enumerate() {
        match c {
            '0'..='9' => {}
            '.' if dot.is_none() => dot = Some(i),
            '.' => return bad("is not a decimal number: more than one '.'".to_owned()),
            '+' | '-' => {
                return bad(format!("is not a decimal number: sign '{c}' at position {} (epochs are unsigned)", i + 1))
            }
            'e' | 'E' => {
                return bad(format!("is not a decimal number: exponent '{c}' at position {} (write all digits)", i + 1))
            }
            _ => {
                return bad(format!(
                    "is not a decimal number: {} at position {} (only digits and one '.')",
                    quote_char(c),
                    i + 1
                ))
            }
        }
    }
    if s.len() > max_len {
        return bad(format!("is too long: {} characters, at most {max_len}", s.len()));
    }
    match dot {
        Some(0) => bad("is not a decimal number: no digit before '.'".to_owned()),
        Some(i) if i + 1 == s.len() => bad("is not a decimal number: no digit after '.'".to_owned()),
        Some(_) => Ok(()),
        None if s.len() > 1 && s.starts_with('0') => {
            bad("has a leading zero (allowed only in front of a '.')".to_owned())
        }
        None if s.len() > MAX_DOTLESS_DIGITS => {
            bad(format!("is out of range: more than {MAX_DOTLESS_DIGITS} digits without a '.'"))
        }
        None => Ok(()),
    }
}

/// The decimal that `s`, in the exponent form `M e X` (its `e` or `E` at
/// index `e`), stands for: the digits of the mantissa `M` (`digits` or
/// `digits.digits`) with the point moved by the exponent `X` (`+`, `-` or
/// no sign, then digits), zeros added where the point moves past them,
/// leading zeros of the integer part dropped. See [`Epoch::read`].
#[cfg(test)]
fn exponent_to_decimal(s: &str, e: usize) -> Result<String, EpochError> {
    with_exponent_decimal(s, e, str::to_owned)
}

/// The decimal of the exponent form that float64 writers give a current
/// epoch (`1.79624748999797e+09`: one digit from 1 to 9 before the point,
/// decimals, `e+` and two digits fewer than the decimals), written into
/// `buf`, with the index of its dot; `None` for any other text, which
/// [`Epoch::read`] reads the long way. The same text the long way gives,
/// in a few copies: a million-event Z file in yaml.v3's layout holds
/// nothing else.
#[inline]
pub(crate) fn g_form_decimal<'b>(s: &[u8], buf: &'b mut [u8; 64]) -> Option<(&'b str, usize)> {
    let n = s.len();
    if n < 7 || n > buf.len() + 3 || !(b'1'..=b'9').contains(&s[0]) || s[1] != b'.' {
        return None;
    }
    let (frac, tail) = s[2..].split_at(n - 6);
    let [e, b'+', x, y] = *tail else { return None };
    if !(e == b'e' || e == b'E') || !x.is_ascii_digit() || !y.is_ascii_digit() || !frac.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let shift = usize::from(x - b'0') * 10 + usize::from(y - b'0');
    if shift >= frac.len() {
        return None;
    }
    buf[0] = s[0];
    buf[1..=shift].copy_from_slice(&frac[..shift]);
    buf[shift + 1] = b'.';
    buf[shift + 2..frac.len() + 2].copy_from_slice(&frac[shift..]);
    Some((std::str::from_utf8(&buf[..frac.len() + 2]).expect("ASCII digits and a dot"), shift + 1))
}

/// [`Epoch::read`] of the exponent form: the decimal, built in a buffer on
/// the stack (a Z file holds a million such epochs), is an epoch by
/// construction when it has a dot and at most 64 characters (digits on
/// both sides, no leading zero but one before the dot); else it is
/// checked as [`Epoch::parse`] checks any text.
fn read_exponent(s: &str, e: usize) -> Result<Epoch, EpochError> {
    with_exponent_decimal(s, e, |d| {
        if d.len() <= MAX_LEN && d.contains('.') {
            Ok(Epoch(EpochText::new(d)))
        } else {
            Epoch::parse(d)
        }
    })?
}

/// Calls `then` with the decimal of `s` (see `exponent_to_decimal`).
fn with_exponent_decimal<R>(s: &str, e: usize, then: impl FnOnce(&str) -> R) -> Result<R, EpochError> {
    let bad = |what: String| EpochError(format!("epoch {} {what}", quote(s)));
    let (mantissa, exponent) = (&s[..e], &s[e + 1..]);
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|c| c.is_ascii_digit());
    if !digits(int) || (mantissa.contains('.') && !digits(frac)) {
        return Err(bad("is not a number: digits with at most one '.' must come before the exponent".to_owned()));
    }
    let (negative, magnitude) = match exponent.as_bytes().first() {
        Some(b'-') => (true, &exponent[1..]),
        Some(b'+') => (false, &exponent[1..]),
        _ => (false, exponent),
    };
    if !digits(magnitude) {
        return Err(bad("is not a number: the exponent must be digits with an optional sign".to_owned()));
    }
    let significant = magnitude.trim_start_matches('0');
    // Checked on the text, so a hostile exponent costs nothing to refuse.
    let shift = match significant.parse::<usize>() {
        _ if significant.is_empty() => 0,
        Ok(n) if significant.len() <= 5 && n <= MAX_READ_LEN => n,
        _ => return Err(bad(format!("is out of range: exponent {exponent} (at most {MAX_READ_LEN} either way)"))),
    };
    let count = int.len() + frac.len();
    let digit = |i: usize| if i < int.len() { int.as_bytes()[i] } else { frac.as_bytes()[i - int.len()] };
    // Where the point goes, counted in digits from the left (may be outside them).
    let point = if negative { int.len() as isize - shift as isize } else { (int.len() + shift) as isize };
    let len = match point {
        p if p <= 0 => 2 + p.unsigned_abs() + count,
        p if p as usize >= count => p as usize,
        _ => count + 1,
    };
    let mut stack = [0u8; 64];
    let mut heap = Vec::new();
    let out: &mut [u8] = if len <= stack.len() {
        &mut stack[..len]
    } else {
        heap.resize(len, 0);
        &mut heap
    };
    if point <= 0 {
        let zeros = point.unsigned_abs();
        out[..2 + zeros].fill(b'0');
        out[1] = b'.';
        (0..count).for_each(|i| out[2 + zeros + i] = digit(i));
    } else {
        let point = point as usize;
        for (i, c) in out.iter_mut().enumerate().take(point) {
            *c = if i < count { digit(i) } else { b'0' };
        }
        if point < count {
            out[point] = b'.';
            (point..count).for_each(|i| out[i + 1] = digit(i));
        }
    }
    // Leading zeros go, but one digit stays before the point (or alone).
    let int_end = out.iter().position(|&c| c == b'.').unwrap_or(len);
    let zeros = out[..int_end - 1].iter().take_while(|&&c| c == b'0').count();
    Ok(then(std::str::from_utf8(&out[zeros..]).expect("ASCII digits and a dot")))
}

/// `"text"` with control characters, quotes and backslashes escaped,
/// shortened to 40 characters.
fn quote(s: &str) -> String {
    const MAX_CHARS: usize = 40;
    let mut out = String::from("\"");
    for (n, c) in s.chars().enumerate() {
        if n == MAX_CHARS {
            out.push_str("\"...");
            return out;
        }
        out.extend(c.escape_debug());
    }
    out.push('"');
    out
}

fn quote_char(c: char) -> String {
    if c == ' ' {
        "a space".to_owned()
    } else {
        format!("'{}'", c.escape_debug())
    }
}

// ---------------------------------------------------------------------------
// Perl's numbers

/// A Perl number as the reference's operators see it: dot-less digit
/// strings that fit in 64 bits are exact integers (IV/UV), everything else
/// is a double (NV).
#[derive(Clone, Copy, Debug)]
enum Num {
    Int(u64),
    Float(f64),
}

impl Num {
    fn f(self) -> f64 {
        match self {
            Num::Int(u) => u as f64,
            Num::Float(f) => f,
        }
    }
}

/// Perl's numification of a decimal string (glibc `strtod` rounds
/// correctly, as does Rust's parser). Not a number (`""`, `"."`) is 0.
fn perl_float(s: &str) -> f64 {
    s.parse::<f64>().unwrap_or(0.0)
}

fn perl_float_bytes(s: &[u8]) -> f64 {
    std::str::from_utf8(s).map_or(0.0, perl_float)
}

fn perl_num(s: &str) -> Num {
    perl_num_bytes(s.as_bytes())
}

fn perl_num_bytes(s: &[u8]) -> Num {
    if !s.is_empty() && s.iter().all(u8::is_ascii_digit) {
        let significant = &s[s.iter().position(|&d| d != b'0').unwrap_or(s.len())..];
        if significant.len() <= 20 {
            if let Some(n) =
                significant.iter().try_fold(0u64, |n, &d| n.checked_mul(10)?.checked_add(u64::from(d - b'0')))
            {
                return Num::Int(n);
            }
        }
    }
    Num::Float(perl_float_bytes(s))
}

/// `<=>`; a NaN comparison (undef in Perl) counts as 0.
fn num_cmp(a: Num, b: Num) -> Ordering {
    match (a, b) {
        (Num::Int(x), Num::Int(y)) => x.cmp(&y),
        _ => a.f().partial_cmp(&b.f()).unwrap_or(Ordering::Equal),
    }
}

/// `==`.
fn num_eq(a: Num, b: Num) -> bool {
    match (a, b) {
        (Num::Int(x), Num::Int(y)) => x == y,
        _ => a.f() == b.f(),
    }
}

/// `($a + $b) / 2`: integer while exact, as Perl's arithmetic.
fn num_mean(a: Num, b: Num) -> Num {
    match (a, b) {
        (Num::Int(x), Num::Int(y)) => match x.checked_add(y) {
            Some(sum) if sum % 2 == 0 => Num::Int(sum / 2),
            Some(sum) => Num::Float(sum as f64 / 2.0),
            None => Num::Float((x as f64 + y as f64) / 2.0),
        },
        _ => Num::Float((a.f() + b.f()) / 2.0),
    }
}

/// `int($x) + 1`.
fn num_int_plus_one(x: Num) -> Num {
    // (NV)UV_MAX + 0.5 rounds to 2^64.
    const UV_LIMIT: f64 = 18_446_744_073_709_551_616.0;
    let int = match x {
        Num::Int(u) => u,
        Num::Float(f) if f.is_nan() => return Num::Float(f),
        Num::Float(f) if f < 0.0 => return Num::Float(f.ceil() + 1.0),
        Num::Float(f) if f < UV_LIMIT => f as u64,
        Num::Float(f) => return Num::Float(f.floor() + 1.0),
    };
    match int.checked_add(1) {
        Some(v) => Num::Int(v),
        None => Num::Float(int as f64 + 1.0),
    }
}

/// Perl's stringification of a number: integers in full, doubles `%.15g`.
fn num_to_string(x: Num) -> String {
    match x {
        Num::Int(u) => u.to_string(),
        Num::Float(f) => format_g15(f),
    }
}

/// `Data::Float::nextup`: the next representable double towards +inf.
fn nextup(x: f64) -> f64 {
    if x.is_nan() || x == f64::INFINITY {
        x
    } else if x == 0.0 {
        f64::from_bits(1)
    } else if x > 0.0 {
        f64::from_bits(x.to_bits() + 1)
    } else {
        f64::from_bits(x.to_bits() - 1)
    }
}

// ---------------------------------------------------------------------------
// C formatting

/// C's `printf("%.15g", x)`.
fn format_g15(x: f64) -> String {
    const P: i32 = 15;
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan" } else { "nan" }.to_owned();
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf" } else { "inf" }.to_owned();
    }
    let sign = if x.is_sign_negative() { "-" } else { "" };
    if x == 0.0 {
        return format!("{sign}0");
    }
    let (digits, exp) = g15_digits(x.abs());
    if !(-4..P).contains(&exp) {
        // d.dddde±XX with trailing zeros (and a trailing dot) removed.
        let mut mantissa = String::with_capacity(P as usize + 1);
        mantissa.push_str(&digits[..1]);
        let frac = digits[1..].trim_end_matches('0');
        if !frac.is_empty() {
            mantissa.push('.');
            mantissa.push_str(frac);
        }
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{mantissa}e{esign}{:02}", exp.abs())
    } else {
        format!("{sign}{}", place_digits(&digits, exp))
    }
}

/// The 15 significant digits of `%.15g` (correctly rounded, ties to even
/// on exact binary ties like glibc) and the decimal exponent.
fn g15_digits(ax: f64) -> (String, i32) {
    let e = format!("{ax:.14e}");
    let (mantissa, exp) = e.split_once('e').expect("exponent form");
    let exp: i32 = exp.parse().expect("decimal exponent");
    (mantissa.replace('.', ""), exp)
}

/// `digits` (significant digits, the first one at 10^exp) in plain
/// notation, trailing zeros and a trailing dot removed.
fn place_digits(digits: &str, exp: i32) -> String {
    let mut out = String::new();
    if exp >= 0 {
        let int_len = exp as usize + 1;
        if digits.len() <= int_len {
            out.push_str(digits);
            out.extend(std::iter::repeat_n('0', int_len - digits.len()));
        } else {
            out.push_str(&digits[..int_len]);
            let frac = digits[int_len..].trim_end_matches('0');
            if !frac.is_empty() {
                out.push('.');
                out.push_str(frac);
            }
        }
    } else {
        let frac = digits.trim_end_matches('0');
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-exp - 1) as usize));
        out.push_str(frac);
    }
    out
}

/// `%.15g`'s digits in plain notation (for [`Epoch::from_clock`] outside
/// the range where `%.15g` itself is plain).
fn g15_plain(ax: f64) -> String {
    let (digits, exp) = g15_digits(ax);
    place_digits(&digits, exp)
}

/// The reference's `_my_sprintf_float`: `%.16f`, then `%.32f`, `%.64f`, …
/// until the text ends in `0`; then trailing zeros stripped (one digit
/// after the dot kept). For doubles this is usually the exact expansion.
fn fmt_float(x: f64) -> String {
    let mut precision = 16usize;
    loop {
        let mut s = format!("{x:.precision$}");
        // Every finite double's expansion ends within 1074 decimals, so the
        // guard only stops the reference's endless loop on inf/NaN.
        if s.ends_with('0') || precision >= 4096 {
            strip_zeros(&mut s);
            return s;
        }
        precision *= 2;
    }
}

/// Perl's `s/(\d)0+$/$1/`: drop trailing zeros that follow a digit.
fn strip_zeros(s: &mut String) {
    while s.len() >= 2 && s.ends_with('0') && s.as_bytes()[s.len() - 2].is_ascii_digit() {
        s.pop();
    }
}

// ---------------------------------------------------------------------------
// The reference comparator and bump, with their in-place side effects

/// `_bigfloatcmp` exactly, including its side effects on the operands
/// (`.0` appended, `0`s prepended). The bump depends on them.
fn cmp_mut(a: &mut String, b: &mut String) -> Ordering {
    if *a == *b {
        return Ordering::Equal;
    }
    if a.contains('.') || b.contains('.') {
        for s in [&mut *a, &mut *b] {
            if !s.contains('.') {
                s.push_str(".0");
            }
        }
        let diff = perl_float(a) - perl_float(b);
        if diff > 1.0 {
            return Ordering::Greater;
        }
        if diff < -1.0 {
            return Ordering::Less;
        }
    } else {
        let native = num_cmp(perl_num(a), perl_num(b));
        if native != Ordering::Equal {
            return native;
        }
    }
    let ia = perl_index_dot(a);
    let ib = perl_index_dot(b);
    if ia < ib {
        a.insert_str(0, &"0".repeat((ib - ia) as usize));
    } else if ib < ia {
        b.insert_str(0, &"0".repeat((ia - ib) as usize));
    }
    a.as_bytes().cmp(b.as_bytes())
}

/// Perl's `index($s, ".")`: -1 if absent.
fn perl_index_dot(s: &str) -> isize {
    s.find('.').map_or(-1, |i| i as isize)
}

/// The reference comparator, literally (allocates; for tests of the fast one).
#[cfg_attr(not(test), allow(dead_code))]
fn cmp_epochs_reference(a: &str, b: &str) -> Ordering {
    cmp_mut(&mut a.to_owned(), &mut b.to_owned())
}

/// `_increase_a_bit($l)` / `_increase_a_bit($l, $r)`, faithfully.
fn increase_a_bit(l_in: &str, r_in: Option<&str>) -> String {
    let mut l = l_in.to_owned();
    let mut r = match r_in {
        Some(r) => {
            let cap = num_int_plus_one(perl_num(&l));
            let above = match (perl_num(r), cap) {
                (Num::Int(x), Num::Int(y)) => x > y,
                (x, y) => x.f() > y.f(),
            };
            if above {
                num_to_string(cap)
            } else {
                r.to_owned()
            }
        }
        None => fmt_float(nextup(perl_num(&l).f())),
    };
    if !num_eq(perl_num(&l), perl_num(&r)) {
        let mut attempt = fmt_float(num_mean(perl_num(&l), perl_num(&r)).f());
        // `_bigfloatlt($l, $try) && _bigfloatlt($try, $r)`: both calls
        // modify their operands, and a successful $try is returned modified.
        if cmp_mut(&mut l, &mut attempt) == Ordering::Less && cmp_mut(&mut attempt, &mut r) == Ordering::Less {
            return attempt;
        }
    }
    increase_a_bit_tail(&l, &r)
}

/// `_increase_a_bit_tail($l, $r)`: the string midpoint (protocol.md 7.3 steps 1–9).
fn increase_a_bit_tail(l_in: &str, r_in: &str) -> String {
    let mut l = l_in.to_owned();
    let mut r = r_in.to_owned();
    // 1. `.0`, left padding to align the dots, right padding to equal length.
    for s in [&mut l, &mut r] {
        if !s.contains('.') {
            s.push_str(".0");
        }
    }
    let (il, ir) = (perl_index_dot(&l), perl_index_dot(&r));
    if il < ir {
        l.insert_str(0, &"0".repeat((ir - il) as usize));
    } else if ir < il {
        r.insert_str(0, &"0".repeat((il - ir) as usize));
    }
    while l.len() < r.len() {
        l.push('0');
    }
    while r.len() < l.len() {
        r.push('0');
    }
    // 2. The first differing index (undef, i.e. 0, if there is none).
    let d = l.bytes().zip(r.bytes()).position(|(x, y)| x != y).unwrap_or(0);
    let prefix = &l[..d];
    let mut sl = l[d..].to_owned();
    let mut sr = r[d..].to_owned();
    // 3.
    let prefix_has_dot = prefix.contains('.');
    if prefix_has_dot {
        sl.push_str(".0");
        sr.push_str(".0");
    }
    // 4. `%0{w}.{p}f` of the float mean.
    let width = sr.len() + 1;
    let precision = (sr.len() as isize - perl_index_dot(&sr)).max(0) as usize;
    let mean = (perl_float(&sl) + perl_float(&sr)) / 2.0;
    let mut piece = format!("{mean:0width$.precision$}");
    // 5., 6.
    strip_zeros(&mut piece);
    if prefix_has_dot {
        if let Some(i) = piece.find('.') {
            piece.remove(i);
        }
    }
    // 7.
    let mut ret = format!("{prefix}{piece}");
    // 8. Chop while still strictly between the *padded* l and r. The
    // comparisons modify l, r and the candidate like the reference's do.
    loop {
        let mut attempt = ret[..ret.len().saturating_sub(1)].to_owned();
        if cmp_mut(&mut l, &mut attempt) == Ordering::Less && cmp_mut(&mut attempt, &mut r) == Ordering::Less {
            if attempt.len() >= ret.len() {
                // The side effect grew it back (`N` became `N.0`): the
                // reference loops forever here. Stop; the caller validates.
                break;
            }
            ret = attempt;
        } else {
            break;
        }
    }
    // 9.
    ret
}

/// `l < s < r` as decimal numbers.
fn strictly_between(l: &str, s: &str, r: &str) -> bool {
    cmp_decimal(l, s) == Ordering::Less && cmp_decimal(s, r) == Ordering::Less
}

/// Exact comparison of two decimal strings (digits, at most one `.`) as
/// numbers: leading zeros of the integer part and trailing zeros of the
/// fraction do not count.
pub(crate) fn cmp_decimal(a: &str, b: &str) -> Ordering {
    if a == b {
        return Ordering::Equal;
    }
    fn split(s: &str) -> (&str, &str) {
        let (int, frac) = s.split_once('.').unwrap_or((s, ""));
        (int.trim_start_matches('0'), frac.trim_end_matches('0'))
    }
    let ((ia, fa), (ib, fb)) = (split(a), split(b));
    ia.len().cmp(&ib.len()).then_with(|| ia.cmp(ib)).then_with(|| fa.cmp(fb))
}

fn with_dot_str(s: &str) -> String {
    if s.contains('.') {
        s.to_owned()
    } else {
        format!("{s}.0")
    }
}

/// A valid epoch above `l` when the reference's bump fails.
fn fallback_above(l: &str) -> Epoch {
    let appended = format!("{}1", with_dot_str(l));
    if appended.len() <= MAX_LEN {
        return Epoch(appended.into());
    }
    Epoch(increment_last_place(l).into())
}

/// `l` (which has a dot: dot-less epochs are short) plus one unit in its
/// last decimal place, trailing zeros dropped: `1.59` → `1.6`, `9.9` → `10.0`.
fn increment_last_place(l: &str) -> String {
    let mut bytes = l.as_bytes().to_vec();
    let mut carry = true;
    for c in bytes.iter_mut().rev() {
        if !carry {
            break;
        }
        match *c {
            b'.' => {}
            b'9' => *c = b'0',
            _ => {
                *c += 1;
                carry = false;
            }
        }
    }
    if carry {
        bytes.insert(0, b'1');
    }
    let mut s = String::from_utf8(bytes).expect("ASCII digits");
    strip_zeros(&mut s);
    s
}

/// A short valid epoch strictly between `l` and `r` (`l < r`) as numbers,
/// if any: `l` (with `.0` if dot-less) followed by `0…01`, or `l`
/// incremented in its last place.
fn fallback_between(l: &str, r: &str) -> Option<Epoch> {
    let base = with_dot_str(l);
    let mut candidates: Vec<String> =
        (0..=r.len().min(MAX_LEN)).map(|zeros| format!("{base}{}1", "0".repeat(zeros))).collect();
    if l.contains('.') {
        candidates.push(increment_last_place(l));
    }
    candidates.into_iter().find(|c| is_valid(c) && strictly_between(l, c, r)).map(|c| Epoch(c.into()))
}

// ---------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const VECTORS: &str = include_str!("../../../fixtures/vectors/fakebigfloat.tsv");

    fn ep(s: &str) -> Epoch {
        Epoch::parse(s).unwrap_or_else(|e| panic!("{e}"))
    }

    fn ord_of(n: &str) -> Ordering {
        match n {
            "-1" => Ordering::Less,
            "0" => Ordering::Equal,
            "1" => Ordering::Greater,
            _ => panic!("bad cmp result {n:?}"),
        }
    }

    #[test]
    fn reference_vectors() {
        let mut failures = Vec::new();
        let mut rows = 0;
        for (lineno, line) in VECTORS.lines().enumerate() {
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            rows += 1;
            let f: Vec<&str> = line.split('\t').collect();
            assert_eq!(f.len(), 4, "line {}: {line:?}", lineno + 1);
            let (op, a, b, want) = (f[0], f[1], f[2], f[3]);
            let mut fail = |got: String| {
                failures.push(format!("line {}: {op} {a:?} {b:?}: want {want:?}, got {got:?}", lineno + 1))
            };
            match op {
                "cmp" => {
                    let want = ord_of(want);
                    let fast = cmp_epochs(a, b);
                    let slow = cmp_epochs_reference(a, b);
                    if fast != want || slow != want {
                        fail(format!("fast {fast:?}, reference {slow:?}"));
                    }
                }
                "inc1" => {
                    let raw = increase_a_bit(a, None);
                    let got = ep(a).inc().into_string();
                    if raw != want || got != want {
                        fail(format!("raw {raw:?}, Epoch::inc {got:?}"));
                    }
                }
                "inc2" => {
                    let raw = increase_a_bit(a, Some(b));
                    let got = ep(a).inc_towards(&ep(b)).map(Epoch::into_string).unwrap_or_default();
                    if raw != want || got != want {
                        fail(format!("raw {raw:?}, Epoch::inc_towards {got:?}"));
                    }
                }
                _ => fail(format!("unknown op {op:?}")),
            }
        }
        assert_eq!(rows, 102, "expected 102 vector rows");
        assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
    }

    #[test]
    fn inc_results_parse_and_order() {
        for line in VECTORS.lines().filter(|l| l.starts_with("inc")) {
            let f: Vec<&str> = line.split('\t').collect();
            let e = ep(f[3]);
            assert!(ep(f[1]) < e, "{line}");
        }
    }

    #[test]
    fn g15() {
        let cases: &[(f64, &str)] = &[
            (1700000100.5, "1700000100.5"),
            (1796007695.882461, "1796007695.88246"),
            (1796007882.0, "1796007882"),
            (1796007695.88861, "1796007695.88861"),
            (1700000000.0, "1700000000"),
            (1307159461.94575, "1307159461.94575"),
            (0.5, "0.5"),
            (1.0, "1"),
            (100.0, "100"),
            (0.0001, "0.0001"),
            (0.00012345, "0.00012345"),
            (0.00001, "1e-05"),
            (1.5e-5, "1.5e-05"),
            (1e15, "1e+15"),
            (123456789012345678.0, "1.23456789012346e+17"),
            (999999999999999.5, "1e+15"),
            (99999999999999.95, "100000000000000"),
            (99999999999999.94, "99999999999999.9"),
            (1e100, "1e+100"),
            (0.0, "0"),
            (-0.0, "-0"),
            (-1.5, "-1.5"),
            (f64::INFINITY, "inf"),
        ];
        for &(x, want) in cases {
            assert_eq!(format_g15(x), want, "%.15g of {x:e}");
            assert_eq!(format_g15(x), c_format("%.15g", x), "libc %.15g of {x:e}");
        }
    }

    #[test]
    fn clock_and_whole_seconds() {
        assert_eq!(Epoch::from_clock(1700000100.5).as_str(), "1700000100.5");
        assert_eq!(Epoch::from_clock(1796007695.882461).as_str(), "1796007695.88246");
        assert_eq!(Epoch::from_clock(1796007882.0).as_str(), "1796007882");
        assert_eq!(Epoch::from_clock(1e15).as_str(), "1000000000000000");
        assert_eq!(Epoch::from_clock(1.5e-5).as_str(), "0.000015");
        assert_eq!(Epoch::from_clock(1e300).as_str(), "9999999999999990000");
        assert_eq!(Epoch::from_whole_seconds(1700000000).as_str(), "1700000000.0");
        assert_eq!(Epoch::from_whole_seconds(0).as_str(), "0.0");
        assert_eq!(Epoch::from_whole_seconds(-5).as_str(), "0.0");
        for e in [
            Epoch::from_clock(1796007882.0),
            Epoch::from_clock(0.5),
            Epoch::from_clock(1e18),
            Epoch::from_whole_seconds(i64::MAX),
        ] {
            assert!(Epoch::parse(e.as_str()).is_ok(), "{e}");
        }
    }

    #[test]
    fn parse_rejects() {
        let long = format!("1.{}", "5".repeat(5000));
        for bad in [
            "",
            "abc",
            "1e5",
            "-1",
            "+1",
            "1.",
            ".5",
            "1.2.3",
            " 1",
            "1 ",
            long.as_str(),
            "1700000000\n",
            "17000000００",
            "0100",
            "00",
            "12345678901234567890",
            "1,5",
            ".",
        ] {
            let err = Epoch::parse(bad).expect_err(bad);
            assert!(!err.0.is_empty());
            if !bad.is_empty() {
                assert!(err.0.contains('"'), "quotes the input: {}", err.0);
            }
        }
        let err = Epoch::parse(&long).unwrap_err().0;
        assert!(err.contains("too long") && err.len() < 120, "{err}");
        let err = Epoch::parse("1\u{7}x").unwrap_err().0;
        assert!(err.contains("\\u{7}"), "escapes control characters: {err}");
        assert_eq!(
            Epoch::parse("1e5").unwrap_err().to_string(),
            "epoch \"1e5\" is not a decimal number: exponent 'e' at position 2 (write all digits)"
        );
    }

    #[test]
    fn parse_accepts() {
        for good in [
            "0",
            "0.5",
            "1700000000",
            "1700000000.5",
            "1700000000.0",
            "01700000000.5",
            "1234567890123456789",
            "1700000000.500000476837158203125",
            "1700000000.00000095367431640625",
            "0.99999999900000080543804870103485882282257080078125",
            "1796007695.888510227203369140625",
        ] {
            let e = Epoch::parse(good).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(e.as_str(), good);
            assert_eq!(e.to_string(), good);
            assert_eq!(good.parse::<Epoch>().unwrap().into_string(), good);
        }
        assert!(Epoch::parse(&"1".repeat(4096).replacen('1', "1.", 1)).is_err());
        let max = format!("1.{}", "2".repeat(4094));
        assert_eq!(max.len(), 4096);
        assert!(Epoch::parse(&max).is_ok());
        assert!(!is_valid(&"1".repeat(64).replacen('1', "1.", 1)), "rrr makes at most 64 characters");
    }

    #[test]
    fn accessors() {
        let e = ep("1700000000");
        assert!(!e.has_dot());
        assert_eq!(e.with_dot().as_str(), "1700000000.0");
        assert_eq!(e.with_dot().with_dot().as_str(), "1700000000.0");
        assert_eq!(e, ep("1700000000.0"));
        assert!(ep("1.5") < ep("1.50"));
        assert_eq!(ep("1700000000.99999999999").whole_seconds(), 1700000000);
        assert_eq!(ep("1700000000.99999999999").to_f64(), 1700000001.0);
        assert_eq!(ep("1234567890123456789").whole_seconds(), 1234567890123456789);
        assert_eq!(ep("99999999999999999999.5").whole_seconds(), i64::MAX);
        assert_eq!(ep("0.5").whole_seconds(), 0);
        assert_eq!(ep("1700000100.5").to_f64(), 1700000100.5);
    }

    #[test]
    fn serde_round_trip() {
        let e = ep("1700000000.50000095367431640625");
        let json = serde_json::to_string(&e).unwrap();
        assert_eq!(json, "\"1700000000.50000095367431640625\"");
        let back: Epoch = serde_json::from_str(&json).unwrap();
        assert_eq!(back.as_str(), e.as_str());
        let err = serde_json::from_str::<Epoch>("\"1e5\"").unwrap_err();
        assert!(err.to_string().contains("exponent"), "{err}");
        let v: Vec<Epoch> = serde_json::from_str(r#"["1700000000", "1700000000.0"]"#).unwrap();
        assert_eq!(v[0].as_str(), "1700000000");
        assert_eq!(v[1].as_str(), "1700000000.0");
        // JSON numbers are refused (their text is for the reader to keep).
        assert!(serde_json::from_str::<Epoch>("1700000160.5").is_err());
        // YAML plain scalars keep their text.
        for text in ["1700000000.50", "1700000000", "1700000000.0"] {
            let e: Epoch = serde_saphyr::from_str(&format!("{text}\n")).unwrap();
            assert_eq!(e.as_str(), text);
            let e: Epoch = serde_saphyr::from_str(&format!("'{text}'\n")).unwrap();
            assert_eq!(e.as_str(), text);
        }
    }

    #[test]
    fn fallbacks() {
        // Far from real epochs the reference's bump fails; ours stays sane.
        for l in ["0", "0.0", "0.0000000000000000000001", "0.001"] {
            if let Ok(l) = Epoch::parse(l) {
                let s = l.inc();
                assert!(l < s && Epoch::parse(s.as_str()).is_ok(), "{l} -> {s}");
            }
        }
        let long = ep(&format!("1.{}", "9".repeat(62)));
        let s = long.inc();
        assert!(long < s && is_valid(s.as_str()), "{s}");
        assert_eq!(increment_last_place("1.59"), "1.6");
        assert_eq!(increment_last_place("9.99"), "10.0");
        // Crossing a power of ten: the reference keeps a padded leading zero.
        let s = ep("999.9").inc_towards(&ep("1000.1")).unwrap();
        assert_eq!(s.as_str(), "0999.9500000000000454747350886464119");
        assert!(is_valid(s.as_str()));
        // 1.5 and 1.50 are ordered by the comparator, but nothing lies
        // between them as numbers: a bump must not give 1.500, the same
        // number as 1.50.
        let (a, b) = (ep("1.5"), ep("1.50"));
        assert!(a < b);
        assert_eq!(a.cmp_value(&b), Ordering::Equal);
        assert!(a.inc_towards(&b).is_none());
        assert!(ep("1.5").inc_towards(&ep("1.500")).is_none());
        assert!(ep("1.0").inc_towards(&ep("1.00")).is_none());
        // Neighbours 64 characters long leave no room either.
        let l = format!("1.{}", "0".repeat(62));
        let r = format!("1.{}1", "0".repeat(61));
        assert!(ep(&l).inc_towards(&ep(&r)).is_none());
        let s = ep("1.5").inc_towards(&ep("1.5000001")).unwrap();
        assert!(ep("1.5").cmp_value(&s) == Ordering::Less && s.cmp_value(&ep("1.5000001")) == Ordering::Less);
    }

    #[test]
    fn long_epochs_of_the_reference_are_read_and_bumped() {
        // The reference's init of 2000 files of one mtime bisects down to
        // 684 characters; rrr reads those, and its own bumps stay short.
        let mut l = Epoch::parse("1700000000.0").unwrap();
        let mut r = Epoch::parse("1700000000.0000001").unwrap();
        let mut longest = 0;
        for _ in 0..2000 {
            let mid = increase_a_bit(l.as_str(), Some(r.as_str()));
            let m = Epoch::parse(&mid).unwrap_or_else(|e| panic!("{e}"));
            assert!(l < m && m < r);
            longest = longest.max(mid.len());
            r = m;
            if longest > 700 {
                break;
            }
        }
        assert!(longest > 600, "{longest}");
        let bumped = r.inc();
        assert_eq!(r.cmp_value(&bumped), Ordering::Less);
        // Between two neighbours that close, no epoch of at most 64
        // characters fits: the caller spreads instead.
        let up = Epoch::parse("1700000000.0000001").unwrap();
        assert!(r.inc_towards(&up).is_none());
        l = Epoch::parse("1700000000.0").unwrap();
        assert!(l.inc_towards(&r).is_none());
        assert!(Epoch::parse("1700000000.1").unwrap().inc_towards(&up).is_none(), "not above");
    }

    #[test]
    fn decimal_comparison() {
        for (a, b, want) in [
            ("1.5", "1.50", Ordering::Equal),
            ("1700000000", "1700000000.0", Ordering::Equal),
            ("01.5", "1.5", Ordering::Equal),
            ("1.0", "1.00000000000000000001", Ordering::Less),
            ("9.99", "10", Ordering::Less),
            ("1.49", "1.5", Ordering::Less),
            ("0", "0.0", Ordering::Equal),
            ("2", "10", Ordering::Less),
        ] {
            assert_eq!(cmp_decimal(a, b), want, "{a} {b}");
            assert_eq!(cmp_decimal(b, a), want.reverse(), "{b} {a}");
        }
    }

    #[test]
    fn perl_min_keeps_the_winners_text() {
        let m = ep("1700000060.5000001");
        let got = perl_min(&[PerlNum::float(1700006400.5), PerlNum::text(&m), PerlNum::text(&ep("1700010000.5"))]);
        assert_eq!(got.unwrap().as_str(), "1700000060.5000001");
        // A computed double prints as %.15g, but compares unrounded.
        let got = perl_min(&[PerlNum::float(1700000060.5000002), PerlNum::text(&m)]).unwrap();
        assert_eq!(got.as_str(), "1700000060.5000001");
        assert_eq!(perl_min(&[PerlNum::float(1700000000.25), PerlNum::text(&m)]).unwrap().as_str(), "1700000000.25");
        // Equal doubles: the first argument wins.
        let (a, b) = (ep("1700000060.50000001"), ep("1700000060.50000002"));
        assert_eq!(a.to_f64(), b.to_f64());
        assert_eq!(perl_min(&[PerlNum::text(&b), PerlNum::text(&a)]).unwrap().as_str(), b.as_str());
        assert_eq!(perl_min(&[PerlNum::float(-5.0)]).unwrap().as_str(), "0");
    }

    #[test]
    fn inc_towards_needs_a_greater_number() {
        assert!(ep("2").inc_towards(&ep("1")).is_none());
        assert!(ep("2").inc_towards(&ep("2.0")).is_none());
    }

    #[test]
    fn inc_from_integer_chain() {
        // protocol.md 7.4: three updates in one clock tick.
        let a = Epoch::from_clock(1700000100.5);
        let b = a.inc();
        let c = b.inc();
        assert_eq!([a.as_str(), b.as_str(), c.as_str()], ["1700000100.5", "1700000100.5000001", "1700000100.50000016"]);
    }

    #[test]
    fn sort_many() {
        let mut v: Vec<Epoch> =
            ["3", "1.5", "1.50", "2.0", "2", "10", "9.99", "01.5", "0.1"].iter().map(|s| ep(s)).collect();
        v.sort();
        let got: Vec<&str> = v.iter().map(Epoch::as_str).collect();
        assert_eq!(got, ["0.1", "1.5", "01.5", "1.50", "2.0", "2", "3", "9.99", "10"]);
    }

    /// `snprintf(fmt, x)` from the C library, for checking our formatting.
    /// The workspace denies `unsafe_code`; this test oracle is the one
    /// exception outside rrr's src/sys/: the C library's own formatting is
    /// what the port must equal, and nix has no wrapper for snprintf.
    #[allow(unsafe_code)]
    fn c_format(fmt: &str, x: f64) -> String {
        let fmt = std::ffi::CString::new(fmt).unwrap();
        let mut buf = vec![0u8; 4096];
        // SAFETY: the buffer is writable for its whole length, the format
        // string is NUL-terminated and consumes exactly one double.
        let n = unsafe { libc::snprintf(buf.as_mut_ptr().cast::<libc::c_char>(), buf.len(), fmt.as_ptr(), x) };
        assert!(n >= 0 && (n as usize) < buf.len());
        buf.truncate(n as usize);
        String::from_utf8(buf).unwrap()
    }

    /// The reference's `_my_sprintf_float`, via the C library.
    fn c_fmt_float(x: f64) -> String {
        let mut precision = 16;
        loop {
            let mut s = c_format(&format!("%.{precision}f"), x);
            if s.ends_with('0') {
                strip_zeros(&mut s);
                return s;
            }
            precision *= 2;
        }
    }

    // --- strategies

    /// 10 digits, then optionally a dot and 1 to 5 digits.
    fn clock_like() -> impl Strategy<Value = String> {
        ("[1-9][0-9]{9}", proptest::option::of("[0-9]{1,5}")).prop_map(|(i, f)| match f {
            Some(f) => format!("{i}.{f}"),
            None => i,
        })
    }

    /// Clock-like epochs, bumped 0 to 12 times, sometimes with `.0` or
    /// an extra trailing zero.
    fn epoch_like() -> impl Strategy<Value = String> {
        (clock_like(), 0usize..12, 0u8..4).prop_map(|(s, n, tweak)| {
            let mut e = Epoch::parse(&s).unwrap();
            for _ in 0..n {
                e = e.inc();
            }
            match tweak {
                0 => e.with_dot().into_string(),
                1 => format!("{}0", e.with_dot()),
                _ => e.into_string(),
            }
        })
    }

    /// Valid epochs of all shapes, including close neighbours.
    fn any_epoch() -> impl Strategy<Value = String> {
        prop_oneof![
            epoch_like(),
            "(0|[1-9][0-9]{0,18})",
            "[0-9]{1,20}\\.[0-9]{1,25}",
            "17000000[0-9]{2}(\\.[0-9]{0,3}0{0,2}1?)?",
        ]
        .prop_filter("valid", |s| is_valid(s))
    }

    /// Raw digit strings: any dot position, leading zeros, empty parts.
    fn raw_decimal() -> impl Strategy<Value = String> {
        prop_oneof![
            "[0-9]{0,25}(\\.[0-9]{0,25})?",
            "0{0,3}[0-9]{1,3}(\\.[0-9]{0,3})?",
            "0{0,3}1[0-9]{9}(\\.[0-9]{0,6})?",
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        #[test]
        fn inc_chain_strictly_increasing(start in clock_like(), steps in 1usize..40) {
            let mut seen = std::collections::HashSet::new();
            let mut e = Epoch::parse(&start).unwrap();
            seen.insert(e.as_str().to_owned());
            for _ in 0..steps {
                let next = e.inc();
                prop_assert_eq!(cmp_epochs(e.as_str(), next.as_str()), Ordering::Less,
                    "{} -> {}", e, next);
                prop_assert!(is_valid(next.as_str()), "{}", next);
                // the faithful reference result, not a fallback
                prop_assert_eq!(next.as_str(), increase_a_bit(e.as_str(), None));
                prop_assert!(seen.insert(next.as_str().to_owned()), "repeated {}", next);
                e = next;
            }
        }

        #[test]
        fn inc_towards_between(a in any_epoch(), b in any_epoch()) {
            let (l, r) = (Epoch::parse(&a).unwrap(), Epoch::parse(&b).unwrap());
            let (l, r) = match l.cmp(&r) {
                Ordering::Less => (l, r),
                Ordering::Greater => (r, l),
                Ordering::Equal => return Ok(()),
            };
            match l.inc_towards(&r) {
                Some(s) => {
                    prop_assert!(l < s && s < r, "{} < {} < {}", l, s, r);
                    prop_assert!(l.cmp_value(&s) == Ordering::Less && s.cmp_value(&r) == Ordering::Less,
                        "{} < {} < {} as numbers", l, s, r);
                    prop_assert!(is_valid(s.as_str()));
                }
                None => prop_assert!(
                    l.cmp_value(&r) == Ordering::Equal || fallback_between(l.as_str(), r.as_str()).is_none(),
                    "no bump between {} and {}", l, r
                ),
            }
        }

        #[test]
        fn inc_towards_clock_neighbours(a in clock_like(), n in 1usize..6) {
            let l = Epoch::parse(&a).unwrap();
            let mut r = l.clone();
            for _ in 0..n {
                r = r.inc();
            }
            let s = l.inc_towards(&r).unwrap();
            prop_assert!(l < s && s < r, "{} < {} < {}", l, s, r);
            prop_assert_eq!(s.as_str(), increase_a_bit(l.as_str(), Some(r.as_str())));
        }

        #[test]
        fn cmp_is_a_total_order(a in any_epoch(), b in any_epoch(), c in any_epoch()) {
            let ab = cmp_epochs(&a, &b);
            let bc = cmp_epochs(&b, &c);
            let ac = cmp_epochs(&a, &c);
            prop_assert_eq!(ab, cmp_epochs(&b, &a).reverse());
            prop_assert_eq!(cmp_epochs(&a, &a), Ordering::Equal);
            if ab != Ordering::Greater && bc != Ordering::Greater {
                prop_assert!(ac != Ordering::Greater, "{} <= {} <= {} but {:?}", a, b, c, ac);
            }
            if ab == Ordering::Equal && bc == Ordering::Equal {
                prop_assert_eq!(ac, Ordering::Equal);
            }
        }

        #[test]
        fn fast_path_agrees_with_reference(a in raw_decimal(), b in raw_decimal()) {
            prop_assert_eq!(cmp_epochs(&a, &b), cmp_epochs_reference(&a, &b), "{:?} {:?}", a, b);
        }

        #[test]
        fn fast_path_agrees_on_epochs(a in any_epoch(), b in any_epoch()) {
            prop_assert_eq!(cmp_epochs(&a, &b), cmp_epochs_reference(&a, &b), "{:?} {:?}", a, b);
        }

        #[test]
        fn dot_index_finds_the_first_dot(v in proptest::collection::vec(
            prop_oneof![Just(b'.'), Just(b'5'), any::<u8>()], 0..40)) {
            prop_assert_eq!(dot_index(&v), v.iter().position(|&c| c == b'.'));
        }

        #[test]
        fn g15_matches_libc(bits in any::<u64>(), clock in 0.0f64..4e9) {
            let x = f64::from_bits(bits >> 1); // positive, any magnitude
            if x.is_finite() {
                prop_assert_eq!(format_g15(x), c_format("%.15g", x));
            }
            prop_assert_eq!(format_g15(clock), c_format("%.15g", clock));
            let clock_text = Epoch::from_clock(clock);
            prop_assert!(clock < 1e-4 || clock_text.as_str() == c_format("%.15g", clock));
        }

        #[test]
        fn fmt_float_matches_libc(clock in 0.0f64..4e9, bits in any::<u64>()) {
            prop_assert_eq!(fmt_float(clock), c_fmt_float(clock));
            prop_assert_eq!(fmt_float(nextup(clock)), c_fmt_float(nextup(clock)));
            let x = f64::from_bits(bits >> 1);
            if x.is_finite() {
                prop_assert_eq!(fmt_float(x), c_fmt_float(x));
            }
        }

    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn sorting_never_panics(v in proptest::collection::vec(any_epoch(), 0..60)) {
            let mut v: Vec<Epoch> = v.iter().map(|s| Epoch::parse(s).unwrap()).collect();
            v.sort();
            for w in v.windows(2) {
                prop_assert!(w[0] <= w[1]);
            }
        }
    }
}

#[cfg(test)]
mod pins;
