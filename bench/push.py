#!/usr/bin/env python3
"""Push versus polling, on loopback (BENCHMARKS.md "Push").

origin (rrr watch) -> daemon -> tier 1 (rmirror --loop) -> daemon -> tier 2.

Modes:
  push      watch --on-batch 'rrr trigger T1', tier 1 --on-pass 'rrr trigger T2',
            both loops --interval 300 (polling only as a safety net)
  poll20    no triggers, --interval 20 (the default)
  poll1     no triggers, --interval 1

For each write at the origin: the seconds until the file exists at tier 1
and at tier 2 (polled every 5 ms). Medians and maxima per mode.

  bench/push.py [WRITES] [MODES...]     e.g. bench/push.py 20 push poll1 poll20
  bench/push.py --poll-cost [N]         daemon CPU per idle principal fetch

RRR=path/to/rrr (default target/release/rrr). Each file is written a
random 0.5 s to GAP_MAX s (default 3) after the previous one arrived at
tier 2. A write soon after an arrival is soon after a pass, so with a short
GAP_MAX polling's latencies sit near their worst case (interval minus the
gap); GAP_MAX at least the interval spreads the writes over its phase.
"""
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

RRR = os.path.abspath(os.environ.get("RRR", "target/release/rrr"))


def freeport():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def daemon(work, name, path):
    """An rsync daemon serving `path` as module [m] on a free port."""
    d = os.path.join(work, f"d-{name}")
    os.makedirs(d)
    port = freeport()
    conf = os.path.join(d, "rsyncd.conf")
    with open(conf, "w") as f:
        f.write(
            f"port = {port}\naddress = 127.0.0.1\npid file = {d}/pid\nlog file = {d}/log\n"
            f"use chroot = no\nuid = {os.getuid()}\ngid = {os.getgid()}\nread only = yes\n"
            f"reverse lookup = no\n[m]\n    path = {path}\n    exclude = /.rrr/ *.lock/ *.new\n"
        )
    subprocess.run(["rsync", "--daemon", f"--config={conf}"], check=True)
    for _ in range(200):
        if os.path.exists(f"{d}/pid"):
            break
        time.sleep(0.01)
    time.sleep(0.1)
    pid = int(open(f"{d}/pid").read())
    return port, pid


def make_origin(root, n=1000):
    """n files a month old (so the principal, RECENT-1h, is small, as an
    origin's is), indexed and aggregated."""
    old = time.time() - 30 * 86400
    for i in range(n):
        p = os.path.join(root, f"d{i % 20}", f"f{i}.txt")
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(f"file {i}\n")
        os.utime(p, (old + i, old + i))
    subprocess.run([RRR, "-q", "init", "--aggregate", root], check=True)


def wait_exists(path, limit):
    end = time.time() + limit
    while time.time() < end:
        if os.path.exists(path):
            return time.time()
        time.sleep(0.005)
    return None


def run_mode(mode, writes):
    work = tempfile.mkdtemp(prefix=f"push-{mode}-")
    origin, t1, t2 = (os.path.join(work, x) for x in ("origin", "t1", "t2"))
    make_origin(origin)
    p0, d0 = daemon(work, "0", origin)
    interval = {"push": "300", "poll20": "20", "poll1": "1"}[mode]
    procs = []
    log = open(os.path.join(work, "log"), "w")

    def start(args):
        procs.append(subprocess.Popen([RRR, "-q"] + args, stdout=subprocess.DEVNULL, stderr=log))

    watch = ["watch", f"{origin}/RECENT.recent"]
    if mode == "push":
        watch += ["--on-batch", f"{RRR} -q trigger --localroot {t1}"]
    start(watch)
    tier1 = ["rmirror", "--loop", "--interval", interval, "--remote",
             f"rsync://127.0.0.1:{p0}/m/RECENT.recent", "--localroot", t1]
    if mode == "push":
        tier1 += ["--on-pass", f"{RRR} -q trigger --localroot {t2}"]
    start(tier1)
    if not wait_exists(os.path.join(t1, "RECENT.recent"), 120):
        raise SystemExit(f"{mode}: tier 1 never completed its first pass; see {work}/log")
    p1, d1 = daemon(work, "1", t1)
    start(["rmirror", "--loop", "--interval", interval, "--remote",
           f"rsync://127.0.0.1:{p1}/m/RECENT.recent", "--localroot", t2])
    if not wait_exists(os.path.join(t2, "RECENT.recent"), 120):
        raise SystemExit(f"{mode}: tier 2 never completed its first pass; see {work}/log")
    time.sleep(2)
    lat1, lat2 = [], []
    for i in range(writes):
        time.sleep(random.uniform(0.5, float(os.environ.get("GAP_MAX", "3"))))
        rel = f"new/w{i}.txt"
        os.makedirs(os.path.join(origin, "new"), exist_ok=True)
        t0 = time.time()
        with open(os.path.join(origin, rel), "w") as f:
            f.write(f"write {i}\n")
        a = wait_exists(os.path.join(t1, rel), 120)
        b = wait_exists(os.path.join(t2, rel), 120)
        if a is None or b is None:
            raise SystemExit(f"{mode}: write {i} did not arrive; see {work}/log")
        lat1.append(a - t0)
        lat2.append(b - t0)
    for p in procs:
        p.send_signal(signal.SIGTERM)
    for p in procs:
        p.wait()
    for d in (d0, d1):
        os.kill(d, signal.SIGTERM)
    shutil.rmtree(work, ignore_errors=True)
    return lat1, lat2


def poll_cost(n):
    """Daemon-side CPU (its forked children, reaped by the daemon) per idle
    principal fetch: n one-shot passes on an idle origin of POLL_FILES files
    (default 10000)."""
    work = tempfile.mkdtemp(prefix="push-cost-")
    origin, t = os.path.join(work, "origin"), os.path.join(work, "t")
    make_origin(origin, int(os.environ.get("POLL_FILES", "10000")))
    port, pid = daemon(work, "0", origin)
    src = f"rsync://127.0.0.1:{port}/m/RECENT.recent"
    subprocess.run([RRR, "-q", "rmirror", "--remote", src, "--localroot", t], check=True)
    tick = os.sysconf("SC_CLK_TCK")

    def children_cpu():
        f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(f[13]) + int(f[14])) / tick  # cutime + cstime

    before, t0 = children_cpu(), time.time()
    for _ in range(n):
        subprocess.run([RRR, "-q", "rmirror", "--remote", src, "--localroot", t], check=True)
    cpu, wall = children_cpu() - before, time.time() - t0
    size = os.path.getsize(os.path.join(origin, "RECENT-1h.yaml"))
    os.kill(pid, signal.SIGTERM)
    shutil.rmtree(work, ignore_errors=True)
    print(f"poll cost: {n} idle passes, principal {size} bytes: daemon CPU {cpu:.2f} s "
          f"= {1000 * cpu / n:.1f} ms per poll; {wall / n * 1000:.0f} ms wall per pass; "
          f"load {open('/proc/loadavg').read().split()[:3]}")


def main():
    args = sys.argv[1:]
    if args[:1] == ["--poll-cost"]:
        poll_cost(int(args[1]) if len(args) > 1 else 100)
        return
    writes = int(args[0]) if args else 20
    modes = args[1:] or ["push", "poll1", "poll20"]
    gap = os.environ.get("GAP_MAX", "3")
    print(f"rrr {RRR}; {writes} writes per mode, 0.5-{gap} s after the previous arrival; "
          f"load before {open('/proc/loadavg').read().split()[:3]}")
    for mode in modes:
        l1, l2 = run_mode(mode, writes)
        print(f"{mode:7} tier1 median {statistics.median(l1):6.3f} s max {max(l1):6.3f} s | "
              f"tier2 median {statistics.median(l2):6.3f} s max {max(l2):6.3f} s | "
              f"load {open('/proc/loadavg').read().split()[:3]}", flush=True)


if __name__ == "__main__":
    main()
