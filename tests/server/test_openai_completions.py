"""/v1/completions: greedy over HTTP equals `kiln run --temp 0` byte for byte,
alone and with 8 requests at once on 4 slots."""
import subprocess
from concurrent.futures import ThreadPoolExecutor

from conftest import SMOLLM2, kiln_binary

PROMPTS = [
    "The capital of France is",
    "Once upon a time, in a small village,",
    "def fibonacci(n):",
    "The three primary colours are",
    "Water boils at",
    "My favourite book is",
    "The quick brown fox",
    "In 1969, astronauts",
]


def kiln_run(prompt, n):
    out = subprocess.run([str(kiln_binary()), "run", "-m", str(SMOLLM2), "--temp", "0", "-t", "2", "-n", str(n),
                          "-p", prompt], check=True, capture_output=True, timeout=120).stdout
    assert out.endswith(b"\n")
    return out[:-1].decode("utf-8", errors="replace")


def complete(client, model_id, prompt, **kw):
    kw.setdefault("max_tokens", 24)
    kw.setdefault("temperature", 0)
    return client.completions.create(model=model_id, prompt=prompt, **kw)


def test_greedy_equals_kiln_run(client, model_id):
    r = complete(client, model_id, PROMPTS[0])
    assert r.object == "text_completion"
    assert r.choices[0].text == kiln_run(PROMPTS[0], 24)
    assert r.usage.completion_tokens == 24
    assert r.choices[0].finish_reason == "length"


def test_concurrent_greedy_requests_equal_their_single_runs(client, model_id):
    alone = [complete(client, model_id, p).choices[0].text for p in PROMPTS]
    with ThreadPoolExecutor(8) as pool:
        together = list(pool.map(lambda p: complete(client, model_id, p).choices[0].text, PROMPTS))
    assert together == alone
    assert alone[1] == kiln_run(PROMPTS[1], 24)


def test_stream_concatenates_to_the_whole(client, model_id):
    whole = complete(client, model_id, PROMPTS[2]).choices[0].text
    text, finish = "", None
    for chunk in complete(client, model_id, PROMPTS[2], stream=True):
        for c in chunk.choices:
            text += c.text
            finish = c.finish_reason or finish
    assert text == whole
    assert finish == "length"


def test_token_ids_and_echo(client, model_id, server):
    import json
    import urllib.request
    req = urllib.request.Request(server.url + "/tokenize", data=json.dumps({"content": PROMPTS[3]}).encode())
    ids = json.load(urllib.request.urlopen(req))["tokens"]
    by_ids = complete(client, model_id, ids, max_tokens=8).choices[0].text
    by_text = complete(client, model_id, PROMPTS[3], max_tokens=8).choices[0].text
    assert by_ids == by_text
    echoed = complete(client, model_id, PROMPTS[3], max_tokens=8, echo=True).choices[0].text
    assert echoed == PROMPTS[3] + by_text


def test_logprobs_and_stop(client, model_id):
    r = complete(client, model_id, PROMPTS[0], max_tokens=8, logprobs=2)
    lp = r.choices[0].logprobs
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == 8
    assert "".join(lp.tokens) == r.choices[0].text
    assert all(len(t) <= 2 for t in lp.top_logprobs)
    s = complete(client, model_id, PROMPTS[0], max_tokens=8, stop=["."])
    assert s.choices[0].finish_reason == "stop"
    assert s.choices[0].text == r.choices[0].text.split(".")[0]


def test_n_with_seed_is_reproducible(client, model_id):
    a = complete(client, model_id, PROMPTS[4], n=3, temperature=1.0, seed=42, max_tokens=8)
    b = complete(client, model_id, PROMPTS[4], n=3, temperature=1.0, seed=42, max_tokens=8)
    assert [c.index for c in a.choices] == [0, 1, 2]
    assert [c.text for c in a.choices] == [c.text for c in b.choices]
