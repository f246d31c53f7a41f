#!/usr/bin/env python3
"""Expected outputs for kiln's Jinja tests, rendered by Python jinja2 in Hugging Face's environment.

The environment is the one transformers builds for apply_chat_template
(transformers.utils.chat_template_utils._compile_jinja_template: ImmutableSandboxedEnvironment with
trim_blocks, lstrip_blocks, the loopcontrols and {% generation %} extensions, tojson as
json.dumps(ensure_ascii=False), raise_exception, strftime_now, dict and namespace), used as is; only
strftime_now is pinned to a fixed time so outputs are reproducible.

Writes (under tests/golden/jinja/):
  snippets.json          feature snippets: template + context -> output or error
  cases.json             the chat conversations every template is rendered with
  templates/<name>.json  per template in tests/data/shared/templates/: output or error per case
  models/<name>.json     the chat template of each installed real model, with its BOS/EOS texts

Run from the repository root with the oracle environment:
  python tools/jinja_fixtures.py [--models DIR]
"""

import argparse
import json
import os
import sys
from datetime import datetime
from pathlib import Path

from transformers.utils.chat_template_utils import (
    _alias_reasoning_fields,
    _compile_jinja_template,
    _normalize_chat_messages,
)

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = ROOT / "tests" / "data" / "shared" / "templates"
OUT = ROOT / "tests" / "golden" / "jinja"

# strftime_now is pinned to this local time (kiln's tests pass the same broken-down time).
FIXED_NOW = datetime(2025, 3, 7, 14, 5, 9)
BOS = "<|bos|>"
EOS = "<|eos|>"


def compile_template(source):
    template = _compile_jinja_template(source)
    template.environment.globals["strftime_now"] = lambda fmt: FIXED_NOW.strftime(fmt)
    return template


# llama.cpp's extensions that kiln implements on purpose: list.append / pop / extend /
# insert (refused by ImmutableSandboxedEnvironment) and the from_json filter. The
# "extended" environment is Hugging Face's with exactly these two changes; it gives
# the expected output where jinja2 fails only for these reasons.
LIST_MUTATORS = {"append", "pop", "extend", "insert"}


def compile_extended(source):
    hf_env = _compile_jinja_template("").environment
    env = hf_env.overlay()
    env.filters = dict(hf_env.filters)
    env.globals = dict(hf_env.globals)
    env.filters["from_json"] = json.loads
    env.globals["strftime_now"] = lambda fmt: FIXED_NOW.strftime(fmt)
    base = type(hf_env).__mro__[1]  # SandboxedEnvironment: allows what the immutable one refuses

    def is_safe_attribute(obj, attr, value):
        if isinstance(obj, list) and attr in LIST_MUTATORS:
            return base.is_safe_attribute(env, obj, attr, value)
        return type(hf_env).is_safe_attribute(env, obj, attr, value)

    env.is_safe_attribute = is_safe_attribute
    return env.from_string(source)


def render(source, context, extended=False):
    """(output, None) or (None, "ErrorType: message")."""
    try:
        template = compile_extended(source) if extended else compile_template(source)
        return template.render(**json.loads(json.dumps(context))), None
    except Exception as e:  # noqa: BLE001 - any failure is an expected error
        return None, f"{type(e).__name__}: {e}"


def result(source, context):
    """Hugging Face's result, plus the extended environment's where only that one renders."""
    out, err = render(source, context)
    if err is None:
        return {"output": out}
    entry = {"error": err}
    ext_out, ext_err = render(source, context, extended=True)
    if ext_err is None:
        entry["extended_output"] = ext_out
    return entry


# --- feature snippets ----------------------------------------------------------------------
# (name, template, context). Names are stable: kiln's tests list deviations by name.

MSGS = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Hi there"},
    {"role": "assistant", "content": "Hello!"},
]

SNIPPETS = [
    # lexer, whitespace control, trim_blocks / lstrip_blocks
    ("text_only", "plain text", {}),
    ("trailing_newline_dropped", "a\n", {}),
    ("two_trailing_newlines", "a\n\n", {}),
    ("crlf_normalized", "a\r\nb\rc", {}),
    ("trim_blocks", "{% if true %}\nyes\n{% endif %}\nend", {}),
    ("lstrip_blocks", "  {% if true %}\n  x\n  {% endif %}\n", {}),
    ("lstrip_not_variables", "  {{ 'v' }}\n", {}),
    ("strip_minus", "a   {{- 'b' -}}   c", {}),
    ("strip_minus_block", "a \n {%- if true -%} \n b \n {%- endif -%} \n c", {}),
    ("plus_disables_lstrip", "  {%+ if true %}x{% endif %}", {}),
    ("plus_disables_trim", "{% if true +%}\nx{% endif %}", {}),
    ("comment", "a{# comment #}b", {}),
    ("comment_trim", "a\n{# c #}\nb", {}),
    ("comment_lstrip", "a\n   {# c #}\nb", {}),
    ("comment_minus", "a  {#- c -#}  b", {}),
    ("raw_block", "{% raw %}{{ not parsed }}{% endraw %}", {}),
    ("raw_block_trim", "x\n  {% raw %}\n{{ a }}\n  {% endraw %}\ny", {}),
    ("braces_in_expression", "{{ {'a': {'b': 1}} }}", {}),
    ("string_escapes", r"""{{ 'a\nb\t"c"' }}|{{ "it's" }}|{{ '\x41\u00e9' }}|{{ '\\' }}""", {}),
    ("adjacent_strings", "{{ 'a' 'b' \"c\" }}", {}),
    ("unicode_text", "héllo {{ 'wörld' }} ✓", {}),
    ("number_literals", "{{ 1_000 }} {{ 0x1F }} {{ 0o17 }} {{ 0b101 }} {{ 1.5e3 }} {{ 2.5 }} {{ 1e-7 }}", {}),
    ("whitespace_line_statement", "{%- for x in [1,2] %}\n  {{ x }}\n{%- endfor %}", {}),
    ("minus_with_number", "{{-1}}", {}),
    # output of values
    ("print_none", "{{ none }}|{{ None }}", {}),
    ("print_bools", "{{ true }}|{{ false }}|{{ True }}", {}),
    ("print_floats", "{{ 1.0 }} {{ 0.1 + 0.2 }} {{ 1e16 }} {{ 1e15 }} {{ 0.0001 }} {{ 0.00001 }} {{ -0.0 }} {{ 3.14 }}", {}),
    ("print_list", "{{ [1, 'a', none, true, 1.5, [2]] }}", {}),
    ("print_dict", "{{ {'a': 1, 'b': 'x', 'c': none} }}", {}),
    ("print_tuple", "{{ (1, 2) }}{{ (1,) }}{{ () }}", {}),
    ("print_nested_quotes", "{{ ['a\"b', \"c'd\", 'e\\'f\"g'] }}", {}),
    ("print_undefined", "[{{ missing }}]", {}),
    ("print_context_values", "{{ n }} {{ f }} {{ s }} {{ l }} {{ d }}", {"n": 3, "f": 2.0, "s": "x", "l": [1, 2], "d": {"k": "v"}}),
    ("repr_escapes", "{{ ['tab\\there', 'nl\\nx', 'é', '\\x00', '\\u2028'] }}", {}),
    # arithmetic
    ("arith_int", "{{ 7 + 3 }} {{ 7 - 3 }} {{ 7 * 3 }} {{ 7 / 2 }} {{ 7 // 2 }} {{ 7 % 3 }} {{ 2 ** 10 }}", {}),
    ("arith_negative", "{{ -7 // 2 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ -7 / 2 }} {{ 2 ** -1 }}", {}),
    ("arith_float", "{{ 1.5 + 1 }} {{ 7.5 // 2 }} {{ 7.5 % 2 }} {{ -7.5 % 2 }} {{ 10 / 4 }} {{ 2.0 ** 3 }}", {}),
    ("arith_precedence", "{{ 2 + 3 * 4 }} {{ (2 + 3) * 4 }} {{ 2 ** 3 ** 2 }} {{ -2 ** 2 }} {{ 10 - 2 - 3 }}", {}),
    ("arith_bool", "{{ true + 1 }} {{ true * 3 }} {{ false - 1 }}", {}),
    ("string_concat_plus", "{{ 'a' + 'b' }}", {}),
    ("string_repeat", "{{ 'ab' * 3 }}{{ 2 * 'c' }}{{ 'x' * 0 }}", {}),
    ("list_concat", "{{ [1] + [2, 3] }}{{ [0] * 3 }}", {}),
    ("tilde_concat", "{{ 'a' ~ 1 ~ none ~ true ~ 1.0 ~ [1] }}", {}),
    ("tilde_undefined", "{{ 'a' ~ missing ~ 'b' }}", {}),
    ("unary", "{{ -x }} {{ +x }} {{ -(3) }}", {"x": 5}),
    ("div_by_zero", "{{ 1 / 0 }}", {}),
    ("mod_by_zero", "{{ 1 % 0 }}", {}),
    ("add_int_str", "{{ 1 + 'a' }}", {}),
    ("add_undefined", "{{ missing + 1 }}", {}),
    ("pow_negative_constant_base", "{{ (-2.5) ** z }} {{ (-2) ** n }} {{ (-2) ** 2 }} {{ x ** 2 }}", {"z": 0, "n": 2, "x": -3}),
    ("percent_list_arg", "{{ 'abc' % [] }}|{{ 'a%sb' % [1] }}|{{ 'abc' % {} }}", {}),
    ("string_percent", "{{ '%s and %d' % ('x', 3) }}|{{ '%05.2f' % 3.14159 }}|{{ '%(a)s' % {'a': 1} }}", {}),
    # comparisons and logic
    ("compare", "{{ 1 < 2 }} {{ 2 <= 2 }} {{ 3 > 4 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 1 == 1.0 }} {{ 1 != 2 }}", {}),
    ("compare_chain", "{{ 1 < 2 < 3 }} {{ 1 < 3 < 2 }} {{ 1 == 1 == 1 }}", {}),
    ("compare_mixed_eq", "{{ 1 == '1' }} {{ none == none }} {{ [1] == [1] }} {{ {'a': 1} == {'a': 1} }} {{ (1, 2) == [1, 2] }}", {}),
    ("compare_true_one", "{{ true == 1 }} {{ false == 0 }} {{ 1 in [true] }}", {}),
    ("compare_type_error", "{{ 1 < 'a' }}", {}),
    ("compare_none_error", "{{ none < 1 }}", {}),
    ("logic_values", "{{ 0 or 'x' }} {{ 'a' and 'b' }} {{ '' and 'b' }} {{ none or [] }} {{ not 0 }} {{ not 'a' }}", {}),
    ("in_operator", "{{ 'a' in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 3 not in [1] }} {{ 'x' in missing }}", {}),
    ("in_type_error", "{{ 1 in 'abc' }}", {}),
    ("truthiness", "{% for v in [0, 1, '', 'a', [], [0], {}, none, 0.0] %}{{ 'T' if v else 'F' }}{% endfor %}", {}),
    ("cond_expr", "{{ 'y' if true else 'n' }} {{ 'y' if false else 'n' }} [{{ 'y' if false }}]", {}),
    ("cond_nested", "{{ 'a' if x == 1 else 'b' if x == 2 else 'c' }}", {"x": 2}),
    # variables and attributes
    ("attr_dict", "{{ d.a }} {{ d['a'] }} [{{ d.missing }}] {{ d.get('a') }} {{ d.get('z', 'def') }}", {"d": {"a": 1}}),
    ("attr_method_precedence", "{{ d.items is defined }} {{ d['items'] }} {{ d.keys()|list }}", {"d": {"items": "val", "k": 1}}),
    ("attr_on_none", "[{{ none.x }}]", {}),
    ("attr_on_undefined", "{{ missing.x }}", {}),
    ("item_on_undefined", "{{ missing['x'] }}", {}),
    ("index_list", "{{ l[0] }} {{ l[-1] }} [{{ l[10] }}] {{ l.1 }}", {"l": ["a", "b", "c"]}),
    ("index_string", "{{ s[0] }} {{ s[-1] }} {{ s[1] }}", {"s": "héllo"}),
    ("slice_list", "{{ l[1:] }} {{ l[:2] }} {{ l[::2] }} {{ l[::-1] }} {{ l[-2:] }} {{ l[1:-1] }}", {"l": [1, 2, 3, 4, 5]}),
    ("slice_string", "{{ s[::-1] }} {{ s[1:3] }} {{ s[:-1] }} {{ s[10:] }}", {"s": "héllo✓"}),
    ("slice_step_zero", "{{ [1, 2][::0] }}", {}),
    ("slice_int_error", "{{ n[1:] }}", {"n": 5}),
    ("slice_none_error", "{{ x[:1] }}", {"x": None}),
    ("slice_dict_error", "{{ d[1:] }}", {"d": {"a": 1}}),
    ("slice_constant_folded", "[{{ (1)[1:] }}][{{ (none)[::-1] }}][{{ ({})[::2] }}][{{ (true and 1)[:1] }}][{{ (2.5|int)[::2] }}][{{ (1)[1:] == 2 }}]", {}),
    ("slice_constant_not_output", "{{ (1)[1:] == n }}", {"n": 2}),
    ("truncate_non_string", "{{ d|truncate(5, true, '..', 0) }} {{ l|truncate(3) }}", {"d": {"a": 1}, "l": [1, 2]}),
    ("private_attr_blocked", "[{{ ''.__class__ }}][{{ d.__len__ }}]", {"d": {}}),
    ("message_fields", "{% for m in messages %}{{ m.role }}:{{ m['content'] }};{% endfor %}", {"messages": MSGS}),
    # if / for
    ("if_elif_else", "{% for x in [1, 2, 3] %}{% if x == 1 %}one{% elif x == 2 %}two{% else %}many{% endif %},{% endfor %}", {}),
    ("for_loop_vars", "{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}|{% endfor %}", {}),
    ("for_prev_next", "{% for x in [1, 2, 3] %}[{{ loop.previtem }}-{{ loop.nextitem }}]{% endfor %}", {}),
    ("for_cycle", "{% for x in range(5) %}{{ loop.cycle('a', 'b') }}{% endfor %}", {}),
    ("for_changed", "{% for x in [1, 1, 2, 2, 1] %}{{ loop.changed(x) }},{% endfor %}", {}),
    ("for_else", "{% for x in [] %}x{% else %}empty{% endfor %}", {}),
    ("for_filter", "{% for x in range(10) if x is odd %}{{ x }}/{{ loop.length }},{% endfor %}", {}),
    ("for_unpack", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", {"d": {"b": 1, "a": 2}}),
    ("for_unpack_nested", "{% for a, (b, c) in [(1, (2, 3))] %}{{ a }}{{ b }}{{ c }}{% endfor %}", {}),
    ("for_dict_keys", "{% for k in d %}{{ k }}{% endfor %}", {"d": {"x": 1, "y": 2}}),
    ("for_string", "{% for c in 'hé✓' %}[{{ c }}]{% endfor %}", {}),
    ("for_undefined", "{% for x in missing %}x{% else %}none{% endfor %}", {}),
    ("for_none_error", "{% for x in none %}x{% endfor %}", {}),
    ("for_int_error", "{% for x in 5 %}x{% endfor %}", {}),
    ("for_unpack_error", "{% for a, b in [1, 2] %}{% endfor %}", {}),
    ("for_break_continue", "{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 5 %}{% break %}{% endif %}{{ x }}{% endfor %}", {}),
    ("for_nested_loop", "{% for a in [1, 2] %}{% for b in [3, 4] %}{{ loop.index }}{{ a }}{{ b }} {% endfor %}{{ loop.index }};{% endfor %}", {}),
    ("for_recursive", "{% for n in tree recursive %}{{ n.name }}{% if n.children %}({{ loop(n.children) }}){% endif %}{{ loop.depth }}{% endfor %}",
     {"tree": [{"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}, {"name": "d"}]}, {"name": "e"}]}),
    ("for_scope_set", "{% set x = 0 %}{% for i in range(3) %}{{ x }}{% set x = x + 1 %}{{ x }},{% endfor %}{{ x }}", {}),
    ("for_scope_leak", "{% for i in range(3) %}{% if i == 1 %}{% set z = 7 %}{% endif %}[{{ z }}]{% endfor %}[{{ z }}]", {}),
    ("for_loop_var_after", "{% for i in [1, 2] %}{% endfor %}[{{ i }}]", {}),
    ("loop_outside", "[{{ loop }}]", {}),
    ("loop_in_filter_cond", "{% for x in [1, 2, 3] if x > 1 %}{{ loop.index }}{% endfor %}", {}),
    ("for_over_items_filter", "{% for k, v in d|dictsort %}{{ k }}{{ v }}{% endfor %}", {"d": {"b": 2, "a": 1, "C": 3}}),
    # set, namespace, with
    ("set_simple", "{% set x = 5 %}{% set y = x * 2 %}{{ y }}", {}),
    ("set_tuple", "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set c, d = [3, 4] %}{{ c }}{{ d }}", {}),
    ("set_block", "{% set x %}hello {{ 'world' }}{% endset %}[{{ x }}]", {}),
    ("set_block_filter", "{% set x | upper | trim %}  hello  {% endset %}[{{ x }}]", {}),
    ("set_in_if_top", "{% if true %}{% set x = 1 %}{% endif %}{{ x }}", {}),
    ("namespace_basic", "{% set ns = namespace(count=0, found=false) %}{% for i in range(3) %}{% set ns.count = ns.count + 1 %}{% endfor %}{{ ns.count }} {{ ns.found }}", {}),
    ("namespace_dict_arg", "{% set ns = namespace({'a': 1}, b=2) %}{{ ns.a }}{{ ns.b }}{{ ns['a'] }}", {}),
    ("namespace_missing", "{% set ns = namespace() %}[{{ ns.x }}]", {}),
    ("namespace_set_non_ns", "{% set d = {} %}{% set d.x = 1 %}", {}),
    ("namespace_underscore", "{% set ns = namespace() %}{% set ns._x = 1 %}", {}),
    ("namespace_repr", "{{ namespace(a=1) }}", {}),
    ("with_block", "{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}[{{ a }}]", {}),
    ("with_outer_value", "{% set a = 10 %}{% with a = 1, b = a %}{{ a }}{{ b }}{% endwith %}", {}),
    ("filter_block", "{% filter upper %}hello {{ 'x' }}{% endfilter %}", {}),
    ("filter_block_chain", "{% filter trim|upper %}  ab  {% endfilter %}", {}),
    # macros
    ("macro_basic", "{% macro greet(name, greeting='Hello') %}{{ greeting }}, {{ name }}!{% endmacro %}{{ greet('Ann') }} {{ greet('Bob', greeting='Hi') }} {{ greet(name='Cy', greeting='Yo') }}", {}),
    ("macro_missing_arg", "{% macro m(a, b) %}[{{ a }}][{{ b }}]{% endmacro %}{{ m(1) }}", {}),
    ("macro_too_many", "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, 2) }}", {}),
    ("macro_bad_kwarg", "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(b=1) }}", {}),
    ("macro_varargs_kwargs", "{% macro m(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, 3, x=4) }}", {}),
    ("macro_default_uses_arg", "{% macro m(a, b=a * 2) %}{{ a }}-{{ b }}{% endmacro %}{{ m(3) }}", {}),
    ("macro_scope", "{% set y = 1 %}{% macro m() %}{{ y }}{% endmacro %}{% set y = 5 %}{{ m() }}", {}),
    ("macro_recursion", "{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1)|int }}{% endif %}{% endmacro %}{{ fact(5) }}", {}),
    ("macro_in_loop_closure", "{% for i in range(2) %}{% macro m() %}{{ i }}{% endmacro %}{{ m() }}{% endfor %}", {}),
    ("macro_returns_string", "{% macro m() %}42{% endmacro %}{{ m() + '!' }} {{ m() is string }}", {}),
    ("macro_caller", "{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}bold {{ 1 + 1 }}{% endcall %}", {}),
    ("macro_caller_args", "{% macro each(items) %}{% for i in items %}{{ caller(i) }}{% endfor %}{% endmacro %}{% call(x) each([1, 2]) %}[{{ x }}]{% endcall %}", {}),
    ("macro_name_attr", "{% macro m(a, b) %}{% endmacro %}{{ m.name }} {{ m.arguments }}", {}),
    ("macro_no_caller", "{% macro m() %}[{{ caller is defined }}]{% endmacro %}{{ m() }}", {}),
    # tests
    ("test_defined", "{{ x is defined }} {{ y is defined }} {{ y is undefined }} {{ x is not none }}", {"x": 1}),
    ("test_types", "{% for v in [1, 1.5, 'a', [1], {'a': 1}, none, true] %}{{ v is number }}{{ v is integer }}{{ v is float }}{{ v is string }}{{ v is sequence }}{{ v is mapping }}{{ v is iterable }}{{ v is boolean }}{{ v is none }}|{% endfor %}", {}),
    ("test_undefined_kinds", "{{ x is sequence }}{{ x is iterable }}{{ x is mapping }}{{ x is callable }}", {}),
    ("test_true_false", "{{ true is true }} {{ 1 is true }} {{ false is false }} {{ 0 is false }}", {}),
    ("test_numbers", "{{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ 9 is divisibleby(4) }}", {}),
    ("test_compare", "{{ 1 is eq 1 }} {{ 1 is equalto 2 }} {{ 2 is ne 1 }} {{ 1 is lt 2 }} {{ 2 is gt 1 }} {{ 2 is le 2 }} {{ 2 is ge 3 }} {{ 2 is greaterthan 1 }} {{ 1 is lessthan 2 }}", {}),
    ("test_operator_name_error", "{{ 1 is == 1 }}", {}),
    ("test_case", "{{ 'abc' is lower }} {{ 'ABC' is upper }} {{ 'aBc' is lower }} {{ '12' is lower }}", {}),
    ("test_in", "{{ 2 is in [1, 2] }} {{ 'x' is in 'abc' }}", {}),
    ("test_callable", "{{ range is callable }} {{ 1 is callable }} {{ 'a'.upper is callable }}", {}),
    ("test_escaped", "{{ 'a'|safe is escaped }} {{ 'a' is escaped }}", {}),
    ("test_sameas", "{{ none is sameas none }} {{ x is sameas x }} {{ [] is sameas [] }}", {"x": [1]}),
    ("test_filter_test", "{{ 'upper' is filter }} {{ 'nope' is filter }} {{ 'odd' is test }}", {}),
    ("test_unknown", "{{ 1 is frobnicated }}", {}),
    ("test_precedence", "{{ not x is defined }} {{ x is defined and x }} {{ 1 + 1 is odd }}", {"x": 0}),
    # filters: strings
    ("f_upper_lower", "{{ 'Hello'|upper }} {{ 'Hello'|lower }} {{ 'ÉCOLE straße'|lower }} {{ 'straße'|upper }}", {}),
    ("f_capitalize_title", "{{ 'hELLO wORLD'|capitalize }} {{ 'hello wORLD-foo (bar) [baz]'|title }} {{ \"they're bill's\"|title }}", {}),
    ("f_trim", "[{{ '  a b  '|trim }}][{{ 'xxaxx'|trim('x') }}][{{ '\\n\\t a \\u3000'|trim }}]", {}),
    ("f_replace", "{{ 'aaa'|replace('a', 'b') }} {{ 'aaa'|replace('a', 'b', 2) }} {{ 'abc'|replace('', '-') }} {{ 5|replace('5', '6') }}", {}),
    ("f_indent", "{{ 'a\\nb\\n\\nc'|indent }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'a\\n\\nb'|indent('> ', blank=true) }}|{{ 'x'|indent(first=true) }}", {}),
    ("f_center", "[{{ 'ab'|center(7) }}][{{ 'abc'|center(6) }}][{{ 'a'|center(1) }}]", {}),
    ("f_truncate", "{{ 'foo bar baz qux'|truncate(9) }}|{{ 'foo bar baz qux'|truncate(9, true) }}|{{ 'foo bar baz qux'|truncate(11) }}|{{ 'foo bar baz qux'|truncate(11, false, '...', 0) }}", {}),
    ("f_wordcount", "{{ 'Hello, world! foo_bar 42'|wordcount }}", {}),
    ("f_format", "{{ '%s-%s'|format('a', 'b') }} {{ '%(x)s'|format(x=1) }} {{ '%5.1f|%-4d|%x'|format(3.14159, 7, 255) }} {{ '%r'|format('q') }}", {}),
    ("f_string", "{{ 1|string }} {{ none|string }} {{ [1, 'a']|string }} {{ {'a': none}|string }} {{ true|string }} [{{ missing|string }}]", {}),
    ("f_striptags", "{{ '<p>Hello <b>world</b></p>  <!-- c -->  x &amp; y'|striptags }}", {}),
    ("f_urlencode", "{{ 'a b&c/d'|urlencode }} {{ {'a': 'x y', 'b': 1}|urlencode }}", {}),
    ("f_escape", "{{ '<a href=\"x\">&\\'</a>'|escape }} {{ '<b>'|e }} {{ ('<b>'|safe)|escape }}", {}),
    ("f_safe_concat", "{{ 'a'|safe + '<b>' }} {{ '<x>' + 'y'|safe }} {{ ('a'|safe + '<b>')|upper }} {{ ('<'|safe) ~ '<' }}", {}),
    ("f_safe_join", "{{ ['<a>', '<b>']|join('|'|safe) }} {{ ('<'|safe).join(['<', '>']) }}", {}),
    ("f_safe_format", "{{ ('%s'|safe) % '<x>' }} {{ '%s'|safe|format('<y>') }}", {}),
    ("f_xmlattr", "<div{{ {'class': 'x', 'id': none, 'data': 'a\"b'}|xmlattr }}>", {}),
    ("f_filesizeformat", "{{ 100|filesizeformat }} {{ 1000|filesizeformat }} {{ 1500000|filesizeformat }} {{ 2048|filesizeformat(true) }}", {}),
    # filters: numbers
    ("f_int_float", "{{ '42'|int }} {{ '4.7'|int }} {{ 'x'|int }} {{ 'x'|int(7) }} {{ 3.9|int }} {{ '0x1A'|int(0, 16) }} {{ '12'|float }} {{ 'x'|float }} {{ none|int }} {{ true|int }} {{ ' 1_000 '|int }}", {}),
    ("f_int_undefined", "{{ missing|int }}", {}),
    ("f_abs_round", "{{ -3|abs }} {{ -2.5|abs }} {{ 2.5|round }} {{ 3.5|round }} {{ 2.675|round(2) }} {{ 2.1|round(0, 'ceil') }} {{ 2.9|round(method='floor') }} {{ 5|round }} {{ 1234|round(-2) }}", {}),
    ("f_sum_min_max", "{{ [1, 2, 3]|sum }} {{ [1.5, 2]|sum }} {{ [3, 1, 2]|min }} {{ [3, 1, 2]|max }} {{ ['b', 'A', 'c']|min }} {{ ['b', 'A', 'c']|max(case_sensitive=true) }} [{{ []|max }}]", {}),
    ("f_sum_attribute", "{{ items|sum(attribute='n') }} {{ items|max(attribute='n') }} {{ [[1], [2]]|sum(start=[]) }}", {"items": [{"n": 1}, {"n": 5}]}),
    # filters: sequences
    ("f_length", "{{ 'héllo'|length }} {{ [1, 2]|length }} {{ {'a': 1}|length }} {{ missing|length }} {{ [1, 2]|count }}", {}),
    ("f_length_none", "{{ none|length }}", {}),
    ("f_first_last", "{{ [1, 2, 3]|first }} {{ [1, 2, 3]|last }} {{ 'abc'|first }} {{ 'abc'|last }} [{{ []|first }}] {{ {'a': 1, 'b': 2}|first }}", {}),
    ("f_join", "{{ [1, 2, 3]|join(', ') }} {{ ['a', 'b']|join }} {{ users|join(', ', attribute='name') }} {{ 'abc'|join('-') }}", {"users": [{"name": "x"}, {"name": "y"}]}),
    ("f_list", "{{ 'abc'|list }} {{ {'a': 1, 'b': 2}|list }} {{ range(3)|list }} {{ missing|list }}", {}),
    ("f_default", "{{ missing|default('d') }} {{ ''|default('d') }} {{ ''|default('d', true) }} {{ none|default('d') }} {{ 0|d(5, true) }} [{{ missing|default }}]", {}),
    ("f_items", "{% for k, v in {'a': 1, 'b': 2}|items %}{{ k }}{{ v }}{% endfor %}[{% for x in missing|items %}{% endfor %}]", {}),
    ("f_dictsort", "{{ d|dictsort }} {{ d|dictsort(true) }} {{ d|dictsort(by='value') }} {{ d|dictsort(reverse=true) }}", {"d": {"b": 2, "a": 3, "C": 1}}),
    ("f_sort", "{{ [3, 1, 2]|sort }} {{ ['b', 'A', 'c']|sort }} {{ ['b', 'A', 'c']|sort(case_sensitive=true) }} {{ [3, 1, 2]|sort(reverse=true) }}", {}),
    ("f_sort_attribute", "{{ users|sort(attribute='age')|map(attribute='name')|join(',') }} {{ users|sort(attribute='age,name')|map(attribute='name')|join(',') }}",
     {"users": [{"name": "b", "age": 3}, {"name": "a", "age": 3}, {"name": "c", "age": 1}]}),
    ("f_unique", "{{ ['a', 'A', 'b', 'a']|unique|list }} {{ ['a', 'A']|unique(case_sensitive=true)|list }} {{ users|unique(attribute='age')|map(attribute='name')|list }}",
     {"users": [{"name": "b", "age": 3}, {"name": "a", "age": 3}, {"name": "c", "age": 1}]}),
    ("f_reverse", "{{ 'abc'|reverse }} {{ [1, 2, 3]|reverse|list }} {{ (1, 2)|reverse|join }}", {}),
    ("f_map", "{{ users|map(attribute='name')|list }} {{ ['a', 'b']|map('upper')|list }} {{ [1, 2]|map('string')|join('+') }} {{ users|map(attribute='x', default='?')|list }}",
     {"users": [{"name": "x"}, {"name": "y"}]}),
    ("f_map_nested_attr", "{{ items|map(attribute='a.b')|list }} {{ items|map(attribute='l.0')|list }}", {"items": [{"a": {"b": 1}, "l": [5]}, {"a": {"b": 2}, "l": [6]}]}),
    ("f_select_reject", "{{ range(6)|select('odd')|list }} {{ range(6)|reject('odd')|list }} {{ [0, 1, '', 'a']|select|list }} {{ range(6)|select('divisibleby', 3)|list }} {{ [1, 5, 9]|select('gt', 4)|list }}", {}),
    ("f_selectattr", "{{ msgs|selectattr('role', 'equalto', 'user')|map(attribute='content')|list }} {{ msgs|rejectattr('role', 'eq', 'user')|list|length }} {{ msgs|selectattr('tool')|list|length }}",
     {"msgs": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b", "tool": True}, {"role": "user", "content": "c"}]}),
    ("f_select_generator_truthy", "{{ 'yes' if []|select('odd') else 'no' }} {{ ([]|select)|list }}", {}),
    ("f_select_generator_length", "{{ [1, 2]|select('odd')|length }}", {}),
    ("f_generator_consumed_once", "{% set g = [1, 2, 3]|select('odd') %}{{ g|list }}{{ g|list }}", {}),
    ("f_generator_first", "{% set g = [1, 2, 3]|map('string') %}{{ g|first }}{{ g|first }}{{ g|list }}", {}),
    ("f_batch_slice", "{{ range(7)|batch(3)|list }} {{ range(7)|batch(3, 'x')|list }} {{ range(7)|slice(3)|list }} {{ range(5)|slice(3, 0)|list }}", {}),
    ("f_groupby", "{% for g in users|groupby('city') %}{{ g.grouper }}:{{ g.list|map(attribute='name')|join(',') }};{% endfor %}|{% for city, us in users|groupby('city') %}{{ city }}{{ us|length }}{% endfor %}",
     {"users": [{"name": "a", "city": "P"}, {"name": "b", "city": "L"}, {"name": "c", "city": "p"}]}),
    ("f_attr", "{{ d|attr('a') }}|{{ d|attr('items') is defined }}", {"d": {"a": 1}}),
    ("f_pprint", "{{ [1, 'a', {'b': none}]|pprint }}", {}),
    ("f_unknown", "{{ 1|frobnicate }}", {}),
    ("f_random_unsupported", "{{ [1]|random }}", {}),
    # tojson (Hugging Face's: json.dumps)
    ("tojson_basic", "{{ {'a': 1, 'b': [1, 2.5, none, true, 'é\"\\n'], 'c': {}} | tojson }}", {}),
    ("tojson_indent", "{{ {'a': [1, {'b': 2}], 'c': []}|tojson(indent=2) }}", {}),
    ("tojson_indent_string", "{{ {'a': [1]}|tojson(indent='\\t') }}", {}),
    ("tojson_sort_keys", "{{ {'b': 1, 'a': {'d': 1, 'c': 2}}|tojson(sort_keys=true) }}", {}),
    ("tojson_ensure_ascii", "{{ 'é✓😀'|tojson(ensure_ascii=true) }} {{ 'é'|tojson }}", {}),
    ("tojson_separators", "{{ {'a': [1, 2]}|tojson(separators=(',', ':')) }}", {}),
    ("tojson_positional", "{{ 'é'|tojson(true) }}", {}),
    ("tojson_floats", "{{ [1.0, 0.1, 1e20, 1e-7, -0.0, 100.0]|tojson }}", {}),
    ("tojson_keys", "{{ {1: 'a', true: 'b', none: 'c', 1.5: 'd'}|tojson }}", {}),
    ("tojson_undefined", "{{ missing|tojson }}", {}),
    ("tojson_tuple", "{{ (1, 'a')|tojson }}", {}),
    ("tojson_context", "{{ tools|tojson }}", {"tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}}}]}),
    ("tojson_markup", "{{ ('<a>'|safe)|tojson }}", {}),
    ("tojson_control_chars", "{{ '\\x01\\x7f\\u2028'|tojson }}", {}),
    # string methods
    ("m_strip", "[{{ '  a  '.strip() }}][{{ 'xxaxx'.strip('x') }}][{{ '  a  '.lstrip() }}][{{ '  a  '.rstrip() }}][{{ 'abcba'.strip('ab') }}]", {}),
    ("m_split", "{{ 'a,b,,c'.split(',') }} {{ '  a  b '.split() }} {{ 'a b c'.split(' ', 1) }} {{ 'a,b,c'.rsplit(',', 1) }} {{ ' a b '.rsplit(None, 1) }}", {}),
    ("m_split_empty_sep", "{{ 'abc'.split('') }}", {}),
    ("m_startswith", "{{ 'hello'.startswith('he') }} {{ 'hello'.startswith(('x', 'h')) }} {{ 'hello'.endswith('lo') }} {{ 'hello'.endswith(('a', 'b')) }} {{ 'hello'.startswith('l', 2) }}", {}),
    ("m_find", "{{ 'héllo'.find('l') }} {{ 'hello'.rfind('l') }} {{ 'hello'.find('z') }} {{ 'hello'.index('e') }} {{ 'hello'.count('l') }} {{ 'aaa'.count('aa') }}", {}),
    ("m_index_missing", "{{ 'hello'.index('z') }}", {}),
    ("m_replace", "{{ 'a-b-c'.replace('-', '+') }} {{ 'a-b-c'.replace('-', '+', 1) }}", {}),
    ("m_case", "{{ 'abc'.upper() }} {{ 'ABC'.lower() }} {{ 'hello world'.title() }} {{ 'hello World'.capitalize() }} {{ 'aBc'.swapcase() }} {{ \"they're\".title() }}", {}),
    ("m_predicates", "{{ '123'.isdigit() }} {{ 'abc'.isalpha() }} {{ ' \\n'.isspace() }} {{ 'ab1'.isalnum() }} {{ ''.isdigit() }} {{ 'Ab'.isupper() }} {{ 'ab'.islower() }} {{ 'Hello World'.istitle() }} {{ 'x_1'.isidentifier() }}", {}),
    ("m_join", "{{ ', '.join(['a', 'b']) }} {{ ''.join('abc') }}", {}),
    ("m_join_type_error", "{{ ', '.join([1, 2]) }}", {}),
    ("m_format", "{{ '{} {}'.format('a', 'b') }} {{ '{1}{0}'.format('a', 'b') }} {{ '{x}!'.format(x=1) }} {{ '{:>5}|{:<4}|{:^5}|{:.2f}|{:05d}|{:,}'.format('ab', 'c', 'd', 3.14159, 42, 1234567) }} {{ '{0[0]}{0[1]}'.format('xy') }} {{ '{!r}'.format('q') }}", {}),
    ("m_format_huge_index", "[{{ '{0[99999999999999999999999]}'.format('ab') }}]", {}),
    ("m_format_attr", "{{ '{0.a}'.format(d) }}", {"d": {"a": 5}}),
    ("m_splitlines", "{{ 'a\\nb\\r\\nc\\n'.splitlines() }} {{ 'a\\nb'.splitlines(true) }}", {}),
    ("m_partition", "{{ 'a=b=c'.partition('=') }} {{ 'a=b=c'.rpartition('=') }} {{ 'abc'.partition('x') }}", {}),
    ("m_pad", "[{{ 'ab'.ljust(5, '.') }}][{{ 'ab'.rjust(5) }}][{{ 'ab'.center(6, '*') }}][{{ '42'.zfill(5) }}][{{ '-4'.zfill(4) }}]", {}),
    ("m_removeprefix", "{{ 'prefix_x'.removeprefix('prefix_') }} {{ 'x.txt'.removesuffix('.txt') }}", {}),
    ("m_unknown_str", "{{ 'a'.nosuch() }}", {}),
    # dict and list methods
    ("m_dict", "{{ d.keys() }} {{ d.values() }} {{ d.items() }} {{ d.get('a') }} {{ d.get('z') }} {{ d.items()|list }} {{ d.copy() }}", {"d": {"a": 1, "b": [2]}}),
    ("m_dict_get_default", "{{ d.get('x', 'dflt') }} {{ d.get('a', 'dflt') }}", {"d": {"a": 0}}),
    ("m_list_index_count", "{{ [1, 2, 2].index(2) }} {{ [1, 2, 2].count(2) }} {{ (1, 2).index(2) }}", {}),
    ("m_list_append_refused", "{% set l = [1] %}{% set _ = l.append(2) %}{{ l }}", {}),
    ("m_list_pop_refused", "{% set l = [1, 2] %}{{ l.pop() }}{{ l }}", {}),
    ("m_list_extend_insert_refused", "{% set l = [1] %}{% set _ = l.extend([2, 3]) %}{% set _ = l.insert(0, 0) %}{{ l }}", {}),
    ("m_list_pop_index_refused", "{% set l = [1, 2, 3] %}{{ l.pop(0) }}{{ l }}", {}),
    ("m_dict_update_refused", "{% set d = {} %}{% set _ = d.update({'a': 1}) %}{{ d }}", {}),
    ("m_list_method_on_tuple", "{{ (1, 2).append(3) }}", {}),
    # globals
    ("g_range", "{{ range(3)|list }} {{ range(1, 4)|list }} {{ range(10, 0, -3)|list }} {{ range(0)|list }} {{ range(3) }} {{ range(3)|length }}", {}),
    ("g_range_too_big", "{{ range(100001)|length }}", {}),
    ("g_range_float", "{{ range(1.5) }}", {}),
    ("g_dict", "{{ dict(a=1, b=2) }} {{ dict({'x': 1}, y=2) }} {{ dict([('k', 'v')]) }} {{ dict() }}", {}),
    ("g_dict_fromkeys", "{{ dict.fromkeys(['a', 'b'], 0) }}", {}),
    ("g_cycler", "{% set c = cycler('a', 'b') %}{{ c.next() }}{{ c.next() }}{{ c.next() }}{{ c.current }}{% set _ = c.reset() %}{{ c.next() }}", {}),
    ("g_joiner", "{% set j = joiner(', ') %}{% for x in [1, 2, 3] %}{{ j() }}{{ x }}{% endfor %}", {}),
    ("g_raise_exception", "{{ raise_exception('Custom failure: ' ~ 42) }}", {}),
    ("g_raise_in_branch", "{% if false %}{{ raise_exception('no') }}{% endif %}ok", {}),
    ("g_strftime_now", "{{ strftime_now('%Y-%m-%d') }} {{ strftime_now('%d %b %Y') }} {{ strftime_now('%A %H:%M:%S') }} {{ strftime_now('%-d %B') }}", {}),
    ("g_context_overrides_global", "{{ range }}", {"range": "mine"}),
    # errors the sandbox or syntax raise
    ("err_syntax_unclosed", "{% if x %}", {}),
    ("err_syntax_bad_expr", "{{ 1 + }}", {}),
    ("err_syntax_unknown_tag", "{% frobnicate %}", {}),
    ("err_syntax_endfor_mismatch", "{% for x in y %}{% endif %}", {}),
    ("err_include", "{% include 'other.jinja' %}", {}),
    ("err_extends", "{% extends 'base.jinja' %}", {}),
    ("err_import", "{% import 'm.jinja' as m %}", {}),
    ("err_call_undefined", "{{ nope() }}", {}),
    ("err_call_string", "{{ 'a'() }}", {}),
    ("err_unbalanced_paren", "{{ (1 }}", {}),
    ("err_unclosed_comment", "{# never closed", {}),
    ("err_unclosed_string", "{{ 'abc }}", {}),
    ("err_break_outside_loop", "{% break %}", {}),
    ("err_unhashable_key", "{{ {[1]: 2} }}", {}),
    # unknown filters and tests: compile-time errors, except inside if statements and inline ifs
    ("unknown_filter_in_if_not_run", "{% if false %}{{ x|nosuch }}{% endif %}ok", {}),
    ("unknown_filter_in_if_run", "{% if true %}{{ x|nosuch }}{% endif %}", {}),
    ("unknown_filter_in_for_in_if", "{% if false %}{% for i in [] %}{{ i|nosuch }}{% endfor %}{% endif %}ok", {}),
    ("unknown_filter_condexpr", "{{ x|nosuch if false else 'b' }}", {}),
    ("unknown_test_in_if", "{% if false %}{{ 1 is nosuch }}{% endif %}ok", {}),
    ("unknown_filter_in_macro_in_if", "{% if false %}{% macro m() %}{{ 1|nosuch }}{% endmacro %}{% endif %}ok", {}),
    # llama.cpp's from_json filter (expected output from the extended environment)
    ("x_from_json", "{{ ('{\"a\": [1, 2.5, null, true], \"b\": \"\u00e9\"}'|from_json).a }}", {}),
    ("x_from_json_in_if", "{% if s is string %}{% set v = s|from_json %}{{ v.k }}|{{ v }}{% endif %}", {"s": "{\"k\": 3, \"z\": {\"y\": []}}"}),
    # generation blocks (Hugging Face) and misc statements
    ("generation_block", "{% for m in messages %}{% if m.role == 'assistant' %}{% generation %}{{ m.content }}{% endgeneration %}{% else %}{{ m.content }}{% endif %}|{% endfor %}", {"messages": MSGS}),
    ("print_statement", "{% print 'a', 1 %}", {}),
    ("block_statement", "{% block body %}inside {{ 1 }}{% endblock %}", {}),
    ("dict_literal_order", "{{ {'z': 1, 'a': 2, 'm': 3} }}", {}),
    ("dict_duplicate_keys", "{{ {'a': 1, 'a': 2} }} {{ {1: 'x', 1.0: 'y', true: 'z'} }}", {}),
    ("list_trailing_comma", "{{ [1, 2,] }} {{ {'a': 1,} }}", {}),
    ("call_kwargs_dyn", "{% macro m(a, b) %}{{ a }}{{ b }}{% endmacro %}{{ m(*[1], **{'b': 2}) }}", {}),
    ("deep_context", "{{ a.b.c.d }} {{ a['b']['c']['d'] }}", {"a": {"b": {"c": {"d": "deep"}}}}),
    ("context_unicode_and_escapes", "{{ s }}|{{ s|tojson }}|{{ s|length }}", {"s": "line1\nline2 \"q\" 'a' \\ é 😀 \t end"}),
    ("context_int_float", "{{ i }} {{ f }} {{ i / 2 }} {{ f * 2 }} {{ big }}", {"i": 7, "f": 2.5, "big": 12345678901234}),
    ("context_bool_none", "{{ t }} {{ fl }} {{ n }} {{ n is none }}", {"t": True, "fl": False, "n": None}),
    ("message_content_parts", "{% for p in m.content %}{% if p.type == 'text' %}{{ p.text }}{% endif %}{% endfor %}", {"m": {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}]}}),
    ("string_content_check", "{{ m.content is string }} {{ m2.content is string }}", {"m": {"content": "x"}, "m2": {"content": []}}),
    ("loop_index_math", "{% for m in messages %}{% if (m.role == 'user') != (loop.index0 % 2 == 1) %}bad{% endif %}{% endfor %}ok", {"messages": MSGS}),
    ("messages_slicing", "{% set rest = messages[1:] %}{{ rest|length }} {{ messages[0].role }} {{ messages[-1]['content'] }}", {"messages": MSGS}),
    ("reversed_messages_ns", "{% set ns = namespace(last=-1) %}{% for m in messages[::-1] %}{% if ns.last == -1 and m.role == 'user' %}{% set ns.last = messages|length - loop.index %}{% endif %}{% endfor %}{{ ns.last }}", {"messages": MSGS}),
    ("content_split_think", "{{ c.split('</think>')[-1].lstrip('\\n') }}|{{ c.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') }}", {"c": "<think>\nreason\n</think>\n\nanswer"}),
    ("whitespace_heavy_template", "{%- for m in messages -%}\n    {{- '<|' + m.role + '|>\\n' -}}\n    {{- m.content | trim -}}\n    {{- '\\n' -}}\n{%- endfor -%}\n{%- if add_generation_prompt %}\n    {{- '<|assistant|>' }}\n{%- endif %}", {"messages": MSGS, "add_generation_prompt": True}),
]

# --- chat cases ---------------------------------------------------------------------------

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. Paris"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city"],
        },
    },
}
SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}, "max_results": {"type": "integer", "default": 5}},
            "required": ["query"],
        },
    },
}
TOOLS = [WEATHER_TOOL, SEARCH_TOOL]

CALL_1 = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}}
CALL_2 = {"id": "call_2", "type": "function", "function": {"name": "search", "arguments": {"query": "Eiffel tower height", "max_results": 3}}}

CASES = [
    {"name": "user", "messages": [{"role": "user", "content": "Hello, who are you?"}], "add_generation_prompt": True},
    {"name": "system_user", "messages": [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "What is 2 + 2?"}], "add_generation_prompt": True},
    {"name": "multi_turn", "messages": [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Hi!"},
        {"role": "assistant", "content": "Hello! How can I help?"},
        {"role": "user", "content": "Tell me a joke."}], "add_generation_prompt": True},
    {"name": "no_generation_prompt", "messages": [
        {"role": "user", "content": "Hi!"},
        {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": "Bye."}], "add_generation_prompt": False},
    {"name": "assistant_prefill", "messages": [
        {"role": "user", "content": "Write a haiku about rain."},
        {"role": "assistant", "content": "Soft rain on the roof"}], "add_generation_prompt": False},
    {"name": "tools", "messages": [
        {"role": "system", "content": "You can call tools."},
        {"role": "user", "content": "What's the weather in Paris?"}], "tools": TOOLS, "add_generation_prompt": True},
    {"name": "tools_no_system", "messages": [
        {"role": "user", "content": "What's the weather in Paris?"}], "tools": TOOLS, "add_generation_prompt": True},
    {"name": "tool_call", "messages": [
        {"role": "user", "content": "What's the weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [CALL_1]},
        {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "{\"temperature\": 18, \"sky\": \"clear\"}"}],
     "tools": TOOLS, "add_generation_prompt": True},
    {"name": "tool_calls_multi", "messages": [
        {"role": "system", "content": "You can call tools."},
        {"role": "user", "content": "Weather in Paris and the height of the Eiffel tower?"},
        {"role": "assistant", "content": None, "tool_calls": [CALL_1, CALL_2]},
        {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "18 C, clear"},
        {"role": "tool", "tool_call_id": "call_2", "name": "search", "content": "330 m"},
        {"role": "assistant", "content": "It is 18 C and clear; the tower is 330 m tall."},
        {"role": "user", "content": "Thanks!"}],
     "tools": TOOLS, "add_generation_prompt": True},
    {"name": "thinking_on", "messages": [{"role": "user", "content": "Solve 12 * 13."}], "add_generation_prompt": True, "thinking": True},
    {"name": "thinking_off", "messages": [{"role": "user", "content": "Solve 12 * 13."}], "add_generation_prompt": True, "thinking": False},
    {"name": "reasoning_history", "messages": [
        {"role": "user", "content": "Solve 12 * 13."},
        {"role": "assistant", "content": "156", "reasoning_content": "12 * 13 = 12 * 10 + 12 * 3 = 156."},
        {"role": "user", "content": "And 12 * 14?"}], "add_generation_prompt": True, "thinking": True},
    {"name": "content_parts", "messages": [
        {"role": "system", "content": [{"type": "text", "text": "Be concise."}]},
        {"role": "user", "content": [{"type": "text", "text": "Describe this:"}, {"type": "text", "text": "a red apple"}]}],
     "add_generation_prompt": True},
    {"name": "unicode", "messages": [
        {"role": "user", "content": "Ünïcödé ✓ 😀 \"quotes\" 'single' {{ braces }} {% tag %} <tag> & \\ back\nnew line\ttab"}],
     "add_generation_prompt": True},
]


def case_context(case, bos=BOS, eos=EOS, tools_none=False):
    """The render context kiln's chat wrapper builds for a case (Hugging Face's message
    normalization: null fields dropped, reasoning aliased to `thinking` / `reasoning_content`)."""
    messages = _alias_reasoning_fields(_normalize_chat_messages(json.loads(json.dumps(case["messages"]))))
    ctx = {"messages": messages, "add_generation_prompt": case["add_generation_prompt"], "bos_token": bos, "eos_token": eos}
    if case.get("tools") is not None:
        ctx["tools"] = json.loads(json.dumps(case["tools"]))
    elif tools_none:
        ctx["tools"] = None
    if "thinking" in case:
        ctx["enable_thinking"] = case["thinking"]
        ctx["thinking"] = case["thinking"]
    return ctx


def render_cases(source, bos=BOS, eos=EOS):
    results = {}
    hf_differs = []
    for case in CASES:
        out, err = render(source, case_context(case, bos, eos))
        results[case["name"]] = result(source, case_context(case, bos, eos))
        if case.get("tools") is None:
            # Hugging Face passes tools=None when no tools are given; kiln (and llama.cpp) leave it undefined.
            out2, err2 = render(source, case_context(case, bos, eos, tools_none=True))
            if (out2, err2 is None) != (out, err is None):
                hf_differs.append(case["name"])
    return results, hf_differs


def write_json(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False, indent=1, sort_keys=False)
        f.write("\n")


def model_templates(models_dir):
    """(name, template, bos_text, eos_text) of the installed real models that have a chat template."""
    import gguf

    found = []
    for name, file in (("smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"), ("gemma3", "gemma-3-270m-q4_k_m.gguf")):
        path = Path(models_dir) / file
        if not path.exists():
            print(f"note: {path} not installed, skipping", file=sys.stderr)
            continue
        reader = gguf.GGUFReader(str(path))

        def field(key):
            f = reader.fields.get(key)
            return f.contents() if f is not None else None

        template = field("tokenizer.chat_template")
        if template is None:
            print(f"note: {file} has no tokenizer.chat_template", file=sys.stderr)
            continue
        tokens = field("tokenizer.ggml.tokens")
        bos_id, eos_id = field("tokenizer.ggml.bos_token_id"), field("tokenizer.ggml.eos_token_id")
        found.append((name, file, template, tokens[bos_id] if bos_id is not None else "", tokens[eos_id] if eos_id is not None else ""))
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=os.environ.get("KILN_MODELS", str(Path.home() / ".cache" / "kiln" / "models")))
    args = ap.parse_args()

    names = [s[0] for s in SNIPPETS]
    assert len(names) == len(set(names)), "snippet names must be unique"
    snippets = []
    for name, source, context in SNIPPETS:
        entry = {"name": name, "template": source, "context": context}
        entry.update(result(source, context))
        snippets.append(entry)
    write_json(OUT / "snippets.json", snippets)

    write_json(OUT / "cases.json", {"bos_token": BOS, "eos_token": EOS, "now": FIXED_NOW.isoformat(), "cases": CASES})

    differs = {}
    for path in sorted(TEMPLATES.glob("*.jinja")):
        source = path.read_text(encoding="utf-8")
        results, hf_differs = render_cases(source)
        write_json(OUT / "templates" / (path.stem + ".json"), {"template": path.name, "results": results})
        if hf_differs:
            differs[path.stem] = hf_differs
    for name, file, template, bos, eos in model_templates(args.models):
        results, hf_differs = render_cases(template, bos, eos)
        write_json(OUT / "models" / (name + ".json"),
                   {"model": file, "template": template, "bos_token": bos, "eos_token": eos, "results": results})
        if hf_differs:
            differs["model:" + name] = hf_differs
    if differs:
        print("cases where tools=None (Hugging Face) and tools undefined (kiln) render differently:")
        for k, v in differs.items():
            print(f"  {k}: {', '.join(v)}")
    print(f"wrote {len(snippets)} snippets, {len(CASES)} cases x {len(list(TEMPLATES.glob('*.jinja')))} templates")


if __name__ == "__main__":
    main()
