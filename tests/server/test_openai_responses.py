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
    with pytest.raises(openai.NotFoundError) as e:
        client.responses.create(model=model_id, input="x", previous_response_id="resp_123")
    assert "previous_response_id" in e.value.message and "resp_123" in e.value.message
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model=model_id, input="x", text={"format": {
            "type": "json_schema", "name": "x", "schema": {"type": "object", "not": {"required": ["a", "b"]}}}})
    assert "not" in e.value.message


def test_previous_response_id_continues_the_stored_conversation(client, model_id):
    openai = pytest.importorskip("openai")
    kw = dict(model=model_id, max_output_tokens=12, temperature=0)
    first = client.responses.create(input="My name is Ada. Say hello to me.", instructions="Be brief.", **kw)
    assert first.store is True and first.previous_response_id is None
    second = client.responses.create(input="What is my name?", previous_response_id=first.id, **kw)
    assert second.previous_response_id == first.id
    # The same conversation sent in full as items renders the same prompt and, greedy, the same reply
    # (instructions are not carried over, as OpenAI's are not).
    explicit = client.responses.create(input=[
        {"role": "user", "content": "My name is Ada. Say hello to me."},
        {"role": "assistant", "content": [{"type": "output_text", "text": first.output_text}]},
        {"role": "user", "content": "What is my name?"}], store=False, **kw)
    assert explicit.store is False
    assert second.usage.input_tokens == explicit.usage.input_tokens
    assert second.output_text == explicit.output_text
    # Chains go on: a third turn sees both earlier ones.
    third = client.responses.create(input="And again?", previous_response_id=second.id, **kw)
    assert third.usage.input_tokens > second.usage.input_tokens + second.usage.output_tokens
    # Stored responses can be read back, listed and deleted.
    got = client.responses.retrieve(second.id)
    assert got.id == second.id and got.output_text == second.output_text
    items = client.responses.input_items.list(third.id)
    assert len(items.data) == 5  # user, assistant, user, assistant, user
    client.responses.delete(first.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(first.id)
    with pytest.raises(openai.NotFoundError) as e:
        client.responses.create(input="x", previous_response_id=first.id, **kw)
    assert first.id in e.value.message
    with pytest.raises(openai.NotFoundError):  # store false kept nothing
        client.responses.retrieve(explicit.id)


def test_a_streamed_response_is_stored(client, model_id):
    with client.responses.stream(model=model_id, input="Count: one, two,", max_output_tokens=6, temperature=0) as stream:
        for _ in stream:
            pass
        final = stream.get_final_response()
    assert final.store is True
    assert client.responses.retrieve(final.id).output_text == final.output_text


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
    # Streamed: function_call_arguments.delta events as the model writes them,
    # joining to the same arguments string as the whole response's item.
    stream = tool_client.responses.create(model="", tools=tools, temperature=0, max_output_tokens=40, stream=True,
                                          input=[QUESTION, {"role": "assistant", "content": PREFILL}])
    pieces, done = [], None
    for event in stream:
        if event.type == "response.function_call_arguments.delta":
            pieces.append(event.delta)
        elif event.type == "response.function_call_arguments.done":
            done = event.arguments
    assert len(pieces) > 1, pieces
    assert "".join(pieces) == done == calls[0].arguments
    second = tool_client.responses.create(model="", tools=tools, temperature=0, max_output_tokens=40, input=[
        QUESTION, {"type": "function_call", "call_id": calls[0].call_id, "name": "get_weather",
                   "arguments": calls[0].arguments},
        {"type": "function_call_output", "call_id": calls[0].call_id, "output": '{"temperature_c": 18}'}])
    assert second.output_text


def test_the_store_forgets_the_least_recently_used_past_its_limit():
    openai = pytest.importorskip("openai")
    from conftest import KilnServer
    server = KilnServer("--parallel", "1", "--stored-responses", "2")
    try:
        c = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=120)
        kw = dict(model="", max_output_tokens=2, temperature=0)
        a, b = (c.responses.create(input=t, **kw) for t in ("one", "two"))
        c.responses.retrieve(a.id)  # a is now the more recently used
        c.responses.create(input="three", **kw)
        assert c.responses.retrieve(a.id).id == a.id
        with pytest.raises(openai.NotFoundError) as e:
            c.responses.retrieve(b.id)
        assert "--stored-responses 2" in e.value.message
    finally:
        server.stop()
    off = KilnServer("--parallel", "1", "--stored-responses", "0")
    try:
        c = openai.OpenAI(base_url=off.url + "/v1", api_key="unused", max_retries=0, timeout=120)
        r = c.responses.create(model="", input="one", max_output_tokens=2, temperature=0)
        assert r.store is False  # asked for (by default) but this server stores none
    finally:
        off.stop()
