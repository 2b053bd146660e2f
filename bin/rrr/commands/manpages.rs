//! `rrr manpages DIR`: rrr.1, one page per subcommand (from the clap
//! definitions, with the sections of `rrr::output::manual`), and one page
//! per Perl entry point. An entry point with a subcommand of its name
//! (`rrr-fsck` and `rrr fsck`) shares the page: it starts with the entry
//! point (/usr/bin/rrr-fsck: its options and defaults, which differ), then
//! the subcommand; rrr-client and rrr-server have their own. Synopses name
//! every option with its argument (`--remote SRC`), never a hidden one.

use anyhow::{Context, Result};
use clap::{ArgAction, Args};
use rrr::ops::Exit;
use rrr::output::manual::{self, roff, synopsis_roff};
use rrr::perl_compat::TOOLS;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ManpagesArgs {
    /// The directory to write the pages into (created if missing), e.g. /usr/local/share/man/man1.
    dir: PathBuf,
}

/// Commands whose arguments form alternatives clap states as
/// `required_unless_present`: each form's arguments, `?` marking an
/// optional one. Every other argument is an option of every form.
const FORMS: &[(&str, &[&[&str]])] =
    &[("rmirror", &[&["remote", "localroot"], &["config"]]), ("news", &[&["local"], &["remote", "?localroot"]])];

pub fn exec(a: &ManpagesArgs, whole: clap::Command) -> Result<Exit> {
    let dir = &a.dir;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let version = env!("CARGO_PKG_VERSION");
    let cmd = whole;
    let subs: Vec<clap::Command> = cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned().collect();
    let mut pages: Vec<String> = vec!["rrr".into()];
    pages.extend(subs.iter().map(|s| format!("rrr-{}", s.get_name())));
    let extra: Vec<String> = TOOLS.iter().map(|t| t.to_string()).filter(|t| !pages.contains(t)).collect();
    pages.extend(extra);
    let save = |name: &str, text: Vec<u8>| -> Result<()> {
        let path = dir.join(format!("{name}.1"));
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))
    };
    let page = |name: &str, command: &str, c: clap::Command| -> Result<Vec<u8>> {
        let perl = manual::perl_entry(name);
        let mut buf = Vec::new();
        let man = clap_mangen::Man::new(c.clone());
        man.render_title(&mut buf)?;
        match perl {
            Some(e) => buf.extend(
                format!(
                    ".SH NAME\n{} \\- {}; rrr {} \\- {}\n",
                    roff(name),
                    roff(e.summary),
                    roff(command),
                    roff(&about(&c))
                )
                .into_bytes(),
            ),
            None => man.render_name_section(&mut buf)?,
        }
        buf.extend(b".SH SYNOPSIS\n");
        if let Some(e) = perl {
            buf.extend(format!("{}\n.br\n", synopsis_roff(e.synopsis)).into_bytes());
        }
        buf.extend(synopsis(&c, command).into_bytes());
        buf.extend(b".SH DESCRIPTION\n");
        if let Some(e) = perl {
            buf.extend(
                format!(".SS \"{}\"\n{}.SS \"rrr {}\"\n", roff(name), e.description_roff(), roff(command)).into_bytes(),
            );
        }
        buf.extend(format!("{}\n", roff(&long_about(&c))).into_bytes());
        if let Some(e) = perl {
            buf.extend(format!(".SH \"OPTIONS OF {}\"\n{}", roff(name), e.options_roff()).into_bytes());
            let mut opts = Vec::new();
            man.render_options_section(&mut opts)?;
            let opts = String::from_utf8_lossy(&opts).replacen(
                ".SH OPTIONS",
                &format!(".SH \"OPTIONS OF rrr {}\"", roff(command)),
                1,
            );
            buf.extend(opts.into_bytes());
        } else {
            man.render_options_section(&mut buf)?;
        }
        if command == "rrr" {
            man.render_subcommands_section(&mut buf)?;
        }
        if command == "rmirror" {
            buf.extend(
                manual::config_section(&rrr::mirror::options::CommandLine::augment_args(clap::Command::new("rmirror")))
                    .into_bytes(),
            );
        }
        buf.extend(manual::man_sections(name, command, &pages).into_bytes());
        Ok(buf)
    };
    for sub in &subs {
        let name = format!("rrr-{}", sub.get_name());
        save(&name, page(&name, sub.get_name(), sub.clone().name(name.clone()).version(version).after_help(""))?)?;
    }
    for tool in TOOLS.iter().filter(|t| !subs.iter().any(|s| format!("rrr-{}", s.get_name()) == **t)) {
        let e = manual::perl_entry(tool).with_context(|| format!("{tool} has no page text in output::manual"))?;
        save(tool, manual::perl_entry_page(e, version, &pages).into_bytes())?;
    }
    save("rrr", page("rrr", "rrr", cmd.after_help(""))?)?;
    Ok(Exit::Ok)
}

fn about(c: &clap::Command) -> String {
    c.get_about().map(|a| a.to_string()).unwrap_or_default()
}

fn long_about(c: &clap::Command) -> String {
    c.get_long_about().or(c.get_about()).map(|a| a.to_string()).unwrap_or_default()
}

/// The SYNOPSIS lines of `rrr COMMAND` (or of `rrr` itself): every visible
/// option with its argument, required groups as `(A | B)`, positionals by
/// their value names; one line per form of [`FORMS`] (the first lists the
/// options, the others say `[OPTION...]`).
fn synopsis(c: &clap::Command, command: &str) -> String {
    let prog = if command == "rrr" { "rrr".to_string() } else { format!("rrr {command}") };
    let forms: &[&[&str]] = FORMS.iter().find(|(n, _)| *n == command).map_or(&[], |(_, f)| *f);
    let in_form = |id: &str| forms.iter().flat_map(|f| f.iter()).any(|a| a.trim_start_matches('?') == id);
    let required_groups: Vec<&clap::ArgGroup> = c.get_groups().filter(|g| g.is_required_set()).collect();
    let in_group = |id: &clap::Id| required_groups.iter().any(|g| g.get_args().any(|a| a == id));
    let mut opts = String::new();
    for arg in c.get_arguments() {
        let id = arg.get_id();
        let skip = arg.is_hide_set()
            || arg.is_positional()
            || matches!(arg.get_action(), ArgAction::Help | ArgAction::Version)
            || in_form(id.as_str())
            || in_group(id);
        if !skip {
            opts.push_str(&format!("{} ", option(arg, !arg.is_required_set())));
        }
    }
    for g in &required_groups {
        let alts: Vec<String> = g
            .get_args()
            .filter_map(|id| c.get_arguments().find(|a| a.get_id() == id))
            .map(|a| option(a, false))
            .collect();
        opts.push_str(&format!("({}) ", alts.join(" | ")));
    }
    let mut positionals = String::new();
    for arg in c.get_positionals().filter(|a| !a.is_hide_set()) {
        let name = value_name(arg);
        let many =
            matches!(arg.get_action(), ArgAction::Append) || arg.get_num_args().is_some_and(|n| n.max_values() > 1);
        let name = if many { format!("{name}...") } else { name };
        positionals.push_str(&if arg.is_required_set() { format!("{name} ") } else { format!("[{name}] ") });
    }
    if c.has_subcommands() {
        positionals.push_str("COMMAND [ARGS]");
    }
    let form_text = |form: &[&str]| -> String {
        form.iter()
            .filter_map(|a| {
                let optional = a.starts_with('?');
                c.get_arguments()
                    .find(|x| x.get_id().as_str() == a.trim_start_matches('?'))
                    .map(|x| option(x, optional))
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    let line = |text: String| format!("\\fB{}\\fR {}\n", roff(&prog), synopsis_roff(text.trim()));
    if forms.is_empty() {
        return line(format!("{opts}{positionals}"));
    }
    let mut out = line(format!("{} {opts}{positionals}", form_text(forms[0])));
    for f in &forms[1..] {
        out.push_str(".br\n");
        out.push_str(&line(format!("{} [OPTION...] {positionals}", form_text(f))));
    }
    out
}

/// One option as the synopsis shows it: `[-n|--dry-run]`,
/// `[--exclude PATTERN]...`, `[-q|--quiet]...`, `--warn SECONDS`.
fn option(arg: &clap::Arg, optional: bool) -> String {
    let names = match (arg.get_short(), arg.get_long()) {
        (Some(s), Some(l)) => format!("-{s}|--{l}"),
        (Some(s), None) => format!("-{s}"),
        (None, Some(l)) => format!("--{l}"),
        (None, None) => value_name(arg),
    };
    let takes_value = matches!(arg.get_action(), ArgAction::Set | ArgAction::Append);
    let text = if takes_value { format!("{names} {}", value_name(arg)) } else { names };
    let repeated = matches!(arg.get_action(), ArgAction::Append | ArgAction::Count);
    match (optional, repeated) {
        (true, true) => format!("[{text}]..."),
        (true, false) => format!("[{text}]"),
        (false, _) => text,
    }
}

fn value_name(arg: &clap::Arg) -> String {
    arg.get_value_names()
        .and_then(|v| v.first())
        .map(|v| v.to_string())
        .unwrap_or_else(|| arg.get_id().as_str().to_uppercase())
}
