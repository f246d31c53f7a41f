#!/usr/bin/env python3
"""Differential test: random Jinja expressions rendered by kiln and by jinja2 in Hugging Face's environment.

Generates expressions from a small grammar (literals, context values, operators, filters, tests,
methods, slicing, conditionals), renders each with `kiln template` and with jinja2, and reports the
cases where the outputs differ or only one side raises. A development tool (CI has no oracle); the
cases it finds become snippets in tools/jinja_fixtures.py.

  python tools/jinja_differential.py [--kiln build/kiln] [-n 2000] [--seed 1]
"""

import argparse
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import jinja_fixtures as fx  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

CONTEXT = {
    "s": "Héllo, World ✓ ",
    "t": "a,b,,c",
    "n": 7,
    "f": 2.5,
    "z": 0,
    "l": [3, 1, 2, 1],
    "w": ["b", "A", "c", "a"],
    "d": {"b": 2, "a": 1, "C": 3},
    "users": [{"name": "x", "age": 3}, {"name": "y", "age": 1}, {"name": "z", "age": 3}],
    "none_value": None,
    "flag": True,
}

LITERALS = ["0", "1", "-3", "2.5", "1e3", "0.1", "''", "'abc'", "'A b C'", "' pad '", "'é✓'", "true", "false", "none",
            "[]", "[1, 2, 3]", "['x', 'y']", "{}", "{'k': 1, 'j': [2]}", "(1, 2)", "'%s-%d'", "'{} {}'", "'x\\ny'"]
NAMES = ["s", "t", "n", "f", "z", "l", "w", "d", "users", "none_value", "flag", "missing"]
BINOPS = ["+", "-", "*", "/", "//", "%", "**", "~", "==", "!=", "<", ">", "<=", ">=", "in", "not in", "and", "or"]
FILTERS = ["trim", "upper", "lower", "length", "first", "last", "join(',')", "list", "sort", "unique|list", "reverse|list",
           "tojson", "string", "default('D')", "default('D', true)", "replace('a', 'Z')", "title", "capitalize", "int",
           "float", "abs", "round", "round(1)", "sum", "min", "max", "dictsort", "items|list", "map(attribute='name')|list",
           "select('odd')|list", "reject('even')|list", "batch(2)|list", "indent(2)", "center(9)", "truncate(5, true, '..', 0)",
           "wordcount", "format(1, 2)", "first|string", "selectattr('age', 'eq', 3)|list", "sort(attribute='age')|map(attribute='name')|join",
           "tojson(indent=1)", "tojson(sort_keys=true)", "count", "e", "safe", "list|length", "string|length", "trim|length"]
METHODS = ["split(',')", "split()", "strip()", "startswith('H')", "endswith(' ')", "find('l')", "replace('l', 'L')",
           "upper()", "lower()", "format(1, 2)", "items()|list", "keys()|list", "get('a')", "get('q', 5)", "count('l')",
           "title()", "rstrip(' ✓')", "lstrip('H')", "index(1)", "values()|list", "isdigit()", "splitlines()"]
TESTS = ["defined", "undefined", "none", "string", "number", "integer", "float", "mapping", "sequence", "iterable",
         "odd", "even", "divisibleby(3)", "in([1, 2, 3])", "eq(7)", "lower", "upper", "true", "false", "boolean"]


def expr(rng, depth=0):
    if depth > 2 or rng.random() < 0.3:
        return rng.choice(LITERALS + NAMES)
    k = rng.random()
    a = expr(rng, depth + 1)
    if k < 0.25:
        return f"({a} {rng.choice(BINOPS)} {expr(rng, depth + 1)})"
    if k < 0.45:
        return f"({a}|{rng.choice(FILTERS)})"
    if k < 0.55:
        return f"({a}).{rng.choice(METHODS)}"
    if k < 0.65:
        return f"({a} is {rng.choice(TESTS)})"
    if k < 0.72:
        return f"({a})[{rng.choice(['0', '-1', '1:', ':2', '::-1', '1:-1', '::2'])}]"
    if k < 0.8:
        return f"({a} if {expr(rng, depth + 1)} else {expr(rng, depth + 1)})"
    if k < 0.85:
        return f"(not {a})"
    if k < 0.9:
        return f"(-{a})"
    return f"{a}"


def stmt(rng, depth=0):
    """A random statement sequence: loops, sets, namespaces, macros, ifs around expressions."""
    if depth > 2 or rng.random() < 0.25:
        return "{{ " + expr(rng, 1) + " }}"
    k = rng.random()
    body = stmt(rng, depth + 1) + rng.choice(["", ",", "\n", " {{ loop.index if loop is defined }}"]) + stmt(rng, depth + 1)
    if k < 0.25:
        it = rng.choice(["l", "w", "users", "d", "s", "range(3)", "d.items()", "[]", "missing", "l|select('odd')"])
        target = rng.choice(["x", "x", "k, v"]) if "items" in it else "x"
        cond = rng.choice(["", " if x", " if loop is undefined"])
        els = rng.choice(["", "{% else %}E"])
        return f"{{% for {target} in {it}{cond} %}}{{{{ x if x is defined }}}}{body}{els}{{% endfor %}}"
    if k < 0.4:
        return f"{{% set y = {expr(rng, 1)} %}}{body}{{{{ y }}}}"
    if k < 0.55:
        return (f"{{% set ns = namespace(c=0) %}}{{% for x in l %}}{{% set ns.c = ns.c + x %}}{body}{{% endfor %}}"
                "{{ ns.c }}")
    if k < 0.7:
        return (f"{{% macro m(a, b={expr(rng, 2)}) %}}[{{{{ a }}}}|{{{{ b }}}}]{body}{{% endmacro %}}"
                f"{{{{ m({expr(rng, 2)}) }}}}{{{{ m(1, b=2) }}}}")
    if k < 0.85:
        return f"{{% if {expr(rng, 1)} %}}{body}{{% elif {expr(rng, 1)} %}}B{{% else %}}C{{% endif %}}"
    return f"{{%- filter upper -%}}{body}{{%- endfilter %}} {{# c #}}  {{%+ if true %}}x{{% endif %}}"


def kiln_render(kiln, source, context):
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "t.jinja").write_text(source)
        (Path(d) / "m.json").write_text("[]")
        args = [kiln, "template", str(Path(d) / "t.jinja"), "--messages", str(Path(d) / "m.json")]
        for k, v in context.items():
            args += ["--var", f"{k}={json.dumps(v)}"]
        p = subprocess.run(args, capture_output=True)
        if p.returncode != 0:
            return None, p.stderr.decode("utf-8", "replace").strip()
        return p.stdout.decode("utf-8"), None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", default=str(ROOT / "build/kiln"))
    ap.add_argument("-n", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--statements", action="store_true", help="random statement sequences instead of expressions")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    full = dict(CONTEXT, messages=[], add_generation_prompt=True, bos_token="", eos_token="")
    mismatches = 0
    for i in range(args.n):
        source = stmt(rng) if args.statements else "{{ " + expr(rng) + " }}"
        py_out, py_err = fx.render(source, full)
        k_out, k_err = kiln_render(args.kiln, source, CONTEXT)
        if (py_err is None) != (k_err is None) or (py_err is None and py_out != k_out):
            mismatches += 1
            print(f"MISMATCH {source}\n  jinja2: {py_out!r} {py_err or ''}\n  kiln:   {k_out!r} {k_err or ''}")
    print(f"{args.n} cases, {mismatches} mismatches")


if __name__ == "__main__":
    main()
