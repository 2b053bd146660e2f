#!/bin/sh
# Issue 30: a 1M-event collection in gopkg.in/yaml.v3's layout (as abh/rrrgo
# writes it, made from the Syck one by bench/to_yamlv3.py) against the same
# events in YAML::Syck's layout, read by `rrr news --local`, `rrr overview`
# and the recentfile reader that `rrr rmirror` uses for every fetched file
# (store::read_file, run by `gen_collection read` on RECENT-Z.yaml).
# Interleaved, the order of the variants rotating from run to run, RUNS runs
# each (default 5), medians of /usr/bin/time's wall, user+sys CPU and peak
# RSS; the load average is printed before and after.
#
#   bench/yaml-v3.sh [RUNS]        BENCH_DIR (default /tmp/rrr-bench)
#   RRR, GEN: binaries (default target/release/rrr, .../examples/gen_collection)
#   BASE=DIR: also the Syck layout read by DIR/rrr and DIR/examples/gen_collection
#             (an older build: the Syck path before and after)
set -eu
RUNS=${1:-5}
B=${BENCH_DIR:-/tmp/rrr-bench}
NOW=1764460800.5
cd "$(dirname "$0")/.."
R=${RRR:-$PWD/target/release/rrr}
G=${GEN:-$PWD/target/release/examples/gen_collection}
[ -x "$R" ] && [ -x "$G" ] || cargo build --release --quiet --bins --examples
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (apt-get install -y time)"; exit 2; }
mkdir -p "$B"
[ -e "$B/c1000000/RECENT-Z.yaml" ] || $G collection "$B/c1000000" --events 1000000 --now $NOW
[ -e "$B/v1000000/RECENT-Z.yaml" ] || python3 bench/to_yamlv3.py "$B/c1000000" "$B/v1000000"
S=$B/c1000000 V=$B/v1000000
echo "Z: Syck $(stat -c %s $S/RECENT-Z.yaml) bytes, yaml.v3 $(stat -c %s $V/RECENT-Z.yaml) bytes"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"

# variant NAME: its binaries and collection
VARIANTS="syck v3"
[ -n "${BASE:-}" ] && VARIANTS="syck v3 base"
bins() {
  case $1 in
    syck) echo "$R $G $S" ;;
    v3) echo "$R $G $V" ;;
    base) echo "$BASE/rrr $BASE/examples/gen_collection $S" ;;
  esac
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# one LABEL VARIANT CMD...: one run, appended to $B/t.LABEL.VARIANT
one() {
  label=$1 variant=$2; shift 2
  /usr/bin/time -a -o "$B/t.$label.$variant" -f "%e %U %S %M" "$@" > /dev/null 2> "$B/stderr" || { cat "$B/stderr"; exit 1; }
}
LABELS="news overview readZ"
for l in $LABELS; do for v in $VARIANTS; do rm -f "$B/t.$l.$v"; done; done
i=0
while [ $i -lt $RUNS ]; do
  # rotate the order of the variants
  order=$(echo $VARIANTS | tr ' ' '\n' | awk -v k=$i '{a[NR-1]=$0} END {for (j = 0; j < NR; j++) print a[(j + k) % NR]}')
  for v in $order; do
    set -- $(bins $v)
    one news $v "$1" news --local "$3/RECENT.recent"
    one overview $v "$1" overview "$3/RECENT.recent"
    one readZ $v "$2" read "$3/RECENT-Z.yaml"
  done
  i=$((i + 1))
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| reader | variant | wall s | CPU s | peak RSS MB | wall / Syck | CPU / Syck | RSS / Syck |"
echo "|---|---|---|---|---|---|---|---|"
for l in $LABELS; do
  for v in $VARIANTS; do
    grep -v '^Command' "$B/t.$l.$v" > "$B/t" || true
    w=$(awk '{print $1}' "$B/t" | median)
    c=$(awk '{print $2 + $3}' "$B/t" | median)
    m=$(awk '{printf "%.0f\n", $4 / 1024}' "$B/t" | median)
    [ $v = syck ] && { ws=$w cs=$c ms=$m; }
    echo "| $l | $v | $w | $c | $m | $(awk "BEGIN {printf \"%.2f\", $w / $ws}") | $(awk "BEGIN {printf \"%.2f\", $c / $cs}") | $(awk "BEGIN {printf \"%.2f\", $m / $ms}") |"
  done
done
