#!/usr/bin/env python3
"""List Rust functions by length, longest first.

Usage: tools/fnlen.py [--min N] [--top N] [--no-tests] [PATH...]
(default paths: src crates bin; default --top 25)

A function's length is the number of lines from its `fn` line to its
closing brace, both included. The scanner knows Rust's comments, strings,
raw strings, byte strings and char literals (vs lifetimes), so braces
inside them do not count. `--no-tests` skips `#[cfg(test)]` modules and
the tests/ and benches/ directories, for a production-code report.
"""

import argparse
import os
import re
import sys

FN_RE = re.compile(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)")


def mask(src):
    """Return src with comments, strings and char literals blanked out
    (newlines kept), so braces and keywords can be found by position."""
    out = list(src)
    i, n = 0, len(src)

    def blank(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank(i, j)
            i = j
        elif re.match(r"b?r#*\"", src[i : i + 300]) and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            m = re.match(r"(b?r)(#*)\"", src[i:])
            hashes = m.group(2)
            start = i + len(m.group(0))
            end = src.find('"' + hashes, start)
            end = n if end < 0 else end + 1 + len(hashes)
            blank(i, end)
            i = end
        elif c == '"' or (c == "b" and src.startswith('b"', i) and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_"))):
            j = i + (2 if c == "b" else 1)
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            blank(i, j + 1)
            i = j + 1
        elif c == "'":
            # char literal ('a', '\n', '\u{1F600}', b'x' handled via the b) or lifetime ('a)
            m = re.match(r"'(\\(u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.)|[^\\'\n])'", src[i:])
            if m:
                blank(i, i + len(m.group(0)))
                i += len(m.group(0))
            else:
                i += 1
        else:
            i += 1
    return "".join(out)


def test_ranges(masked):
    """Byte ranges of `#[cfg(test)] mod … { … }` blocks."""
    ranges = []
    for m in re.finditer(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{", masked):
        end = match_brace(masked, m.end() - 1)
        ranges.append((m.start(), end))
    return ranges


def match_brace(masked, open_at):
    depth = 0
    for k in range(open_at, len(masked)):
        if masked[k] == "{":
            depth += 1
        elif masked[k] == "}":
            depth -= 1
            if depth == 0:
                return k
    return len(masked) - 1


def functions(path, skip_tests):
    src = open(path, encoding="utf-8", errors="replace").read()
    masked = mask(src)
    skip = test_ranges(masked) if skip_tests else []
    for m in FN_RE.finditer(masked):
        if any(a <= m.start() <= b for a, b in skip):
            continue
        # the body's brace: the first `{` or `;` at depth 0 of (), [], <> is hard;
        # a `;` before the `{` means a declaration without a body (trait item).
        k, paren = m.end(), 0
        while k < len(masked):
            ch = masked[k]
            if ch in "([":
                paren += 1
            elif ch in ")]":
                paren -= 1
            elif paren == 0 and ch in "{;":
                break
            k += 1
        if k >= len(masked) or masked[k] == ";":
            continue
        end = match_brace(masked, k)
        first = src.count("\n", 0, m.start()) + 1
        last = src.count("\n", 0, end) + 1
        yield (last - first + 1, path, first, m.group(1))


def rust_files(paths, skip_tests):
    for p in paths:
        if os.path.isfile(p):
            yield p
            continue
        for root, dirs, files in os.walk(p):
            dirs[:] = sorted(d for d in dirs if d != "target" and not (skip_tests and d in ("tests", "benches")))
            for f in sorted(files):
                if f.endswith(".rs"):
                    yield os.path.join(root, f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--min", type=int, default=0, help="only functions of at least N lines")
    ap.add_argument("--top", type=int, default=25, help="show the N longest (0: all)")
    ap.add_argument("--no-tests", action="store_true", help="production code only")
    ap.add_argument("paths", nargs="*", default=["src", "crates", "bin"])
    a = ap.parse_args()
    rows = [f for p in rust_files(a.paths, a.no_tests) for f in functions(p, a.no_tests)]
    rows = sorted((r for r in rows if r[0] >= a.min), key=lambda r: (-r[0], r[1], r[2]))
    if a.top:
        rows = rows[: a.top]
    for length, path, line, name in rows:
        print(f"{length:5d}  {path}:{line}  {name}")


if __name__ == "__main__":
    sys.exit(main())
