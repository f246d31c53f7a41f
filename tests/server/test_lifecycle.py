"""Shutdown: SIGTERM stops accepting and lets the stream in flight finish."""
import json
import urllib.request

from conftest import KilnServer


def test_sigterm_drains_the_stream_in_flight():
    s = KilnServer("--parallel", "2")
    try:
        body = json.dumps({"prompt": "Once upon a time", "max_tokens": 40, "ignore_eos": True, "temperature": 0,
                           "stream": True}).encode()
        stream = urllib.request.urlopen(urllib.request.Request(s.url + "/v1/completions", data=body), timeout=120)
        first = stream.readline()
        assert first.startswith(b"data: ")
        s.proc.terminate()  # SIGTERM while the reply is being generated
        rest = stream.read().decode()
        events = [line[6:] for line in (first.decode() + rest).splitlines() if line.startswith("data: ")]
        assert events[-1] == "[DONE]"
        finishes = [c["finish_reason"] for e in events[:-1] for c in json.loads(e)["choices"]]
        assert finishes[-1] == "length"
        assert s.proc.wait(30) == 0
    finally:
        s.stop()
    assert any("stopping" in line for line in s.log)


def test_drain_timeout_ends_the_rest_with_an_error_event():
    s = KilnServer("--parallel", "1", "--drain-timeout", "0.5")
    try:
        body = json.dumps({"prompt": "Once upon a time", "max_tokens": 2000, "ignore_eos": True, "stream": True}).encode()
        stream = urllib.request.urlopen(urllib.request.Request(s.url + "/v1/completions", data=body), timeout=120)
        stream.readline()
        s.proc.terminate()
        events = [line[6:] for line in stream.read().decode().splitlines() if line.startswith("data: ")]
        assert events[-1] == "[DONE]"
        last = json.loads(events[-2])
        assert "shut down" in last["error"]["message"]
        assert s.proc.wait(30) == 0
    finally:
        s.stop()
