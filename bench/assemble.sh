#!/usr/bin/env bash
# Rebuild BENCHMARKS.md from bench/summary.md and every other bench/*.md
# (one report per workload, each written by the benchmark script beside it).
#
# The reports are a glob: a new benchmark's report needs no edit here, and
# two branches that each add one do not conflict in this script. Their
# order is the order of the summary table's rows (each row links to its
# report's `# ` heading). It fails loudly when a report does not start with
# its heading or when the summary has no row linking to it, so a report
# can be neither forgotten nor left out of the summary.
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C

# GitHub's anchor of a heading: lower case, punctuation dropped, spaces -.
anchor() {
  printf '%s' "$1" | tr 'A-Z' 'a-z' | sed 's/[^a-z0-9 _-]//g; s/ /-/g'
}

reports=()
for f in bench/*.md; do
  [ "$f" = bench/summary.md ] && continue
  reports+=("$f")
done

fail=0
ordered=()
for f in "${reports[@]}"; do
  heading=$(head -n 1 "$f")
  case "$heading" in
    "# "*) ;;
    *) echo "assemble.sh: $f: the first line must be the report's '# ' heading" >&2; fail=1; continue ;;
  esac
  a=$(anchor "${heading#\# }")
  line=$({ grep -nF "(#$a)" bench/summary.md || true; } | head -n 1 | cut -d: -f1)
  if [ -z "$line" ]; then
    echo "assemble.sh: $f: bench/summary.md has no row linking to (#$a); add one" >&2
    fail=1
    continue
  fi
  ordered+=("$(printf '%06d %s' "$line" "$f")")
done
[ "$fail" = 0 ] || exit 1
mapfile -t reports < <(printf '%s\n' "${ordered[@]}" | sort | cut -d' ' -f2-)

{
  cat bench/summary.md
  for f in "${reports[@]}"; do
    echo
    echo "---"
    echo
    sed 's/^# /## /' "$f"
  done
} > BENCHMARKS.md
