#!/usr/bin/env python3
"""Benchmark `rrr watch` under load (issue 14): three ratios, each measured
in one run with its comparison, runs interleaved, medians.

* bursts: a writer process creates SMALL (10k) or LARGE (100k) new files
  (open, write a line, close) in 100 new directories of a small indexed
  tree; the figure is the time from the writer's last close to the rename
  of the principal that first lists the last file (seen through inotify by
  this script, not from the daemon's log). Then `rrr fsck` must be clean.
  Ratio: LARGE / SMALL.
* reads: `find ROOT -type f -exec cat {} +` reads a tree of READ_FILES
  files of 1 KiB while the daemon runs; the daemon's CPU time (all its
  threads, /proc/PID/task/*/schedstat) against the reader's (wait4
  rusage, user+sys of find and cat). Also the daemon's idle CPU.
* startup: a tree of STARTUP_FILES files (`gen_collection tree`, indexed
  with `rrr init --aggregate`, so every recentfile holds every event: the
  worst case) with changes made while the daemon was down (1000 added,
  1000 deleted, 1000 touched after the heartbeat's synced_to); the time
  from spawning `rrr watch` to its "start" log line (all changes recorded)
  against `find ROOT -printf '%T@ %C@ %p\n' > /dev/null`; peak RSS
  (VmHWM) at the start line and after the first aggregate.

Several binaries may be given (`--rrr A --rrr B`): each round runs every
binary in turn. `sync` before every I/O-heavy run; the load average is
printed before and after each part.

    bench/watch_bench.py --rrr target/release/rrr --rounds 3
    bench/watch_bench.py --rrr /tmp/rrr-main --rrr target/release/rrr --only startup
"""

import argparse
import ctypes
import json
import os
import select
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

WRITER = r"""
import os, sys, time
root, n, tag = sys.argv[1], int(sys.argv[2]), sys.argv[3]
dirs = [os.path.join(root, tag, "d%02d" % i) for i in range(100)]
t_first = time.time()
for d in dirs:
    os.makedirs(d)
last = None
for i in range(n):
    last = os.path.join(dirs[i % 100], "f%06d" % i)
    with open(last, "w") as f:
        f.write("%d\n" % i)
t_last = time.time()
print(t_first, t_last, os.path.relpath(last, root))
"""

IN_MOVED_TO = 0x80
libc = ctypes.CDLL(None, use_errno=True)


class DirWatch:
    """inotify on one directory (IN_MOVED_TO), to see the principal's renames."""

    def __init__(self, path):
        self.fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0 or libc.inotify_add_watch(self.fd, path.encode(), IN_MOVED_TO) < 0:
            raise OSError(ctypes.get_errno(), "inotify")

    def names(self, timeout):
        """Names moved in, waiting at most `timeout` for the first."""
        r, _, _ = select.select([self.fd], [], [], timeout)
        if not r:
            return []
        buf = os.read(self.fd, 65536)
        out, i = [], 0
        while i < len(buf):
            _wd, _mask, _cookie, ln = struct.unpack_from("iIII", buf, i)
            out.append(buf[i + 16:i + 16 + ln].rstrip(b"\0").decode())
            i += 16 + ln
        return out

    def close(self):
        os.close(self.fd)


def loadavg():
    return " ".join(open("/proc/loadavg").read().split()[:3])


def sync():
    subprocess.run(["sync"], check=True)


def cpu_ns(pid):
    """CPU time of all threads of `pid` (ns)."""
    total = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            total += int(open(f"/proc/{pid}/task/{t}/schedstat").read().split()[0])
        except OSError:
            pass
    return total


def cpu_s(pid):
    """CPU time of `pid` (user + system, all threads, the ended ones too)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def status_kb(pid, key):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


class Daemon:
    def __init__(self, rrr, root, logdir):
        self.log_path = os.path.join(logdir, "watch.log")
        self.log = open(self.log_path, "w")
        self.t_spawn = time.time()
        self.proc = subprocess.Popen([rrr, "watch", root, "--json-log"], stderr=self.log,
                                     stdout=subprocess.DEVNULL)
        self.pid = self.proc.pid

    def lines(self):
        out = []
        for l in open(self.log_path):
            try:
                out.append(json.loads(l))
            except ValueError:
                pass
        return out

    def wait_for(self, kind, timeout=600, poll=0.005):
        t0 = time.time()
        while time.time() - t0 < timeout:
            for l in self.lines():
                if l.get("kind") == kind:
                    return l
            if self.proc.poll() is not None:
                sys.exit(f"rrr watch died:\n{open(self.log_path).read()}")
            time.sleep(poll)
        return None

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=300)
        self.log.close()
        return code


def fsck_clean(rrr, root):
    return subprocess.run([rrr, "fsck", "--quiet", root], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0


def small_tree(root, n, size=8):
    for i in range(100):
        os.makedirs(os.path.join(root, "base", "d%02d" % i))
    body = b"x" * (size - 1) + b"\n"
    for i in range(n):
        p = os.path.join(root, "base", "d%02d" % (i % 100), "f%06d" % i)
        with open(p, "wb") as f:
            f.write(body)
        os.utime(p, (1600000000 + i, 1600000000 + i))


# ---------------------------------------------------------------- bursts

def burst_once(rrr, n, base):
    tmp = tempfile.mkdtemp(prefix="rrr-watch-bench-")
    root = os.path.join(tmp, "root")
    os.makedirs(root)
    try:
        small_tree(root, base)
        subprocess.run([rrr, "init", "--quiet", root], check=True)
        sync()
        d = Daemon(rrr, root, tmp)
        try:
            d.wait_for("start")
            time.sleep(2)  # the start-up aggregate and first heartbeat
            principal = os.path.join(root, os.readlink(os.path.join(root, "RECENT.recent")))
            dw = DirWatch(root)
            c0 = cpu_ns(d.pid)
            w = subprocess.Popen([sys.executable, "-c", WRITER, root, str(n), "burst"], stdout=subprocess.PIPE,
                                 text=True)
            # Every rename of the principal is timed as it is seen. The last
            # file is indexed by the first rename after its close (t_last)
            # whose content lists it.
            base_name = os.path.basename(principal)
            renames = []
            while w.poll() is None:
                if base_name in dw.names(0.2):
                    renames.append(time.time())
            t_first, t_last, last = w.stdout.read().split()
            t_first, t_last = float(t_first), float(t_last)
            needle = f"path: {last}\n".encode()
            with open(principal, "rb") as f:
                listed = needle in f.read()
            if base_name in dw.names(0):  # a rename seen only now
                renames.append(time.time())
            after = [t for t in renames if t >= t_last]
            t_indexed = after[0] if listed and after else None
            while t_indexed is None:
                if time.time() - t_last > 600:
                    sys.exit("the last file was not indexed within 600 s")
                if base_name in dw.names(1.0):
                    now = time.time()
                    with open(principal, "rb") as f:
                        if needle in f.read():
                            t_indexed = now
            dw.close()
            cpu_s = (cpu_ns(d.pid) - c0) / 1e9
            peak = status_kb(d.pid, "VmHWM")
            t0 = time.time()
            clean = fsck_clean(rrr, root)
            while not clean and time.time() - t0 < 60:
                time.sleep(0.5)
                clean = fsck_clean(rrr, root)
        finally:
            code = d.stop()
        batches = [l for l in d.lines() if l.get("kind") == "batch" and float(l["time"]) >= t_first]
        return {
            "part": "burst", "files": n,
            "write_s": round(t_last - t_first, 3),
            "last_write_to_indexed_s": round(t_indexed - t_last, 3),
            "fsck_clean": clean,
            "batches": len(batches),
            "events": sum(b["events"] for b in batches),
            "max_record_ms": max((b["record_ms"] for b in batches), default=0),
            "daemon_cpu_s": round(cpu_s, 2),
            "peak_rss_mb": round(peak / 1024, 1),
            "exit": code,
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ---------------------------------------------------------------- reads

def reads_once(rrr, n, idle_secs, passes):
    tmp = tempfile.mkdtemp(prefix="rrr-watch-bench-")
    root = os.path.join(tmp, "root")
    os.makedirs(root)
    try:
        small_tree(root, n, size=1024)
        subprocess.run([rrr, "init", "--quiet", root], check=True)
        # Warm the page cache: the reader should cost CPU, not disk waits.
        subprocess.run(f"find {root} -type f -exec cat {{}} + > /dev/null", shell=True, check=True)
        sync()
        d = Daemon(rrr, root, tmp)
        try:
            d.wait_for("start")
            time.sleep(3)  # the start-up aggregate and first heartbeat
            c0, t0 = cpu_ns(d.pid), time.time()
            time.sleep(idle_secs)
            idle = (cpu_ns(d.pid) - c0) / 1e9 / (time.time() - t0)
            c0, t0 = cpu_ns(d.pid), time.time()
            reader_s = 0.0
            for _ in range(passes):
                p = subprocess.Popen(["sh", "-c", f"find {root} -type f -exec cat {{}} + > /dev/null"])
                _, status, ru = os.wait4(p.pid, 0)
                p.returncode = os.waitstatus_to_exitcode(status)
                reader_s += ru.ru_utime + ru.ru_stime
            wall = time.time() - t0
            # Events read before the reader ended may still be in the daemon's queue.
            time.sleep(1)
            daemon_s = (cpu_ns(d.pid) - c0) / 1e9
        finally:
            code = d.stop()
        return {
            "part": "reads", "files": n, "passes": passes,
            "reader_cpu_s": round(reader_s, 3), "reader_wall_s": round(wall, 2),
            "daemon_cpu_s": round(daemon_s, 4),
            "daemon_per_reader_pct": round(100 * daemon_s / reader_s, 2),
            "idle_cpu_pct": round(100 * idle, 3),
            "exit": code,
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ---------------------------------------------------------------- startup

def startup_tree(work, n, rrr):
    root = os.path.join(work, f"tree{n}")
    backup = os.path.join(work, f"index{n}")
    if not os.path.exists(os.path.join(backup, "done")):
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(backup, ignore_errors=True)
        subprocess.run(["cargo", "build", "--quiet", "--release", "--example", "gen_collection"], cwd=REPO,
                       check=True)
        gen = os.path.join(REPO, "target", "release", "examples", "gen_collection")
        subprocess.run([gen, "tree", root, "--files", str(n)], check=True)
        subprocess.run([rrr, "init", "--quiet", "--aggregate", root], check=True)
        os.makedirs(backup)
        for name in os.listdir(root):
            if name.startswith("RECENT"):
                shutil.copy2(os.path.join(root, name), backup, follow_symlinks=False)
        open(os.path.join(backup, "done"), "w").close()
    return root, backup


def tree_files(root, limit):
    out = []
    for dirpath, _dirs, files in os.walk(root):
        if os.path.basename(dirpath) in (".rrr", "offline"):
            continue
        for f in files:
            if not f.startswith("RECENT"):
                out.append(os.path.join(dirpath, f))
                if len(out) >= limit:
                    return out
    return out


def find_once(root):
    sync()
    t0 = time.time()
    p = subprocess.Popen(["sh", "-c", f"find {root} -printf '%T@ %C@ %p\\n' > /dev/null"])
    _, status, ru = os.wait4(p.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    return {"part": "find", "secs": round(time.time() - t0, 3), "cpu_s": round(ru.ru_utime + ru.ru_stime, 3)}


def startup_once(rrr, root, backup, changed):
    for name in os.listdir(root):
        if name.startswith("RECENT"):
            os.unlink(os.path.join(root, name))
    for name in os.listdir(backup):
        if name != "done":
            shutil.copy2(os.path.join(backup, name), root, follow_symlinks=False)
    shutil.rmtree(os.path.join(root, ".rrr"), ignore_errors=True)
    shutil.rmtree(os.path.join(root, "offline"), ignore_errors=True)
    # The previous run's heartbeat, a second ago, then changes while down.
    # (The files the previous run moved back got a new ctime: let the
    # heartbeat's whole second pass it.)
    time.sleep(3)
    now = time.time()
    os.makedirs(os.path.join(root, ".rrr"))
    with open(os.path.join(root, ".rrr", "watch.json"), "w") as f:
        hb = "%.3f" % (now - 1)
        json.dump({"pid": 999999, "started": hb, "heartbeat": hb, "synced_to": hb}, f)
    deleted, touched = changed[:1000], changed[1000:2000]
    hold = root + ".hold"
    os.makedirs(hold, exist_ok=True)
    for i, p in enumerate(deleted):
        os.rename(p, os.path.join(hold, str(i)))
    times = [os.lstat(p) for p in touched]
    for p in touched:
        os.utime(p)
    os.makedirs(os.path.join(root, "offline"))
    for i in range(1000):
        with open(os.path.join(root, "offline", "n%04d" % i), "w") as f:
            f.write("x\n")
    sync()
    tmp = tempfile.mkdtemp(prefix="rrr-watch-bench-")
    try:
        d = Daemon(rrr, root, tmp)
        try:
            start = d.wait_for("start", poll=0.002)
            secs = time.time() - d.t_spawn
            cpu = cpu_s(d.pid)
            hwm_start = status_kb(d.pid, "VmHWM")
            agg = d.wait_for("aggregate", timeout=30, poll=0.05)
            time.sleep(0.5)
            hwm_agg = status_kb(d.pid, "VmHWM")
        finally:
            code = d.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        for i, p in enumerate(deleted):
            os.rename(os.path.join(hold, str(i)), p)
        for p, st in zip(touched, times):
            os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
        shutil.rmtree(os.path.join(root, "offline"), ignore_errors=True)
    return {
        "part": "startup", "secs": round(secs, 3), "cpu_s": round(cpu, 3), "daemon_ms": start.get("ms"),
        "new": start.get("new"), "delete": start.get("delete"),
        "peak_rss_start_mb": round(hwm_start / 1024, 1),
        "peak_rss_after_aggregate_mb": round(hwm_agg / 1024, 1) if agg else None,
        "exit": code,
    }


# ---------------------------------------------------------------- main

def med(rows, key):
    vals = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rrr", action="append", help="binary to measure (repeatable)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", default="bursts,reads,startup")
    ap.add_argument("--small", type=int, default=10000)
    ap.add_argument("--large", type=int, default=100000)
    ap.add_argument("--base", type=int, default=1000)
    ap.add_argument("--read-files", type=int, default=20000)
    ap.add_argument("--read-passes", type=int, default=2)
    ap.add_argument("--idle-secs", type=float, default=10)
    ap.add_argument("--startup-files", type=int, default=200000)
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "rrr-watch-bench"))
    a = ap.parse_args()
    bins = a.rrr or [os.path.join(REPO, "target", "release", "rrr")]
    parts = a.only.split(",")
    rows = {b: [] for b in bins}
    finds = []
    find_cpu = []

    def emit(b, r):
        r["rrr"] = b
        print(json.dumps(r), flush=True)
        rows[b].append(r)

    if "reads" in parts:
        print(f"# reads: load average {loadavg()}", flush=True)
        for _ in range(a.rounds):
            for b in bins:
                emit(b, reads_once(b, a.read_files, a.idle_secs, a.read_passes))
    if "bursts" in parts:
        print(f"# bursts: load average {loadavg()}", flush=True)
        for _ in range(a.rounds):
            for n in (a.small, a.large):
                for b in bins:
                    emit(b, burst_once(b, n, a.base))
    if "startup" in parts:
        os.makedirs(a.work, exist_ok=True)
        root, backup = startup_tree(a.work, a.startup_files, bins[0])
        changed = tree_files(root, 2000)
        find_once(root)  # warm the cache
        print(f"# startup: load average {loadavg()}", flush=True)
        for _ in range(a.rounds):
            f = find_once(root)
            print(json.dumps(f), flush=True)
            finds.append(f["secs"])
            find_cpu.append(f["cpu_s"])
            for b in bins:
                emit(b, startup_once(b, root, backup, changed))
    print(f"# end: load average {loadavg()}", flush=True)

    for b in bins:
        r = rows[b]
        summary = {"rrr": b}
        small = [x for x in r if x["part"] == "burst" and x["files"] == a.small]
        large = [x for x in r if x["part"] == "burst" and x["files"] == a.large]
        if small and large:
            s, l = med(small, "last_write_to_indexed_s"), med(large, "last_write_to_indexed_s")
            summary.update({"burst_small_s": s, "burst_large_s": l, "burst_ratio": round(l / s, 2),
                            "all_fsck_clean": all(x["fsck_clean"] for x in small + large)})
        reads = [x for x in r if x["part"] == "reads"]
        if reads:
            summary.update({"reads_daemon_per_reader_pct": med(reads, "daemon_per_reader_pct"),
                            "idle_cpu_pct": med(reads, "idle_cpu_pct")})
        st = [x for x in r if x["part"] == "startup"]
        if st and finds:
            summary.update({"startup_s": med(st, "secs"), "find_s": statistics.median(finds),
                            "startup_cpu_s": med(st, "cpu_s"), "find_cpu_s": statistics.median(find_cpu),
                            "startup_ratio": round(med(st, "secs") / statistics.median(finds), 2),
                            "peak_rss_start_mb": med(st, "peak_rss_start_mb"),
                            "peak_rss_after_aggregate_mb": med(st, "peak_rss_after_aggregate_mb")})
        print("median " + json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
