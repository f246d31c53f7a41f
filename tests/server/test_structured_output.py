"""Structured output over HTTP: response_format (chat), text.format (Responses)
and format (Ollama) constrain the reply to the schema whatever the sampler draws;
the outputs are checked with the schema here (a dict walk: the schemas are small)."""
import json

import pytest

PERSON = {"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 12},
    "age": {"type": "integer", "minimum": 0, "maximum": 120},
    "city": {"enum": ["Paris", "Rome", "Oslo"]}},
    "required": ["name", "age", "city"], "additionalProperties": False}


def check_person(text):
    doc = json.loads(text)
    assert set(doc) == {"name", "age", "city"}, text
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
