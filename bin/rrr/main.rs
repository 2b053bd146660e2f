//! The `rrr` binary: parse, dispatch to `rrr::ops`, print `rrr: {err:#}`,
//! exit with the documented code. A closed stdout (`| head`) exits 0.

mod cli;

use anyhow::{Context, Result};
use clap::Parser;
use cli::{Cli, Command};
use rrr::clock::Clock;
use rrr::epoch::Epoch;
use rrr::interval::{self, Interval};
use rrr::ops::{self, Exit};
use rrr::origin::Writer;
use rrr::recentfile::Format;
use std::io::{self, Write};
use std::time::Duration;

fn epoch_arg(s: &Option<String>, what: &str) -> Result<Option<Epoch>> {
    s.as_deref().map(|v| Epoch::parse(v).with_context(|| format!("{what} {v:?}"))).transpose()
}

fn run(cli: Cli) -> Result<Exit> {
    let json_log = matches!(&cli.command, Command::Watch(a) if a.json_log);
    let format =
        if json_log { rrr::log::Format::Json } else { rrr::log::Format::parse(&cli.log_format).unwrap_or_default() };
    let verbosity = i8::try_from(i16::from(cli.verbose) - i16::from(cli.quiet)).unwrap_or(0);
    rrr::log::init(&rrr::log::Settings { verbosity, format });
    let clock = match epoch_arg(&cli.now, "--now")? {
        Some(e) => Clock::pinned(e),
        None => Clock::system(),
    };
    let writer = Writer {
        clock,
        program: std::env::args().next().unwrap_or_else(|| "rrr".into()),
        lock_timeout: Duration::from_secs(cli.command.locktimeout().or(cli.locktimeout).unwrap_or(600)),
    };
    let progress = rrr::progress::enabled(cli.quiet > 0);
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let exit = match cli.command {
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut cmd, "rrr", &mut out);
            Exit::Ok
        }
        Command::Manpages { dir } => {
            write_manpages(&dir)?;
            Exit::Ok
        }
        Command::Init(a) => {
            let iv = Interval::parse(&a.interval).map_err(anyhow::Error::msg).context("--interval")?;
            let agg = interval::parse_list(&a.aggregator).map_err(anyhow::Error::msg).context("--aggregator")?;
            let format = if a.format == "json" { Format::Json } else { Format::Yaml };
            let opts = ops::init::Options {
                root: a.root,
                interval: iv,
                aggregator: agg,
                format,
                filenameroot: a.filenameroot,
                force: a.force,
                aggregate: a.aggregate,
                excludes: a.exclude,
                progress,
            };
            let report = ops::init::run(&opts, &writer)?;
            if a.json {
                writeln!(out, "{}", serde_json::to_string(&report)?)?;
            } else {
                tracing::info!(
                    "indexed {} files into {}",
                    rrr::human::count(report.files as u64),
                    report.principal.display()
                );
            }
            if report.skipped > 0 {
                Exit::Differences
            } else {
                Exit::Ok
            }
        }
        Command::Update(a) => {
            let opts = ops::update::Options {
                principal: a.principal,
                paths: a.paths,
                delete: a.delete,
                epoch: epoch_arg(&a.epoch, "--epoch")?,
                stdin: a.stdin,
                perl: a.perl,
                add: a.add,
            };
            if opts.paths.is_empty() && !opts.stdin {
                anyhow::bail!("nothing to record: give PATH arguments or --stdin");
            }
            ops::update::run(&opts, &writer)?;
            Exit::Ok
        }
        Command::Aggregate(a) => {
            let opts = ops::aggregate::Options { principal: a.principal, force: a.force, keep_deletes: a.keep_deletes };
            let report = ops::aggregate::run(&opts, &writer)?;
            if a.json {
                writeln!(out, "{}", serde_json::to_string(&report)?)?;
            }
            Exit::Ok
        }
        Command::News(a) => {
            let filter = rrr::query::NewsFilter {
                after: epoch_arg(&a.after, "--after")?,
                before: epoch_arg(&a.before, "--before")?,
                max: a.max,
                skip_deletes: a.skip_deletes,
                contains_path: a.contains_path,
                contains_epoch: a.contains_epoch,
                contains_type: a.contains_type.as_deref().and_then(rrr::recentfile::EventKind::parse),
            };
            match (a.local, a.remote) {
                (_, Some(src)) => {
                    let settings = rrr::remote::RsyncSettings { timeout: 300, contimeout: 30, ..Default::default() };
                    ops::news::run_remote(
                        &src,
                        a.localroot.as_deref(),
                        &settings,
                        &filter,
                        a.json,
                        a.perl_format,
                        &mut out,
                    )?
                }
                (Some(local), None) => ops::news::run(
                    &ops::news::Options { principal: local, filter, json: a.json, perl_format: a.perl_format },
                    &mut out,
                )?,
                (None, None) => anyhow::bail!("give --local PRINCIPAL or --remote SRC"),
            }
            Exit::Ok
        }
        Command::Rmirror(a) => {
            let full_every = match &a.full_every {
                Some(s) => {
                    Some(Interval::parse(s).map_err(anyhow::Error::msg).context("--full-every")?.seconds() as f64)
                }
                None => None,
            };
            let localroot = a.localroot.clone().unwrap_or_default();
            let prometheus = a.prometheus.clone().map(|file| ops::mirrors::Prometheus {
                file,
                targets: ops::mirrors::Targets::Tree {
                    state: a.state.clone().unwrap_or_else(|| localroot.join(".rrr/state.json")),
                    localroot: localroot.clone(),
                    remote: a.remote.clone().unwrap_or_default(),
                },
            });
            let opts = ops::rmirror::Options {
                remote: a.remote.unwrap_or_default(),
                localroot,
                looping: a.looping,
                interval: a.interval,
                skip_deletes: a.skip_deletes,
                max_delete: a.max_delete,
                max_files_per_connection: usize::try_from(a.max_files_per_connection).unwrap_or(usize::MAX),
                state: a.state,
                rsync_options: a.rsync_option,
                password_file: a.password_file,
                dry_run: a.dry_run,
                full: a.full,
                adopt: a.adopt,
                max_recentfile_size: a.max_recentfile_size,
                full_every,
                excludes: a.exclude,
                on_pass: a.on_pass,
                on_pass_timeout: Duration::from_secs_f64(a.on_pass_timeout.max(0.0)),
                prometheus,
                json: a.json,
                progress,
            };
            match &a.config {
                Some(file) => ops::mirrors::rmirror_config(file, &opts, writer.clock.clone(), &mut out)?,
                None => ops::rmirror::run(&opts, writer.clock.clone(), &mut out)?,
            }
        }
        Command::Status(a) => {
            let t = targets(a.target);
            ops::mirrors::status(&t, &writer.clock, a.json, a.prometheus.as_deref(), &mut out)?
        }
        Command::Check(a) => {
            let t = targets(a.target);
            let level = ops::mirrors::check(&t, &writer.clock, a.warn, a.crit, &mut out)?;
            out.flush()?;
            std::process::exit(level as i32);
        }
        Command::Overview(a) => {
            ops::overview::run(
                &ops::overview::Options {
                    principal: a.principal,
                    verbose: cli.verbose > 0,
                    json: a.json,
                    perl_format: a.perl_format,
                },
                &mut out,
            )?;
            Exit::Ok
        }
        Command::Fsck(a) => {
            let opts = ops::fsck::Options { principal: a.principal, repair: a.repair, excludes: a.exclude };
            let report = ops::fsck::run(&opts, &writer)?;
            for f in &report.findings {
                if a.json {
                    writeln!(out, "{}", serde_json::to_string(f)?)?;
                } else {
                    writeln!(out, "{}", f.line())?;
                }
            }
            let summary = serde_json::json!({
                "kind": "summary", "disk_files": report.disk_files, "index_files": report.index_files,
                "findings": report.findings.len(), "repaired": report.repaired,
            });
            if a.json {
                writeln!(out, "{summary}")?;
            } else {
                tracing::info!(
                    "fsck: {} files on disk, {} in the index, {} findings, {} repaired",
                    report.disk_files,
                    report.index_files,
                    report.findings.len(),
                    report.repaired
                );
            }
            if let Some(why) = &report.repair_refused {
                out.flush()?;
                anyhow::bail!("{why}");
            }
            if report.findings.is_empty() {
                Exit::Ok
            } else {
                Exit::Differences
            }
        }
        Command::Watch(a) => {
            anyhow::ensure!(a.batch_size > 0, "--batch-size must be at least 1");
            let opts = ops::watch::Options {
                principal: a.principal,
                batch_size: a.batch_size,
                batch_delay: Duration::from_millis(a.batch_delay),
                aggregate_every: Duration::from_secs(a.aggregate_every.max(1)),
                excludes: a.exclude,
                keep_deletes: a.keep_deletes,
                json_log: a.json_log,
                prometheus: a.prometheus,
            };
            ops::watch::run(&opts, &writer)?;
            Exit::Ok
        }
    };
    // A command that already failed (a daemon whose stdout closed: 1) keeps
    // its status; a listing whose reader went away ends here with 0.
    match out.flush() {
        Err(e) if exit == Exit::Ok => Err(e.into()),
        _ => Ok(exit),
    }
}

fn targets(t: cli::TargetArgs) -> ops::mirrors::Targets {
    match (t.localroot, t.state, t.config) {
        (Some(r), _, _) => ops::mirrors::Targets::Localroot(r),
        (_, Some(s), _) => ops::mirrors::Targets::State(s),
        (_, _, Some(c)) => ops::mirrors::Targets::Config(c),
        _ => unreachable!("clap requires one of --localroot, --state, --config"),
    }
}

/// rrr.1, one page per subcommand (from the clap definitions, with the
/// sections of `rrr::manual`), and pages for the Perl entry points: the
/// page of `rrr news` also documents `rrr-news`; rrr-client and
/// rrr-server have their own.
fn write_manpages(dir: &std::path::Path) -> Result<()> {
    use rrr::perl_compat::{perl_usage, TOOLS};
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let cmd = <Cli as clap::CommandFactory>::command();
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
        buf.extend(rrr::manual::man_sections(name, command, &pages).into_bytes());
        if TOOLS.contains(&name) {
            buf.extend(format!(".SH \"AS {name}\"\n").into_bytes());
            buf.extend(rrr::manual::perl_entry_section(name, perl_usage(name)).into_bytes());
        }
        Ok(buf)
    };
    for sub in &subs {
        let name = format!("rrr-{}", sub.get_name());
        save(&name, page(&name, sub.get_name(), sub.clone().name(name.clone()).after_help(""))?)?;
    }
    for tool in TOOLS.iter().filter(|t| !subs.iter().any(|s| format!("rrr-{}", s.get_name()) == **t)) {
        let runs = if *tool == "rrr-client" { "rrr rmirror --loop" } else { "rrr watch" };
        save(tool, rrr::manual::perl_entry_page(tool, runs, perl_usage(tool), &pages).into_bytes())?;
    }
    save("rrr", page("rrr", "rrr", cmd.after_help(""))?)
}

/// Run one parsed command line and turn its result into an exit status.
fn run_to_exit(cli: Cli) -> Exit {
    match run(cli) {
        Ok(exit) => exit,
        Err(err) => {
            if err.chain().any(|e| e.downcast_ref::<io::Error>().is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe))
            {
                Exit::Ok
            } else {
                tracing::error!("{err:#}");
                ops::exit_for_error(&err)
            }
        }
    }
}

/// Invoked as `rrr-news`, `rrr-client`, …: take the Perl tool's options and
/// run the equivalent rrr commands in order, stopping at the first failure.
fn run_perl_entry_point(tool: &str, args: Vec<String>) -> Exit {
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
        let exit = run_to_exit(cli);
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

fn main() {
    let mut argv = std::env::args();
    let arg0 = argv.next().unwrap_or_default();
    let name = std::path::Path::new(&arg0).file_name().and_then(|n| n.to_str()).unwrap_or("rrr").to_string();
    let code = if rrr::perl_compat::TOOLS.contains(&name.as_str()) {
        run_perl_entry_point(&name, argv.collect())
    } else {
        run_to_exit(Cli::parse())
    };
    std::process::exit(code as i32);
}
