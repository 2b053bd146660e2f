#!/usr/bin/env python3
"""Updates per second with 1, 4 and 8 concurrent writers (issue 10).

Each writer is a loop of `rrr update PRINCIPAL FILE` processes, one path
each, as a shell loop or a cron job would run them; all writers share one
principal and its lock. Configurations are interleaved (1, 4, 8, 1, 4, 8,
...) over ROUNDS rounds on fresh origins, and each is checked afterwards:
every update exited 0 and every path is in `news`.

    cargo build --release
    bench/lock_stress.py [RRR] [ROUNDS] [UPDATES_PER_WRITER]
"""
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

RRR = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "target", "release", "rrr")
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
PER_WRITER = int(sys.argv[3]) if len(sys.argv) > 3 else 100
WRITERS = [1, 4, 8]
TOTAL = 8 * PER_WRITER  # the same number of updates in every configuration


def run_config(writers):
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "origin")
        os.makedirs(os.path.join(root, "d"))
        open(os.path.join(root, "d", "seed"), "w").close()
        subprocess.run([RRR, "init", root], check=True, capture_output=True)
        principal = os.path.join(root, "RECENT.recent")
        per = TOTAL // writers
        names = [[f"w{w}/f{i}" for i in range(per)] for w in range(writers)]
        for ns in names:
            for n in ns:
                p = os.path.join(root, n)
                os.makedirs(os.path.dirname(p), exist_ok=True)
                open(p, "w").close()
        failures = []

        def loop(ns):
            for n in ns:
                r = subprocess.run([RRR, "update", principal, os.path.join(root, n)], capture_output=True)
                if r.returncode != 0:
                    failures.append((n, r.stderr))

        subprocess.run(["sync"])
        threads = [threading.Thread(target=loop, args=(ns,)) for ns in names]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.monotonic() - t0
        news = subprocess.run([RRR, "news", "--local", principal], check=True, capture_output=True, text=True).stdout
        listed = {line.split("\t")[2] for line in news.splitlines()}
        missing = [n for ns in names for n in ns if n not in listed]
        assert not failures, failures[:3]
        assert not missing, missing[:5]
        return per * writers / wall


def main():
    load = os.getloadavg()
    print(f"rrr: {os.path.abspath(RRR)}; {ROUNDS} rounds; {TOTAL} updates per configuration")
    print(f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    rates = {w: [] for w in WRITERS}
    for r in range(ROUNDS):
        for w in WRITERS:
            rates[w].append(run_config(w))
        print(f"round {r + 1}: " + ", ".join(f"{w} writers {rates[w][-1]:.0f}/s" for w in WRITERS), flush=True)
    load = os.getloadavg()
    print(f"load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    base = statistics.median(rates[1])
    for w in WRITERS:
        med = statistics.median(rates[w])
        print(f"{w} writers: median {med:.0f} updates/s ({med / base:.2f}x one writer); "
              f"min {min(rates[w]):.0f}, max {max(rates[w]):.0f}")


if __name__ == "__main__":
    main()
