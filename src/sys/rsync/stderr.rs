//! What rsync says: its stderr, line by line, sorted into missing files,
//! files the origin could not send, harmless lines and real errors (with a
//! cause when no retry can cure it); the paths in its messages unescaped;
//! and its `--info=progress2` lines parsed.

use super::{Cause, FailedPath};
use crate::sys::child::{for_each_line, Tail};
use nix::errno::Errno;
use std::io::Read;

/// How much of rsync's stderr is kept: the last 64 KiB.
const STDERR_CAP: usize = 64 * 1024;

/// The paths in rsync's messages about missing source files, unescaped:
/// `rsync: link_stat "/p" failed: No such file or directory (2)` (rsync
/// < 3.2), `rsync: [sender] link_stat "/p" failed: …` (>= 3.2) and
/// `file has vanished: "/p"` (with or without `rsync: [sender] `). A
/// ` (in module)` after the quoted path is dropped. (The summary reads
/// them one line at a time; this is the whole-stderr form the tests use.)
#[cfg(test)]
fn vanished_paths(stderr: &str) -> Vec<Vec<u8>> {
    stderr.lines().filter_map(vanished_path).collect()
}

/// The path of one vanished-file message, if `line` is one.
fn vanished_path(line: &str) -> Option<Vec<u8>> {
    const LINK_STAT: &str = "link_stat \"";
    const ENOENT: &str = " failed: No such file or directory";
    const VANISHED: &str = "file has vanished: \"";
    let line = line.trim_end_matches(['\r', '\n']);
    let quoted = if let Some(at) = line.find(LINK_STAT) {
        if !line.starts_with("rsync: ") {
            return None;
        }
        let rest = &line[at + LINK_STAT.len()..];
        &rest[..rest.rfind(ENOENT)?]
    } else if let Some(at) = line.find(VANISHED) {
        let head = &line[..at];
        if !(head.is_empty() || head.starts_with("rsync: ")) {
            return None;
        }
        &line[at + VANISHED.len()..]
    } else {
        return None;
    };
    // `quoted` is `p"` or `p" (in module)`; p itself may hold quotes.
    let path = match quoted.strip_suffix('"') {
        Some(p) => p,
        None => &quoted[..quoted.rfind("\" (in ")?],
    };
    Some(unescape(path))
}

/// Undoes rsync's escaping of bytes it cannot print: `\#ooo` (three octal
/// digits) is that byte. Under `LC_ALL=C` rsync escapes every byte above
/// 0x7E, so a name that is not UTF-8 comes back as its exact bytes.
pub fn unescape(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = |c: u8| (b'0'..=b'7').contains(&c);
        if b[i] == b'\\' && i + 5 <= b.len() && b[i + 1] == b'#' && b[i + 2..i + 5].iter().all(|&c| octal(c)) {
            let v = b[i + 2..i + 5].iter().fold(0u32, |v, &c| v * 8 + u32::from(c - b'0'));
            if let Ok(byte) = u8::try_from(v) {
                out.push(byte);
                i += 5;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

/// One line of rsync's `--info=progress2`: the whole transfer so far,
/// `   1,200,000  20%    3.43MB/s    0:00:05 (xfr#6, to-chk=24/31)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Progress2 {
    /// Bytes transferred so far.
    pub bytes: u64,
    pub percent: u8,
    /// As rsync prints it: `3.43MB/s`.
    pub rate: String,
    /// As rsync prints it: `0:00:05` (time left, or the total at the end).
    pub eta: String,
    /// Files transferred so far (`xfr#`).
    pub files: Option<u64>,
    /// Files left to check and known in all (`to-chk=24/31`); with
    /// incremental recursion (`ir-chk`) the total still grows.
    pub to_check: Option<(u64, u64)>,
    /// `ir-chk`: rsync is still listing the tree, the percentage is of what it found so far.
    pub listing: bool,
}

/// Parse a `--info=progress2` line; `None` for any other line (the
/// itemized `--out-format` lines come on the same stream).
pub fn parse_progress2(line: &str) -> Option<Progress2> {
    let mut it = line.split_whitespace();
    let bytes = it.next()?;
    if !bytes.bytes().all(|b| b.is_ascii_digit() || b == b',') || !bytes.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let bytes = bytes.replace(',', "").parse().ok()?;
    let percent = it.next()?.strip_suffix('%')?.parse().ok()?;
    let rate = it.next()?;
    let eta = it.next()?;
    if !rate.ends_with("/s") || !eta.contains(':') {
        return None;
    }
    let rest: String = it.collect::<Vec<_>>().join(" ");
    let files = rest.strip_prefix("(xfr#").and_then(|r| r.split(',').next()).and_then(|n| n.parse().ok());
    let (listing, chk) = match (rest.find("to-chk="), rest.find("ir-chk=")) {
        (Some(i), _) => (false, Some(&rest[i + 7..])),
        (None, Some(i)) => (true, Some(&rest[i + 7..])),
        (None, None) => (false, None),
    };
    let to_check = chk.and_then(|c| {
        let (a, b) = c.trim_end_matches(')').split_once('/')?;
        Some((a.parse().ok()?, b.parse().ok()?))
    });
    Some(Progress2 { bytes, percent, rate: rate.to_string(), eta: eta.to_string(), files, to_check, listing })
}

/// What the stderr thread learned.
#[derive(Debug, Default)]
pub(super) struct StderrSummary {
    /// Paths of missing/vanished files, all of them.
    pub(super) vanished: Vec<Vec<u8>>,
    /// Paths the origin could not send.
    pub(super) failed: Vec<FailedPath>,
    /// Paths rsync cannot carry at all (longer than its MAXPATHLEN).
    pub(super) too_long: Vec<FailedPath>,
    pub(super) deletion_skipped: bool,
    /// A line that is neither about one file of the origin nor harmless.
    pub(super) other_errors: bool,
    /// The first cause no retry can cure.
    pub(super) cause: Option<Cause>,
    /// The last [`STDERR_CAP`] bytes, starting at a line.
    pub(super) tail: String,
}

pub(super) fn drain_stderr(r: impl Read) -> StderrSummary {
    let mut judge = StderrJudge::default();
    let mut tail = Tail::new(STDERR_CAP);
    let res = for_each_line(r, None, |line| {
        if let Some(line) = line {
            judge.line(&String::from_utf8_lossy(line));
            tail.push(line);
        }
    });
    if let Err(e) = res {
        judge.s.other_errors = true;
        tail.push(format!("[rrr: cannot read rsync's stderr: {e}]").as_bytes());
    }
    StderrSummary { tail: tail.into_string(), ..judge.s }
}

/// What one line of rsync's stderr says (see [`classify`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// Empty, or rsync's closing summary of a run with per-file trouble.
    Harmless,
    /// The summary of exit 23 (a connection reset may follow it).
    Summary23,
    /// A source file that does not exist (any more).
    Vanished(Vec<u8>),
    /// A file the origin's rsync could not read or send: `[sender]` with an
    /// errno other than ENOENT.
    OriginFailed(Vec<u8>),
    /// A path rsync cannot carry: its sender cannot even name it
    /// (`filename overflows max-path len by N: DIR/NAME`, or `[sender] …
    /// File name too long (36)`). The path is as rsync printed it.
    TooLong(Vec<u8>),
    /// `--delete` was left undone because of read errors at the origin.
    DeletionSkipped,
    /// A real error, with a cause when retrying cannot help.
    Error(Option<Cause>),
}

/// Classify one stderr line by its role tag (`[sender]` is the origin's
/// side, `[receiver]`/`[generator]` ours; rsync capitalises the client's
/// role) and its errno text. The table of real messages is in the tests.
pub fn classify(line: &str) -> Line {
    let line = line.trim_end_matches(['\r', '\n']);
    if line.trim().is_empty() {
        return Line::Harmless;
    }
    if let Some(p) = vanished_path(line) {
        return Line::Vanished(p);
    }
    if line.starts_with("rsync error: some files/attrs were not transferred") && line.contains("(code 23)") {
        return Line::Summary23;
    }
    if line.starts_with("rsync warning: some files vanished before they could be") && line.contains("(code 24)") {
        return Line::Harmless;
    }
    if line.starts_with("IO error encountered -- skipping file deletion") {
        return Line::DeletionSkipped;
    }
    // The sender's file list: DIR plus `/NAME` does not fit rsync's
    // MAXPATHLEN (4096 with the NUL), so the entry cannot be sent.
    if let Some(rest) = line.strip_prefix("filename overflows max-path len by ") {
        if let Some((n, path)) = rest.split_once(": ") {
            if n.bytes().all(|b| b.is_ascii_digit()) && !path.is_empty() {
                return Line::TooLong(unescape(path));
            }
        }
    }
    if line.starts_with("@ERROR: Unknown module") {
        return Line::Error(Some(Cause::UnknownModule));
    }
    if line.starts_with("@ERROR: auth failed") {
        return Line::Error(Some(Cause::AuthFailed));
    }
    // EAI_NONAME (rsync's getaddrinfo, or ssh's); EAI_AGAIN ("Temporary
    // failure in name resolution") stays retryable.
    if (line.starts_with("rsync: getaddrinfo:") || line.starts_with("ssh: Could not resolve hostname"))
        && (line.ends_with("Name or service not known") || line.ends_with("No address associated with hostname"))
    {
        return Line::Error(Some(Cause::UnknownHost));
    }
    let Some(rest) = line.strip_prefix("rsync: ") else { return Line::Error(None) };
    let (role, rest) = match rest.strip_prefix('[').and_then(|r| r.split_once("] ")) {
        Some((role, rest)) => (Some(role), rest),
        None => (None, rest),
    };
    let errno = errno_of(rest).map(Errno::from_raw);
    let ours = matches!(role.map(str::to_ascii_lowercase).as_deref(), Some("receiver" | "generator") | None);
    match (role.map(str::to_ascii_lowercase).as_deref(), errno) {
        // change_dir is the source root itself: a path the module (or the
        // origin's file system) does not have. Deterministic, whatever
        // the daemon's "Connection reset" after it says.
        (Some("sender"), Some(Errno::ENOENT | Errno::ENOTDIR)) if rest.starts_with("change_dir") => {
            Line::Error(Some(Cause::NoSuchPath))
        }
        (Some("sender"), Some(e)) if !rest.starts_with("change_dir") => match quoted_path(rest) {
            Some(p) if e == Errno::ENOENT => Line::Vanished(p),
            Some(p) if e == Errno::ENAMETOOLONG => Line::TooLong(p),
            Some(p) => Line::OriginFailed(p),
            None => Line::Error(None),
        },
        (_, Some(Errno::ENOSPC | Errno::EDQUOT)) if ours => Line::Error(Some(Cause::NoSpace)),
        (_, Some(Errno::EACCES | Errno::EPERM | Errno::EROFS)) if ours && role.is_some() => {
            Line::Error(Some(Cause::LocalPermission))
        }
        _ => Line::Error(None),
    }
}

/// The errno at the end of a message: `… Permission denied (13)`.
fn errno_of(msg: &str) -> Option<i32> {
    let open = msg.strip_suffix(')')?.rfind(" (")?;
    msg[open + 2..msg.len() - 1].parse().ok()
}

/// The quoted path of a message (`op "PATH" (in mod) failed: …`,
/// `send_files failed to open "PATH": …`), unescaped. The path itself may
/// hold quotes, so the end is found from the right.
fn quoted_path(msg: &str) -> Option<Vec<u8>> {
    let start = msg.find('"')? + 1;
    let body = &msg[start..];
    let end = body.rfind("\" (in ").or_else(|| body.rfind("\" failed")).or_else(|| body.rfind("\": "))?;
    Some(unescape(&body[..end]))
}

/// Sorts stderr lines into per-file trouble, harmless lines and real errors.
#[derive(Debug, Default)]
struct StderrJudge {
    s: StderrSummary,
    seen_summary_23: bool,
}

impl StderrJudge {
    fn line(&mut self, line: &str) {
        let s = &mut self.s;
        match classify(line) {
            Line::Harmless => {}
            Line::Summary23 => self.seen_summary_23 = true,
            Line::Vanished(p) => s.vanished.push(p),
            Line::OriginFailed(path) => {
                let message = line.trim_end().strip_prefix("rsync: ").unwrap_or(line.trim_end()).to_string();
                s.failed.push(FailedPath { path, message });
            }
            Line::TooLong(path) => {
                // Without the path, which can be 4 KiB: the state keeps it.
                let line = line.trim_end();
                let message = match line.strip_prefix("filename overflows") {
                    Some(_) => line.split_once(": ").map_or(line, |(m, _)| m).to_string(),
                    None => line.strip_prefix("rsync: ").unwrap_or(line).to_string(),
                };
                s.too_long.push(FailedPath { path, message });
            }
            Line::DeletionSkipped => s.deletion_skipped = true,
            // Through a daemon, when every requested file is missing, the
            // daemon hangs up right after the summary (rsync 3.5.0).
            Line::Error(None) if self.seen_summary_23 && line.contains("read error: Connection reset by peer") => {}
            Line::Error(cause) => {
                s.other_errors = true;
                s.cause = s.cause.or(cause);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vanished_paths_all_forms() {
        let cases: &[(&str, &[&str])] = &[
            // rsync < 3.2
            (
                r#"rsync: link_stat "/src/a/b" failed: No such file or directory (2)"#,
                &["/src/a/b"],
            ),
            // rsync >= 3.2
            (
                r#"rsync: [sender] link_stat "/tmp/vt/src/missing" failed: No such file or directory (2)"#,
                &["/tmp/vt/src/missing"],
            ),
            // through a daemon
            (
                r#"rsync: [sender] link_stat "id/A/AB/x.tar.gz" (in CPAN) failed: No such file or directory (2)"#,
                &["id/A/AB/x.tar.gz"],
            ),
            (
                r#"rsync: link_stat "sub dir/gone "q"" (in mod) failed: No such file or directory (2)"#,
                &[r#"sub dir/gone "q""#],
            ),
            (r#"file has vanished: "/tmp/vt/src2/b_small""#, &["/tmp/vt/src2/b_small"]),
            (r#"file has vanished: "b_small" (in two)"#, &["b_small"]),
            (r#"rsync: [sender] file has vanished: "/x/y""#, &["/x/y"]),
            // escaped non-ASCII
            (
                r#"rsync: [sender] link_stat "n\#303\#266" (in mod) failed: No such file or directory (2)"#,
                &["nö"],
            ),
            // not vanished
            (
                r#"rsync: [sender] link_stat "/x" failed: Permission denied (13)"#,
                &[],
            ),
            (
                r#"rsync: [sender] change_dir "src2" (in mod) failed: No such file or directory (2)"#,
                &[],
            ),
            (
                "rsync error: some files/attrs were not transferred (see previous errors) (code 23) at main.c(1394) [sender=3.5.0]",
                &[],
            ),
            ("", &[]),
            (
                "rsync: link_stat \"/a\" failed: No such file or directory (2)\r\n\
                 file has vanished: \"/b\"\n\
                 rsync warning: some files vanished before they could be transferred (code 24) at main.c(1394) [sender=3.5.0]\n",
                &["/a", "/b"],
            ),
        ];
        for (stderr, want) in cases {
            let got: Vec<String> = vanished_paths(stderr).iter().map(|p| String::from_utf8_lossy(p).into()).collect();
            assert_eq!(got, *want, "stderr: {stderr}");
        }
    }

    /// rsync's real messages (3.5.0, the installed version; 3.2.7 prints
    /// the same texts), each with what it means for a mirror.
    #[test]
    fn classify_real_messages() {
        use Cause::*;
        let origin = |p: &str| Line::OriginFailed(p.as_bytes().to_vec());
        let vanished = |p: &str| Line::Vanished(p.as_bytes().to_vec());
        let table: &[(&str, Line)] = &[
            // A file the daemon (running as nobody) may not read.
            (r#"rsync: [sender] send_files failed to open "secret.txt" (in m): Permission denied (13)"#, origin("secret.txt")),
            // The same below the module, with a `/./` marker in --files-from.
            (r#"rsync: [sender] send_files failed to open "/deep/er/sec" (in m): Permission denied (13)"#, origin("/deep/er/sec")),
            // A local source.
            (r#"rsync: [sender] send_files failed to open "/tmp/exp/mod/deep/er/sec": Permission denied (13)"#, origin("/tmp/exp/mod/deep/er/sec")),
            // A path through a symlink out of the module.
            (r#"rsync: [sender] link_stat "sub/link/hostname" (in m) failed: Too many levels of symbolic links (40)"#, origin("sub/link/hostname")),
            // A file in a directory the daemon may not search; a directory it may not list.
            (r#"rsync: [sender] link_stat "closed/f" (in m) failed: Permission denied (13)"#, origin("closed/f")),
            (r#"rsync: [sender] opendir "closed" (in m) failed: Permission denied (13)"#, origin("closed")),
            (r#"rsync: [sender] link_stat "missing" (in m) failed: No such file or directory (2)"#, vanished("missing")),
            // A name the sender cannot even build (its directory is 4,000 bytes deep).
            ("filename overflows max-path len by 154: d000x/d015x/d016x", Line::TooLong(b"d000x/d015x/d016x".to_vec())),
            (r#"rsync: [sender] link_stat "lo/ng" (in m) failed: File name too long (36)"#, Line::TooLong(b"lo/ng".to_vec())),
            (r#"rsync: [sender] link_stat "/deep/er/missing" (in m) failed: No such file or directory (2)"#, vanished("/deep/er/missing")),
            (r#"file has vanished: "/tmp/vt/src2/b_small""#, vanished("/tmp/vt/src2/b_small")),
            // The source root itself is gone (a wrong path inside a correct
            // module, or the origin removed it): the whole run failed, and
            // a retry cannot help (the daemon's "Connection reset by peer"
            // after it is only the hang-up).
            (r#"rsync: [sender] change_dir "src2" (in mod) failed: No such file or directory (2)"#, Line::Error(Some(NoSuchPath))),
            (r#"rsync: [sender] change_dir "author" (in CPAN) failed: No such file or directory (2)"#, Line::Error(Some(NoSuchPath))),
            (r#"rsync: [sender] change_dir "/srv/CPAN/author" failed: No such file or directory (2)"#, Line::Error(Some(NoSuchPath))),
            (r#"rsync: [sender] change_dir "id/f.txt" (in m) failed: Not a directory (20)"#, Line::Error(Some(NoSuchPath))),
            // One the origin may not enter: its operator may fix it, retried.
            (r#"rsync: [sender] change_dir "closed" (in m) failed: Permission denied (13)"#, Line::Error(None)),
            ("IO error encountered -- skipping file deletion", Line::DeletionSkipped),
            ("rsync error: some files/attrs were not transferred (see previous errors) (code 23) at main.c(1956) [generator=3.5.0]", Line::Summary23),
            ("rsync warning: some files vanished before they could be transferred (code 24) at main.c(1394) [sender=3.5.0]", Line::Harmless),
            // Deterministic: not retried.
            ("@ERROR: Unknown module 'nomod'", Line::Error(Some(UnknownModule))),
            ("@ERROR: auth failed on module m", Line::Error(Some(AuthFailed))),
            ("rsync: getaddrinfo: no.such.host.invalid 873: Name or service not known", Line::Error(Some(UnknownHost))),
            ("ssh: Could not resolve hostname http: Name or service not known", Line::Error(Some(UnknownHost))),
            (r#"rsync: [receiver] write failed on "/tmp/exp/small/big.bin": No space left on device (28)"#, Line::Error(Some(NoSpace))),
            (r#"rsync: [receiver] mkstemp "/tmp/exp/ro/.ok.txt.UUhzV5" failed: Permission denied (13)"#, Line::Error(Some(LocalPermission))),
            (r#"rsync: [generator] recv_generator: mkdir "/m/x" failed: Permission denied (13)"#, Line::Error(Some(LocalPermission))),
            (r#"rsync: [Receiver] write failed on "/m/x": Disk quota exceeded (122)"#, Line::Error(Some(NoSpace))),
            // Transient: retried.
            ("rsync: getaddrinfo: cpan.example 873: Temporary failure in name resolution", Line::Error(None)),
            ("rsync: [Receiver] failed to connect to 127.0.0.1 (127.0.0.1): Connection refused (111)", Line::Error(None)),
            ("rsync: [Receiver] read error: Connection reset by peer (104)", Line::Error(None)),
            ("rsync: connection unexpectedly closed (0 bytes received so far) [Receiver]", Line::Error(None)),
            ("rsync error: error in socket IO (code 10) at clientserver.c(165) [Receiver=3.5.0]", Line::Error(None)),
            ("[Receiver] io timeout after 30 seconds -- exiting", Line::Error(None)),
            ("", Line::Harmless),
        ];
        for (line, want) in table {
            assert_eq!(classify(line), *want, "{line}");
        }
    }

    #[test]
    fn per_file_failures_are_not_a_failed_run() {
        let mut j = StderrJudge::default();
        for l in [
            r#"rsync: [sender] link_stat "missing" (in m) failed: No such file or directory (2)"#,
            r#"rsync: [sender] send_files failed to open "secret.txt" (in m): Permission denied (13)"#,
            "rsync error: some files/attrs were not transferred (see previous errors) (code 23) at main.c(1956) [generator=3.5.0]",
        ] {
            j.line(l);
        }
        assert!(!j.s.other_errors);
        assert_eq!(j.s.vanished, [b"missing"]);
        assert_eq!(j.s.failed[0].path, b"secret.txt");
        assert!(j.s.failed[0].message.starts_with("[sender] send_files failed to open"), "{:?}", j.s.failed);
        let mut j = StderrJudge::default();
        j.line(r#"rsync: [receiver] write failed on "/m/x": No space left on device (28)"#);
        j.line("@ERROR: Unknown module 'x'");
        assert!(j.s.other_errors);
        assert_eq!(j.s.cause, Some(Cause::NoSpace), "the first cause is kept");
    }

    #[test]
    fn progress2_lines() {
        let p = parse_progress2("      1,200,000  20%    3.43MB/s    0:00:05 (xfr#6, to-chk=24/31)").unwrap();
        assert_eq!(
            p,
            Progress2 {
                bytes: 1_200_000,
                percent: 20,
                rate: "3.43MB/s".into(),
                eta: "0:00:05".into(),
                files: Some(6),
                to_check: Some((24, 31)),
                listing: false
            }
        );
        let p = parse_progress2("         32,768   0%    0.00kB/s    0:00:00  ").unwrap();
        assert_eq!((p.bytes, p.percent, p.files, p.to_check), (32_768, 0, None, None));
        let p = parse_progress2("  9,000,000  41%  120.00MB/s    0:01:02 (xfr#1000, ir-chk=1020/3000)").unwrap();
        assert!(p.listing && p.to_check == Some((1020, 3000)));
        for other in [">f+++++++++ 200000 f1", "created directory p2/dst", "cd+++++++++ 4096 ./", "", "12 files"] {
            assert_eq!(parse_progress2(other), None, "{other}");
        }
    }

    #[test]
    fn unescape_octal() {
        assert_eq!(unescape(r"caf\#303\#251"), "café".as_bytes());
        assert_eq!(unescape(r"caf\#351\#377"), b"caf\xe9\xff");
        assert_eq!(unescape(r"a\#134#b"), br"a\#b");
        assert_eq!(unescape(r"plain\path"), br"plain\path");
        assert_eq!(unescape(r"short\#30"), br"short\#30");
        assert_eq!(unescape(r"big\#777"), br"big\#777");
        assert_eq!(unescape(r"end\#"), br"end\#");
    }

    fn judge(stderr: &str) -> (Vec<String>, bool) {
        let mut j = StderrJudge::default();
        stderr.lines().for_each(|l| j.line(l));
        (j.s.vanished.iter().map(|p| String::from_utf8_lossy(p).into()).collect(), j.s.other_errors)
    }

    #[test]
    fn stderr_judge() {
        // All requested files missing, through a daemon (rsync 3.5.0).
        let all_missing = "\
rsync: [sender] link_stat \"missing\" (in mod) failed: No such file or directory (2)
rsync: [sender] link_stat \"other\" (in mod) failed: No such file or directory (2)
rsync error: some files/attrs were not transferred (see previous errors) (code 23) at main.c(1956) [Receiver=3.5.0]
rsync: [Receiver] read error: Connection reset by peer (104)
";
        assert_eq!(judge(all_missing), (vec!["missing".into(), "other".into()], false));
        let real = "\
rsync: [sender] link_stat \"missing\" failed: No such file or directory (2)
rsync: [receiver] mkstemp \"/dst/.a.XXXX\" failed: Permission denied (13)
rsync error: some files/attrs were not transferred (see previous errors) (code 23) at main.c(1394) [sender=3.5.0]
";
        assert_eq!(judge(real), (vec!["missing".into()], true));
        // A reset before the summary is a real error.
        let reset = "rsync: [Receiver] read error: Connection reset by peer (104)\n";
        assert_eq!(judge(reset), (vec![], true));
    }
}
