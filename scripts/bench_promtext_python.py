#!/usr/bin/env python3
"""Parses a page with prometheus_client's text parser and prints its median MB/s.

Usage: bench_promtext_python.py PAGE [--rounds N] [--min-seconds S]

The reference point for crates/promtext/benches/parse.rs: same file, same "parse everything"
work (every family and sample materialised). 1 MB = 10^6 bytes. Needs `pip install
prometheus_client`. If the parser rejects the page, the error is printed and the exit code is 2.
"""
import argparse
import statistics
import sys
import time


def parse_all(text, parse):
    families = 0
    samples = 0
    for family in parse(text):
        families += 1
        samples += len(family.samples)
    return families, samples


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("page")
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--min-seconds", type=float, default=2.0, help="keep going until this much time passed")
    args = ap.parse_args()
    try:
        from importlib.metadata import version

        from prometheus_client.parser import text_string_to_metric_families
        pc_version = version("prometheus_client")
    except ImportError:
        print("python: prometheus_client is not installed (pip install prometheus_client)", file=sys.stderr)
        return 2
    with open(args.page, encoding="utf-8") as f:
        text = f.read()
    size = len(text.encode("utf-8"))
    try:
        families, samples = parse_all(text, text_string_to_metric_families)
    except Exception as e:  # the parser raises ValueError on lines it rejects
        print(f"python: prometheus_client {pc_version} rejected the page: {type(e).__name__}: {e}")
        return 2
    rates = []
    start = time.perf_counter()
    while len(rates) < args.rounds or time.perf_counter() - start < args.min_seconds:
        t0 = time.perf_counter()
        parse_all(text, text_string_to_metric_families)
        rates.append(size / (time.perf_counter() - t0) / 1e6)
    print(f"python page: {size} bytes, {families} families, {samples} samples")
    print(f"python prometheus_client {pc_version}: {statistics.median(rates):.2f} MB/s median of {len(rates)} rounds "
          f"(best {max(rates):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
