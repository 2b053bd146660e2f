//! Interval specs: `1h`, `6h`, `1d`, `1W`, `1M`, `1Q`, `1Y`, `Z` (protocol.md 3).
//!
//! A spec is a decimal count followed by one unit letter (`s m h d W M Q Y`),
//! or the bare `Z`, the unbounded window. The spec string is kept as written:
//! it is part of the recentfile's name (`RECENT-1h.yaml`) and of `meta.aggregator`.
//!
//! Decisions (the reference dies on all of these, and so do we, with a clear
//! message): a missing count (`h`), an unknown unit (`0x`), and a count on `Z`
//! (`5Z`: "Z is unbounded and takes no count"). Units are case-sensitive:
//! `m` is minutes, `M` is months (30 days).

use std::fmt;

/// Why an interval spec or a cascade of them is refused; the message
/// quotes the spec as written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IntervalError {
    /// `""`.
    #[error("empty interval spec")]
    Empty,
    /// `5Z`.
    #[error("invalid interval spec {spec:?}: Z is unbounded and takes no count")]
    CountOnZ {
        /// The spec as written.
        spec: String,
    },
    /// `1x`.
    #[error("invalid interval spec {spec:?}: unit must be one of s m h d W M Q Y, or Z alone")]
    UnknownUnit {
        /// The spec as written.
        spec: String,
    },
    /// `h`, `-1h`, `1.5h`.
    #[error("invalid interval spec {spec:?}: expected a decimal count before the unit, e.g. 1{unit}")]
    NoCount {
        /// The spec as written.
        spec: String,
        /// Its unit letter.
        unit: char,
    },
    /// A count beyond `u64`.
    #[error("invalid interval spec {spec:?}: count too large")]
    CountTooLarge {
        /// The spec as written.
        spec: String,
    },
    /// More seconds than [`Z_SECONDS`].
    #[error("invalid interval spec {spec:?}: too large")]
    TooLarge {
        /// The spec as written.
        spec: String,
    },
    /// [`cascade`]: two specs of one length (`60s`, `1m`).
    #[error("aggregator intervals {shorter} and {longer} have the same length")]
    SameLength {
        /// The first of the two, in cascade order.
        shorter: Interval,
        /// The second.
        longer: Interval,
    },
}

/// Seconds of the `Z` interval: Perl's MAX_INT on 64-bit builds.
pub const Z_SECONDS: u64 = i64::MAX as u64;

/// A parsed interval spec with its original text.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Interval {
    spec: String,
    seconds: u64,
}

impl Interval {
    /// Parse a spec such as `1h` or `Z`.
    ///
    /// ```
    /// use recentfile::Interval;
    ///
    /// let h6 = Interval::parse("6h")?;
    /// assert_eq!((h6.spec(), h6.seconds()), ("6h", 21_600));
    /// // `M` is a month of 30 days, `m` a minute.
    /// assert_eq!(Interval::parse("1M")?.seconds(), 2_592_000);
    /// assert_eq!(Interval::parse("1m")?.seconds(), 60);
    /// assert!(Interval::parse("Z")?.is_z());
    /// assert!(Interval::parse("5Z").is_err());
    /// assert!(Interval::parse("1x").is_err());
    /// # Ok::<(), recentfile::interval::IntervalError>(())
    /// ```
    pub fn parse(spec: &str) -> Result<Interval, IntervalError> {
        if spec == "Z" {
            return Ok(Interval { spec: spec.to_string(), seconds: Z_SECONDS });
        }
        let Some(unit) = spec.chars().last() else {
            return Err(IntervalError::Empty);
        };
        let count = &spec[..spec.len() - unit.len_utf8()];
        let per_unit: u64 = match unit {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            'W' => 604_800,
            'M' => 2_592_000,
            'Q' => 7_776_000,
            'Y' => 31_557_600,
            'Z' => return Err(IntervalError::CountOnZ { spec: spec.to_string() }),
            _ => return Err(IntervalError::UnknownUnit { spec: spec.to_string() }),
        };
        if count.is_empty() || !count.bytes().all(|b| b.is_ascii_digit()) {
            return Err(IntervalError::NoCount { spec: spec.to_string(), unit });
        }
        let n: u64 = count.parse().map_err(|_| IntervalError::CountTooLarge { spec: spec.to_string() })?;
        let seconds = n
            .checked_mul(per_unit)
            .filter(|s| *s <= Z_SECONDS)
            .ok_or_else(|| IntervalError::TooLarge { spec: spec.to_string() })?;
        Ok(Interval { spec: spec.to_string(), seconds })
    }

    /// The spec as written, e.g. `1h`.
    pub fn spec(&self) -> &str {
        &self.spec
    }

    /// Length of the window in seconds (`Z`: [`Z_SECONDS`]).
    pub fn seconds(&self) -> u64 {
        self.seconds
    }

    /// Whether this is the unbounded `Z` window.
    pub fn is_z(&self) -> bool {
        self.spec == "Z"
    }
}

impl fmt::Display for Interval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.spec)
    }
}

impl std::str::FromStr for Interval {
    type Err = IntervalError;
    fn from_str(s: &str) -> Result<Self, IntervalError> {
        Interval::parse(s)
    }
}

/// Parse a comma- or space-separated list such as `6h,1d,1W,1M,1Q,1Y,Z`.
pub fn parse_list(list: &str) -> Result<Vec<Interval>, IntervalError> {
    list.split(|c: char| c == ',' || c.is_whitespace()).filter(|s| !s.is_empty()).map(Interval::parse).collect()
}

/// The collection's intervals, smallest first: the principal's own interval
/// plus the aggregator entries, duplicates (by spec) and entries shorter than
/// the principal dropped (protocol.md 10 step 1). Two specs of equal length
/// (`60s`, `1m`) are an error here rather than a later crash.
pub fn cascade(principal: &Interval, aggregator: &[Interval]) -> Result<Vec<Interval>, IntervalError> {
    let mut out = vec![principal.clone()];
    for iv in aggregator {
        if iv.seconds() < principal.seconds() || out.iter().any(|o| o.spec == iv.spec) {
            continue;
        }
        out.push(iv.clone());
    }
    out.sort_by_key(|i| i.seconds());
    for pair in out.windows(2) {
        if pair[0].seconds() == pair[1].seconds() {
            return Err(IntervalError::SameLength { shorter: pair[0].clone(), longer: pair[1].clone() });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table() {
        let ok = [
            ("1h", 3600),
            ("6h", 21_600),
            ("1d", 86_400),
            ("1W", 604_800),
            ("1M", 2_592_000),
            ("1Q", 7_776_000),
            ("4Q", 31_104_000),
            ("1Y", 31_557_600),
            ("0s", 0),
            ("12000000000000s", 12_000_000_000_000),
            ("20m", 1200),
            ("Z", Z_SECONDS),
        ];
        for (spec, secs) in ok {
            let iv = Interval::parse(spec).unwrap();
            assert_eq!(iv.seconds(), secs, "{spec}");
            assert_eq!(iv.spec(), spec);
        }
        for bad in ["h", "0x", "5Z", "", "1H", "-1h", "1.5h", "1 h", "99999999999999999999h", "ZZ"] {
            assert!(Interval::parse(bad).is_err(), "{bad:?} must be refused");
        }
        assert!(Interval::parse("5Z").unwrap_err().to_string().contains("takes no count"));
    }

    #[test]
    fn cascade_sorts_and_dedups() {
        let p = Interval::parse("1h").unwrap();
        let agg = parse_list("1h,Z,6h,1d,30m").unwrap();
        let specs: Vec<_> = cascade(&p, &agg).unwrap().iter().map(|i| i.spec().to_string()).collect();
        assert_eq!(specs, ["1h", "6h", "1d", "Z"]);
        assert!(cascade(&Interval::parse("1m").unwrap(), &parse_list("60s,1h").unwrap()).is_err());
    }
}

#[cfg(test)]
mod pins;
