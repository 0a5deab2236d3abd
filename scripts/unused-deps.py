#!/usr/bin/env python3
"""Fail when a crate declares a dependency its code never names.

For every `crates/*/Cargo.toml`, each entry of `[dependencies]` must be named by the crate's
code (`src/`, `build.rs`), and each entry of `[dev-dependencies]` by any of its code (`src/`,
`tests/`, `benches/`, `examples/`). "Named" means the crate's Rust name appears as a path
(`name::`), in a `use`, or as a macro namespace. A dependency that is needed without being named
(e.g. only for its features) goes in ALLOWED with the reason.

    scripts/unused-deps.py        # prints each unused dependency; exit 1 if any
"""
import os
import re
import sys
import tomllib

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

# (crate, dependency): why it is needed though no code names it.
ALLOWED = {}


def sources(crate_dir, parts):
    text = []
    for part in parts:
        base = os.path.join(crate_dir, part)
        if os.path.isfile(base):
            text.append(open(base, encoding="utf-8").read())
            continue
        for d, _, fs in os.walk(base):
            for f in fs:
                if f.endswith(".rs"):
                    text.append(open(os.path.join(d, f), encoding="utf-8").read())
    return "\n".join(text)


def named(code, dep):
    ident = dep.replace("-", "_")
    return re.search(rf"\b{re.escape(ident)}\s*::|\buse\s+{re.escape(ident)}\b|\bextern\s+crate\s+{re.escape(ident)}\b", code)


def main():
    unused = []
    crates = os.path.join(ROOT, "crates")
    for name in sorted(os.listdir(crates)):
        d = os.path.join(crates, name)
        manifest = os.path.join(d, "Cargo.toml")
        if not os.path.isfile(manifest):
            continue
        toml = tomllib.load(open(manifest, "rb"))
        package = toml["package"]["name"]
        lib = sources(d, ["src", "build.rs"])
        every = lib + sources(d, ["tests", "benches", "examples"])
        for section, code in (("dependencies", lib), ("dev-dependencies", every)):
            for dep, spec in toml.get(section, {}).items():
                real = spec.get("package", dep) if isinstance(spec, dict) else dep
                if (package, dep) in ALLOWED or named(code, dep) or named(code, real):
                    continue
                unused.append(f"{package}: [{section}] {dep} is never named in its code")
    for line in unused:
        print(line)
    if unused:
        print(f"{len(unused)} unused dependencies: remove them, or add them to ALLOWED in "
              f"scripts/unused-deps.py with the reason", file=sys.stderr)
        return 1
    print("no unused dependencies")
    return 0


if __name__ == "__main__":
    sys.exit(main())
