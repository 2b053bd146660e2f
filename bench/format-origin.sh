#!/bin/sh
# Benchmarks of issues 2 and 3 (format core, origin commands); results in
# bench/format-origin.md. Usage: bench/format-origin.sh [RUNS]
#   BENCH_DIR (default /tmp/rrr-bench) holds the generated collections
#   (10k, 100k, 1M events; ~115 MB for 1M) and the 200k-file tree.
# Every figure is the median of RUNS runs (default 5; 3 for init) of
# /usr/bin/time: wall seconds, user+sys CPU seconds, peak RSS.
set -eu
RUNS=${1:-5}
B=${BENCH_DIR:-/tmp/rrr-bench}
NOW=1764460800.5          # the generator's clock; news --after one hour before it
HOUR_AGO=1764457200.5
cd "$(dirname "$0")/.."
cargo build --release --quiet --bins --examples
R=$PWD/target/release/rrr
G=$PWD/target/release/examples/gen_collection
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (apt-get install -y time)"; exit 2; }
mkdir -p "$B"
for n in 10000 100000 1000000; do
  [ -e "$B/c$n/RECENT-Z.yaml" ] || $G collection "$B/c$n" --events $n --now $NOW
done
[ -e "$B/tree200k" ] || $G tree "$B/tree200k" --files 200000 --now $NOW

# median of the numbers on stdin
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# measure LABEL CMD...: RUNS runs; prints "| LABEL | wall | cpu | rss MB |"
measure() {
  label=$1; shift
  : > "$B/times"
  i=0
  while [ $i -lt $RUNS ]; do
    [ -n "${BEFORE:-}" ] && sh -c "$BEFORE"
    /usr/bin/time -a -o "$B/times" -f "%e %U %S %M" "$@" > /dev/null 2> "$B/stderr" || { cat "$B/stderr"; exit 1; }
    i=$((i + 1))
  done
  grep -v '^Command' "$B/times" > "$B/t" || true
  wall=$(awk '{print $1}' "$B/t" | median)
  cpu=$(awk '{print $2 + $3}' "$B/t" | median)
  rss=$(awk '{printf "%.0f\n", $4 / 1024}' "$B/t" | median)
  echo "| $label | $wall | $cpu | $rss |"
}

# measure20 LABEL SCRIPT: like measure, for a shell script doing 20 runs
# of a fast command (time's resolution is 10 ms); figures are per run.
measure20() {
  label=$1; shift
  line=$(measure "$label" sh -c "$1")
  echo "$line" | awk -F'|' '{printf "|%s| %.4f | %.4f |%s|\n", $2, $3 / 20, $4 / 20, $5}'
}

echo "| command | wall s (median) | cpu s (median) | peak RSS MB |"
echo "|---|---|---|---|"
Z=$B/c1000000/RECENT-Z.yaml
measure "read Z, 1M events ($(($(stat -c %s $Z) / 1000000)) MB)" $G read $Z
measure "read + write Z (write alone: see below)" $G write $Z "$B/Z-out.yaml"
for n in 10000 100000 1000000; do
  C=$B/c$n/RECENT.recent
  measure "news --local, $n events" $R news --local $C
  measure20 "news --after one hour ago, $n (per run, 20 in a loop)" \
    "for i in \$(seq 20); do $R news --local $C --after $HOUR_AGO; done"
  measure "overview, $n" $R overview $C
  cp -a "$B/c$n" "$B/u$n"
  mkdir -p "$B/u$n/id/B/BE/BENCH" && (cd "$B/u$n/id/B/BE/BENCH" && touch $(seq -f 'Bench-%g.tar.gz' 20))  # update refuses a missing file
  measure20 "update one file, $n (per run, 20 in a loop)" \
    "for i in \$(seq 20); do $R update $B/u$n/RECENT.recent id/B/BE/BENCH/Bench-\$i.tar.gz; done"
  rm -rf "$B/u$n"
done
# aggregate --force after one update, on a fresh copy each run (cascades to Z)
BEFORE="rm -rf $B/agg && cp -a $B/c1000000 $B/agg && mkdir -p $B/agg/id/N/NE/NEW && touch $B/agg/id/N/NE/NEW/New-1.0.tar.gz && $R --now 1764460900.5 update $B/agg/RECENT.recent id/N/NE/NEW/New-1.0.tar.gz" \
  measure "aggregate --force, 1M (rewrites all 8 files)" $R --now 1764460901.5 aggregate --force "$B/agg/RECENT.recent"
BEFORE=
RUNS_SAVED=$RUNS; RUNS=3
measure "find ROOT -type f -printf '%T@ %p\\\\n' \\| wc -l, 200k files" sh -c "find $B/tree200k -type f -printf '%T@ %p\n' | wc -l"
measure "init --force, 200k files" $R --quiet --now $NOW init --force "$B/tree200k"
RUNS=$RUNS_SAVED

echo
python3 bench/update_ratio.py "$R" "$B" 60

echo
echo "Z write, split (gen_collection write, $RUNS runs):"
i=0; while [ $i -lt $RUNS ]; do $G write $Z "$B/Z-out.yaml"; i=$((i + 1)); done
if command -v strace >/dev/null; then
  echo
  echo "update, fsync share (strace -T; 3 runs on the 1M collection):"
  cp -a "$B/c1000000" "$B/u1M"
  mkdir -p "$B/u1M/id/B/BE/BENCH" && (cd "$B/u1M/id/B/BE/BENCH" && touch a.tar.gz b.tar.gz c.tar.gz)
  for p in a b c; do
    strace -f -T -e trace=fsync,fdatasync -o "$B/strace" $R --now $NOW update "$B/u1M/RECENT.recent" id/B/BE/BENCH/$p.tar.gz
    awk -F'<' '/fsync/ {s += $2; n++} END {printf "fsync calls %d, total %.4f s\n", n, s}' "$B/strace"
  done
  rm -rf "$B/u1M"
fi
