#!/bin/bash
# A first mirror, rrr against `rsync -a`, on /dev/shm: no disk, so no
# writeback noise (the figure bench/mirror.sh's (a) gets on a busy disk
# swings by 2x between runs). Interleaved, medians of each.
#
#   bench/first-mirror-shm.sh [FILES] [REPS]     (default 10000 files, 5 runs)
#
# Tree: bench/gen_tree.py (as bench/mirror.sh), `rrr init --aggregate`,
# served by a loopback default rsync daemon (DAEMON_NODELAY=1: with
# `socket options = TCP_NODELAY`, as README.mirror advises). Needs 2x the
# tree in RAM.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
N=${1:-10000}; REPS=${2:-5}
TOP=$(cd "$(dirname "$0")/.." && pwd)
RRR=${RRR:-$TOP/target/release/rrr}
W=$(mktemp -d /dev/shm/rrr-first-XXXXXX)
DPID=
cleanup() { [ -n "$DPID" ] && { kill "$DPID"; wait "$DPID"; } 2>/dev/null; rm -rf "$W"; }
trap cleanup EXIT
mkdir -p "$W/origin"
python3 "$(dirname "$0")/gen_tree.py" "$W/origin" "$N" 1000 > /dev/null
"$RRR" init --quiet --aggregate "$W/origin" > /dev/null
write_rsyncd_conf "$W" "$W/origin"
[ -n "${DAEMON_NODELAY:-}" ] && sed -i '1i socket options = TCP_NODELAY' "$W/rsyncd.conf"
start_rsyncd "$W"
URL=rsync://127.0.0.1:$PORT/origin
echo "$N files; daemon TCP_NODELAY ${DAEMON_NODELAY:-no}; rrr $RRR; rsync $(rsync --version | sed -n 1p | awk '{print $3}'); load $(load)"
for i in $(seq "$REPS"); do
    for v in rsync rrr; do
        rm -rf "$W/dst"; mkdir "$W/dst"; sync
        s=$(now)
        case $v in
            rsync) rsync -a "$URL/" "$W/dst/" ;;
            rrr) "$RRR" -q rmirror --remote "$URL/RECENT.recent" --localroot "$W/dst" ;;
        esac
        echo "run $i $v $(el "$s")"
    done
done | tee "$W/runs"
python3 - "$W/runs" <<'PY'
import sys, statistics
runs = {}
for line in open(sys.argv[1]):
    _, i, v, t = line.split()
    runs.setdefault(v, []).append(float(t))
r, a = statistics.median(runs["rrr"]), statistics.median(runs["rsync"])
pairs = sorted(x / y for x, y in zip(runs["rrr"], runs["rsync"]))
print(f"medians: rrr {r:.3f} s, rsync -a {a:.3f} s, ratio {r/a:.2f}x; per-run ratios {', '.join(f'{p:.2f}' for p in pairs)}")
PY
echo "load $(load)"
