"""Generation correctness on a CI-sized sample of the hand-written schema corpus
(tests/server/generation_schemas.py): SmolLM2 at temperature 1, 2 samples per
schema, every completed reply validated with `jsonschema` (formats included).
Replies cut by max_tokens are counted apart. bench/schema_generation.py runs the
whole corpus on both real models (a long check)."""
import concurrent.futures
import json
import urllib.error
import urllib.request

import pytest

import generation_schemas


def generate(server, model_id, prompt, schema, n, seed, max_tokens=200):
    body = {"model": model_id, "messages": [{"role": "user", "content": prompt + " Reply in JSON."}],
            "temperature": 1.0, "seed": seed, "n": n, "max_tokens": max_tokens,
            "response_format": {"type": "json_schema", "json_schema": {"name": "doc", "schema": schema, "strict": True}}}
    req = urllib.request.Request(server.url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=600) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as e:
        return {"status": e.code, "body": json.loads(e.read() or b"{}")}


def test_sample_of_the_corpus_generates_valid_documents(server, model_id):
    pytest.importorskip("jsonschema")
    sample = generation_schemas.ALL[::5]  # 21 of 105, keywords and tool definitions alike
    counts = {"valid": 0, "length": 0}
    invalid, refused = [], []

    def run(entry):
        name, prompt, schema = entry
        return entry, generate(server, model_id, prompt, schema, n=2, seed=7)

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        results = list(pool.map(run, sample))
    for (name, _, schema), reply in results:
        if "choices" not in reply:
            refused.append((name, reply))
            continue
        v = generation_schemas.validator(schema)
        for choice in reply["choices"]:
            if choice["finish_reason"] != "stop":
                counts["length"] += 1
                continue
            errors = list(v.iter_errors(json.loads(choice["message"]["content"])))
            if errors:
                invalid.append((name, choice["message"]["content"][:200], errors[0].message))
            else:
                counts["valid"] += 1
    print(f"\n[ figures ] generation sample: {len(sample)} schemas x 2, {counts}")
    assert not refused, refused  # every schema of the corpus is one kiln enforces
    assert not invalid, invalid
    assert counts["valid"] >= len(sample)  # most replies complete within max_tokens
