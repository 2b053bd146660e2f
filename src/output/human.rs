//! Times, sizes and durations as a person reads them: RFC 3339 UTC for
//! instants, binary units for sizes, `2 min 5 s` for durations. Pure: what
//! a person reads (`status`, `check`, pass summaries, log lines) goes
//! through here; `news`, `overview` and every `--json` keep their raw,
//! documented forms.

/// An instant (seconds since the Unix epoch) as RFC 3339 UTC, whole
/// seconds: `2023-11-14T22:13:20Z`.
pub fn time(secs: f64) -> String {
    let (date, s) = split(secs.floor());
    format!("{date}T{:02}:{:02}:{:02}Z", s / 3600, s / 60 % 60, s % 60)
}

/// An instant as RFC 3339 UTC with milliseconds (log timestamps):
/// `2023-11-14T22:13:20.123Z`.
pub fn time_millis(secs: f64) -> String {
    let ms = (secs * 1000.0).floor();
    let (date, s) = split((ms / 1000.0).floor());
    let frac = (ms - (ms / 1000.0).floor() * 1000.0) as u32;
    format!("{date}T{:02}:{:02}:{:02}.{frac:03}Z", s / 3600, s / 60 % 60, s % 60)
}

/// (`YYYY-MM-DD`, seconds into that day) of whole seconds since the epoch.
fn split(secs: f64) -> (String, i64) {
    let secs = secs.clamp(-1e14, 1e14) as i64;
    let (days, s) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    (format!("{y:04}-{m:02}-{d:02}"), s)
}

/// Howard Hinnant's `civil_from_days`: the proleptic Gregorian date of a
/// day count since 1970-01-01.
pub(crate) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// A byte count in binary units: `512 B`, `9.2 MiB`.
pub fn size(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut v = bytes as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if v < 10.0 {
        format!("{v:.1} {}", UNITS[unit])
    } else {
        format!("{v:.0} {}", UNITS[unit])
    }
}

/// A rate in bytes per second: `1.5 MiB/s`.
pub fn rate(bytes_per_sec: f64) -> String {
    format!("{}/s", size(bytes_per_sec.max(0.0) as u64))
}

/// A duration in seconds: `0.42 s`, `12 s`, `2 min 05 s`, `3 h 07 min`, `4 d 02 h`.
pub fn duration(secs: f64) -> String {
    let secs = secs.max(0.0);
    if secs < 10.0 {
        return format!("{secs:.2} s");
    }
    let s = secs.round() as u64;
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min {:02} s", s / 60, s % 60),
        3600..=86_399 => format!("{} h {:02} min", s / 3600, s / 60 % 60),
        _ => format!("{} d {:02} h", s / 86_400, s / 3600 % 24),
    }
}

/// A count and its noun in the right number: `1 delete pending`,
/// `2 deletes pending`, `1,200 passes` (both forms given: English
/// plurals are not one rule).
pub fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", count(n), if n == 1 { one } else { many })
}

/// A count with thousands separators: `264,618`.
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339() {
        assert_eq!(time(0.0), "1970-01-01T00:00:00Z");
        assert_eq!(time(1_700_000_000.9), "2023-11-14T22:13:20Z");
        assert_eq!(time(951_782_400.0), "2000-02-29T00:00:00Z", "a leap day");
        assert_eq!(time(4_102_444_799.0), "2099-12-31T23:59:59Z");
        assert_eq!(time(-1.0), "1969-12-31T23:59:59Z");
        assert_eq!(time_millis(1_700_000_000.123_9), "2023-11-14T22:13:20.123Z");
        assert_eq!(time_millis(1_700_000_000.0), "2023-11-14T22:13:20.000Z");
    }

    #[test]
    fn sizes_durations_counts() {
        let table = [(0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (9_669_840, "9.2 MiB"), (5 << 30, "5.0 GiB")];
        for (n, want) in table {
            assert_eq!(size(n), want);
        }
        assert_eq!(size(150 << 20), "150 MiB");
        assert_eq!(rate(264_618.470_8), "258 KiB/s");
        assert_eq!(duration(0.423), "0.42 s");
        assert_eq!(duration(42.4), "42 s");
        assert_eq!(duration(125.0), "2 min 05 s");
        assert_eq!(duration(3.0 * 3600.0 + 7.0 * 60.0), "3 h 07 min");
        assert_eq!(duration(4.0 * 86_400.0 + 7200.0), "4 d 02 h");
        assert_eq!(count(264_618), "264,618");
        assert_eq!(count(999), "999");
        assert_eq!(count(1_000_000), "1,000,000");
    }
}
