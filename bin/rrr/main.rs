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
    let clock = match epoch_arg(&cli.now, "--now")? {
        Some(e) => Clock::pinned(e),
        None => Clock::system(),
    };
    let writer = Writer {
        clock,
        program: std::env::args().next().unwrap_or_else(|| "rrr".into()),
        lock_timeout: Duration::from_secs(cli.locktimeout),
    };
    let progress = rrr::progress::enabled(cli.quiet);
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let exit = match cli.command {
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
            } else if !cli.quiet {
                eprintln!("rrr: indexed {} files into {}", report.files, report.principal.display());
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
                outside_is_warning: false,
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
            };
            ops::news::run(&ops::news::Options { principal: a.local, filter, json: a.json }, &mut out)?;
            Exit::Ok
        }
        Command::Overview(a) => {
            ops::overview::run(
                &ops::overview::Options { principal: a.principal, verbose: a.verbose, json: a.json },
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
            } else if !cli.quiet {
                eprintln!(
                    "rrr: fsck: {} files on disk, {} in the index, {} findings, {} repaired",
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
            };
            ops::watch::run(&opts, &writer)?;
            Exit::Ok
        }
    };
    out.flush()?;
    Ok(exit)
}

fn main() {
    let cli = Cli::parse();
    let code = match run(cli) {
        Ok(exit) => exit,
        Err(err) => {
            if err.chain().any(|e| e.downcast_ref::<io::Error>().is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe))
            {
                Exit::Ok
            } else {
                eprintln!("rrr: {err:#}");
                ops::exit_for_error(&err)
            }
        }
    };
    std::process::exit(code as i32);
}
