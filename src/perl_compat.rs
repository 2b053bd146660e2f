//! The Perl tools' command lines (`rrr-news -after E -max N -local FILE`,
//! `rrr-client --source … --target …`) translated into `rrr` invocations,
//! so an existing crontab keeps working (protocol.md 13,
//! docs/decisions.md#perl-entry-points).
//!
//! Options are parsed as Getopt::Long does by default: `-x` and `--x`,
//! `--x=v` and `--x v`, unique abbreviations, case-insensitive names
//! (`_` and `-` are interchangeable here), `--no-x`/`--nox` for the
//! negatable ones. An option rrr has no use for is accepted with a
//! one-line warning; an unknown one is a usage error, as in Perl. `--help`
//! prints the Perl script's own usage (`pod2usage`, from `perl_help.txt`).
//! Where the Perl tool behaves differently from `rrr`, the Perl behaviour
//! is kept: `rrr-update` aggregates (forced, twice) only with `--epoch`,
//! does not look at the disk, only warns about a path outside the root and
//! dies on a `--delete` of a path the collection does not list;
//! `rrr-fsck` repairs unless `--dry-run`.

use crate::sys::clock::local_time;

/// What a Perl entry point asks for: `rrr` argument lists to run in
/// order, environment to set, warnings to print first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Translation {
    /// `rrr` argument lists (without the program name), run in order.
    pub steps: Vec<Vec<String>>,
    /// Environment variables to set for the steps.
    pub env: Vec<(String, String)>,
    /// Lines for stderr before anything runs (ignored options, dry-run notes).
    pub warnings: Vec<String>,
    /// `--help`: the Perl script's usage, for stdout (and exit 0).
    pub help: Option<&'static str>,
    /// The steps after the first only follow up what the first one
    /// committed (`rrr-update --epoch`'s aggregates): if one fails, the
    /// change is still recorded, and the run exits 1 saying so
    /// (docs/decisions.md#locks, "Durable updates"), not 2 as if nothing had happened.
    pub follow_ups: bool,
}

/// The Perl entry points rrr answers to.
pub const TOOLS: &[&str] =
    &["rrr-init", "rrr-update", "rrr-aggregate", "rrr-news", "rrr-overview", "rrr-fsck", "rrr-server", "rrr-client"];

#[derive(Clone, Copy)]
enum Kind {
    Flag,
    /// A flag Getopt::Long also takes as `--no-x` / `--nox` (`x!`).
    Negatable,
    Value,
}

struct Spec {
    name: &'static str,
    aliases: &'static [&'static str],
    kind: Kind,
}

const fn flag(name: &'static str, aliases: &'static [&'static str]) -> Spec {
    Spec { name, aliases, kind: Kind::Flag }
}
const fn negatable(name: &'static str) -> Spec {
    Spec { name, aliases: &[], kind: Kind::Negatable }
}
const fn value(name: &'static str) -> Spec {
    Spec { name, aliases: &[], kind: Kind::Value }
}
const fn value_aka(name: &'static str, aliases: &'static [&'static str]) -> Spec {
    Spec { name, aliases, kind: Kind::Value }
}

const RRR_INIT: &[Spec] = &[
    value("aggregator"),
    flag("force", &["f"]),
    value("serializer_suffix"),
    flag("verbose", &["v"]),
    flag("help", &["h"]),
];
const RRR_UPDATE: &[Spec] = &[
    flag("add", &[]),
    flag("delete", &[]),
    value("epoch"),
    flag("dry-run", &["n"]),
    flag("verbose", &["v"]),
    flag("help", &["h"]),
];
const RRR_AGGREGATE: &[Spec] =
    &[value("locktimeout"), negatable("dry-run"), flag("verbose", &["v"]), flag("help", &["h"])];
const RRR_NEWS: &[Spec] = &[
    value("after"),
    value("before"),
    value("contains_epoch"),
    value("contains_path"),
    value("contains_type"),
    negatable("dry-run"),
    value("local"),
    value("localroot"),
    value("max"),
    value("remote"),
    value_aka("rsync_options", &["rsync"]),
    negatable("skip-deletes"),
    flag("verbose", &["v"]),
    flag("help", &["h"]),
];
const RRR_OVERVIEW: &[Spec] = &[flag("verbose", &["v"]), flag("help", &["h"])];
const RRR_FSCK: &[Spec] =
    &[flag("dry-run", &["n"]), value("remoteroot"), flag("yes", &["y"]), flag("verbose", &["v"]), flag("help", &["h"])];
const RRR_SERVER: &[Spec] = &[flag("verbose", &["v"]), flag("help", &["h"])];
const RRR_CLIENT: &[Spec] = &[
    value("source"),
    value("target"),
    value("user"),
    value("password"),
    value("tmpdir"),
    value("runstatusfile"),
    negatable("skip-deletes"),
    // rrr's own: make an existing tree a mirror of --source
    // (docs/decisions.md#ownership).
    flag("adopt", &[]),
    negatable("verbose"),
    value("verboselog"),
    flag("help", &["h"]),
];

fn specs(tool: &str) -> &'static [Spec] {
    match tool {
        "rrr-init" => RRR_INIT,
        "rrr-update" => RRR_UPDATE,
        "rrr-aggregate" => RRR_AGGREGATE,
        "rrr-news" => RRR_NEWS,
        "rrr-overview" => RRR_OVERVIEW,
        "rrr-fsck" => RRR_FSCK,
        "rrr-server" => RRR_SERVER,
        "rrr-client" => RRR_CLIENT,
        _ => &[],
    }
}

/// The options `tool` takes, by their Perl names (`contains_path`,
/// `dry-run`, …), for its man page and shell completion.
pub fn option_names(tool: &str) -> Vec<&'static str> {
    specs(tool).iter().map(|s| s.name).collect()
}

fn norm(s: &str) -> String {
    s.to_ascii_lowercase().replace('_', "-")
}

/// Parsed Getopt::Long-style options: (name, value) in order, and the rest.
/// Options in order as (name, value), and the remaining arguments.
type Parsed = (Vec<(&'static str, Option<String>)>, Vec<String>);

fn getopt(tool: &str, args: &[String]) -> Result<Parsed, String> {
    let specs: &'static [Spec] = specs(tool);
    let mut opts = Vec::new();
    let mut rest = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if a == "--" {
            rest.extend(args[i..].iter().cloned());
            break;
        }
        let Some(body) = a.strip_prefix("--").or_else(|| a.strip_prefix('-')).filter(|b| !b.is_empty()) else {
            rest.push(a.clone());
            continue;
        };
        let (name, inline) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (body, None),
        };
        let n = norm(name);
        let exact = specs.iter().find(|s| norm(s.name) == n || s.aliases.iter().any(|al| norm(al) == n));
        // `--no-x` / `--nox` of a negatable `x`: as if `--x` had not been given.
        let negated = exact.is_none().then(|| n.strip_prefix("no").map(|r| r.strip_prefix('-').unwrap_or(r))).flatten();
        if let Some(spec) =
            negated.and_then(|r| specs.iter().find(|s| matches!(s.kind, Kind::Negatable) && norm(s.name) == r))
        {
            opts.retain(|(k, _)| *k != spec.name);
            continue;
        }
        let spec = match exact {
            Some(s) => s,
            None => {
                let cands: Vec<&'static Spec> = specs.iter().filter(|s| norm(s.name).starts_with(&n)).collect();
                match cands.as_slice() {
                    [one] => *one,
                    [] => return Err(format!("{tool}: unknown option: {name}")),
                    many => {
                        return Err(format!(
                            "{tool}: option {name} is ambiguous ({})",
                            many.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
                        ))
                    }
                }
            }
        };
        match spec.kind {
            Kind::Flag | Kind::Negatable => opts.push((spec.name, None)),
            Kind::Value => {
                let v = match inline {
                    Some(v) => v,
                    None if i < args.len() => {
                        i += 1;
                        args[i - 1].clone()
                    }
                    None => return Err(format!("{tool}: option {} requires an argument", spec.name)),
                };
                opts.push((spec.name, Some(v)));
            }
        }
    }
    Ok((opts, rest))
}

fn s(v: &str) -> String {
    v.to_string()
}

/// Translate `tool args…` (tool = the program's file name, e.g. `rrr-news`).
pub fn translate(tool: &str, args: &[String]) -> Result<Translation, String> {
    if !TOOLS.contains(&tool) {
        return Err(format!("{tool}: not a Perl entry point rrr knows ({})", TOOLS.join(", ")));
    }
    let (opts, rest) = getopt(tool, args)?;
    let cmd = Command { tool, opts, rest };
    let mut t = Translation::default();
    if cmd.has("help") {
        t.help = Some(perl_usage(tool));
        return Ok(t);
    }
    let script = match tool {
        "rrr-init" => init,
        "rrr-update" => update,
        "rrr-aggregate" => aggregate,
        "rrr-news" => news,
        "rrr-overview" => overview,
        "rrr-fsck" => fsck,
        "rrr-server" => server,
        "rrr-client" => client,
        _ => unreachable!("checked against TOOLS"),
    };
    script(&cmd, &mut t)?;
    Ok(t)
}

/// A Perl tool's command line as Getopt::Long parsed it: what each
/// script's translation below reads.
struct Command<'a> {
    tool: &'a str,
    opts: Vec<(&'static str, Option<String>)>,
    rest: Vec<String>,
}

impl Command<'_> {
    /// The option's value; the last one wins, as in Getopt::Long.
    fn get(&self, n: &str) -> Option<String> {
        self.opts.iter().rev().find(|(k, _)| *k == n).and_then(|(_, v)| v.clone())
    }

    fn has(&self, n: &str) -> bool {
        self.opts.iter().any(|(k, _)| *k == n)
    }

    /// Accept an option rrr has no use for, with a one-line warning.
    fn ignored(&self, t: &mut Translation, n: &str, why: &str) {
        if self.has(n) {
            t.warnings.push(format!("{}: option --{n} is ignored ({why})", self.tool));
        }
    }

    fn one_positional(&self, what: &str) -> Result<String, String> {
        let tool = self.tool;
        match self.rest.as_slice() {
            [p] => Ok(p.clone()),
            [] => Err(format!("{tool}: missing {what}")),
            _ => Err(format!("{tool}: expected one {what}, got {}", self.rest.len())),
        }
    }
}

/// `rrr-init [--aggregator LIST] [--serializer_suffix S] [--force] DIR`.
fn init(c: &Command, t: &mut Translation) -> Result<(), String> {
    let tool = c.tool;
    c.ignored(t, "verbose", "rrr shows a progress bar on a terminal");
    let dir = c.one_positional("DIR")?;
    let list = c.get("aggregator").unwrap_or_else(|| s("1h,1d,1M,1Y,Z"));
    let ivs: Vec<&str> = list.split(',').map(str::trim).filter(|x| !x.is_empty()).collect();
    let (first, others) = ivs.split_first().ok_or_else(|| format!("{tool}: empty --aggregator"))?;
    let mut step = vec![s("init"), s("--interval"), s(first), s("--aggregator"), others.join(",")];
    if let Some(suffix) = c.get("serializer_suffix") {
        let fmt = suffix.trim_start_matches('.');
        if fmt != "yaml" && fmt != "json" {
            return Err(format!("{tool}: serializer suffix {suffix:?} is not supported (.yaml or .json)"));
        }
        step.extend([s("--format"), s(fmt)]);
    }
    if c.has("force") {
        step.push(s("--force"));
    }
    step.push(dir);
    t.steps.push(step);
    Ok(())
}

/// `rrr-update PRINCIPAL FILE`: only the principal; with `--epoch` the
/// dirty update is followed by two forced aggregates, as the script does.
fn update(c: &Command, t: &mut Translation) -> Result<(), String> {
    let tool = c.tool;
    c.ignored(t, "verbose", "no verbose mode");
    let [principal, file] = c.rest.as_slice() else {
        return Err(format!("{tool}: expected PRINCIPAL FILE"));
    };
    let mut step = vec![s("update"), s("--perl")];
    if c.has("delete") {
        step.push(s("--delete"));
    } else if c.has("add") {
        step.push(s("--add"));
    }
    if let Some(e) = c.get("epoch") {
        step.extend([s("--epoch"), e]);
    }
    step.extend([principal.clone(), file.clone()]);
    if c.has("dry-run") {
        t.warnings.push(format!("{tool}: dry run: would run rrr {}", step.join(" ")));
        return Ok(());
    }
    t.steps.push(step);
    // Only a dirty update aggregates afterwards: forced, twice.
    if c.has("epoch") {
        t.steps.push(vec![s("aggregate"), s("--force"), principal.clone()]);
        t.steps.push(vec![s("aggregate"), s("--force"), principal.clone()]);
        t.follow_ups = true;
    }
    Ok(())
}

/// `rrr-aggregate [--locktimeout S] PRINCIPAL`.
fn aggregate(c: &Command, t: &mut Translation) -> Result<(), String> {
    c.ignored(t, "verbose", "no verbose mode");
    let p = c.one_positional("PRINCIPAL")?;
    if c.has("dry-run") {
        t.warnings.push(format!("{}: dry run: not aggregating {p}", c.tool));
        return Ok(());
    }
    let mut step = Vec::new();
    if let Some(l) = c.get("locktimeout") {
        step.extend([s("--locktimeout"), l]);
    }
    step.extend([s("aggregate"), p]);
    t.steps.push(step);
    Ok(())
}

/// `rrr-news (--local P | --remote SRC [--localroot D] | P) [filters]`;
/// a `--contains-*` filter without `--max` shows one line, as the script does.
fn news(c: &Command, t: &mut Translation) -> Result<(), String> {
    let tool = c.tool;
    c.ignored(t, "verbose", "no verbose mode");
    c.ignored(t, "rsync_options", "rrr uses its own safe rsync options");
    if c.has("dry-run") {
        return Err(format!("{tool}: --dry-run is not supported (the Perl tool dies on it too)"));
    }
    let mut step = vec![s("news"), s("--perl-format")];
    match (c.get("local"), c.get("remote")) {
        (Some(l), None) => step.extend([s("--local"), l]),
        (None, Some(r)) => {
            step.extend([s("--remote"), r]);
            if let Some(lr) = c.get("localroot") {
                step.extend([s("--localroot"), lr]);
            }
        }
        (None, None) => match c.rest.as_slice() {
            [p] => step.extend([s("--local"), p.clone()]),
            _ => return Err(format!("{tool}: give --local PRINCIPAL or --remote SRC")),
        },
        (Some(_), Some(_)) => return Err(format!("{tool}: --local and --remote exclude each other")),
    }
    for (perl, ours) in [("after", "--after"), ("before", "--before"), ("max", "--max")] {
        if let Some(v) = c.get(perl) {
            step.extend([s(ours), v]);
        }
    }
    if c.has("skip-deletes") {
        step.push(s("--skip-deletes"));
    }
    let mut contains = false;
    for (perl, ours) in [
        ("contains_path", "--contains-path"),
        ("contains_epoch", "--contains-epoch"),
        ("contains_type", "--contains-type"),
    ] {
        if let Some(v) = c.get(perl) {
            step.extend([s(ours), v]);
            contains = true;
        }
    }
    if contains && !c.has("max") {
        step.extend([s("--max"), s("1")]);
    }
    t.steps.push(step);
    Ok(())
}

/// `rrr-overview [--verbose] [PRINCIPAL]` (default `./RECENT.recent`).
fn overview(c: &Command, t: &mut Translation) -> Result<(), String> {
    let mut step = vec![s("overview"), s("--perl-format")];
    if c.has("verbose") {
        step.push(s("--verbose"));
    }
    match c.rest.as_slice() {
        [] => step.push(s("./RECENT.recent")),
        [p] => step.push(p.clone()),
        _ => return Err(format!("{}: expected at most one PRINCIPAL", c.tool)),
    }
    t.steps.push(step);
    Ok(())
}

/// `rrr-fsck PRINCIPAL`: repairs unless `--dry-run`, as the script does.
fn fsck(c: &Command, t: &mut Translation) -> Result<(), String> {
    c.ignored(t, "verbose", "fsck lists every finding");
    c.ignored(t, "remoteroot", "fetching missing files from a remote is rmirror's job");
    c.ignored(t, "yes", "rrr never unlinks tree files in fsck");
    let p = c.one_positional("PRINCIPAL")?;
    let mut step = vec![s("fsck")];
    if !c.has("dry-run") {
        step.push(s("--repair"));
    }
    step.push(p);
    t.steps.push(step);
    Ok(())
}

/// `rrr-server PRINCIPAL`: the watch daemon.
fn server(c: &Command, t: &mut Translation) -> Result<(), String> {
    c.ignored(t, "verbose", "rrr watch logs one line per batch");
    let p = c.one_positional("PRINCIPAL")?;
    t.steps.push(vec![s("watch"), p]);
    Ok(())
}

/// `rrr-client --source SRC --target DIR [--user U] [--password P]`:
/// `rmirror --loop`, the password through `RSYNC_PASSWORD`.
fn client(c: &Command, t: &mut Translation) -> Result<(), String> {
    let tool = c.tool;
    c.ignored(t, "verbose", "rrr rmirror logs one line per pass");
    c.ignored(t, "verboselog", "logs go to stderr");
    c.ignored(t, "tmpdir", "rrr keeps its temp files hidden in the target");
    c.ignored(t, "runstatusfile", "rrr keeps its state in <target>/.rrr/state.json");
    if !c.rest.is_empty() {
        return Err(format!("{tool}: unexpected arguments: {}", c.rest.join(" ")));
    }
    let source = c.get("source").ok_or_else(|| format!("{tool}: --source is required"))?;
    let target = c.get("target").ok_or_else(|| format!("{tool}: --target is required"))?;
    let source = match c.get("user") {
        Some(u) => with_user(&source, &u),
        None => source,
    };
    if let Some(p) = c.get("password") {
        t.env.push((s("RSYNC_PASSWORD"), p));
    }
    let mut step = vec![s("rmirror"), s("--loop"), s("--remote"), source, s("--localroot"), target];
    if c.has("skip-deletes") {
        step.push(s("--skip-deletes"));
    }
    if c.has("adopt") {
        step.push(s("--adopt"));
    }
    t.steps.push(step);
    Ok(())
}

/// The Perl script's `--help` (its `pod2usage(0)`): "Usage:", its
/// synopsis, "Options:" and the options it documents.
pub fn perl_usage(tool: &str) -> &'static str {
    const HELP: &str = include_str!("perl_help.txt");
    let header = format!("=== {tool}\n");
    let Some(start) = HELP.find(&header).map(|i| i + header.len()) else { return "" };
    let end = HELP[start..].find("\n=== ").map_or(HELP.len(), |i| start + i + 1);
    &HELP[start..end]
}

/// `HOST::MOD/x` + user → `user@HOST::MOD/x`; `rsync://HOST/…` → `rsync://user@HOST/…`.
fn with_user(source: &str, user: &str) -> String {
    if let Some(rest) = source.strip_prefix("rsync://") {
        if rest.contains('@') {
            return source.to_string();
        }
        return format!("rsync://{user}@{rest}");
    }
    if source.contains('@') || source.starts_with('/') {
        return source.to_string();
    }
    format!("{user}@{source}")
}

/// Perl's `scalar localtime(epoch)` in the process's time zone, as
/// `rrr-news` prints it: `Tue Nov 14 22:20:00 2023`.
fn perl_localtime(secs: i64) -> String {
    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    // Beyond the years libc and Perl can break down (2^31), Perl's
    // localtime is undef: an empty string.
    let Some(t) = local_time(secs) else { return String::new() };
    format!(
        "{} {} {:2} {:02}:{:02}:{:02} {}",
        DAYS[t.weekday], MONTHS[t.month], t.day, t.hour, t.minute, t.second, t.year
    )
}

/// One line of `rrr-news`: `sprintf("%-20s %s\n", localtime(epoch), path)`.
/// The Perl script prints the name's bytes as they are.
pub(crate) fn perl_news_line(epoch_secs: i64, path: &[u8]) -> Vec<u8> {
    let mut line = format!("{:<20} ", perl_localtime(epoch_secs)).into_bytes();
    line.extend_from_slice(path);
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tr(tool: &str, args: &[&str]) -> Translation {
        translate(tool, &args.iter().map(|a| a.to_string()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn getopt_spellings() {
        let a = tr("rrr-news", &["-after", "1700000000.5", "-max", "3", "-local", "R/RECENT.recent"]);
        let b = tr("rrr-news", &["--after=1700000000.5", "--max=3", "--local", "R/RECENT.recent"]);
        let c = tr("rrr-news", &["--aft", "1700000000.5", "--MAX", "3", "--LOCAL=R/RECENT.recent"]);
        assert_eq!(a, b);
        assert_eq!(a, c);
        assert_eq!(
            a.steps,
            [["news", "--perl-format", "--local", "R/RECENT.recent", "--after", "1700000000.5", "--max", "3"]]
        );
        assert!(translate("rrr-news", &["--bogus".into()]).unwrap_err().contains("unknown option"));
        assert!(translate("rrr-news", &["--contains".into(), "x".into()]).unwrap_err().contains("ambiguous"));
    }

    #[test]
    fn contains_implies_max_one() {
        let t = tr("rrr-news", &["--local", "P", "--contains_path", "a/b"]);
        assert_eq!(t.steps[0][4..], ["--contains-path", "a/b", "--max", "1"]);
    }

    #[test]
    fn init_update_fsck_keep_perl_behaviour() {
        let t = tr("rrr-init", &["--aggregator=1h,6h,Z", "--serializer_suffix=.json", "-f", "/srv/t"]);
        assert_eq!(
            t.steps,
            [["init", "--interval", "1h", "--aggregator", "6h,Z", "--format", "json", "--force", "/srv/t"]]
        );
        let t = tr("rrr-init", &["/srv/t"]);
        assert_eq!(t.steps[0][1..5], ["--interval", "1h", "--aggregator", "1d,1M,1Y,Z"]);
        let t = tr("rrr-update", &["--epoch=1700000000", "P", "f"]);
        assert_eq!(t.steps.len(), 3);
        assert_eq!(t.steps[1], ["aggregate", "--force", "P"]);
        assert_eq!(t.steps[2], ["aggregate", "--force", "P"]);
        // Without --epoch the Perl script only updates the principal.
        let t = tr("rrr-update", &["P", "f"]);
        assert_eq!(t.steps, [vec!["update", "--perl", "P", "f"]]);
        let t = tr("rrr-update", &["--delete", "P", "f"]);
        assert_eq!(t.steps, [vec!["update", "--perl", "--delete", "P", "f"]]);
        let t = tr("rrr-update", &["--add", "P", "f"]);
        assert_eq!(t.steps, [vec!["update", "--perl", "--add", "P", "f"]]);
        assert!(tr("rrr-update", &["-n", "P", "f"]).steps.is_empty());
        assert_eq!(tr("rrr-fsck", &["P"]).steps, [["fsck", "--repair", "P"]]);
        assert_eq!(tr("rrr-fsck", &["-n", "P"]).steps, [["fsck", "P"]]);
        assert_eq!(tr("rrr-aggregate", &["--locktimeout=5", "P"]).steps, [["--locktimeout", "5", "aggregate", "P"]]);
        assert_eq!(tr("rrr-overview", &[]).steps, [["overview", "--perl-format", "./RECENT.recent"]]);
        assert_eq!(tr("rrr-server", &["--verbose", "P"]).steps, [["watch", "P"]]);
    }

    #[test]
    fn help_is_the_perl_usage() {
        for tool in TOOLS {
            let t = tr(tool, &["--help"]);
            assert!(t.steps.is_empty(), "{tool}");
            let help = t.help.unwrap();
            assert!(help.starts_with("Usage:\n") && help.contains("\nOptions:\n"), "{tool}: {help}");
            assert!(help.contains(&format!("      {tool} ")), "{tool}: names itself: {help}");
            assert!(help.ends_with("\n\n") && !help.contains("==="), "{tool}");
            // Every option the parser takes is documented there, and back.
            for spec in specs(tool) {
                assert!(help.contains(&format!("--{}", spec.name)), "{tool}: --{} undocumented", spec.name);
            }
            let documented = help.lines().filter(|l| l.starts_with("    --")).count();
            assert_eq!(documented, specs(tool).len(), "{tool}");
        }
        assert!(tr("rrr-client", &["-h"]).help.unwrap().contains("--source=s"));
        assert!(tr("rrr-news", &["-h"]).help.unwrap().contains("--rsync_options|rsync=s@"));
    }

    #[test]
    fn negatable_and_aliased_options() {
        let t = tr("rrr-news", &["--skip-deletes", "--no-skip-deletes", "-local", "P"]);
        assert_eq!(t.steps, [["news", "--perl-format", "--local", "P"]]);
        let t = tr("rrr-news", &["--noskip-deletes", "--skip-deletes", "-local", "P"]);
        assert_eq!(t.steps, [["news", "--perl-format", "--local", "P", "--skip-deletes"]]);
        let t = tr("rrr-news", &["--rsync_options=compress=1", "-local", "P"]);
        assert!(t.warnings[0].contains("--rsync_options is ignored"), "{:?}", t.warnings);
        assert!(tr("rrr-news", &["--nodry-run", "-local", "P"]).steps.len() == 1);
        let t = tr("rrr-client", &["--source", "h::m/RECENT.recent", "--target", "/m", "--noverbose"]);
        assert!(t.warnings.is_empty(), "{:?}", t.warnings);
        assert!(translate("rrr-news", &["--nolocal".into(), "P".into()]).unwrap_err().contains("unknown option"));
    }

    #[test]
    fn client_maps_to_rmirror_loop() {
        let t = tr(
            "rrr-client",
            &[
                "--source",
                "cpan.example::CPAN/RECENT.recent",
                "--target",
                "/m",
                "--user",
                "u",
                "--password",
                "pw",
                "--tmpdir",
                "/tmp",
                "--skip-deletes",
            ],
        );
        assert_eq!(
            t.steps,
            [[
                "rmirror",
                "--loop",
                "--remote",
                "u@cpan.example::CPAN/RECENT.recent",
                "--localroot",
                "/m",
                "--skip-deletes"
            ]]
        );
        assert_eq!(t.env, [("RSYNC_PASSWORD".to_string(), "pw".to_string())]);
        assert_eq!(t.warnings.len(), 1);
        let t = translate(
            "rrr-client",
            &["-source".into(), "h::m/RECENT.recent".into(), "-target".into(), "/m".into(), "--adopt".into()],
        )
        .unwrap();
        assert_eq!(t.steps[0].last().map(String::as_str), Some("--adopt"));
        assert_eq!(with_user("rsync://h:873/m/RECENT.recent", "u"), "rsync://u@h:873/m/RECENT.recent");
    }

    #[test]
    fn localtime_format() {
        std::env::set_var("TZ", "UTC");
        assert_eq!(perl_localtime(1_700_000_000), "Tue Nov 14 22:13:20 2023");
        assert_eq!(perl_news_line(1_696_000_000, b"x"), b"Fri Sep 29 15:06:40 2023 x");
        assert_eq!(perl_localtime(1_699_000_000)[..10], *"Fri Nov  3");
        assert_eq!(perl_localtime(-1), "Wed Dec 31 23:59:59 1969");
        assert_eq!(perl_news_line(i64::MAX, b"x"), format!("{:20} x", "").as_bytes(), "beyond libc's years");
        // The zone is read again on each call, as Perl does.
        std::env::set_var("TZ", "JST-9");
        assert_eq!(perl_localtime(1_700_000_000), "Wed Nov 15 07:13:20 2023");
        std::env::set_var("TZ", "UTC");
    }
}
