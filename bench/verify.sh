#!/usr/bin/env bash
# `rrr verify` against find and sha256sum on the same tree (issue 34).
#
#   bench/verify.sh [FILES] [REPS]      (defaults 300000 and 3)
#
# A CPAN-like tree (bench/gen_tree.py, FILES files of 200-800 bytes),
# indexed with `rrr init --aggregate` (a cascade ending in Z, as a mirror's
# copies hold it). Warm cache (one untimed run of each first; we cannot drop
# the page cache on the shared machine), then REPS interleaved rounds of:
#   find ROOT -printf '%s\n' > /dev/null             (stats every file)
#   rrr verify --localroot ROOT                      (walk + parse the index)
#   find ROOT -type f -print0 | xargs -0 sha256sum   (one process at a time)
#   rrr verify --hash --localroot ROOT               (one thread per core)
#   find ROOT -type f -print0 | xargs -0 -P<cores> sha256sum   (the best standard tool here)
# and, with RRR_BEFORE=<an older rrr binary>, its verify and verify --hash
# in the same rounds (the before/after of one session).
# Prints each run, then the medians and their ratios, with the load average.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
N=${1:-300000}; REPS=${2:-3}
RRR=${RRR:-$here/../target/release/rrr}
workdir /tmp/rrr-bench-verify.XXXXXX
T=$W/tree; mkdir -p "$T"
python3 "$here/gen_tree.py" "$T" "$N" 365 > /dev/null
"$RRR" -q init --aggregate "$T" > /dev/null
sync
run() { local s; s=$(now); "$@" > /dev/null 2>&1 || [ $? = 1 ]; el "$s"; }
sizefind() { find "$T" -printf '%s\n'; }
hashfind() { find "$T" -type f -print0 | xargs -0 sha256sum; }
hashfindp() { find "$T" -type f -print0 | xargs -0 -P"$(nproc)" sha256sum; }
OLD=${RRR_BEFORE:-}
sizefind > /dev/null; "$RRR" verify --localroot "$T" > /dev/null
hashfind > /dev/null; "$RRR" verify --hash --localroot "$T" > /dev/null
[ -z "$OLD" ] || { "$OLD" verify --localroot "$T" > /dev/null || true; }
declare -a F V H VH HP OV OVH
for i in $(seq 1 "$REPS"); do
    F+=("$(run sizefind)"); V+=("$(run "$RRR" verify --localroot "$T")")
    H+=("$(run hashfind)"); VH+=("$(run "$RRR" verify --hash --localroot "$T")")
    HP+=("$(run hashfindp)")
    if [ -n "$OLD" ]; then
        OV+=("$(run "$OLD" verify --localroot "$T")"); OVH+=("$(run "$OLD" verify --hash --localroot "$T")")
    else
        OV+=(0); OVH+=(0)
    fi
    echo "round $i: find ${F[-1]} s, verify ${V[-1]} s, sha256sum ${H[-1]} s, verify --hash ${VH[-1]} s," \
        "sha256sum -P$(nproc) ${HP[-1]} s, before: verify ${OV[-1]} s, verify --hash ${OVH[-1]} s (load $(load))"
done
python3 - "${F[*]}" "${V[*]}" "${H[*]}" "${VH[*]}" "${HP[*]}" "${OV[*]}" "${OVH[*]}" "$N" "$(nproc)" <<'PY'
import sys, statistics as st
f, v, h, vh, hp, ov, ovh = (st.median(map(float, a.split())) for a in sys.argv[1:8])
print(f"{sys.argv[8]} files, {sys.argv[9]} cores, medians: find {f:.3f} s, verify {v:.3f} s ({v/f:.2f}x), "
      f"sha256sum {h:.3f} s, verify --hash {vh:.3f} s ({vh/h:.2f}x; {vh/hp:.2f}x sha256sum -P{sys.argv[9]} {hp:.3f} s)")
if ov:
    print(f"before: verify {ov:.3f} s ({ov/f:.2f}x find), verify --hash {ovh:.3f} s ({ovh/h:.2f}x sha256sum, {ovh/hp:.2f}x -P)")
PY
echo "load $(load)"
