//! Pins of the YAML readers that work item by item without a YAML parser:
//! the strict path, the two-thread split, the outline and the item scanner
//! (`yaml.rs` up to `utf8_prefix`). Expectations come from YAML::Syck 1.34
//! where a byte layout is in question.

use super::*;

/// A small deterministic generator (xorshift64), so a failing case can be rerun.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Buffers of 0 to 40 bytes over the bytes the word-at-a-time searches
/// must tell apart: the three they look for, their neighbours (one bit
/// off, which the zero-byte trick may mistake after a true match), NUL,
/// high bytes and a letter.
fn scanner_buffers() -> Vec<Vec<u8>> {
    const ALPHABET: &[u8] = b"a\n:#\x0b;\"\x00\x01\x80\xff\x8a";
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut out = Vec::new();
    for _ in 0..3000 {
        let len = rng.below(41);
        // Mostly letters, so that runs of full words without a match occur.
        out.push(
            (0..len).map(|_| if rng.below(3) == 0 { ALPHABET[rng.below(ALPHABET.len())] } else { b'a' }).collect(),
        );
    }
    out
}

#[test]
fn find_nl_is_the_first_newline_at_or_after_from() {
    for b in scanner_buffers() {
        for from in 0..=b.len() {
            let want = b[from..].iter().position(|&c| c == b'\n').map(|i| from + i);
            assert_eq!(find_nl(&b, from), want, "{b:?} from {from}");
        }
    }
}

#[test]
fn find_nl_flag_also_says_whether_a_colon_or_hash_comes_before_it() {
    for b in scanner_buffers() {
        for from in 0..=b.len() {
            let nl = b[from..].iter().position(|&c| c == b'\n').map(|i| from + i);
            let special = b[from..nl.unwrap_or(b.len())].iter().any(|&c| c == b':' || c == b'#');
            assert_eq!(find_nl_flag(&b, from), (nl, special), "{b:?} from {from}");
        }
    }
}

#[test]
fn has_at_compares_every_byte_of_keys_of_8_to_16_bytes() {
    let text: Vec<u8> = (0..40u8).map(|i| b'A' + i).collect();
    for n in 8..=16 {
        for p in 0..=text.len() - n {
            let key = text[p..p + n].to_vec();
            assert!(has_at(&text, p, &key), "n {n} p {p}");
            for i in 0..n {
                let mut other = key.clone();
                other[i] ^= 0x20;
                assert!(!has_at(&text, p, &other), "n {n} p {p} byte {i}");
            }
        }
    }
}

#[test]
fn dotted_decimal_dot_is_the_dot_of_digits_dot_digits() {
    for (s, want) in [
        ("1700000000.5", Some(10)),
        ("0.5", Some(1)),
        ("007.25", Some(3)),
        (".5", None),
        ("1.", None),
        (".", None),
        ("1.5.5", None),
        ("15", None),
        ("", None),
        ("1a.5", None),
        ("1.5a", None),
        ("-1.5", None),
        ("1.5e3", None),
        ("1 .5", None),
    ] {
        assert_eq!(dotted_decimal_dot(s), want, "{s:?}");
        assert_eq!(is_dotted_decimal(s), want.is_some(), "{s:?}");
    }
}

/// Epochs `cmp_epochs` orders, with dots at the same and at other indices,
/// shorter and longer than the eight bytes `epoch_lt` compares first.
const ORDERED_EPOCHS: &[&str] = &[
    "0.5",
    "1.5",
    "1.50000000",
    "1.6",
    "2.5",
    "10.5",
    "12345678.5",
    "99999999.5",
    "100000000.5",
    "1700000000",
    "1700000000.4",
    "1700000000.49999",
    "1700000000.5",
    "1700000001",
    "1700000001.5",
    "17000000010.5",
];

#[test]
fn epoch_lt_is_cmp_epochs_less_with_or_without_the_dots() {
    for &a in ORDERED_EPOCHS {
        for &b in ORDERED_EPOCHS {
            let want = cmp_epochs(a, b) == Ordering::Less;
            assert_eq!(epoch_lt(a, dotted_decimal_dot(a), b, dotted_decimal_dot(b)), want, "{a} < {b}");
            assert_eq!(epoch_lt(a, None, b, None), want, "{a} < {b} (dots unknown)");
        }
    }
    // Numeric order, not byte order, where the dots are at other indices.
    for (a, b) in [("99999999.5", "100000000.5"), ("2.5", "10.5"), ("1700000000.4", "1700000000.5"), ("1.5", "1.6")] {
        assert!(epoch_lt(a, dotted_decimal_dot(a), b, dotted_decimal_dot(b)), "{a} < {b}");
        assert!(!epoch_lt(b, dotted_decimal_dot(b), a, dotted_decimal_dot(a)), "not {b} < {a}");
    }
    let a = "1700000000.5";
    assert!(!epoch_lt(a, dotted_decimal_dot(a), a, dotted_decimal_dot(a)), "not {a} < {a}");
}

#[test]
fn is_plain_path_is_the_common_path_syck_writes_plain() {
    for (path, plain) in [
        ("id/A/AB/ABC/Foo-1.0.tar.gz", true),
        ("a/b", true),
        ("0/x", true),
        ("Z/", true),
        ("a/b:c", true),
        ("a/#b", true),
        ("offx/y", true),
        ("nan/1", true),
        ("", false),
        ("y", false),
        ("ab", false),
        ("-/x", false),
        ("./x", false),
        ("ä/b", false),
        ("a b/c", false),
        ("a/\tb", false),
        ("a/\u{7f}", false),
        ("dir/Foo-1.0:", false),
        ("Null\u{a0}x/y", false),
        ("off\u{2028}/y", false),
    ] {
        assert_eq!(is_plain_path(path.as_bytes()), plain, "{path:?}");
        if plain {
            assert_eq!(&*super::super::syck::scalar_bytes(path.as_bytes()), path.as_bytes(), "{path:?}");
        }
    }
}

const HEAD: &str = "--- \nmeta: \n  dirtymark: '1700000000.5'\n  interval: 1h\n  protocol: 1\nrecent: \n";

fn item(epoch: &str, path: &str, kind: &str) -> String {
    format!("  - \n    epoch: {epoch}\n    path: {path}\n    type: {kind}\n")
}

fn temp_file(bytes: &[u8]) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    std::io::Write::write_all(&mut f, bytes).unwrap();
    f
}

/// `n` items in Syck's layout, epochs down from 1.8e9, item `i` as `edit` makes it.
fn strict_text(n: u64, edit: impl Fn(u64, String) -> String) -> String {
    let mut text = HEAD.to_string();
    for i in 0..n {
        text.push_str(&edit(i, item(&format!("'{}.5'", 1_800_000_000 - i), &format!("id/A/{i}.tar.gz"), "new")));
    }
    text
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Where Syck's layout may be cut: before `  - \n    epoch: ` at a line's start.
fn syck_mark() -> Vec<u8> {
    Layout::syck(Dialect::Syck).mark()
}

#[test]
fn item_start_after_finds_the_next_item_block_within_64_kib() {
    let mark = "\n  - \n    epoch: ";
    let text = format!("{}{mark}1\n{}{mark}2\n", "x".repeat(10), "y".repeat(100));
    let f = temp_file(text.as_bytes());
    let first = 11;
    let second = text.rfind(mark).unwrap() as u64 + 1;
    assert_eq!(item_start_after(f.as_file(), 0, &syck_mark()).unwrap(), Some(first));
    assert_eq!(item_start_after(f.as_file(), 10, &syck_mark()).unwrap(), Some(first));
    assert_eq!(item_start_after(f.as_file(), 11, &syck_mark()).unwrap(), Some(second));
    assert_eq!(item_start_after(f.as_file(), second - 1, &syck_mark()).unwrap(), Some(second));
    assert_eq!(item_start_after(f.as_file(), second, &syck_mark()).unwrap(), None);
    // The mark must lie whole in the 64 KiB after `from`.
    for (gap, want) in [(65536 - mark.len(), true), (65536 - mark.len() + 1, false)] {
        let text = format!("{}{mark}", "z".repeat(5 + gap));
        let f = temp_file(text.as_bytes());
        assert_eq!(
            item_start_after(f.as_file(), 5, &syck_mark()).unwrap(),
            want.then_some(5 + gap as u64 + 1),
            "gap {gap}"
        );
    }
}

/// What a scan saw: which reader, over which byte range, in order.
type Seen = Vec<(&'static str, u64, u64)>;

/// `split_scan` of `f` with readers that only record their ranges, the
/// body's (second) half saying `body_says`, `join` saying `fits`.
fn split_ranges(f: &std::fs::File, split_min: u64, body_says: bool, fits: bool) -> Seen {
    split_scan(
        f,
        split_min,
        |r: ReadAt<'_>| Ok(Some(vec![("head", r.pos, r.end)])),
        move |r: ReadAt<'_>, _: Layout| Ok(body_says.then(|| vec![("body", r.pos, r.end)])),
        |mut a: Seen, b: Seen| {
            a.extend(b);
            fits.then_some(a)
        },
    )
    .unwrap()
    .unwrap()
}

#[test]
fn split_scan_cuts_at_the_first_item_after_the_middle_from_split_min_on() {
    let text = strict_text(40, |_, it| it);
    let f = temp_file(text.as_bytes());
    let len = text.len() as u64;
    let cut = item_start_after(f.as_file(), len / 2, &syck_mark()).unwrap().unwrap();
    assert!(cut > len / 2 && cut < len);
    let whole = vec![("head", 0, len)];
    let split = if cores() >= 2 { vec![("head", 0, cut), ("body", cut, len)] } else { whole.clone() };
    assert_eq!(split_ranges(f.as_file(), len, true, true), split);
    assert_eq!(split_ranges(f.as_file(), 1, true, true), split);
    assert_eq!(split_ranges(f.as_file(), len + 1, true, true), whole, "smaller than split_min");
    assert_eq!(split_ranges(f.as_file(), 1, false, true), whole, "the second half declined");
    assert_eq!(split_ranges(f.as_file(), 1, true, false), whole, "the halves do not fit");
    // No item block after the middle: no cut.
    let text = format!("{HEAD}{}", "x".repeat(300));
    let f = temp_file(text.as_bytes());
    assert_eq!(split_ranges(f.as_file(), 1, true, true), vec![("head", 0, text.len() as u64)]);
}

#[test]
fn epochs_that_do_not_decrease_across_the_cut_are_refused_as_in_one_pass() {
    let text = strict_text(40, |_, it| it);
    let f = temp_file(text.as_bytes());
    let cut = item_start_after(f.as_file(), text.len() as u64 / 2, &syck_mark()).unwrap().unwrap() as usize;
    // The index of the item at the cut; it gets its predecessor's epoch, or a greater one.
    let at_cut = text[..cut].matches("  - \n").count() as u64;
    for up in [1, 2] {
        let text = strict_text(40, |i, it| {
            if i == at_cut {
                it.replace(&format!("{}.5", 1_800_000_000 - i), &format!("{}.5", 1_800_000_000 - i + up))
            } else {
                it
            }
        });
        let f = temp_file(text.as_bytes());
        assert_eq!(
            item_start_after(f.as_file(), text.len() as u64 / 2, &syck_mark()).unwrap(),
            Some(cut as u64),
            "same layout"
        );
        assert_eq!(read_syck(text.as_bytes()).unwrap(), None, "{up}");
        assert_eq!(read_syck_split(f.as_file(), 1).unwrap(), None, "{up}");
        assert_eq!(outline(text.as_bytes()).unwrap(), None, "{up}");
        assert_eq!(outline_split(f.as_file(), 1).unwrap(), None, "{up}");
    }
}

#[test]
fn a_path_of_4096_bytes_is_for_the_strict_path_and_one_more_is_not() {
    for (len, taken) in [(4096, true), (4097, false)] {
        let path = format!("id/{}", "x".repeat(len - 3));
        let text = format!("{HEAD}{}", item("'1700000002.5'", &path, "new"));
        let strict = parse_syck(&text);
        assert_eq!(strict.as_ref().map(|rf| rf.events[0].path.len()), taken.then_some(len), "{len}");
        let outlined = outline(text.as_bytes()).unwrap();
        assert_eq!(outlined.map(|o| o.count), taken.then_some(1), "{len}");
    }
}

#[test]
fn the_outline_takes_exactly_the_epochs_the_strict_path_takes() {
    let long = format!("'1700000000.{}'", "5".repeat(4100));
    let long_ok = format!("'1700000000.{}'", "5".repeat(100));
    for (epoch, taken) in [
        ("'1700000002.5'", true),
        ("1225000000.94011", true),
        ("1700000002", true),
        (long_ok.as_str(), true),
        ("'.5'", false),
        ("'1.'", false),
        ("'", false),
        ("''", false),
        ("1700000000.5'", false),
        ("'1700000000.5", false),
        (long.as_str(), false),
    ] {
        let text = format!("{HEAD}{}", item(epoch, "a/b", "new"));
        let strict = parse_syck(&text);
        assert_eq!(strict.is_some(), taken, "{epoch}");
        let want = strict.as_ref().map(Outline::of);
        assert_eq!(outline(text.as_bytes()).unwrap(), want, "{epoch}");
        if let Some(o) = want {
            assert_eq!(o.newest.unwrap().as_str(), epoch.trim_matches('\''), "{epoch}");
        }
    }
}

/// A reader that is interrupted before every read and gives at most 1000 bytes at a time.
struct Interrupting<'a> {
    bytes: &'a [u8],
    interrupt: bool,
}

impl Read for Interrupting<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.interrupt = !self.interrupt;
        if self.interrupt {
            return Err(std::io::ErrorKind::Interrupted.into());
        }
        let n = buf.len().min(self.bytes.len()).min(1000);
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        Ok(n)
    }
}

/// A reader that fails after its first `left` bytes.
struct Failing<'a> {
    bytes: &'a [u8],
}

impl Read for Failing<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.bytes.is_empty() {
            return Err(std::io::Error::other("disk on fire"));
        }
        let n = buf.len().min(self.bytes.len());
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        Ok(n)
    }
}

#[test]
fn reads_are_retried_when_interrupted_and_other_errors_are_errors() {
    let text = strict_text(100, |_, it| it);
    let want = parse_syck(&text).unwrap();
    assert_eq!(want.events.len(), 100);
    let slow = Interrupting { bytes: text.as_bytes(), interrupt: false };
    assert_eq!(read_syck(slow).unwrap(), Some(want.clone()));
    let slow = Interrupting { bytes: text.as_bytes(), interrupt: false };
    assert_eq!(outline(slow).unwrap(), Some(Outline::of(&want)));
    let err = read_syck(Failing { bytes: &text.as_bytes()[..text.len() / 2] }).unwrap_err();
    assert_eq!(err.to_string(), "disk on fire");
    assert!(outline(Failing { bytes: text.as_bytes() }).is_err());
}

#[test]
fn a_head_that_fills_the_first_buffer_up_to_the_first_item() {
    // The `recent:` line ends 3 bytes before the end of the first buffer:
    // the first item is cut there (`  -`), and is read with the next fill.
    let filler = CHUNK - HEAD.len() - "  comment: \n".len() - 3;
    let head = HEAD.replace("  dirtymark:", &format!("  comment: {}\n  dirtymark:", "c".repeat(filler)));
    assert_eq!(head.len(), CHUNK - 3);
    let text = head + &item("'1700000002.5'", "a/b", "new") + &item("'1700000001.5'", "a/c", "delete");
    let strict = parse_syck(&text).expect("taken");
    assert_eq!(strict.events.len(), 2);
    assert_eq!(strict.meta.comment.as_ref().map(String::len), Some(filler));
    assert_eq!(outline(text.as_bytes()).unwrap(), Some(Outline::of(&strict)));
}

#[test]
fn the_end_of_the_first_buffer_after_an_item_or_inside_a_character_is_not_the_end() {
    let first = item("'1700000002.5'", "a/ü", "new");
    let in_u = first.find('ü').unwrap() + 1;
    for end in [first.len(), in_u] {
        let filler = CHUNK - HEAD.len() - "  comment: \n".len() - end;
        let head = HEAD.replace("  dirtymark:", &format!("  comment: {}\n  dirtymark:", "c".repeat(filler)));
        assert_eq!(head.len() + end, CHUNK);
        let text = head + &first + &item("'1700000001.5'", "a/c", "delete");
        let strict = parse_syck(&text).expect("taken");
        assert_eq!(strict.events.len(), 2, "{end}");
        assert_eq!(strict.events[0].path, "a/ü", "{end}");
        assert_eq!(outline(text.as_bytes()).unwrap(), Some(Outline::of(&strict)), "{end}");
    }
}

#[test]
fn an_empty_list_and_a_last_line_without_newline() {
    let empty = HEAD.replace("recent: \n", "recent: []\n\n");
    assert_eq!(parse_syck(&empty).map(|rf| rf.events.len()), Some(0));
    assert_eq!(outline(empty.as_bytes()).unwrap().map(|o| o.count), Some(0));
    let trailing = HEAD.replace("recent: \n", "recent: []\n") + &item("'1700000002.5'", "a", "new");
    assert_eq!(parse_syck(&trailing), None);
    assert_eq!(outline(trailing.as_bytes()).unwrap(), None);
    let text = strict_text(3, |_, it| it);
    let cut = text.trim_end_matches('\n');
    let strict = parse_syck(cut).expect("taken");
    assert_eq!(strict, parse_syck(&text).unwrap());
    assert_eq!(outline(cut.as_bytes()).unwrap(), Some(Outline::of(&strict)));
}

/// What the line reader and the validator make of `text`.
fn slow(text: &str) -> Result<Recentfile, ReadError> {
    super::super::read::validate(parse(text)?)
}

/// Paths Syck writes plain, quoted, or double-quoted with escapes.
const PATHS: &[&str] = &[
    "a",
    "Z9",
    "ä",
    "é:",
    ".x",
    "_x",
    "a:b",
    "a: b",
    "a#b",
    "a #b",
    "#a",
    "a ",
    " a",
    "null",
    "Null",
    "~",
    "~x",
    "-a",
    "- a",
    "+5",
    "<<",
    "a/b:",
    "x'y",
    "'q",
    "\"q",
    "123",
    "1.5",
    "0x1F",
    "yes",
    "y",
    "a\tb",
    "a\u{7f}",
    "a\\b",
    "?a",
    "[a",
    "{a",
    "!a",
    "&a",
    "*a",
    "|a",
    ">a",
    "%a",
    "@a",
    "`a",
    ",a",
    "a,b",
    "a]",
    ":a",
    "a\u{a0}",
    "off\u{a0}x",
    "new",
    "delete",
];

#[test]
fn the_strict_path_reads_back_every_path_rrr_writes() {
    let producer = Producer { program: "p".into(), time: Epoch::parse("1700000001.5").unwrap() };
    for &path in PATHS {
        let rf = Recentfile {
            events: vec![
                Event::new(Epoch::parse("1700000002.5").unwrap(), path, EventKind::New),
                Event::new(Epoch::parse("1700000001").unwrap(), "id/A/x.tar.gz", EventKind::Delete),
            ],
            ..Recentfile::default()
        };
        let bytes = emit(&rf, &producer);
        let text = std::str::from_utf8(&bytes).unwrap();
        let strict = parse_syck(text).unwrap_or_else(|| panic!("{path:?}: not taken: {text}"));
        assert_eq!(strict.events, rf.events, "{path:?}");
        assert_eq!(outline(text.as_bytes()).unwrap(), Some(Outline::of(&strict)), "{path:?}");
    }
}

#[test]
fn a_plain_path_is_taken_only_where_the_line_reader_reads_it_alike() {
    let mut taken = Vec::new();
    for &path in PATHS.iter().chain(&[
        "a: b:", "a:  b", "ab #", "a\r", "nul", "nulls", "--", "a\u{1}b", "x: ", "'", "'a'b'", "-a\tb", "-a\u{1}b",
    ]) {
        let text = format!("{HEAD}{}", item("'1700000002.5'", path, "new"));
        let Some(strict) = parse_syck(&text) else {
            assert_eq!(outline(text.as_bytes()).unwrap(), None, "{path:?}");
            continue;
        };
        assert_eq!(Ok(strict.clone()), slow(&text), "{path:?}");
        assert_eq!(outline(text.as_bytes()).unwrap(), Some(Outline::of(&strict)), "{path:?}");
        taken.push(path);
    }
    // Plain as Syck writes them: a letter, digit, non-ASCII character, `.`
    // or `_` first, no `: ` or ` #`; or what Syck itself leaves plain.
    for path in ["a", "Z9", "ä", ".x", "_x", "a:b", "a#b", "~x", "-a", "+5", "<<", "a\u{a0}", "nul", "nulls"] {
        assert!(taken.contains(&path), "{path:?} not taken");
    }
    // Not where a control character is in a value that is not plain by the
    // first rule (YAML::Syck writes `-a<TAB>b` plain; the strict path leaves it).
    for path in ["-a\tb", "-a\u{1}b", "'", "'a'b'"] {
        assert!(!taken.contains(&path), "{path:?} taken");
    }
}

#[test]
fn unquote_epoch_takes_single_quoted_or_plain_digits() {
    for (v, want) in [
        ("'1700000000.5'", Some("1700000000.5")),
        ("1225000000.94011", Some("1225000000.94011")),
        ("1700000000", Some("1700000000")),
        ("'x'", Some("x")),
        ("''", Some("")),
        ("'", None),
        ("", None),
        ("x1", None),
        ("-1", None),
        (".5", None),
        ("\"1.5\"", None),
        ("'1.5", None),
        ("1.5'", None),
        ("'1'5'", None),
    ] {
        assert_eq!(unquote_epoch(v), want, "{v:?}");
    }
}

/// `next_item` as text: `item <epoch> <path> <path_special> <kind> <next>`, `more` or `bad`.
fn scanned(b: &str, p: usize, eof: bool) -> String {
    match next_item(b.as_bytes(), p, eof, &Layout::syck(Dialect::Syck)) {
        Scan::Item(it) => {
            format!("item {} {} {} {} {}", &b[it.epoch], &b[it.path], it.path_special, it.kind.as_str(), it.next)
        }
        Scan::More => "more".into(),
        Scan::Bad => "bad".into(),
    }
}

#[test]
fn next_item_reads_one_block_says_more_when_cut_and_bad_otherwise() {
    let block = "  - \n    epoch: '1.5'\n    path: a:b\n    type: new\n";
    let n = block.len();
    assert_eq!(scanned(block, 0, false), format!("item '1.5' a:b true new {n}"));
    assert_eq!(scanned(block, 0, true), format!("item '1.5' a:b true new {n}"));
    let two = format!("xx{block}{}", block.replace("a:b", "a#b").replace("new", "delete"));
    assert_eq!(scanned(&two, 2, false), format!("item '1.5' a:b true new {}", n + 2));
    assert_eq!(scanned(&two, n + 2, false), format!("item '1.5' a#b true delete {}", two.len()));
    let plain = block.replace("a:b", "a/b");
    assert_eq!(scanned(&plain, 0, false), format!("item '1.5' a/b false new {n}"));
    // The last line may lack its newline at the end of the file only.
    for kind in ["new", "delete"] {
        let last = block.replace("new\n", kind);
        assert_eq!(scanned(&last, 0, true), format!("item '1.5' a:b true {kind} {}", last.len()), "{kind}");
        assert_eq!(scanned(&last, 0, false), "more", "{kind}");
    }
    for cut in 0..n - 1 {
        assert_eq!(scanned(&block[..cut], 0, false), "more", "cut at {cut}");
        assert_eq!(scanned(&block[..cut], 0, true), "bad", "cut at {cut}, end of file");
    }
    for kind in ["newer\n", "ne\n", "delet\n", "deleted\n", "New\n"] {
        assert_eq!(scanned(&block.replace("new\n", kind), 0, true), "bad", "{kind:?}");
    }
    // Any other byte in the layout (all but the three values).
    let values = [(16, "'1.5'"), (32, "a:b"), (46, "new")];
    for i in 0..n {
        if values.iter().any(|&(at, v)| (at..at + v.len()).contains(&i)) {
            continue;
        }
        let mut other = block.as_bytes().to_vec();
        other[i] = b'x';
        let other = String::from_utf8(other).unwrap();
        assert_eq!(scanned(&other, 0, true), "bad", "byte {i} of {other:?}");
    }
    for (at, v) in values {
        assert_eq!(&block[at..at + v.len()], v);
    }
}

#[test]
fn an_item_cut_by_a_quoted_line_is_read_whole_with_one_anchor_sign() {
    // A double-quoted path whose second line starts like an item and whose
    // third looks like an epoch line: read alone, the two pieces fail, but
    // the document reads as YAML::Syck 1.34 reads it (path `a* - b epoch:
    // 1`), also with only one of `&` and `*`.
    for sign in ['*', '&'] {
        let text = format!(
            "{HEAD}  - \n    epoch: '1700000002.5'\n    path: \"a{sign}\n  - b\n    epoch: 1\"\n    type: new\n{}",
            item("'1700000001.5'", "c", "new")
        );
        let rf = slow(&text).unwrap();
        let paths: Vec<String> = rf.events.iter().map(|e| e.path.to_str().unwrap().to_string()).collect();
        assert_eq!(paths, [format!("a{sign} - b epoch: 1"), "c".to_string()], "{sign}");
        assert_eq!(rf.events[0].epoch.as_str(), "1700000002.5");
    }
}

#[test]
fn whole_files_in_syck_layout_are_read_by_the_strict_path() {
    let text = strict_text(30, |_, it| it);
    let f = temp_file(text.as_bytes());
    let strict = parse_syck(&text).unwrap();
    assert_eq!(strict.events.len(), 30);
    assert_eq!(read_syck_file(f.as_file()).unwrap(), Some(strict.clone()));
    assert_eq!(outline_file(f.as_file()).unwrap(), Some(Outline::of(&strict)));
    // Split in two (on two cores), the same answers.
    assert_eq!(read_syck_split(f.as_file(), 1).unwrap(), Some(strict.clone()));
    assert_eq!(outline_split(f.as_file(), 1).unwrap(), Some(Outline::of(&strict)));
    let f = temp_file(text.replace("type: new", "type: brandnew").as_bytes());
    assert_eq!(read_syck_file(f.as_file()).unwrap(), None);
    assert_eq!(outline_file(f.as_file()).unwrap(), None);
}

#[test]
fn split_head_finds_the_top_level_recent_line_after_meta() {
    for (text, want) in [
        ("meta: \nrecent: \n  - x\n", Some(("meta: \n", "", "  - x\n"))),
        ("--- \nmeta: \n  a: 1\nrecent: []\n\n", Some(("--- \nmeta: \n  a: 1\n", "[]", "\n"))),
        ("meta: \n  recent: x\nrecent:  y \nz", Some(("meta: \n  recent: x\n", "y", "z"))),
        ("meta: \nrecent:", Some(("meta: \n", "", ""))),
        ("recent: \nmeta: \n", None),
        ("--- \nmeta: \n", None),
        ("meta: \n recent: \n", None),
        ("", None),
    ] {
        assert_eq!(split_head(text), want, "{text:?}");
    }
}

#[test]
fn emit_writes_what_yaml_syck_dumps() {
    // From perl 5.36, YAML::Syck 1.34 ($YAML::Syck::SortKeys = 1) on the same data.
    let version = env!("CARGO_PKG_VERSION");
    let epoch = |s: &str| Epoch::parse(s).unwrap();
    // Every meta key set (Producers are the writer's own, whatever the meta holds).
    let meta = super::super::pins::full_meta();
    let rf = Recentfile {
        meta,
        events: vec![
            Event::new(epoch("1700000002.5"), "id/A/x.tar.gz", EventKind::New),
            Event::new(epoch("1700000001"), "a b", EventKind::Delete),
        ],
        ..Recentfile::default()
    };
    let producer = Producer { program: "p".into(), time: epoch("1700000001.5") };
    let want = format!(
        "--- \nmeta: \n  Hash: sha256\n  Producers: \n    $0: p\n    rrr: {version}\n    time: '1700000001.5'\n  aggregator: \n    - 1h\n    - 6h\n    - 1d\n    - Z\n  canonize: naive_path_normalize\n  comment: c\n  dirtymark: '1700000000.5'\n  filenameroot: RECENT\n  interval: 1h\n  merged: \n    epoch: '1700000400.5'\n    into_interval: 6h\n    time: '1700000500.5'\n  minmax: \n    max: '1700000400.5'\n    min: ~\n    mtime: '1700000400'\n  protocol: 1\n  serializer_suffix: .json\nrecent: \n  - \n    epoch: '1700000002.5'\n    path: id/A/x.tar.gz\n    type: new\n  - \n    epoch: '1700000001'\n    path: a b\n    type: delete\n"
    );
    assert_eq!(String::from_utf8(emit(&rf, &producer)).unwrap(), want);
    let rf = Recentfile {
        meta: super::super::Meta { merged: Merged::Reset, protocol: Some("1".into()), ..Default::default() },
        ..Recentfile::default()
    };
    let producer = Producer { program: "p".into(), time: epoch("5") };
    let want = format!(
        "--- \nmeta: \n  Producers: \n    $0: p\n    rrr: {version}\n    time: 5\n  merged: {{}}\n\n  protocol: 1\nrecent: []\n\n"
    );
    assert_eq!(String::from_utf8(emit(&rf, &producer)).unwrap(), want);
}

#[test]
#[ignore = "bug: without `&` or `*` parse keeps the itemwise reading, whose second piece has the epoch `1\"`, and the file is an error"]
fn an_item_cut_by_a_quoted_line_without_anchor_signs_is_read_whole() {
    // As above, with neither `&` nor `*`: YAML::Syck 1.34 reads the path
    // `a - b epoch: 1`.
    let text = format!(
        "{HEAD}  - \n    epoch: '1700000002.5'\n    path: \"a\n  - b\n    epoch: 1\"\n    type: new\n{}",
        item("'1700000001.5'", "c", "new")
    );
    let rf = slow(&text).unwrap();
    let paths: Vec<String> = rf.events.iter().map(|e| e.path.to_str().unwrap().to_string()).collect();
    assert_eq!(paths, ["a - b epoch: 1", "c"]);
}
