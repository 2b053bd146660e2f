#!/usr/bin/env python3
"""A rename storm against `rrr watch` (issue 20): the daemon's peak memory,
its longest silence in the log while busy, and how long after the storm
the index is complete (`rrr fsck` clean).

WRITERS processes each work in their own area `wN/` of an indexed tree
until FILES files were written in all: make a directory, write a batch of
small files into it (open, write, close), rename it back and forth, move
every third one out of the tree (to a sibling directory) and, every
AREA_EVERY directories, rename the whole area back and forth FLIPS times
(a directory with thousands of indexed files under it moving away and
back). Beside them a churn process moves `hot/` (HOT indexed files) out
of the tree and makes it again, as fast as it can, until the writers are
done: one directory moved away thousands of times.

The daemon runs with `--json-log`; its VmHWM (peak RSS) is read from
/proc/PID/status every 100 ms and once more before it is stopped. The
load average is printed before and after.

    bench/watch_storm.py --rrr target/release/rrr --files 100000
    bench/watch_storm.py --rrr /tmp/rrr-before --files 100000 --limit-gib 4
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

WRITER = r"""
import os, sys
root, attic, tag, n, per_dir, area_every, flips = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
area = os.path.join(root, tag)
os.makedirs(area, exist_ok=True)
written, k = 0, 0
while written < n:
    d = os.path.join(area, "d%05d" % k)
    os.mkdir(d)
    for i in range(per_dir):
        with open(os.path.join(d, "f%04d" % i), "w") as f:
            f.write("%s %d %d\n" % (tag, k, i))
    written += per_dir
    os.rename(d, d + ".r")
    os.rename(d + ".r", d)
    if k % 3 == 2:
        os.rename(d, os.path.join(attic, "%s-d%05d" % (tag, k)))
    if k % area_every == area_every - 1:
        for _ in range(flips):
            os.rename(area, area + ".x")
            os.rename(area + ".x", area)
    k += 1
"""

CHURN = r"""
import os, sys
root, attic, stop = sys.argv[1], sys.argv[2], sys.argv[3]
k = 0
while not os.path.exists(stop):
    os.rename(os.path.join(root, "hot"), os.path.join(attic, "hot-%06d" % k))
    os.mkdir(os.path.join(root, "hot"))
    k += 1
print("churn: hot/ moved out and made again %d times" % k)
"""


def vm(pid, key):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rrr", default="target/release/rrr")
    ap.add_argument("--files", type=int, default=100000)
    ap.add_argument("--writers", type=int, default=5)
    ap.add_argument("--per-dir", type=int, default=100)
    ap.add_argument("--area-every", type=int, default=2)
    ap.add_argument("--flips", type=int, default=5, help="back-and-forth renames of the area each time")
    ap.add_argument("--hot", type=int, default=20000, help="indexed files in hot/, moved out by the churn")
    ap.add_argument("--batch-delay", type=int, default=1000, help="the daemon's --batch-delay (ms)")
    ap.add_argument("--settle", type=float, default=120, help="seconds to wait for fsck clean after the storm")
    ap.add_argument("--limit-gib", type=float, default=0, help="stop the run when the daemon's RSS passes this")
    ap.add_argument("--dir", default=None, help="where to make the tree (default: a temp dir)")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    rrr = os.path.abspath(a.rrr)
    tmp = tempfile.mkdtemp(prefix="watch-storm-", dir=a.dir)
    root, attic = os.path.join(tmp, "root"), os.path.join(tmp, "attic")
    os.makedirs(root)
    os.makedirs(attic)
    with open(os.path.join(root, "README"), "w") as f:
        f.write("storm\n")
    os.makedirs(os.path.join(root, "hot"))
    for i in range(a.hot):
        with open(os.path.join(root, "hot", "h%06d" % i), "w") as f:
            f.write("%d\n" % i)
    subprocess.run([rrr, "init", root], check=True, stdout=subprocess.DEVNULL)
    print("load average before: %s" % " ".join(open("/proc/loadavg").read().split()[:3]))
    log_path = os.path.join(tmp, "watch.log")
    log = open(log_path, "w")
    daemon = subprocess.Popen([rrr, "watch", root, "--json-log", "--batch-delay", str(a.batch_delay)], stdout=subprocess.DEVNULL, stderr=log)
    while '"kind":"start"' not in open(log_path).read():
        if daemon.poll() is not None:
            sys.exit("rrr watch exited at start: %s" % open(log_path).read())
        time.sleep(0.05)

    peak = [0]
    silences = []  # (seconds without a log line while the storm ran or settled)
    stop = threading.Event()

    def sample():
        last_size, last_change = 0, time.time()
        next_report = time.time() + 5
        while not stop.is_set():
            hwm = vm(daemon.pid, "VmHWM")
            if time.time() >= next_report:
                next_report += 5
                rss = vm(daemon.pid, "VmRSS") or 0
                print("  t=%.0f s: RSS %.1f MiB, peak %.1f MiB" % (time.time() - t_start, rss / 2**20, (hwm or 0) / 2**20), flush=True)
            if hwm:
                peak[0] = max(peak[0], hwm)
                if a.limit_gib and hwm > a.limit_gib * 2**30:
                    print("RSS passed %.1f GiB: stopping the daemon" % a.limit_gib)
                    daemon.kill()
            size = os.path.getsize(log_path)
            now = time.time()
            if size != last_size:
                silences.append(now - last_change)
                last_size, last_change = size, now
            elif daemon.poll() is None:
                silences.append(now - last_change)
            time.sleep(0.1)

    t_start = time.time()
    sampler = threading.Thread(target=sample)
    sampler.start()
    per = a.files // a.writers
    t0 = time.time()
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, root, attic, "w%d" % i, str(per), str(a.per_dir), str(a.area_every), str(a.flips)])
        for i in range(a.writers)
    ]
    stop_churn = os.path.join(tmp, "stop-churn")
    churn = subprocess.Popen([sys.executable, "-c", CHURN, root, attic, stop_churn]) if a.hot else None
    for w in writers:
        w.wait()
    open(stop_churn, "w").close()
    if churn:
        churn.wait()
    t_storm = time.time()
    print("storm: %d files by %d writers in %.1f s" % (per * a.writers, a.writers, t_storm - t0))
    clean_after = None
    while time.time() < t_storm + a.settle and daemon.poll() is None:
        try:
            r = subprocess.run([rrr, "fsck", root], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
        except subprocess.TimeoutExpired:
            print("  fsck took over 60 s")
            continue
        print("  fsck at %.1f s after the storm: exit %d" % (time.time() - t_storm, r.returncode), flush=True)
        if r.returncode == 0:
            clean_after = time.time() - t_storm
            break
        time.sleep(0.5)
    alive = daemon.poll() is None
    hwm = vm(daemon.pid, "VmHWM") if alive else None
    if hwm:
        peak[0] = max(peak[0], hwm)
    stop.set()
    sampler.join()
    if alive:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait()
    longest = max(silences) if silences else 0
    batches = rescans = 0
    news = deletes = 0
    for line in open(log_path):
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        kind = obj.get("kind")
        batches += kind == "batch"
        rescans += kind == "rescan"
        if kind in ("batch", "rescan", "start"):
            news += obj.get("new", 0)
            deletes += obj.get("delete", 0)
    print("daemon: %s, exit %s" % ("alive at the end" if alive else "DIED during the run", daemon.returncode))
    print("peak RSS (VmHWM): %.1f MiB" % (peak[0] / 2**20))
    print("longest silence in the log: %.1f s; %d batches, %d rescans" % (longest, batches, rescans))
    touched = per * a.writers + a.hot
    print("events recorded: %d new, %d delete (%.1f per file touched: %d written + %d in hot/)" % (news, deletes, (news + deletes) / max(touched, 1), per * a.writers, a.hot))
    print("fsck clean: %s" % ("%.1f s after the storm" % clean_after if clean_after is not None else "NO"))
    print("load average after: %s" % " ".join(open("/proc/loadavg").read().split()[:3]))
    if a.keep:
        print("kept %s" % tmp)
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(0 if alive and clean_after is not None else 1)


if __name__ == "__main__":
    main()
