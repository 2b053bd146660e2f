//! `rrr completions SHELL`: a completion script from the clap definitions,
//! without the hidden options (`--now`, `--perl-format`, …: for tests and
//! the Perl entry points, not for people). The bash script also completes
//! the Perl entry points' names (`rrr-fsck --dry-run`, then file names);
//! the package installs it under each of those names too, since
//! bash-completion loads a script by the command's name.

use anyhow::Result;
use clap::Args;
use rrr::ops::{Ctx, Exit};
use rrr::perl_compat::{option_names, TOOLS};

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

pub fn exec(a: &CompletionsArgs, ctx: &Ctx, whole: clap::Command) -> Result<Exit> {
    let mut cmd = visible(&whole);
    let mut out = ctx.out();
    clap_complete::generate(a.shell, &mut cmd, "rrr", &mut **out);
    if a.shell == clap_complete::Shell::Bash {
        (**out).write_all(perl_entry_points_bash().as_bytes())?;
    }
    Ok(Exit::Ok)
}

/// `cmd` without its hidden arguments and subcommands (clap's generators
/// offer hidden arguments).
fn visible(cmd: &clap::Command) -> clap::Command {
    let shown = |id: &clap::Id| cmd.get_arguments().any(|a| a.get_id() == id && !a.is_hide_set());
    // Groups lose their hidden members (clap derive makes one group of
    // every struct's arguments).
    let groups = cmd.get_groups().map(|g| {
        let multiple = g.clone().is_multiple();
        clap::ArgGroup::new(g.get_id().clone())
            .args(g.get_args().filter(|id| shown(id)).cloned())
            .required(g.is_required_set())
            .multiple(multiple)
    });
    let mut c = clap::Command::new(cmd.get_name().to_string())
        .args(cmd.get_arguments().filter(|a| !a.is_hide_set()).cloned())
        .groups(groups)
        .subcommands(cmd.get_subcommands().filter(|s| !s.is_hide_set()).map(visible))
        .disable_help_subcommand(cmd.is_disable_help_subcommand_set());
    if let Some(about) = cmd.get_about() {
        c = c.about(about.clone());
    }
    if let Some(v) = cmd.get_version() {
        c = c.version(v.to_string());
    }
    c
}

/// Bash completion of the Perl entry points: their options after a `-`,
/// file names otherwise (bash's default).
fn perl_entry_points_bash() -> String {
    let mut s = String::from(
        "\n# The Perl tools' entry points (rrr-client, ...): their options, else file names.\n\
         _rrr_perl_tool() {\n    local cur=\"${COMP_WORDS[COMP_CWORD]}\" opts=\"\"\n    case \"$1\" in\n",
    );
    for tool in TOOLS {
        let opts: Vec<String> = option_names(tool).iter().map(|o| format!("--{o}")).collect();
        s.push_str(&format!("        {tool}) opts=\"{}\" ;;\n", opts.join(" ")));
    }
    s.push_str(
        "    esac\n    if [[ \"$cur\" == -* ]]; then\n        COMPREPLY=( $(compgen -W \"$opts\" -- \"$cur\") )\n    fi\n}\n",
    );
    s.push_str(&format!("complete -F _rrr_perl_tool -o bashdefault -o default {}\n", TOOLS.join(" ")));
    s
}
