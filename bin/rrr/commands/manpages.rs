//! `rrr manpages DIR`: rrr.1, one page per subcommand (from the clap
//! definitions, with the sections of `rrr::output::manual`), and pages for the
//! Perl entry points: the page of `rrr news` also documents `rrr-news`;
//! rrr-client and rrr-server have their own.

use anyhow::{Context, Result};
use clap::{Args, CommandFactory};
use rrr::ops::Exit;
use rrr::perl_compat::{perl_usage, TOOLS};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ManpagesArgs {
    /// The directory to write the pages into (created if missing), e.g. /usr/local/share/man/man1.
    dir: PathBuf,
}

pub fn exec(a: &ManpagesArgs) -> Result<Exit> {
    let dir = &a.dir;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let cmd = crate::cli::Cli::command();
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
        let mut buf = Vec::new();
        let man = clap_mangen::Man::new(c);
        man.render_title(&mut buf)?;
        man.render_name_section(&mut buf)?;
        man.render_synopsis_section(&mut buf)?;
        man.render_description_section(&mut buf)?;
        man.render_options_section(&mut buf)?;
        if command == "rrr" {
            man.render_subcommands_section(&mut buf)?;
        }
        buf.extend(rrr::output::manual::man_sections(name, command, &pages).into_bytes());
        if TOOLS.contains(&name) {
            buf.extend(format!(".SH \"AS {name}\"\n").into_bytes());
            buf.extend(rrr::output::manual::perl_entry_section(name, perl_usage(name)).into_bytes());
        }
        Ok(buf)
    };
    for sub in &subs {
        let name = format!("rrr-{}", sub.get_name());
        save(&name, page(&name, sub.get_name(), sub.clone().name(name.clone()).after_help(""))?)?;
    }
    for tool in TOOLS.iter().filter(|t| !subs.iter().any(|s| format!("rrr-{}", s.get_name()) == **t)) {
        let runs = if *tool == "rrr-client" { "rrr rmirror --loop" } else { "rrr watch" };
        save(tool, rrr::output::manual::perl_entry_page(tool, runs, perl_usage(tool), &pages).into_bytes())?;
    }
    save("rrr", page("rrr", "rrr", cmd.after_help(""))?)?;
    Ok(Exit::Ok)
}
