#!/usr/bin/env python3
"""Function sizes by non-blank body lines, per crate and for the workspace.

How it counts: every `fn` item with a body in `crates/*/src/**/*.rs`, test modules
(`#[cfg(test)]` items) left out. A body is the lines strictly between the line holding the
opening `{` and the line holding its matching `}`; blank lines and lines that are only a
comment are not counted. Strings, chars and comments are skipped when matching braces.

    scripts/fn-sizes.py            # median / p90 / max per crate, then the workspace
    scripts/fn-sizes.py --over 26  # every function over 26 lines, largest first
    scripts/fn-sizes.py --check    # exit 1 unless the workspace keeps the bars below

Files that are test modules (declared `#[cfg(test)] mod name;`) are left out like inline ones.
"""
import os
import re
import statistics
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

# The bars (docs/ARCHITECTURE.md, "Keeping the house"): workspace median and p90 of body lines,
# and the longest function allowed outside TABLES.
MEDIAN, P90, LONGEST = 8, 26, 80
# Functions that are a data table written as code, (path, name): why they may be long.
TABLES = {}


def strip(src):
    """Source with comments, strings and chars blanked (newlines kept)."""
    out = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
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
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', src[i:i + 10]) and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            m = re.match(r'r(#*)"', src[i:])
            close = '"' + m.group(1)
            j = src.find(close, i + len(m.group(0)))
            j = n if j < 0 else j + len(close)
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            j += 1
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif c == "'":
            m = re.match(r"'(\\.[^']*|[^\\'])'", src[i:])
            if m:
                out.append(" " * len(m.group(0)))
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def match_brace(s, i):
    depth = 0
    for j in range(i, len(s)):
        if s[j] == "{":
            depth += 1
        elif s[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(s) - 1


def test_spans(s):
    spans = []
    for m in re.finditer(r"#\[cfg\(test\)\]", s):
        j = m.end()
        # the item: up to its first `{` (a module or fn) or `;`
        k = min([x for x in (s.find("{", j), s.find(";", j)) if x >= 0] or [len(s)])
        if s[k:k + 1] == "{":
            spans.append((m.start(), match_brace(s, k)))
    return spans


def test_module_files(path, s):
    """Files of the modules `path` declares under `#[cfg(test)]`."""
    d = os.path.dirname(path)
    stem = os.path.splitext(os.path.basename(path))[0]
    if stem not in ("lib", "main", "mod"):
        d = os.path.join(d, stem)
    out = set()
    for m in re.finditer(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", s):
        out.add(os.path.normpath(os.path.join(d, m.group(1) + ".rs")))
        out.add(os.path.normpath(os.path.join(d, m.group(1), "mod.rs")))
    return out


def functions(path):
    src = open(path, encoding="utf-8").read()
    s = strip(src)
    lines = src.split("\n")
    skip = test_spans(s)
    for m in re.finditer(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)", s):
        if any(a <= m.start() <= b for a, b in skip):
            continue
        # the signature ends at the first `{` or `;` outside parentheses/brackets
        depth, j = 0, m.end()
        while j < len(s):
            ch = s[j]
            if ch in "([":
                depth += 1
            elif ch in ")]":
                depth -= 1
            elif depth <= 0 and ch in "{;":
                break
            j += 1
        if j >= len(s) or s[j] == ";":
            continue
        end = match_brace(s, j)
        a, b = s.count("\n", 0, j), s.count("\n", 0, end)
        body = [ln for ln in lines[a + 1:b] if ln.strip() and not ln.strip().startswith("//")]
        yield m.group(1), a + 1, len(body)


def pct(xs, p):
    xs = sorted(xs)
    k = (len(xs) - 1) * p
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def main():
    over = None
    if "--over" in sys.argv:
        over = int(sys.argv[sys.argv.index("--over") + 1])
    crates = sorted(os.listdir(os.path.join(ROOT, "crates")))
    every, rows = [], []
    for c in crates:
        sizes = []
        files = []
        for d, _, fs in os.walk(os.path.join(ROOT, "crates", c, "src")):
            files += [os.path.normpath(os.path.join(d, f)) for f in sorted(fs) if f.endswith(".rs")]
        tests = set()
        for p in files:
            tests |= test_module_files(p, strip(open(p, encoding="utf-8").read()))
        for p in (p for p in files if p not in tests):
            for name, line, n in functions(p):
                sizes.append(n)
                every.append((n, os.path.relpath(p, ROOT), line, name))
        if sizes:
            rows.append((c, len(sizes), statistics.median(sizes), pct(sizes, 0.9), max(sizes)))
    if over is not None:
        for n, p, line, name in sorted(every, reverse=True):
            if n > over:
                print(f"{n:5} {p}:{line} {name}")
        return
    print(f"{'crate':10} {'fns':>5} {'median':>7} {'p90':>6} {'max':>5}")
    for c, k, med, p90, mx in rows:
        print(f"{c:10} {k:5} {med:7.0f} {p90:6.0f} {mx:5}")
    sizes = [n for n, *_ in every]
    print(f"{'workspace':10} {len(sizes):5} {statistics.median(sizes):7.0f} {pct(sizes, 0.9):6.0f} {max(sizes):5}")
    long = [(n, p, line, name) for n, p, line, name in every if n > LONGEST and (p, name) not in TABLES]
    print(f"over {LONGEST} lines (tables left out): {len(long)}")
    if "--check" in sys.argv:
        med, p90 = statistics.median(sizes), pct(sizes, 0.9)
        bad = []
        if med > MEDIAN:
            bad.append(f"median {med:.0f} > {MEDIAN}")
        if p90 > P90:
            bad.append(f"p90 {p90:.0f} > {P90}")
        bad += [f"{p}:{line} {name} has {n} lines > {LONGEST}" for n, p, line, name in long]
        for b in bad:
            print(f"fn-sizes: {b}: split it along its seams", file=sys.stderr)
        sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
