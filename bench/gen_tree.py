#!/usr/bin/env python3
"""A CPAN-like tree for the mirror benchmarks (bench/mirror.sh, bench/mirror-large.sh).

    bench/gen_tree.py ROOT FILES SPREAD_DAYS > all.txt

FILES files of 200-800 random bytes in authors/id/L/LM/LMnnnnn/ (~20 files
per author directory), mtimes spread over SPREAD_DAYS days before now (0:
now); prints the relative paths, one per line. Seeded: the same paths each run.
"""
import os, sys, random, time
root, n, spread = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
random.seed(4)
L = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
authors = max(1, n // 20)
now = time.time()
made = set()
buf = os.urandom(1 << 20)
out = []
for i in range(n):
    a = random.randrange(authors)
    d = "authors/id/%s/%s%s/%s%s%05d" % (L[a % 26], L[a % 26], L[a // 26 % 26], L[a % 26], L[a // 26 % 26], a)
    if d not in made:
        os.makedirs(os.path.join(root, d), exist_ok=True); made.add(d)
    p = "%s/Dist-%07d.tar.gz" % (d, i)
    full = os.path.join(root, p)
    fd = os.open(full, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    off = random.randrange(len(buf) - 800)
    os.write(fd, buf[off:off + random.randint(200, 800)])
    os.close(fd)
    if spread > 0:
        t = now - 3600 - random.uniform(0, spread * 86400)
        os.utime(full, (t, t))
    out.append(p)
sys.stdout.write("\n".join(out) + "\n")
