"""Every error status with OpenAI's body shape {"error": {message, type, param, code}}."""
import json
import threading
import time
import urllib.error
import urllib.request

import pytest

from conftest import KilnServer


def call(url, path, body=None, headers=None, method=None, raw=None):
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(url + path, data=data, headers={"Content-Type": "application/json", **(headers or {})},
                                 method=method)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def check_error(status, body, want_status, param=None, contains=None):
    assert status == want_status, body
    err = body["error"]
    assert set(err) >= {"message", "type", "param", "code"}
    assert err["message"]
    if param is not None:
        assert err["param"] == param
    if contains is not None:
        assert contains in err["message"]


CHAT = "/v1/chat/completions"
HELLO = [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize("field,value", [
    ("temperature", "hot"), ("max_tokens", 1.5), ("max_tokens", -3), ("top_p", 2), ("n", 0), ("stop", 5),
    ("stream", "yes"), ("logit_bias", {"x": 1}), ("top_logprobs", 3), ("seed", "1"), ("messages", "hi"),
])
def test_wrong_field_is_400_naming_it(server, field, value):
    body = {"messages": HELLO, "max_tokens": 2, field: value}
    status, resp = call(server.url, CHAT, body)
    check_error(status, resp, 400)
    assert field in resp["error"]["message"]


def test_unknown_fields_are_ignored(server):
    status, resp = call(server.url, CHAT, {"messages": HELLO, "max_tokens": 2, "temperature": 0, "frobnicate": 1})
    assert status == 200, resp


def test_malformed_json_and_bad_messages(server):
    check_error(*call(server.url, CHAT, raw=b"{not json"), 400)
    check_error(*call(server.url, CHAT, {"messages": []}), 400, param="messages")
    check_error(*call(server.url, CHAT, {"messages": [{"role": "wizard", "content": "x"}]}), 400,
                param="messages[0].role")
    check_error(*call(server.url, CHAT, {"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}), 400,
                param="messages[0].content[0].type")


def test_unsupported_features_say_why(server):
    # A schema keyword kiln cannot enforce is named, never ignored.
    status, body = call(server.url, CHAT, {"messages": HELLO, "response_format": {"type": "json_schema", "json_schema": {
        "name": "x", "schema": {"type": "object", "patternProperties": {"^a": {"type": "string"}}}}}})
    check_error(status, body, 400, param="response_format", contains="patternProperties")
    status, body = call(server.url, CHAT, {"messages": HELLO, "response_format": {"type": "xml"}})
    check_error(status, body, 400, param="response_format.type")
    # A forced call needs a tool-call syntax; SmolLM2's own template has none.
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    for choice in ["required", {"type": "function", "function": {"name": "f"}}]:
        status, body = call(server.url, CHAT, {"messages": HELLO, "tools": tools, "tool_choice": choice})
        check_error(status, body, 400, param="tool_choice", contains="tool-call syntax")


def test_prompt_longer_than_the_context_is_400(server):
    status, body = call(server.url, "/v1/completions", {"prompt": "word " * 3000, "max_tokens": 2})
    check_error(status, body, 400, contains="context")
    assert body["error"]["code"] == "context_length_exceeded"


def test_unknown_route_and_model_are_404(server):
    check_error(*call(server.url, "/v1/nothing"), 404)
    status, body = call(server.url, CHAT, {"model": "gpt-4o", "messages": HELLO})
    check_error(status, body, 404, param="model", contains="SmolLM2-135M-Instruct.Q4_1")


def test_body_too_large_is_413(server):
    big = b'{"prompt": "' + b"a" * (9 << 20) + b'"}'
    try:
        status, body = call(server.url, "/v1/completions", raw=big)
    except (ConnectionError, urllib.error.URLError):
        pytest.skip("the server closed the connection before the client finished sending")
    check_error(status, body, 413)


def test_embeddings_say_not_yet(server):
    check_error(*call(server.url, "/v1/embeddings", {"input": "x"}), 400, contains="embeddings")


@pytest.fixture(scope="module")
def keyed_server():
    s = KilnServer("--api-key", "sekrit", "--parallel", "1", "--max-queue", "1")
    yield s
    s.stop()


def test_api_key(keyed_server):
    url = keyed_server.url
    assert call(url, "/health")[0] == 200  # no key needed
    check_error(*call(url, "/v1/models"), 401)
    check_error(*call(url, "/v1/models", headers={"Authorization": "Bearer wrong"}), 401)
    assert call(url, "/v1/models", headers={"Authorization": "Bearer sekrit"})[0] == 200
    assert call(url, "/v1/models", headers={"x-api-key": "sekrit"})[0] == 200
    openai = pytest.importorskip("openai")
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=url + "/v1", api_key="nope", max_retries=0).models.list()


def test_full_queue_is_503_with_retry_after(keyed_server):
    url, key = keyed_server.url, {"Authorization": "Bearer sekrit"}
    # One long request takes the only slot, a second waits in the one-place queue.
    long_body = json.dumps({"prompt": "Once upon a time", "max_tokens": 400, "ignore_eos": True, "stream": True}).encode()
    first = urllib.request.urlopen(urllib.request.Request(url + "/v1/completions", data=long_body, headers=key), timeout=120)
    first.readline()  # it is generating
    second_done = threading.Event()

    def second():
        call(url, "/v1/completions", {"prompt": "Hi", "max_tokens": 2}, headers=key)
        second_done.set()

    t = threading.Thread(target=second)
    t.start()
    for _ in range(100):
        metrics = urllib.request.urlopen(urllib.request.Request(url + "/metrics", headers=key)).read().decode()
        if "kiln_requests_queued 1" in metrics:
            break
        time.sleep(0.05)
    req = urllib.request.Request(url + "/v1/completions", data=json.dumps({"prompt": "Hi", "max_tokens": 2}).encode(),
                                 headers=key)
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req, timeout=60)
    assert e.value.code == 503
    assert e.value.headers["Retry-After"]
    check_error(503, json.loads(e.value.read()), 503, contains="queue")
    first.close()  # cancels the long request; the queued one then runs
    t.join(60)
    assert second_done.is_set()
