"""The small routes: health, props, tokenize / detokenize, apply-template, metrics."""
import json
import urllib.request

from conftest import KilnServer


def get(url, path):
    with urllib.request.urlopen(url + path, timeout=30) as r:
        return r.status, r.read().decode(), r.headers


def post(url, path, body):
    req = urllib.request.Request(url + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)


def test_health_and_props(server):
    status, body, _ = get(server.url, "/health")
    assert status == 200 and json.loads(body)["status"] == "ok"
    props = json.loads(get(server.url, "/props")[1])
    assert props["total_slots"] == 4
    assert props["n_ctx"] == 2048
    assert "im_start" in props["chat_template"]
    assert (props["n_batch"], props["kv_type"], props["n_threads"]) == (256, "f16", 2)


def test_batch_size_and_kv_type_reach_the_engine():
    # kiln serve -b / --kv-type (or kiln autotune's tuned section, tests/cli) set every model's context.
    s = KilnServer("-b", "32", "--kv-type", "q8_0")
    try:
        props = json.loads(get(s.url, "/props")[1])
        assert (props["n_batch"], props["kv_type"], props["n_threads"]) == (32, "q8_0", 2)
        reply = post(s.url, "/v1/completions", {"prompt": "The capital of France is", "max_tokens": 4, "temperature": 0})
        assert reply["choices"][0]["text"] and reply["usage"]["completion_tokens"] == 4
    finally:
        s.stop()


def test_models_without_v1(server):
    data = json.loads(get(server.url, "/models")[1])["data"]
    assert data[0]["id"] == "SmolLM2-135M-Instruct.Q4_1"


def test_tokenize_detokenize_round_trip(server):
    ids = post(server.url, "/tokenize", {"content": "Hello, world!"})["tokens"]
    assert ids and all(isinstance(i, int) for i in ids)
    assert post(server.url, "/detokenize", {"tokens": ids})["content"] == "Hello, world!"
    pieces = post(server.url, "/tokenize", {"content": "Hello", "with_pieces": True})["tokens"]
    assert pieces[0]["piece"] == "Hello"


def test_apply_template(server):
    prompt = post(server.url, "/apply-template", {"messages": [{"role": "user", "content": "Hi"}]})["prompt"]
    assert "<|im_start|>user\nHi<|im_end|>" in prompt
    assert prompt.endswith("<|im_start|>assistant\n")


def test_metrics(server, client, model_id):
    client.completions.create(model=model_id, prompt="One two", max_tokens=2, temperature=0)
    status, text, headers = get(server.url, "/metrics")
    assert headers["Content-Type"].startswith("text/plain")
    values = {line.split()[0]: float(line.split()[1]) for line in text.splitlines() if line and not line.startswith("#")}
    assert values["kiln_requests_total"] >= 1
    assert values["kiln_tokens_predicted_total"] >= 2
    assert values["kiln_slots"] == 4
    assert "kiln_requests_queued" in values


def test_chat_input_tokens_equal_the_prompt_tokens(server, client, model_id):
    messages = [{"role": "user", "content": "Count my tokens, please."}]
    n = post(server.url, "/v1/chat/completions/input_tokens", {"messages": messages})["input_tokens"]
    r = client.chat.completions.create(model=model_id, messages=messages, max_tokens=1, temperature=0)
    assert n == r.usage.prompt_tokens
