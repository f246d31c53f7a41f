"""Ollama's routes through the official ollama client."""
import pytest


@pytest.fixture(scope="module")
def ollama_client(server):
    ollama = pytest.importorskip("ollama")
    return ollama.Client(host=server.url, timeout=120)


GREEDY = {"temperature": 0, "num_predict": 24}


def test_chat_stream_equals_whole(ollama_client, model_id):
    msgs = [{"role": "user", "content": "What is the capital of France?"}]
    whole = ollama_client.chat(model=model_id, messages=msgs, options=GREEDY, stream=False)
    assert whole.done and whole.message.role == "assistant" and whole.message.content
    assert whole.done_reason in ("stop", "length")
    assert 0 < whole.eval_count <= 24 and whole.prompt_eval_count > 0
    assert whole.eval_duration > 0
    parts = list(ollama_client.chat(model=model_id + ":latest", messages=msgs, options=GREEDY, stream=True))
    assert parts[-1].done and all(not p.done for p in parts[:-1])
    assert "".join(p.message.content for p in parts) == whole.message.content


def test_generate(ollama_client, model_id, client):
    r = ollama_client.generate(model=model_id, prompt="The capital of France is", raw=True,
                               options={"temperature": 0, "num_predict": 10}, stream=False)
    openai_text = client.completions.create(model=model_id, prompt="The capital of France is", max_tokens=10,
                                            temperature=0).choices[0].text
    assert r.response == openai_text
    chat_style = ollama_client.generate(model=model_id, prompt="Say hi.", options=GREEDY, stream=False)
    assert chat_style.response
    preload = ollama_client.generate(model=model_id, prompt="")
    assert preload.done and preload.done_reason == "load"


def test_tags_show_ps_version(ollama_client, model_id, server):
    tags = ollama_client.list()
    assert tags.models[0].model == model_id + ":latest"
    assert tags.models[0].size > 0
    show = ollama_client.show(model_id)
    assert "completion" in show.capabilities
    assert show.details.format == "gguf"
    ps = ollama_client.ps()
    assert ps.models[0].model == model_id + ":latest"
    import json
    import urllib.request
    assert json.load(urllib.request.urlopen(server.url + "/api/version"))["version"]


def test_errors(ollama_client, model_id):
    ollama = pytest.importorskip("ollama")
    with pytest.raises(ollama.ResponseError) as e:
        ollama_client.chat(model="llama3:8b", messages=[{"role": "user", "content": "x"}], stream=False)
    assert e.value.status_code == 404 and "SmolLM2" in e.value.error
    with pytest.raises(ollama.ResponseError) as e:
        ollama_client.chat(model=model_id, messages=[{"role": "user", "content": "x"}], stream=False,
                           format={"type": "object", "patternProperties": {"^a": {"type": "string"}}})
    assert e.value.status_code == 400 and "patternProperties" in e.value.error
    with pytest.raises(ollama.ResponseError) as e:
        ollama_client.chat(model=model_id, messages=[{"role": "user", "content": "x"}],
                           options={"temperature": "hot"}, stream=False)
    assert e.value.status_code == 400 and "options.temperature" in e.value.error
    with pytest.raises(ollama.ResponseError) as e:
        ollama_client.embed(model=model_id, input="x")
    assert e.value.status_code == 400


def test_stream_is_the_default_over_http(server, model_id):
    import json
    import urllib.request
    body = json.dumps({"model": model_id, "messages": [{"role": "user", "content": "Hi"}], "options": GREEDY}).encode()
    with urllib.request.urlopen(urllib.request.Request(server.url + "/api/chat", data=body), timeout=60) as r:
        assert r.headers["Content-Type"].startswith("application/x-ndjson")
        lines = [json.loads(line) for line in r.read().decode().splitlines() if line]
    assert len(lines) > 1 and lines[-1]["done"] and not lines[0]["done"]
