//! Names that are not UTF-8 (and control characters beside them), end to
//! end: the YAML and JSON formats against the real YAML::Syck 1.34 and the
//! real JSON::PP in both directions, the writers (init, update, watch,
//! fsck), a mirror pass through a real `rsync --daemon` on 127.0.0.1, and
//! `news` in text (escaped like `ls -b`) and `--json` (lossless).

use crate::util::names::{hex, make_tree, news_json, tree_files, unhex};
use crate::util::rsyncd::RsyncDaemon;
use crate::util::*;
use rrr::recentfile::{self, Format, RelPath};
use serde_json::Value;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Bytes that are no UTF-8: a lone continuation byte, 0xFF, 0xFE, a
/// truncated two- and three-byte character, an overlong `/`, an encoded
/// surrogate.
const BAD: &[&[u8]] = &[b"\x80", b"\xff", b"\xfe", b"\xc3", b"\xe2\x82", b"\xc0\xaf", b"\xed\xa0\x80"];

/// Names of the tests' byte strings: every bad sequence alone and in the
/// positions where YAML or Syck decide a style (start, end, beside a
/// space, quote, colon, hash, dash), beside valid UTF-8, tab, newline, CR
/// and other control characters.
fn byte_names() -> Vec<Vec<u8>> {
    let forms: &[&[u8]] = &[
        b"{}",
        b"{}{}",
        b"a{}",
        b"{}a",
        b"a{}b",
        b"dir/{}/f",
        b"id/A/x{}.tar.gz",
        b"{} ",
        b" {}",
        b"'{}",
        b"\"{}",
        b"a: {}",
        b"{}#",
        b"-{}",
        b"{}:",
        b"\xc3\xa9{}\xc3\xa9",
        b"{}\t",
        b"\t{}",
        b"{}\nx",
        b"{}\r",
        b"\r{}",
        b"x\x1b[1m{}",
        b"{}\x7f",
        b"\xc2\x85{}",
        b"back\\{}",
    ];
    let mut names = Vec::new();
    for bad in BAD {
        for form in forms {
            let mut n = Vec::new();
            let mut parts = form.split(|&b| b == b'{').peekable();
            // `{}` is the only use of `{` in the forms.
            while let Some(p) = parts.next() {
                n.extend_from_slice(p.strip_prefix(b"}").unwrap_or(p));
                if parts.peek().is_some() {
                    n.extend_from_slice(bad);
                }
            }
            names.push(n);
        }
    }
    names.push(b"caf\xe9 \xe0 la cr\xe8me.txt".to_vec());
    names.push(b"\xff\xfe\xfd".to_vec());
    names
}

/// Run perl with `script` and `input` on stdin; its stdout.
fn perl(args: &[&str], input: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in");
    fs::write(&file, input).unwrap();
    let out = Command::new("perl").args(args).stdin(fs::File::open(&file).unwrap()).output().unwrap();
    assert!(out.status.success(), "perl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn syck(commands: &str) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/util/syck.pl");
    perl(&[script.to_str().unwrap()], commands)
}

/// Whether YAML::Syck loses a trailing CR of `name` (it writes such a name
/// plain and reads the CR as part of the line end).
fn syck_loses(name: &[u8]) -> bool {
    name.ends_with(b"\r") && !recentfile::syck::scalar_bytes(name).starts_with(b"\"")
}

fn doc(names: &[Vec<u8>]) -> recentfile::Recentfile {
    let mut rf = recentfile::Recentfile::from_events(
        names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let epoch = rrr::epoch::Epoch::parse(&format!("{}.5", 1_700_100_000 - i as u64)).unwrap();
                recentfile::Event::new(epoch, n.clone(), recentfile::EventKind::New)
            })
            .collect(),
    );
    rf.meta.interval = Some("1h".into());
    rf.meta.protocol = Some("1".into());
    rf
}

fn producer() -> recentfile::Producer {
    recentfile::Producer { program: "rrr".into(), time: rrr::epoch::Epoch::parse("1700100000.5").unwrap() }
}

#[test]
fn yaml_bytes_both_ways_against_yaml_syck() {
    let names = byte_names();
    let dir = tempfile::tempdir().unwrap();
    // Syck's Dump of each name is rrr's scalar.
    let dumps = syck(&names.iter().map(|n| format!("dump {}\n", hex(n))).collect::<String>());
    let mut wrong = Vec::new();
    for (n, d) in names.iter().zip(dumps.lines()) {
        let ours = [b"--- \npath: ".as_slice(), &recentfile::syck::scalar_bytes(n), b"\n"].concat();
        if ours != unhex(d) {
            wrong.push(format!(
                "{:?}: Syck {:?}, rrr {:?}",
                RelPath::from(n.clone()),
                RelPath::from(unhex(d)),
                RelPath::from(ours)
            ));
        }
    }
    assert!(wrong.is_empty(), "{} of {} names dumped differently:\n{}", wrong.len(), names.len(), wrong.join("\n"));

    // rrr writes → Syck loads the same bytes; Syck writes → rrr reads the same bytes.
    let ours = dir.path().join("rrr.yaml");
    fs::write(&ours, recentfile::serialize(&doc(&names), Format::Yaml, &producer())).unwrap();
    let theirs = dir.path().join("syck.yaml");
    let hexes: Vec<String> = names.iter().map(|n| hex(n)).collect();
    let answers = syck(&format!("load {}\nwrite {} {}\n", ours.display(), theirs.display(), hexes.join(" ")));
    let answers: Vec<&str> = answers.lines().collect();
    let loaded: Vec<&str> = answers[0].strip_prefix("ok ").expect("Syck loads rrr's file").split(' ').collect();
    assert_eq!(loaded.len(), names.len());
    for (n, got) in names.iter().zip(&loaded) {
        let want = if syck_loses(n) { &n[..n.len() - 1] } else { &n[..] };
        assert_eq!(
            unhex(got),
            want,
            "Syck loads rrr's {:?} as {:?}",
            RelPath::from(n.clone()),
            RelPath::from(unhex(got))
        );
    }
    assert_eq!(answers[1], "ok");
    let rf = recentfile::parse_bytes(&fs::read(&theirs).unwrap(), Format::Yaml).unwrap();
    assert!(rf.skipped.is_empty(), "{:?}", rf.skipped);
    let read: Vec<&[u8]> = rf.events.iter().map(|e| e.path.as_bytes()).collect();
    let want: Vec<&[u8]> = names.iter().map(Vec::as_slice).collect();
    assert_eq!(read, want, "rrr reads Syck's file");
    // And rrr reads its own file back to the same bytes, name for name.
    let back = recentfile::parse_bytes(&fs::read(&ours).unwrap(), Format::Yaml).unwrap();
    assert_eq!(back.events.iter().map(|e| e.path.as_bytes()).collect::<Vec<_>>(), want);
    eprintln!("{} byte names: Dump, LoadFile and rrr's reader agree", names.len());
}

/// What the Perl tools' JSON serializer (Data::Serializer::JSON:
/// `JSON->new->utf8`) does, with the real JSON::PP.
const PERL_JSON: &str = r#"
use JSON::PP; my $j = JSON::PP->new->utf8->canonical;
my ($cmd, $file) = @ARGV;
if ($cmd eq "load") {
    local $/; open my $fh, "<", $file or die; my $d = $j->decode(<$fh>);
    print join(" ", map { unpack "H*", $_->{path} } @{$d->{recent}}), "\n";
} else {
    my @paths = map { chomp; pack "H*", $_ } <STDIN>;
    my $i = 0;
    my @recent = map { { epoch => sprintf("%d.5", 1700100000 - $i++), path => $_, type => "new" } } @paths;
    open my $fh, ">", $file or die;
    print $fh $j->encode({ meta => { interval => "1h", protocol => 1, serializer_suffix => ".json" }, recent => \@recent });
}
"#;

#[test]
fn json_bytes_both_ways_against_json_pp() {
    let mut names = byte_names();
    names.extend([b"plain/a.txt".to_vec(), "ü/é".as_bytes().to_vec()]);
    let dir = tempfile::tempdir().unwrap();
    let ours = dir.path().join("rrr.json");
    fs::write(&ours, recentfile::serialize(&doc(&names), Format::Json, &producer())).unwrap();
    let loaded = perl(&["-e", PERL_JSON, "load", ours.to_str().unwrap()], "");
    let loaded: Vec<Vec<u8>> = loaded.trim_end().split(' ').map(unhex).collect();
    assert_eq!(loaded, names, "JSON::PP reads rrr's JSON");
    let theirs = dir.path().join("perl.json");
    let input: String = names.iter().map(|n| hex(n) + "\n").collect();
    perl(&["-e", PERL_JSON, "write", theirs.to_str().unwrap()], &input);
    let rf = recentfile::parse_bytes(&fs::read(&theirs).unwrap(), Format::Json).unwrap();
    let read: Vec<Vec<u8>> = rf.events.iter().map(|e| e.path.as_bytes().to_vec()).collect();
    assert_eq!(read, names, "rrr reads JSON::PP's JSON");
}

/// Names for the writer tests: a file name that is not UTF-8 in several
/// shapes, one inside a directory that is not UTF-8 either, and control
/// characters beside them.
fn tree_names() -> Vec<Vec<u8>> {
    [
        &b"lone\x80"[..],
        b"\xff",
        b"trunc\xe2\x82",
        b"caf\xe9/\xe9t\xe9.txt",
        b"ok\xc3\xa9-bad\xc3",
        b"tab\t\xfe",
        b"nl\n\xff",
        b"cr\xff\r",
    ]
    .iter()
    .map(|n| n.to_vec())
    .collect()
}

#[test]
fn init_update_fsck_index_names_that_are_not_utf8_and_a_mirror_copies_them() {
    let tmp = tempfile::tempdir().unwrap();
    let (origin, target) = (tmp.path().join("origin"), tmp.path().join("target"));
    let names = tree_names();
    let (first, later) = names.split_at(4);
    write(&origin, "plain.txt", "plain\n");
    make_tree(&origin, first);
    ok(&["init", s(&origin)]);
    assert_eq!(news_json(&origin), tree_files(&origin), "init indexes every name");

    // update: names as arguments (bytes, not text) and as --stdin0 records.
    make_tree(&origin, later);
    let p = principal(&origin);
    let o = Rrr::new().args(["update", &p]).arg(origin.join(OsStr::from_bytes(&later[0]))).output();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let records: Vec<u8> = later[1..].iter().flat_map(|n| [b"new ".as_slice(), n, b"\0"].concat()).collect();
    let input = tmp.path().join("records");
    fs::write(&input, &records).unwrap();
    let o = Rrr::new().args(["update", &p, "--stdin0"]).stdin(fs::read(&input).unwrap()).output();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(news_json(&origin), tree_files(&origin), "update records every name");
    let fsck = rrr(&["fsck", &p]);
    assert_eq!(fsck.status.code(), Some(0), "{}{}", stdout(&fsck), stderr(&fsck));

    // fsck finds a name missing from the index, and --repair records it.
    make_tree(&origin, &[b"late\xf0.txt".to_vec()]);
    let fsck = rrr(&["fsck", &p, "--json"]);
    assert_eq!(fsck.status.code(), Some(1), "{}", stderr(&fsck));
    assert!(stdout(&fsck).contains(&format!(r#""path":{{"bytes":"{}"}}"#, hex(b"late\xf0.txt"))), "{}", stdout(&fsck));
    let repair = rrr(&["fsck", &p, "--repair"]);
    assert_eq!(repair.status.code(), Some(1), "a repair reports what it found: {}", stderr(&repair));
    assert_eq!(news_json(&origin), tree_files(&origin));

    // news in text: one line per path, each name escaped as `ls -b` shows it.
    let text = ok(&["news", "--local", &p]);
    for shown in [
        "lone\\200",
        "\\377",
        "trunc\\342\\202",
        "caf\\351/\\351t\\351.txt",
        "ok\u{e9}-bad\\303",
        "tab\\t\\376",
        "nl\\n\\377",
        "cr\\377\\r",
        "late\\360.txt",
    ] {
        assert!(text.contains(&format!("\tnew\t{shown}\n")), "{shown} not in:\n{text}");
    }
    assert!(std::str::from_utf8(text.as_bytes()).is_ok());

    // A mirror pass through a real rsync daemon reproduces every name, byte for byte.
    let d = RsyncDaemon::start(&[("origin", &origin)]);
    let src = format!("{}/RECENT.recent", d.url("origin"));
    let o = rrr(&["rmirror", "--remote", &src, "--localroot", s(&target)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(tree_files(&target), tree_files(&origin));
    // Then an incremental pass: --files-from lists of exactly these bytes.
    let more = vec![b"inc\x81/\xfa\tx".to_vec(), b"inc-\xc3\x28".to_vec()];
    make_tree(&origin, &more);
    let args: Vec<PathBuf> = more.iter().map(|n| origin.join(OsStr::from_bytes(n))).collect();
    let o = Rrr::new().args(["update", &p]).args(&args).output();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = rrr(&["rmirror", "--remote", &src, "--localroot", s(&target), "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(stdout(&o).lines().last().unwrap()).unwrap();
    assert_eq!(v["transferred"], 2, "{v}");
    assert_eq!(tree_files(&target), tree_files(&origin));
    for n in tree_files(&origin) {
        let (theirs, ours) = (origin.join(OsStr::from_bytes(&n)), target.join(OsStr::from_bytes(&n)));
        assert_eq!(fs::read(ours).unwrap(), fs::read(theirs).unwrap());
    }
    // A delete of such a name reaches the mirror too.
    fs::remove_file(origin.join(OsStr::from_bytes(b"\xff"))).unwrap();
    let o = Rrr::new().args(["update", &p, "--delete"]).arg(OsStr::from_bytes(b"\xff")).output();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = rrr(&["rmirror", "--remote", &src, "--localroot", s(&target)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(tree_files(&target), tree_files(&origin));
}

#[test]
fn watch_records_names_that_are_not_utf8() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("origin");
    write(&root, "plain.txt", "plain\n");
    ok(&["init", s(&root)]);
    let daemon = crate::watch::Daemon::start(&root, &[]);
    make_tree(&root, &tree_names());
    // A directory that is not UTF-8, moved in whole.
    let outside = tmp.path().join(OsStr::from_bytes(b"moved\xfd"));
    make_tree(&outside, &[b"in\xfc".to_vec()]);
    fs::rename(&outside, root.join(OsStr::from_bytes(b"moved\xfd"))).unwrap();
    let all = poll_until(std::time::Duration::from_secs(20), || news_json(&root) == tree_files(&root));
    let (code, log) = daemon.stop();
    assert!(all, "listed {:?}\nfiles {:?}\n{log}", news_json(&root), tree_files(&root));
    assert_eq!(code, 0, "{log}");
    assert!(!log.contains("\"level\":\"warn"), "{log}");
    let fsck = rrr(&["fsck", &principal(&root)]);
    assert_eq!(fsck.status.code(), Some(0), "{}{}", stdout(&fsck), stderr(&fsck));
}
