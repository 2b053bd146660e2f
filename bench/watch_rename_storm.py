#!/usr/bin/env python3
"""A rename storm over an indexed tree against `rrr watch` (issue 31): how
long after the storm the index is complete (`rrr fsck` clean), how many
events the daemon recorded for it, its longest silence in the log, and its
peak memory (the daemon, its log and fsck as bench/storm.py handles them
for both storm benchmarks).

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
import os
import subprocess
import sys
import tempfile
import time

from storm import WatchRun, common_args

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
    ap.add_argument("--dirs", type=int, default=60)
    ap.add_argument("--per-dir", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=10)
    common_args(ap, settle=600)
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
    run = WatchRun(rrr, root, tmp, a.batch_delay)
    # The start's cascade.
    time.sleep(2)
    run.sample()
    t0 = time.time()
    share = [names[i :: a.workers] for i in range(a.workers)]
    workers = [subprocess.Popen([sys.executable, "-c", WORKER, root, str(a.seconds)] + s) for s in share]
    for w in workers:
        w.wait()
    t_storm = time.time()
    print("storm: %.1f s" % (t_storm - t0))
    clean_after = run.wait_clean(t_storm, a.settle, fsck_timeout=120, pause=1)
    run.stop()
    batches, rescans, news, deletes = run.counts(("batch", "rescan"))
    run.report_daemon(batches, rescans)
    moved = sum((len(s) + 1) // 2 for s in share) * a.per_dir
    print("events recorded: %d new, %d delete; the net change is %d files moved (%d events): %.1f x" % (news, deletes, moved, 2 * moved, (news + deletes) / max(2 * moved, 1)))
    run.finish(clean_after, a.keep)

if __name__ == "__main__":
    main()
