"""Forced and lazy tool calls over HTTP: tool_choice required / a named function
(OpenAI chat and Responses) and Anthropic's tool_choice any / tool constrain the
reply to a call in the template's tool syntax, with arguments valid for the tool's
schema (checked here with `jsonschema`), at temperature 1; with auto, a call the
model opens (here: an assistant prefill that opens it, as in test_tools.py) is
held to the schema from the opening marker on.

The server gets the Qwen 2.5 template (Hermes-style <tool_call> JSON in ChatML
turns, which match SmolLM2's vocabulary): neither real model has a tool template.
"""
import json

import pytest

from conftest import QWEN_TEMPLATE, KilnServer

jsonschema = pytest.importorskip("jsonschema")

WEATHER = {"type": "object", "properties": {
    "location": {"type": "string", "minLength": 1, "maxLength": 20},
    "unit": {"enum": ["celsius", "fahrenheit"]}},
    "required": ["location", "unit"], "additionalProperties": False}
ADD = {"type": "object", "properties": {
    "a": {"type": "integer", "minimum": -1000, "maximum": 1000},
    "b": {"type": "integer", "minimum": -1000, "maximum": 1000}},
    "required": ["a", "b"], "additionalProperties": False}
SCHEMAS = {"get_weather": WEATHER, "add": ADD}
TOOLS = [{"type": "function", "function": {"name": n, "description": d, "parameters": SCHEMAS[n]}}
         for n, d in [("get_weather", "Get the current weather in a city"), ("add", "Add two integers")]]
QUESTION = {"role": "user", "content": "What is the weather like in Paris right now?"}
CHAT = "/v1/chat/completions"


@pytest.fixture(scope="module")
def tool_server():
    s = KilnServer("--chat-template-file", str(QWEN_TEMPLATE), "--parallel", "4")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def oa(tool_server):
    openai = pytest.importorskip("openai")
    return openai.OpenAI(base_url=tool_server.url + "/v1", api_key="unused", max_retries=0, timeout=120)


def check_call(name, arguments):
    assert name in SCHEMAS, name
    args = json.loads(arguments) if isinstance(arguments, str) else arguments
    jsonschema.validate(args, SCHEMAS[name])
    return args


def test_required_is_always_a_valid_call(oa):
    complete = 0
    for seed in range(4):
        r = oa.chat.completions.create(model="", messages=[QUESTION], tools=TOOLS, tool_choice="required",
                                       temperature=1.0, seed=seed, max_tokens=120)
        choice = r.choices[0]
        if choice.finish_reason == "length":
            continue
        complete += 1
        assert choice.finish_reason == "tool_calls", choice
        assert choice.message.tool_calls, choice
        assert not (choice.message.content or "").strip(), choice.message.content
        for call in choice.message.tool_calls:
            check_call(call.function.name, call.function.arguments)
    assert complete >= 2


def test_named_function_and_no_parallel_calls(oa):
    for seed in range(3):
        r = oa.chat.completions.create(model="", messages=[QUESTION], tools=TOOLS, temperature=1.0, seed=seed,
                                       tool_choice={"type": "function", "function": {"name": "add"}}, max_tokens=80)
        choice = r.choices[0]
        if choice.finish_reason == "length":
            continue
        assert [c.function.name for c in choice.message.tool_calls] == ["add"]
        check_call("add", choice.message.tool_calls[0].function.arguments)
    r = oa.chat.completions.create(model="", messages=[QUESTION], tools=TOOLS, tool_choice="required", seed=9,
                                   parallel_tool_calls=False, temperature=1.0, max_tokens=120)
    if r.choices[0].finish_reason != "length":
        assert len(r.choices[0].message.tool_calls) == 1


def test_required_streamed_deltas_make_the_call(oa):
    stream = oa.chat.completions.create(model="", messages=[QUESTION], tools=TOOLS, tool_choice="required",
                                        temperature=1.0, seed=3, max_tokens=120, stream=True)
    calls, finish = {}, None
    for chunk in stream:
        for ch in chunk.choices:
            for tc in ch.delta.tool_calls or []:
                c = calls.setdefault(tc.index, {"name": "", "arguments": ""})
                c["name"] += (tc.function.name or "") if tc.function else ""
                c["arguments"] += (tc.function.arguments or "") if tc.function else ""
            finish = ch.finish_reason or finish
    assert finish in ("tool_calls", "length")
    if finish == "tool_calls":
        assert calls
        for c in calls.values():
            check_call(c["name"], c["arguments"])


def test_auto_holds_an_opened_call_to_the_schema(oa):
    """The prefill opens a get_weather call and its location; from there the lazy
    constraint allows only a valid finish: a string of at most 20 characters and a
    unit from the enum, whatever temperature 1 draws."""
    prefill = '<tool_call>\n{"name": "get_weather", "arguments": {"location": "'
    complete = 0
    for seed in range(4):
        r = oa.chat.completions.create(model="", messages=[QUESTION, {"role": "assistant", "content": prefill}],
                                       tools=TOOLS, temperature=1.0, seed=seed, max_tokens=60)
        choice = r.choices[0]
        if choice.finish_reason == "length":
            continue
        complete += 1
        assert choice.finish_reason == "tool_calls", choice
        assert choice.message.tool_calls[0].function.name == "get_weather"
        for call in choice.message.tool_calls:  # the grammar allows more calls after it
            check_call(call.function.name, call.function.arguments)
    assert complete >= 2
    # Without a prefill the model answers in text (or calls validly).
    r = oa.chat.completions.create(model="", messages=[QUESTION], tools=TOOLS, temperature=1.0, seed=1, max_tokens=40)
    for call in r.choices[0].message.tool_calls or []:
        check_call(call.function.name, call.function.arguments)


def test_responses_tool_choice(oa):
    tools = [{"type": "function", "name": t["function"]["name"], "description": t["function"]["description"],
              "parameters": t["function"]["parameters"]} for t in TOOLS]
    for choice in ["required", {"type": "function", "name": "get_weather"}]:
        r = oa.responses.create(model="", tools=tools, tool_choice=choice, temperature=1.0, max_output_tokens=120,
                                input="What is the weather like in Paris right now?")
        calls = [item for item in r.output if item.type == "function_call"]
        if r.status == "incomplete":
            continue
        assert calls, r.output
        for c in calls:
            check_call(c.name, c.arguments)
        if isinstance(choice, dict):
            assert [c.name for c in calls] == ["get_weather"]


def test_anthropic_tool_choice(tool_server):
    anthropic = pytest.importorskip("anthropic")
    c = anthropic.Anthropic(base_url=tool_server.url, api_key="unused", max_retries=0, timeout=120)
    tools = [{"name": t["function"]["name"], "description": t["function"]["description"],
              "input_schema": t["function"]["parameters"]} for t in TOOLS]
    for tool_choice in [{"type": "any"}, {"type": "tool", "name": "add"},
                        {"type": "any", "disable_parallel_tool_use": True}]:
        r = c.messages.create(model="", max_tokens=120, tools=tools, tool_choice=tool_choice, extra_body={"temperature": 1.0},
                              messages=[{"role": "user", "content": "What is 2 plus 3?"}])
        if r.stop_reason == "max_tokens":
            continue
        assert r.stop_reason == "tool_use", r
        uses = [b for b in r.content if b.type == "tool_use"]
        assert uses
        for u in uses:
            check_call(u.name, u.input)
        if tool_choice["type"] == "tool":
            assert [u.name for u in uses] == ["add"]
        if tool_choice.get("disable_parallel_tool_use"):
            assert len(uses) == 1


def post(server, path, body):
    import urllib.error
    import urllib.request
    req = urllib.request.Request(server.url + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_forced_call_errors_name_the_field(tool_server):
    hello = [{"role": "user", "content": "hi"}]
    status, body = post(tool_server, CHAT, {"messages": hello, "tools": TOOLS,
                                            "tool_choice": {"type": "function", "function": {"name": "nope"}}})
    assert status == 400 and body["error"]["param"] == "tool_choice.function.name", body
    assert "'nope'" in body["error"]["message"]
    status, body = post(tool_server, CHAT, {"messages": hello, "tool_choice": "required"})
    assert status == 400 and body["error"]["param"] == "tool_choice", body
    bad = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "patternProperties": {"^x": {"type": "string"}}}}}]
    status, body = post(tool_server, CHAT, {"messages": hello, "tools": bad, "tool_choice": "required"})
    assert status == 400 and "patternProperties" in body["error"]["message"] and "'f'" in body["error"]["message"], body
    # auto with such a tool stays free text (unless the tool is strict).
    status, body = post(tool_server, CHAT, {"messages": hello, "tools": bad, "max_tokens": 4})
    assert status == 200, body
    bad[0]["function"]["strict"] = True
    status, body = post(tool_server, CHAT, {"messages": hello, "tools": bad, "max_tokens": 4})
    assert status == 400 and "patternProperties" in body["error"]["message"], body
    status, body = post(tool_server, CHAT, {"messages": hello + [{"role": "assistant", "content": "Sure"}], "tools": TOOLS,
                                            "tool_choice": "required"})
    assert status == 400 and body["error"]["param"] == "tool_choice", body
    # A prefill that opens a call the schema rejects.
    status, body = post(tool_server, CHAT, {"messages": hello + [{"role": "assistant", "content":
                                            '<tool_call>\n{"name": "add", "arguments": {"a": "x'}], "tools": TOOLS})
    assert status == 400 and body["error"]["param"] == "messages", body
    status, body = post(tool_server, "/v1/responses", {"input": "hi", "tools": [
        {"type": "function", "name": "f", "parameters": {"type": "object"}}], "tool_choice": {"type": "file_search"}})
    assert status == 400 and body["error"]["param"] == "tool_choice.type", body
