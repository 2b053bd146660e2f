//! What `size`/`sha256` on every `new` event cost the YAML readers: a
//! 1M-event file in Syck's layout with and without the two keys, read by
//! the strict path (sequential and on two threads) and by the line
//! reader, interleaved, medians of `RUNS` rounds (bench/hashes.md).
//!
//! `cargo run --release -p recentfile --example read_hashed [EVENTS]`

use recentfile::beacon::FileDigest;
use recentfile::format::{read, yaml, Producer};
use recentfile::{serialize, Epoch, Event, EventKind, Format, Recentfile};
use std::time::Instant;

const RUNS: usize = 5;

fn events(n: usize, hashed: bool) -> Vec<Event> {
    let mut x = 0x9e37_79b9_7f4a_7c15_u64;
    (0..n)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let epoch = format!("{}.{:05}", 1_700_000_000 - (i as u64) * 7, x % 100_000);
            let a = (b'A' + (x % 26) as u8) as char;
            let path = format!("id/{a}/{a}B/{a}BCD{}/Foo-Bar-{}.{}.tar.gz", x % 997, i % 50, x % 100);
            let kind = if x.is_multiple_of(100) { EventKind::Delete } else { EventKind::New };
            let ev = Event::new(Epoch::parse(&epoch).unwrap(), path, kind);
            let digest = (hashed && kind == EventKind::New).then(|| FileDigest::of(&x.to_le_bytes()));
            let digest = digest.map(|d| FileDigest { size: x % 50_000_000, ..d });
            ev.with_digest(digest)
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() {
    let n: usize = std::env::args().nth(1).map_or(1_000_000, |s| s.parse().expect("EVENTS"));
    let producer = Producer { program: "bench".into(), time: Epoch::parse("1700000000.5").unwrap() };
    let dir = std::env::temp_dir().join(format!("rrr-read-hashed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut files = Vec::new();
    for hashed in [false, true] {
        let bytes = serialize(&Recentfile::from_events(events(n, hashed)), Format::Yaml, &producer);
        let path = dir.join(format!("hashed-{hashed}.yaml"));
        std::fs::write(&path, &bytes).unwrap();
        println!("{}: {} bytes", path.display(), bytes.len());
        files.push((hashed, path, String::from_utf8(bytes).unwrap()));
    }
    let mut times = vec![vec![Vec::new(); 3]; 2];
    for _ in 0..RUNS {
        for (k, (_, path, text)) in files.iter().enumerate() {
            let t = Instant::now();
            let f = std::fs::File::open(path).unwrap();
            assert_eq!(yaml::read_syck(&f).unwrap().unwrap().events.len(), n);
            times[k][0].push(t.elapsed().as_secs_f64());
            let t = Instant::now();
            assert_eq!(yaml::read_syck_file(&f).unwrap().unwrap().events.len(), n);
            times[k][1].push(t.elapsed().as_secs_f64());
            let t = Instant::now();
            assert_eq!(read::validate(yaml::parse(text).unwrap()).unwrap().events.len(), n);
            times[k][2].push(t.elapsed().as_secs_f64());
        }
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("{n} events, medians of {RUNS} interleaved rounds, load average {}", load.trim());
    for (j, what) in ["strict, one thread", "strict, split on two threads", "line reader"].iter().enumerate() {
        let (plain, hashed) = (median(times[0][j].clone()), median(times[1][j].clone()));
        println!("{what:30} without {plain:.3} s  with {hashed:.3} s  ratio {:.2}", hashed / plain);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
