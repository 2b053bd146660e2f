//! ftpsync-compatible trace files, pure: rendering a mirror's or the
//! origin's trace, reading one (hostile input: bounded, clear errors), the
//! `_hierarchy` chain and the epoch-first timestamp file that mirmon and
//! mirrorbits read. No file system, no clock: the times come in as
//! arguments; [`super::trace_write`] puts the results on disk.
//!
//! The format is what Debian's ftpsync writes into `project/trace/<host>`
//! and what mirror-status parses (its `TracefileFetcher.parse_tracefile`):
//! the first line is the date as `date -u` prints it in the POSIX locale
//! (`Thu Dec  3 05:15:42 UTC 2026`), then one `Key: value` per line, split
//! at the first colon, keys compared without case, the value with its
//! leading blanks removed; a later line with the same key wins.

use std::fmt::Write as _;

/// The largest trace (or `_hierarchy`) rrr reads: ftpsync's are under
/// 2 KiB; a bigger file is refused, never read whole into memory.
pub const MAX_TRACE_BYTES: usize = 64 * 1024;

/// The largest number of `_hierarchy` lines rrr keeps (a chain of
/// mirrors is a handful of tiers; a longer one is a loop or an attack).
pub const MAX_HIERARCHY_LINES: usize = 64;

const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/// What started the pass a trace records: ftpsync's `Trigger` field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// A one-shot run (cron, a timer, by hand).
    Cron,
    /// A pass of `rmirror --loop` on its interval.
    Loop,
    /// A pass woken by `rrr trigger` (ftpsync's push over ssh).
    Push,
}

impl Trigger {
    /// The field's value.
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Cron => "cron",
            Trigger::Loop => "loop",
            Trigger::Push => "push",
        }
    }
}

/// The fields of a trace rrr writes. Times are whole seconds since the
/// epoch (UTC).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    /// When the trace was written: the end of the complete pass (or the
    /// origin's clock for the master trace). The first line and `Date`.
    pub date: i64,
    /// When the pass started: `Date-Started` (none for the master trace).
    pub date_started: Option<i64>,
    /// The newest epoch of the collection this tree holds, exactly as the
    /// recentfiles write it: `Archive serial`.
    pub archive_serial: Option<String>,
    /// The host that writes the trace: `Running on host`.
    pub host: String,
    /// `Maintainer`, when the operator gave one.
    pub maintainer: Option<String>,
    /// The host this tree was fetched from: `Upstream-mirror` (none at
    /// the origin).
    pub upstream: Option<String>,
    /// `Trigger` (none at the origin).
    pub trigger: Option<Trigger>,
    /// Further `Key: value` lines after the standard ones, in order.
    pub extra: Vec<(String, String)>,
}

/// rrr's version as the trace's `Creator` and `Used rrr version` give it.
pub fn rrr_version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// A value on one line: control characters (a newline would start a
/// forged `Key:` line) become spaces, and blanks at either end go.
fn one_line(v: &str) -> String {
    v.chars().map(|c| if c.is_control() { ' ' } else { c }).collect::<String>().trim().to_string()
}

/// (year, month 1-12, day, seconds into the day, weekday index into DAYS).
fn civil(secs: i64) -> (i64, usize, u32, i64, usize) {
    let (days, s) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = crate::output::human::civil_from_days(days);
    (y, m as usize, d, s, days.rem_euclid(7) as usize)
}

/// The instant as `date -u` prints it in the POSIX locale:
/// `Thu Dec  3 05:15:42 UTC 2026` (the day padded to two columns).
pub fn date_u(secs: i64) -> String {
    let (y, m, d, s, wd) = civil(secs);
    format!("{} {} {d:>2} {:02}:{:02}:{:02} UTC {y}", DAYS[wd], MONTHS[m - 1], s / 3600, s / 60 % 60, s % 60)
}

/// The instant as `date -u -R` prints it (RFC 2822):
/// `Thu, 03 Dec 2026 05:15:42 +0000`.
pub fn date_rfc2822(secs: i64) -> String {
    let (y, m, d, s, wd) = civil(secs);
    format!("{}, {d:02} {} {y} {:02}:{:02}:{:02} +0000", DAYS[wd], MONTHS[m - 1], s / 3600, s / 60 % 60, s % 60)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`, the inverse of `human::civil_from_days`).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = i64::from((m + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Reads a `date -u` line (`Thu Dec  3 05:15:42 UTC 2026`; `GMT` too, as
/// mirror-status accepts both): seconds since the epoch. Blanks between
/// the parts may be any run of spaces, as in Python's `strptime`.
pub fn parse_date_u(line: &str) -> Option<i64> {
    let parts: Vec<&str> = line.split_whitespace().collect();
    let [wd, mon, day, hms, zone, year] = parts[..] else { return None };
    if !DAYS.contains(&wd) || !(zone == "UTC" || zone == "GMT") {
        return None;
    }
    let m = MONTHS.iter().position(|x| *x == mon)? as u32 + 1;
    let d: u32 = day.parse().ok().filter(|d| (1..=31).contains(d))?;
    let y: i64 = year.parse().ok().filter(|y| (1..=9999).contains(y))?;
    let t: Vec<&str> = hms.split(':').collect();
    let [h, mi, s] = t[..] else { return None };
    let num = |x: &str, max: i64| -> Option<i64> {
        (x.len() == 2).then_some(())?;
        x.parse::<i64>().ok().filter(|v| (0..=max).contains(v))
    };
    let (h, mi, s) = (num(h, 23)?, num(mi, 59)?, num(s, 61)?);
    Some(days_from_civil(y, m, d) * 86_400 + h * 3600 + mi * 60 + s)
}

impl Trace {
    /// The trace file's text, field order as ftpsync writes them.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let mut field = |k: &str, v: &str| {
            let _ = writeln!(out, "{k}: {}", one_line(v));
        };
        field("Date", &date_rfc2822(self.date));
        if let Some(t) = self.date_started {
            field("Date-Started", &date_rfc2822(t));
        }
        if let Some(serial) = &self.archive_serial {
            field("Archive serial", serial);
        }
        field("Used rrr version", rrr_version());
        field("Creator", &format!("rrr {}", rrr_version()));
        field("Running on host", &self.host);
        if let Some(m) = &self.maintainer {
            field("Maintainer", m);
        }
        if let Some(t) = self.trigger {
            field("Trigger", t.as_str());
        }
        if let Some(u) = &self.upstream {
            field("Upstream-mirror", u);
        }
        for (k, v) in &self.extra {
            let k = one_line(k).replace(':', " ");
            field(&k, v);
        }
        format!("{}\n{out}", date_u(self.date))
    }
}

/// The host an upstream's rsync source names, for `Upstream-mirror` and
/// `_hierarchy`: `rsync://[USER@]HOST[:PORT]/…`, `[USER@]HOST::MODULE/…`,
/// `[USER@]HOST:PATH` (ssh); `None` for a local path. An IPv6 literal
/// keeps its address without brackets.
pub fn upstream_host(src: &str) -> Option<String> {
    let (rest, daemon_url) = match src.strip_prefix("rsync://") {
        Some(r) => (r, true),
        None => (src, false),
    };
    let authority = if daemon_url {
        rest.split('/').next()?
    } else {
        let head = rest.split('/').next()?;
        if let Some((h, _)) = head.split_once("::") {
            h
        } else {
            head.split_once(':')?.0
        }
    };
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(v6) = authority.strip_prefix('[') {
        v6.split(']').next()?
    } else if daemon_url {
        authority.split(':').next()?
    } else {
        authority
    };
    (!host.is_empty()).then(|| host.to_string())
}

/// Why a trace could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TraceError {
    /// Over [`MAX_TRACE_BYTES`].
    TooBig(usize),
    /// Empty, or the first line is not a `date -u` date.
    NoDate(String),
}

impl std::fmt::Display for TraceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TraceError::TooBig(n) => write!(f, "trace of {n} bytes is over the limit of {MAX_TRACE_BYTES}: refused"),
            TraceError::NoDate(l) => {
                write!(f, "not a trace: line 1 is not a date like 'Thu Dec  3 05:15:42 UTC 2026': {l:?}")
            }
        }
    }
}

impl std::error::Error for TraceError {}

/// A trace as read: the date of its first line and its fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedTrace {
    /// The first line's date, seconds since the epoch.
    pub date: i64,
    /// (lower-case key, value) in file order.
    pub fields: Vec<(String, String)>,
}

impl ParsedTrace {
    /// The value of `key` (any case); the last line with it wins, as in
    /// mirror-status.
    pub fn get(&self, key: &str) -> Option<&str> {
        let key = key.to_ascii_lowercase();
        self.fields.iter().rev().find(|(k, _)| *k == key).map(|(_, v)| v.as_str())
    }

    /// `Archive serial`.
    pub fn archive_serial(&self) -> Option<&str> {
        self.get("archive serial")
    }

    /// `Upstream-mirror`.
    pub fn upstream(&self) -> Option<&str> {
        self.get("upstream-mirror")
    }

    /// `Running on host`.
    pub fn host(&self) -> Option<&str> {
        self.get("running on host")
    }
}

/// Read a trace the way mirror-status does (its rules, with a size bound
/// and an error for a first line that is not a date). Bytes that are not
/// UTF-8 are read as Latin-1, as mirror-status falls back to ISO 8859-1.
pub fn parse(bytes: &[u8]) -> Result<ParsedTrace, TraceError> {
    if bytes.len() > MAX_TRACE_BYTES {
        return Err(TraceError::TooBig(bytes.len()));
    }
    let text = match std::str::from_utf8(bytes) {
        Ok(s) => s.to_string(),
        Err(_) => bytes.iter().map(|&b| char::from(b)).collect(),
    };
    let mut lines = text.split('\n');
    let first = lines.next().unwrap_or_default().trim_end_matches('\r');
    let date = parse_date_u(first).ok_or_else(|| TraceError::NoDate(first.chars().take(80).collect()))?;
    let fields = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.to_lowercase(), v.trim_start().trim_end_matches('\r').to_string()))
        .collect();
    Ok(ParsedTrace { date, fields })
}

/// One line of `_hierarchy`, as ftpsync writes it: the trace file's name,
/// the mirror's name, the host that ran the sync and its upstream host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HierarchyLine {
    /// The trace file's name in the trace directory.
    pub trace: String,
    /// The mirror's name (ftpsync's `MIRRORNAME`).
    pub mirror: String,
    /// The host that ran the sync (ftpsync's `TRACEHOST`).
    pub host: String,
    /// The upstream host, `unknown` when there is none.
    pub upstream: String,
}

/// A token of `_hierarchy`: no blanks or control characters inside
/// (the line is split at blanks); an empty one is `unknown`.
fn token(s: &str) -> String {
    let t: String = s.chars().filter(|c| !c.is_whitespace() && !c.is_control()).collect();
    if t.is_empty() {
        "unknown".into()
    } else {
        t
    }
}

impl HierarchyLine {
    /// The line, without its line end.
    pub fn render(&self) -> String {
        format!("{} {} {} {}", token(&self.trace), token(&self.mirror), token(&self.host), token(&self.upstream))
    }
}

/// This host's `_hierarchy`: the upstream's lines (bounded: past
/// [`MAX_TRACE_BYTES`] or [`MAX_HIERARCHY_LINES`] the oldest are dropped),
/// without blank lines and without an earlier line of this host's trace
/// (so that repeated passes, or a loop in the chain, replace it instead of
/// stacking copies), then this host's line.
pub fn hierarchy(upstream: &[u8], me: &HierarchyLine) -> String {
    let upstream = &upstream[upstream.len().saturating_sub(MAX_TRACE_BYTES)..];
    let text = String::from_utf8_lossy(upstream);
    let name = token(&me.trace);
    let kept: Vec<String> = text
        .lines()
        .map(|l| l.split_whitespace().map(token).collect::<Vec<_>>())
        .filter(|t| !t.is_empty() && t[0] != name)
        .map(|t| t.join(" "))
        .collect();
    let start = kept.len().saturating_sub(MAX_HIERARCHY_LINES - 1);
    let mut out = String::new();
    for l in &kept[start..] {
        out.push_str(l);
        out.push('\n');
    }
    out.push_str(&me.render());
    out.push('\n');
    out
}

/// The epoch-first timestamp file for mirmon and mirrorbits (what CPAN
/// publishes as `indices/timestamp.txt`): one line, the whole seconds
/// since the epoch as the first token, then the same instant for people
/// (`1764738942 2026-12-03T05:15:42Z`). Readers take the first token only.
pub fn timestamp_file(secs: i64) -> String {
    format!("{secs} {}\n", crate::output::human::time(secs as f64))
}

/// The first token of a timestamp file as whole seconds (a fraction is
/// dropped); `None` when it is not a number.
pub fn parse_timestamp_file(bytes: &[u8]) -> Option<i64> {
    let head = &bytes[..bytes.len().min(256)];
    let first = std::str::from_utf8(head).ok()?.split_whitespace().next()?;
    let whole = first.split('.').next()?;
    whole.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Trace {
        Trace {
            date: 1_796_274_942,
            date_started: Some(1_796_274_900),
            archive_serial: Some("1796274941.123456".into()),
            host: "mirror.example.org".into(),
            maintainer: Some("Ops <ops@example.org>".into()),
            upstream: Some("tier1.example.org".into()),
            trigger: Some(Trigger::Loop),
            extra: vec![],
        }
    }

    #[test]
    fn dates_as_date_u_and_rfc2822() {
        // `date -u -d @1796274942` and `date -u -R -d @1796274942`.
        assert_eq!(date_u(1_796_274_942), "Thu Dec  3 05:15:42 UTC 2026");
        assert_eq!(date_rfc2822(1_796_274_942), "Thu, 03 Dec 2026 05:15:42 +0000");
        assert_eq!(date_u(0), "Thu Jan  1 00:00:00 UTC 1970");
        assert_eq!(date_u(951_825_600), "Tue Feb 29 12:00:00 UTC 2000");
        for t in [0, 951_825_600, 1_796_274_942, 4_102_444_799, 1_234_567_890] {
            assert_eq!(parse_date_u(&date_u(t)), Some(t), "{t}");
        }
        assert_eq!(parse_date_u("Thu Dec 3 05:15:42 GMT 2026"), Some(1_796_274_942));
        for bad in ["", "Thu Dec  3 05:15:42 CET 2026", "Xyz Dec  3 05:15:42 UTC 2026", "Thu Dec 32 05:15:42 UTC 2026"]
        {
            assert_eq!(parse_date_u(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn render_is_ftpsyncs_layout() {
        let text = sample().render();
        let want = format!(
            "Thu Dec  3 05:15:42 UTC 2026\n\
             Date: Thu, 03 Dec 2026 05:15:42 +0000\n\
             Date-Started: Thu, 03 Dec 2026 05:15:00 +0000\n\
             Archive serial: 1796274941.123456\n\
             Used rrr version: {v}\n\
             Creator: rrr {v}\n\
             Running on host: mirror.example.org\n\
             Maintainer: Ops <ops@example.org>\n\
             Trigger: loop\n\
             Upstream-mirror: tier1.example.org\n",
            v = rrr_version()
        );
        assert_eq!(text, want);
    }

    #[test]
    fn a_newline_in_a_value_cannot_forge_a_field() {
        let mut t = sample();
        t.maintainer = Some("me\nUpstream-mirror: evil".into());
        let p = parse(t.render().as_bytes()).unwrap();
        assert_eq!(p.upstream(), Some("tier1.example.org"));
        assert_eq!(p.get("maintainer"), Some("me Upstream-mirror: evil"));
    }

    #[test]
    fn reads_back_what_it_writes() {
        let p = parse(sample().render().as_bytes()).unwrap();
        assert_eq!(p.date, 1_796_274_942);
        assert_eq!(p.archive_serial(), Some("1796274941.123456"));
        assert_eq!(p.upstream(), Some("tier1.example.org"));
        assert_eq!(p.host(), Some("mirror.example.org"));
        assert_eq!(p.get("TRIGGER"), Some("loop"));
    }

    #[test]
    fn reads_a_real_ftpsync_trace() {
        // The layout of a Debian mirror's trace (fields as ftpsync 20180513 writes them).
        let t = "Sat Nov 28 21:23:35 UTC 2026\n\
                 Date: Sat, 28 Nov 2026 21:23:35 +0000\n\
                 Date-Started: Sat, 28 Nov 2026 21:20:02 +0000\n\
                 Archive serial: 2026112802\n\
                 Used ftpsync version: 20180513\n\
                 Creator: ftpsync 20180513\n\
                 Running on host: mirror.example.net\n\
                 Architectures: GUESSED:{ all amd64 arm64}\n\
                 Upstream-mirror: syncproxy2.example.net\n\
                 Total bytes received in rsync: 1234\n";
        let p = parse(t.as_bytes()).unwrap();
        assert_eq!(p.archive_serial(), Some("2026112802"));
        assert_eq!(p.get("architectures"), Some("GUESSED:{ all amd64 arm64}"));
        assert_eq!(p.get("used ftpsync version"), Some("20180513"));
    }

    #[test]
    fn hostile_traces_are_refused_clearly() {
        assert_eq!(parse(&vec![b'x'; MAX_TRACE_BYTES + 1]), Err(TraceError::TooBig(MAX_TRACE_BYTES + 1)));
        let e = parse(b"<html>404</html>\n").unwrap_err();
        assert!(e.to_string().contains("line 1 is not a date"), "{e}");
        assert!(parse(b"").is_err());
        // Latin-1 bytes are read, not refused.
        let p = parse(b"Thu Dec  3 05:15:42 UTC 2026\nMaintainer: Jos\xe9\n").unwrap();
        assert_eq!(p.get("maintainer"), Some("José"));
    }

    #[test]
    fn hierarchy_appends_this_host_once() {
        let me = HierarchyLine {
            trace: "t2.example".into(),
            mirror: "t2.example".into(),
            host: "t2.example".into(),
            upstream: "t1.example".into(),
        };
        let up = b"master origin.example origin.example unknown\n\nt1.example t1.example t1.example origin.example\n";
        let h = hierarchy(up, &me);
        assert_eq!(
            h,
            "master origin.example origin.example unknown\n\
             t1.example t1.example t1.example origin.example\n\
             t2.example t2.example t2.example t1.example\n"
        );
        // Again (our own line came back from upstream in a loop): once.
        assert_eq!(hierarchy(h.as_bytes(), &me), h);
        // Hostile: endless lines are bounded; spaces in a name cannot add a token.
        let many = "x a b c\n".repeat(10_000);
        let h = hierarchy(many.as_bytes(), &HierarchyLine { trace: "my host".into(), ..me });
        assert_eq!(h.lines().count(), MAX_HIERARCHY_LINES);
        assert!(h.ends_with("myhost t2.example t2.example t1.example\n"), "{h}");
    }

    #[test]
    fn upstream_hosts() {
        for (src, want) in [
            ("rsync://cpan.example.org/CPAN/RECENT.recent", Some("cpan.example.org")),
            ("rsync://u@cpan.example.org:8873/CPAN/RECENT.recent", Some("cpan.example.org")),
            ("rsync://[::1]:8873/M/RECENT.recent", Some("::1")),
            ("cpan.example.org::CPAN/RECENT.recent", Some("cpan.example.org")),
            ("me@tier1:/srv/CPAN/RECENT.recent", Some("tier1")),
            ("/srv/CPAN/RECENT.recent", None),
            ("RECENT.recent", None),
        ] {
            assert_eq!(upstream_host(src).as_deref(), want, "{src}");
        }
    }

    #[test]
    fn timestamp_file_is_epoch_first() {
        let t = timestamp_file(1_796_274_942);
        assert_eq!(t, "1796274942 2026-12-03T05:15:42Z\n");
        assert_eq!(parse_timestamp_file(t.as_bytes()), Some(1_796_274_942));
        assert_eq!(parse_timestamp_file(b"1796274942.5\n"), Some(1_796_274_942));
        assert_eq!(parse_timestamp_file(b"junk"), None);
    }

    /// mirror-status's parse rules (dmt/checks.py, TracefileFetcher.parse_tracefile),
    /// ported as the oracle: the first line through strptime with
    /// `%a %b %d %H:%M:%S UTC %Y` (or GMT), every other line split at the
    /// first ':' into a lower-cased key and a value with leading blanks
    /// stripped; a later key wins.
    fn mirror_status_parse(text: &str) -> Option<(i64, std::collections::HashMap<String, String>)> {
        let mut lines = text.split('\n');
        let first = lines.next()?;
        let ts = parse_date_u(first)?;
        let mut content = std::collections::HashMap::new();
        for line in lines {
            let parts: Vec<&str> = line.splitn(2, ':').collect();
            if parts.len() == 2 {
                content.insert(parts[0].to_lowercase(), parts[1].trim_start().to_string());
            }
        }
        Some((ts, content))
    }

    #[test]
    fn debian_style_parse_reads_rrrs_traces() {
        let mut t = sample();
        t.extra.push(("Dirtymark".into(), "1796000000.1".into()));
        let (ts, c) = mirror_status_parse(&t.render()).expect("mirror-status reads it");
        assert_eq!(ts, t.date);
        assert_eq!(c["date"], "Thu, 03 Dec 2026 05:15:42 +0000");
        assert_eq!(c["date-started"], "Thu, 03 Dec 2026 05:15:00 +0000");
        assert_eq!(c["archive serial"], "1796274941.123456");
        assert_eq!(c["creator"], format!("rrr {}", rrr_version()));
        assert_eq!(c["running on host"], "mirror.example.org");
        assert_eq!(c["upstream-mirror"], "tier1.example.org");
        assert_eq!(c["trigger"], "loop");
        assert_eq!(c["dirtymark"], "1796000000.1");
        // The master trace: no upstream, no trigger, no start.
        let m = Trace { date_started: None, upstream: None, trigger: None, maintainer: None, ..sample() };
        let (_, c) = mirror_status_parse(&m.render()).unwrap();
        assert!(!c.contains_key("upstream-mirror") && !c.contains_key("trigger"));
    }
}
