#!/usr/bin/env python3
"""Cuts the expressions of Prometheus's own PromQL tests into conformance tables.

    scripts/cut-promql-tests.py PARSE_TEST_GO SOURCE_NOTE > crates/check/tests/conformance/promql-parser.tsv
    scripts/cut-promql-tests.py --testdata DIR SOURCE_NOTE > crates/check/tests/conformance/promql-testdata.tsv
    scripts/cut-promql-tests.py --promparse PROMPARSE_TEST_GO SOURCE_NOTE > crates/promtext/tests/conformance/promparse.tsv
    scripts/cut-promql-tests.py --omparse OPENMETRICSPARSE_TEST_GO SOURCE_NOTE > crates/promtext/tests/conformance/omparse.tsv
    scripts/cut-promql-tests.py --expfmt TEXT_PARSE_TEST_GO SOURCE_NOTE > crates/promtext/tests/conformance/expfmt.tsv

The second form reads the engine tests (`promql/promqltest/testdata/*.test`): every `eval`
expression that no `expect fail` follows is `valid` (each distinct expression once).

Reads the `testExpr` table of prometheus/prometheus `promql/parser/parse_test.go`: each case's
`input` (a Go string literal, interpreted or raw) and whether it sets `fail: true`. Writes one
line per case: `valid` or `invalid`, a tab, and the input as a JSON string. The expected outcome
is the test's own; the test parses with experimental functions, duration expressions and
extended range selectors enabled (TestParseExpressions).
"""
import json
import re
import sys


def go_string(text, at):
    """The Go string literal starting at text[at]; returns (value, end)."""
    q = text[at]
    if q == '`':
        end = text.index('`', at + 1)
        return text[at + 1:end], end + 1
    assert q == '"', text[at:at + 20]
    out, i = [], at + 1
    simple = {'a': '\a', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v',
              '\\': '\\', "'": "'", '"': '"'}
    raw = bytearray()

    def flush():
        if raw:
            out.append(raw.decode('utf-8', errors='surrogateescape'))
            raw.clear()

    while text[i] != '"':
        c = text[i]
        if c != '\\':
            flush()
            out.append(c)
            i += 1
            continue
        e = text[i + 1]
        if e in simple:
            flush()
            out.append(simple[e])
            i += 2
        elif e == 'x':
            raw.append(int(text[i + 2:i + 4], 16))
            i += 4
        elif e in '01234567':
            raw.append(int(text[i + 1:i + 4], 8))
            i += 4
        elif e == 'u':
            flush()
            out.append(chr(int(text[i + 2:i + 6], 16)))
            i += 6
        elif e == 'U':
            flush()
            out.append(chr(int(text[i + 2:i + 10], 16)))
            i += 10
        else:
            raise ValueError(f"escape \\{e} at {i}")
    flush()
    return ''.join(out), i + 1


def testdata(folder, note):
    import glob
    import os
    seen, out = set(), []
    for path in sorted(glob.glob(os.path.join(folder, '*.test'))):
        lines = open(path, encoding='utf-8').read().split('\n')
        for k, line in enumerate(lines):
            m = re.match(r'^\s*eval(?:_\w+)?\s+(?:instant at \S+|range from \S+ to \S+ step \S+)\s+(.*)$', line)
            if not m:
                continue
            following = lines[k + 1].strip() if k + 1 < len(lines) else ''
            if following.startswith('expect fail') or line.strip().startswith('eval_fail'):
                continue
            expr = m.group(1).strip()
            if expr and expr not in seen:
                seen.add(expr)
                out.append(expr)
    print(f"# {note}")
    print("# outcome\tinput (JSON string)")
    for expr in out:
        print("valid\t" + json.dumps(expr, ensure_ascii=True))


def valid_page(src, test):
    """The page of a test that builds one valid `input` (`input := …`, `+ …`, `input += …`)."""
    start = src.index(f'func {test}(t *testing.T) {{')
    at = src.index('input := ', start) + len('input := ')
    page, after = go_string(src, at)
    while True:
        rest = src[after:].lstrip()
        if rest.startswith('+') and not rest.startswith('+='):
            nxt = after + src[after:].index('+') + 1
        elif rest.startswith('input += '):
            nxt = after + src[after:].index('input += ') + len('input += ')
        else:
            return page
        while src[nxt] in ' \t\n':
            nxt += 1
        more, after = go_string(src, nxt)
        page += more


def textparse(path, note, valid, cases):
    """The pages of a model/textparse test file: each test of `valid` builds one valid page; each
    of `cases` is a table of `input`/`err` (invalid where `err` is set)."""
    src = open(path, encoding='utf-8').read()
    print(f"# {note}")
    print("# case\toutcome\tpage (JSON string)")
    for test in valid:
        print(f"{test}\tvalid\t" + json.dumps(valid_page(src, test), ensure_ascii=True))
    for test in cases:
        start = src.index(f'func {test}(t *testing.T) {{')
        end = src.find('\nfunc ', start)
        block = src[start:end if end >= 0 else len(src)]
        for k, m in enumerate(re.finditer(r'\binput:\s*', block)):
            value, after = go_string(block, m.end())
            err = re.match(r'\s*,\s*err:\s*', block[after:])
            text, _ = go_string(block, after + err.end())
            try:
                value.encode('utf-8')
            except UnicodeEncodeError:
                continue
            # `io.EOF` is how a parser says it read the whole page.
            outcome = 'invalid' if text and text != 'EOF' else 'valid'
            print(f"{test}/{k}\t{outcome}\t" + json.dumps(value, ensure_ascii=True))


def expfmt(path, note):
    """The pages of prometheus/common expfmt/text_parse_test.go: testTextParse's inputs (valid)
    and testTextParseError's (invalid where `errUTF8` is set: the parser as Prometheus 3 runs it,
    with UTF-8 names). Inputs that are not UTF-8 are left out (a JSON string cannot hold them)."""
    src = open(path, encoding='utf-8').read()
    print(f"# {note}")
    print("# case\toutcome\tpage (JSON string)")
    for test in ('testTextParse', 'testTextParseError'):
        start = src.index(f'func {test}(t testing.TB) {{')
        end = src.find('\nfunc ', start)
        block = src[start:end if end >= 0 else len(src)]
        for k, m in enumerate(re.finditer(r'\bin:\s*', block)):
            value, after = go_string(block, m.end())
            outcome = 'valid'
            if test == 'testTextParseError':
                err = re.match(r'\s*,\s*errUTF8:\s*', block[after:])
                text, _ = go_string(block, after + err.end()) if err else ('', 0)
                outcome = 'invalid' if text else 'valid'
            try:
                value.encode('utf-8')
            except UnicodeEncodeError:
                continue
            print(f"{test}/{k}\t{outcome}\t" + json.dumps(value, ensure_ascii=True))


def promparse(path, note):
    """model/textparse/promparse_test.go: TestPromParse's page (valid), and the cases of
    TestPromParseErrors and TestPromNullByteHandling (invalid where they expect an error)."""
    textparse(path, note, ['TestPromParse'], ['TestPromParseErrors', 'TestPromNullByteHandling'])


def omparse(path, note):
    """model/textparse/openmetricsparse_test.go: the pages of TestOpenMetricsParse and its UTF-8
    twin (valid), and the cases of TestOpenMetricsParseErrors and TestOMNullByteHandling."""
    textparse(path, note, ['TestOpenMetricsParse', 'TestOpenMetricsParse_UTF8'],
              ['TestOpenMetricsParseErrors', 'TestOMNullByteHandling'])


def main():
    if sys.argv[1] == '--omparse':
        return omparse(sys.argv[2], sys.argv[3])
    if sys.argv[1] == '--expfmt':
        return expfmt(sys.argv[2], sys.argv[3])
    if sys.argv[1] == '--promparse':
        return promparse(sys.argv[2], sys.argv[3])
    if sys.argv[1] == '--testdata':
        return testdata(sys.argv[2], sys.argv[3])
    src = open(sys.argv[1], encoding='utf-8').read()
    note = sys.argv[2]
    start = src.index('var testExpr = []struct {')
    end = src.index('\nfunc ', start)
    block = src[start:end]
    inputs = [m.end() for m in re.finditer(r'\binput:\s*', block)]
    print(f"# {note}")
    print("# outcome\tinput (JSON string)")
    skipped = 0
    for k, at in enumerate(inputs):
        if block[at] not in '"`':
            skipped += 1  # built by code (fmt.Sprintf, strings.Repeat): not data
            continue
        value, after = go_string(block, at)
        if not re.match(r'\s*,', block[after:]):
            skipped += 1  # a literal joined to more by code
            continue
        # The rest of this case: up to the next case's input.
        rest = block[after:inputs[k + 1] if k + 1 < len(inputs) else len(block)]
        fail = re.search(r'\bfail:\s*true\b', rest) is not None
        try:
            value.encode('utf-8')
        except UnicodeEncodeError:
            skipped += 1  # bytes that are not UTF-8: a Rust &str cannot hold them
            continue
        line = json.dumps(value, ensure_ascii=True)
        print(("invalid" if fail else "valid") + "\t" + line)
    print(f"# {skipped} inputs left out (built by code, or not UTF-8)", file=sys.stderr)


if __name__ == '__main__':
    main()
