//! Pins of the readers for the layouts other writers than YAML::Syck
//! produce, gopkg.in/yaml.v3's above all (abh/rrrgo: no `---`, compact
//! items at indent 4, `Producers` last, exponent epochs, block scalars,
//! libyaml's escapes, `!!binary`): the dialect and layout decisions, the
//! block scalar and escape decoders against libyaml's readings (and
//! serde-saphyr's, a YAML 1.2 reader, where generated cases need an
//! oracle), and the strict path against the line reader on files rrrgo
//! wrote (`fixtures/rrrgo-9c6e135/`, copied verbatim below).

use super::*;
use proptest::prelude::*;

/// `go-controls-yaml/RECENT-Z.yaml`, as rrrgo 9c6e135 wrote it: a `|-`
/// block, yaml.v3's `\e`, `\r`, `\t`, a 17-digit epoch.
const GO_CONTROLS_Z: &str = r#"meta:
    aggregator:
        - 6h
        - 1d
        - 1W
        - 1M
        - 1Q
        - 1Y
        - Z
    filenameroot: RECENT
    interval: Z
    minmax:
        max: 1.79624749174627e+09
        min: 1.79624749171691e+09
        mtime: 1796247491
    protocol: 1
    serializer_suffix: .yaml
recent:
    - epoch: 1.79624749174627e+09
      path: "ctl/esc\ename.txt"
      type: new
    - epoch: 1.79624749174218e+09
      path: "ctl/cr\rmid.txt"
      type: new
    - epoch: 1.79624749173699e+09
      path: |-
        ctl/new
        line.txt
      type: new
    - epoch: 1.79624749172051e+09
      path: "ctl/tab\tname.txt"
      type: new
    - epoch: 1.79624749171693e+09
      path: authors/id/A/AN/ANDK/Dist-002-1.02.tar.gz
      type: new
    - epoch: 1.79624749171692e+09
      path: authors/id/A/AN/ANDK/Dist-001-1.01.tar.gz
      type: new
    - epoch: 1.79624749171691e+09
      path: authors/id/A/AN/ANDK/Dist-000-1.00.tar.gz
      type: new
"#;

/// `go-cpan-yaml/RECENT-1h.yaml`: the principal, with `Producers` naming rrrgo.
const GO_CPAN_1H: &str = r#"meta:
    aggregator:
        - 6h
        - 1d
        - 1W
        - 1M
        - 1Q
        - 1Y
        - Z
    dirtymark: 1.79624749105424e+09
    filenameroot: RECENT
    interval: 1h
    merged:
        epoch: 1.79624749105424e+09
        into_interval: 6h
    minmax:
        max: 1.79624749105424e+09
        min: 1.79624749079811e+09
        mtime: 1796247491
    protocol: 1
    serializer_suffix: .yaml
    Producers:
        $0: /usr/local/bin/rrr-server
        github.com/abh/rrrgo: v0.0.0-offline-stub
        time: 1.79624749105427e+09
recent:
    - epoch: 1.79624749105424e+09
      path: authors/id/A/AN/ANDK/Dist-003-1.03.tar.gz
      type: delete
    - epoch: 1.79624749102619e+09
      path: dirty/batch-dirty.tar.gz
      type: new
    - epoch: 1.79624749102618e+09
      path: dirty/two-days-ago.tar.gz
      type: new
    - epoch: 1.79624749102617e+09
      path: dirty/half-an-hour-ago.tar.gz
      type: new
    - epoch: 1.79624749102616e+09
      path: authors/id/A/AN/ANDK/Dist-002-1.02.tar.gz
      type: new
    - epoch: 1.79624749101046e+09
      path: authors/id/A/AN/ANDK/Dist-001-1.01.tar.gz
      type: delete
    - epoch: 1.79624749079811e+09
      path: authors/id/A/AN/ANDK/Dist-039-1.39.tar.gz
      type: new
"#;

/// `go-awkward-yaml/RECENT-Z.yaml`: names yaml.v3 writes plain, single-
/// and double-quoted (spaces, quotes, colons, `#`, indicators, YAML words, unicode).
const GO_AWKWARD_Z: &str = r#"meta:
    aggregator:
        - 6h
        - 1d
        - 1W
        - 1M
        - 1Q
        - 1Y
        - Z
    filenameroot: RECENT
    interval: Z
    minmax:
        max: 1.79624748989049e+09
        min: 1.79624748975693e+09
        mtime: 1796247489
    protocol: 1
    serializer_suffix: .yaml
recent:
    - epoch: 1.79624748989049e+09
      path: long/very long name with spaces that goes on and on past eighty columns of text in one single path component.tar.gz
      type: new
    - epoch: 1.796247489878e+09
      path: comma, space.txt
      type: new
    - epoch: 1.79624748987004e+09
      path: back\slash.txt
      type: new
    - epoch: 1.79624748984903e+09
      path: amp&<lt>.txt
      type: new
    - epoch: 1.7962474898459e+09
      path: '>gt'
      type: new
    - epoch: 1.79624748984352e+09
      path: '|pipe'
      type: new
    - epoch: 1.79624748984159e+09
      path: ?question
      type: new
    - epoch: 1.79624748983792e+09
      path: '`backtick'
      type: new
    - epoch: 1.79624748982919e+09
      path: '@at'
      type: new
    - epoch: 1.79624748982717e+09
      path: '%percent'
      type: new
    - epoch: 1.79624748982285e+09
      path: '!bang'
      type: new
    - epoch: 1.7962474898146e+09
      path: '&amp'
      type: new
    - epoch: 1.79624748981288e+09
      path: '*star'
      type: new
    - epoch: 1.79624748981118e+09
      path: '{brace}.txt'
      type: new
    - epoch: 1.79624748980935e+09
      path: '[bracket].txt'
      type: new
    - epoch: 1.79624748980751e+09
      path: "~"
      type: new
    - epoch: 1.7962474898059e+09
      path: "null"
      type: new
    - epoch: 1.79624748980411e+09
      path: "true"
      type: new
    - epoch: 1.79624748979968e+09
      path: "no"
      type: new
    - epoch: 1.79624748979766e+09
      path: "yes"
      type: new
    - epoch: 1.79624748979569e+09
      path: "1e3"
      type: new
    - epoch: 1.79624748979377e+09
      path: "1.5"
      type: new
    - epoch: 1.79624748979197e+09
      path: "123"
      type: new
    - epoch: 1.79624748979011e+09
      path: 'hash/a #b.txt'
      type: new
    - epoch: 1.79624748976962e+09
      path: '#hash.txt'
      type: new
    - epoch: 1.79624748976577e+09
      path: '- dash space.txt'
      type: new
    - epoch: 1.7962474897571805e+09
      path: -leading-dash.txt
      type: new
    - epoch: 1.7962474897571704e+09
      path: unicode/Ünïcödé name.txt
      type: new
    - epoch: 1.7962474897571604e+09
      path: unicode/日本語/ファイル.txt
      type: new
    - epoch: 1.7962474897571504e+09
      path: unicode/café.txt
      type: new
    - epoch: 1.7962474897571404e+09
      path: 'colon/key: value.txt'
      type: new
    - epoch: 1.7962474897571304e+09
      path: colon/a:b.txt
      type: new
    - epoch: 1.7962474897571204e+09
      path: quotes/"double"
      type: new
    - epoch: 1.7962474897571104e+09
      path: quotes/'single'
      type: new
    - epoch: 1.7962474897571003e+09
      path: quotes/say "hi".txt
      type: new
    - epoch: 1.7962474897570903e+09
      path: quotes/it's.txt
      type: new
    - epoch: 1.7962474897570803e+09
      path: 'trailing space.txt '
      type: new
    - epoch: 1.7962474897570703e+09
      path: ' leading space.txt'
      type: new
    - epoch: 1.7962474897570603e+09
      path: with space/file name.txt
      type: new
    - epoch: 1.7962474897570503e+09
      path: 'authors/id/A/AB/ABC/Foo-1.0: bar.tar.gz'
      type: new
    - epoch: 1.7962474897570403e+09
      path: 'authors/id/A/AB/ABC/Foo-1.0:'
      type: new
    - epoch: 1.7962474897570302e+09
      path: authors/id/A/AB/ABC/Foo-1.0.tar.gz
      type: new
    - epoch: 1.7962474897570202e+09
      path: authors/id/A/AN/ANDK/Dist-009-1.09.tar.gz
      type: new
    - epoch: 1.7962474897570102e+09
      path: authors/id/A/AN/ANDK/Dist-008-1.08.tar.gz
      type: new
    - epoch: 1.7962474897570002e+09
      path: authors/id/A/AN/ANDK/Dist-007-1.07.tar.gz
      type: new
    - epoch: 1.7962474897569902e+09
      path: authors/id/A/AN/ANDK/Dist-006-1.06.tar.gz
      type: new
    - epoch: 1.7962474897569802e+09
      path: authors/id/A/AN/ANDK/Dist-005-1.05.tar.gz
      type: new
    - epoch: 1.7962474897569702e+09
      path: authors/id/A/AN/ANDK/Dist-004-1.04.tar.gz
      type: new
    - epoch: 1.7962474897569602e+09
      path: authors/id/A/AN/ANDK/Dist-003-1.03.tar.gz
      type: new
    - epoch: 1.7962474897569501e+09
      path: authors/id/A/AN/ANDK/Dist-002-1.02.tar.gz
      type: new
    - epoch: 1.7962474897569401e+09
      path: authors/id/A/AN/ANDK/Dist-001-1.01.tar.gz
      type: new
    - epoch: 1.79624748975693e+09
      path: authors/id/A/AN/ANDK/Dist-000-1.00.tar.gz
      type: new
"#;

/// What the line reader and the validator make of `text`.
fn slow(text: &str) -> Recentfile {
    crate::format::read::validate(parse(text).unwrap()).unwrap()
}

fn paths(rf: &Recentfile) -> Vec<&[u8]> {
    rf.events.iter().map(|e| e.path.as_bytes()).collect()
}

#[test]
fn the_dialect_is_decided_from_the_head() {
    use Dialect::*;
    for (head, want) in [
        ("--- \nmeta: \n  Producers: \n    $0: x\n", Syck),
        ("---\nmeta:\n", Syck),
        ("# c\n%YAML 1.1\n--- \nmeta: {}\n", Syck),
        ("meta:\n    interval: Z\n", Libyaml),
        ("\nmeta: {}\n", Libyaml),
        ("", Libyaml),
        // rrrgo's principal: its Producers decide, a header or not.
        ("meta:\n    Producers:\n        github.com/abh/rrrgo: v0.1\n", Libyaml),
        ("---\nmeta:\n  Producers:\n    github.com/abh/rrrgo: v0.1\n", Libyaml),
        // The Perl tools' and rrr's Producers: Syck's, without a header too.
        ("meta:\n  Producers:\n    File::Rsync::Mirror::Recentfile: 0.4.3\n", Syck),
        ("meta:\n  Producers:\n    rrr: 0.1.0\n", Syck),
        ("meta:\n  Producers:\n    rrrx: 0.1.0\n", Libyaml),
        ("meta:\n  comment: '--- x'\n", Libyaml),
    ] {
        assert_eq!(Dialect::of(head), want, "{head:?}");
    }
}

#[test]
fn the_layout_is_that_of_the_first_item() {
    let d = Dialect::Libyaml;
    for (body, want) in [
        (&b"  - \n    epoch: '1.5'\n"[..], Layout::syck(d)),
        (b"    - epoch: 1.5e+09\n", Layout::compact(4, d)),
        (b"  - epoch: 1.5\n", Layout::compact(2, d)),
        (b"- epoch: 1.5\n", Layout::compact(0, d)),
        (b"                                - epoch: 1\n", Layout::compact(32, d)),
        (b"                                 - epoch: 1\n", Layout::syck(d)),
        (b"    - path: a\n", Layout::syck(d)),
        (b"    -  epoch: 1\n", Layout::syck(d)),
        (b"", Layout::syck(d)),
    ] {
        assert_eq!(Layout::of(body, d), want, "{:?}", String::from_utf8_lossy(body));
    }
    let c = Layout::compact(4, Dialect::Syck);
    assert_eq!((&*c.item, &*c.path, &*c.kind), (&b"    - epoch: "[..], &b"      path: "[..], &b"      type: "[..]));
    assert_eq!(c.mark(), b"\n    - epoch: ");
    assert_eq!(Layout::syck(Dialect::Syck).mark(), b"\n  - \n    epoch: ");
}

/// Each of rrrgo's files is read by the strict path where it can be
/// (everything but the `|-` block), exactly as the line reader reads it,
/// and the outline agrees.
#[test]
fn files_rrrgo_wrote_are_read_alike_by_every_reader() {
    let rf = parse_syck(GO_CPAN_1H).expect("the strict path takes rrrgo's principal");
    assert_eq!(rf, slow(GO_CPAN_1H));
    assert_eq!(outline(GO_CPAN_1H.as_bytes()).unwrap(), Some(Outline::of(&rf)));
    assert_eq!(rf.events[0].epoch.as_str(), "1796247491.05424");
    assert_eq!(rf.meta.dirtymark.as_ref().map(Epoch::as_str), Some("1796247491.05424"));
    assert_eq!(rf.meta.produced(), Some("1796247491.05427"));
    assert_eq!(rf.meta.aggregator, ["6h", "1d", "1W", "1M", "1Q", "1Y", "Z"]);
    assert_eq!(rf.events.len(), 7);

    let rf = parse_syck(GO_AWKWARD_Z).expect("the strict path takes the awkward names");
    assert_eq!(rf, slow(GO_AWKWARD_Z));
    assert_eq!(outline(GO_AWKWARD_Z.as_bytes()).unwrap(), Some(Outline::of(&rf)));
    let p = paths(&rf);
    for name in [
        &b"long/very long name with spaces that goes on and on past eighty columns of text in one single path component.tar.gz"[..],
        b"comma, space.txt",
        b"back\\slash.txt",
        b"amp&<lt>.txt",
        b">gt",
        b"|pipe",
        b"?question",
        b"`backtick",
        b"!bang",
        b"&amp",
        b"*star",
        b"[bracket].txt",
        b"~",
        b"null",
        b"1e3",
        b"hash/a #b.txt",
        b"#hash.txt",
        b"- dash space.txt",
        b"-leading-dash.txt",
        "unicode/Ünïcödé name.txt".as_bytes(),
        "unicode/日本語/ファイル.txt".as_bytes(),
        "unicode/café.txt".as_bytes(),
        b"colon/key: value.txt",
        b"colon/a:b.txt",
        b"quotes/\"double\"",
        b"quotes/'single'",
        b"trailing space.txt ",
        b" leading space.txt",
        b"authors/id/A/AB/ABC/Foo-1.0:",
    ] {
        assert!(p.contains(&name), "{:?} not read: {p:?}", String::from_utf8_lossy(name));
    }
    assert_eq!(rf.events.iter().find(|e| e.path == "-leading-dash.txt").unwrap().epoch.as_str(), "1796247489.7571805");

    // The `|-` block is for the line reader; the strict path declines the file.
    assert_eq!(parse_syck(GO_CONTROLS_Z), None);
    assert_eq!(outline(GO_CONTROLS_Z.as_bytes()).unwrap(), None);
    let rf = slow(GO_CONTROLS_Z);
    let want: [&[u8]; 10] = [
        b"ctl/esc\x1bname.txt",
        b"ctl/cr\rmid.txt",
        b"ctl/new\nline.txt",
        b"ctl/tab\tname.txt",
        b"authors/id/A/AN/ANDK/Dist-002-1.02.tar.gz",
        b"authors/id/A/AN/ANDK/Dist-001-1.01.tar.gz",
        b"authors/id/A/AN/ANDK/Dist-000-1.00.tar.gz",
        b"",
        b"",
        b"",
    ];
    assert_eq!(paths(&rf), want[..7]);
    assert_eq!(rf.events[2].epoch.as_str(), "1796247491.73699");
    // Without the block, the strict path takes the rest alike.
    let no_block =
        GO_CONTROLS_Z.replace("      path: |-\n        ctl/new\n        line.txt\n", "      path: ctl/newline.txt\n");
    assert_eq!(parse_syck(&no_block), Some(slow(&no_block)));
}

/// The strict path splits a big compact file as it splits Syck's: at an
/// item of the layout near the middle, with the sequential result.
#[test]
fn a_big_compact_file_is_split_at_an_item_of_its_layout() {
    let mut text = GO_CPAN_1H[..GO_CPAN_1H.find("recent:\n").unwrap() + 8].to_string();
    for i in 0..3000u64 {
        text.push_str(&format!(
            "    - epoch: 1.{:09}5e+09\n      path: \"id/A/{i}\\u00FC\\x85.tar.gz\"\n      type: new\n",
            800_000_000 - i
        ));
    }
    let mut f = tempfile::NamedTempFile::new().unwrap();
    std::io::Write::write_all(&mut f, text.as_bytes()).unwrap();
    let split = read_syck_split(f.as_file(), 1).unwrap().expect("strict");
    assert_eq!(split.events.len(), 3000);
    assert_eq!(split.events[1].path, "id/A/1\u{fc}\u{85}.tar.gz");
    assert_eq!(split.events[2999].epoch.as_str(), "1799997001.5");
    assert_eq!(Some(&split), read_syck(text.as_bytes()).unwrap().as_ref());
    assert_eq!(split, slow(&text));
    assert_eq!(outline_split(f.as_file(), 1).unwrap(), Some(Outline::of(&split)));
    let cut =
        item_start_after(f.as_file(), text.len() as u64 / 2, &Layout::compact(4, Dialect::Libyaml).mark()).unwrap();
    assert!(cut.is_some_and(|c| text[c as usize..].starts_with("    - epoch: ")), "{cut:?}");
}

/// Deeper layouts (keys of more than 16 bytes) take the slice compare.
#[test]
fn deep_compact_layouts_are_read_by_the_strict_path() {
    for indent in [0, 2, 4, 6, 7, 8, 12, 32] {
        let pad = " ".repeat(indent);
        let text = format!(
            "meta:\n{pad}  interval: 1h\nrecent:\n{pad}- epoch: 1.7e+09\n{pad}  path: a\n{pad}  type: new\n{pad}- epoch: '1600000000.5'\n{pad}  path: 'b c'\n{pad}  type: delete\n"
        );
        let text = text.replace(&format!("{pad}  interval"), "  interval");
        let strict = parse_syck(&text).unwrap_or_else(|| panic!("indent {indent}: {text}"));
        assert_eq!(strict, slow(&text), "indent {indent}");
        assert_eq!(paths(&strict), [&b"a"[..], b"b c"], "indent {indent}");
        // A key off by one column is not the layout.
        let off = text.replacen(&format!("{pad}  path: a"), &format!("{pad}   path: a"), 1);
        assert_eq!(parse_syck(&off), None, "indent {indent}");
    }
    let key = b"                  path: ";
    let text = [&b"xx"[..], key, b"a"].concat();
    assert!(has_at(&text, 2, key));
    assert!(!has_at(&text, 1, key));
    let mut other = key.to_vec();
    other[3] = b'x';
    assert!(!has_at(&text, 2, &other));
}

/// Block scalars as libyaml (yaml.v3) reads them: literal and folded,
/// chomping, indentation indicators, blank and more-indented lines.
#[test]
fn block_scalars_as_libyaml_reads_them() {
    for (header, lines, want) in [
        ("|-", &["ctl/new", "line.txt"][..], Some("ctl/new\nline.txt")),
        ("|", &["a", "b"], Some("a\nb\n")),
        ("|+", &["a", "b", "", ""], Some("a\nb\n\n\n")),
        ("|", &["a", "b", "", ""], Some("a\nb\n")),
        ("|-", &["a", "", "b", ""], Some("a\n\nb")),
        ("|-", &["", "a"], Some("\na")),
        ("|-", &["  a", "   b"], Some("a\n b")),
        ("|-", &[" ", "  a"], Some("\na")),
        // An indicator counts from the key's column (6): content at 8, 9, 10.
        ("|2-", &["  a", "b"], Some("  a\nb")),
        ("|-2", &["  a", "b"], Some("  a\nb")),
        ("|3-", &["   a", " b"], Some("  a\nb")),
        ("|4", &["    a", "     b", "  ", "   "], Some("  a\n   b\n")),
        ("|4+", &["    a", "  ", "           "], Some("  a\n\n \n")),
        ("|4+", &["    a", "  ", "   "], Some("  a\n\n\n")),
        ("|-", &["a", "    "], Some("a")),
        ("|-", &["a  ", "#b: c"], Some("a  \n#b: c")),
        ("|-", &["a\tb"], Some("a\tb")),
        (">-", &["a", "b"], Some("a b")),
        (">", &["a", "b", "", "c"], Some("a b\nc\n")),
        (">", &["a", "", "", "b"], Some("a\n\nb\n")),
        (">-", &["a", "  b", "c"], Some("a\n  b\nc")),
        (">+", &["a", ""], Some("a\n\n")),
        ("|-", &[], Some("")),
        ("|", &[], Some("")),
        // A tab where the indentation is, a CR in a line: the general parser decides.
        ("|-", &["\ta"], None),
        ("|-", &["a\rb"], None),
    ] {
        let (header, binary) = block_header(header).unwrap_or_else(|| panic!("{header}"));
        assert!(!binary);
        let text: String = lines
            .iter()
            .map(|l| if l.trim().is_empty() { format!("{l}\n") } else { format!("        {l}\n") })
            .collect();
        let text = text + "      type: new\n";
        let mut it = text.split_inclusive('\n').peekable();
        let mut line_no = 0;
        let got = block_scalar(&mut it, &mut line_no, false, 6, header).unwrap();
        assert_eq!(got.as_deref(), want, "{header:?} {lines:?}");
        if got.is_some() {
            assert_eq!(it.next(), Some("      type: new\n"), "{header:?} {lines:?}: the next key is left");
            assert_eq!(line_no, text.lines().count() - 1);
        }
    }
}

#[test]
fn block_headers() {
    let h = |folded, chomp, indent| Some((BlockHeader { folded, chomp, indent }, false));
    for (v, want) in [
        ("|", h(false, Chomp::Clip, None)),
        ("|-", h(false, Chomp::Strip, None)),
        ("|+", h(false, Chomp::Keep, None)),
        (">", h(true, Chomp::Clip, None)),
        (">-  ", h(true, Chomp::Strip, None)),
        ("|2", h(false, Chomp::Clip, Some(2))),
        ("|9-", h(false, Chomp::Strip, Some(9))),
        ("|-1", h(false, Chomp::Strip, Some(1))),
        ("|0", None),
        ("|--", None),
        ("|22", None),
        ("|-+", None),
        ("| # c", None),
        ("a", None),
        ("", None),
        ("'|'", None),
    ] {
        assert_eq!(block_header(v), want, "{v:?}");
    }
    assert_eq!(
        block_header("!!binary |"),
        Some((BlockHeader { folded: false, chomp: Chomp::Clip, indent: None }, true))
    );
    assert_eq!(
        block_header("!!binary   >-"),
        Some((BlockHeader { folded: true, chomp: Chomp::Strip, indent: None }, true))
    );
    assert_eq!(block_header("!!binaryx |"), None);
    assert_eq!(block_header("!!str |"), None);
}

/// libyaml's double-quoted escapes are code points, Syck's `\xHH` bytes.
#[test]
fn double_quoted_escapes_per_dialect() {
    for (inner, libyaml) in [
        ("a", Some("a")),
        (r"\x80", Some("\u{80}")),
        (r"\xC3\xA4", Some("\u{c3}\u{a4}")),
        (r"\u00e9\u263A", Some("é☺")),
        (r"\U0001F600", Some("😀")),
        (r"\N\_\L\P", Some("\u{85}\u{a0}\u{2028}\u{2029}")),
        (r#"\0\a\b\t\	\n\v\f\r\e\ \"\'\/\\"#, Some("\0\x07\x08\t\t\n\x0b\x0c\r\x1b \"'/\\")),
        ("ä\\tü", Some("ä\tü")),
        (r"\uD800", None),
        (r"\U00110000", None),
        (r"\x8", None),
        (r"\xG0", None),
        (r"\q", None),
        ("\\", None),
        ("a\"b", None),
    ] {
        assert_eq!(
            decode_double_quoted(inner.as_bytes(), Dialect::Libyaml).map(|b| String::from_utf8(b).unwrap()).as_deref(),
            libyaml,
            "{inner}"
        );
    }
    assert_eq!(fast_scalar(r#""\xC3\xA4""#, Dialect::Syck).as_deref(), Some("ä"));
    assert_eq!(fast_scalar(r#""\xC3\xA4""#, Dialect::Libyaml).as_deref(), Some("Ã¤"));
    assert_eq!(fast_scalar(r#""\x80""#, Dialect::Libyaml).as_deref(), Some("\u{80}"));
    assert_eq!(
        fast_scalar(r#""\x80""#, Dialect::Syck).map(|s| path_of_decoded(s).as_bytes().to_vec()),
        Some(vec![0x80])
    );
    assert_eq!(fast_scalar(r#""\u00e9""#, Dialect::Syck), None, "Syck writes no \\u");
}

#[test]
fn base64_as_yaml_binary_holds_it() {
    for (text, want) in [
        ("", Some(&b""[..])),
        ("Zg==", Some(b"f")),
        ("Zm8=", Some(b"fo")),
        ("Zm9v", Some(b"foo")),
        ("Y2Fm6S50eHQ=", Some(b"caf\xe9.txt")),
        ("Y2Fm\n6S50\r\n eHQ=\n", Some(b"caf\xe9.txt")),
        ("/+/+", Some(b"\xff\xef\xfe")),
        ("Zg=", None),
        ("Zg===", None),
        ("Z===", None),
        ("Zg==Zg==", None),
        ("Zm9v!", None),
        ("Zm-v", None),
    ] {
        assert_eq!(base64_decode(text).as_deref(), want, "{text:?}");
    }
}

/// yaml.v3 writes a name that is not UTF-8 as `!!binary`, on the line or
/// (70 base64 characters and more) as a literal block; both are read as
/// their bytes, by the line reader and (one line) by the strict path.
#[test]
fn binary_names_are_read_as_their_bytes() {
    let long = b"a/\xff".repeat(30);
    let b64 = |b: &[u8]| {
        const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for c in b.chunks(3) {
            let n = c.iter().enumerate().fold(0u32, |n, (i, &x)| n | u32::from(x) << (16 - 8 * i));
            for i in 0..4 {
                out.push(if i <= c.len() { A[(n >> (18 - 6 * i) & 63) as usize] as char } else { '=' });
            }
        }
        out
    };
    let block: String =
        b64(&long).as_bytes().chunks(70).map(|l| format!("        {}\n", std::str::from_utf8(l).unwrap())).collect();
    let text = format!(
        "meta:\n    interval: 1h\nrecent:\n    - epoch: 1.7e+09\n      path: !!binary {}\n      type: new\n    - epoch: 1.6e+09\n      path: !!binary |\n{block}      type: new\n",
        b64(b"caf\xe9.txt")
    );
    let rf = slow(&text);
    assert_eq!(paths(&rf), [&b"caf\xe9.txt"[..], &long]);
    let one = text[..text.find("    - epoch: 1.6e+09").unwrap()].to_string();
    assert_eq!(parse_syck(&one), Some(slow(&one)));
    assert_eq!(fast_scalar("!!binary ", Dialect::Libyaml), None);
    assert_eq!(fast_scalar("!!binary Zg=", Dialect::Libyaml), None);
    assert_eq!(fast_scalar("!foo x", Dialect::Libyaml), None);
}

/// Any indentation, either item style, any key order, in the line reader.
#[test]
fn the_line_reader_takes_any_indentation_and_key_order() {
    for body in [
        "    - epoch: 1.7e+09\n      path: a\n      type: new\n    - type: delete\n      epoch: 1.6e+09\n      path: b\n",
        "  - epoch: 1.7e+09\n    path: a\n    type: new\n  -\n    type: delete\n    epoch: 1.6e+09\n    path: b\n",
        "- epoch: 1.7e+09\n  path: a\n  type: new\n-   type: delete\n    epoch: 1.6e+09\n    path: b\n",
        "      -   epoch: 1.7e+09\n          path: a\n          type: new\n      - \n         type: delete\n         epoch: 1.6e+09\n         path: b\n",
    ] {
        let mut events = Vec::new();
        assert_eq!(fast_events(body, 0, false, Dialect::Libyaml, &mut events), Ok(true), "{body}");
        let got: Vec<_> = events.iter().map(|e| (e.epoch.as_deref(), e.path.as_deref(), e.kind.as_deref())).collect();
        assert_eq!(got, [(Some("1.7e+09"), Some("a"), Some("new")), (Some("1.6e+09"), Some("b"), Some("delete"))], "{body}");
    }
    for body in [
        "    - epoch: 1\n      path: a\n    type: new\n", // a key left of the keys' column
        "    - epoch: 1\n       path: a\n",               // right of it
        "    - epoch: 1\n  - epoch: 2\n",                 // an item at another column
        "    - epoch: 1\n      path: |-\n      type: new\n      x\n", // not a key after the block
    ] {
        assert_eq!(fast_events(body, 0, false, Dialect::Libyaml, &mut Vec::new()), Ok(false), "{body}");
    }
}

/// One unreadable item among yaml.v3 items is one skipped event.
#[test]
fn one_broken_compact_item_is_one_skipped_event() {
    let text = "meta:\n    interval: 1h\nrecent:\n    - epoch: 1.7e+09\n      path: a\n      type: new\n    - epoch: 1.6e+09\n      path: [x\n      type: new\n    - epoch: 1.5e+09\n      path: |-\n        b\n\n        c\n      type: new\n";
    let rf = slow(text);
    assert_eq!(paths(&rf), [&b"a"[..], b"b\n\nc"]);
    assert_eq!(rf.skipped.len(), 1, "{rf:?}");
    assert_eq!((rf.skipped[0].line, rf.skipped[0].epoch.as_str()), (Some(7), "1600000000"));
}

/// The general parser's budget grows with the document, so a valid file
/// in flow style with more than serde-saphyr's default 250,000 nodes is
/// read; the default stays for small ones.
#[test]
fn the_general_budget_grows_with_the_file() {
    let b = |len| general_options(len).budget.unwrap();
    assert_eq!(b(10).max_nodes, 250_000);
    assert_eq!(b(3_000_000).max_nodes, 3_000_000);
    assert_eq!(b(3_000_000).max_events, 3_000_000);
    assert_eq!(b(100 << 20).max_total_scalar_bytes, 100 << 20);
    assert_eq!(b(300 << 20).max_reader_input_bytes, Some(300 << 20));
    let items: Vec<String> =
        (0..70_000).map(|i| format!("{{epoch: '{}.5', path: p{i}, type: new}}", 1_800_000_000 - i)).collect();
    let text = format!("meta: {{interval: Z}}\nrecent: [{}]\n", items.join(",\n  "));
    let doc = general_parse(&text).unwrap();
    assert_eq!(doc.events.len(), 70_000);
}

proptest! {
    /// Block scalars of generated lines read as serde-saphyr (YAML 1.2,
    /// libyaml's reading) reads them.
    #[test]
    fn block_scalars_read_as_a_yaml_parser_reads_them(
        literal in any::<bool>(),
        chomp in 0..3usize,
        indicator in proptest::option::of(1..4usize),
        lines in proptest::collection::vec((0..3usize, "[a-z#: ]{0,4}", any::<bool>()), 0..6),
    ) {
        let header = format!("{}{}{}", if literal { "|" } else { ">" }, ["-", "", "+"][chomp], indicator.map_or(String::new(), |i| i.to_string()));
        let indent = 6 + indicator.unwrap_or(2);
        let mut first = true;
        let block: String = lines.iter().map(|(extra, text, blank)| {
            if *blank {
                return format!("{}\n", " ".repeat(*extra));
            }
            // Without an indicator the first line sets the indentation: no extra spaces there.
            let extra = if first && indicator.is_none() { 0 } else { *extra };
            first = false;
            let text = text.trim_start();
            format!("{}{}{}\n", " ".repeat(indent + extra), if text.is_empty() { "x" } else { text }, "")
        }).collect();
        let text = format!("meta: {{}}\nrecent:\n    - epoch: 1.5\n      path: {header}\n{block}      type: new\n");
        let mut events = Vec::new();
        let body = &text[text.find("    - epoch").unwrap()..];
        let ours = fast_events(body, 0, false, Dialect::Libyaml, &mut events).unwrap();
        let theirs: Result<GeneralDoc, _> = serde_saphyr::from_str(&text);
        match theirs {
            Ok(doc) if ours => {
                let path = doc.recent.unwrap().remove(0).path.map(|t| t.0);
                prop_assert_eq!(events[0].path.clone(), path, "{}", text);
            }
            Ok(_) => prop_assert!(false, "declined what YAML reads: {}", text),
            Err(_) => {}
        }
    }

    /// Strings as yaml.v3 double-quotes them (every non-ASCII or control
    /// character escaped as `\xHH`, `\uHHHH` or `\UHHHHHHHH`) decode to the
    /// same string, as serde-saphyr decodes them.
    #[test]
    fn libyaml_escapes_round_trip(s in "\\PC{0,8}|[\\x00-\\x1f\\u{80}-\\u{9f}\\u{a0}-\\u{ff}\\u{2028}\\u{10000}-\\u{10010}a]{0,8}") {
        let mut inner = String::new();
        for c in s.chars() {
            match u32::from(c) {
                0x22 => inner.push_str("\\\""),
                0x5c => inner.push_str("\\\\"),
                0x20..=0x7e => inner.push(c),
                v if v <= 0xff => inner.push_str(&format!("\\x{v:02X}")),
                v if v <= 0xffff => inner.push_str(&format!("\\u{v:04X}")),
                v => inner.push_str(&format!("\\U{v:08X}")),
            }
        }
        let ours = decode_double_quoted(inner.as_bytes(), Dialect::Libyaml).map(|b| String::from_utf8(b).unwrap());
        prop_assert_eq!(ours.as_deref(), Some(s.as_str()));
        let doc: std::collections::BTreeMap<String, String> = serde_saphyr::from_str(&format!("k: \"{inner}\"\n")).unwrap();
        prop_assert_eq!(&doc["k"], &s);
    }

    /// Exponent epochs in the compact layout: the strict path, the line
    /// reader and the outline agree, and order by value.
    #[test]
    fn compact_files_read_alike_by_every_reader(mut secs in proptest::collection::vec(1.0e9f64..2.0e9, 1..20)) {
        secs.sort_by(|a, b| b.partial_cmp(a).unwrap());
        secs.dedup();
        let mut text = String::from("meta:\n    interval: Z\nrecent:\n");
        for (i, s) in secs.iter().enumerate() {
            let e = format!("{s:e}").replace('e', "e+0");
            text.push_str(&format!("    - epoch: {e}\n      path: p/{i}\n      type: new\n"));
        }
        let strict = parse_syck(&text);
        prop_assert!(strict.is_some(), "{}", text);
        let strict = strict.unwrap();
        prop_assert_eq!(&strict, &slow(&text));
        prop_assert_eq!(outline(text.as_bytes()).unwrap(), Some(Outline::of(&strict)));
        let want: Vec<String> = secs.iter().map(|s| format!("{s}")).collect();
        let got: Vec<&str> = strict.events.iter().map(|e| e.epoch.as_str()).collect();
        prop_assert_eq!(got, want);
    }
}

proptest! {
    /// rrrgo's files cut, spliced and salted at random never make a reader
    /// panic: each gives a file, an error, or a strict-path decline, and
    /// where the strict path and the outline take one they agree with the
    /// full read.
    #[test]
    fn damaged_rrrgo_files_never_panic(
        which in 0..3usize,
        edits in proptest::collection::vec((any::<proptest::sample::Index>(), 0..4usize, "[ -~\n\t]{0,3}|\\|[-+2]?\n|!!binary |e\\+9|\\\\x8|\\\\u00"), 1..4),
    ) {
        let mut text = [GO_CONTROLS_Z, GO_CPAN_1H, GO_AWKWARD_Z][which].as_bytes().to_vec();
        for (at, cut, insert) in edits {
            let at = at.index(text.len() + 1);
            let end = (at + cut).min(text.len());
            text.splice(at..end, insert.bytes());
        }
        let full = crate::format::read::parse_bytes(&text, crate::Format::Yaml);
        if let Ok(t) = std::str::from_utf8(&text) {
            if let Some(strict) = parse_syck(t) {
                prop_assert_eq!(Some(&strict), full.as_ref().ok());
                prop_assert_eq!(outline(text.as_slice()).unwrap(), Some(Outline::of(&strict)));
            }
        }
    }
}

/// The item-wise reader finds yaml.v3's items by their dash column: a
/// line deeper than it belongs to the item (a nested list is one
/// unreadable event), a line at that column that is no item breaks the
/// structure (the file is refused, not read around it).
#[test]
fn the_itemwise_reader_finds_items_by_their_dash_column() {
    let head = "meta:\n    interval: 1h\nrecent:\n    - epoch: 1.7e+09\n      path: a\n      type: new\n";
    let nested = format!(
        "{head}    - epoch: 1.6e+09\n      path:\n        - x\n      type: new\n    - epoch: 1.5e+09\n      path: [y\n      type: new\n"
    );
    let rf = slow(&nested);
    assert_eq!(paths(&rf), [&b"a"[..]]);
    let skipped: Vec<(Option<usize>, &str)> = rf.skipped.iter().map(|s| (s.line, s.epoch.as_str())).collect();
    assert_eq!(skipped, [(Some(7), "1600000000"), (Some(11), "1500000000")], "{rf:?}");
    assert!(rf.skipped.iter().all(|s| s.reason.contains("cannot be read")), "{rf:?}");
    let stray = format!("{head}    junk: 1\n    - epoch: 1.6e+09\n      path: [x\n      type: new\n");
    assert!(parse(&stray).is_err(), "{:?}", parse(&stray));
}
