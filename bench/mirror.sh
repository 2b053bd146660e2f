#!/bin/bash
# rrr rmirror against plain rsync on one tree, over a loopback rsync daemon,
# every variant interleaved in one run; each run's rsync connections are
# counted from the daemon's log ("rsync on ..." lines).
#
#   bench/mirror.sh [FILES] [REPS]          (default 10000 files, 5 repetitions)
#
# Environment:
#   B_REPS=REPS    repetitions of (b) and (c), which are cheap at any size
#   RRR=...        the rrr to measure (default target/release/rrr)
#   RRR_BASE=...   an older rrr measured alongside (before/after in one run)
#   SPREAD_DAYS=1000  file mtimes spread over that many days before now
#   DAEMON_NODELAY=1  the daemon sets `socket options = TCP_NODELAY`
#                  (README.mirror advises it; default: a default daemon)
#   KEEP=1         keep the work directory
#
# Tree: FILES files of 200-800 bytes in a CPAN-like fan-out
# authors/id/L/LM/LMnnnnn/ (~20 files per directory), indexed with
# `rrr init --aggregate`: every recentfile, 1h to Z, lists every file (the
# heaviest index a first mirror meets).
#
# (a) first mirror into an empty directory, fresh process each:
#       rrr rmirror --remote rsync://127.0.0.1:PORT/origin/RECENT.recent --localroot DST
#     vs rsync -a rsync://127.0.0.1:PORT/origin/ DST/
# (b) 80 new files, 20 rewritten, 10 deleted at the origin (rrr update,
#     rrr aggregate), then on targets that are in sync:
#       rrr rmirror (fresh process, state from the previous pass)
#     vs the limit: one fetch of the principal and its link (kept between
#        runs, so it comes as a delta), `rsync -rlt --safe-links
#        --files-from=<exactly the new and rewritten paths, sorted>`, and
#        `rm` of the deleted paths; once as plain rsync ("limit") and once
#        with the options rrr's every call has ("limit/o": --contimeout=30
#        --sockopts=TCP_NODELAY; rrr watches for stalls itself instead of
#        passing --timeout, which costs a default daemon an extra
#        delayed-ACK wait, ~40 ms a connection).
# (c) a pass whose principal has not changed (right after (b)).
# Page cache warm; `sync` before every first-mirror run; fsync counts. Needs
# disk for 2-3 x REPS copies of the tree.
# Prints every run, then medians, ratios and connection counts.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
N=${1:-10000}
REPS=${2:-5}
B_REPS=${B_REPS:-$REPS}
SPREAD_DAYS=${SPREAD_DAYS:-1000}
TOP=$(cd "$(dirname "$0")/.." && pwd)
RRR=${RRR:-$TOP/target/release/rrr}
RRR_BASE=${RRR_BASE:-}
workdir /tmp/rrr-bench-mirror-XXXXXX
O=$W/origin
mkdir -p "$O"

s=$(now)
python3 "$(dirname "$0")/gen_tree.py" "$O" "$N" "$SPREAD_DAYS" > "$W/all.txt"
T_GEN=$(el "$s")
s=$(now); "$RRR" init --quiet --aggregate "$O" >/dev/null; T_INIT=$(el "$s")
sync
echo "tree: $N files in $(find "$O/authors" -type d | wc -l) dirs, $(du -sh "$O" | cut -f1) on disk;" \
     "generate ${T_GEN}s, rrr init --aggregate ${T_INIT}s; index $(du -ch "$O"/RECENT-*.yaml | tail -1 | cut -f1)"
echo "rsync $(rsync --version | sed -n 1p | awk '{print $3}'); rrr $RRR${RRR_BASE:+; base $RRR_BASE};" \
     "daemon TCP_NODELAY ${DAEMON_NODELAY:-no}; nproc $(nproc); load $(load)"

write_rsyncd_conf "$W" "$O"
[ -n "${DAEMON_NODELAY:-}" ] && sed -i '1i socket options = TCP_NODELAY' "$W/rsyncd.conf"
start_rsyncd "$W"
URL=rsync://127.0.0.1:$PORT/origin
conns() { grep -c '\] rsync on ' "$W/rsyncd.log" || true; }

# t VARIANT: run it, print "seconds connections"; a failure ends the script.
t() {
    local c0 s secs
    c0=$(conns); s=$(now)
    "v_$1" >/dev/null 2>"$W/last.err" || { echo "FAILED: $1"; cat "$W/last.err"; exit 1; }
    secs=$(el "$s")
    echo "$secs $(( $(conns) - c0 ))"
}
# (a) first mirror; DST is set by the loop.
v_a_rrr()  { "$RRR" rmirror --quiet --remote "$URL/RECENT.recent" --localroot "$DST"; }
v_a_base() { "$RRR_BASE" rmirror --quiet --remote "$URL/RECENT.recent" --localroot "$DST"; }
v_a_rsync() { rsync -a "$URL/" "$DST/"; }
# (b) incremental
v_b_rrr()  { "$RRR" rmirror --quiet --remote "$URL/RECENT.recent" --localroot "$W/b_rrr"; }
v_b_base() { "$RRR_BASE" rmirror --quiet --remote "$URL/RECENT.recent" --localroot "$W/b_base"; }
limit() {  # limit TARGET PRINCIPAL_DIR [RSYNC OPTION]
    rsync ${3:-} -lt "$URL/RECENT.recent" "$URL/RECENT-1h.yaml" "$2/" \
        && rsync ${3:-} -rlt --safe-links --files-from="$W/changed.txt" "$URL/" "$1/" \
        && (cd "$1" && xargs -d '\n' rm -f -- < "$W/deleted.txt")
}
v_b_lim()   { limit "$W/b_lim" "$W/p_lim"; }
v_b_limo() { limit "$W/b_limo" "$W/p_limo" "--contimeout=30 --sockopts=TCP_NODELAY"; }

A_VARIANTS="rrr rsync"; B_VARIANTS="rrr lim limo"
[ -n "$RRR_BASE" ] && { A_VARIANTS="rrr base rsync"; B_VARIANTS="rrr base lim limo"; }
rotate() {  # rotate "A B C" K: the list rotated by K
    python3 -c "import sys; v=sys.argv[1].split(); k=int(sys.argv[2])%len(v); print(' '.join(v[k:]+v[:k]))" "$1" "$2"
}
RAW=$W/raw.txt; : > "$RAW"
# Each first mirror goes into a directory of its own, all removed after
# (a): creating files right after removing as many costs ext4 more.
for r in $(seq 1 "$REPS"); do
    order=$(rotate "$A_VARIANTS" "$r")
    line="(a) run $r [$order]:"
    for v in $order; do
        DST=$W/a_${v}_$r
        sync
        res=$(t "a_$v")
        echo "a $v $res" >> "$RAW"
        line="$line $v ${res% *} s (${res#* } conn)"
    done
    echo "$line; load $(load)"
done
# (b) targets: the last first mirrors; the limit's two from rsync -a's.
mv "$W/a_rrr_$REPS" "$W/b_rrr"
[ -n "$RRR_BASE" ] && mv "$W/a_base_$REPS" "$W/b_base"
mv "$W/a_rsync_$REPS" "$W/b_lim"; cp -a "$W/b_lim" "$W/b_limo"
rm -rf "$W"/a_*
mkdir -p "$W/p_lim" "$W/p_limo"
rsync -lt "$URL/RECENT.recent" "$URL/RECENT-1h.yaml" "$W/p_lim/"; cp -a "$W/p_lim/." "$W/p_limo/"
sync
for r in $(seq 1 "$B_REPS"); do
    python3 - "$O" "$r" "$W/all.txt" "$W/changed.txt" "$W/deleted.txt" <<'PY'
import os, sys, random
root, k, allf, chf, delf = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
random.seed(100 + k)
files = [p for p in open(allf).read().split() if os.path.exists(os.path.join(root, p))]
picked = random.sample(files, 30)
changed, deleted = [], picked[20:]
for i in range(80):
    p = "authors/id/N/NW/NEW%d%02d/New-%d-%d.tar.gz" % (k, i % 10, k, i)
    os.makedirs(os.path.join(root, os.path.dirname(p)), exist_ok=True)
    with open(os.path.join(root, p), "wb") as f: f.write(os.urandom(500))
    changed.append(p)
for p in picked[:20]:
    with open(os.path.join(root, p), "ab") as f: f.write(b"changed %d" % k)
    changed.append(p)
for p in deleted:
    os.remove(os.path.join(root, p))
open(chf, "w").write("".join(p + "\n" for p in sorted(set(changed))))
open(delf, "w").write("".join(p + "\n" for p in sorted(deleted)))
PY
    { sed 's/^/new /' "$W/changed.txt"; sed 's/^/delete /' "$W/deleted.txt"; } | "$RRR" update --stdin "$O/RECENT.recent"
    "$RRR" aggregate "$O/RECENT.recent"
    sleep 1  # one-second mtime granularity must not hide the rewrites
    order=$(rotate "$B_VARIANTS" "$r")
    line="(b) run $r [$order]:"
    for v in $order; do
        res=$(t "b_$v")
        echo "b $v $res" >> "$RAW"
        line="$line $v ${res% *} s (${res#* } conn)"
    done
    # (c) nothing changed since: the principal alone.
    for v in rrr ${RRR_BASE:+base}; do
        res=$(t "b_$v")
        echo "c $v $res" >> "$RAW"
        line="$line; unchanged $v ${res% *} s (${res#* } conn)"
    done
    echo "$line; load $(load)"
done
# Every target must equal the origin: path, type, size and mtime of every
# file and symlink, and the directories (whose mtimes local deletes change).
listing() {
    (cd "$1" && find . \( -path ./.rrr -o -name 'RECENT*' \) -prune -o -path . -o -printf '%P %y %s %T@\n' \
        | awk '$2 == "d" { print $1, "d"; next } { print }' | sort)
}
listing "$O" > "$W/o.lst"
for d in b_rrr ${RRR_BASE:+b_base} b_lim b_limo; do
    listing "$W/$d" | cmp -s - "$W/o.lst" || { echo "MISMATCH: $d differs from the origin"; exit 1; }
done
echo "all targets equal the origin; load $(load)"
python3 - "$RAW" "$N" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
def med(phase, v):
    xs = [(float(r[2]), int(r[3])) for r in rows if r[0] == phase and r[1] == v]
    if not xs:
        return None
    return st.median(x for x, _ in xs), sorted(set(c for _, c in xs))
def conn(c):
    return "/".join(map(str, c[1])) + " conn"
print(f"\nmedians (s), {sys.argv[2]} files, connections per run:")
rs = med("a", "rsync")
for v in ("rrr", "base"):
    m = med("a", v)
    if m:
        print(f"(a) first mirror   {v:5} {m[0]:7.3f} ({conn(m)})   rsync -a {rs[0]:7.3f} ({conn(rs)})"
              f"   ratio {m[0]/rs[0]:.2f}x (target <= 1.2x, <= 3 conn)")
lim, limo = med("b", "lim"), med("b", "limo")
for v in ("rrr", "base"):
    m = med("b", v)
    if m:
        print(f"(b) 100 changes    {v:5} {m[0]:7.3f} ({conn(m)})   limit {lim[0]:.3f} ({conn(lim)}): {m[0]/lim[0]:.2f}x"
              f"   limit/o {limo[0]:.3f}: {m[0]/limo[0]:.2f}x (target <= 1.1x)")
for v in ("rrr", "base"):
    m = med("c", v)
    if m:
        print(f"(c) unchanged      {v:5} {m[0]:7.3f} ({conn(m)}) (target: 1 conn)")
PY
