//! Pins of `syck.rs`, the port of the Perl and Syck scalar rules rrr needs
//! to read and write as the Perl tools do (Perl's `looks_like_number`,
//! `grok_infnan`, Syck's implicit types). Expectations come from perl 5.36
//! and YAML::Syck 1.34, run on this machine.

use super::*;

/// One string as perl 5.36 and YAML::Syck 1.34 see it: the string,
/// whether `Scalar::Util::looks_like_number` takes it, and the scalar
/// `YAML::Syck::Dump` writes for it (after `--- `). Every row was printed by
///
/// ```text
/// perl -MScalar::Util=looks_like_number -MYAML::Syck -e \
///     '$d = YAML::Syck::Dump("$s"); print looks_like_number("$s") ? 1 : 0, $d'
/// ```
type Seen = (&'static [u8], bool, &'static [u8]);

/// Checks every row through the port's entry points: `looks_like_number`,
/// `scalar_bytes`, and for UTF-8 strings `scalar` and `is_plain`.
fn assert_seen_as_perl_and_syck(rows: &[Seen]) {
    let mut failures = Vec::new();
    for &(s, number, written) in rows {
        let shown = String::from_utf8_lossy(s);
        if looks_like_number(s) != number {
            failures.push(format!("{shown:?}: looks_like_number should be {number}"));
        }
        let got = scalar_bytes(s);
        if *got != *written {
            failures.push(format!(
                "{shown:?}: written {:?}, Syck writes {:?}",
                String::from_utf8_lossy(&got),
                String::from_utf8_lossy(written)
            ));
        }
        if let Ok(text) = std::str::from_utf8(s) {
            if scalar(text).as_bytes() != written {
                failures.push(format!("{shown:?}: scalar() differs from scalar_bytes()"));
            }
            if is_plain(text) != (written == s) {
                failures.push(format!("{shown:?}: is_plain should be {}", written == s));
            }
        }
    }
    assert!(failures.is_empty(), "{} of {} rows:\n{}", failures.len(), rows.len(), failures.join("\n"));
}

/// `looks_like_number` on decimal numbers: spaces (a newline among them)
/// around a sign, digits, a dot and an exponent; `-` followed by spaces
/// alone is a number. Syck quotes them unless `unquotable_integer` passes
/// them (at most 9 bytes, no leading `0`, the first byte unchecked: `.0`
/// stays plain), and writes a newline in single quotes twice.
const NUMBERS: &[Seen] = &[
    (b"0", true, b"0"),
    (b"-\t", true, b"\"-\\t\""),
    (b".0", true, b".0"),
    (b".9", true, b".9"),
    (b"0 ", true, b"'0 '"),
    (b"12", true, b"12"),
    (b"1e", false, b"1e"),
    (b"\n\n1", true, b"'\n\n\n1'"),
    (b"\n1.", true, b"'\n\n1.'"),
    (b"-e9", false, b"-e9"),
    (b"0.0", true, b"'0.0'"),
    (b"0e0", true, b"'0e0'"),
    (b"1\n ", true, b"\"1\\n \""),
    (b"9.9", true, b"'9.9'"),
    (b"- E1", false, b"\"- E1\""),
    (b".9e9", true, b"'.9e9'"),
    (b"0101", true, b"'0101'"),
    (b"\n1E+5\n", true, b"'\n\n1E+5\n\n'"),
    (b".12345678", true, b".12345678"),
    (b"1234567890", true, b"'1234567890'"),
];

/// Perl's infinities and NaNs (`grok_infnan`): `inf`, `infinity`, `nan`
/// with a `q` or `s` on either side, `1.#INF`, `1.#IND` with trailing
/// zeros, and texts that start like one but are not.
const INFINITIES_AND_NANS: &[Seen] = &[
    (b"9#9", false, b"9#9"),
    (b"i #", false, b"\"i #\""),
    (b"inf", true, b"'inf'"),
    (b"infi", false, b"infi"),
    (b"nans", true, b"'nans'"),
    (b"nanx", false, b"nanx"),
    (b"qnan", true, b"'qnan'"),
    (b"--nan", false, b"--nan"),
    (b"1#INx", false, b"1#INx"),
    (b"nanq ", true, b"'nanq '"),
    (b"1#INF0", true, b"'1#INF0'"),
    (b"1.#IND0", true, b"'1.#IND0'"),
    (b"1.#INF ", true, b"'1.#INF '"),
    (b"1.#INF0", true, b"'1.#INF0'"),
    (b"1.#ind0", true, b"'1.#ind0'"),
    (b" -1.#ind", true, b"' -1.#ind'"),
    (b"infinity", true, b"'infinity'"),
    (b"ixf", false, b"ixf"),
    (b"nxn", false, b"nxn"),
    (b"sna", false, b"sna"),
    (b"0i -", false, b"0i -"),
    (b"0i1i", false, b"0i1i"),
    (b"1iE+", false, b"1iE+"),
];

/// NaN payloads: `nan(P)` is a number when P is a hex or binary integer of
/// at most 64 bits (underscores between digits allowed) or decimal digits,
/// followed by spaces only; an unclosed or empty payload is not.
const NAN_PAYLOADS: &[Seen] = &[
    (b"nan(x", false, b"nan(x"),
    (b"nan( )", false, b"nan( )"),
    (b"nan(-)", false, b"nan(-)"),
    (b"nan(0)", true, b"'nan(0)'"),
    (b"nan(eg", false, b"nan(eg"),
    (b"nan(00)", true, b"'nan(00)'"),
    (b"nan(0b)", false, b"nan(0b)"),
    (b"nan(0x)", false, b"nan(0x)"),
    (b"nan(9 )", true, b"'nan(9 )'"),
    (b"nan(Xf2", false, b"nan(Xf2"),
    (b"nan(b_1", false, b"nan(b_1"),
    (b"nan(0x0)", true, b"'nan(0x0)'"),
    (b"nan(0xf)", true, b"'nan(0xf)'"),
    (b"nan(xb1)", false, b"nan(xb1)"),
    (b"-nan(0.X)", false, b"-nan(0.X)"),
    (b"nan(0b12)", false, b"nan(0b12)"),
    (b"nan(0xX) ", false, b"\"nan(0xX) \""),
    (b"nan(0xf_)", false, b"nan(0xf_)"),
    (b"nanq(09x)", false, b"nanq(09x)"),
    (b"nanq(1_g)", false, b"nanq(1_g)"),
    (b"1.#QNAN(1)", true, b"'1.#QNAN(1)'"),
    (b"nan(0xf_ )", false, b"nan(0xf_ )"),
    (b"nan(0xffffffffffffff_1)", true, b"'nan(0xffffffffffffff_1)'"),
    (b"nan(0x10000000000000000)", false, b"nan(0x10000000000000000)"),
    (
        b"nan(0b1_111111111111111111111111111111111111111111111111111111111111111)",
        true,
        b"'nan(0b1_111111111111111111111111111111111111111111111111111111111111111)'",
    ),
];

/// How Syck writes strings that are no numbers: the empty string and
/// bool/null words (also with a byte above 0x7F after them) single-quoted,
/// a quote in single quotes doubled, indicators and edges double-quoted.
const SCALARS: &[Seen] = &[
    (b"", false, b"''"),
    (b" ", false, b"\" \""),
    (b"?", false, b"\"?\""),
    (b"\x7F", false, b"\"\\x7F\""),
    (b"-.", false, b"-."),
    (b".:", false, b"\".:\""),
    (b"~\xE9", false, b"'~\xE9'"),
    (b"~\x80'x", false, b"'~\x80''x'"),
];

#[test]
fn decimal_numbers_as_perl_5_36_reads_them() {
    assert_seen_as_perl_and_syck(NUMBERS);
}

#[test]
fn infinities_and_nans_as_perl_5_36_reads_them() {
    assert_seen_as_perl_and_syck(INFINITIES_AND_NANS);
}

#[test]
fn nan_payloads_as_perl_5_36_reads_them() {
    assert_seen_as_perl_and_syck(NAN_PAYLOADS);
}

#[test]
fn scalars_as_yaml_syck_1_34_writes_them() {
    assert_seen_as_perl_and_syck(SCALARS);
}
