#!/usr/bin/env bash
# Rebuild BENCHMARKS.md from the summary below and the detailed reports in
# bench/*.md (each written by the benchmark script beside it).
set -euo pipefail
cd "$(dirname "$0")/.."
{
  cat bench/summary.md
  for f in format-origin yaml-v3 mirror event-bytes watch watch-storm ops locks micro fleet push beacon; do
    echo
    echo "---"
    echo
    sed 's/^# /## /' "bench/$f.md"
  done
} > BENCHMARKS.md
