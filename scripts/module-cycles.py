#!/usr/bin/env python3
"""Module cycles inside each crate: files that reach each other through `crate::`, `super::`
and `self::` paths (issue 47, docs/ARCHITECTURE.md "Keeping the house").

How it reads: every `crates/*/src/**/*.rs` file is a module (`lib.rs`/`main.rs` the root,
`a.rs` and `a/mod.rs` the module `a`, `a/b.rs` the module `a::b`). A path the file names —
in a `use` (groups `{…}` expanded) or in code — is resolved to the deepest module file that
exists along it; a name a module re-exports (`pub use x::Y`) is followed to where it is
defined, so going through `lib.rs` for `crate::Y` is an edge to `Y`'s own file. `mod x;`
declarations are structure, not use, and are not edges; test modules (`#[cfg(test)]` to the end
of the file, and files declared `#[cfg(test)] mod x;`) are left out, as `fn-sizes.py` does.
A module and its ancestors (`super::`, the parent calling what it declares) are structure, not
edges. A cycle is a strongly connected component of the rest; the house allows none of three
files or more (two files that use each other are allowed).

    scripts/module-cycles.py           # every component of 2+ files, per crate
    scripts/module-cycles.py --check   # exit 1 if any component has 3 or more files
    scripts/module-cycles.py --edges C # the edges inside crate C's components, to untangle them
    scripts/module-cycles.py --self-test  # the reading above on small crates made for it
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
LIMIT = 3


def _fn_sizes():
    """scripts/fn-sizes.py as a module: its `strip` (comments, strings and chars blanked) is the
    one this reading uses too."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fn-sizes.py")
    spec = importlib.util.spec_from_file_location("fn_sizes", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


strip = _fn_sizes().strip


def without_tests(code):
    m = re.search(r"^\s*#\[cfg\(test\)\]\s*\n\s*(pub(\(\w+\))?\s+)?mod\s+\w+\s*\{", code, re.M)
    return code[: m.start()] if m else code


def modules(src_dir):
    """{module path tuple: file} of one crate, test-module files left out."""
    mods, test_files = {}, set()
    for dirpath, _, names in os.walk(src_dir):
        for name in names:
            if not name.endswith(".rs"):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, src_dir)[:-3].split(os.sep)
            if rel[-1] in ("lib", "main") and len(rel) == 1:
                key = ()
            elif rel[-1] == "mod":
                key = tuple(rel[:-1])
            else:
                key = tuple(rel)
            if rel[0] == "bin":
                continue
            mods[key] = path
    for key, path in mods.items():
        code = strip(open(path, encoding="utf-8").read())
        for m in re.finditer(r"#\[cfg\(test\)\]\s*(pub(\(\w+\))?\s+)?mod\s+(\w+)\s*;", code):
            test_files.add(key + (m.group(3),))
    return {k: v for k, v in mods.items() if not any(k[: len(t)] == t for t in test_files)}


def expand(tree):
    """`a::{b, c::{d, e}}` → ['a::b', 'a::c::d', 'a::c::e'] (renames and globs trimmed)."""
    tree = re.sub(r"\s+", "", re.sub(r"\s+as\s+\w+", "", tree))
    i = tree.find("{")
    if i < 0:
        return [tree.replace("::*", "")]
    prefix, depth, parts, start = tree[:i], 0, [], i + 1
    for j in range(i, len(tree)):
        c = tree[j]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                parts.append(tree[start:j])
                break
        elif c == "," and depth == 1:
            parts.append(tree[start:j])
            start = j + 1
    return [p for part in parts if part for p in expand(prefix + part)]


def absolute(key, path, parent):
    """A path as written in module `key` → an absolute tuple, or None outside the crate."""
    segs = [s for s in path.split("::") if s]
    if not segs:
        return None
    if segs[0] == "crate":
        base, segs = [], segs[1:]
    elif segs[0] in ("super", "self"):
        base = list(key if not parent else key)
        while segs and segs[0] in ("super", "self"):
            if segs[0] == "super":
                base = base[:-1]
            segs = segs[1:]
    else:
        return None
    return tuple(base) + tuple(segs)


def graph(src_dir):
    mods = modules(src_dir)
    uses, exports = {}, {}
    for key, path in mods.items():
        code = without_tests(strip(open(path, encoding="utf-8").read()))
        found = []
        for m in re.finditer(r"\b(pub(\([^)]*\))?\s+)?use\s+([^;]+);", code):
            public = bool(m.group(1)) and "(" not in (m.group(1) or "")
            for p in expand(m.group(3)):
                a = absolute(key, p, False)
                if a is None and not p.startswith(("std", "core", "alloc", "::")):
                    # `use x::Y` with x a child module of this one (2018 paths)
                    first = p.split("::")[0]
                    if key + (first,) in mods:
                        a = key + tuple(p.split("::"))
                if a is None:
                    continue
                found.append(a)
                if public:
                    exports[key + (a[-1],)] = a
        # Paths in code (a `use` is read above: its `crate::a::{…}` is not an edge to `a`).
        code = re.sub(r"\buse\s+[^;]+;", "", code)
        for m in re.finditer(r"\b((?:crate|super|self)(?:::\w+)+)", code):
            a = absolute(key, m.group(1), False)
            if a is not None:
                found.append(a)
        uses[key] = found

    def resolve(a, seen=()):
        if a in exports and a not in seen:
            return resolve(exports[a], seen + (a,))
        for n in range(len(a), -1, -1):
            if a[:n] in mods:
                return a[:n]
        return None

    edges = {k: set() for k in mods}
    for key, found in uses.items():
        for a in found:
            t = resolve(a)
            # A module and its own ancestors use each other by construction (`super::`, the
            # parent calling what it declares): those pairs are structure, not a cycle.
            if t is not None and t[: len(key)] != key and key[: len(t)] != t:
                edges[key].add(t)
    return mods, edges


def components(nodes, edges):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def name(key):
    return "::".join(key) or "(root)"


def self_test():
    """A cycle through a grouped `use`, a re-export and a path in code is found; a parent and
    its children, a test module, and a `use` of a re-exported leaf are not cycles."""
    import tempfile

    cases = {
        "three": ({
            "lib.rs": "mod a; mod b; mod c;",
            "a.rs": "use crate::{b::{self, B}};\nfn f() { b::g(); }",
            "b.rs": "use crate::c::alias_map; pub struct B; pub fn g() { crate::c::h(); }",
            "c.rs": "pub use crate::a::A as Z;\npub fn h() {}",
        }, [["a", "b", "c"]]),
        "through a re-export": ({
            "lib.rs": "mod a; mod b; mod c; pub use c::C;",
            "a.rs": "use crate::C;",
            "b.rs": "use crate::a::A;",
            "c.rs": "pub struct C; fn f() { let _ = crate::b::x; }",
        }, [["a", "b", "c"]]),
        "parent, children, tests and a leaf": ({
            "lib.rs": "mod p; mod leaf; mod user;",
            "p/mod.rs": "mod x; mod y; pub use crate::leaf::L;\nfn f() { x::g(); y::g(); }",
            "p/x.rs": "use super::L; pub fn g() {}",
            "p/y.rs": "use super::x; pub fn g() {}",
            "leaf.rs": "pub struct L;\n#[cfg(test)]\nmod tests {\n use crate::user::U; use crate::p::L;\n}",
            "user.rs": "use crate::p::L; pub struct U;",
        }, []),
    }
    failed = 0
    for what, (files, want) in cases.items():
        with tempfile.TemporaryDirectory() as d:
            for rel, text in files.items():
                os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
                open(os.path.join(d, rel), "w").write(text)
            mods, edges = graph(d)
            got = [[name(k) for k in c] for c in components(mods, edges) if len(c) >= LIMIT]
            ok = got == want
            failed += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {what}: {got}")
    sys.exit(1 if failed else 0)


def main():
    args = sys.argv[1:]
    if "--self-test" in args:
        self_test()
    check = "--check" in args
    show_edges = args[args.index("--edges") + 1] if "--edges" in args else None
    crates_dir = os.path.join(ROOT, "crates")
    bad = 0
    for crate in sorted(os.listdir(crates_dir)):
        src = os.path.join(crates_dir, crate, "src")
        if not os.path.isdir(src):
            continue
        mods, edges = graph(src)
        for comp in components(mods, edges):
            if len(comp) < 2:
                continue
            over = len(comp) >= LIMIT
            bad += over
            print(f"{crate}: {len(comp)} files{' (over the limit)' if over else ''}: {', '.join(name(c) for c in comp)}")
            if show_edges == crate:
                members = set(comp)
                for c in comp:
                    for t in sorted(edges[c] & members):
                        print(f"    {name(c)} -> {name(t)}")
    if check and bad:
        print(f"module-cycles: {bad} cycle(s) of {LIMIT} files or more; untangle them (--edges CRATE lists the edges)")
        sys.exit(1)
    if check:
        print(f"module-cycles: no cycle of {LIMIT} files or more")


if __name__ == "__main__":
    main()
