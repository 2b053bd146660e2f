//! Laws of the epoch comparator and the bumps: the comparator agrees with
//! the decimal value wherever the values differ, and a bump is unique.

use super::*;
use proptest::prelude::*;

fn clock_like() -> impl Strategy<Value = String> {
    ("1[0-9]{9}", proptest::option::of("[0-9]{1,9}")).prop_map(|(i, f)| match f {
        Some(f) => format!("{i}.{f}"),
        None => i,
    })
}

proptest! {
    /// Where two epochs differ as numbers, the comparator orders them as
    /// the numbers; it is antisymmetric everywhere.
    #[test]
    fn comparator_follows_the_decimal_value(a in clock_like(), b in clock_like()) {
        let (x, y) = (Epoch::parse(&a).unwrap(), Epoch::parse(&b).unwrap());
        let value = x.cmp_value(&y);
        if value != Ordering::Equal {
            prop_assert_eq!(x.cmp(&y), value, "{} vs {}", a, b);
        }
        prop_assert_eq!(x.cmp(&y), y.cmp(&x).reverse());
        prop_assert_eq!(x == y, x.cmp(&y) == Ordering::Equal);
    }

    /// A bump is above its epoch and, towards a neighbour, strictly
    /// between the two as numbers: never a second spelling of either.
    #[test]
    fn bumps_are_new_numbers(a in clock_like(), b in clock_like()) {
        let (x, y) = (Epoch::parse(&a).unwrap(), Epoch::parse(&b).unwrap());
        let up = x.inc();
        prop_assert_eq!(up.cmp_value(&x), Ordering::Greater);
        prop_assert_eq!(up.cmp(&x), Ordering::Greater);
        let (lo, hi) = if x.cmp_value(&y) == Ordering::Less { (&x, &y) } else { (&y, &x) };
        match lo.inc_towards(hi) {
            Some(m) => {
                prop_assert_eq!(m.cmp_value(lo), Ordering::Greater);
                prop_assert_eq!(m.cmp_value(hi), Ordering::Less);
            }
            None => prop_assert!(lo.cmp_value(hi) == Ordering::Equal || hi.as_str().len() >= 60),
        }
    }
}

#[test]
fn whole_seconds_table() {
    let cases = [("0", 0), ("1700000000.99999999999", 1_700_000_000), ("17", 17), ("99999999999999999999.5", i64::MAX)];
    for (s, want) in cases {
        assert_eq!(Epoch::parse(s).unwrap().whole_seconds(), want, "{s}");
    }
}

/// Epochs of up to 22 bytes are stored inline (no allocation per epoch in a
/// million-event Z file), whichever constructor made them; longer ones on
/// the heap. The text is the same either way.
#[test]
fn short_epochs_are_stored_inline() {
    let short = [
        Epoch::parse("1700000000.5").unwrap(),
        Epoch::from_clock(1_700_000_100.5),
        Epoch::from_whole_seconds(1_700_000_000),
        Epoch::parse("1700000000").unwrap().with_dot(),
        Epoch::parse("1700000100.5").unwrap().inc(),
    ];
    for e in &short {
        assert!(matches!(e.0, EpochText::Inline { .. }), "{e} should be inline");
    }
    let at_limit = Epoch::parse("1700000000.12345678901").unwrap();
    assert_eq!(at_limit.as_str().len(), INLINE_MAX);
    assert!(matches!(at_limit.0, EpochText::Inline { .. }));
    let long = Epoch::parse("1700000000.500000476837158203125").unwrap();
    assert!(matches!(long.0, EpochText::Heap(_)));
    assert_eq!(long.as_str(), "1700000000.500000476837158203125");
    let long_made = long.inc_towards(&Epoch::parse("1700000000.500000476837158203126").unwrap()).unwrap();
    assert!(long_made.as_str().len() > INLINE_MAX && matches!(long_made.0, EpochText::Heap(_)), "{long_made}");
}

/// `{:?}` shows the epoch's text, as a string.
#[test]
fn debug_shows_the_text() {
    assert_eq!(format!("{:?}", Epoch::parse("1700000000.5").unwrap()), "Epoch(\"1700000000.5\")");
    let long = Epoch::parse("1700000000.500000476837158203125").unwrap();
    assert_eq!(format!("{long:?}"), "Epoch(\"1700000000.500000476837158203125\")");
}

/// A clock reading of zero, of either sign, is the epoch `0`: never `-0`.
#[test]
fn from_clock_of_zero() {
    assert_eq!(Epoch::from_clock(0.0).as_str(), "0");
    assert_eq!(Epoch::from_clock(-0.0).as_str(), "0");
}

/// Each kind of bad epoch gets its own message, quoting the input.
#[test]
fn parse_errors_say_why() {
    let too_long = format!("1.{}", "5".repeat(4095));
    let cases = [
        ("", "empty epoch (expected a decimal number such as 1700000000.5)"),
        ("1.2.3", "epoch \"1.2.3\" is not a decimal number: more than one '.'"),
        ("-1", "epoch \"-1\" is not a decimal number: sign '-' at position 1 (epochs are unsigned)"),
        ("1+", "epoch \"1+\" is not a decimal number: sign '+' at position 2 (epochs are unsigned)"),
        ("1E5", "epoch \"1E5\" is not a decimal number: exponent 'E' at position 2 (write all digits)"),
        ("1 5", "epoch \"1 5\" is not a decimal number: a space at position 2 (only digits and one '.')"),
        ("1,5", "epoch \"1,5\" is not a decimal number: ',' at position 2 (only digits and one '.')"),
        ("1\t", "epoch \"1\\t\" is not a decimal number: '\\t' at position 2 (only digits and one '.')"),
        (".5", "epoch \".5\" is not a decimal number: no digit before '.'"),
        ("5.", "epoch \"5.\" is not a decimal number: no digit after '.'"),
        ("05", "epoch \"05\" has a leading zero (allowed only in front of a '.')"),
        ("12345678901234567890", "epoch \"12345678901234567890\" is out of range: more than 19 digits without a '.'"),
        (
            too_long.as_str(),
            "epoch \"1.55555555555555555555555555555555555555\"... is too long: 4097 characters, at most 4096",
        ),
    ];
    for (input, want) in cases {
        assert_eq!(Epoch::parse(input).unwrap_err().to_string(), want, "{input:?}");
    }
    // Exactly 40 characters are quoted whole.
    let forty = "1".repeat(20) + "." + &"1".repeat(19);
    assert_eq!(forty.len(), 40);
    assert!(Epoch::parse(&forty).is_ok());
    let bad = format!("{forty}x");
    assert_eq!(
        Epoch::parse(&bad).unwrap_err().to_string(),
        format!("epoch \"{forty}\"... is not a decimal number: 'x' at position 41 (only digits and one '.')")
    );
    let bad = format!("{}x", &forty[..39]);
    assert_eq!(
        Epoch::parse(&bad).unwrap_err().to_string(),
        format!("epoch \"{bad}\" is not a decimal number: 'x' at position 40 (only digits and one '.')")
    );
}

/// A value of the wrong type names what an epoch looks like.
#[test]
fn deserialize_error_names_the_expected_form() {
    let err = serde_json::from_str::<Epoch>("1700000160.5").unwrap_err().to_string();
    assert!(err.contains("expected an epoch as a decimal string, such as \"1700000000.5\""), "{err}");
}

/// Formats that hand over an integer (whatever the type hint) give its
/// decimal text; a negative one is refused like the text `-5`.
#[test]
fn deserialize_from_integers() {
    use serde::de::{value::Error, IntoDeserializer};
    use serde::Deserialize;
    let e = Epoch::deserialize(IntoDeserializer::<Error>::into_deserializer(1_700_000_160u64)).unwrap();
    assert_eq!(e.as_str(), "1700000160");
    let e = Epoch::deserialize(IntoDeserializer::<Error>::into_deserializer(1_700_000_160i64)).unwrap();
    assert_eq!(e.as_str(), "1700000160");
    let err = Epoch::deserialize(IntoDeserializer::<Error>::into_deserializer(-5i64)).unwrap_err();
    assert!(err.to_string().contains("sign '-'"), "{err}");
}

/// Where the reference's bump never returns (its chop loop regrows the
/// candidate forever), the port substitutes the documented fallback: the
/// lower epoch followed by `1`, `01`, … until strictly between.
#[test]
fn bump_fallback_where_the_reference_loops() {
    let cases = [
        // Both neighbours are one double, 1700000001.0: lowering the upper
        // one to int(l) + 1 would change it, so it stays.
        ("1700000000.99999999", "1700000001.00000001", "1700000000.999999991"),
        ("100000000000000000000.5", "100000000000000000005.5", "100000000000000000000.51"),
    ];
    for (l, r, want) in cases {
        let got = Epoch::parse(l).unwrap().inc_towards(&Epoch::parse(r).unwrap()).unwrap();
        assert_eq!(got.as_str(), want, "inc({l}, {r})");
    }
}

/// `%.15g` of negative values, as C prints them (not reached by epochs,
/// but the function is C's).
#[test]
fn g15_of_negative_values() {
    assert_eq!(format_g15(f64::NEG_INFINITY), "-inf");
    assert_eq!(format_g15(-1.5), "-1.5");
    assert_eq!(format_g15(-1.5e20), "-1.5e+20");
}

/// Where the reference's one-argument bump gives a value that is not
/// above (0 gives 0.0, tiny values give themselves), the port appends `1`
/// (after `.0` if dot-less), or, past 64 characters, adds one unit in the
/// last decimal place.
#[test]
fn inc_fallback_where_the_reference_is_not_above() {
    let long = format!("1.{}", "9".repeat(62));
    let cases = [
        ("0", "0.01"),
        ("0.0", "0.01"),
        ("0.00001", "0.000011"),
        ("0.0000000000000000000001", "0.00000000000000000000011"),
        (long.as_str(), "2.0"),
    ];
    for (l, want) in cases {
        assert_eq!(Epoch::parse(l).unwrap().inc().as_str(), want, "inc({l})");
    }
}

/// The exponent form as abh/rrrgo (yaml.v3's `%g` of a float64) and other
/// writers spell epochs, and the exact decimal each is read as.
#[test]
fn exponent_forms_read_as_their_exact_decimal() {
    for (text, want) in [
        ("1.79624748999797e+09", "1796247489.99797"),
        ("1.7962474918942301e+09", "1796247491.8942301"),
        ("1.79624749e+09", "1796247490"),
        ("1.796247489878e+09", "1796247489.878"),
        ("1.7962474897570302E+09", "1796247489.7570302"),
        ("1.5e9", "1500000000"),
        ("1e0", "1"),
        ("1e+00", "1"),
        ("1.50e+00", "1.50"),
        ("15e-1", "1.5"),
        ("15e-2", "0.15"),
        ("15e-5", "0.00015"),
        ("1.5e-1", "0.15"),
        ("0.5e1", "5"),
        ("00.5e0", "0.5"),
        ("0e0", "0"),
        ("0.0e0", "0.0"),
        ("0.0e5", "0"),
        ("123.456e1", "1234.56"),
        ("123.456e3", "123456"),
        ("123.456e4", "1234560"),
        ("1234e-4", "0.1234"),
        ("1.2345e-0", "1.2345"),
        ("1e0009", "1000000000"),
        ("1.7e4096", &format!("17{}", "0".repeat(4095))[..]),
    ] {
        if want.len() > 19 && !want.contains('.') {
            // Dot-less and longer than 19 digits: out of the comparator's range.
            assert!(Epoch::read(text).is_err(), "{text}");
            assert_eq!(exponent_to_decimal(text, text.find(['e', 'E']).unwrap()).unwrap(), want, "{text}");
            continue;
        }
        assert_eq!(Epoch::read(text).unwrap().as_str(), want, "{text}");
    }
    // Decimals are read as `parse` reads them.
    for text in ["1700000000.5", "1700000000", "0.5", "1700000000.500000476837158203125"] {
        assert_eq!(Epoch::read(text).unwrap().as_str(), text);
    }
    assert_eq!(Epoch::read("1.5e-4000").unwrap().as_str(), format!("0.{}15", "0".repeat(3999)));
    // The exponent's bound is 4096 either way; the epoch's length bound (4096) still applies.
    assert_eq!(exponent_to_decimal("1.5e-4096", 3).unwrap(), format!("0.{}15", "0".repeat(4095)));
    assert!(Epoch::read("1.5e-4096").unwrap_err().to_string().contains("too long"));
}

/// What the exponent form refuses, each with a message that names it.
#[test]
fn bad_exponent_forms_are_refused_saying_why() {
    for (text, says) in [
        ("1e999999999", "out of range: exponent 999999999"),
        ("1e4097", "out of range"),
        ("1e-4097", "out of range"),
        ("1e99999999999999999999999", "out of range"),
        ("1e", "exponent must be digits"),
        ("1e+", "exponent must be digits"),
        ("1e+-1", "exponent must be digits"),
        ("1e5e5", "exponent must be digits"),
        ("1e5.0", "exponent must be digits"),
        ("e5", "digits with at most one '.'"),
        (".5e1", "digits with at most one '.'"),
        ("1.e1", "digits with at most one '.'"),
        ("-1e1", "digits with at most one '.'"),
        ("+1e1", "digits with at most one '.'"),
        ("1.2.3e1", "digits with at most one '.'"),
        (" 1e1", "digits with at most one '.'"),
        ("1e1 ", "exponent must be digits"),
        ("inf", "is not a decimal number"),
        ("1.5e-9999", "out of range"),
    ] {
        let err = Epoch::read(text).unwrap_err().to_string();
        assert!(err.contains(says), "{text}: {err}");
        assert!(err.starts_with("epoch \""), "{text}: {err}");
    }
    // The result must still be an epoch: 20 digits without a dot are not.
    assert!(Epoch::read("1e19").unwrap_err().to_string().contains("more than 19 digits"));
    assert!(Epoch::read("1e18").is_ok());
}

proptest! {
    /// Every float64 epoch, written in Go's `%g` form (shortest digits,
    /// `e+09`) or Rust's `{:e}`, reads as the decimal of the same shortest
    /// digits (Rust's `Display`), and that is one value with its decimal
    /// spelling.
    #[test]
    fn float64_epochs_in_exponent_form_read_as_their_decimal(secs in 1.0e9f64..4.0e9) {
        let decimal = format!("{secs}");
        let rust = format!("{secs:e}");
        let (m, x) = rust.split_once('e').unwrap();
        let go = format!("{m}e+{:02}", x.parse::<i32>().unwrap());
        for text in [&rust, &go, &go.to_uppercase()] {
            let e = Epoch::read(text).unwrap();
            prop_assert_eq!(e.as_str(), decimal.as_str(), "{}", text);
            prop_assert_eq!(e.cmp_value(&Epoch::parse(&decimal).unwrap()), Ordering::Equal);
        }
    }
}

proptest! {
    /// The shortcut of `read_exponent` (a dotted result of at most 64
    /// characters is taken without the full check) gives what the full
    /// check of the same decimal gives, for any mantissa and exponent.
    #[test]
    fn the_exponent_shortcut_is_the_checked_decimal(
        int in "[0-9]{1,12}",
        frac in proptest::option::of("[0-9]{1,40}"),
        sign in "[+-]?",
        exp in 0usize..70,
        upper in any::<bool>(),
    ) {
        let text = format!("{int}{}{}{sign}{exp:02}", frac.map_or(String::new(), |f| format!(".{f}")), if upper { "E" } else { "e" });
        let at = text.find(['e', 'E']).unwrap();
        let checked = Epoch::parse(&exponent_to_decimal(&text, at).unwrap()).map(Epoch::into_string);
        prop_assert_eq!(Epoch::read(&text).map(Epoch::into_string), checked, "{}", text);
    }
}

/// The float64 writers' form takes the shortcut, and only that form.
#[test]
fn g_form_decimal_takes_exactly_the_common_float64_form() {
    let mut buf = [0; 64];
    for (text, want) in [
        ("1.79624748999797e+09", Some(("1796247489.99797", 10))),
        ("1.7962474918942301E+09", Some(("1796247491.8942301", 10))),
        ("9.12e+01", Some(("91.2", 2))),
        ("1.5e+00", Some(("1.5", 1))),
        (
            "1.2345678901234567890123456789012345678901234567890123456789e+09",
            Some(("1234567890.1234567890123456789012345678901234567890123456789", 10)),
        ),
        // Everything else the long way.
        ("1.79624749e+09", None),
        ("1.7962474e+09", None),
        ("0.5e+01", None),
        ("15.5e+01", None),
        ("1.5e-01", None),
        ("1.5e1", None),
        ("1.5e+001", None),
        ("1.5x+01", None),
        ("1.5e+0x", None),
        ("1.79624748999797e+0:", None),
        ("1.79624748999797e+:0", None),
        ("1.79624748999797e+0/", None),
        ("1.5ae+01", None),
        ("1.e+01", None),
        ("1.5", None),
        ("", None),
        ("1.23456789012345678901234567890123456789012345678901234567890123e+09", None),
    ] {
        assert_eq!(g_form_decimal(text.as_bytes(), &mut buf), want, "{text}");
        if want.is_some() {
            assert_eq!(
                Some(exponent_to_decimal(text, text.find(['e', 'E']).unwrap()).unwrap().as_str()),
                want.map(|w| w.0)
            );
        }
    }
}

proptest! {
    /// Where the shortcut applies it gives the long way's decimal.
    #[test]
    fn g_form_decimal_is_the_long_way(first in 1u8..10, frac in "[0-9]{1,61}", exp in 0usize..100, upper in any::<bool>()) {
        let text = format!("{first}.{frac}{}+{exp:02}", if upper { "E" } else { "e" });
        let mut buf = [0; 64];
        let at = text.find(['e', 'E']).unwrap();
        let long = exponent_to_decimal(&text, at).unwrap();
        match g_form_decimal(text.as_bytes(), &mut buf) {
            Some((d, dot)) => {
                prop_assert_eq!(d, long.as_str());
                prop_assert_eq!(d.find('.'), Some(dot));
            }
            None => prop_assert!(exp >= frac.len() || text.len() > 67, "{}", text),
        }
    }
}
