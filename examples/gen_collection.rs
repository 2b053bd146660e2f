//! Synthetic collections and trees for the benchmarks (bench/format-origin.sh).
//!
//! ```text
//! cargo run --release --example gen_collection -- collection DIR --events N [--now EPOCH] [--seed S]
//! cargo run --release --example gen_collection -- tree ROOT --files N [--now EPOCH] [--seed S]
//! ```
//!
//! `collection` writes an aggregated cascade `RECENT-{1h,6h,1d,1W,1M,1Q,1Y,Z}.yaml`
//! plus `RECENT.recent`, as rrr itself would leave it after `aggregate`: every
//! file holds the events of its window (Z all of them), with `merged`,
//! `minmax`, `dirtymark` filled in. N events with unique CPAN-like paths
//! (`id/A/AB/ABCDEF/Foo-Bar-1.23.tar.gz`): the newest ones one every 60 s on
//! average (about 60 in the last hour, 10 080 in the last week), the rest
//! spread evenly over the 15 years before. About 1 % of the events of the
//! last year are deletes; they are not in Z (as after a merge without
//! `--keep-deletes`). At N = 1M the Z file is about 99 MB.
//!
//! `tree` creates N empty files with such paths under ROOT, with mtimes
//! spread over 15 years, for `rrr init`.
//!
//! `read FILE` reads one recentfile (as every command does) and prints the
//! time taken; `write FILE OUT` reads FILE, then writes it to OUT as the
//! writer does (serialize, temp file, fsync, rename) and prints both times.
//! Run them under `/usr/bin/time -v` for the peak RSS.
//!
//! Deterministic for a given seed and `--now`.

use rrr::epoch::Epoch;
use rrr::interval::Interval;
use rrr::recentfile::{self, Event, EventKind, Format, Merged, MinMax, Producer, Recentfile};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

const AGGREGATOR: [&str; 8] = ["1h", "6h", "1d", "1W", "1M", "1Q", "1Y", "Z"];
const RECENT_GAP: f64 = 60.0;
const RECENT_EVENTS: usize = 10_080;
const OLD_SPAN: f64 = 15.0 * 31_557_600.0;

const WORDS: [&str; 48] = [
    "Acme", "App", "Moose", "Test", "More", "Simple", "Data", "Dumper", "File", "Path", "HTTP", "Tiny", "JSON", "XS",
    "DBIx", "Class", "Catalyst", "Plugin", "Mojo", "Net", "Async", "Log", "Any", "Type", "Tiny", "Util", "List",
    "Config", "Web", "Server", "Client", "Parser", "Template", "Toolkit", "Text", "CSV", "Time", "Date", "Format",
    "Digest", "SHA", "Crypt", "Role", "Object", "Pad", "Sub", "Exporter", "YAML",
];
const SUFFIXES: [&str; 6] = [".tar.gz", ".tar.gz", ".tar.gz", ".meta", ".readme", ".zip"];

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn author(rng: &mut Rng) -> String {
    let len = 4 + rng.below(7) as usize;
    (0..len).map(|_| (b'A' + rng.below(26) as u8) as char).collect()
}

fn path(rng: &mut Rng, authors: &[String]) -> String {
    let a = &authors[rng.below(authors.len() as u64) as usize];
    let parts = 1 + rng.below(4) as usize;
    let dist: Vec<&str> = (0..parts).map(|_| WORDS[rng.below(WORDS.len() as u64) as usize]).collect();
    let version = format!("{}.{:02}", rng.below(10), rng.below(100));
    let suffix = SUFFIXES[rng.below(SUFFIXES.len() as u64) as usize];
    format!("id/{}/{}/{}/{}-{}{}", &a[..1], &a[..2], a, dist.join("-"), version, suffix)
}

fn unique_paths(n: usize, rng: &mut Rng) -> Vec<String> {
    let authors: Vec<String> = (0..(n / 20).clamp(50, 40_000)).map(|_| author(rng)).collect();
    let mut seen = HashSet::with_capacity(n);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let p = path(rng, &authors);
        if seen.insert(p.clone()) {
            out.push(p);
        }
    }
    out
}

/// Epochs newest first, strictly decreasing, as clock readings (`%.15g`).
fn epochs(n: usize, now: f64, rng: &mut Rng) -> Vec<Epoch> {
    let mut out: Vec<Epoch> = Vec::with_capacity(n);
    let mut t = now - 1.0;
    let old = n.saturating_sub(RECENT_EVENTS);
    let old_gap = if old > 0 { OLD_SPAN / old as f64 } else { 0.0 };
    for i in 0..n {
        let gap = if i < RECENT_EVENTS { RECENT_GAP } else { old_gap };
        t -= gap * (0.05 + 1.9 * rng.unit());
        let mut e = Epoch::from_clock(t);
        if let Some(prev) = out.last() {
            if e >= *prev {
                // Two readings collided at %.15g: step below the previous one.
                t = prev.to_f64() - 1e-5;
                e = Epoch::from_clock(t);
            }
        }
        out.push(e);
    }
    out
}

fn collection(dir: &Path, n: usize, now: Epoch, seed: u64) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut rng = Rng(seed | 1);
    let paths = unique_paths(n, &mut rng);
    let epochs = epochs(n, now.to_f64(), &mut rng);
    let year_ago = now.to_f64() - 31_557_600.0;
    let events: Vec<Event> = epochs
        .into_iter()
        .zip(paths)
        .map(|(epoch, path)| {
            let kind =
                if epoch.to_f64() > year_ago && rng.below(100) == 0 { EventKind::Delete } else { EventKind::New };
            Event::new(epoch, path, kind)
        })
        .collect();
    let dirtymark = events.last().map_or_else(|| now.clone(), |e| e.epoch.clone());
    let ivs: Vec<Interval> = AGGREGATOR.iter().map(|s| Interval::parse(s).expect("valid")).collect();
    let producer = Producer { program: "gen_collection".into(), time: now.clone() };
    let mtime = UNIX_EPOCH + Duration::from_secs(now.whole_seconds() as u64);
    let newest = events.first().map(|e| e.epoch.clone());
    for (i, iv) in ivs.iter().enumerate() {
        let file_events: Vec<Event> = if iv.is_z() {
            events.iter().filter(|e| e.kind == EventKind::New).cloned().collect()
        } else {
            let bound = now.to_f64() - iv.seconds() as f64;
            events.iter().take_while(|e| e.epoch.to_f64() >= bound).cloned().collect()
        };
        let minmax = MinMax {
            max: file_events.first().map(|e| e.epoch.clone()),
            min: file_events.last().map(|e| e.epoch.clone()),
            mtime: Some(now.whole_seconds().to_string()),
        };
        let mut rf = Recentfile::from_events(file_events);
        let m = &mut rf.meta;
        m.aggregator = AGGREGATOR.iter().map(|s| s.to_string()).collect();
        m.dirtymark = Some(dirtymark.clone());
        m.filenameroot = Some("RECENT".into());
        m.interval = Some(iv.spec().to_string());
        if let Some(next) = ivs.get(i + 1) {
            m.merged = Merged::Into {
                epoch: newest.clone(),
                into_interval: Some(next.spec().to_string()),
                time: Some(now.as_str().to_string()),
            };
        }
        m.minmax = Some(minmax);
        m.protocol = Some("1".into());
        m.serializer_suffix = Some(".yaml".into());
        let bytes = recentfile::serialize(&rf, Format::Yaml, &producer);
        let file = dir.join(format!("RECENT-{}.yaml", iv.spec()));
        std::fs::write(&file, &bytes)?;
        std::fs::File::options().write(true).open(&file)?.set_modified(mtime)?;
        eprintln!("{}: {} events, {} bytes", file.display(), rf.events.len(), bytes.len());
    }
    let link = dir.join("RECENT.recent");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink("RECENT-1h.yaml", &link)?;
    Ok(())
}

fn tree(root: &Path, n: usize, now: Epoch, seed: u64) -> std::io::Result<()> {
    let mut rng = Rng(seed | 1);
    let paths = unique_paths(n, &mut rng);
    let now = now.to_f64();
    let mut made: HashSet<PathBuf> = HashSet::new();
    for p in paths {
        let file = root.join(&p);
        let parent = file.parent().expect("has parent").to_path_buf();
        if !made.contains(&parent) {
            std::fs::create_dir_all(&parent)?;
            made.insert(parent);
        }
        let f = std::fs::File::create(&file)?;
        let age = rng.unit() * OLD_SPAN;
        f.set_modified(UNIX_EPOCH + Duration::from_secs((now - age) as u64))?;
    }
    eprintln!("{}: {n} files in {} directories", root.display(), made.len());
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: gen_collection (collection DIR --events N | tree ROOT --files N) [--now EPOCH] [--seed S]";
    let (Some(mode), Some(dir)) = (args.first(), args.get(1)) else {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    let opt = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let now = Epoch::parse(&opt("--now").unwrap_or_else(|| "1764460800.5".into())).expect("--now: an epoch");
    let seed: u64 = opt("--seed").map_or(42, |s| s.parse().expect("--seed: a number"));
    let res = match mode.as_str() {
        "collection" => {
            let n: usize = opt("--events").expect("--events N").parse().expect("--events: a number");
            collection(Path::new(dir), n, now, seed)
        }
        "tree" => {
            let n: usize = opt("--files").expect("--files N").parse().expect("--files: a number");
            tree(Path::new(dir), n, now, seed)
        }
        "read" => {
            let t = std::time::Instant::now();
            let rf = rrr::store::read_file(Path::new(dir)).expect("readable").expect("exists");
            println!("read {} events in {:.3} s", rf.events.len(), t.elapsed().as_secs_f64());
            Ok(())
        }
        "write" => {
            let out = PathBuf::from(args.get(2).expect("write FILE OUT"));
            let t = std::time::Instant::now();
            let rf = rrr::store::read_file(Path::new(dir)).expect("readable").expect("exists");
            let read = t.elapsed().as_secs_f64();
            // As `origin::Loaded::save` writes: streamed into the temp file, fsync, rename.
            let producer = Producer { program: "gen_collection".into(), time: now };
            let t = std::time::Instant::now();
            let mut fsync = 0.0;
            rrr::store::write_atomic_with(&out, None, |w| {
                recentfile::yaml::emit_to(&rf, &producer, w)?;
                fsync = t.elapsed().as_secs_f64();
                Ok(())
            })
            .expect("writable");
            let total = t.elapsed().as_secs_f64();
            println!(
                "read {} events in {read:.3} s; write {total:.3} s (serialize+write {fsync:.3} s, fsync+rename {:.3} s)",
                rf.events.len(),
                total - fsync
            );
            Ok(())
        }
        _ => {
            eprintln!("{usage}");
            std::process::exit(2);
        }
    };
    if let Err(e) = res {
        eprintln!("gen_collection: {e}");
        std::process::exit(1);
    }
}
