#!/usr/bin/env python3
"""rrr update of one file on the 10k and the 1M collection, interleaved so
both see the same load; prints the medians and the ratio 1M/10k (target
<= 1.2). Usage: bench/update_ratio.py RRR BENCH_DIR [RUNS]"""
import os, shutil, statistics, subprocess, sys, time

rrr, bench = sys.argv[1], sys.argv[2]
runs = int(sys.argv[3]) if len(sys.argv) > 3 else 60
times = {}
for n in ("10000", "1000000"):
    shutil.rmtree(f"{bench}/ur{n}", ignore_errors=True)
    shutil.copytree(f"{bench}/c{n}", f"{bench}/ur{n}", symlinks=True)
    # rrr update refuses a file that is not there
    os.makedirs(f"{bench}/ur{n}/id/B/BE/BENCH", exist_ok=True)
    for i in range(runs):
        open(f"{bench}/ur{n}/id/B/BE/BENCH/Ratio-{i}.tar.gz", "w").close()
    times[n] = []
for i in range(runs):
    for n in times:
        start = time.perf_counter()
        subprocess.run([rrr, "update", f"{bench}/ur{n}/RECENT.recent", f"id/B/BE/BENCH/Ratio-{i}.tar.gz"], check=True)
        times[n].append(time.perf_counter() - start)
for n in times:
    shutil.rmtree(f"{bench}/ur{n}")
small, big = (statistics.median(times[n]) * 1000 for n in ("10000", "1000000"))
print(f"update one file, interleaved, {runs} runs each: 10k {small:.2f} ms, 1M {big:.2f} ms, ratio 1M/10k {big / small:.2f}")
