#!/bin/bash
# Benchmark (c) of issue 4, and the WAN repeats of (b)/(c): the incremental
# pass of a fresh `rrr rmirror` process after 100 changes at the origin, on a
# large tree, against
#   * the physical limit: one fetch of the principal plus one
#     `rsync -rlt --safe-links --files-from=<exactly the changed paths, sorted>`;
#   * `rsync -a --delete` of the whole tree;
# first over plain loopback (phase "lan"), then through
# examples/delay_proxy.rs (phase "wan": DELAY_MS each way, RATE_KBPS per
# direction), all three variants interleaved within each repetition, on three
# targets that are in sync before every repetition.
#
#   bench/mirror-large.sh [FILES] [REPS]      (default 300000 files, 3 reps)
#
# Environment:
#   DELAY_MS=20      one-way delay of the proxy (phase wan)
#   RATE_KBPS=10000  bandwidth of the proxy per direction, kbit/s (0 = none)
#   SPREAD_DAYS=1000 file mtimes spread uniformly over that many days before
#                    now, so that `rrr init` + `aggregate --force` build a
#                    realistic collection (principal = last hour, the rest in
#                    6h..Z). SPREAD_DAYS=0: every file is new, so all FILES
#                    events sit in the principal (the pessimistic setup of
#                    bench/mirror.sh).
#   PHASES="lan wan" which phases to run, in that order.
#   RRR, PROXY       binaries (default target/release/rrr, .../examples/delay_proxy)
#
# The rsync URL rmirror uses stays the same in both phases (its state belongs
# to one remote; another URL would reset it): in phase lan the daemon listens
# on the front port itself, in phase wan the daemon moves to a back port and
# the proxy takes the front port.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
N=${1:-300000}
REPS=${2:-3}
DELAY_MS=${DELAY_MS:-20}
RATE_KBPS=${RATE_KBPS:-10000}
SPREAD_DAYS=${SPREAD_DAYS:-1000}
PHASES=${PHASES:-lan wan}
TOP=$(cd "$(dirname "$0")/.." && pwd)
RRR=${RRR:-$TOP/target/release/rrr}
PROXY=${PROXY:-$TOP/target/release/examples/delay_proxy}
[ -x "$PROXY" ] || { echo "no delay proxy at $PROXY: cargo build --release --example delay_proxy (or set PROXY)" >&2; exit 2; }
W=$(mktemp -d /tmp/rrr-bench-large-XXXXXX)
DPID=; PPID_=
cleanup() {
    [ -n "$DPID" ] && { kill "$DPID"; wait "$DPID"; } 2>/dev/null || true
    [ -n "$PPID_" ] && { kill "$PPID_"; wait "$PPID_"; } 2>/dev/null || true
    [ -n "${KEEP:-}" ] || rm -rf "$W"
}
trap cleanup EXIT
O=$W/origin
mkdir -p "$O"

# --- the tree: CPAN-like fan-out authors/id/L/LM/LMnnnnn/, ~20 files per
# author directory, 200-800 random bytes per file.
s=$(now)
python3 "$(dirname "$0")/gen_tree.py" "$O" "$N" "$SPREAD_DAYS" > "$W/all.txt"
T_GEN=$(el "$s")
s=$(now); "$RRR" init --quiet "$O" >/dev/null; T_INIT=$(el "$s")
s=$(now); "$RRR" aggregate --force "$O/RECENT.recent" >/dev/null; T_AGG=$(el "$s")
echo "tree: $N files in $(find "$O/authors" -type d | wc -l) dirs, $(du -sh "$O" | cut -f1) on disk;" \
     "generate ${T_GEN}s, rrr init ${T_INIT}s, aggregate --force ${T_AGG}s"
echo "recentfiles: $(cd "$O" && for f in RECENT-*.yaml; do printf '%s=%s ' "$f" "$(grep -c '^  *path:' "$f" || true)"; done)"
echo "rsync $(rsync --version | sed -n 1p | awk '{print $3}'); rrr $RRR; nproc $(nproc); load $(load)"

FRONT=$(freeport); BACK=$(freeport)
write_rsyncd_conf "$W" "$O"
waitport() { for _ in $(seq 1 100); do python3 -c "import socket; socket.create_connection(('127.0.0.1',$1),0.2)" 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 not up"; exit 1; }
daemon() {  # daemon PORT
    [ -n "$DPID" ] && { kill "$DPID"; wait "$DPID" 2>/dev/null || true; DPID=; }
    rm -f "$W/rsyncd.pid"
    rsync --daemon --no-detach --address=127.0.0.1 --port="$1" --config="$W/rsyncd.conf" &
    DPID=$!
    waitport "$1"
}
proxy() {  # proxy on|off
    [ -n "$PPID_" ] && { kill "$PPID_"; wait "$PPID_" 2>/dev/null || true; PPID_=; }
    if [ "$1" = on ]; then
        local rate=(); [ "$RATE_KBPS" != 0 ] && rate=(--rate-kbps "$RATE_KBPS")
        "$PROXY" --listen "127.0.0.1:$FRONT" --connect "127.0.0.1:$BACK" --delay-ms "$DELAY_MS" "${rate[@]}" \
            >/dev/null 2>>"$W/proxy.log" &
        PPID_=$!
        waitport "$FRONT"
    fi
}
daemon "$FRONT"
URL=rsync://127.0.0.1:$FRONT/origin

# --- bootstrap (not one of the measured variants; timed for information):
# rrr's target by rmirror itself, the two rsync targets as copies of it.
s=$(now); "$RRR" rmirror --quiet --remote "$URL/RECENT.recent" --localroot "$W/a1" >/dev/null; T_BOOT=$(el "$s")
s=$(now); cp -a "$W/a1" "$W/b2"; cp -a "$W/a1" "$W/b3"; rm -rf "$W/b2/.rrr" "$W/b3/.rrr"; T_CP=$(el "$s")
# Flush the copies before measuring: otherwise gigabytes of dirty pages are
# written back during the first repetitions and every fsync (rrr's state
# writes) waits behind them.
s=$(now); sync; T_SYNC=$(el "$s")
echo "bootstrap: rrr rmirror ${T_BOOT}s (one whole-tree rsync + first pass); 2x cp -a ${T_CP}s; sync ${T_SYNC}s; load $(load)"

t() { local s; s=$(now); "$@" >/dev/null 2>"$W/last.err" || { echo "FAILED: $*"; cat "$W/last.err"; exit 1; }; el "$s"; }
v_rrr() { "$RRR" rmirror --quiet --remote "$URL/RECENT.recent" --localroot "$W/a1"; }
v_lim() { mkdir -p "$W/p" && rsync -lt "$URL/RECENT.recent" "$URL/RECENT-1h.yaml" "$W/p/" \
          && rsync -rlt --safe-links --files-from="$W/changed.txt" "$URL/" "$W/b2/"; }
v_full() { rsync -a --delete "$URL/" "$W/b3/"; }

RAW=$W/raw.txt; : > "$RAW"
k=0
for phase in $PHASES; do
    if [ "$phase" = wan ]; then daemon "$BACK"; proxy on; else proxy off; daemon "$FRONT"; fi
    for r in $(seq 1 "$REPS"); do
        k=$((k + 1))
        # 100 changes: 80 new files in 10 new author dirs, 20 rewritten ones.
        python3 - "$O" "$k" "$W/all.txt" > "$W/changed.txt" <<'PY'
import os, sys, random
root, k, allf = sys.argv[1], int(sys.argv[2]), sys.argv[3]
random.seed(100 + k)
files = open(allf).read().split()
out = []
for i in range(80):
    p = "authors/id/N/NW/NEW%d%02d/New-%d-%d.tar.gz" % (k, i % 10, k, i)
    os.makedirs(os.path.join(root, os.path.dirname(p)), exist_ok=True)
    with open(os.path.join(root, p), "wb") as f: f.write(os.urandom(500))
    out.append(p)
for p in random.sample(files, 20):
    with open(os.path.join(root, p), "ab") as f: f.write(b"changed %d" % k)
    out.append(p)
for p in sorted(set(out)): print(p)
PY
        sed 's/^/new /' "$W/changed.txt" | "$RRR" update --stdin "$O/RECENT.recent"
        "$RRR" aggregate "$O/RECENT.recent"
        sleep 1  # one-second mtime granularity must not hide the rewrites
        # interleave: rotate the order of the variants from rep to rep
        case $((r % 3)) in
            1) order="rrr lim full";; 2) order="lim full rrr";; 0) order="full rrr lim";;
        esac
        declare -A T=()
        for v in $order; do T[$v]=$(t "v_$v"); done
        echo "$phase $N ${T[rrr]} ${T[lim]} ${T[full]}" >> "$RAW"
        echo "($phase) run $r [$order]: rrr ${T[rrr]} s, limit ${T[lim]} s, rsync -a --delete ${T[full]} s" \
             "($(wc -l < "$W/changed.txt") changed; load $(load))"
    done
done
# Every target must equal the origin (path, size, mtime; rsync -t keeps mtimes).
listing() { (cd "$1" && find . \( -path ./.rrr -o -name 'RECENT*' \) -prune -o -path . -o -printf '%P %y %s %T@\n' | sort); }
listing "$O" > "$W/o.lst"
for d in a1 b2 b3; do
    listing "$W/$d" | cmp -s - "$W/o.lst" || { echo "MISMATCH: $d differs from origin"; exit 1; }
done
echo "all three targets equal the origin"
python3 - "$RAW" "$DELAY_MS" "$RATE_KBPS" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
print("\nmedians (s):")
for phase in dict.fromkeys(r[0] for r in rows):
    rs = [r for r in rows if r[0] == phase]
    m = [st.median(float(r[i]) for r in rs) for i in (2, 3, 4)]
    link = "loopback" if phase == "lan" else f"proxy {sys.argv[2]} ms each way, {sys.argv[3]} kbit/s"
    print(f"{phase} ({link}), {rs[0][1]} files, {len(rs)} runs:")
    print(f"  rrr {m[0]:.3f}   limit {m[1]:.3f}   rsync -a --delete {m[2]:.3f}")
    print(f"  rrr/limit {m[0]/m[1]:.2f}x (target <= 1.3x)   full/rrr {m[2]/m[0]:.1f}x (target >= 20x)")
PY
