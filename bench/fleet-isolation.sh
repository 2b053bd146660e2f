#!/bin/sh
# Isolation of the trees of one `rrr rmirror --config --loop`: the time
# between the healthy tree's passes, alone and beside a tree whose upstream
# accepts connections and never answers (a black hole).
# Usage: bench/fleet-isolation.sh [SECONDS] [INTERVAL]   (defaults 40, 2)
#   RRR=path/to/rrr to use another binary (default target/release/rrr,
#   else target/debug/rrr); HOLE_TIMEOUT=S sets the black-hole tree's
#   `timeout` (default: rrr's, 300 s).
# Prints, per case, the number of passes, the median and max interval
# between the healthy tree's passes (from the -v log's timestamps), the
# median pass time and the load average.
set -eu
SECS=${1:-40}
INTERVAL=${2:-2}
cd "$(dirname "$0")/.."
. bench/lib.sh
RRR=${RRR:-$( [ -x target/release/rrr ] && echo "$PWD/target/release/rrr" || echo "$PWD/target/debug/rrr" )}
W=$(mktemp -d /tmp/rrr-fleet.XXXXXX)
HOLE=
cleanup() {
    kill $HOLE 2>/dev/null || true
    d=$(cat "$W/rsyncd.pid" 2>/dev/null) && kill "$d" && while kill -0 "$d" 2>/dev/null; do sleep 0.1; done
    rm -rf "$W" 2>/dev/null || { sleep 1; rm -rf "$W"; }
}
trap cleanup EXIT

mkdir -p "$W/o"
for i in $(seq 1 200); do mkdir -p "$W/o/id/$((i % 10))"; echo "$i" > "$W/o/id/$((i % 10))/f$i"; done
"$RRR" init --aggregate "$W/o" >/dev/null 2>&1
write_rsyncd_conf "$W" "$W/o"
PORT=$(freeport)
rsync --daemon --config="$W/rsyncd.conf" --port="$PORT" --address=127.0.0.1
HOLEPORT=$(freeport)
python3 -c '
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(16)
held = []
while True:
    c, _ = s.accept(); held.append(c)   # accept, never answer
' "$HOLEPORT" &
HOLE=$!
sleep 0.5

# run CASE TREES...: one loop of SECS seconds; prints the figures.
run() {
    name=$1; shift
    cfg="$W/$name.toml"
    echo "interval = $INTERVAL" > "$cfg"
    for t in "$@"; do
        case $t in
            good) src="rsync://127.0.0.1:$PORT/origin/RECENT.recent" ;;
            hole) src="rsync://127.0.0.1:$HOLEPORT/origin/RECENT.recent" ;;
        esac
        printf '[[tree]]\nremote = "%s"\nlocalroot = "%s"\n' "$src" "$W/m-$name-$t" >> "$cfg"
        if [ "$t" = hole ] && [ -n "${HOLE_TIMEOUT:-}" ]; then echo "timeout = $HOLE_TIMEOUT" >> "$cfg"; fi
    done
    "$RRR" -v rmirror --loop --config "$cfg" 2> "$W/$name.log" &
    pid=$!
    sleep "$SECS"
    kill -TERM $pid; wait $pid || true
    python3 - "$W/$name.log" "$W/m-$name-good" "$name" "$(load)" <<'PY'
import re, sys, statistics
from datetime import datetime
log, root, name, load = sys.argv[1:5]
starts, took = [], []
for line in open(log):
    m = re.match(r"(\S+Z)\s+\w+\s+rmirror (\S+): pass.*; ([\d.]+) s", line)
    if m and m.group(2) == root:
        t = datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()
        starts.append(t - float(m.group(3)))
        took.append(float(m.group(3)))
gaps = [b - a for a, b in zip(starts[1:], starts[2:])]  # after the bootstrap
if not gaps:
    print(f"{name:12} passes {len(starts):3}  (too few to measure an interval)  load {load}"); sys.exit()
print(f"{name:12} passes {len(starts):3}  interval median {statistics.median(gaps):.3f} s  "
      f"max {max(gaps):.3f} s  pass median {statistics.median(took[1:]):.3f} s  load {load}")
PY
}
echo "interval $INTERVAL s, $SECS s per case, $RRR"
run alone good
run blackhole hole good
grep -c "rmirror $W/m-blackhole-hole: " "$W/blackhole.log" | sed 's/^/black-hole tree log lines: /'
