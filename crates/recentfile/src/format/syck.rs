//! Scalars exactly as YAML::Syck 1.34 (under Perl 5.36) emits them (protocol.md 6.1).
//!
//! This is Syck's own decision, ported from its source rather than guessed
//! from probes: `perl_syck.h` picks a style from Perl's view of the string,
//! `syck_emit_scalar` (emitter.c) then overrides it from a scan of the bytes.
//!
//! 1. The empty string is `''`.
//! 2. A string Perl's `looks_like_number` accepts (`12`, `1.5`, ` 1`, `1e5`,
//!    `inf`, `nan(1)`, `0 but true`) is single-quoted, unless it is a
//!    "very basic integer" (at most 9 bytes, see `unquotable_integer`),
//!    which is left to the scan like any other string.
//! 3. A YAML 1.1 bool or null word (`y`, `Yes`, `off`, `~`, `NULL`) is
//!    single-quoted.
//! 4. Everything else starts plain and is double-quoted when the scan finds
//!    a byte outside TAB/LF/CR/printable ASCII/0x80+; or (unless single-quoted)
//!    a space or TAB at either end; or a newline; or (when plain) an indicator:
//!    a first byte in ``[]{}!*&|>'"#%@`^``, a first `-`, `:`, `?` or `,`
//!    that is alone or followed by a space, CR or LF, a ` #`, or a `:` at the
//!    end or before a space or LF. A plain string starting with `:` is
//!    double-quoted too (for Ruby's symbols).
//!
//! Double quotes escape `"` and `\`, control characters by name (`\n`, `\t`,
//! `\0`, ...) or as `\xHH`, and every byte above 0x7E as `\xHH`: Perl hands
//! Syck a path as bytes, so `ä: b` becomes `"\xC3\xA4: b"`. Plain and
//! single-quoted strings keep non-ASCII bytes raw. Syck folds no line
//! (YAML::Syck passes a width of 0).
//!
//! Kinds of paths Syck quotes that look harmless: `Foo-1.0:` (a `:` at the
//! end), `, x` and `,` (a flow indicator alone), `^a`, `12 ` (a number with
//! a trailing space), `inf`, `nan`, `-0`. `fixtures/vectors/yaml-syck-scalars.tsv`
//! holds the probed and the differentially found cases; the tests below
//! replay them all, and `tests/format.rs` compares with the real YAML::Syck.

use std::borrow::Cow;

/// How Syck writes `s` after `key: ` or `- `.
pub fn scalar(s: &str) -> Cow<'_, str> {
    match scalar_bytes(s.as_bytes()) {
        Cow::Borrowed(_) => Cow::Borrowed(s),
        Cow::Owned(b) => Cow::Owned(String::from_utf8(b).expect("UTF-8 in, ASCII changes only")),
    }
}

/// How Syck writes the byte string `b` (a Perl string of bytes, UTF-8 or
/// not: Syck never looks at characters) after `key: ` or `- `.
pub fn scalar_bytes(b: &[u8]) -> Cow<'_, [u8]> {
    match style(b) {
        Style::Plain => Cow::Borrowed(b),
        Style::Single => Cow::Owned(single_quoted(b)),
        Style::Double => Cow::Owned(double_quoted(b)),
    }
}

/// Whether Syck writes `s` plain (as it is).
pub(crate) fn is_plain(s: &str) -> bool {
    style(s.as_bytes()) == Style::Plain
}

/// The three ways Syck writes a scalar on one line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Style {
    Plain,
    Single,
    Double,
}

/// Syck's choice for the bytes of a Perl string (the empty string is single-quoted).
fn style(b: &[u8]) -> Style {
    if b.is_empty() {
        return Style::Single;
    }
    // perl_syck.h: numbers are quoted unless they are very basic integers.
    let mut single = looks_like_number(b) && !unquotable_integer(b);
    // syck_emit_scalar: strings that would load as bools or nulls.
    if is_bool_or_null(b) {
        single = true;
    }
    let scan = Scan::of(b);
    if scan.nonprint {
        return Style::Double;
    }
    if single {
        // Only a newline followed by indentation (a literal block, which
        // Syck writes double-quoted) overrides single quotes.
        return if scan.indented { Style::Double } else { Style::Single };
    }
    if scan.white_edge || scan.newline || scan.indicator {
        return Style::Double;
    }
    // "A key/value like `foo: :bar` ... emit these with quotes" (for Ruby).
    if b[0] == b':' {
        return Style::Double;
    }
    Style::Plain
}

/// What `syck_scan_scalar` finds that matters for a block-mapping value.
struct Scan {
    nonprint: bool,
    white_edge: bool,
    newline: bool,
    /// A newline followed by a space or TAB.
    indented: bool,
    /// SCAN_INDIC_S or SCAN_INDIC_C.
    indicator: bool,
}

impl Scan {
    fn of(b: &[u8]) -> Scan {
        let len = b.len();
        // The C code reads one byte past the end: the string's NUL.
        let at = |i: usize| b.get(i).copied().unwrap_or(0);
        let first = b[0];
        let mut indicator = b"[]{}!*&|>'\"#%@`^".contains(&first)
            || (b"-:?,".contains(&first) && (matches!(at(1), b' ' | b'\n' | b'\r') || len == 1));
        let white_edge = matches!(first, b' ' | b'\t') || (len > 1 && matches!(b[len - 1], b' ' | b'\t'));
        let (mut nonprint, mut newline, mut indented) = (false, false, false);
        for (i, &c) in b.iter().enumerate() {
            if !(c == b'\t' || c == b'\n' || c == b'\r' || (0x20..=0x7e).contains(&c) || c >= 0x80) {
                nonprint = true;
            } else if c == b'\n' {
                newline = true;
                indented |= matches!(at(i + 1), b' ' | b'\t');
            } else if (c == b' ' && at(i + 1) == b'#')
                || (c == b':' && (matches!(at(i + 1), b' ' | b'\n') || i == len - 1))
            {
                indicator = true;
            }
        }
        Scan { nonprint, white_edge, newline, indented, indicator }
    }
}

/// `syck_match_implicit` gives `bool#yes`, `bool#no` or `null`: one of
/// YAML 1.1's words, alone or, except for `y`, `Y`, `n` and `N`, followed
/// by a byte above 0x7F and anything. (Syck's re2c scanner reads `char`,
/// signed here, and most of its word-end states test `<= 0`, the NUL, so a
/// non-ASCII byte ends the word: `yesé` and `~€` load as bools and nulls.)
pub(crate) fn is_bool_or_null(b: &[u8]) -> bool {
    const WORDS: &[&[u8]] = &[
        b"~", b"null", b"Null", b"NULL", b"yes", b"Yes", b"YES", b"no", b"No", b"NO", b"true", b"True", b"TRUE",
        b"false", b"False", b"FALSE", b"on", b"On", b"ON", b"off", b"Off", b"OFF",
    ];
    const EXACT: &[&[u8]] = &[b"y", b"Y", b"n", b"N"];
    EXACT.contains(&b) || WORDS.iter().any(|w| b.starts_with(w) && b.get(w.len()).is_none_or(|&c| c >= 0x80))
}

/// `syck_str_is_unquotable_integer`: at most 9 bytes, `0`, or an optional
/// `-`, a first byte that is not `0`, then digits. The first byte is not
/// checked (only ever called on what Perl already takes for a number), so
/// `+5`, `.5` and ` 5` pass too.
fn unquotable_integer(b: &[u8]) -> bool {
    if b.is_empty() || b.len() > 9 {
        return false;
    }
    if b == b"0" {
        return true;
    }
    let b = b.strip_prefix(b"-").unwrap_or(b);
    match b.first() {
        None => true,
        Some(b'0') => false,
        Some(_) => b[1..].iter().all(u8::is_ascii_digit),
    }
}

/// Perl's `isSPACE` on a byte (no locale): space, `\t`, `\n`, `\v`, `\f`, `\r`.
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// Perl 5.36's `looks_like_number` on a string: `grok_number` without
/// trailing garbage (numeric.c). Leading and trailing whitespace, a sign,
/// digits with an optional `.` and fraction (or `.` and digits), an
/// exponent; `0 but true`; infinities and NaNs in their many spellings.
pub(crate) fn looks_like_number(b: &[u8]) -> bool {
    let send = b.len();
    let mut s = 0;
    while s < send && is_space(b[s]) {
        s += 1;
    }
    if s == send && send > 0 {
        return false;
    }
    let mut negative = false;
    if s < send && (b[s] == b'-' || b[s] == b'+') {
        negative = b[s] == b'-';
        s += 1;
        if s == send {
            return false;
        }
    }
    let d = s;
    let mut numtype = negative;
    if s < send && b[s].is_ascii_digit() {
        numtype = true;
        while s < send && b[s].is_ascii_digit() {
            s += 1;
        }
        if s < send && b[s] == b'.' {
            s += 1;
            while s < send && b[s].is_ascii_digit() {
                s += 1;
            }
        }
    } else if s < send && b[s] == b'.' {
        s += 1;
        if !(s < send && b[s].is_ascii_digit()) {
            return false;
        }
        numtype = true;
        while s < send && b[s].is_ascii_digit() {
            s += 1;
        }
    }
    if s > d && s < send && (b[s] == b'e' || b[s] == b'E') {
        s += 1;
        if s < send && (b[s] == b'-' || b[s] == b'+') {
            s += 1;
        }
        if !(s < send && b[s].is_ascii_digit()) {
            return false;
        }
        while s < send && b[s].is_ascii_digit() {
            s += 1;
        }
    }
    while s < send && is_space(b[s]) {
        s += 1;
    }
    if s >= send {
        // The number's flags: nothing but a `-` still counts (`- ` is a
        // number to Perl), an empty string or `+ ` does not.
        return numtype;
    }
    if b == b"0 but true" {
        return true;
    }
    if s + 2 < send && b"inqs#".contains(&b[s].to_ascii_lowercase()) {
        return matches!(grok_infnan(&b[d..]), Some(false));
    }
    false
}

/// `grok_infnan` on `b` (the text after the sign): `None` when it is not an
/// infinity or NaN, `Some(trailing)` when it is, `trailing` telling whether
/// non-space text follows (which makes the whole string no number).
/// A port of Perl's own `grok_infnan` (numeric.c), kept in one piece so
/// that it reads beside the original.
fn grok_infnan(b: &[u8]) -> Option<bool> {
    let send = b.len();
    let fold = |i: usize| b[i].to_ascii_lowercase();
    // No sign step here (Perl's has one): the text starts after
    // looks_like_number's one sign, with a digit, a `.` or one of `inqs#`.
    let mut s = 0;
    let mut odh = false; // "one dot hash": 1.#INF
    if b[s] == b'1' {
        s += 1;
        if s == send {
            return None;
        }
        if b[s] == b'.' {
            s += 1;
            if s == send {
                return None;
            }
        }
        if b[s] != b'#' {
            return None;
        }
        s += 1;
        if s == send {
            return None;
        }
        odh = true;
    }
    if fold(s) == b'i' {
        s += 1;
        if s == send || fold(s) != b'n' {
            return None;
        }
        s += 1;
        if s == send {
            return None;
        }
        if fold(s) == b'f' {
            s += 1;
            if s < send && fold(s) == b'i' {
                for want in *b"nity" {
                    s += 1;
                    if s == send || fold(s) != want {
                        return Some(true);
                    }
                }
                s += 1;
            } else if odh {
                while s < send && b[s] == b'0' {
                    s += 1;
                }
            }
        } else if fold(s) == b'd' && odh {
            s += 1;
            while s < send && b[s] == b'0' {
                s += 1;
            }
        } else {
            return None;
        }
    } else {
        if fold(s) == b's' || fold(s) == b'q' {
            s += 1;
            if s == send {
                return None;
            }
        }
        if fold(s) != b'n' {
            return None;
        }
        s += 1;
        if s == send || fold(s) != b'a' {
            return None;
        }
        s += 1;
        if s == send || fold(s) != b'n' {
            return None;
        }
        s += 1;
        if s == send {
            return Some(false);
        }
        if fold(s) == b'q' || fold(s) == b's' {
            s += 1;
            if s == send {
                return Some(false);
            }
        }
        if b[s] == b'(' {
            s += 1;
            if s == send {
                return Some(true);
            }
            let mut t = s + 1;
            while t < send && b[t] != 0 && b[t] != b')' {
                t += 1;
            }
            if t == send || b[t] != b')' {
                return Some(true);
            }
            if !nan_payload_ok(&b[s..t]) {
                return Some(true);
            }
            s = t + 1;
        }
    }
    while s < send && is_space(b[s]) {
        s += 1;
    }
    Some(s < send)
}

/// Whether `nan(P)` has a payload Perl accepts: a hex (`0x1f`) or binary
/// (`0b101`) integer that fits in 64 bits, or decimal digits; then spaces.
fn nan_payload_ok(p: &[u8]) -> bool {
    let digits_end = if p.len() > 2 && p[0] == b'0' && p[1].eq_ignore_ascii_case(&b'x') && p[2].is_ascii_hexdigit() {
        match grok_radix(p, 4) {
            Some(n) => n,
            None => return false,
        }
    } else if p.len() > 2 && p[0] == b'0' && p[1].eq_ignore_ascii_case(&b'b') && matches!(p[2], b'0' | b'1') {
        match grok_radix(p, 1) {
            Some(n) => n,
            None => return false,
        }
    } else {
        // grok_number_flags(PERL_SCAN_TRAILING) must give an integer that
        // fits a UV (perl 5.36 takes any number of digits). With nothing
        // but spaces allowed after the leading digits, a leading space or
        // sign, a `.` or an exponent can never pass: what decides is at
        // least one leading digit, then spaces.
        match p.iter().take_while(|c| c.is_ascii_digit()).count() {
            0 => return false,
            n => n,
        }
    };
    p[digits_end..].iter().all(|&c| is_space(c))
}

/// `grok_hex`/`grok_bin` (`shift` 4 or 1) with underscores allowed between
/// digits: how many bytes of `p` (which starts with `0x`/`0b`) they
/// consume, or `None` on overflow of 64 bits.
fn grok_radix(p: &[u8], shift: u32) -> Option<usize> {
    let digit = |c: u8| -> Option<u64> {
        let v = (c as char).to_digit(16)? as u64;
        (v < 1 << shift).then_some(v)
    };
    let mut s = 2;
    let mut value: u64 = 0;
    let mut overflow = false;
    while s < p.len() {
        if let Some(v) = digit(p[s]) {
            if value > u64::MAX >> shift {
                overflow = true;
            }
            value = value.wrapping_shl(shift) | v;
            s += 1;
            continue;
        }
        if p[s] == b'_' && s > 2 && s + 1 < p.len() && digit(p[s + 1]).is_some() {
            s += 1;
            continue;
        }
        break;
    }
    (!overflow).then_some(s)
}

/// `syck_emit_1quoted`: `'` doubled; a newline becomes two (one after a newline).
fn single_quoted(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(b.len() + 2);
    out.push(b'\'');
    let mut start = 0;
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'\'' => out.extend_from_slice(b"''"),
            b'\n' => {
                if b.get(start) != Some(&b'\n') || start == 0 {
                    out.extend_from_slice(b"\n\n");
                } else {
                    out.push(b'\n');
                }
                start = i + 1;
            }
            _ => out.push(c),
        }
    }
    out.push(b'\'');
    out
}

/// `syck_emit_2quoted` with `syck_emitter_escape` for a byte string.
fn double_quoted(s: &[u8]) -> Vec<u8> {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = Vec::with_capacity(s.len() + 2);
    out.push(b'"');
    for &c in s {
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            0 => out.extend_from_slice(b"\\0"),
            0x07 => out.extend_from_slice(b"\\a"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x0b => out.extend_from_slice(b"\\v"),
            0x1b => out.extend_from_slice(b"\\e"),
            b'\n' => out.extend_from_slice(b"\\n"),
            c if !(0x20..=0x7e).contains(&c) => {
                out.extend_from_slice(b"\\x");
                out.push(HEX[usize::from(c >> 4)]);
                out.push(HEX[usize::from(c & 15)]);
            }
            c => out.push(c),
        }
    }
    out.push(b'"');
    out
}

/// Decode the `\xNN` notation of the vectors file into the raw bytes.
#[cfg(test)]
fn unescape_vector(s: &str) -> Vec<u8> {
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
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syck_vectors() {
        let table = include_str!("../../../../fixtures/vectors/yaml-syck-scalars.tsv");
        let mut checked = 0;
        let mut failures = Vec::new();
        for line in table.lines().filter(|l| !l.starts_with('#')) {
            let cols: Vec<&str> = line.split('\t').collect();
            let (kind, input, expected) = (cols[0], unescape_vector(cols[1]), unescape_vector(cols[2]));
            if kind == "struct" {
                continue; // covered by the document emitter tests
            }
            // Bytes, UTF-8 or not (a lone 0xE9 is a Perl string and a path).
            let got = scalar_bytes(&input);
            if *got != expected {
                failures.push(format!(
                    "{kind} {:?}: want {:?}, got {:?}",
                    cols[1],
                    String::from_utf8_lossy(&expected),
                    String::from_utf8_lossy(&got)
                ));
            }
            checked += 1;
        }
        assert!(failures.is_empty(), "{} of {checked}:\n{}", failures.len(), failures.join("\n"));
        assert_eq!(checked, 212, "vectors checked, the non-UTF-8 row included");
    }

    #[test]
    fn perl_numbers() {
        for s in [
            "1",
            "-1",
            "+1",
            " 1",
            "1 ",
            "1.",
            ".5",
            "-.5",
            "1e5",
            "1E+5",
            "1.5e-3",
            "0 but true",
            "inf",
            "-Inf",
            "INFINITY",
            "nan",
            "NaN ",
            "nanq",
            "snan",
            "qnan",
            "1.#INF",
            "1#IND",
            "1.#INF00",
            "nan(12)",
            "nan(0x1f)",
            "nan(0b101)",
            "nan(12 )",
            "nan(0b1_1)",
            "nan(99999999999999999999999)",
            "- ",
            "12345678901234567890123",
        ] {
            assert!(looks_like_number(s.as_bytes()), "{s:?} is a number");
        }
        for s in [
            "",
            " ",
            "+",
            "-",
            "+ ",
            ".",
            "e5",
            "1e",
            "1e+",
            "0x10",
            "1_000",
            "1,5",
            "infx",
            "in",
            "nanx",
            "nan(",
            "nan()",
            "nan(1.5)",
            "nan(x)",
            "nan(0x)",
            "nan( 12 )",
            "nan(0x_1)",
            "nan(0x10000000000000000)",
            "1 2",
            "Inf x",
            "--1",
            "1.5.5",
            "nan(-1)",
            "infinit",
            "nan%",
        ] {
            assert!(!looks_like_number(s.as_bytes()), "{s:?} is no number");
        }
    }

    #[test]
    fn kinds_syck_quotes() {
        for (s, want) in [
            ("dir/Foo-1.0:", "\"dir/Foo-1.0:\""),
            (", /x", "\", /x\""),
            (",", "\",\""),
            (",x", ",x"),
            ("^a", "\"^a\""),
            ("12 ", "'12 '"),
            (" 12", "\" 12\""),
            ("-0", "'-0'"),
            ("inf", "'inf'"),
            ("ä: b", "\"\\xC3\\xA4: b\""),
            ("a\u{7f}", "\"a\\x7F\""),
            ("ä/ö", "ä/ö"),
            ("it's", "it's"),
            ("'q'", "\"'q'\""),
            ("---", "---"),
            ("yesé", "'yesé'"),
            ("~Ä: b", "'~Ä: b'"),
            ("yé", "yé"),
        ] {
            assert_eq!(scalar(s), want, "{s:?}");
        }
    }
}

#[cfg(test)]
mod pins;
