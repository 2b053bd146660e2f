#!/usr/bin/env python3
"""A rename storm over an indexed tree against `rrr watch` (issue 31): how
long after the storm the index is complete (`rrr fsck` clean), how many
events the daemon recorded for it, its longest silence in the log, and its
peak memory.

The tree: DIRS directories `dNNN/` of PER_DIR files each (60 x 1000 =
60,000 files by default), indexed with `rrr init` before the daemon
starts. WORKERS processes then rename their share of the directories
back and forth (`dNNN` -> `dNNN.x` -> `dNNN`) as fast as they can for
SECONDS; at the end each moves every second one of its directories to
`dNNN.moved` for good. So every file is touched (renamed thousands of
times), but the net change is that half of the files moved: the least an
exact daemon records is one delete and one new for each of those (DIRS x
PER_DIR events; the script prints the ratio to that).

    bench/watch_rename_storm.py --rrr target/release/rrr
    bench/watch_rename_storm.py --rrr /tmp/rrr-before --dirs 100 --per-dir 1000
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from watch_storm import vm  # noqa: E402  (peak RSS, as the issue-20 storm reads it)

WORKER = r"""
import os, sys, time
root, seconds, names = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
end = time.time() + seconds
flips = 0
while time.time() < end:
    for n in names:
        d = os.path.join(root, n)
        os.rename(d, d + ".x")
        os.rename(d + ".x", d)
        flips += 1
for n in names[::2]:
    d = os.path.join(root, n)
    os.rename(d, d + ".moved")
print("worker: %d flips" % flips)
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rrr", default="target/release/rrr")
    ap.add_argument("--dirs", type=int, default=60)
    ap.add_argument("--per-dir", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--batch-delay", type=int, default=1000, help="the daemon's --batch-delay (ms)")
    ap.add_argument("--settle", type=float, default=600, help="seconds to wait for fsck clean after the storm")
    ap.add_argument("--dir", default=None, help="where to make the tree (default: a temp dir)")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    rrr = os.path.abspath(a.rrr)
    tmp = tempfile.mkdtemp(prefix="watch-rename-storm-", dir=a.dir)
    root = os.path.join(tmp, "root")
    names = ["d%03d" % i for i in range(a.dirs)]
    for n in names:
        os.makedirs(os.path.join(root, n))
        for i in range(a.per_dir):
            with open(os.path.join(root, n, "f%05d" % i), "w") as f:
                f.write("%s %d\n" % (n, i))
    subprocess.run([rrr, "init", root], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    subprocess.run([rrr, "aggregate", root], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print("tree: %d files in %d directories" % (a.dirs * a.per_dir, a.dirs))
    print("load average before: %s" % " ".join(open("/proc/loadavg").read().split()[:3]))
    log_path = os.path.join(tmp, "watch.log")
    log = open(log_path, "w")
    daemon = subprocess.Popen([rrr, "watch", root, "--json-log", "--batch-delay", str(a.batch_delay)], stdout=subprocess.DEVNULL, stderr=log)
    while '"kind":"start"' not in open(log_path).read():
        if daemon.poll() is not None:
            sys.exit("rrr watch exited at start: %s" % open(log_path).read())
        time.sleep(0.05)
    # The start's cascade.
    time.sleep(2)

    peak = [0]
    silences = []
    stop = threading.Event()

    def sample():
        last_size, last_change = os.path.getsize(log_path), time.time()
        while not stop.is_set():
            hwm = vm(daemon.pid, "VmHWM")
            if hwm:
                peak[0] = max(peak[0], hwm)
            size = os.path.getsize(log_path)
            now = time.time()
            if size != last_size:
                last_size, last_change = size, now
            silences.append(now - last_change)
            time.sleep(0.1)

    sampler = threading.Thread(target=sample)
    sampler.start()
    t0 = time.time()
    share = [names[i :: a.workers] for i in range(a.workers)]
    workers = [subprocess.Popen([sys.executable, "-c", WORKER, root, str(a.seconds)] + s) for s in share]
    for w in workers:
        w.wait()
    t_storm = time.time()
    print("storm: %.1f s" % (t_storm - t0))
    clean_after = None
    while time.time() < t_storm + a.settle and daemon.poll() is None:
        try:
            r = subprocess.run([rrr, "fsck", root], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
        except subprocess.TimeoutExpired:
            print("  fsck took over 120 s")
            continue
        print("  fsck at %.1f s after the storm: exit %d" % (time.time() - t_storm, r.returncode), flush=True)
        if r.returncode == 0:
            clean_after = time.time() - t_storm
            break
        time.sleep(1)
    alive = daemon.poll() is None
    hwm = vm(daemon.pid, "VmHWM") if alive else None
    if hwm:
        peak[0] = max(peak[0], hwm)
    stop.set()
    sampler.join()
    if alive:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait()
    batches = rescans = news = deletes = 0
    for line in open(log_path):
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        kind = obj.get("kind")
        batches += kind == "batch"
        rescans += kind == "rescan"
        if kind in ("batch", "rescan"):
            news += obj.get("new", 0)
            deletes += obj.get("delete", 0)
    moved = ((a.dirs + 1) // 2) * a.per_dir if a.workers == 1 else sum((len(s) + 1) // 2 for s in share) * a.per_dir
    print("daemon: %s, exit %s" % ("alive at the end" if alive else "DIED during the run", daemon.returncode))
    print("peak RSS (VmHWM): %.1f MiB" % (peak[0] / 2**20))
    print("longest silence in the log: %.1f s; %d batches, %d rescans" % (max(silences) if silences else 0, batches, rescans))
    print("events recorded: %d new, %d delete; the net change is %d files moved (%d events): %.1f x" % (news, deletes, moved, 2 * moved, (news + deletes) / max(2 * moved, 1)))
    print("fsck clean: %s" % ("%.1f s after the storm" % clean_after if clean_after is not None else "NO"))
    print("load average after: %s" % " ".join(open("/proc/loadavg").read().split()[:3]))
    if a.keep:
        print("kept %s" % tmp)
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(0 if alive and clean_after is not None else 1)


if __name__ == "__main__":
    main()
