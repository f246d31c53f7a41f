"""A tool call round trip over HTTP: the call parsed into tool_calls (streamed
and not), the tool result sent back, the next turn answered.

Neither real model has a tool-calling template, so this server gets the Qwen 2.5
template (tagged JSON calls in ChatML turns, which match SmolLM2's vocabulary).
SmolLM2-135M does not call tools by itself: the request prefills the assistant's
reply with the opening of a call (the conversation's last message is the
assistant's, so it is continued) and the model writes the arguments and the
closing tag, as tests/chat/test_tool_round_trip.cpp does through the library.
"""
import json

import pytest

from conftest import QWEN_TEMPLATE, KilnServer

TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather in a city",
    "parameters": {"type": "object", "properties": {"location": {"type": "string", "description": "The city"}},
                   "required": ["location"]}}}]
PREFILL = '<tool_call>\n{"name": "get_weather", "arguments": {"location": "'
QUESTION = {"role": "user", "content": "What is the weather like in Paris right now?"}


def test_tool_call_round_trip(tool_client):
    c = tool_client
    first = c.chat.completions.create(model="", messages=[QUESTION, {"role": "assistant", "content": PREFILL}],
                                      tools=TOOLS, temperature=0, max_tokens=40)
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls", choice
    calls = choice.message.tool_calls
    assert len(calls) == 1
    assert calls[0].id.startswith("call_")
    assert calls[0].function.name == "get_weather"
    args = json.loads(calls[0].function.arguments)
    assert args["location"]

    # Streamed: the same call, its arguments as deltas the client accumulates.
    stream = c.chat.completions.create(model="", messages=[QUESTION, {"role": "assistant", "content": PREFILL}],
                                       tools=TOOLS, temperature=0, max_tokens=40, stream=True)
    name, arguments, finish, pieces, ids = "", "", None, 0, []
    for chunk in stream:
        for ch in chunk.choices:
            for tc in ch.delta.tool_calls or []:
                assert tc.index == 0
                if tc.id:
                    ids.append(tc.id)
                name += (tc.function.name or "") if tc.function else ""
                if tc.function and tc.function.arguments:
                    arguments += tc.function.arguments
                    pieces += 1
            finish = ch.finish_reason or finish
    assert name == "get_weather"
    assert len(ids) == 1 and ids[0].startswith("call_")
    # The arguments stream as the model writes them (several deltas), and join to
    # the very string the non-streamed reply carries (the model's own JSON text).
    assert pieces > 1, pieces
    assert arguments == calls[0].function.arguments
    assert json.loads(arguments) == args
    assert finish == "tool_calls"

    # The result goes back; the model answers in text.
    messages = [QUESTION,
                {"role": "assistant", "content": None, "tool_calls": [calls[0].model_dump()]},
                {"role": "tool", "tool_call_id": calls[0].id, "content": json.dumps({"temperature_c": 18, "condition": "sunny"})}]
    second = c.chat.completions.create(model="", messages=messages, tools=TOOLS, temperature=0, max_tokens=48)
    assert second.choices[0].message.content
    assert not second.choices[0].message.tool_calls
    assert second.choices[0].finish_reason != "tool_calls"
    assert second.usage.prompt_tokens_details.cached_tokens > 0


def test_tool_choice_none_offers_no_tools(tool_client):
    r = tool_client.chat.completions.create(model="", messages=[QUESTION], tools=TOOLS, tool_choice="none",
                                            temperature=0, max_tokens=16)
    assert not r.choices[0].message.tool_calls


def test_unfinished_tool_call_is_reported_not_fatal(tool_client):
    """A call the model leaves unfinished (cut by max_tokens) is listed in the
    choice's errors; the response is a 200 and the server goes on."""
    r = tool_client.chat.completions.create(
        model="", messages=[QUESTION, {"role": "assistant", "content": PREFILL}], tools=TOOLS, temperature=0,
        max_tokens=1)
    choice = r.choices[0]
    assert not choice.message.tool_calls
    assert choice.model_extra.get("errors"), choice
    assert choice.finish_reason == "length"
    again = tool_client.chat.completions.create(model="", messages=[QUESTION], temperature=0, max_tokens=8)
    assert again.choices[0].message.content is not None
