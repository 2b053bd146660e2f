#!/bin/sh
# A/B of the heavy origin commands at 1M events (news, overview, aggregate):
# a baseline rrr binary against this checkout's, runs interleaved so both
# see the same load.
# Usage: bench/ab.sh BASELINE_RRR [RUNS]   (RUNS default 9)
#   e.g. git worktree add /tmp/base 9a5b2dd && (cd /tmp/base && cargo build --release)
#        bench/ab.sh /tmp/base/target/release/rrr
# Uses the 1M collection of bench/format-origin.sh (BENCH_DIR, default
# /tmp/rrr-bench). Prints medians (wall s, CPU s, peak RSS MB) and the
# ratio baseline/new of the wall medians.
set -eu
BASE=$1
RUNS=${2:-9}
B=${BENCH_DIR:-/tmp/rrr-bench}
cd "$(dirname "$0")/.."
cargo build --release --quiet --bins
NEW=$PWD/target/release/rrr
[ -e "$B/c1000000/RECENT-Z.yaml" ] || { echo "run bench/format-origin.sh first (it generates $B/c1000000)"; exit 2; }
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (apt-get install -y time)"; exit 2; }

# run1 TAG CMD...: one timed run appended to $B/ab.TAG
run1() {
  tag=$1; shift
  /usr/bin/time -a -o "$B/ab.$tag" -f "%e %U %S %M" "$@" > /dev/null 2> "$B/ab.err" || { cat "$B/ab.err"; exit 1; }
}
# aggregate --force after one update, on a fresh copy (cascades to Z)
agg() {
  tag=$1 bin=$2
  rm -rf "$B/ab-agg" && cp -a "$B/c1000000" "$B/ab-agg"
  mkdir -p "$B/ab-agg/id/N/NE/NEW" && touch "$B/ab-agg/id/N/NE/NEW/New-1.0.tar.gz"  # update refuses a missing file
  $bin --now 1764460900.5 update "$B/ab-agg/RECENT.recent" id/N/NE/NEW/New-1.0.tar.gz
  sync
  run1 "$tag" $bin --now 1764460901.5 aggregate --force "$B/ab-agg/RECENT.recent"
}
rm -f "$B"/ab.*
i=0
while [ $i -lt "$RUNS" ]; do
  run1 news-base "$BASE" news --local "$B/c1000000/RECENT.recent"
  run1 news-new "$NEW" news --local "$B/c1000000/RECENT.recent"
  run1 overview-base "$BASE" overview "$B/c1000000/RECENT.recent"
  run1 overview-new "$NEW" overview "$B/c1000000/RECENT.recent"
  agg agg-base "$BASE"
  agg agg-new "$NEW"
  i=$((i + 1))
done
rm -rf "$B/ab-agg"

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
col() { grep -v '^Command' "$B/ab.$1" | awk "{print $2}" | median; }
row() {
  label=$1 base=$2 new=$3
  bw=$(col "$base" '$1') nw=$(col "$new" '$1')
  echo "| $label | $bw | $(col "$base" '$2 + $3') | $(col "$base" 'int($4 / 1024)') | $nw | $(col "$new" '$2 + $3') | $(col "$new" 'int($4 / 1024)') | $(echo "$bw $nw" | awk '{printf "%.2f", $1 / $2}') |"
}
echo "| command, 1M events ($RUNS interleaved runs, medians) | baseline wall s | CPU s | RSS MB | new wall s | CPU s | RSS MB | baseline / new |"
echo "|---|---|---|---|---|---|---|---|"
row "\`rrr news --local\` (full listing)" news-base news-new
row "\`rrr overview\`" overview-base overview-new
row "\`rrr aggregate --force\` after one update" agg-base agg-new
