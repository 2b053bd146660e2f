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

/// The exit codes of `command`.
fn exit_status(command: &str) -> &'static [(&'static str, &'static str)] {
    match command {
        "check" => CHECK_EXIT_STATUS,
        "trigger" => TRIGGER_EXIT_STATUS,
        _ => EXIT_STATUS,
    }
}

/// The files rrr reads and writes.
const FILES: &[(&str, &str)] = &[
    ("ROOT/RECENT.recent", "the principal symlink, pointing at the smallest recentfile"),
    ("ROOT/RECENT-1h.yaml … RECENT-Z.yaml", "the recentfiles (or .json)"),
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
    ("RRR_* (hooks)", "set for an --on-pass hook: RRR_LOCALROOT, RRR_REMOTE, RRR_STATUS, RRR_EXIT, RRR_TRANSFERRED, RRR_BYTES, RRR_DELETED, RRR_REFUSED, RRR_FAILING, RRR_ERRORS, RRR_COMPLETE, RRR_BOOTSTRAP, RRR_SECONDS, RRR_ERROR"),
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
            ("Chain tiers: after each pass that changed something, wake the next tier over ssh", "rrr rmirror --loop --interval 300 --on-pass 'ssh -i /etc/rrr/push_key mirror2 trigger' --remote rsync://tier0/CPAN/RECENT.recent --localroot /srv/CPAN"),
            ("Wake every loop of a config", "rrr trigger --config /etc/rrr/mirror.toml"),
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

/// Escape text for roff.
fn roff(s: &str) -> String {
    let s = s.replace('\\', "\\e").replace('-', "\\-");
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

/// The roff sections rrr adds to a man page: EXAMPLES, EXIT STATUS,
/// FILES, ENVIRONMENT, SEE ALSO. `page` is the page's name (`rrr`,
/// `rrr-news`, …), `command` the subcommand it documents (`rrr` for the
/// overview).
pub fn man_sections(page: &str, command: &str, all_pages: &[String]) -> String {
    let mut out = String::new();
    let ex = examples(command);
    if !ex.is_empty() {
        out.push_str(".SH EXAMPLES\n");
        for (what, cmd) in ex {
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
    out.push_str(", \\fBrsync\\fR(1), \\fBrsyncd.conf\\fR(5); README.mirror in the rrr sources.\n");
    out
}

/// The page of a Perl entry point (`rrr-client`, …): what it runs, and the
/// Perl script's own usage.
pub fn perl_entry_page(tool: &str, runs: &str, usage: &str, all_pages: &[String]) -> String {
    let mut out = format!(".TH {} 1 \"\" \"rrr\" \"rrr\"\n", roff(&tool.to_uppercase()));
    out.push_str(&format!(".SH NAME\n{} \\- File::Rsync::Mirror::Recent's {} on rrr\n", roff(tool), roff(tool)));
    out.push_str(&format!(
        ".SH DESCRIPTION\nThe Perl tool's entry point: \\fB{}\\fR takes the options of the Perl script \
         (Getopt::Long spellings, unique abbreviations) and runs {}. Options rrr has no use for are \
         accepted with a one-line warning.\n.SH \"PERL USAGE\"\n",
        roff(tool),
        roff(runs)
    ));
    out.push_str(&perl_entry_section(tool, usage));
    out.push_str(&man_sections(tool, "", all_pages));
    out
}

/// What a page says about the Perl entry point `tool`: the script's own usage.
pub fn perl_entry_section(tool: &str, usage: &str) -> String {
    format!(
        "Invoked as \\fB{}\\fR (a symlink or wrapper named so), rrr takes the Perl script's options \
         and behaves as the script does (README.mirror, section 12). The script's usage:\n.PP\n.nf\n{}\n.fi\n",
        roff(tool),
        roff(usage.trim_end())
    )
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
            "watch",
            "rmirror",
            "status",
            "check",
            "trigger",
        ] {
            let h = after_help(c);
            assert!(h.starts_with("Examples:\n  # "), "{c}: {h}");
            let code = match c {
                "check" => "\n    3  UNKNOWN",
                "trigger" => "\n    3  no rmirror --loop runs",
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
        assert_eq!(roff(".x-y"), "\\&.x\\-y");
    }
}
