"""What the storm benchmarks of `rrr watch` share (bench/watch_storm.py,
issue 20; bench/watch_rename_storm.py, issue 31): the daemon started with
`--json-log` on an indexed tree, its peak memory (VmHWM, read from
/proc/PID/status every 100 ms and once more before it is stopped) and its
longest silence in the log while it runs, `rrr fsck` polled after the
storm until the index is complete, the events its log counts, and the
closing lines (load average, the temp dir kept or removed, the exit
status). Each script makes its own tree and its own storm.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time


def vm(pid, key):
    """A `/proc/PID/status` figure in bytes (`VmHWM`, `VmRSS`), or None."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def common_args(ap, settle):
    """The options both storms take; `settle` is the default wait for fsck."""
    ap.add_argument("--rrr", default="target/release/rrr")
    ap.add_argument("--batch-delay", type=int, default=1000, help="the daemon's --batch-delay (ms)")
    ap.add_argument("--settle", type=float, default=settle, help="seconds to wait for fsck clean after the storm")
    ap.add_argument("--dir", default=None, help="where to make the tree (default: a temp dir)")
    ap.add_argument("--keep", action="store_true")


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


class WatchRun:
    """`rrr watch ROOT --json-log` with its log in TMP/watch.log, sampled
    from `sample()` on until `stop()`."""

    def __init__(self, rrr, root, tmp, batch_delay):
        self.rrr, self.root, self.tmp = rrr, root, tmp
        print("load average before: %s" % loadavg())
        self.log_path = os.path.join(tmp, "watch.log")
        self.log = open(self.log_path, "w")
        self.daemon = subprocess.Popen(
            [rrr, "watch", root, "--json-log", "--batch-delay", str(batch_delay)],
            stdout=subprocess.DEVNULL,
            stderr=self.log,
        )
        while '"kind":"start"' not in open(self.log_path).read():
            if self.daemon.poll() is not None:
                sys.exit("rrr watch exited at start: %s" % open(self.log_path).read())
            time.sleep(0.05)
        self.peak = 0
        self.longest_silence = 0.0
        self._stop = threading.Event()
        self._sampler = None

    def sample(self, report_every=None, limit_gib=0):
        """Start sampling: peak RSS, the log's silences (while the daemon
        runs); every `report_every` s a line with the RSS; the daemon is
        killed when its peak passes `limit_gib` (0: no limit)."""
        t_start = time.time()

        def run():
            last_size, last_change = os.path.getsize(self.log_path), time.time()
            next_report = t_start + report_every if report_every else None
            while not self._stop.is_set():
                hwm = vm(self.daemon.pid, "VmHWM")
                now = time.time()
                if next_report and now >= next_report:
                    next_report += report_every
                    rss = vm(self.daemon.pid, "VmRSS") or 0
                    print("  t=%.0f s: RSS %.1f MiB, peak %.1f MiB" % (now - t_start, rss / 2**20, (hwm or 0) / 2**20), flush=True)
                if hwm:
                    self.peak = max(self.peak, hwm)
                    if limit_gib and hwm > limit_gib * 2**30:
                        print("RSS passed %.1f GiB: stopping the daemon" % limit_gib)
                        self.daemon.kill()
                size = os.path.getsize(self.log_path)
                if size != last_size or self.daemon.poll() is None:
                    self.longest_silence = max(self.longest_silence, now - last_change)
                if size != last_size:
                    last_size, last_change = size, now
                time.sleep(0.1)

        self._sampler = threading.Thread(target=run)
        self._sampler.start()

    def wait_clean(self, t_storm, settle, fsck_timeout, pause):
        """Seconds from `t_storm` until `rrr fsck` is clean (polled every
        `pause` s, each fsck at most `fsck_timeout` s), or None after
        `settle` s or when the daemon died."""
        while time.time() < t_storm + settle and self.daemon.poll() is None:
            try:
                r = subprocess.run(
                    [self.rrr, "fsck", self.root], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=fsck_timeout
                )
            except subprocess.TimeoutExpired:
                print("  fsck took over %d s" % fsck_timeout)
                continue
            print("  fsck at %.1f s after the storm: exit %d" % (time.time() - t_storm, r.returncode), flush=True)
            if r.returncode == 0:
                return time.time() - t_storm
            time.sleep(pause)
        return None

    def stop(self):
        """Stop sampling and the daemon (SIGTERM); whether it was alive."""
        alive = self.daemon.poll() is None
        hwm = vm(self.daemon.pid, "VmHWM") if alive else None
        if hwm:
            self.peak = max(self.peak, hwm)
        self._stop.set()
        if self._sampler:
            self._sampler.join()
        if alive:
            self.daemon.send_signal(signal.SIGTERM)
            self.daemon.wait()
        self.alive = alive
        return alive

    def counts(self, kinds):
        """Batches and rescans in the log, and the new and delete events of
        its records of the given kinds ("batch", "rescan", "start")."""
        batches = rescans = news = deletes = 0
        for line in open(self.log_path):
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            kind = obj.get("kind")
            batches += kind == "batch"
            rescans += kind == "rescan"
            if kind in kinds:
                news += obj.get("new", 0)
                deletes += obj.get("delete", 0)
        return batches, rescans, news, deletes

    def report_daemon(self, batches, rescans):
        print("daemon: %s, exit %s" % ("alive at the end" if self.alive else "DIED during the run", self.daemon.returncode))
        print("peak RSS (VmHWM): %.1f MiB" % (self.peak / 2**20))
        print("longest silence in the log: %.1f s; %d batches, %d rescans" % (self.longest_silence, batches, rescans))

    def finish(self, clean_after, keep):
        """The closing lines; exits 0 when the daemon lived and fsck was clean."""
        print("fsck clean: %s" % ("%.1f s after the storm" % clean_after if clean_after is not None else "NO"))
        print("load average after: %s" % loadavg())
        if keep:
            print("kept %s" % self.tmp)
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)
        sys.exit(0 if self.alive and clean_after is not None else 1)
