//! The `rrr` binary: parse, set up logging, dispatch to a command
//! ([`commands`]), print `rrr: {err:#}`, exit with the documented code
//! (`rrr::ops::Exit`). A closed stdout (`| head`) exits 0. Invoked as
//! `rrr-news`, `rrr-client`, … it runs the Perl tool's command line
//! ([`perl_entry`]).

mod cli;
mod commands;
mod perl_entry;

use anyhow::Result;
use clap::Parser;
use cli::Cli;
use rrr::ops::{self, Exit};
use std::io::{self, Write};

fn main() {
    let mut argv = std::env::args_os();
    let arg0 = argv.next().unwrap_or_default();
    let name = std::path::Path::new(&arg0).file_name().and_then(|n| n.to_str()).unwrap_or("rrr").to_string();
    let args = || std::env::args_os().skip(1).map(|a| a.to_string_lossy().into_owned());
    if name == "rrr-client" || cli::subcommand_of(args()).as_deref() == Some("rmirror") {
        // SIGUSR1 (a wake-up) and SIGHUP never end a mirror, from its first instruction.
        rrr::sys::signals::install_for_rmirror();
    }
    let code = if rrr::perl_compat::TOOLS.contains(&name.as_str()) {
        // The Perl entry points translate their options as text; a name
        // that is not UTF-8 goes through `rrr` itself, which takes bytes.
        match argv.map(|a| a.into_string()).collect::<Result<Vec<String>, _>>() {
            Ok(args) => perl_entry::run(&name, args),
            Err(bad) => {
                let shown = rrr::recentfile::shown_path(bad.as_encoded_bytes());
                eprintln!(
                    "{name}: argument {shown} is not UTF-8; give it to `rrr` (e.g. rrr update), which takes any bytes"
                );
                Exit::Error
            }
        }
    } else {
        match Cli::try_parse() {
            Ok(cli) => run_to_exit(cli),
            Err(e) => usage_exit(&e),
        }
    };
    std::process::exit(code as i32);
}

/// Print a command line clap refused (or `--help`/`--version`) and give
/// its status: 0 for help, 2 for a usage error, but 3 for `rrr check`,
/// whose usage errors are UNKNOWN as for any Nagios plugin, with the
/// `RRR UNKNOWN - usage: …` line on stdout that Nagios shows (clap's full
/// message stays on stderr).
fn usage_exit(e: &clap::Error) -> Exit {
    let _ = e.print();
    if !e.use_stderr() {
        Exit::Ok
    } else if cli::subcommand_of(std::env::args_os().skip(1).map(|a| a.to_string_lossy().into_owned())).as_deref()
        == Some("check")
    {
        println!("RRR UNKNOWN - usage: {}", usage_words(&e.render().to_string()));
        Exit::Unknown
    } else {
        Exit::Error
    }
}

/// clap's message in one line: its words before the usage and the hint.
fn usage_words(text: &str) -> String {
    let words: Vec<&str> = text
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .filter(|l| !l.is_empty())
        .collect();
    words.join(" ").trim_start_matches("error: ").to_string()
}

/// Run one parsed command line and turn its result into an exit status.
fn run_to_exit(cli: Cli) -> Exit {
    match run(cli) {
        Ok(exit) => exit,
        Err(err) if ops::is_closed(&err) => Exit::Ok,
        Err(err) => {
            tracing::error!("{err:#}");
            ops::exit_for_error(&err)
        }
    }
}

fn run(cli: Cli) -> Result<Exit> {
    rrr::output::log::init(&cli.log_settings());
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let beacon = cli.command.beacon().map(|b| b.settings()).transpose()?.unwrap_or_default();
    let ctx = cli.ctx(&mut out, beacon);
    let exit = cli.command.exec(&ctx, <Cli as clap::CommandFactory>::command)?;
    drop(ctx);
    // A command that already failed (a daemon whose stdout closed: 1) keeps
    // its status; a listing whose reader went away ends here with 0.
    match out.flush() {
        Err(e) if exit == Exit::Ok => Err(e.into()),
        _ => Ok(exit),
    }
}
