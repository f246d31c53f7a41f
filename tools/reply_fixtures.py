#!/usr/bin/env python3
"""Renders assistant turns through every chat template in tests/data/shared/templates
with Python jinja2 and writes tests/golden/reply/rendered_turns.json.

Each case is one assistant message (tool calls, text, reasoning) rendered the way
the template writes it into the conversation, i.e. what the model is trained to
generate after the generation prompt. The C++ test detects the template's format,
feeds the rendered reply to the ReplyParser (in every split) and checks that the
tool calls, text and reasoning come back.

The environment follows Hugging Face's (trim_blocks, lstrip_blocks, tojson without
ASCII escaping, raise_exception, strftime_now) with three additions llama.cpp also
has: list methods (append / pop) allowed, a from_json filter, and the
{% generation %} tag rendering its body. Dates are fixed so the output is stable.

    .venv/bin/python tools/reply_fixtures.py
"""
import json
import pathlib
import re
import sys

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.sandbox import SandboxedEnvironment

ROOT = pathlib.Path(__file__).resolve().parent.parent
TEMPLATES = ROOT / "tests" / "data" / "shared" / "templates"
OUT = ROOT / "tests" / "golden" / "reply" / "rendered_turns.json"

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Weather forecast for a place",
        "parameters": {"type": "object", "properties": {
            "location": {"type": "string", "description": "City name"},
            "days": {"type": "integer", "description": "Number of days"}},
            "required": ["location"]}}},
    {"type": "function", "function": {
        "name": "get_time", "description": "Current time in a time zone",
        "parameters": {"type": "object", "properties": {
            "timezone": {"type": "string", "description": "IANA zone"}},
            "required": ["timezone"]}}},
]

USER = {"role": "user", "content": "What's the weather in São Paulo for the next 3 days?"}
WEATHER = {"name": "get_weather", "arguments": {"location": "São Paulo", "days": 3}}
TIME = {"name": "get_time", "arguments": {"timezone": "America/Sao_Paulo"}}
CONTENT = "Let me check the forecast."
ANSWER = "It will be sunny in São Paulo, around 28 °C."
REASONING = "The user wants a 3-day forecast for São Paulo; I should use get_weather."


class GenerationExtension(jinja2.ext.Extension):
    """{% generation %}…{% endgeneration %} (assistant masks): renders the body."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.Scope(body).set_lineno(lineno)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(value, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    if hasattr(value, "__next__"):  # map() and select() give generators
        value = list(value)
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def make_env():
    env = SandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                               extensions=[jinja2.ext.loopcontrols, GenerationExtension])
    env.filters["tojson"] = tojson
    env.filters["from_json"] = json.loads
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: "2025-01-15" if "%Y" in fmt else "15 Jan 2025"
    return env


def tool_call(call, index, string_args):
    args = json.dumps(call["arguments"], ensure_ascii=False) if string_args else call["arguments"]
    # Nine letters and digits: Mistral templates refuse any other id.
    return {"id": ["abc123xyz", "def456uvw"][index], "type": "function",
            "function": {"name": call["name"], "arguments": args}}


def assistant(content, calls, reasoning, string_args):
    msg = {"role": "assistant", "content": content}
    if calls:
        msg["tool_calls"] = [tool_call(c, i, string_args) for i, c in enumerate(calls)]
    if reasoning:
        # Families name the field differently: reasoning_content (most), thinking
        # (GPT-OSS, LFM2.5), reasoning (Laguna).
        msg["reasoning_content"] = reasoning
        msg["thinking"] = reasoning
        msg["reasoning"] = reasoning
    return msg


CASES = [
    # name, content, calls, reasoning, thinking on
    ("call", None, [WEATHER], None, True),
    ("call_after_text", CONTENT, [WEATHER], None, True),
    ("two_calls", None, [WEATHER, TIME], None, True),
    ("answer_with_reasoning", ANSWER, [], REASONING, True),
    ("answer_thinking_off", ANSWER, [], None, False),
]


def render(template, messages, add_generation_prompt, thinking):
    return template.render(messages=messages, tools=TOOLS, add_generation_prompt=add_generation_prompt,
                           bos_token="", eos_token="", enable_thinking=thinking, thinking=thinking,
                           functions=json.dumps([t["function"] for t in TOOLS]), datetime="2025-01-15")


def common_prefix(a, b):
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def write_fuzz_seeds(cases):
    """fuzz/seeds/reply: one rendered turn per template, as fuzz_reply reads its
    input (byte 0 = 0x7F, or 0xFF when the prompt opens a think block: TEMPLATE
    '\\0' REPLY), when it fits the fuzzer's 8 KiB."""
    seeds = ROOT / "fuzz" / "seeds" / "reply"
    seeds.mkdir(parents=True, exist_ok=True)
    for old in seeds.glob("*.bin"):
        old.unlink()
    done = set()
    for c in cases:
        if c["template"] in done or not c["calls"]:
            continue
        head = b"\xff" if c["prompt_tail"].rstrip().endswith("<think>") else b"\x7f"
        data = head + (TEMPLATES / c["template"]).read_bytes() + b"\0" + c["reply"].encode()
        if len(data) <= 8192:
            (seeds / (c["template"].removesuffix(".jinja") + ".bin")).write_bytes(data)
            done.add(c["template"])


def main():
    env = make_env()
    cases, skipped = [], []
    for path in sorted(TEMPLATES.glob("*.jinja")):
        try:
            template = env.from_string(path.read_text())
        except jinja2.TemplateError as e:
            skipped.append({"template": path.name, "case": "*", "reason": f"does not compile: {e}"})
            continue
        seen = set()
        for name, content, calls, reasoning, thinking in CASES:
            reply = None
            reason = None
            for string_args in (False, True):
                # Tool-only turns: "" first (None prints as "None" in many templates),
                # then None for templates that test `content is none`.
                for c in ([content] if content is not None else ["", None]):
                    msgs = [USER, assistant(c, calls, reasoning, string_args)]
                    try:
                        prompt = render(template, [USER], True, thinking)
                        full = render(template, msgs, False, thinking)
                    except Exception as e:  # noqa: BLE001 — any template error means: try the next shape
                        reason = f"{type(e).__name__}: {e}"
                        continue
                    if full.startswith(prompt):
                        reply = full[len(prompt):]
                    else:
                        # The generation prompt adds text the history does not have
                        # (Apriel's "Here are my reasoning steps:"): the reply starts
                        # where they part, unless the prompt goes on with other turns.
                        n = common_prefix(prompt, full)
                        if "<" in prompt[n:] or "<" in prompt[max(0, n - 1):n]:
                            # …or it opens one tag (<think>) the history does not show:
                            # the reply starts at that tag.
                            n = prompt.rfind("<", 0, n + 1)
                            if n < 0 or not re.fullmatch(r"<[^<>]*>\s*", prompt[n:]):
                                reply = None
                                reason = "the assistant turn is not rendered where the generation prompt is"
                                continue
                        reply = full[n:]
                    missing = [x["name"] for x in calls if x["name"] not in reply]
                    if missing:
                        reply = None
                        reason = f"the template does not render {missing} in the assistant turn"
                        continue
                    break
                if reply is not None:
                    break
            if reply is None:
                skipped.append({"template": path.name, "case": name, "reason": reason})
                continue
            if reply in seen:
                continue
            seen.add(reply)
            cases.append({
                "template": path.name,
                "case": name,
                "thinking": thinking,
                "prompt_tail": prompt[-200:],
                "reply": reply,
                "calls": calls,
                # What the reply must give back: text and reasoning the template wrote.
                "content": (content or "") if (content and content in reply) else "",
                "reasoning": reasoning if (reasoning and reasoning in reply) else "",
            })
    # Multi-turn: the assistant message kiln::assistant_message() makes for a parsed
    # call (content "", arguments as an object) and the tool result after it go
    # back through each template.
    turn = [USER,
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "abc123xyz", "type": "function",
                 "function": {"name": "get_weather", "arguments": {"location": "Paris", "days": 3}}}]},
            {"role": "tool", "tool_call_id": "abc123xyz", "name": "get_weather", "content": '{"temperature": 21}'}]
    results = {}
    for path in sorted(TEMPLATES.glob("*.jinja")):
        try:
            out = render(env.from_string(path.read_text()), turn, True, True)
            after = out.split(USER["content"])[-1]
            results[path.name] = "ok" if "get_weather" in after and "temperature" in after else "drops the call or the result"
        except Exception as e:  # noqa: BLE001
            results[path.name] = f"{type(e).__name__}: {e}"
    OUT.parent.mkdir(parents=True, exist_ok=True)
    doc = {"generator": "tools/reply_fixtures.py", "jinja2": jinja2.__version__, "tools": TOOLS,
           "cases": cases, "skipped": skipped, "multi_turn": {"messages": turn, "results": results}}
    OUT.write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n")
    write_fuzz_seeds(cases)
    print(f"{len(cases)} cases, {len(skipped)} skipped -> {OUT.relative_to(ROOT)}")
    for s in skipped:
        print(f"  skipped {s['template']} / {s['case']}: {s['reason']}", file=sys.stderr)


if __name__ == "__main__":
    main()
