"""/v1/messages through the official anthropic client."""
import json

import pytest

from conftest import KilnServer
from test_tools import PREFILL, QWEN_TEMPLATE

# This client release has no temperature argument; the field still exists in the API.
GREEDY = {"temperature": 0}


@pytest.fixture(scope="module")
def anthropic_client(server):
    anthropic = pytest.importorskip("anthropic")
    return anthropic.Anthropic(base_url=server.url, api_key="unused", max_retries=0, timeout=120)


def test_message(anthropic_client, model_id):
    r = anthropic_client.messages.create(model=model_id, max_tokens=24, extra_body=GREEDY, system="You are terse.",
                                         messages=[{"role": "user", "content": "What is the capital of France?"}])
    assert r.type == "message" and r.role == "assistant"
    assert r.content[0].type == "text" and r.content[0].text
    assert r.stop_reason in ("end_turn", "max_tokens")
    assert 0 < r.usage.output_tokens <= 24
    assert r.usage.input_tokens > 0


def test_stream_equals_the_message(anthropic_client, model_id):
    kw = dict(model=model_id, max_tokens=32, extra_body=GREEDY,
              messages=[{"role": "user", "content": [{"type": "text", "text": "Describe the sea."}]}])
    whole = anthropic_client.messages.create(**kw)
    with anthropic_client.messages.stream(**kw) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == whole.content[0].text
    assert final.content[0].text == text
    assert final.stop_reason == whole.stop_reason
    assert final.usage.output_tokens == whole.usage.output_tokens


def test_count_tokens(anthropic_client, model_id):
    r = anthropic_client.messages.count_tokens(model=model_id, messages=[{"role": "user", "content": "Hello there"}])
    assert r.input_tokens > 3


def test_errors_in_anthropic_shape(anthropic_client, model_id):
    anthropic = pytest.importorskip("anthropic")
    with pytest.raises(anthropic.NotFoundError) as e:
        anthropic_client.messages.create(model="claude-9", max_tokens=4, messages=[{"role": "user", "content": "x"}])
    assert e.value.body["type"] == "error"
    assert "SmolLM2" in e.value.body["error"]["message"]
    with pytest.raises(anthropic.BadRequestError) as e:
        anthropic_client.messages.create(model=model_id, max_tokens=4, extra_body={"temperature": "hot"},
                                         messages=[{"role": "user", "content": "x"}])
    assert e.value.body["error"]["type"] == "invalid_request_error"


def test_tool_use_round_trip():
    """Tool use with the Qwen 2.5 template and an assistant prefill that opens the
    call (SmolLM2-135M does not call tools by itself; see test_tools.py)."""
    anthropic = pytest.importorskip("anthropic")
    s = KilnServer("--chat-template-file", str(QWEN_TEMPLATE), "--parallel", "1")
    try:
        c = anthropic.Anthropic(base_url=s.url, api_key="unused", max_retries=0, timeout=120)
        tools = [{"name": "get_weather", "description": "Get the current weather in a city",
                  "input_schema": {"type": "object", "properties": {"location": {"type": "string"}},
                                   "required": ["location"]}}]
        question = {"role": "user", "content": "What is the weather like in Paris right now?"}
        r = c.messages.create(model="", max_tokens=40, extra_body=GREEDY, tools=tools,
                              messages=[question, {"role": "assistant", "content": PREFILL}])
        assert r.stop_reason == "tool_use"
        use = [b for b in r.content if b.type == "tool_use"]
        assert len(use) == 1 and use[0].name == "get_weather" and use[0].input["location"]
        with c.messages.stream(model="", max_tokens=40, extra_body=GREEDY, tools=tools,
                               messages=[question, {"role": "assistant", "content": PREFILL}]) as stream:
            pieces = [e.delta.partial_json for e in stream
                      if e.type == "content_block_delta" and e.delta.type == "input_json_delta"]
            final = stream.get_final_message()
        streamed = [b for b in final.content if b.type == "tool_use"]
        assert streamed[0].input == use[0].input
        # The input streams as the model writes it, in several pieces that join to its JSON.
        assert len(pieces) > 1, pieces
        assert json.loads("".join(pieces)) == use[0].input
        answer = c.messages.create(model="", max_tokens=32, extra_body=GREEDY, tools=tools, messages=[
            question,
            {"role": "assistant", "content": [{"type": "tool_use", "id": use[0].id, "name": "get_weather",
                                               "input": use[0].input}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use[0].id,
                                          "content": json.dumps({"temperature_c": 18, "condition": "sunny"})}]}])
        assert answer.content and answer.content[0].type == "text" and answer.content[0].text
        assert answer.stop_reason != "tool_use"
    finally:
        s.stop()


def test_stop_sequence_is_reported(anthropic_client, model_id):
    """A reply ended by one of stop_sequences says so, and which one (streamed too)."""
    kw = dict(model=model_id, max_tokens=64, extra_body=GREEDY, stop_sequences=["zzz", "e"],
              messages=[{"role": "user", "content": "Describe the sea in one sentence."}])
    r = anthropic_client.messages.create(**kw)
    assert r.stop_reason == "stop_sequence" and r.stop_sequence == "e"
    assert "e" not in r.content[0].text
    with anthropic_client.messages.stream(**kw) as stream:
        final = stream.get_final_message()
    assert final.stop_reason == "stop_sequence" and final.stop_sequence == "e"
    assert final.content[0].text == r.content[0].text
    plain = anthropic_client.messages.create(**dict(kw, stop_sequences=["\x01"]))
    assert plain.stop_sequence is None and plain.stop_reason in ("end_turn", "max_tokens")
