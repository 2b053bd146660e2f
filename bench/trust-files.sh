#!/bin/bash
# What the per-file check costs (issue 34, docs/decisions.md#tampered):
# three mirrors, passes interleaved (order rotating), of two signed origins
# of the same paths and sizes served by one loopback rsync daemon: H, whose
# `new` events carry size and sha256, and U, whose events do not.
#   staged: --trust-key, from H (staged transfers, every file checked);
#   trust:  --trust-key, from U (the beacon's verification, no file check);
#   plain:  no --trust-key, from H.
# staged/trust is the cost of the file check alone.
#
#   bench/trust-files.sh [FILES] [REPS]   (5000, 7)
#
# Tree: FILES files of 200-800 bytes (bench/gen_tree.py, CPAN-like),
# `rrr init --aggregate --sign-key`; H's `new` events get size/sha256
# (bench/hash_index.py; rrr's own `--hash sha256` was not on this branch
# yet) and its beacon is signed again with `rrr beacon`. Timed: the
# first pass of each mirror (a whole-tree rsync; with --trust-key it lists
# every file received and hashes it), then REPS repetitions of: 200 new
# files and 50 rewritten, recorded, aggregated, hashed and signed, then one
# incremental pass each (order alternating). `sync` before every timed
# pass; page cache warm; fsync counts.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
N=${1:-5000}
REPS=${2:-7}
TOP=$(cd "$(dirname "$0")/.." && pwd)
RRR=${RRR:-$TOP/target/release/rrr}
workdir /tmp/rrr-bench-trustfiles-XXXXXX
ssh-keygen -q -t ed25519 -N '' -C bench -f "$W/key"
# Two origins of the same paths and sizes, both signed: H's events hashed, U's not.
for o in H U; do
    mkdir -p "$W/$o"
    python3 "$(dirname "$0")/gen_tree.py" "$W/$o" "$N" 1000 > "$W/all.txt"
    "$RRR" init --quiet --aggregate --sign-key "$W/key" "$W/$o" >/dev/null
done
sign() {  # sign ORIGIN: hash its events if it is H, sign its beacon again
    [ "$1" = H ] && python3 "$(dirname "$0")/hash_index.py" "$W/H"
    "$RRR" beacon --quiet --sign-key "$W/key" "$W/$1/RECENT.recent"
}
sign H
sign U
write_rsyncd_conf "$W" "$W/H"
printf '[U]\n    path = %s\n' "$W/U" >> "$W/rsyncd.conf"
start_rsyncd "$W"
echo "tree: $N files; rsync $(rsync --version | sed -n 1p | awk '{print $3}'); nproc $(nproc); load $(load)"
echo "rrr $RRR"

# pass VARIANT: one timed pass, "seconds" on stdout. staged: --trust-key on
# the hashed origin; trust: --trust-key on the unhashed one; plain: no
# --trust-key, the hashed origin.
pass() {
    local extra=() module=origin
    case $1 in
        staged) extra=(--trust-key "$W/key.pub") ;;
        trust) extra=(--trust-key "$W/key.pub"); module=U ;;
    esac
    sync
    local s
    s=$(now)
    "$RRR" rmirror --quiet --remote "rsync://127.0.0.1:$PORT/$module/RECENT.recent" --localroot "$W/$1" "${extra[@]}" \
        >/dev/null 2>"$W/last.err" || { echo "FAILED: $1" >&2; cat "$W/last.err" >&2; exit 1; }
    el "$s"
}
VARIANTS="staged trust plain"
RAW=$W/raw.txt; : > "$RAW"
line="first pass:"
for v in $VARIANTS; do t=$(pass "$v"); echo "f $v $t" >> "$RAW"; line="$line $v $t"; done
echo "$line; load $(load)"
for r in $(seq 1 "$REPS"); do
    for o in H U; do
        python3 - "$W/$o" "$r" "$W/all.txt" "$W/changes.txt" <<'PY'
import os, sys, random
root, k, allf, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
random.seed(300 + k)
files = [p for p in open(allf).read().split() if os.path.exists(os.path.join(root, p))]
lines = []
for i in range(200):
    p = "authors/id/N/NW/NEW%d%02d/New-%d-%d.tar.gz" % (k, i % 10, k, i)
    os.makedirs(os.path.join(root, os.path.dirname(p)), exist_ok=True)
    with open(os.path.join(root, p), "wb") as f: f.write(os.urandom(500))
    lines.append("new " + p)
for p in random.sample(files, 50):
    with open(os.path.join(root, p), "ab") as f: f.write(b"changed %d" % k)
    lines.append("new " + p)
open(out, "w").write("".join(l + "\n" for l in lines))
PY
        "$RRR" update --quiet --sign-key "$W/key" --stdin "$W/$o/RECENT.recent" < "$W/changes.txt"
        "$RRR" aggregate --quiet --sign-key "$W/key" "$W/$o/RECENT.recent"
        sign $o
    done
    case $((r % 3)) in 1) order="staged trust plain" ;; 2) order="trust plain staged" ;; 0) order="plain staged trust" ;; esac
    line="run $r:"
    for v in $order; do t=$(pass "$v"); echo "i $v $t" >> "$RAW"; line="$line $v $t"; done
    echo "$line; load $(load)"
done
python3 - "$RAW" <<'PY'
import sys, statistics
rows = [l.split() for l in open(sys.argv[1])]
for kind, name in (("f", "first pass"), ("i", "incremental")):
    m = {v: statistics.median(float(t) for k, vv, t in rows if k == kind and vv == v) for v in ("staged", "trust", "plain")}
    print(f"{name}: median staged {m['staged']:.3f} s, trust {m['trust']:.3f} s, plain {m['plain']:.3f} s; "
          f"staged/trust {m['staged']/m['trust']:.2f}, staged/plain {m['staged']/m['plain']:.2f}")
PY
for v in staged plain; do
    diff -r -q -x .rrr -x 'RECENT*' "$W/H" "$W/$v" >/dev/null || { echo "$v differs from its origin" >&2; exit 1; }
done
diff -r -q -x .rrr -x 'RECENT*' "$W/U" "$W/trust" >/dev/null || { echo "trust differs from its origin" >&2; exit 1; }
echo "every mirror equals its origin (recentfiles aside)"
