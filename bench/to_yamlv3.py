#!/usr/bin/env python3
"""Rewrite a collection of recentfiles in YAML::Syck's layout (as rrr and
examples/gen_collection.rs write them) into the exact layout abh/rrrgo
9c6e135 writes through gopkg.in/yaml.v3 (fixtures/rrrgo-9c6e135/, e.g.
go-big200k-yaml): no `---`, 4-space indentation, compact items
(`    - epoch: …` / `      path: …` / `      type: …`), meta keys in
rrrgo's struct order with `Producers` last (in the principal only, as rrrgo
writes it), `aggregator` without the principal's own interval, and every
epoch in Go's `%g` form of a float64 (`1.7644608005e+09`). The epochs are
converted exactly (the point moved, trailing zeros dropped, as `%g` with
the shortest digits prints them), never through a float, so the events
are the same events.

    bench/to_yamlv3.py SRC_DIR DST_DIR

Only plain and single-quoted one-line values are expected (what rrr
writes for CPAN-like paths); anything else stops the script.
"""
import os
import re
import sys


def g_form(decimal):
    """`1764460800.5` -> `1.7644608005e+09` (Go's %g of that value, shortest digits)."""
    int_part, _, frac = decimal.partition(".")
    digits = (int_part + frac).lstrip("0")
    exp = len(int_part.lstrip("0")) - 1 if int_part.lstrip("0") else -(len(frac) - len(frac.lstrip("0")) + 1)
    digits = digits.rstrip("0") or "0"
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{mantissa}e{'+' if exp >= 0 else '-'}{abs(exp):02d}"


def unquote(v):
    v = v.strip()
    if v.startswith("'") and v.endswith("'"):
        return v[1:-1].replace("''", "'")
    if v[:1] in "\"|>[{&*!":
        sys.exit(f"unexpected value {v!r}")
    return v


def convert(src, dst, principal):
    with open(src, encoding="utf-8") as f:
        lines = f.read().split("\n")
    meta, sub, items = {}, None, []
    i = 0
    while i < len(lines) and not lines[i].startswith("recent:"):
        line = lines[i]
        i += 1
        m = re.match(r"^  (\S[^:]*): ?(.*)$", line)
        if m:
            key, val = m.group(1), m.group(2).strip()
            sub = key
            meta[key] = unquote(val) if val and val not in ("{}", "[]") else ([] if key == "aggregator" else {})
            continue
        m = re.match(r"^    - (.*)$", line)
        if m and sub == "aggregator":
            meta["aggregator"].append(unquote(m.group(1)))
            continue
        m = re.match(r"^    (\S[^:]*): ?(.*)$", line)
        if m and isinstance(meta.get(sub), dict):
            meta[sub][m.group(1)] = unquote(m.group(2))
    epoch = path = None
    for line in lines[i + 1:]:
        if line.startswith("    epoch: "):
            epoch = unquote(line[11:])
        elif line.startswith("    path: "):
            path = unquote(line[10:])
        elif line.startswith("    type: "):
            items.append((epoch, path, line[10:].strip()))
    out = ["meta:"]
    interval = meta.get("interval")
    agg = [a for a in meta.get("aggregator", []) if a != "1h"]
    if agg:
        out.append("    aggregator:")
        out += [f"        - {a}" for a in agg]
    if "dirtymark" in meta:
        out.append(f"    dirtymark: {g_form(meta['dirtymark'])}")
    out.append(f"    filenameroot: {meta.get('filenameroot', 'RECENT')}")
    out.append(f"    interval: {interval}")
    merged = meta.get("merged")
    if isinstance(merged, dict) and merged.get("epoch"):
        out += ["    merged:", f"        epoch: {g_form(merged['epoch'])}", f"        into_interval: {merged['into_interval']}"]
    mm = meta.get("minmax")
    if isinstance(mm, dict) and mm.get("max") not in (None, "~"):
        out += ["    minmax:", f"        max: {g_form(mm['max'])}", f"        min: {g_form(mm['min'])}"]
        if mm.get("mtime"):
            out.append(f"        mtime: {mm['mtime']}")
    out += ["    protocol: 1", "    serializer_suffix: .yaml"]
    if principal:
        time = meta.get("Producers", {}).get("time", "1764460800.5")
        out += ["    Producers:", "        $0: /usr/local/bin/rrr-server",
                "        github.com/abh/rrrgo: v0.0.0-offline-stub", f"        time: {g_form(time)}"]
    if items:
        out.append("recent:")
        for e, p, t in items:
            out += [f"    - epoch: {g_form(e)}", f"      path: {p}", f"      type: {t}"]
    else:
        out.append("recent: []")
    with open(dst, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")
    return len(items)


def main():
    src, dst = sys.argv[1], sys.argv[2]
    os.makedirs(dst, exist_ok=True)
    principal = os.readlink(os.path.join(src, "RECENT.recent"))
    for name in sorted(os.listdir(src)):
        if re.match(r"^RECENT-\w+\.yaml$", name):
            n = convert(os.path.join(src, name), os.path.join(dst, name), name == principal)
            st = os.stat(os.path.join(src, name))
            os.utime(os.path.join(dst, name), (st.st_atime, st.st_mtime))
            print(f"{name}: {n} events", file=sys.stderr)
    link = os.path.join(dst, "RECENT.recent")
    if os.path.lexists(link):
        os.remove(link)
    os.symlink(principal, link)


if __name__ == "__main__":
    assert g_form("1764460800.5") == "1.7644608005e+09"
    assert g_form("1796247489.99797") == "1.79624748999797e+09"
    assert g_form("1796247490.0") == "1.79624749e+09"
    assert g_form("0.05") == "5e-02"
    main()
