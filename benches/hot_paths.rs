//! Micro-benchmarks of the hot paths, so that a regression between rounds
//! shows up before a million-event benchmark does (`cargo bench`):
//! - the YAML reader (Syck layout, the streaming fast path) on a 100k-event file;
//! - the epoch comparator and the bump, on CPAN-like epochs;
//! - the news merge (each path's newest event across a cascade).
//!
//! The inputs are synthetic and deterministic; the figures are for
//! comparing two builds on one machine, not for quoting.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use rrr::epoch::Epoch;
use rrr::query::{News, NewsFilter};
use rrr::recentfile::{self, Event, EventKind, Format, Producer, Recentfile};
use std::hint::black_box;

/// `n` events, newest first, one every ~7 s from 1.7e9 back, CPAN-like paths.
fn events(n: usize, salt: u64) -> Vec<Event> {
    let mut x = 0x9e37_79b9_7f4a_7c15_u64 ^ salt;
    (0..n)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let epoch = format!("{}.{:05}", 1_700_000_000 - (i as u64) * 7, x % 100_000);
            let a = (b'A' + (x % 26) as u8) as char;
            let path = format!("id/{a}/{a}B/{a}BCD{}/Foo-Bar-{}.{}.tar.gz", x % 997, i % 50, x % 100);
            let kind = if x.is_multiple_of(100) { EventKind::Delete } else { EventKind::New };
            Event::new(Epoch::parse(&epoch).unwrap(), path, kind)
        })
        .collect()
}

fn producer() -> Producer {
    Producer { program: "bench".into(), time: Epoch::parse("1700000000.5").unwrap() }
}

fn yaml_reader(c: &mut Criterion) {
    let rf = Recentfile::from_events(events(100_000, 1));
    let bytes = recentfile::serialize(&rf, Format::Yaml, &producer());
    c.bench_function("yaml read 100k events", |b| {
        b.iter(|| recentfile::yaml::read_syck(black_box(&bytes[..])).unwrap().unwrap())
    });
    c.bench_function("yaml write 100k events", |b| b.iter(|| recentfile::yaml::emit(black_box(&rf), &producer())));
}

fn epochs(c: &mut Criterion) {
    let es: Vec<Epoch> = events(10_000, 2).into_iter().map(|e| e.epoch).collect();
    c.bench_function("epoch sort 10k", |b| {
        b.iter_batched(|| es.iter().rev().cloned().collect::<Vec<_>>(), |mut v| v.sort(), BatchSize::SmallInput)
    });
    let close = [Epoch::parse("1700000000.5").unwrap(), Epoch::parse("1700000000.50000001").unwrap()];
    c.bench_function("epoch cmp within one second", |b| b.iter(|| black_box(&close[0]).cmp(black_box(&close[1]))));
    c.bench_function("epoch bump", |b| b.iter(|| black_box(&close[0]).inc()));
}

fn news_merge(c: &mut Criterion) {
    // A cascade: 1h 60 events, 1d 1440, 1W 10k, Z 100k, overlapping as after aggregate.
    let all = events(100_000, 3);
    let files: Vec<Recentfile> =
        [60, 1_440, 10_080, 100_000].iter().map(|&n| Recentfile::from_events(all[..n].to_vec())).collect();
    let filter = NewsFilter::default();
    c.bench_function("news merge, cascade of 100k", |b| b.iter(|| News::of(black_box(&files)).finish(&filter).len()));
}

criterion_group!(benches, yaml_reader, epochs, news_merge);
criterion_main!(benches);
