"""Structured output over HTTP: response_format (chat), text.format (Responses)
and format (Ollama) constrain the reply to the schema whatever the sampler draws;
the outputs are checked with the schema here (a dict walk: the schemas are small)."""
import concurrent.futures
import json
import lzma
import pathlib
import urllib.error
import urllib.request

import pytest

from conftest import require

PERSON = {"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 12},
    "age": {"type": "integer", "minimum": 0, "maximum": 120},
    "city": {"enum": ["Paris", "Rome", "Oslo"]}},
    "required": ["name", "age", "city"], "additionalProperties": False}


def check_person(text):
    doc = json.loads(text)
    assert list(doc) == ["name", "age", "city"], text  # the schema's order, as the client wrote it
    assert isinstance(doc["name"], str) and len(doc["name"]) <= 12, text
    assert isinstance(doc["age"], int) and 0 <= doc["age"] <= 120, text
    assert doc["city"] in ("Paris", "Rome", "Oslo"), text


def test_chat_json_schema_at_temperature_one(client, model_id):
    for seed in range(4):
        r = client.chat.completions.create(
            model=model_id, messages=[{"role": "user", "content": "Describe a person."}], temperature=1.0, seed=seed,
            max_tokens=80, response_format={"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON,
                                                                                  "strict": True}})
        assert r.choices[0].finish_reason == "stop"
        check_person(r.choices[0].message.content)


def test_chat_json_object_streamed(client, model_id):
    chunks = client.chat.completions.create(
        model=model_id, messages=[{"role": "user", "content": "Give me a JSON object about the sea."}], temperature=0.8,
        seed=3, max_tokens=60, response_format={"type": "json_object"}, stream=True)
    text, finish = "", None
    for c in chunks:
        if c.choices:
            text += c.choices[0].delta.content or ""
            finish = c.choices[0].finish_reason or finish
    if finish == "stop":
        assert isinstance(json.loads(text), dict), text
    else:  # ran out of tokens: a prefix of an object
        assert text.startswith("{"), text


def test_responses_text_format(client, model_id):
    r = client.responses.create(model=model_id, input="Describe a person.", temperature=1.0, max_output_tokens=80,
                                text={"format": {"type": "json_schema", "name": "person", "schema": PERSON}})
    check_person(r.output_text)


@pytest.fixture(scope="module")
def ollama_client(server):
    ollama = pytest.importorskip("ollama")
    return ollama.Client(host=server.url, timeout=120)


def test_ollama_format_schema(ollama_client, model_id):
    r = ollama_client.chat(model=model_id, messages=[{"role": "user", "content": "Describe a person."}], format=PERSON,
                           options={"temperature": 1.0, "seed": 5, "num_predict": 80}, stream=False)
    check_person(r.message.content)


# Generation on a sample of the real-world schema corpus (JSONSchemaBench / MaskBench,
# ../shared/testdata): every reply that completes is valid for its schema, checked by
# the `jsonschema` package; replies cut by max_tokens are counted apart; schemas kiln
# refuses are skipped (the constraint tests count refusals by construct).
CORPUS = pathlib.Path(__file__).resolve().parents[3] / "shared" / "testdata" / "jsonschema" / "maskbench.jsonl.xz"


def corpus_sample():
    """Every 97th record whose schema is small (about 50 of the 6,798)."""
    out = []
    with lzma.open(CORPUS, "rt") as f:
        for i, line in enumerate(f):
            if i % 97:
                continue
            rec = json.loads(line)
            if len(json.dumps(rec["schema"])) <= 1500:
                out.append(rec)
    return out


def test_corpus_sample_generates_valid_documents(server, model_id, client):
    jsonschema = pytest.importorskip("jsonschema")
    require(CORPUS.exists(), f"JSON Schema corpus not found: {CORPUS}")
    sample = corpus_sample()
    done = {"compiled": 0, "refused": 0, "valid": 0, "length": 0}
    invalid = []

    def run(rec):
        body = {"model": model_id, "messages": [{"role": "user", "content": "Reply with a JSON document."}],
                "temperature": 1.0, "seed": 11, "n": 2, "max_tokens": 320,
                "response_format": {"type": "json_schema", "json_schema": {"name": "doc", "schema": rec["schema"]}}}
        req = urllib.request.Request(server.url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=300) as r:
                return rec, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return rec, {"status": e.code, "body": json.loads(e.read() or b"{}")}

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        results = list(pool.map(run, sample))
    for rec, reply in results:
        if reply.get("status") == 400 and reply["body"]["error"].get("code") == "unsupported_schema":
            done["refused"] += 1
            continue
        assert "choices" in reply, (rec["id"], reply)
        done["compiled"] += 1
        validator = jsonschema.validators.validator_for(rec["schema"])(rec["schema"])
        for choice in reply["choices"]:
            if choice["finish_reason"] != "stop":
                done["length"] += 1
                continue
            errors = list(validator.iter_errors(json.loads(choice["message"]["content"])))
            if errors:
                invalid.append((rec["id"], choice["message"]["content"][:200], errors[0].message))
            else:
                done["valid"] += 1
    print(f"\n[ figures ] corpus sample: {len(sample)} schemas, {done}")
    assert not invalid, invalid
    assert done["compiled"] >= len(sample) // 2
    assert done["valid"] >= done["compiled"] // 2
