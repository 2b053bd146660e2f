//! Names with any bytes against the Perl reference itself,
//! File::Rsync::Mirror::Recent 0.4.3, in both directions: its
//! `Recentfile::update` writes and rrr reads, rrr writes and its
//! `recent_events` reads, `rrr rmirror` of a reference-written origin and
//! the reference's `rmirror` of an rrr origin.
//!
//! The reference is not on CPAN mirrors CI reaches, so these tests are
//! `#[ignore]` and skip unless `RRR_PERL_REFERENCE` names its `lib/`:
//! `RRR_PERL_REFERENCE=/path/to/rersyncrecent/lib cargo test --test
//! integration -- --ignored perl_reference`.

use crate::util::names::{hex, make_tree, news_json, tree_files, unhex};
use crate::util::rsyncd::RsyncDaemon;
use crate::util::*;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The reference's `lib/`, or `None` (with a note why) when unset.
pub(crate) fn reference() -> Option<PathBuf> {
    match std::env::var_os("RRR_PERL_REFERENCE") {
        Some(lib) if Path::new(&lib).join("File/Rsync/Mirror/Recentfile.pm").is_file() => Some(lib.into()),
        Some(lib) => panic!("RRR_PERL_REFERENCE={lib:?} holds no File/Rsync/Mirror/Recentfile.pm"),
        None => {
            eprintln!(
                "skipped: set RRR_PERL_REFERENCE to the lib/ of File::Rsync::Mirror::Recent 0.4.3 \
                 (needs Data::Float, accessors, File::Rsync, Data::Serializer, YAML::Syck)"
            );
            None
        }
    }
}

/// Generated names: non-UTF-8 bytes (lone continuation byte, 0xFF, a
/// truncated two-, three- and four-byte character), tab, newline, CR,
/// other C0 controls and DEL, each at the start, inside and at the end of
/// a name, in a directory that is not UTF-8 either, and plain names beside
/// them.
fn names() -> Vec<Vec<u8>> {
    let odd: &[&[u8]] = &[
        b"\x80",
        b"\xff",
        b"\xc3",
        b"\xe2\x82",
        b"\xf0\x9f\x98",
        b"\t",
        b"\n",
        b"\r",
        b"\x01",
        b"\x07",
        b"\x1b",
        b"\x1f",
        b"\x7f",
    ];
    let mut out = vec![b"plain.txt".to_vec(), b"dir/plain two".to_vec(), "ü/é.txt".as_bytes().to_vec()];
    for (i, o) in odd.iter().enumerate() {
        out.push([*o, format!("start{i}").as_bytes()].concat());
        out.push([format!("in{i}-").as_bytes(), o, b"-x"].concat());
        out.push([format!("end{i}-").as_bytes(), o].concat());
        out.push([b"d\xfe".as_slice(), format!("{i}/").as_bytes(), o, b"f"].concat());
    }
    out.retain(|n| !syck_loses(n));
    out.sort();
    out
}

/// Whether YAML::Syck loses the trailing CR of `name`: its Dump writes
/// such a name plain (`path: end-\r\n`) and its Load takes the CR as part
/// of the line end. rrr writes the same bytes (docs/decisions.md) and reads the
/// CR back, but the reference reads rrr's file without it, and its own
/// update re-reads and rewrites its files, so its files lack the CR. The
/// tests pin that loss on its own.
fn syck_loses(name: &[u8]) -> bool {
    name.ends_with(b"\r") && !rrr::recentfile::syck::scalar_bytes(name).starts_with(b"\"")
}

/// A name Syck writes plain with a trailing CR.
const LOSSY: &[u8] = b"end-\r";

/// Perl with the reference on @INC; `script` gets `args`, `input` on stdin.
fn perl(lib: &Path, script: &str, args: &[&str], input: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in");
    fs::write(&file, input).unwrap();
    let out = Command::new("perl")
        .arg("-I")
        .arg(lib)
        .args(["-e", script])
        .args(args)
        .stdin(fs::File::open(&file).unwrap())
        .output()
        .unwrap();
    assert!(out.status.success(), "perl: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// What `rrr-update` does per file, through `Recentfile` (the script
/// itself loads `Recent.pm`, which needs List::Pairwise): `update` each
/// absolute path as new, then aggregate with force twice.
const PERL_UPDATE: &str = r#"
use strict; use warnings;
use File::Rsync::Mirror::Recentfile;
my ($root) = @ARGV;
my $rf = File::Rsync::Mirror::Recentfile->new(
    filenameroot => "RECENT", interval => q(1h), localroot => $root,
    aggregator => [qw(6h 1d 1W 1M 1Q 1Y Z)], serializer_suffix => ".yaml");
for my $hex (map { chomp; $_ } <STDIN>) {
    $rf->update($root . "/" . pack("H*", $hex), "new");
}
$rf->aggregate(force => 1) for 1, 2;
"#;

/// The reference reading a principal: every event's path in hex, a line each.
const PERL_EVENTS: &str = r#"
use strict; use warnings;
use File::Rsync::Mirror::Recentfile;
my $rf = File::Rsync::Mirror::Recentfile->new_from_file($ARGV[0]);
print unpack("H*", $_->{path}), "\n" for @{ $rf->recent_events };
"#;

/// Where the two lists differ, each name in hex.
fn difference(want: &[Vec<u8>], got: &[Vec<u8>]) -> String {
    let missing: Vec<String> = want.iter().filter(|n| !got.contains(n)).map(|n| hex(n)).collect();
    let extra: Vec<String> = got.iter().filter(|n| !want.contains(n)).map(|n| hex(n)).collect();
    format!("missing {missing:?}\nextra {extra:?}")
}

#[test]
#[ignore = "needs RRR_PERL_REFERENCE"]
fn perl_reference_writes_rrr_reads_every_byte() {
    let Some(lib) = reference() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("origin");
    let names = names();
    make_tree(&root, &names);
    let input: String = names.iter().map(|n| hex(n) + "\n").collect();
    perl(&lib, PERL_UPDATE, &[s(&root)], &input);
    let read = news_json(&root);
    assert!(read == names, "rrr reads the reference's events:\n{}", difference(&names, &read));
    let fsck = rrr(&["fsck", &principal(&root)]);
    assert_eq!(fsck.status.code(), Some(0), "{}{}", stdout(&fsck), stderr(&fsck));
    eprintln!("{} names: the reference writes, rrr reads them byte for byte, fsck clean", names.len());

    // A plain name ending in CR: the reference writes it so that it reads back without the CR.
    assert!(syck_loses(LOSSY));
    make_tree(&root, &[LOSSY.to_vec()]);
    perl(&lib, PERL_UPDATE, &[s(&root)], &(hex(LOSSY) + "\n"));
    let read = news_json(&root);
    assert!(read.contains(&LOSSY[..LOSSY.len() - 1].to_vec()) && !read.contains(&LOSSY.to_vec()), "{read:?}");
}

#[test]
#[ignore = "needs RRR_PERL_REFERENCE"]
fn rrr_writes_perl_reference_reads_every_byte() {
    let Some(lib) = reference() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("origin");
    let names = names();
    let (first, later) = names.split_at(names.len() / 2);
    make_tree(&root, first);
    ok(&["init", s(&root)]);
    // The rest through `update --stdin0`, as bytes, not text.
    make_tree(&root, later);
    let records: Vec<u8> = later.iter().flat_map(|n| [b"new ".as_slice(), n, b"\0"].concat()).collect();
    let o = Rrr::new().args(["update", &principal(&root), "--stdin0"]).stdin(records).output();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut read: Vec<Vec<u8>> = perl(&lib, PERL_EVENTS, &[&principal(&root)], "").lines().map(unhex).collect();
    read.sort();
    assert!(read == names, "the reference reads rrr's events:\n{}", difference(&names, &read));
    eprintln!("{} names: rrr writes, the reference reads them byte for byte", names.len());

    // rrr writes a plain name ending in CR as Syck does, and the reference reads it without the CR.
    make_tree(&root, &[LOSSY.to_vec()]);
    let o = Rrr::new().args(["update", &principal(&root), "--stdin0"]).stdin([b"new ", LOSSY, b"\0"].concat()).output();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let read: Vec<Vec<u8>> = perl(&lib, PERL_EVENTS, &[&principal(&root)], "").lines().map(unhex).collect();
    assert_eq!(read[0], &LOSSY[..LOSSY.len() - 1], "the reference reads {}", hex(&read[0]));
}

#[test]
#[ignore = "needs RRR_PERL_REFERENCE"]
fn rrr_mirrors_a_perl_reference_origin_byte_for_byte() {
    let Some(lib) = reference() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let (origin, target) = (tmp.path().join("origin"), tmp.path().join("target"));
    let names = names();
    make_tree(&origin, &names);
    let input: String = names.iter().map(|n| hex(n) + "\n").collect();
    perl(&lib, PERL_UPDATE, &[s(&origin)], &input);
    let d = RsyncDaemon::start(&[("origin", &origin)]);
    let src = format!("{}/RECENT.recent", d.url("origin"));
    let o = rrr(&["rmirror", "--remote", &src, "--localroot", s(&target)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let got = tree_files(&target);
    assert!(got == names, "the mirror holds:\n{}", difference(&names, &got));
    for n in &names {
        let (theirs, ours) = (origin.join(OsStr::from_bytes(n)), target.join(OsStr::from_bytes(n)));
        assert_eq!(fs::read(ours).unwrap(), fs::read(theirs).unwrap(), "{}", hex(n));
    }
}

/// The reference's `rmirror` for one pass, as `rrr-client` sets it up.
const PERL_RMIRROR: &str = r#"
use strict; use warnings;
use File::Rsync::Mirror::Recent;
my ($remote, $local) = @ARGV;
File::Rsync::Mirror::Recent->new(
    localroot => $local, remote => $remote, max_files_per_connection => 5000,
    rsync_options => { links => 1, times => 1, checksum => 0 },
)->rmirror;
"#;

/// `Recent.pm` imports `mapp` and `grepp` from List::Pairwise (no Debian
/// package), which only its `overview` (bin/rrr-overview) calls. Where the
/// module is missing, a stand-in of those two functions goes into `dir`
/// (put it on `@INC` after the reference): each calls its block once per
/// pair of the list with `$a` and `$b` set in the caller's package, as
/// List::Pairwise documents; `mapp` returns what the blocks return,
/// `grepp` the pairs whose block is true (in scalar context their count).
pub(crate) fn list_pairwise_stand_in(dir: &Path) {
    let has = Command::new("perl").args(["-MList::Pairwise", "-e1"]).output().unwrap();
    if !has.status.success() {
        eprintln!("List::Pairwise is missing: a stand-in of mapp and grepp loads Recent.pm");
        fs::create_dir_all(dir.join("List")).unwrap();
        fs::write(dir.join("List/Pairwise.pm"), LIST_PAIRWISE).unwrap();
    }
}

/// The stand-in of List::Pairwise's `mapp` and `grepp` ([`list_pairwise_stand_in`]).
const LIST_PAIRWISE: &str = r#"package List::Pairwise;
use strict; use warnings;
use Exporter 'import';
our @EXPORT_OK = qw(mapp grepp);
sub _pairs {
    my ($code, $pkg, $keep, @list) = @_;
    no strict 'refs';
    my @out;
    while (@list) {
        my ($x, $y) = splice @list, 0, 2;
        local (*{"${pkg}::a"}, *{"${pkg}::b"}) = (\$x, \$y);
        push @out, $keep ? ($code->() ? ($x, $y) : ()) : $code->();
    }
    return @out;
}
sub mapp (&@) { my $code = shift; return _pairs($code, scalar caller, 0, @_) }
sub grepp (&@) {
    my $code = shift;
    my @out = _pairs($code, scalar caller, 1, @_);
    return wantarray ? @out : @out / 2;
}
1;
"#;

#[test]
#[ignore = "needs RRR_PERL_REFERENCE"]
fn perl_reference_mirrors_an_rrr_origin_byte_for_byte() {
    let Some(lib) = reference() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let (origin, target, shim) = (tmp.path().join("origin"), tmp.path().join("target"), tmp.path().join("shim"));
    list_pairwise_stand_in(&shim);
    // The reference hands rsync its paths one a line (`--files-from`
    // without `--from0`), so rsync splits a name at a newline or CR, fails
    // (code 23) and the reference retries it without end: such names are
    // left out here.
    let names: Vec<Vec<u8>> = names().into_iter().filter(|n| !n.contains(&b'\n') && !n.contains(&b'\r')).collect();
    make_tree(&origin, &names);
    ok(&["init", s(&origin)]);
    // The reference fetches every file the principal's aggregator names and
    // retries a missing one without end: write them all.
    ok(&["aggregate", "--force", &principal(&origin)]);
    let d = RsyncDaemon::start(&[("origin", &origin)]);
    let src = format!("{}/RECENT.recent", d.url("origin"));
    // The reference makes its temp files in the localroot and expects it to exist.
    fs::create_dir(&target).unwrap();
    // A guard against the reference's endless retry, not a measure of time.
    let out = Command::new("timeout")
        .args(["300", "perl", "-I"])
        .arg(&lib)
        .arg("-I")
        .arg(&shim)
        .args(["-e", PERL_RMIRROR, &src, s(&target)])
        .output()
        .unwrap();
    assert!(out.status.success(), "the reference's rmirror: {}", String::from_utf8_lossy(&out.stderr));
    // The reference leaves its copy of the principal behind as a temp file.
    let got: Vec<Vec<u8>> = tree_files(&target).into_iter().filter(|n| !n.starts_with(b".FRMRecent-")).collect();
    assert!(got == names, "the reference's mirror holds:\n{}", difference(&names, &got));
    for n in &names {
        let (theirs, ours) = (origin.join(OsStr::from_bytes(n)), target.join(OsStr::from_bytes(n)));
        assert_eq!(fs::read(ours).unwrap(), fs::read(theirs).unwrap(), "{}", hex(n));
    }
}
