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
