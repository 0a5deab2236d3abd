#!/usr/bin/env python3
"""Cuts the OpenMetrics parser test suite into one conformance table.

    scripts/cut-openmetrics-tests.py OPENMETRICS_CHECKOUT SOURCE_NOTE > crates/promtext/tests/conformance/openmetrics.tsv

Reads `tests/testdata/parsers/*/test.json` of prometheus/OpenMetrics (`{"type": "text", "file":
"metrics", "shouldParse": …}`) and the file each names. Writes one line per text case: the case's
name, `valid` or `invalid` (its shouldParse), and the page as a JSON string.
"""
import glob
import json
import os
import sys


def main():
    root, note = sys.argv[1], sys.argv[2]
    print(f"# {note}")
    print("# case\toutcome\tpage (JSON string)")
    for test in sorted(glob.glob(os.path.join(root, 'tests/testdata/parsers/*/test.json'))):
        spec = json.load(open(test, encoding='utf-8'))
        if spec.get('type') != 'text':
            continue
        case = os.path.basename(os.path.dirname(test))
        page = open(os.path.join(os.path.dirname(test), spec['file']), 'rb').read()
        try:
            text = page.decode('utf-8')
        except UnicodeDecodeError:
            text = page.decode('latin-1')
            case += '~latin1'
        outcome = 'valid' if spec['shouldParse'] else 'invalid'
        print(f"{case}\t{outcome}\t{json.dumps(text, ensure_ascii=True)}")


if __name__ == '__main__':
    main()
