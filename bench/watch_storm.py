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

The daemon, its peak memory, its log and fsck are handled as
bench/storm.py says (shared with bench/watch_rename_storm.py); the RSS
is printed every 5 s.

    bench/watch_storm.py --rrr target/release/rrr --files 100000
    bench/watch_storm.py --rrr /tmp/rrr-before --files 100000 --limit-gib 4
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

from storm import WatchRun, common_args

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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=100000)
    ap.add_argument("--writers", type=int, default=5)
    ap.add_argument("--per-dir", type=int, default=100)
    ap.add_argument("--area-every", type=int, default=2)
    ap.add_argument("--flips", type=int, default=5, help="back-and-forth renames of the area each time")
    ap.add_argument("--hot", type=int, default=20000, help="indexed files in hot/, moved out by the churn")
    ap.add_argument("--limit-gib", type=float, default=0, help="stop the run when the daemon's RSS passes this")
    common_args(ap, settle=120)
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
    run = WatchRun(rrr, root, tmp, a.batch_delay)
    run.sample(report_every=5, limit_gib=a.limit_gib)
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
    clean_after = run.wait_clean(t_storm, a.settle, fsck_timeout=60, pause=0.5)
    run.stop()
    batches, rescans, news, deletes = run.counts(("batch", "rescan", "start"))
    run.report_daemon(batches, rescans)
    touched = per * a.writers + a.hot
    print("events recorded: %d new, %d delete (%.1f per file touched: %d written + %d in hot/)" % (news, deletes, (news + deletes) / max(touched, 1), per * a.writers, a.hot))
    run.finish(clean_after, a.keep)

if __name__ == "__main__":
    main()
