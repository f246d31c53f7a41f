"""64 clients streaming at once on 4 slots (the rest queue), with malformed and
unknown-model requests mixed in: every valid stream ends with its final event,
no 5xx. (A short version of the issue's load check; the long one is not here.)"""
import json
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor


def stream_one(url, i):
    if i % 16 == 5:
        req = urllib.request.Request(url + "/v1/chat/completions", data=b"{broken")
    elif i % 16 == 9:
        req = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(
            {"model": "nope", "messages": [{"role": "user", "content": "x"}]}).encode())
    else:
        req = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(
            {"messages": [{"role": "user", "content": f"Say the number {i}."}], "max_tokens": 4, "stream": True,
             "seed": i}).encode())
    try:
        with urllib.request.urlopen(req, timeout=300) as r:
            lines = [line for line in r.read().decode().splitlines() if line.startswith("data: ")]
            finishes = [c["finish_reason"] for line in lines[:-1] for c in json.loads(line[6:])["choices"]]
            return 200, lines[-1] == "data: [DONE]" and finishes[-1] in ("stop", "length")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())["error"]["message"] != ""


def test_64_concurrent_streams(server):
    with ThreadPoolExecutor(64) as pool:
        results = list(pool.map(lambda i: stream_one(server.url, i), range(64)))
    for i, (status, ok) in enumerate(results):
        want = 400 if i % 16 == 5 else 404 if i % 16 == 9 else 200
        assert status == want and ok, (i, status)
