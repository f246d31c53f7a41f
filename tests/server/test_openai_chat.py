"""/v1/chat/completions through the official openai client."""
import json

import pytest


def ask(client, model_id, text, **kw):
    kw.setdefault("max_tokens", 24)
    kw.setdefault("temperature", 0)
    return client.chat.completions.create(model=model_id, messages=[{"role": "user", "content": text}], **kw)


def test_models_lists_the_loaded_model(client, model_id):
    assert model_id == "SmolLM2-135M-Instruct.Q4_1"


def test_plain_chat(client, model_id):
    r = ask(client, model_id, "What is the capital of France?")
    assert r.object == "chat.completion"
    c = r.choices[0]
    assert c.message.role == "assistant"
    assert c.message.content
    assert c.finish_reason in ("stop", "length")
    assert r.usage.prompt_tokens > 5
    assert 0 < r.usage.completion_tokens <= 24
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens
    assert r.usage.prompt_tokens_details.cached_tokens >= 0
    timings = r.model_extra["timings"]
    assert timings["predicted_n"] == r.usage.completion_tokens


def test_content_parts_equal_a_string(client, model_id):
    a = ask(client, model_id, "Name a colour.")
    b = client.chat.completions.create(
        model=model_id, max_tokens=24, temperature=0,
        messages=[{"role": "user", "content": [{"type": "text", "text": "Name a "}, {"type": "text", "text": "colour."}]}])
    assert a.choices[0].message.content == b.choices[0].message.content


def test_streamed_deltas_concatenate_to_the_reply(client, model_id):
    whole = ask(client, model_id, "Write a sentence about the sea.", max_tokens=40)
    stream = ask(client, model_id, "Write a sentence about the sea.", max_tokens=40, stream=True,
                 stream_options={"include_usage": True})
    text, finish, usage, roles = "", None, None, []
    for chunk in stream:
        assert chunk.object == "chat.completion.chunk"
        if chunk.usage:
            usage = chunk.usage
        for c in chunk.choices:
            if c.delta.role:
                roles.append(c.delta.role)
            text += c.delta.content or ""
            finish = c.finish_reason or finish
    assert roles == ["assistant"]
    assert text == whole.choices[0].message.content
    assert finish == whole.choices[0].finish_reason
    assert usage.completion_tokens == whole.usage.completion_tokens
    # The same prompt again: its prefix is served from the cache.
    assert usage.prompt_tokens_details.cached_tokens > 0


def test_second_turn_reuses_the_first(client, model_id):
    messages = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Say hello to Ada."}]
    first = client.chat.completions.create(model=model_id, messages=messages, max_tokens=16, temperature=0)
    messages += [{"role": "assistant", "content": first.choices[0].message.content},
                 {"role": "user", "content": "And to Grace?"}]
    second = client.chat.completions.create(model=model_id, messages=messages, max_tokens=16, temperature=0)
    assert second.usage.prompt_tokens_details.cached_tokens >= first.usage.prompt_tokens - 2


def test_n_choices(client, model_id):
    r = ask(client, model_id, "Tell me a word.", n=3, temperature=1.0, seed=7, max_tokens=8)
    assert [c.index for c in r.choices] == [0, 1, 2]
    assert all(c.message.content is not None for c in r.choices)
    assert r.usage.completion_tokens >= 3
    again = ask(client, model_id, "Tell me a word.", n=3, temperature=1.0, seed=7, max_tokens=8)
    assert [c.message.content for c in again.choices] == [c.message.content for c in r.choices]


def test_stop_string(client, model_id):
    whole = ask(client, model_id, "Count from one to ten in words.", max_tokens=40).choices[0].message.content
    words = whole.split()
    assert len(words) > 3, whole
    stop = words[2]
    r = ask(client, model_id, "Count from one to ten in words.", max_tokens=40, stop=[stop])
    assert r.choices[0].finish_reason == "stop"
    assert stop not in r.choices[0].message.content
    assert whole.startswith(r.choices[0].message.content)


def test_logprobs(client, model_id):
    r = ask(client, model_id, "Hi!", max_tokens=6, logprobs=True, top_logprobs=3)
    content = r.choices[0].logprobs.content
    assert len(content) == r.usage.completion_tokens
    for entry in content:
        assert entry.logprob <= 0
        assert len(entry.top_logprobs) == 3
        # Greedy: the chosen token is the most likely one.
        assert entry.logprob == pytest.approx(entry.top_logprobs[0].logprob, abs=1e-5)


def test_assistant_prefill_is_continued(client, model_id):
    r = client.chat.completions.create(
        model=model_id, max_tokens=12, temperature=0,
        messages=[{"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": "The answer is"}])
    plain = ask(client, model_id, "What is 2+2?", max_tokens=12)
    assert r.choices[0].message.content
    assert r.choices[0].message.content != plain.choices[0].message.content


def test_cancelling_a_stream_leaves_the_server_working(client, model_id, server):
    stream = ask(client, model_id, "Write a long story about a dragon.", max_tokens=1500, stream=True,
                 temperature=0.7, seed=1)
    got = 0
    for chunk in stream:
        got += 1
        if got >= 5:
            break
    stream.close()
    r = ask(client, model_id, "Say yes.", max_tokens=4)
    assert r.choices[0].message.content is not None
    # The cancelled sequence has left its slot.
    import time
    import urllib.request
    for _ in range(50):
        metrics = urllib.request.urlopen(server.url + "/metrics").read().decode()
        if "kiln_requests_processing 0" in metrics:
            break
        time.sleep(0.1)
    assert "kiln_requests_processing 0" in metrics


def test_reasoning_and_template_kwargs_are_accepted(client, model_id):
    r = ask(client, model_id, "Hello", extra_body={"chat_template_kwargs": {"enable_thinking": False}})
    assert r.choices[0].message.content is not None


def _metric(server, name):
    import urllib.request
    text = urllib.request.urlopen(server.url + "/metrics").read().decode()
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not in /metrics")


def test_a_client_leaving_a_non_streaming_request_cancels_it(server):
    """Nothing is written before a non-streaming reply ends, so the server watches
    the socket: a client that closes it cancels the sequence within a step or so."""
    import http.client
    import time
    body = json.dumps({"messages": [{"role": "user", "content": "Write a long story about a dragon."}],
                       "max_tokens": 3000, "ignore_eos": True, "temperature": 0.7, "seed": 3})
    left_before = _metric(server, "kiln_client_disconnects_total")
    host, port = server.url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.request("POST", "/v1/chat/completions", body=body, headers={"Content-Type": "application/json"})
    # Generating (3000 tokens take far longer than this test waits).
    deadline = time.time() + 20
    while _metric(server, "kiln_requests_processing") < 1:
        assert time.time() < deadline, "the request never started"
        time.sleep(0.05)
    made = _metric(server, "kiln_tokens_predicted_total")
    conn.sock.close()
    conn.close()
    t0 = time.time()
    while _metric(server, "kiln_requests_processing") > 0:
        assert time.time() - t0 < 5, "the sequence went on after its client left"
        time.sleep(0.05)
    stopped_after = time.time() - t0
    assert _metric(server, "kiln_client_disconnects_total") == left_before + 1
    # It was cut short: far fewer than 3000 tokens were generated in all.
    assert _metric(server, "kiln_tokens_predicted_total") - made < 1500
    print(f"[ figures ] cancelled {stopped_after * 1000:.0f} ms after the client closed")
