//! Invoked as `rrr-news`, `rrr-client`, …: take the Perl tool's options
//! (`rrr::perl_compat`) and run the equivalent rrr commands in order,
//! stopping at the first failure.

use crate::cli::Cli;
use clap::Parser;
use rrr::ops::Exit;

pub fn run(tool: &str, args: Vec<String>) -> Exit {
    let t = match rrr::perl_compat::translate(tool, &args) {
        Ok(t) => t,
        Err(msg) => {
            eprintln!("{msg}");
            return Exit::Error;
        }
    };
    if let Some(help) = t.help {
        print!("{help}");
        return Exit::Ok;
    }
    for w in &t.warnings {
        eprintln!("{w}");
    }
    for (k, v) in &t.env {
        std::env::set_var(k, v);
    }
    for (i, step) in t.steps.into_iter().enumerate() {
        let cli = Cli::parse_from(std::iter::once(tool.to_string()).chain(step));
        let exit = crate::run_to_exit(cli);
        if exit != Exit::Ok {
            if i > 0 && t.follow_ups && exit != Exit::Interrupted {
                eprintln!("{tool}: recorded; aggregate failed (run rrr aggregate --force later)");
                return Exit::Differences;
            }
            return exit;
        }
    }
    Exit::Ok
}
