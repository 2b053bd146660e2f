//! The words of `--help` and the man pages beyond the option list: the
//! examples of each command, the exit codes, the files rrr reads and
//! writes, its environment. One text for both: the binary puts it after
//! clap's help and renders it as roff sections (EXAMPLES, EXIT STATUS,
//! FILES, ENVIRONMENT, SEE ALSO) in the man pages. Pure data.

/// The exit codes (docs/decisions.md#exit-codes).
const EXIT_STATUS: &[(&str, &str)] = &[
    ("0", "success; fsck clean; a listing whose reader went away (| head)"),
    ("1", "differences found (fsck), or a pass finished with refused events, failing paths or deletes left pending; a daemon (watch, rmirror --loop) whose log or stdout closed, its state saved"),
    ("2", "usage or fatal error (the message names the file, line or path)"),
    ("75", "another run holds the lock (EX_TEMPFAIL: cron tries again later)"),
    ("130", "interrupted by SIGINT or SIGTERM (state saved)"),
];

/// `rrr check`'s exit codes (Nagios).
const CHECK_EXIT_STATUS: &[(&str, &str)] = &[
    ("0", "OK: every mirror complete within --warn"),
    ("1", "WARNING: lag at least --warn, deletes held back by --max-delete, a whole-tree pass owed, a failing path, events from the future, or a first pass still running (or interrupted)"),
    ("2", "CRITICAL: lag at least --crit, the last success older than --crit, or never complete and a pass failed (from the first attempt on) or its heartbeat is old"),
    ("3", "UNKNOWN: a tree never tried (no mirror state), or a usage error (--warn above --crit)"),
];

/// `rrr trigger`'s exit codes.
const TRIGGER_EXIT_STATUS: &[(&str, &str)] = &[
    ("0", "a running rmirror --loop was woken (it passes now, or right after its current pass)"),
    ("2", "usage or fatal error (e.g. no write permission on LOCALROOT/.rrr/trigger)"),
    ("3", "no rmirror --loop runs on the tree (polling, a one-shot run or nothing)"),
];

/// `rrr probe`'s exit codes.
const PROBE_EXIT_STATUS: &[(&str, &str)] = &[
    ("0", "every mirror fresh: its lag behind the freshest origin time (or --origin's) at most --max-lag"),
    ("1", "a mirror is stale (lag over --max-lag)"),
    ("2", "usage error (a URL that is not rsync://HOST[:PORT]/MODULE[/PATH])"),
    ("3", "a mirror could not be read (unreachable, timed out, no master trace); the worst mirror decides"),
];

/// The exit codes of `command`.
fn exit_status(command: &str) -> &'static [(&'static str, &'static str)] {
    match command {
        "check" => CHECK_EXIT_STATUS,
        "trigger" => TRIGGER_EXIT_STATUS,
        "probe" => PROBE_EXIT_STATUS,
        _ => EXIT_STATUS,
    }
}

/// The files rrr reads and writes.
const FILES: &[(&str, &str)] = &[
    ("ROOT/RECENT.recent", "the principal symlink, pointing at the smallest recentfile"),
    ("ROOT/RECENT-1h.yaml … RECENT-Z.yaml", "the recentfiles (or .json)"),
    (
        "ROOT/RECENT.beacon.json, RECENT.beacon.json.sig",
        "the origin's beacon (freshness, the recentfiles' sha256) and its SSHSIG signature",
    ),
    ("ROOT/RECENT-*.yaml.lock/", "a recentfile's lock, shared with the Perl tools (a directory with a file `process`)"),
    ("ROOT/.rrr/watch.json", "watch's heartbeat: pid, started, heartbeat, synced_to"),
    ("ROOT/.rrr/watch.flock", "watch's run lock"),
    (
        "LOCALROOT/.rrr/state.json",
        "rmirror's state and run record (--state FILE elsewhere): done-set, counters, heartbeat, the running pass",
    ),
    ("LOCALROOT/.rrr/rmirror.flock", "rmirror's run lock"),
    (
        "LOCALROOT/.rrr/trigger",
        "a named pipe (mode 0620) that a running rmirror --loop reads: rrr trigger writes to it",
    ),
    ("LOCALROOT/.rrr/id", "the tree's marker, matched against a --state kept outside the tree"),
    ("/etc/rrr/mirror.toml", "a conventional place for rmirror --config (any path works)"),
];

/// The environment rrr reads.
const ENVIRONMENT: &[(&str, &str)] = &[
    ("RRR_RSYNC", "the rsync program to run (default: rsync from PATH)"),
    ("RSYNC_PASSWORD", "passed on to rsync for daemon sources (rrr-client --password sets it)"),
    ("RUST_LOG", "log filter, e.g. debug or rrr=trace; wins over -v/-q"),
    ("TERM, CI", "TERM=dumb or CI set: no progress bars"),
    ("RRR_* (hooks)", "set for an --on-pass hook: RRR_LOCALROOT, RRR_REMOTE, RRR_STATUS, RRR_EXIT, RRR_TRANSFERRED, RRR_BYTES, RRR_DELETED, RRR_REFUSED, RRR_FAILING, RRR_ERRORS, RRR_COMPLETE, RRR_BOOTSTRAP, RRR_SECONDS, RRR_ERROR, RRR_UPSTREAM"),
];

/// (what it does, the command line) per command; `rrr` for the overview.
fn examples(command: &str) -> &'static [(&'static str, &'static str)] {
    match command {
        "rrr" => &[
            ("Index a tree, then keep the index current with the daemon", "rrr init --aggregate /srv/CPAN && rrr watch /srv/CPAN/RECENT.recent"),
            ("Mirror it elsewhere, one pass every 20 s", "rrr rmirror --loop --remote rsync://cpan.example.org/CPAN/RECENT.recent --localroot /srv/CPAN"),
            ("Is the mirror current?", "rrr check --warn 300 --crit 3600 --localroot /srv/CPAN"),
        ],
        "init" => &[
            ("Index an existing tree and run the first cascade", "rrr init --aggregate /srv/CPAN"),
            ("JSON recentfiles, leaving out temp files", "rrr init --format json --exclude '*.tmp' /srv/data"),
        ],
        "update" => &[
            ("Record an upload", "rrr update /srv/CPAN/RECENT.recent authors/id/A/AB/ABC/Foo-1.0.tar.gz"),
            ("Record a removal", "rrr update --delete /srv/CPAN/RECENT.recent authors/id/A/AB/ABC/Foo-0.9.tar.gz"),
            ("Many events under one lock", "printf 'new a/b\\ndelete c/d\\n' | rrr update --stdin /srv/CPAN/RECENT.recent"),
        ],
        "aggregate" => &[
            ("From cron when no watch daemon runs", "* * * * *  rrr aggregate /srv/CPAN/RECENT.recent"),
            ("Merge everything now", "rrr aggregate --force /srv/CPAN/RECENT.recent"),
        ],
        "news" => &[
            ("The ten newest changes", "rrr news --max 10 --local /srv/CPAN"),
            ("What changed after an epoch, as JSON Lines", "rrr news --json --after 1700000000 --local /srv/CPAN/RECENT.recent"),
            ("Ask a remote origin", "rrr news --max 5 --remote rsync://cpan.example.org/CPAN/RECENT.recent"),
        ],
        "overview" => &[
            ("The table of recentfiles", "rrr overview /srv/CPAN/RECENT.recent"),
            ("With dirtymark and times", "rrr overview -v /srv/CPAN/RECENT.recent"),
        ],
        "fsck" => &[
            ("Compare the index with the tree", "rrr fsck /srv/CPAN/RECENT.recent"),
            ("Record the differences now", "rrr fsck --repair /srv/CPAN/RECENT.recent"),
        ],
        "verify" => &[
            ("Is my mirror complete? (exit 0 complete, 1 differences)", "rrr verify --localroot /srv/CPAN"),
            ("Fetch what is missing or different with plain rsync", "rrr verify --localroot /srv/CPAN --fetch-list /tmp/fetch; rsync -a --from0 --files-from=/tmp/fetch cpan.example.org::CPAN/ /srv/CPAN/"),
        ],
        "watch" => &[
            ("Run the origin daemon (under systemd: contrib/systemd/rrr-watch.service)", "rrr watch /srv/CPAN/RECENT.recent"),
            ("JSON log and a node-exporter textfile", "rrr watch --json-log --prometheus /var/lib/node-exporter/rrr-watch.prom /srv/CPAN"),
        ],
        "rmirror" => &[
            ("One pass (from cron; exits 75 while another runs)", "rrr rmirror --remote rsync://cpan.example.org/CPAN/RECENT.recent --localroot /srv/CPAN"),
            ("Forever, a whole-tree pass weekly, a textfile for node-exporter", "rrr rmirror --loop --full-every 7d --prometheus /var/lib/node-exporter/rrr.prom --remote cpan.example.org::CPAN/RECENT.recent --localroot /srv/CPAN"),
            ("Several trees in one process", "rrr rmirror --loop --config /etc/rrr/mirror.toml"),
            ("What would change", "rrr rmirror --dry-run --remote rsync://cpan.example.org/CPAN/RECENT.recent --localroot /srv/CPAN"),
            ("Tell someone after each pass that changed something or failed", "rrr rmirror --loop --on-pass 'logger -t rrr \"$RRR_LOCALROOT $RRR_STATUS $RRR_TRANSFERRED\"' --config /etc/rrr/mirror.toml"),
        ],
        "status" => &[
            ("The run record", "rrr status --localroot /srv/CPAN"),
            ("Every tree of a config as JSON", "rrr status --json --config /etc/rrr/mirror.toml"),
        ],
        "check" => &[
            ("Nagios/Icinga check", "rrr check --warn 300 --crit 3600 --localroot /srv/CPAN"),
            ("All trees; the worst comes first and decides the exit code", "rrr check --warn 300 --crit 3600 --config /etc/rrr/mirror.toml"),
        ],
        "trigger" => &[
            ("Wake the loop mirroring into /srv/CPAN (e.g. an ssh forced command from the upstream)", "rrr trigger --localroot /srv/CPAN"),
            ("Chain tiers: after each pass that changed something, wake the next tier over ssh", "rrr rmirror --loop --interval 300 --on-pass 'ssh -i /etc/rrr/push_key rrr-push@mirror2 trigger' --remote rsync://tier0/CPAN/RECENT.recent --localroot /srv/CPAN"),
            ("Wake every loop of a config", "rrr trigger --config /etc/rrr/mirror.toml"),
        ],
        "beacon" => &[
            ("Refresh the signed beacon every minute from cron (origins that record with update)", "* * * * * rrr beacon --sign-key /etc/rrr/beacon_ed25519 --origin-name cpan.example.org /srv/CPAN/RECENT.recent"),
        ],
        "probe" => &[
            ("How fresh are two mirrors, behind the origin?", "rrr probe --origin rsync://origin.example.org/CPAN rsync://m1.example.org/CPAN rsync://m2.example.org/CPAN"),
            ("Every 5 minutes into node-exporter's textfile directory", "rrr probe --prometheus rsync://m1.example.org/CPAN > /var/lib/prometheus/node-exporter/rrr-probe.prom.new && mv /var/lib/prometheus/node-exporter/rrr-probe.prom.new /var/lib/prometheus/node-exporter/rrr-probe.prom"),
        ],
        "completions" => &[("Bash completion", "rrr completions bash > /etc/bash_completion.d/rrr")],
        "manpages" => &[("Install the man pages", "rrr manpages /usr/local/share/man/man1")],
        _ => &[],
    }
}

/// The text clap shows after a command's options (`rrr CMD --help`).
pub fn after_help(command: &str) -> String {
    let mut s = String::from("Examples:\n");
    for (what, cmd) in examples(command) {
        s.push_str(&format!("  # {what}\n  {cmd}\n"));
    }
    s.push_str("\nExit status:\n");
    for (code, what) in exit_status(command) {
        s.push_str(&format!("  {code:>3}  {what}\n"));
    }
    if command == "rrr" {
        s.push_str("\nEnvironment: RRR_RSYNC (the rsync program), RUST_LOG. See README.mirror and rrr(1).\n");
    }
    s
}

/// Where the package installs the operator manual (SEE ALSO).
pub const README_MIRROR: &str = "/usr/share/doc/rrr/README.mirror";

/// Escape text for roff (non-ASCII characters as `\\[uXXXX]`, which
/// groff reads whatever the input encoding).
pub fn roff(s: &str) -> String {
    let s: String = s
        .replace('\\', "\\e")
        .replace('-', "\\-")
        .chars()
        .map(|c| if c.is_ascii() { c.to_string() } else { format!("\\[u{:04X}]", u32::from(c)) })
        .collect();
    if s.starts_with(['.', '\'']) {
        format!("\\&{s}")
    } else {
        s
    }
}

fn tagged(out: &mut String, rows: &[(&str, &str)], bold: bool) {
    for (tag, text) in rows {
        let tag = if bold { format!("\\fB{}\\fR", roff(tag)) } else { roff(tag) };
        out.push_str(&format!(".TP\n{tag}\n{}\n", roff(text)));
    }
}

/// A synopsis written as plain text (`rrr-fsck [-n|--dry-run] PRINCIPAL`)
/// in roff: option names bold, their arguments (upper-case words) italic.
pub fn synopsis_roff(text: &str) -> String {
    let mut out = String::new();
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        if word.is_empty() {
            return;
        }
        let w = std::mem::take(word);
        let is_arg = w.chars().any(|c| c.is_ascii_uppercase())
            && w.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
        if w.starts_with('-') || w.starts_with("rrr") {
            out.push_str(&format!("\\fB{}\\fR", roff(&w)));
        } else if is_arg {
            out.push_str(&format!("\\fI{}\\fR", roff(&w)));
        } else {
            out.push_str(&roff(&w));
        }
    };
    for c in text.chars() {
        if c.is_ascii_alphanumeric() || matches!(c, '-' | '_') {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            if c == '.' && (out.is_empty() || out.ends_with('\n')) {
                out.push_str("\\&");
            }
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// The roff sections rrr adds to a man page: EXAMPLES, EXIT STATUS,
/// FILES, ENVIRONMENT, SEE ALSO. `page` is the page's name (`rrr`,
/// `rrr-news`, …), `command` the subcommand it documents (`rrr` for the
/// overview).
pub fn man_sections(page: &str, command: &str, all_pages: &[String]) -> String {
    let mut out = String::new();
    let ex = examples(command);
    let perl = perl_entry(page).map_or(&[][..], |e| e.examples);
    if !ex.is_empty() || !perl.is_empty() {
        out.push_str(".SH EXAMPLES\n");
        for (what, cmd) in perl.iter().chain(ex) {
            out.push_str(&format!("{}:\n.PP\n.RS\n.nf\n{}\n.fi\n.RE\n.PP\n", roff(what), roff(cmd)));
        }
    }
    out.push_str(".SH \"EXIT STATUS\"\n");
    tagged(&mut out, exit_status(command), true);
    out.push_str(".SH FILES\n");
    tagged(&mut out, FILES, true);
    out.push_str(".SH ENVIRONMENT\n");
    tagged(&mut out, ENVIRONMENT, true);
    out.push_str(".SH \"SEE ALSO\"\n");
    let others: Vec<String> =
        all_pages.iter().filter(|p| p.as_str() != page).map(|p| format!("\\fB{}\\fR(1)", roff(p))).collect();
    out.push_str(&others.join(", "));
    out.push_str(&format!(
        ", \\fBrsync\\fR(1), \\fBrsyncd.conf\\fR(5).\n.PP\nThe operator manual: \\fI{}\\fR \
         (README.mirror in the sources): running an origin and a mirror, the units, monitoring, \
         the differences from the Perl tools, the \\-\\-json schemas.\n",
        roff(README_MIRROR)
    ));
    out
}

/// A Perl tool's entry point as rrr runs it: what its man page says.
pub struct PerlEntry {
    /// The program name, `rrr-fsck`.
    pub tool: &'static str,
    /// What it does, for the NAME line.
    pub summary: &'static str,
    /// The command line, as plain text (rendered by [`synopsis_roff`]).
    pub synopsis: &'static str,
    /// What it runs and how it differs from the `rrr` command, paragraphs.
    pub description: &'static [&'static str],
    /// Each option the Perl script documents (its spellings and argument),
    /// and what rrr does with it.
    pub options: &'static [(&'static str, &'static str)],
    /// (what it does, the command line).
    pub examples: &'static [(&'static str, &'static str)],
}

/// What every entry point's page says about its command line.
const PERL_COMMON: &str = "Options are read as the Perl script reads them (Getopt::Long): \
    -x and --x, --x=VALUE and --x VALUE, unique abbreviations, any case, _ and - alike. \
    An option rrr has no use for is accepted with a one-line warning that it is ignored; \
    an unknown one is a usage error (exit 2), as in Perl. -h, --help prints the Perl \
    script's own usage. Arguments must be UTF-8 (use the rrr command for other names). \
    README.mirror, section 12, has the details.";

/// The Perl tools' entry points: one page each, `rrr-init` … `rrr-client`.
/// Kept in step with `crate::perl_compat` (a test checks that every
/// option the parser knows is documented here).
pub const PERL_ENTRIES: &[PerlEntry] = &[
    PerlEntry {
        tool: "rrr-init",
        summary: "index an existing tree (the Perl rrr-init's command line)",
        synopsis: "rrr-init [--aggregator LIST] [--serializer_suffix SUFFIX] [-f|--force] [-v|--verbose] DIRECTORY",
        description: &[
            "Runs rrr init: writes the principal recentfile of DIRECTORY and the symlink RECENT.recent, \
             as the Perl script does; it does not aggregate (run rrr-aggregate or rrr aggregate next, \
             or use rrr init --aggregate).",
            "Differs from rrr init in its default intervals: 1h,1d,1M,1Y,Z (rrr init: 1h and \
             6h,1d,1W,1M,1Q,1Y,Z).",
        ],
        options: &[
            ("--aggregator=LIST", "The intervals, comma-separated, the principal's first (default 1h,1d,1M,1Y,Z): rrr init --interval FIRST --aggregator REST."),
            ("--serializer_suffix=SUFFIX", ".yaml (the default) or .json: rrr init --format; any other suffix is refused."),
            ("-f, --force", "Replace an existing collection (rrr init --force)."),
            ("-v, --verbose", "Ignored, with a warning (rrr shows a progress bar on a terminal)."),
            ("-h, --help", "The Perl script's usage."),
        ],
        examples: &[("Index a tree as the Perl tool does", "rrr-init /srv/CPAN && rrr-aggregate /srv/CPAN/RECENT.recent")],
    },
    PerlEntry {
        tool: "rrr-update",
        summary: "record one new or delete event (the Perl rrr-update's command line)",
        synopsis: "rrr-update [--add|--delete] [--epoch EPOCH] [-n|--dry-run] [-v|--verbose] PRINCIPAL FILE",
        description: &[
            "Runs rrr update on the principal only, keeping the Perl script's behaviour where it differs \
             from rrr update: the disk is not looked at (a new event for a missing file is recorded), a \
             FILE outside the tree's root is a warning, not an error, and nothing is aggregated unless \
             --epoch is given.",
            "With --epoch the event gets that (dirty) epoch, then aggregate runs twice with force, as in \
             the Perl script; if an aggregate fails after the event is recorded, rrr-update says so and \
             exits 1. A --delete of a path the collection does not list fails (exit 2) as the script dies: \
             \"Didn't find '...' in this recentfile collection, giving up.\"",
        ],
        options: &[
            ("--add", "Record a new event (the default), showing the path's event as indexed before, as the script does."),
            ("--delete", "Record a delete event."),
            ("--epoch=EPOCH", "The event's epoch instead of the current time (marks the collection dirty: every mirror starts over), then two forced aggregates. A future epoch is replaced by the clock."),
            ("-n, --dry-run", "Print the rrr command it would run; change nothing."),
            ("-v, --verbose", "Ignored, with a warning."),
            ("-h, --help", "The Perl script's usage."),
        ],
        examples: &[("Record an upload the Perl way", "rrr-update /srv/CPAN/RECENT.recent authors/id/A/AB/ABC/Foo-1.0.tar.gz")],
    },
    PerlEntry {
        tool: "rrr-aggregate",
        summary: "cascade events into the larger recentfiles (the Perl rrr-aggregate's command line)",
        synopsis: "rrr-aggregate [--locktimeout SECONDS] [--dry-run] [-v|--verbose] PRINCIPAL",
        description: &["Runs rrr aggregate PRINCIPAL: merges what is due into the larger recentfiles (cheap when nothing is due)."],
        options: &[
            ("--locktimeout=SECONDS", "Seconds to wait for a recentfile's lock held by another process (then exit 75)."),
            ("--dry-run, --no-dry-run", "Do nothing, saying so (the Perl script's is \"to be done\" too)."),
            ("-v, --verbose", "Ignored, with a warning."),
            ("-h, --help", "The Perl script's usage."),
        ],
        examples: &[("From cron, as the tree's owner", "* * * * *  cpan  rrr-aggregate /srv/CPAN/RECENT.recent")],
    },
    PerlEntry {
        tool: "rrr-news",
        summary: "list the newest events of a collection (the Perl rrr-news's command line and output)",
        synopsis: "rrr-news (--local PRINCIPAL | --remote SRC [--localroot DIR] | PRINCIPAL) [--after EPOCH] [--before EPOCH] [--max N] [--skip-deletes] [--contains_path PATH] [--contains_epoch EPOCH] [--contains_type TYPE] [--rsync_options KEY=VALUE]... [-v|--verbose]",
        description: &[
            "Runs rrr news and prints the Perl script's lines: each path once, newest first, as the local \
             time of its event and the path (\"Tue Nov 14 22:20:00 2023 authors/id/...\"); rrr news has \
             --json instead.",
            "A --contains_* filter without --max shows at most one line, as in the script.",
        ],
        options: &[
            ("--local=PRINCIPAL", "A local principal (RECENT.recent or a recentfile); a lone argument means the same."),
            ("--remote=SRC", "A remote principal (rrr rmirror's SRC forms): its recentfiles are fetched first."),
            ("--localroot=DIR", "With --remote: fetch into a hidden directory under DIR/.rrr instead of a temporary one."),
            ("--after=EPOCH, --before=EPOCH", "Only events strictly newer, or older, than EPOCH."),
            ("--max=N", "At most N lines."),
            ("--skip-deletes, --no-skip-deletes", "Leave out paths whose newest event is a delete."),
            ("--contains_path=PATH, --contains_epoch=EPOCH, --contains_type=TYPE", "Only that path, that epoch, that type (new or delete); together, all of them; imply --max=1."),
            ("--rsync_options=KEY=VALUE, --rsync=KEY=VALUE", "Ignored, with a warning (rrr uses its own rsync options)."),
            ("--dry-run", "Refused (exit 2), as the Perl script dies on it."),
            ("-v, --verbose", "Ignored, with a warning."),
            ("-h, --help", "The Perl script's usage."),
        ],
        examples: &[("The ten newest changes", "rrr-news -max 10 -local /srv/CPAN/RECENT.recent")],
    },
    PerlEntry {
        tool: "rrr-overview",
        summary: "show the table of a collection's recentfiles (the Perl rrr-overview's command line and table)",
        synopsis: "rrr-overview [-v|--verbose] [PRINCIPAL]",
        description: &["Runs rrr overview and prints the Perl script's table. PRINCIPAL defaults to ./RECENT.recent, as in the script."],
        options: &[
            ("-v, --verbose", "More detail (the dirtymark and times), as the script's --verbose."),
            ("-h, --help", "The Perl script's usage."),
        ],
        examples: &[("The table", "rrr-overview /srv/CPAN/RECENT.recent")],
    },
    PerlEntry {
        tool: "rrr-fsck",
        summary: "compare the index with the tree and repair it (the Perl rrr-fsck's command line)",
        synopsis: "rrr-fsck [-n|--dry-run] [--remoteroot SRC] [-y|--yes] [-v|--verbose] PRINCIPAL",
        description: &[
            "Repairs by default, as the Perl script does: runs rrr fsck --repair PRINCIPAL, which records \
             every difference between the index and the tree as an event at the current time (files \
             missing from the index as new, index entries without a file as deleted). With -n it only \
             compares (rrr fsck without --repair). rrr fsck, the other way round, only compares unless \
             --repair is given.",
            "Files of the tree are never deleted or fetched.",
        ],
        options: &[
            ("-n, --dry-run", "Only compare and list the differences; record nothing."),
            ("--remoteroot=SRC", "Ignored, with a warning: fetching missing files is rrr rmirror's job."),
            ("-y, --yes", "Ignored, with a warning: rrr fsck never asks, and never unlinks files of the tree."),
            ("-v, --verbose", "Ignored, with a warning (every finding is listed anyway)."),
            ("-h, --help", "The Perl script's usage."),
        ],
        examples: &[
            ("Record every difference (the default)", "rrr-fsck /srv/CPAN/RECENT.recent"),
            ("Only look", "rrr-fsck -n /srv/CPAN/RECENT.recent"),
        ],
    },
    PerlEntry {
        tool: "rrr-server",
        summary: "keep an origin's recentfiles current (the Perl rrr-server's command line)",
        synopsis: "rrr-server [-v|--verbose] PRINCIPAL",
        description: &[
            "Runs rrr watch PRINCIPAL: the inotify daemon that records every change of the tree in its \
             recentfiles and runs the cascade (aggregate) itself. See rrr-watch(1) for what it does, its \
             heartbeat and its signals.",
        ],
        options: &[
            ("-v, --verbose", "Ignored, with a warning (rrr watch logs one line per batch)."),
            ("-h, --help", "The Perl script's usage."),
        ],
        examples: &[("The origin's daemon", "rrr-server /srv/CPAN/RECENT.recent")],
    },
    PerlEntry {
        tool: "rrr-client",
        summary: "mirror a remote collection forever (the Perl rrr-client's command line)",
        synopsis: "rrr-client --source SRC --target DIR [--user USER] [--password PASSWORD] [--skip-deletes] [--adopt] [--tmpdir DIR] [--runstatusfile FILE] [--verbose] [--verboselog FILE]",
        description: &[
            "Runs rrr rmirror --loop --remote SRC --localroot DIR: one pass every 20 seconds, each fetching \
             the small principal and transferring only what changed. See rrr-rmirror(1) for the passes, \
             the state in DIR/.rrr/ and which trees rrr may write and delete in.",
            "A tree made by the Perl rrr-client (its principal names the same collection) is adopted \
             without a flag; a non-empty directory that is not a mirror of SRC is refused unless --adopt.",
        ],
        options: &[
            ("--source=SRC", "The remote principal, e.g. cpan-rsync.perl.org::CPAN/RECENT.recent (required)."),
            ("--target=DIR", "The local tree (required)."),
            ("--user=USER", "The rsync daemon user: SRC becomes USER@HOST::... or rsync://USER@HOST/..."),
            ("--password=PASSWORD", "The rsync daemon password, passed to rsync as RSYNC_PASSWORD (visible in ps: prefer the variable)."),
            ("--skip-deletes, --no-skip-deletes", "Do not apply delete events."),
            ("--adopt", "(rrr's own) Make an existing directory that is not yet a mirror of SRC one: files SRC lacks are deleted."),
            ("--tmpdir=DIR", "Ignored, with a warning: rrr keeps its temporary files hidden in the target."),
            ("--runstatusfile=FILE", "Ignored, with a warning: rrr keeps its state in DIR/.rrr/state.json."),
            ("--verbose, --no-verbose", "Ignored, with a warning (rrr rmirror logs one line per pass)."),
            ("--verboselog=FILE", "Ignored, with a warning: the log goes to stderr."),
            ("-h, --help", "The Perl script's usage."),
        ],
        examples: &[(
            "Mirror CPAN's authors tree",
            "rrr-client --source cpan-rsync.perl.org::CPAN/authors/RECENT.recent --target /srv/CPAN/authors",
        )],
    },
];

/// The page text of the Perl entry point `tool`, if it is one.
pub fn perl_entry(tool: &str) -> Option<&'static PerlEntry> {
    PERL_ENTRIES.iter().find(|e| e.tool == tool)
}

impl PerlEntry {
    /// The entry point's DESCRIPTION paragraphs (roff).
    pub fn description_roff(&self) -> String {
        let mut out = String::new();
        for p in self.description.iter().chain([&PERL_COMMON]) {
            out.push_str(&format!(".PP\n{}\n", roff(p)));
        }
        out
    }

    /// The entry point's options (roff `.TP` items, no heading).
    pub fn options_roff(&self) -> String {
        let mut out = String::new();
        for (opt, what) in self.options {
            out.push_str(&format!(".TP\n{}\n{}\n", synopsis_roff(opt), roff(what)));
        }
        out
    }
}

/// The page of an entry point with no `rrr` subcommand of its name
/// (`rrr-client`, `rrr-server`): NAME, SYNOPSIS, DESCRIPTION, OPTIONS
/// and the common sections.
pub fn perl_entry_page(e: &PerlEntry, version: &str, all_pages: &[String]) -> String {
    let mut out = format!(".TH {} 1 \"\" \"rrr {}\" \"rrr\"\n", roff(&e.tool.to_uppercase()), roff(version));
    out.push_str(&format!(".SH NAME\n{} \\- {}\n", roff(e.tool), roff(e.summary)));
    out.push_str(&format!(".SH SYNOPSIS\n{}\n", synopsis_roff(e.synopsis)));
    out.push_str(".SH DESCRIPTION\n");
    out.push_str(&e.description_roff());
    out.push_str(".SH OPTIONS\n");
    out.push_str(&e.options_roff());
    out.push_str(&man_sections(e.tool, "", all_pages));
    out
}

/// The rmirror config file's keys: (key = VALUE, meaning and default).
/// A test checks the list against the config reader's keys.
/// Each option's default is not written here: [`config_section`] takes
/// it from the option model's clap arguments (`mirror::options`), the
/// constants `resolve` uses; the test that the list matches the config
/// reader's keys is there too.
pub const CONFIG_KEYS: &[(&str, &str)] = &[
    ("remote = \"SRC\"", "[[tree]] only, required: the remote principal (rmirror's --remote forms)."),
    ("localroot = \"DIR\"", "[[tree]] only, required: the mirror's tree; relative to the config file's directory."),
    ("state = \"FILE\"", "[[tree]] only: the state file (default LOCALROOT/.rrr/state.json)."),
    ("interval = SECONDS", "Seconds between pass starts with --loop (at least 1)."),
    ("skip_deletes = true|false", "Do not apply delete events."),
    ("max_delete = N", "Deletes one run may apply; the rest stays pending (default unlimited)."),
    ("max_files_per_connection = N", "Paths per rsync call."),
    (
        "rsync_options = [\"OPT\", ...]",
        "Passed to every rsync call, in order; a tree's list replaces the top-level one.",
    ),
    (
        "password_file = \"FILE\"",
        "rsync's --password-file for daemon sources; relative to the config file's directory.",
    ),
    ("max_recentfile_size = BYTES", "Remote recentfiles larger than this many bytes are refused unread."),
    (
        "exclude = [\"PATTERN\", ...]",
        "rsync --exclude patterns: not transferred, deleted or republished; a tree's list replaces the top-level one.",
    ),
    ("on_pass = \"CMD\"", "Run through /bin/sh -c after a pass that changed something or failed (RRR_* variables)."),
    ("on_pass_timeout = SECONDS", "Seconds an on_pass hook may run."),
    ("timeout = SECONDS", "Seconds an rsync may move no data before it is stopped (0: never)."),
    ("full_every = \"DURATION\"", "A whole-tree pass when the last one is this old (7d, 1W)."),
    (
        "verify_every = \"DURATION\"",
        "rrr verify before a pass when the last one is this old (1d, 7d); the pass fetches what it finds missing.",
    ),
    (
        "trust_key = [\"FILE\", ...]",
        "Verify the origin's signed beacon with these OpenSSH public keys (rotation: several); relative to the config file's directory.",
    ),
    (
        "max_signature_age = \"DURATION\"",
        "With trust_key: an origin signature older than this is stale (nothing deleted, check CRITICAL). Default: 1d.",
    ),
    (
        "trace = \"DIR\"",
        "After each complete pass write ftpsync traces into DIR, relative to the localroot (project/trace): this mirror's, the upstream's, _hierarchy. Excluded from the data.",
    ),
    ("trace_host = \"NAME\"", "The name of this mirror's trace file (default: the host name)."),
    (
        "timestamp = \"FILE\"",
        "After each complete pass write FILE, relative to the localroot: the origin time held, epoch first (mirmon, mirrorbits). Excluded from the data.",
    ),
    (
        "checksum = true|false",
        "Whole-tree passes compare files of the same size and mtime by content (rsync --checksum).",
    ),
];

/// The CONFIGURATION FILE section of rrr-rmirror(1); `options` are the
/// option model's clap arguments (`mirror::options::CommandLine`), whose
/// defaults the section shows.
pub fn config_section(options: &clap::Command) -> String {
    let mut out = String::from(
        ".SH \"CONFIGURATION FILE\"\n\
         rrr rmirror \\-\\-config FILE (and status, check and trigger with \\-\\-config) reads a TOML file: \
         one [[tree]] table per tree, and top-level keys that are defaults for every tree. A tree's \
         option comes from the command line, else its [[tree]] table, else the top-level key, else the \
         built-in default. Unknown keys are errors. Every tree runs on its own thread, with its own \
         lock, schedule and backoff; nested or overlapping trees are refused. By convention the file \
         is /etc/rrr/mirror.toml; an example is /usr/share/doc/rrr/examples/mirror.toml.\n\
         .PP\n.RS\n.nf\n\
         interval = 20                 # top level: every tree\n\
         [[tree]]\n\
         remote = \"rsync://cpan\\-rsync.perl.org/CPAN/authors/RECENT.recent\"\n\
         localroot = \"/srv/CPAN/authors\"\n\
         max_delete = 1000\n\
         .fi\n.RE\n.PP\nThe keys:\n",
    );
    for (key, what) in CONFIG_KEYS {
        let name = key.split(' ').next().unwrap_or(key);
        let default = options.get_arguments().find(|a| a.get_id() == name).and_then(|a| a.get_default_values().first());
        let what = match default {
            Some(d) => format!("{what} Default: {}.", d.to_string_lossy()),
            None => what.to_string(),
        };
        out.push_str(&format!(".TP\n\\fB{}\\fR\n{}\n", roff(key), roff(&what)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_has_examples_and_the_exit_codes() {
        for c in [
            "rrr",
            "init",
            "update",
            "aggregate",
            "news",
            "overview",
            "fsck",
            "verify",
            "watch",
            "rmirror",
            "status",
            "check",
            "trigger",
            "probe",
        ] {
            let h = after_help(c);
            assert!(h.starts_with("Examples:\n  # "), "{c}: {h}");
            let code = match c {
                "check" => "\n    3  UNKNOWN",
                "trigger" => "\n    3  no rmirror --loop runs",
                "probe" => "\n    3  a mirror could not be read",
                _ => "\n   75  another run holds the lock",
            };
            assert!(h.contains(code), "{c}: {h}");
        }
    }

    #[test]
    fn roff_sections() {
        let pages = vec!["rrr".to_string(), "rrr-news".to_string()];
        let s = man_sections("rrr-news", "news", &pages);
        for sh in [".SH EXAMPLES", ".SH \"EXIT STATUS\"", ".SH FILES", ".SH ENVIRONMENT", ".SH \"SEE ALSO\""] {
            assert!(s.contains(sh), "{sh}: {s}");
        }
        assert!(
            s.contains("\\fBRRR_RSYNC\\fR") && s.contains("\\fBrrr\\fR(1)") && !s.contains("\\fBrrr\\-news\\fR(1)")
        );
        assert!(s.contains("rrr news \\-\\-max 10"), "{s}");
        assert!(s.contains("/usr/share/doc/rrr/README.mirror"), "SEE ALSO names the installed manual: {s}");
        assert_eq!(roff(".x-y"), "\\&.x\\-y");
        assert_eq!(roff("a … b"), "a \\[u2026] b");
    }

    #[test]
    fn synopsis_marks_options_and_arguments() {
        assert_eq!(
            synopsis_roff("rrr-fsck [-n|--dry-run] PRINCIPAL"),
            "\\fBrrr\\-fsck\\fR [\\fB\\-n\\fR|\\fB\\-\\-dry\\-run\\fR] \\fIPRINCIPAL\\fR"
        );
        assert_eq!(synopsis_roff("[--x KEY=VALUE]..."), "[\\fB\\-\\-x\\fR \\fIKEY\\fR=\\fIVALUE\\fR]...");
        assert_eq!(synopsis_roff("...x"), "\\&...x");
    }

    /// Every Perl entry point has its page text, and the text names every
    /// option the entry point's parser takes.
    #[test]
    fn perl_entry_pages_document_every_option() {
        for tool in crate::perl_compat::TOOLS {
            let e = perl_entry(tool).unwrap_or_else(|| panic!("{tool} has no page"));
            assert!(e.synopsis.starts_with(&format!("{tool} ")), "{tool}: {}", e.synopsis);
            for name in crate::perl_compat::option_names(tool) {
                let spelled = if name.len() == 1 { format!("-{name}") } else { format!("--{name}") };
                let documented = e.options.iter().any(|(tag, _)| tag.split([',', ' ', '=']).any(|w| w == spelled));
                assert!(documented, "{tool}: option {spelled} is not on its page");
                assert!(
                    e.synopsis.contains(&spelled) || name == "help" || name == "dry-run",
                    "{tool}: {spelled} not in the synopsis"
                );
            }
        }
        let fsck = perl_entry("rrr-fsck").unwrap();
        assert!(fsck.description[0].starts_with("Repairs by default"), "{}", fsck.description[0]);
    }
}
