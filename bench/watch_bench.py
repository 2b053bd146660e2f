#!/usr/bin/env python3
"""Benchmark `rrr watch` (issue 5): a burst of files written by another
process, then the time from the last write until `rrr fsck` is clean.

For each run: a fresh tree of --base files in 100 directories is indexed
(`rrr init`), the daemon started (release build, --json-log), its idle CPU
and RSS sampled, then a writer process creates --burst files in 100 new
directories. `rrr fsck` runs back to back; the time reported is from the
writer's last close to the *start* of the first clean fsck (the index was
complete then). Also reported: the time from the last write to the log
line of the daemon's last batch before that fsck. Daemon CPU is utime+stime from /proc over the burst (from
the writer's start to that clean fsck), RSS is VmRSS (idle) and VmHWM
(peak).

    bench/watch_bench.py --burst 10000 --runs 3
    bench/watch_bench.py --base 100000 --burst 100000 --runs 1
"""

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TICK = os.sysconf("SC_CLK_TCK")

WRITER = r"""
import os, sys, time
root, n, tag = sys.argv[1], int(sys.argv[2]), sys.argv[3]
dirs = [os.path.join(root, tag, "d%02d" % i) for i in range(100)]
t_first = time.time()
for d in dirs:
    os.makedirs(d)
for i in range(n):
    with open(os.path.join(dirs[i % 100], "f%06d" % i), "w") as f:
        f.write("%d\n" % i)
t_last = time.time()
print(t_first, t_last)
"""


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime


def status_kb(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def make_tree(root, n):
    for i in range(100):
        os.makedirs(os.path.join(root, "base", "d%02d" % i))
    # Distinct mtimes: `rrr init` records epoch = mtime, and many equal
    # mtimes make it bump (slow in this version, not what is measured here).
    for i in range(n):
        p = os.path.join(root, "base", "d%02d" % (i % 100), "f%06d" % i)
        with open(p, "w") as f:
            f.write("%d\n" % i)
        os.utime(p, (1600000000 + i, 1600000000 + i))


def run_once(rrr, base, burst, idle_secs):
    tmp = tempfile.mkdtemp(prefix="rrr-watch-bench-")
    root = os.path.join(tmp, "root")
    os.makedirs(root)
    try:
        make_tree(root, base)
        subprocess.run([rrr, "init", "--quiet", root], check=True)
        log_path = os.path.join(tmp, "watch.log")
        log = open(log_path, "w")
        daemon = subprocess.Popen([rrr, "watch", root, "--json-log"], stderr=log, stdout=subprocess.DEVNULL)
        try:
            while '"kind":"start"' not in open(log_path).read():
                if daemon.poll() is not None:
                    sys.exit("rrr watch died:\n" + open(log_path).read())
                time.sleep(0.05)
            time.sleep(2)  # the start-up aggregate and first heartbeat
            c0, t0 = cpu_ticks(daemon.pid), time.time()
            time.sleep(idle_secs)
            idle_cpu = (cpu_ticks(daemon.pid) - c0) / TICK / (time.time() - t0)
            idle_rss = status_kb(daemon.pid, "VmRSS")

            c_burst = cpu_ticks(daemon.pid)
            out = subprocess.run([sys.executable, "-c", WRITER, root, str(burst), "burst"],
                                 check=True, capture_output=True, text=True).stdout.split()
            t_first, t_last = float(out[0]), float(out[1])
            fscks = 0
            while True:
                t_start = time.time()
                fscks += 1
                rc = subprocess.run([rrr, "fsck", "--quiet", root], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL).returncode
                if rc == 0:
                    break
                if time.time() - t_last > 600:
                    sys.exit("fsck not clean after 600 s")
            burst_cpu_s = (cpu_ticks(daemon.pid) - c_burst) / TICK
            burst_secs = t_start - t_first
            peak_rss = status_kb(daemon.pid, "VmHWM")
            time.sleep(3)
            after_rss = status_kb(daemon.pid, "VmRSS")
            c0, t0 = cpu_ticks(daemon.pid), time.time()
            time.sleep(idle_secs)
            after_idle_cpu = (cpu_ticks(daemon.pid) - c0) / TICK / (time.time() - t0)
        finally:
            daemon.send_signal(signal.SIGTERM)
            code = daemon.wait(timeout=120)
        batches = [json.loads(l) for l in open(log_path) if '"kind":"batch"' in l]
        events = sum(b["events"] for b in batches)
        # The daemon's own view: when its last batch before the clean fsck
        # was recorded (finer than the fsck loop on a big tree).
        last_batch = max((float(b["time"]) for b in batches if float(b["time"]) <= t_start), default=t_last)
        return {
            "base": base,
            "burst": burst,
            "write_secs": round(t_last - t_first, 3),
            "last_write_to_clean_s": round(max(0.0, t_start - t_last), 3),
            "fsck_runs": fscks,
            "last_write_to_last_batch_s": round(max(0.0, last_batch - t_last), 3),
            "files_per_s": round(burst / burst_secs, 1),
            "inotify_events": events,
            "events_per_s": round(events / burst_secs, 1),
            "batches": len(batches),
            "idle_cpu_pct": round(100 * idle_cpu, 2),
            "idle_rss_mb": round(idle_rss / 1024, 1),
            "burst_cpu_pct": round(100 * burst_cpu_s / burst_secs, 1),
            "burst_cpu_s": round(burst_cpu_s, 2),
            "peak_rss_mb": round(peak_rss / 1024, 1),
            "after_rss_mb": round(after_rss / 1024, 1),
            "after_idle_cpu_pct": round(100 * after_idle_cpu, 2),
            "tree_files_after": base + burst,
            "exit_code": code,
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rrr", default=os.path.join(HERE, "..", "target", "release", "rrr"))
    ap.add_argument("--base", type=int, default=1000)
    ap.add_argument("--burst", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--idle-secs", type=float, default=10)
    a = ap.parse_args()
    results = []
    for i in range(a.runs):
        r = run_once(a.rrr, a.base, a.burst, a.idle_secs)
        print(json.dumps(r), flush=True)
        results.append(r)
    med = {k: statistics.median(r[k] for r in results) for k in results[0]}
    print("median " + json.dumps(med))


if __name__ == "__main__":
    main()
