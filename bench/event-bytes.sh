#!/bin/bash
# The incremental pass with "an event always moves its bytes" (event paths
# with --ignore-times, recentfiles fetched with --checksum) against a
# baseline rrr that trusted rsync's quick check, interleaved in one run on
# two mirrors of one origin served by a loopback rsync daemon.
#
#   RRR_BASE=/path/to/old/rrr bench/event-bytes.sh [FILES] [REPS]   (10000, 9)
#
# Tree: FILES files of 200-800 bytes (bench/gen_tree.py, CPAN-like), plus
# 100 files of 100 KiB in big/; `rrr init --aggregate`. Both mirrors are
# bootstrapped first. Each repetition, in rotated order of the two rrrs:
# (b) the usual traffic: 80 new files, 20 rewritten (appended to), 10
#     deleted, recorded with `rrr update` and `rrr aggregate`, then one
#     incremental pass (fresh process) per mirror;
# (w) the worst case for the new rule: `new` events for 100 big files that
#     did not change (a re-recorded event; the old rule skips them, the new
#     one reads both copies and sends block checksums), then one pass each.
# `sync` before every timed pass; page cache warm; fsync counts. Prints the
# runs, the medians, the ratio new/base of the medians and the load.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
N=${1:-10000}
REPS=${2:-9}
TOP=$(cd "$(dirname "$0")/.." && pwd)
RRR=${RRR:-$TOP/target/release/rrr}
RRR_BASE=${RRR_BASE:?set RRR_BASE to the baseline rrr}
workdir /tmp/rrr-bench-eventbytes-XXXXXX
O=$W/origin
mkdir -p "$O/big"
python3 "$(dirname "$0")/gen_tree.py" "$O" "$N" 1000 > "$W/all.txt"
for i in $(seq -w 1 100); do head -c 102400 /dev/urandom > "$O/big/b$i.bin"; done
"$RRR" init --quiet --aggregate "$O" >/dev/null
write_rsyncd_conf "$W" "$O"
start_rsyncd "$W"
SRC=rsync://127.0.0.1:$PORT/origin/RECENT.recent
"$RRR" rmirror --quiet --remote "$SRC" --localroot "$W/new"
"$RRR_BASE" rmirror --quiet --remote "$SRC" --localroot "$W/base"
echo "tree: $N files + 100 x 100 KiB; rsync $(rsync --version | sed -n 1p | awk '{print $3}'); nproc $(nproc); load $(load)"
echo "new $RRR; base $RRR_BASE"

# pass VARIANT: one timed incremental pass, "seconds" on stdout.
pass() {
    local bin dst s
    if [ "$1" = new ]; then bin=$RRR; dst=$W/new; else bin=$RRR_BASE; dst=$W/base; fi
    sync
    s=$(now)
    "$bin" rmirror --quiet --remote "$SRC" --localroot "$dst" >/dev/null 2>"$W/last.err" \
        || { echo "FAILED: $1" >&2; cat "$W/last.err" >&2; exit 1; }
    el "$s"
}
RAW=$W/raw.txt; : > "$RAW"
for r in $(seq 1 "$REPS"); do
    python3 - "$O" "$r" "$W/all.txt" "$W/changes.txt" <<'PY'
import os, sys, random
root, k, allf, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
random.seed(200 + k)
files = [p for p in open(allf).read().split() if os.path.exists(os.path.join(root, p))]
picked = random.sample(files, 30)
lines = []
for i in range(80):
    p = "authors/id/N/NW/NEW%d%02d/New-%d-%d.tar.gz" % (k, i % 10, k, i)
    os.makedirs(os.path.join(root, os.path.dirname(p)), exist_ok=True)
    with open(os.path.join(root, p), "wb") as f: f.write(os.urandom(500))
    lines.append("new " + p)
for p in picked[:20]:
    with open(os.path.join(root, p), "ab") as f: f.write(b"changed %d" % k)
    lines.append("new " + p)
for p in picked[20:]:
    os.remove(os.path.join(root, p))
    lines.append("delete " + p)
open(out, "w").write("".join(l + "\n" for l in lines))
PY
    "$RRR" update --quiet --stdin "$O/RECENT.recent" < "$W/changes.txt"
    "$RRR" aggregate --quiet "$O/RECENT.recent"
    sleep 1  # the old rule must see the rewrites (one-second mtimes)
    if [ $((r % 2)) = 1 ]; then order="new base"; else order="base new"; fi
    line="run $r:"
    for v in $order; do t=$(pass "$v"); echo "b $v $t" >> "$RAW"; line="$line b/$v $t"; done
    for i in $(seq -w 1 100); do echo "new big/b$i.bin"; done | "$RRR" update --quiet --stdin "$O/RECENT.recent"
    "$RRR" aggregate --quiet "$O/RECENT.recent"
    for v in $order; do t=$(pass "$v"); echo "w $v $t" >> "$RAW"; line="$line w/$v $t"; done
    echo "$line; load $(load)"
done
for d in new base; do
    diff -r -q -x .rrr -x 'RECENT*' "$O" "$W/$d" >/dev/null || { echo "MISMATCH: $d differs from the origin"; exit 1; }
done
echo "both mirrors equal the origin; load $(load)"
python3 - "$RAW" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
for phase, what in (("b", "80 new, 20 rewritten, 10 deleted"), ("w", "100 unchanged 100 KiB files re-recorded")):
    m = {v: st.median(float(r[2]) for r in rows if r[0] == phase and r[1] == v) for v in ("new", "base")}
    print(f"({phase}) {what}: new {m['new']:.3f} s, base {m['base']:.3f} s, new/base {m['new']/m['base']:.2f}")
PY
