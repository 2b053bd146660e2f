#!/bin/bash
# Benchmark rrr rmirror against plain rsync on one tree, side by side in one run
# (issue 4, benchmarks (a) and (b)), over a loopback rsync daemon.
#
#   bench/mirror.sh [FILES] [REPS]     (default 10000 files, 3 repetitions)
#
# (a) first mirror of the tree into an empty dir:
#       rrr rmirror --remote rsync://127.0.0.1:PORT/origin/RECENT.recent --localroot DST
#     vs rsync -a rsync://127.0.0.1:PORT/origin/ DST/
# (b) after 100 changes at the origin (recorded with rrr update, aggregated),
#     a fresh rmirror process on an up-to-date mirror
#     vs the physical limit: one fetch of the principal plus
#        rsync -rlt --files-from=<the 100 changed paths, sorted> (2 rsync calls)
#     vs rsync -a --delete of the whole tree.
# Each variant has its own target, in sync before each repetition. Page cache
# warm; fsync counts. Prints per-run seconds and the medians as a table.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
N=${1:-10000}
REPS=${2:-3}
RRR=${RRR:-$(cd "$(dirname "$0")/.." && pwd)/target/release/rrr}
W=$(mktemp -d /tmp/rrr-bench-XXXXXX)
trap 'kill $DPID 2>/dev/null || true; rm -rf "$W"' EXIT
O=$W/origin
mkdir -p "$O"
python3 - "$O" "$N" <<'PY'
import os, sys, random
root, n = sys.argv[1], int(sys.argv[2])
random.seed(4)
for i in range(n):
    a = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[i % 26]
    d = os.path.join(root, "authors/id", a, a + "%02d" % (i % 40), "AUTH%04d" % (i % 400))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "Dist-%05d.tar.gz" % i), "wb") as f:
        f.write(os.urandom(random.randint(500, 4000)))
PY
# Index: init on the empty root, then record every file in one batch
# (\`rrr init\` on a full 10k tree is currently slow: its per-file dirty
# inserts are quadratic; that is the origin's business, not the mirror's).
mkdir -p "$W/empty"
"$RRR" init --aggregate "$W/empty" >/dev/null 2>&1
mv "$W"/empty/RECENT* "$O/"
(cd "$O" && find authors -type f | sort | sed 's/^/new /') | "$RRR" update --stdin "$O/RECENT.recent"
"$RRR" aggregate --force "$O/RECENT.recent"
PORT=$(freeport)
write_rsyncd_conf "$W" "$O"
rsync --daemon --no-detach --address=127.0.0.1 --port="$PORT" --config="$W/rsyncd.conf" &
DPID=$!
sleep 0.5
URL=rsync://127.0.0.1:$PORT/origin

now() { date +%s.%N; }
t() { local s; s=$(now); "$@" >/dev/null 2>&1; python3 -c "print(f'{$(now)-$s:.3f}')"; }

echo "tree: $N files, $(du -sh "$O" | cut -f1); rsync $(rsync --version | sed -n 1p | awk '{print $3}'); rrr $RRR"
declare -a A_RRR A_RS B_RRR B_LIM B_FULL
for r in $(seq 1 "$REPS"); do
    rm -rf "$W/a1" "$W/a2"
    A_RRR+=("$(t "$RRR" rmirror --quiet --remote "$URL/RECENT.recent" --localroot "$W/a1")")
    A_RS+=("$(t rsync -a "$URL/" "$W/a2/")")
    echo "(a) run $r: rrr ${A_RRR[-1]} s, rsync -a ${A_RS[-1]} s"
done
# (b) three targets in sync: rrr's (from (a)), and two plain copies.
rm -rf "$W/b2" "$W/b3"
cp -a "$W/a1" "$W/b2"; cp -a "$W/a1" "$W/b3"; rm -rf "$W/b2/.rrr" "$W/b3/.rrr"
for r in $(seq 1 "$REPS"); do
    # 100 changes: 80 new files, 20 rewritten.
    python3 - "$O" "$r" > "$W/changed.txt" <<'PY'
import os, sys, random
root, r = sys.argv[1], int(sys.argv[2])
random.seed(100 + r)
out = []
for i in range(80):
    p = "authors/id/N/N%02d/NEW%d/New-%d-%d.tar.gz" % (i % 10, r, r, i)
    os.makedirs(os.path.join(root, os.path.dirname(p)), exist_ok=True)
    with open(os.path.join(root, p), "wb") as f: f.write(os.urandom(2000))
    out.append(p)
for i in range(20):
    k = random.randrange(10000)
    for dp, dn, fn in os.walk(os.path.join(root, "authors/id", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[k % 26])):
        if fn:
            p = os.path.relpath(os.path.join(dp, sorted(fn)[i % len(fn)]), root)
            with open(os.path.join(root, p), "ab") as f: f.write(b"changed %d" % r)
            out.append(p); break
for p in sorted(set(out)): print(p)
PY
    sed 's/^/new /' "$W/changed.txt" | "$RRR" update --stdin "$O/RECENT.recent"
    "$RRR" aggregate "$O/RECENT.recent"
    B_RRR+=("$(t "$RRR" rmirror --quiet --remote "$URL/RECENT.recent" --localroot "$W/a1")")
    lim() { mkdir -p "$W/p" && rsync -lt "$URL/RECENT.recent" "$URL/RECENT-1h.yaml" "$W/p/" && rsync -rlt --safe-links --files-from="$W/changed.txt" "$URL/" "$W/b2/"; }
    B_LIM+=("$(t lim)")
    B_FULL+=("$(t rsync -a --delete "$URL/" "$W/b3/")")
    echo "(b) run $r: rrr ${B_RRR[-1]} s, limit ${B_LIM[-1]} s, rsync -a --delete ${B_FULL[-1]} s ($(wc -l < "$W/changed.txt") changed)"
done
for d in a1 b2 b3; do
    diff -r -x .rrr -x 'RECENT*' "$O" "$W/$d" >/dev/null || { echo "MISMATCH: $d differs from origin"; exit 1; }
done
python3 - "${A_RRR[*]}" "${A_RS[*]}" "${B_RRR[*]}" "${B_LIM[*]}" "${B_FULL[*]}" <<'PY'
import sys, statistics as st
m = [st.median(map(float, a.split())) for a in sys.argv[1:]]
print("\nmedians (s):")
print(f"(a) first mirror:  rrr {m[0]:.3f}   rsync -a {m[1]:.3f}   ratio {m[0]/m[1]:.2f}x (target <= 1.5x)")
print(f"(b) 100 changes:   rrr {m[2]:.3f}   limit {m[3]:.3f}   ratio {m[2]/m[3]:.2f}x (target <= 1.3x)")
print(f"                   rsync -a --delete {m[4]:.3f}   rrr is {m[4]/m[2]:.1f}x faster")
PY
