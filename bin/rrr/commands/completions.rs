//! `rrr completions SHELL`: a completion script from the clap definitions.

use anyhow::Result;
use clap::{Args, CommandFactory};
use rrr::ops::{Ctx, Exit};

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

pub fn exec(a: &CompletionsArgs, ctx: &Ctx) -> Result<Exit> {
    let mut cmd = crate::cli::Cli::command();
    clap_complete::generate(a.shell, &mut cmd, "rrr", &mut **ctx.out());
    Ok(Exit::Ok)
}
