//! Queries over a collection: news (the newest event of each path, newest
//! first) and the overview table. Pure: files in, rows out.
//!
//! News reads the collection smallest file first. A path's newest event is
//! in the smallest file that lists it (events enter at the principal and
//! flow to larger files), so the first occurrence wins and later ones are
//! dropped: rrr prints each path once, unlike the reference (protocol.md 11.2).
//! `after`/`before` compare epochs exactly and strictly (protocol.md 11.1, 16).

use crate::epoch::Epoch;
use crate::format::read::Outline;
use crate::format::{first_of_each_path, Event, EventKind, Merged, Recentfile};
use crate::interval::Interval;

/// Filters of `rrr news`, applied to each path's newest event (protocol.md 11.1).
/// The default filters nothing.
#[derive(Clone, Debug, Default)]
pub struct NewsFilter {
    /// Only events strictly newer than this (what a mirror already has).
    pub after: Option<Epoch>,
    /// Only events strictly older than this.
    pub before: Option<Epoch>,
    /// At most this many events, the newest.
    pub max: Option<usize>,
    /// Leave out paths whose newest event is a delete.
    pub skip_deletes: bool,
    /// Only the newest event of exactly this path (`--contains-path`).
    pub contains_path: Option<crate::RelPath>,
    /// Only the event with exactly this epoch string (`rrr-news --contains_epoch`).
    pub contains_epoch: Option<String>,
    /// Only events of this type (`rrr-news --contains_type`).
    pub contains_type: Option<EventKind>,
}

impl NewsFilter {
    pub(crate) fn accepts(&self, e: &Event) -> bool {
        self.after.as_ref().is_none_or(|a| e.epoch > *a)
            && self.before.as_ref().is_none_or(|b| e.epoch < *b)
            && !(self.skip_deletes && e.kind == EventKind::Delete)
            && self.contains_path.as_ref().is_none_or(|p| &e.path == p)
            && self.contains_epoch.as_ref().is_none_or(|x| e.epoch.as_str() == x)
            && self.contains_type.is_none_or(|k| e.kind == k)
    }
}

/// The files read so far, smallest first, and the news they give.
///
/// The merge (first occurrence of each path, newest first) is done when
/// asked for, over all files. A path's newest event wins even when it is
/// a delete that an older `new` in a larger file precedes (protocol.md 11.2).
///
/// ```
/// use recentfile::query::{News, NewsFilter};
/// use recentfile::{Epoch, Event, EventKind, Recentfile};
///
/// let ev = |e: &str, p: &str, k| Event::new(Epoch::parse(e).unwrap(), p, k);
/// // The 1h file and the 1d file of a cascade, smallest first.
/// let small = Recentfile::from_events(vec![
///     ev("1700003000", "a.tar.gz", EventKind::Delete),
///     ev("1700002000", "b.tar.gz", EventKind::New),
/// ]);
/// let big = Recentfile::from_events(vec![
///     ev("1700001000", "a.tar.gz", EventKind::New),
///     ev("1699000000", "c.tar.gz", EventKind::New),
/// ]);
///
/// let all = News::of([&small, &big]).finish(&NewsFilter::default());
/// let paths: Vec<(&[u8], EventKind)> = all.iter().map(|e| (e.path.as_bytes(), e.kind)).collect();
/// assert_eq!(paths, [(&b"a.tar.gz"[..], EventKind::Delete), (b"b.tar.gz", EventKind::New), (b"c.tar.gz", EventKind::New)]);
///
/// // What a mirror wants to fetch: no deletes, newer than what it has.
/// let filter = NewsFilter { skip_deletes: true, after: Some(Epoch::parse("1699500000")?), ..NewsFilter::default() };
/// let news = News::of([&small, &big]).finish(&filter);
/// assert_eq!(news.len(), 1);
/// assert_eq!(news[0].path, "b.tar.gz");
/// // Nothing older than the small file can change that answer.
/// assert!(News::of([&small]).settled(&NewsFilter { after: Some(Epoch::parse("1700002500")?), ..filter }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct News<'a> {
    files: Vec<&'a Recentfile>,
}

/// Whether news over `files` (smallest first) is settled for `filter`:
/// no larger file can change the answer, so a reader may stop there.
pub fn is_settled(files: &[Recentfile], filter: &NewsFilter) -> bool {
    News::of(files).settled(filter)
}

impl<'a> News<'a> {
    /// News over `files`, smallest first.
    pub fn of(files: impl IntoIterator<Item = &'a Recentfile>) -> Self {
        News { files: files.into_iter().collect() }
    }

    /// Whether, given `filter`, no file larger than these can change the
    /// answer: `--contains-path`'s path was found, `--after` lies within
    /// the files, or `--max` events are settled above the oldest event of
    /// the last file.
    pub fn settled(&self, filter: &NewsFilter) -> bool {
        let Some(oldest) = self.files.last().and_then(|f| f.oldest()) else { return false };
        if let Some(p) = &filter.contains_path {
            if self.files.iter().any(|f| f.events.iter().any(|e| &e.path == p)) {
                return true;
            }
        }
        if filter.after.as_ref().is_some_and(|a| oldest.epoch <= *a) {
            return true;
        }
        if let Some(max) = filter.max {
            // Events at or above this file's oldest epoch are settled.
            let settled =
                self.merged().into_iter().take_while(|e| e.epoch >= oldest.epoch).filter(|e| filter.accepts(e)).count();
            if settled >= max {
                return true;
            }
        }
        false
    }

    /// The first occurrence of each path over all files, newest first.
    fn merged(&self) -> Vec<&'a Event> {
        let lists: Vec<&[Event]> = self.files.iter().map(|f| f.events.as_slice()).collect();
        let first = first_of_each_path(&lists);
        let all = self.files.iter().flat_map(|f| f.events.iter());
        let mut events: Vec<&'a Event> = all.zip(first).filter_map(|(e, keep)| keep.then_some(e)).collect();
        // Each file's list is sorted; a stable sort merges the runs.
        sort_newest_first(&mut events);
        events
    }

    /// The answer: each path once, newest first, filtered and capped.
    pub fn finish(&self, filter: &NewsFilter) -> Vec<&'a Event> {
        let mut out = self.merged();
        out.retain(|e| filter.accepts(e));
        if let Some(n) = filter.max {
            out.truncate(n);
        }
        out
    }
}

/// Stable, newest first; cheap when the runs (one per file) do not overlap.
fn sort_newest_first(events: &mut [&Event]) {
    if !events.is_sorted_by(|a, b| a.epoch >= b.epoch) {
        events.sort_by(|a, b| b.epoch.cmp(&a.epoch));
    }
}

/// One line of `rrr news`: `EPOCH<TAB>TYPE<TAB>PATH` with control
/// characters escaped as `ls -b` does ([`crate::format::escape_path`]),
/// or with `json` the object `{"epoch":"…","type":"…","path":"…"}`,
/// lossless: JSON's string escapes, and `"path":{"bytes":"<hex>"}` for a
/// path that is not UTF-8 ([`crate::RelPath`]'s JSON form).
pub fn write_news_line(out: &mut dyn std::io::Write, e: &Event, json: bool) -> std::io::Result<()> {
    if json {
        #[derive(serde::Serialize)]
        struct Line<'a> {
            epoch: &'a str,
            #[serde(rename = "type")]
            kind: &'a str,
            path: &'a crate::RelPath,
        }
        let line = Line { epoch: e.epoch.as_str(), kind: e.kind.as_str(), path: &e.path };
        // An I/O error keeps its kind (a closed pipe ends a listing with 0).
        serde_json::to_writer(&mut *out, &line).map_err(std::io::Error::from)?;
        return out.write_all(b"\n");
    }
    // Pieces straight into the (buffered) writer: a full listing is a
    // million lines.
    out.write_all(e.epoch.as_str().as_bytes())?;
    out.write_all(if e.kind == EventKind::New { &b"\tnew\t"[..] } else { &b"\tdelete\t"[..] })?;
    if crate::format::needs_escape(&e.path) {
        out.write_all(crate::format::escape_path(&e.path).as_bytes())?;
    } else {
        out.write_all(e.path.as_bytes())?;
    }
    out.write_all(b"\n")
}

/// Newest event per path over whole files, newest first (no filter).
pub fn newest_per_path<'a>(files: impl IntoIterator<Item = &'a Recentfile>) -> Vec<&'a Event> {
    News::of(files).finish(&NewsFilter::default())
}

/// What overview needs of one file (it can be read without the events).
#[derive(Clone, Debug, serde::Serialize)]
pub struct FileSummary {
    /// The interval spec (`1h`).
    pub interval: String,
    /// The interval's window in seconds (not in the JSON row).
    #[serde(skip)]
    pub seconds: u64,
    /// The number of events.
    pub count: usize,
    /// The newest event's epoch.
    pub max: Option<String>,
    /// The oldest event's epoch.
    pub min: Option<String>,
    /// `meta.dirtymark`.
    pub dirtymark: Option<String>,
    /// `Producers.time`: when the file was written.
    pub produced: Option<String>,
    /// `meta.merged.epoch`: how far it was merged into the next file.
    pub merged: Option<String>,
    /// Whether this is the unbounded `Z` file.
    pub is_z: bool,
}

impl FileSummary {
    /// The summary of a file read in full.
    pub fn of(iv: &Interval, rf: &Recentfile) -> FileSummary {
        FileSummary::from_outline(iv, &Outline::of(rf))
    }

    /// From an [`Outline`] (no events needed): what `rrr`'s store reads of a file.
    pub fn from_outline(iv: &Interval, o: &Outline) -> FileSummary {
        FileSummary {
            interval: iv.spec().to_string(),
            seconds: iv.seconds(),
            count: o.count,
            max: o.newest.as_ref().map(|e| e.as_str().to_string()),
            min: o.oldest.as_ref().map(|e| e.as_str().to_string()),
            dirtymark: o.meta.dirtymark.as_ref().map(|d| d.as_str().to_string()),
            produced: o.meta.produced().map(str::to_string),
            merged: match &o.meta.merged {
                Merged::Into { epoch: Some(e), .. } => Some(e.as_str().to_string()),
                _ => None,
            },
            is_z: iv.is_z(),
        }
    }
}

fn f2(s: &str) -> String {
    format!("{:.2}", s.parse::<f64>().unwrap_or(0.0))
}

/// The reference's overview table (protocol.md 11.4), each interval once.
pub fn overview_table(rows: &[FileSummary], verbose: bool) -> String {
    let rows: Vec<&FileSummary> = rows.iter().filter(|r| r.count > 0).collect();
    if rows.is_empty() {
        return "\n\n".to_string();
    }
    let maxes: Vec<String> = rows.iter().map(|r| f2(r.max.as_deref().unwrap_or("0"))).collect();
    let mins: Vec<String> = rows.iter().map(|r| f2(r.min.as_deref().unwrap_or("0"))).collect();
    let mut cloud: Vec<&String> = maxes.iter().chain(mins.iter()).collect();
    cloud.sort_by(|a, b| b.parse::<f64>().unwrap_or(0.0).total_cmp(&a.parse::<f64>().unwrap_or(0.0)));
    cloud.dedup();
    let rank = |s: &String| cloud.iter().position(|c| *c == s).unwrap_or(0);
    let mut header = vec!["Ival", "Cnt"];
    if verbose {
        header.extend(["Dirtymark", "Produced", "Merged"]);
    }
    header.extend(["Max", "Min", "Span", "Util", "Cloud"]);
    let mut table: Vec<Vec<String>> = vec![header.iter().map(|s| s.to_string()).collect()];
    for (i, r) in rows.iter().enumerate() {
        let span = r.max.as_deref().unwrap_or("0").parse::<f64>().unwrap_or(0.0)
            - r.min.as_deref().unwrap_or("0").parse::<f64>().unwrap_or(0.0);
        let mut line = vec![r.interval.clone(), r.count.to_string()];
        if verbose {
            line.push(r.dirtymark.as_deref().map_or("-".to_string(), f2));
            line.push(f2(r.produced.as_deref().unwrap_or("0")));
            line.push(if r.is_z { "-".to_string() } else { f2(r.merged.as_deref().unwrap_or("0")) });
        }
        line.push(maxes[i].clone());
        line.push(mins[i].clone());
        line.push(format!("{span:.2}"));
        line.push(if r.is_z || r.seconds == 0 {
            "-".to_string()
        } else {
            format!("{:5.1}%", 100.0 * span / r.seconds as f64)
        });
        let mut c = vec![b' '; cloud.len()];
        c[rank(&maxes[i])] = b'^';
        c[rank(&mins[i])] = b'^';
        line.push(String::from_utf8(c).expect("ascii"));
        table.push(line);
    }
    let widths: Vec<usize> = (0..table[0].len()).map(|c| table.iter().map(|l| l[c].len()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for line in &table {
        let cells: Vec<String> = line.iter().zip(&widths).map(|(v, w)| format!("{v:>w$}")).collect();
        out.push_str(&cells.join(" "));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod pins;
