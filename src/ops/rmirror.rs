//! `rrr rmirror`: the command's entry. It resolves the tree's options
//! (command line over `[[tree]]` over top-level keys over the built-in
//! defaults, [`crate::mirror::options`]) and runs the engine: one tree in
//! [`crate::mirror::looping`], a config's trees in `mirror::fleet`.

use crate::exit::{exit_for_error, is_closed};
use crate::mirror::fleet;
use crate::mirror::looping::{run_in_span, span};
use crate::mirror::options;
use crate::mirror::targets::Targets;
use crate::mirror::textfile::Prometheus;
use crate::monitor::metrics_http::MetricsServer;
use crate::ops::{Ctx, Exit};
use anyhow::Result;

pub use crate::mirror::looping::{Options, Trees};

/// Run rmirror on one tree, logging inside its `span`, or on every tree
/// of a config file. The tree's options are merged and validated, and a
/// tree that would mirror into its own remote refused, before anything
/// runs.
pub fn run(opts: &Options, ctx: &Ctx) -> Result<Exit> {
    // Already done by `main` from the first instruction; here for any
    // other caller. The only place below `main` that installs them.
    crate::sys::signals::install_for_rmirror();
    let res = run_trees(opts, ctx);
    crate::sys::notify::notify("STOPPING=1");
    res
}

/// [`run`] once its signals are set up.
fn run_trees(opts: &Options, ctx: &Ctx) -> Result<Exit> {
    let mut out = ctx.out();
    let tree = match &opts.trees {
        Trees::Config(file) => {
            let _server = serve_metrics(opts, Targets::Config(file.clone()), ctx)?;
            return fleet::run_config(file, opts, ctx.clock(), ctx.progress, &mut **out);
        }
        Trees::One(tree) => tree,
    };
    let cfg = options::resolve(tree, &opts.options, opts.flags(ctx.progress)).map_err(anyhow::Error::msg)?;
    fleet::refuse_overlaps(std::slice::from_ref(&cfg))?;
    let targets = Targets::Tree {
        state: cfg.state_file.clone(),
        localroot: cfg.localroot.clone(),
        remote: cfg.remote.src.clone(),
    };
    let _server = serve_metrics(opts, targets, ctx)?;
    let textfile = opts.prometheus.clone().map(|file| Prometheus {
        file,
        targets: Targets::Tree {
            state: cfg.state_file.clone(),
            localroot: cfg.localroot.clone(),
            remote: cfg.remote.src.clone(),
        },
    });
    let span = span(&cfg);
    let _in = span.enter();
    ignore_hangups(span.clone());
    // The error is logged here, in the span: its line (a JSON record's
    // `localroot` and `remote` too) names the tree like every other.
    match run_in_span(&cfg, opts, textfile.as_ref(), ctx.clock(), &mut **out) {
        Err(e) if is_closed(&e) => Err(e),
        Err(e) => {
            tracing::error!("{e:#}");
            Ok(exit_for_error(&e))
        }
        done => done,
    }
}

/// `--metrics-listen`: serve the textfile's metrics of `targets`, rendered
/// from their states on each scrape (at the run's clock). Started before
/// any pass: a taken address ends the run at once (exit 2).
fn serve_metrics(opts: &Options, targets: Targets, ctx: &Ctx) -> Result<Option<MetricsServer>> {
    let Some(addr) = &opts.metrics_listen else { return Ok(None) };
    let clock = ctx.clock().clone();
    let server =
        crate::monitor::metrics_http::serve_metrics(addr, move || crate::mirror::textfile::render(&targets, &clock))?;
    tracing::info!("serving metrics at http://{}/metrics", server.local_addr());
    Ok(Some(server))
}

/// A single tree from the command line has no config to reload: each
/// SIGHUP is a warning in the tree's log, and the run goes on (it used
/// to end it silently, status 129). A thread of its own, so the line
/// comes at once, even in the middle of a long rsync.
fn ignore_hangups(span: tracing::Span) {
    let mut seen = crate::sys::signals::hangups();
    let _ = std::thread::Builder::new().name("sighup".into()).spawn(move || loop {
        std::thread::sleep(std::time::Duration::from_millis(100));
        let now = crate::sys::signals::hangups();
        if now != seen {
            seen = now;
            let _in = span.enter();
            tracing::warn!(
                "SIGHUP ignored: a tree given on the command line has no config to reload \
                 (rrr rmirror --config FILE --loop reloads FILE on SIGHUP)"
            );
        }
    });
}
