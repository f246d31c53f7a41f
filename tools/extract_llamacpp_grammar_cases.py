#!/usr/bin/env python3
"""Extracts the grammar test cases of llama.cpp's tests/test-grammar-integration.cpp
(test_grammar / test_schema calls: a grammar or JSON Schema, strings llama.cpp
matches, strings it does not) into tests/golden/constrain/llamacpp_grammar_cases.json.

    tools/extract_llamacpp_grammar_cases.py PATH/TO/llama.cpp

reads PATH/TO/llama.cpp/tests/test-grammar-integration.cpp, and copies the example
grammars of PATH/TO/llama.cpp/grammars/*.gbnf to tests/golden/constrain/grammars/.

The file is in the llama-cpp-python source distribution (vendor/llama.cpp), the
same one tools/fetch_llamacpp_vocabs.sh downloads. Strings with token markers
(token(id)) are left out: kiln's grammars are over bytes.
"""
import json
import re
import sys


def parse_literal(src, i):
    """Parses one C++ string literal at src[i]; returns (bytes, next index)."""
    if src.startswith('R"', i):
        j = src.index('(', i)
        delim = src[i + 2:j]
        end = src.index(')' + delim + '"', j)
        return src[j + 1:end].encode(), end + len(delim) + 2
    if src.startswith('u8"', i):
        i += 2
    assert src[i] == '"', src[i:i + 40]
    out = bytearray()
    i += 1
    simple = {'n': 10, 't': 9, 'r': 13, '\\': 92, '"': 34, "'": 39, '0': 0, 'a': 7, 'b': 8, 'f': 12, 'v': 11, '?': 63}
    while src[i] != '"':
        c = src[i]
        if c == '\\':
            e = src[i + 1]
            if e == 'x':
                m = re.match(r'[0-9a-fA-F]+', src[i + 2:])
                out.append(int(m.group(0), 16) & 0xFF)
                i += 2 + len(m.group(0))
                continue
            if e == 'u':
                out += chr(int(src[i + 2:i + 6], 16)).encode()
                i += 6
                continue
            if e == 'U':
                out += chr(int(src[i + 2:i + 10], 16)).encode()
                i += 10
                continue
            out.append(simple[e])
            i += 2
            continue
        out += c.encode()
        i += 1
    return bytes(out), i + 1


def skip_space(src, i):
    while i < len(src):
        if src[i].isspace():
            i += 1
        elif src.startswith('//', i):
            i = src.index('\n', i)
        elif src.startswith('/*', i):
            i = src.index('*/', i) + 2
        else:
            break
    return i


def parse_strings(src, i):
    """Adjacent literals concatenated; None if the argument is not literals only."""
    parts = []
    while True:
        i = skip_space(src, i)
        if src.startswith('R"', i) or src[i] == '"' or src.startswith('u8"', i):
            s, i = parse_literal(src, i)
            parts.append(s)
        else:
            break
    return (b''.join(parts) if parts else None), i


def parse_list(src, i):
    i = skip_space(src, i)
    assert src[i] == '{'
    i += 1
    items = []
    while True:
        i = skip_space(src, i)
        if src[i] == '}':
            return items, i + 1
        s, j = parse_strings(src, i)
        if s is None:  # an expression such as token(...) + "..."
            depth = 0
            while not (depth == 0 and src[j] in ',}'):
                if src[j] in '({':
                    depth += 1
                elif src[j] in ')}':
                    depth -= 1
                elif src[j] == '"':
                    _, j = parse_literal(src, j)
                    continue
                j += 1
            items.append(None)
        else:
            j = skip_space(src, j)
            items.append(s)
        if src[j] == ',':
            j += 1
        i = j


def main():
    import glob
    import os
    import shutil
    root = sys.argv[1]
    os.makedirs('tests/golden/constrain/grammars', exist_ok=True)
    for g in sorted(glob.glob(os.path.join(root, 'grammars', '*.gbnf'))):
        shutil.copy(g, 'tests/golden/constrain/grammars/')
    src = open(os.path.join(root, 'tests', 'test-grammar-integration.cpp'), encoding='utf-8').read()
    cases = []
    for m in re.finditer(r'\b(test_grammar|test_schema)\(\s*\n', src):
        kind = 'gbnf' if m.group(1) == 'test_grammar' else 'schema'
        i = m.end()
        desc, i = parse_strings(src, i)
        i = skip_space(src, i)
        assert src[i] == ','
        text, i = parse_strings(src, i + 1)
        i = skip_space(src, i)
        assert src[i] == ','
        passing, i = parse_list(src, i + 1)
        i = skip_space(src, i)
        assert src[i] == ','
        failing, i = parse_list(src, i + 1)
        if text is None:
            continue

        def keep(xs):
            return [x.decode('utf-8', 'surrogateescape') for x in xs if x is not None and b'\xff' not in x]

        cases.append({'kind': kind, 'description': desc.decode(), 'text': text.decode(),
                      'passing': keep(passing), 'failing': keep(failing)})
    out = 'tests/golden/constrain/llamacpp_grammar_cases.json'
    with open(out, 'w', encoding='utf-8') as f:
        json.dump({'source': 'llama.cpp tests/test-grammar-integration.cpp (llama-cpp-python 0.3.36 sdist)',
                   'cases': cases}, f, indent=1, ensure_ascii=False)
        f.write('\n')
    print(f'{out}: {len(cases)} cases')


if __name__ == '__main__':
    main()
