"""Several models on one server (-m twice), loaded on first use, the least
recently used one unloaded past --max-models; /models/load, /models/unload,
/models/cache."""
import json
import time
import urllib.error
import urllib.request

import pytest

from conftest import MODELS, SMOLLM2, KilnServer, require

GEMMA = MODELS / "gemma-3-270m-q4_k_m.gguf"


def call(url, path, body=None):
    req = urllib.request.Request(url + path, data=json.dumps(body).encode() if body is not None else None)
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def test_two_models_one_resident():
    require(GEMMA.exists(), f"model not installed: {GEMMA} (run ./setup.sh)")
    openai = pytest.importorskip("openai")
    s = KilnServer("-m", str(GEMMA), "--max-models", "1", "--parallel", "2")
    try:
        url = s.url
        listed = call(url, "/v1/models")[1]["data"]
        assert [m["id"] for m in listed] == [SMOLLM2.stem, GEMMA.stem]  # the first -m is the default
        assert [m["meta"]["loaded"] for m in listed] == [True, False]
        c = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0, timeout=120)
        smol = c.completions.create(model=SMOLLM2.stem, prompt="The sky is", max_tokens=6, temperature=0).choices[0].text
        gemma = c.chat.completions.create(model=GEMMA.stem, messages=[{"role": "user", "content": "Hi"}],
                                          max_tokens=6, temperature=0)
        assert gemma.model == GEMMA.stem and gemma.choices[0].message.content is not None
        cache = call(url, "/models/cache")[1]
        assert cache["resident"] == 1 and cache["models"] == [GEMMA.stem]
        assert cache["loads"] == 2 and cache["evictions"] == 1 and cache["capacity"] == 1
        # Back to the first model: loaded again, the same greedy text.
        again = c.completions.create(model=SMOLLM2.stem, prompt="The sky is", max_tokens=6, temperature=0).choices[0].text
        assert again == smol
        assert call(url, "/models/cache")[1]["loads"] == 3
        assert call(url, "/models/unload", {"model": SMOLLM2.stem}) == (200, {"model": SMOLLM2.stem, "status": "unloaded"})
        assert call(url, "/models/cache")[1]["resident"] == 0
        assert call(url, "/models/load", {"model": GEMMA.stem})[1]["status"] == "loaded"
        # Unloading releases the memory: the process's resident set shrinks by about the file.
        rss_loaded = rss_kib(s.proc.pid)
        assert call(url, "/models/unload", {"model": GEMMA.stem})[1]["status"] == "unloaded"
        rss_unloaded = rss_kib(s.proc.pid)
        print(f"\nRSS with {GEMMA.name} resident: {rss_loaded} KiB; unloaded: {rss_unloaded} KiB")
        assert rss_loaded - rss_unloaded > GEMMA.stat().st_size // 1024 // 2
        status, body = call(url, "/models/load", {"model": "nope"})
        assert status == 404 and GEMMA.stem in body["error"]["message"]
        # Ollama's keep_alive 0: the model is unloaded once the reply has been sent.
        ollama = pytest.importorskip("ollama")
        o = ollama.Client(host=url, timeout=120)
        r = o.generate(model=GEMMA.stem, prompt="Hi", options={"num_predict": 4}, keep_alive=0, stream=False)
        assert r.done
        assert call(url, "/models/cache")[1]["resident"] == 0
        parts = list(o.generate(model=GEMMA.stem, prompt="Hi", options={"num_predict": 4}, keep_alive="0s", stream=True))
        assert parts[-1].done
        for _ in range(50):  # the stream's end is sent before the model is released
            if call(url, "/models/cache")[1]["resident"] == 0:
                break
            time.sleep(0.05)
        assert call(url, "/models/cache")[1]["resident"] == 0
        assert o.generate(model=GEMMA.stem, prompt="", keep_alive="5m").done_reason == "load"
        assert o.generate(model=GEMMA.stem, prompt="", keep_alive=0).done_reason == "unload"
        with pytest.raises(ollama.ResponseError) as e:
            o.generate(model=GEMMA.stem, prompt="Hi", keep_alive="soon")
        assert e.value.status_code == 400 and "keep_alive" in e.value.error
    finally:
        s.stop()
