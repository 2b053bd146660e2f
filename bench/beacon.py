#!/usr/bin/env python3
"""The beacon's cost on the origin (issues 34, 35): `rrr update` of one file
on three copies of one collection, interleaved so that all see the same
load: without a beacon, with an unsigned beacon (--origin-name), and with
a signed one (--sign-key, ed25519). Each update writes the principal, so
the beacon variants also hash it, rewrite the beacon and (signed) sign it.
Also `rrr beacon` alone (the cron/heartbeat refresh). Prints medians and
ratios against the no-beacon copy, with the load average.
Usage: bench/beacon.py RRR WORKDIR [FILES] [RUNS]"""
import os, shutil, statistics, subprocess, sys, time

rrr, work = sys.argv[1], sys.argv[2]
files = int(sys.argv[3]) if len(sys.argv) > 3 else 20000
runs = int(sys.argv[4]) if len(sys.argv) > 4 else 40
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
key = f"{work}/key"
subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key], check=True)
base = f"{work}/base"
for i in range(files):
    d = f"{base}/id/{i % 100:02d}"
    os.makedirs(d, exist_ok=True)
    open(f"{d}/f{i}.tar.gz", "w").close()
# Every event in the principal (init's 1h holds the whole tree until aggregated).
subprocess.run([rrr, "-q", "init", base], check=True)
variants = {"none": [], "beacon": ["--origin-name", "bench"], "signed": ["--sign-key", key]}
times = {v: [] for v in variants}
beacon_times = {v: [] for v in ("beacon", "signed")}
for v in variants:
    shutil.copytree(base, f"{work}/{v}", symlinks=True)
    os.makedirs(f"{work}/{v}/new", exist_ok=True)
    for i in range(runs):
        open(f"{work}/{v}/new/u{i}", "w").close()
load = [os.getloadavg()[0]]
for i in range(runs):
    for v, extra in variants.items():
        start = time.perf_counter()
        subprocess.run([rrr, "update", *extra, f"{work}/{v}/RECENT.recent", f"new/u{i}"], check=True)
        times[v].append(time.perf_counter() - start)
    for v in beacon_times:
        start = time.perf_counter()
        subprocess.run([rrr, "beacon", *variants[v], f"{work}/{v}/RECENT.recent"], check=True)
        beacon_times[v].append(time.perf_counter() - start)
load.append(os.getloadavg()[0])
size = os.path.getsize(f"{work}/none/RECENT-1h.yaml")
med = {v: statistics.median(t) * 1000 for v, t in times.items()}
print(f"principal {size / 1e6:.1f} MB ({files} events), {runs} interleaved runs, load average {load[0]:.1f} -> {load[1]:.1f}")
for v in variants:
    print(f"update, {v:6}: median {med[v]:.2f} ms, ratio {med[v] / med['none']:.2f}")
for v, t in beacon_times.items():
    print(f"rrr beacon, {v:6}: median {statistics.median(t) * 1000:.2f} ms")
shutil.rmtree(work)
