//! The Perl 0.4.3 tools (File::Rsync::Mirror::Recent, the reference) on a
//! signed, hashed rrr origin (issue 34): its client (one `rmirror` pass
//! with `rrr-client`'s options, and bin/rrr-client itself) mirrors it byte
//! for byte and leaves the beacon alone, its `news` and `overview` read it as
//! rrr does, its writer rewrites a hashed recentfile (what it keeps and
//! what it drops is asserted here and documented in docs/protocol.md
//! 17.4), and its `rrr-fsck` sees the beacon files as unindexed.
//!
//! Gated like tests/perl_reference.rs: `#[ignore]`, and skipped unless
//! `RRR_PERL_REFERENCE` names the reference's `lib/`.

use crate::perl_reference::{list_pairwise_stand_in, reference};
use crate::trust::keypair;
use crate::util::rsyncd::RsyncDaemon;
use crate::util::*;
use recentfile::beacon::{Beacon, FileDigest};
use recentfile::{EventKind, Format};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

/// The principal's beacon and its signature, by name.
const BEACON: &str = "RECENT-1h.yaml.beacon.json";
const BEACON_SIG: &str = "RECENT-1h.yaml.beacon.json.sig";

/// What every test here starts from: the reference's `lib/`, a temp dir,
/// and in it the List::Pairwise stand-in `shim` for `@INC`.
struct Reference {
    lib: PathBuf,
    shim: PathBuf,
    tmp: tempfile::TempDir,
}

/// [`Reference`], or `None` (the test skips) when `RRR_PERL_REFERENCE`
/// is unset.
fn setup() -> Option<Reference> {
    let lib = reference()?;
    let tmp = tempfile::tempdir().unwrap();
    let shim = tmp.path().join("shim");
    list_pairwise_stand_in(&shim);
    Some(Reference { lib, shim, tmp })
}

/// A signed, hashed origin: its root, the signing key and its allowed_signers file.
struct SignedOrigin {
    root: PathBuf,
    key: PathBuf,
    allowed: PathBuf,
}

/// File `i`'s content: `len` bytes that differ between files.
fn content(i: usize, len: usize) -> Vec<u8> {
    (0..len).map(|k| (k * 31 + i * 7) as u8).collect()
}

impl SignedOrigin {
    /// An origin under `dir` made by rrr's writers, each with `--sign-key`
    /// and `--hash sha256`: `init` of three files, an `update` of a
    /// changed one and of new ones in subdirectories, an `update --delete`,
    /// and an `aggregate --force` (the reference's client fetches every
    /// file the principal's aggregator names).
    fn new(dir: &Path) -> SignedOrigin {
        let (key, allowed) = keypair(dir, "origin-key");
        let root = dir.join("origin");
        let o = SignedOrigin { root, key, allowed };
        o.put(&["empty", "a.txt", "gone.txt"], 0);
        fs::write(o.root.join("a.txt"), content(1, 6)).unwrap();
        ok(&["init", "--sign-key", s(&o.key), "--hash", "sha256", s(&o.root)]);
        o.put(&["a.txt", "dir/b.bin", "dir/sub/c name.txt", "big/d.tar.gz"], 1);
        o.update(&["a.txt", "dir/b.bin", "dir/sub/c name.txt", "big/d.tar.gz"]);
        fs::remove_file(o.root.join("gone.txt")).unwrap();
        ok(&["update", "--delete", "--sign-key", s(&o.key), &principal(&o.root), "gone.txt"]);
        ok(&["aggregate", "--force", "--sign-key", s(&o.key), &principal(&o.root)]);
        o
    }

    /// Write `paths` (file `i`'s size grows with its place and `round`).
    fn put(&self, paths: &[&str], round: usize) {
        for (i, p) in paths.iter().enumerate() {
            let f = self.root.join(p);
            fs::create_dir_all(f.parent().unwrap()).unwrap();
            let len = if *p == "empty" { 0 } else { [100, 4096, 300_000][i % 3] + round };
            fs::write(f, content(i + 10 * round, len)).unwrap();
        }
    }

    /// `rrr update --sign-key --hash sha256` of `paths`.
    fn update(&self, paths: &[&str]) {
        let mut args = vec!["update", "--sign-key", s(&self.key), "--hash", "sha256"];
        let p = principal(&self.root);
        args.push(&p);
        args.extend(paths);
        ok(&args);
    }

    fn principal(&self) -> String {
        principal(&self.root)
    }
}

/// The events of one recentfile `root/name`, parsed by rrr's reader.
fn events(root: &Path, name: &str) -> Vec<recentfile::Event> {
    let format = if name.ends_with(".json") { Format::Json } else { Format::Yaml };
    recentfile::parse_bytes(&fs::read(root.join(name)).unwrap(), format).unwrap().events
}

/// Every recentfile's events with their recorded digest: path → digest
/// per file name.
fn digests(root: &Path, name: &str) -> BTreeMap<String, Option<FileDigest>> {
    events(root, name)
        .into_iter()
        .map(|e| (String::from_utf8(e.path.as_bytes().to_vec()).unwrap(), e.digest()))
        .collect()
}

/// The current recentfiles of `root`, by name.
fn recentfile_names(root: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("RECENT-") && n.ends_with(".yaml"))
        .collect();
    v.sort();
    v
}

/// Perl with the reference and the List::Pairwise stand-in in `shim` on
/// `@INC`: `-e script` or a script file, with `args`.
fn perl_out(lib: &Path, shim: &Path, script: &[&str], args: &[&str]) -> Output {
    Command::new("perl").arg("-I").arg(lib).arg("-I").arg(shim).args(script).args(args).output().unwrap()
}

/// One of the reference's bin/ scripts (beside its lib/).
fn bin(lib: &Path, name: &str) -> String {
    s(&lib.parent().unwrap().join("bin").join(name)).to_string()
}

/// The checks of the origin itself: every `new` event of a present file
/// carries the size and sha256 of the file's bytes, and the collection is
/// signed and clean for rrr's fsck.
fn assert_hashed(o: &SignedOrigin) {
    for name in recentfile_names(&o.root) {
        for e in events(&o.root, &name) {
            let path = o.root.join(String::from_utf8(e.path.as_bytes().to_vec()).unwrap());
            if e.kind == EventKind::New && path.is_file() {
                assert_eq!(e.digest(), Some(FileDigest::of(&fs::read(&path).unwrap())), "{name}: {}", path.display());
            }
        }
    }
    assert!(o.root.join(BEACON_SIG).is_file());
    ok(&["fsck", &o.principal()]);
}

/// What `rrr-client` runs, for one pass instead of its endless loop:
/// `rmirror` with the script's exact options.
const PERL_CLIENT: &str = r#"
use strict; use warnings;
use File::Rsync::Mirror::Recent;
my ($remote, $local) = @ARGV;
File::Rsync::Mirror::Recent->new(
    ignore_link_stat_errors => 1, localroot => $local, remote => $remote,
    max_files_per_connection => 20000,
    rsync_options => { compress => 1, links => 1, 'safe-links' => 1, times => 1,
                       checksum => 0, timeout => 30 },
    verbose => 0,
)->rmirror("skip-deletes" => 0);
"#;

/// `target`, made by the reference's client, holds every file of
/// `origin` byte for byte (the deleted one absent), and its recentfiles
/// (hashed events and all: a Perl tier passes the hashes on), but neither
/// the beacon nor its signature, which are neither events nor
/// recentfiles to the reference.
fn assert_perl_mirror_of(origin: &Path, target: &Path) {
    // Every file byte for byte, the deleted one absent.
    let theirs = crate::util::names::tree_files(origin);
    let got: Vec<Vec<u8>> =
        crate::util::names::tree_files(target).into_iter().filter(|n| !n.starts_with(b".FRMRecent-")).collect();
    assert_eq!(got, theirs);
    for n in &theirs {
        let rel = std::str::from_utf8(n).unwrap();
        assert_eq!(fs::read(target.join(rel)).unwrap(), fs::read(origin.join(rel)).unwrap(), "{rel}");
    }
    assert!(!target.join("gone.txt").exists());
    // The recentfiles, hashed events and all, byte for byte: a Perl tier
    // passes the hashes on.
    assert_eq!(recentfile_names(target), recentfile_names(origin));
    for name in recentfile_names(origin) {
        assert_eq!(fs::read(target.join(&name)).unwrap(), fs::read(origin.join(&name)).unwrap(), "{name}");
    }
    // The beacon and its signature are neither events nor recentfiles to
    // the reference: it does not copy them.
    assert!(!target.join(BEACON).exists() && !target.join(BEACON_SIG).exists());
}

/// Whether `target` has every file and recentfile of `origin` with its
/// size (a cheap look while the reference's client runs).
fn sizes_match(origin: &Path, target: &Path) -> bool {
    let size = |p: PathBuf| fs::metadata(p).map(|m| m.len()).ok();
    let mut names: Vec<String> = recentfile_names(origin);
    names.extend(crate::util::names::tree_files(origin).into_iter().map(|n| String::from_utf8(n).unwrap()));
    names.iter().all(|n| size(target.join(n)).is_some() && size(target.join(n)) == size(origin.join(n)))
}

#[test]
#[ignore = "needs RRR_PERL_REFERENCE"]
fn perl_reference_client_mirrors_a_signed_hashed_origin() {
    let Some(Reference { lib, shim, tmp }) = setup() else { return };
    let o = SignedOrigin::new(tmp.path());
    assert_hashed(&o);
    let target = tmp.path().join("target");
    fs::create_dir(&target).unwrap();
    let d = RsyncDaemon::start(&[("origin", &o.root)]);
    let src = format!("{}/RECENT.recent", d.url("origin"));
    // A guard against the reference's endless retry, not a measure of time.
    let out = Command::new("timeout")
        .args(["300", "perl", "-I", s(&lib), "-I", s(&shim), "-e", PERL_CLIENT, &src, s(&target)])
        .output()
        .unwrap();
    assert!(out.status.success(), "the reference's rmirror: {}", String::from_utf8_lossy(&out.stderr));

    assert_perl_mirror_of(&o.root, &target);
    eprintln!("the reference's client: tree and recentfiles byte for byte, beacon and signature not copied");

    // rrr verifies the reference's mirror against the recorded hashes.
    let v = rrr(&["verify", "--localroot", s(&target), "--hash", "--json"]);
    assert_eq!(v.status.code(), Some(0), "{}{}", stdout(&v), stderr(&v));

    // bin/rrr-client itself, which runs rmirror in an endless loop: once
    // its first pass has brought every file, it is stopped.
    let target2 = tmp.path().join("target-bin");
    fs::create_dir(&target2).unwrap();
    let log = fs::File::create(tmp.path().join("rrr-client.log")).unwrap();
    let mut client = Command::new("perl")
        .args(["-I", s(&lib), "-I", s(&shim), &bin(&lib, "rrr-client"), "--source", &src, "--target", s(&target2)])
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .process_group(0)
        .spawn()
        .unwrap();
    let done = poll_until(Duration::from_secs(120), || sizes_match(&o.root, &target2));
    let _ = crate::util::cmd::kill(-(client.id() as i32), libc::SIGTERM);
    client.wait().unwrap();
    let log = fs::read_to_string(tmp.path().join("rrr-client.log")).unwrap();
    assert!(done, "bin/rrr-client did not bring every file:\n{log}");
    assert_perl_mirror_of(&o.root, &target2);

    // A Perl tier serves no beacon: an rrr mirror with --trust-key below
    // it is refused, nothing installed.
    let tier = RsyncDaemon::start(&[("tier", &target)]);
    let below = tmp.path().join("below");
    let src = format!("{}/RECENT.recent", tier.url("tier"));
    let m = rrr(&["rmirror", "--remote", &src, "--localroot", s(&below), "--trust-key", s(&o.allowed)]);
    assert_ne!(m.status.code(), Some(0));
    assert!(stderr(&m).contains("not signed"), "{}", stderr(&m));
    assert!(crate::util::names::tree_files(&below).is_empty());
}

/// The reference's `news` as `rrr-news --local` calls it: each event as
/// `epoch<TAB>type<TAB>path`.
const PERL_NEWS: &str = r#"
use strict; use warnings;
use File::Rsync::Mirror::Recent;
my $rc = File::Rsync::Mirror::Recent->new(local => $ARGV[0]);
print "$_->{epoch}\t$_->{type}\t$_->{path}\n" for @{ $rc->news };
"#;

/// The first line of each path in `lines` (`…<TAB>path`): the reference's
/// `news` reads the principal twice (its `recentfiles` list names it as
/// the file and as the aggregator's first interval), rrr lists a path once.
fn first_per_path(lines: impl Iterator<Item = String>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    lines.filter(|l| seen.insert(l.rsplit('\t').next().unwrap().to_string())).collect()
}

#[test]
#[ignore = "needs RRR_PERL_REFERENCE"]
fn perl_reference_news_and_overview_read_a_signed_hashed_collection() {
    let Some(Reference { lib, shim, tmp }) = setup() else { return };
    let o = SignedOrigin::new(tmp.path());
    let ours: Vec<String> = ok(&["news", "--local", &o.principal(), "--json"])
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            format!(
                "{}\t{}\t{}",
                v["epoch"].as_str().unwrap(),
                v["type"].as_str().unwrap(),
                v["path"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(ours.len(), 6, "{ours:?}");

    // The library call rrr-news makes: the same events, epochs exact.
    let out = perl_out(&lib, &shim, &["-e", PERL_NEWS], &[&o.principal()]);
    assert!(out.status.success() && out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    let theirs = first_per_path(String::from_utf8(out.stdout).unwrap().lines().map(str::to_string));
    assert_eq!(theirs, ours);

    // bin/rrr-news itself: the same paths in the same order (it prints
    // `localtime(epoch)` and the path).
    let out = perl_out(&lib, &shim, &[&bin(&lib, "rrr-news")], &["--local", &o.principal()]);
    assert!(out.status.success() && out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    let paths: Vec<String> = String::from_utf8(out.stdout).unwrap().lines().map(|l| l[25..].to_string()).collect();
    let mut seen = std::collections::HashSet::new();
    let paths: Vec<String> = paths.into_iter().filter(|p| seen.insert(p.clone())).collect();
    let our_paths: Vec<String> = ours.iter().map(|l| l.rsplit('\t').next().unwrap().to_string()).collect();
    assert_eq!(paths, our_paths);

    // bin/rrr-overview: a row per recentfile (the principal twice), each
    // with the count rrr's overview gives.
    let out = perl_out(&lib, &shim, &[&bin(&lib, "rrr-overview")], &[&o.principal()]);
    assert!(out.status.success() && out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    let table = String::from_utf8(out.stdout).unwrap();
    let theirs: Vec<(String, String)> = table
        .lines()
        .skip(1)
        .map(|l| {
            let mut f = l.split_whitespace();
            (f.next().unwrap().to_string(), f.next().unwrap().to_string())
        })
        .collect();
    let mut ours: Vec<(String, String)> = ok(&["overview", "--json", &o.principal()])
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (v["interval"].as_str().unwrap().to_string(), v["count"].to_string())
        })
        .collect();
    ours.insert(0, ours[0].clone());
    assert_eq!(theirs, ours, "{table}");
    eprintln!("the reference's news and overview read the signed, hashed collection as rrr does:\n{table}");
}

/// Whether the beacon accepts the current bytes of recentfile `name`, as
/// a mirror with `--trust-key` judges a fetched one.
fn beacon_accepts(root: &Path, name: &str) -> bool {
    let beacon = Beacon::parse(&fs::read(root.join(BEACON)).unwrap()).unwrap();
    beacon.accept(name, &FileDigest::of(&fs::read(root.join(name)).unwrap()).sha256).is_ok()
}

/// Whether the principal's meta holds the hash setting (`Hash: sha256`).
fn hash_setting(root: &Path) -> bool {
    hash_setting_in(root, "RECENT-1h.yaml")
}

/// [`hash_setting`] of the principal `name` (YAML or JSON).
fn hash_setting_in(root: &Path, name: &str) -> bool {
    let text = fs::read_to_string(root.join(name)).unwrap();
    if name.ends_with(".json") {
        text.contains("\"Hash\":\"sha256\"")
    } else {
        text[..text.find("\nrecent:").unwrap()].contains("\n  Hash: sha256\n")
    }
}

/// The reference's aggregate with force, as `rrr-update --epoch` runs it.
const PERL_AGGREGATE: &str = r#"
use strict; use warnings;
use File::Rsync::Mirror::Recentfile;
File::Rsync::Mirror::Recentfile->new_from_file($ARGV[0])->aggregate(force => 1);
"#;

#[test]
#[ignore = "needs RRR_PERL_REFERENCE"]
fn perl_reference_writer_rewrites_a_hashed_recentfile() {
    let Some(Reference { lib, shim, tmp }) = setup() else { return };
    let o = SignedOrigin::new(tmp.path());
    let (old_1h, old_6h) = (digests(&o.root, "RECENT-1h.yaml"), digests(&o.root, "RECENT-6h.yaml"));
    assert!(old_1h["a.txt"].is_some() && old_6h["a.txt"].is_some());
    assert!(hash_setting(&o.root));

    // bin/rrr-update records a new file in the principal: the events it
    // loaded keep their size and sha256 (it rewrites the hashes it read),
    // its own event has none.
    write(&o.root, "perl.txt", "written by Perl\n");
    let out = perl_out(&lib, &shim, &[&bin(&lib, "rrr-update")], &[&o.principal(), "perl.txt"]);
    assert!(out.status.success(), "rrr-update: {}", String::from_utf8_lossy(&out.stderr));
    let new_1h = digests(&o.root, "RECENT-1h.yaml");
    assert_eq!(new_1h["perl.txt"], None);
    for (path, d) in &old_1h {
        assert_eq!(&new_1h[path], d, "{path}: the Perl update changed its keys");
    }
    // It writes meta from its own list of keys: the setting `Hash` is gone.
    assert!(!hash_setting(&o.root));
    // The Perl writer does not know the beacon: it no longer vouches for
    // the principal, and a mirror with --trust-key refuses it until an
    // rrr writer (or `rrr beacon`) signs again.
    assert!(!beacon_accepts(&o.root, "RECENT-1h.yaml"));

    // The reference's aggregate builds each event it merges anew from
    // epoch, path and type: in RECENT-6h.yaml the events it merged from
    // the principal lose their size and sha256, the others keep theirs.
    let out = perl_out(&lib, &shim, &["-e", PERL_AGGREGATE], &[&o.principal()]);
    assert!(out.status.success(), "aggregate: {}", String::from_utf8_lossy(&out.stderr));
    let new_6h = digests(&o.root, "RECENT-6h.yaml");
    assert_eq!(new_6h.keys().collect::<Vec<_>>(), new_1h.keys().collect::<Vec<_>>());
    for (path, d) in &new_6h {
        assert_eq!(*d, None, "{path}: kept its keys through the Perl merge");
    }
    assert!(old_6h.values().any(Option::is_some));

    // rrr reads the Perl-written files (an event without the keys is
    // unhashed, never a mismatch) and its fsck finds them clean.
    let news = ok(&["news", "--local", &o.principal()]);
    assert!(news.contains("\tperl.txt\n"), "{news}");
    ok(&["fsck", &o.principal()]);

    // A later rrr update, even without --hash (the signed beacon still
    // says sha256), records hashes again, writes the setting back and
    // signs a beacon that vouches for the Perl-written files too.
    write(&o.root, "later.txt", "written by rrr\n");
    ok(&["update", "--sign-key", s(&o.key), &o.principal(), "later.txt"]);
    let last = digests(&o.root, "RECENT-1h.yaml");
    assert_eq!(last["later.txt"], Some(FileDigest::of(b"written by rrr\n")));
    assert_eq!(last["perl.txt"], None);
    assert!(hash_setting(&o.root));
    for name in recentfile_names(&o.root) {
        assert!(beacon_accepts(&o.root, &name), "{name}");
    }

    // And an rrr tier with --trust-key takes the mixed collection, every
    // recorded hash checked.
    let target = tmp.path().join("tier1");
    let d = RsyncDaemon::start(&[("origin", &o.root)]);
    let src = format!("{}/RECENT.recent", d.url("origin"));
    let m = rrr(&["rmirror", "--remote", &src, "--localroot", s(&target), "--trust-key", s(&o.allowed)]);
    assert_eq!(m.status.code(), Some(0), "{}", stderr(&m));
    assert_eq!(fs::read(target.join("perl.txt")).unwrap(), b"written by Perl\n");
    let v = rrr(&["verify", "--localroot", s(&target), "--hash"]);
    assert_eq!(v.status.code(), Some(0), "{}{}", stdout(&v), stderr(&v));
}

#[test]
#[ignore = "needs RRR_PERL_REFERENCE"]
fn perl_reference_fsck_sees_the_beacon_as_unindexed() {
    let Some(Reference { lib, shim, tmp }) = setup() else { return };
    let o = SignedOrigin::new(tmp.path());
    let root = s(&o.root);
    let principal_bytes = fs::read(o.root.join("RECENT-1h.yaml")).unwrap();

    // --dry-run: the beacon, its signature and the files under .rrr/ are
    // "missing in index", to be added; nothing is written.
    let out = perl_out(&lib, &shim, &[&bin(&lib, "rrr-fsck")], &["--dry-run", &o.principal()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let said = String::from_utf8(out.stderr).unwrap();
    let would: Vec<&str> = said.lines().filter_map(|l| l.strip_prefix("Would add to indexfile ")).collect();
    let mut would: Vec<String> =
        would.iter().map(|p| p.strip_prefix(root).unwrap().trim_start_matches('/').to_string()).collect();
    would.sort();
    eprintln!("rrr-fsck --dry-run on a signed rrr origin:\n{said}");
    assert!(would.contains(&BEACON.to_string()) && would.contains(&BEACON_SIG.to_string()), "{said}");
    assert!(would.iter().all(|p| p.starts_with(BEACON) || p.starts_with(".rrr/")), "{said}");
    let missing_on_disk = said.lines().find(|l| l.starts_with("missing on disk:")).unwrap();
    assert_eq!(missing_on_disk.split_whitespace().last(), Some("0"), "{said}");
    assert_eq!(fs::read(o.root.join("RECENT-1h.yaml")).unwrap(), principal_bytes);

    // Without --dry-run it indexes them, with their mtimes as dirty
    // epochs: a new dirtymark, and events that name rrr's own files.
    let dirtymark = |root: &Path| {
        recentfile::parse_bytes(&fs::read(root.join("RECENT-1h.yaml")).unwrap(), Format::Yaml).unwrap().meta.dirtymark
    };
    let before = dirtymark(&o.root);
    // An rrr tier with --trust-key, in sync before.
    let tier = tmp.path().join("tier1");
    let d = RsyncDaemon::start(&[("origin", &o.root)]);
    let src = format!("{}/RECENT.recent", d.url("origin"));
    let pass = || rrr(&["rmirror", "--remote", &src, "--localroot", s(&tier), "--trust-key", s(&o.allowed)]);
    let m = pass();
    assert_eq!(m.status.code(), Some(0), "{}", stderr(&m));
    let out = perl_out(&lib, &shim, &[&bin(&lib, "rrr-fsck")], &[&o.principal()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let indexed = digests(&o.root, "RECENT-1h.yaml");
    for p in &would {
        assert!(indexed.contains_key(p), "{p} not indexed: {indexed:?}");
    }
    assert_ne!(dirtymark(&o.root), before);

    // rrr's fsck names each of those events as indexing one of rrr's own
    // files; --repair records their deletes and is clean after.
    let f = rrr(&["fsck", "--json", &o.principal()]);
    assert_eq!(f.status.code(), Some(1), "{}", stdout(&f));
    eprintln!("rrr fsck after the Perl rrr-fsck indexed them:\n{}", stdout(&f));
    let mut own: Vec<String> = stdout(&f)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["kind"] != "summary")
        .map(|v| {
            assert_eq!(v["kind"], "own_file_indexed", "{v}");
            v["path"].as_str().unwrap().to_string()
        })
        .collect();
    own.sort();
    assert_eq!(own, would);
    let r = rrr(&["fsck", "--repair", "--sign-key", s(&o.key), &o.principal()]);
    assert_eq!(r.status.code(), Some(1), "{}", stderr(&r));
    ok(&["fsck", &o.principal()]);

    // The rrr tier refuses the events that name its own files (the pass
    // exits 1 once), keeps the origin's beacon as its own, and stays
    // complete.
    let m = pass();
    eprintln!("the rrr tier's pass after the Perl rrr-fsck indexed the beacon:\n{}", stderr(&m));
    assert_eq!(m.status.code(), Some(1), "{}", stderr(&m));
    for name in [BEACON, BEACON_SIG] {
        assert_eq!(fs::read(tier.join(name)).unwrap(), fs::read(o.root.join(name)).unwrap(), "{name}");
    }
    let v = rrr(&["verify", "--localroot", s(&tier), "--hash"]);
    assert_eq!(v.status.code(), Some(0), "{}{}", stdout(&v), stderr(&v));
    let m = pass();
    assert_eq!(m.status.code(), Some(0), "{}", stderr(&m));
}

/// Without a beacon nothing but the principal's meta remembers that the
/// collection hashes, and a Perl rewrite drops it, in YAML and in JSON
/// recentfiles alike (the events it carries over keep their keys): the
/// next rrr writer without `--hash sha256` records unhashed events; one
/// with the flag hashes again and writes the setting back.
#[test]
#[ignore = "needs RRR_PERL_REFERENCE"]
fn perl_reference_writer_drops_the_hash_setting_of_an_unsigned_collection() {
    let Some(Reference { lib, shim, tmp }) = setup() else { return };
    for format in ["yaml", "json"] {
        let root = tmp.path().join(format);
        let file = format!("RECENT-1h.{format}");
        write(&root, "a.txt", "a\n");
        ok(&["init", "--format", format, "--hash", "sha256", s(&root)]);
        assert!(hash_setting_in(&root, &file));
        write(&root, "perl.txt", "p\n");
        let out = perl_out(&lib, &shim, &[&bin(&lib, "rrr-update")], &[&principal(&root), "perl.txt"]);
        assert!(out.status.success(), "rrr-update: {}", String::from_utf8_lossy(&out.stderr));
        assert!(!hash_setting_in(&root, &file), "{format}");
        assert_eq!(digests(&root, &file)["a.txt"], Some(FileDigest::of(b"a\n")), "{format}");
        assert_eq!(digests(&root, &file)["perl.txt"], None, "{format}");

        write(&root, "unhashed.txt", "u\n");
        ok(&["update", &principal(&root), "unhashed.txt"]);
        assert_eq!(digests(&root, &file)["unhashed.txt"], None, "{format}");
        assert!(!hash_setting_in(&root, &file));

        write(&root, "hashed.txt", "h\n");
        ok(&["update", "--hash", "sha256", &principal(&root), "hashed.txt"]);
        assert_eq!(digests(&root, &file)["hashed.txt"], Some(FileDigest::of(b"h\n")), "{format}");
        assert!(hash_setting_in(&root, &file));
        ok(&["fsck", &principal(&root)]);
    }
}
