#!/usr/bin/env python3
"""What recording hashes costs the origin's writers (issue 34): `rrr
update` and `rrr watch` throughput with and without `--hash sha256`, runs
interleaved (without, with, without, with, ...), medians, the load average
before and after each part. Not run by CI.

* update: one `rrr update --stdin` batch of SMALL files (10,000 files of
  1 KiB) and one of BIG files (200 files of 10 MB), into a fresh
  collection each run (its principal made by `rrr init --exclude data/`,
  so the batch is the only work); the files are written once and stay in
  the page cache (warm: every run reads the same bytes). Figure: events/s
  of the `update` command, wall time from spawn to exit.
* watch: a running `rrr watch` (a fresh collection each run; `--hash
  sha256` or not) and a writer (this script) that creates N files (10,000
  of 4 KiB, or 100 of 10 MB) in one directory as fast as it can; the
  figures are N divided by the time from the writer's first create to the
  moment the principal lists the last one (polled every 10 ms by reading
  the principal, which rrr replaces by a rename), and the time from the
  writer's last close to that moment (what the daemon adds).

    cargo build --release && bench/origin_hash.py --rrr target/release/rrr --rounds 5
"""

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time


def load():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def run(args, **kw):
    r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
    if r.returncode != 0:
        sys.exit(f"{args}: exit {r.returncode}: {r.stderr.decode(errors='replace')}")
    return r


def fresh_collection(rrr, root):
    """Remove the recentfiles and .rrr of `root`, index nothing but an empty principal."""
    for name in os.listdir(root):
        p = os.path.join(root, name)
        if name.startswith("RECENT") or name == ".rrr":
            if os.path.isdir(p) and not os.path.islink(p):
                shutil.rmtree(p)
            else:
                os.unlink(p)
    run([rrr, "--quiet", "init", root, "--exclude", "data/", "--exclude", "w/"])


def make_files(root, n, size):
    data = os.path.join(root, "data")
    os.makedirs(data, exist_ok=True)
    block = os.urandom(size)
    names = []
    for i in range(n):
        name = f"data/f{i:06d}"
        with open(os.path.join(root, name), "wb") as f:
            f.write(block[i % 256 :] + block[: i % 256])
        names.append(name)
    return names


def update_once(rrr, root, names, hashed):
    fresh_collection(rrr, root)
    stdin = "".join(f"new {n}\n" for n in names).encode()
    args = [rrr, "--quiet", "update", os.path.join(root, "RECENT.recent"), "--stdin"]
    args += ["--hash", "sha256" if hashed else "none"]
    t0 = time.monotonic()
    run(args, input=stdin)
    return time.monotonic() - t0


def sha256sum_once(root, names):
    """`xargs -0 sha256sum` over the files (the baseline of hashing alone, one process)."""
    t0 = time.monotonic()
    run(["xargs", "-0", "sha256sum"], input="\0".join(names).encode(), cwd=root)
    return time.monotonic() - t0


def watch_once(rrr, root, n, size, hashed):
    wdir = os.path.join(root, "w")
    shutil.rmtree(wdir, ignore_errors=True)
    fresh_collection(rrr, root)
    args = [rrr, "watch", root, "--json-log", "--batch-delay", "200"]
    if hashed:
        args += ["--hash", "sha256"]
    log = tempfile.TemporaryFile()
    d = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=log)
    try:
        deadline = time.monotonic() + 60
        while True:
            log.seek(0)
            if b'"kind":"start"' in log.read():
                break
            if time.monotonic() > deadline or d.poll() is not None:
                sys.exit("rrr watch did not start")
            time.sleep(0.01)
        principal = os.path.join(root, "RECENT-1h.yaml")
        block = os.urandom(size)
        os.makedirs(wdir)
        last = f"w/f{n - 1:06d}".encode()
        t0 = time.monotonic()
        for i in range(n):
            with open(os.path.join(wdir, f"f{i:06d}"), "wb") as f:
                f.write(block)
        t_written = time.monotonic()
        deadline = time.monotonic() + 300
        while True:
            with open(principal, "rb") as f:
                if b"path: " + last + b"\n" in f.read():
                    break
            if time.monotonic() > deadline:
                sys.exit("the last file was never recorded")
            time.sleep(0.01)
        t1 = time.monotonic()
        if hashed:
            with open(principal, "rb") as f:
                text = f.read()
            assert text.count(b"\n    sha256: ") >= n, "every watched file hashed"
        return t1 - t0, t_written - t0
    finally:
        d.send_signal(signal.SIGTERM)
        d.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rrr", default="target/release/rrr")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--dir", default=None, help="work directory (default: a temp dir, removed)")
    ap.add_argument("--only", choices=["update", "watch"], default=None)
    a = ap.parse_args()
    rrr = os.path.abspath(a.rrr)
    work = a.dir or tempfile.mkdtemp(prefix="rrr-bench-hash-")
    try:
        if a.only in (None, "update"):
            for label, n, size in [("10k x 1 KiB", 10_000, 1024), ("200 x 10 MB", 200, 10_000_000)]:
                root = os.path.join(work, f"u{n}")
                os.makedirs(root, exist_ok=True)
                names = make_files(root, n, size)
                run(["sync"])
                update_once(rrr, root, names, True)  # warm the cache
                print(f"update {label}: load before {load()}", flush=True)
                times = {False: [], True: []}
                sums = []
                for _ in range(a.rounds):
                    for hashed in (False, True):
                        times[hashed].append(update_once(rrr, root, names, hashed))
                    sums.append(sha256sum_once(root, names))
                m0, m1 = statistics.median(times[False]), statistics.median(times[True])
                print(
                    f"update {label}: without {m0:.3f} s ({n / m0:,.0f} events/s), "
                    f"--hash sha256 {m1:.3f} s ({n / m1:,.0f} events/s), ratio {m1 / m0:.2f}; "
                    f"sha256sum of the same files {statistics.median(sums):.3f} s; "
                    f"runs without {[round(t, 3) for t in times[False]]}, with {[round(t, 3) for t in times[True]]}; "
                    f"load after {load()}",
                    flush=True,
                )
                shutil.rmtree(root)
        if a.only in (None, "watch"):
            for label, n, size in [("10,000 x 4 KiB", 10_000, 4096), ("100 x 10 MB", 100, 10_000_000)]:
                root = os.path.join(work, f"w{n}")
                os.makedirs(root, exist_ok=True)
                print(f"watch {label}: load before {load()}", flush=True)
                times = {False: [], True: []}
                writes = {False: [], True: []}
                for _ in range(a.rounds):
                    for hashed in (False, True):
                        t, w = watch_once(rrr, root, n, size, hashed)
                        times[hashed].append(t)
                        writes[hashed].append(w)
                m0, m1 = statistics.median(times[False]), statistics.median(times[True])
                lag = {h: statistics.median(t - w for t, w in zip(times[h], writes[h])) for h in (False, True)}
                print(
                    f"watch {label}: without {m0:.3f} s ({n / m0:,.0f} files/s), "
                    f"--hash sha256 {m1:.3f} s ({n / m1:,.0f} files/s), ratio {m1 / m0:.2f}; "
                    f"writer alone {statistics.median(writes[False] + writes[True]):.3f} s; "
                    f"last write to recorded: without {lag[False]:.3f} s, with {lag[True]:.3f} s; "
                    f"runs without {[round(t, 3) for t in times[False]]}, with {[round(t, 3) for t in times[True]]}; "
                    f"load after {load()}",
                    flush=True,
                )
                shutil.rmtree(root)
    finally:
        if not a.dir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
