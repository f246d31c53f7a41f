"""/v1/responses (the Responses API) through the official openai client."""
import json

import pytest

from test_tools import PREFILL, QUESTION, TOOLS


def test_response_and_stream(client, model_id):
    kw = dict(model=model_id, input="What is the capital of France?", instructions="Be brief.",
              max_output_tokens=24, temperature=0)
    r = client.responses.create(**kw)
    assert r.object == "response" and r.status in ("completed", "incomplete")
    assert r.output_text
    assert r.usage.output_tokens <= 24 and r.usage.input_tokens > 0
    events, text = [], ""
    with client.responses.stream(**kw) as stream:
        for event in stream:
            events.append(event.type)
            if event.type == "response.output_text.delta":
                text += event.delta
        final = stream.get_final_response()
    assert events[0] == "response.created" and events[-1] == "response.completed"
    assert text == r.output_text == final.output_text


def test_items_input_and_errors(client, model_id):
    openai = pytest.importorskip("openai")
    r = client.responses.create(model=model_id, max_output_tokens=8, temperature=0, input=[
        {"role": "user", "content": [{"type": "input_text", "text": "Hi!"}]}])
    assert r.output_text is not None
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model=model_id, input="x", previous_response_id="resp_123")
    assert "previous_response_id" in e.value.message
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model=model_id, input="x", text={"format": {
            "type": "json_schema", "name": "x", "schema": {"type": "object", "not": {"required": ["a"]}}}})
    assert "not" in e.value.message


def test_function_call_round_trip(tool_client):
    """The call comes out as a function_call item (prefilled as in test_tools.py:
    SmolLM2-135M does not call tools by itself); its output goes back as an item."""
    tools = [{"type": "function", "name": t["function"]["name"], "description": t["function"]["description"],
              "parameters": t["function"]["parameters"]} for t in TOOLS]
    first = tool_client.responses.create(model="", tools=tools, temperature=0, max_output_tokens=40, input=[
        QUESTION, {"role": "assistant", "content": PREFILL}])
    calls = [o for o in first.output if o.type == "function_call"]
    assert len(calls) == 1 and calls[0].name == "get_weather"
    assert json.loads(calls[0].arguments)["location"]
    second = tool_client.responses.create(model="", tools=tools, temperature=0, max_output_tokens=40, input=[
        QUESTION, {"type": "function_call", "call_id": calls[0].call_id, "name": "get_weather",
                   "arguments": calls[0].arguments},
        {"type": "function_call_output", "call_id": calls[0].call_id, "output": '{"temperature_c": 18}'}])
    assert second.output_text
