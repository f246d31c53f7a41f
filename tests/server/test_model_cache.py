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


def test_aliases_memory_budget_and_keep_alive(tmp_path):
    """Aliases from --aliases name the models; --models-memory unloads the least
    recently used model to make room; a positive Ollama keep_alive unloads an idle
    model when it runs out, a negative one keeps it."""
    require(GEMMA.exists(), f"model not installed: {GEMMA} (run ./setup.sh)")
    ollama = pytest.importorskip("ollama")
    aliases = tmp_path / "aliases.json"
    aliases.write_text(json.dumps({"gpt-4o-mini": SMOLLM2.stem, "small-gemma": GEMMA.name}))
    # Room for either model with its sequence memory (a few MiB at -c 512, one
    # sequence), never for both.
    sizes = sorted([SMOLLM2.stat().st_size, GEMMA.stat().st_size])
    budget = sizes[1] + sizes[0] // 2
    s = KilnServer("-m", str(GEMMA), "--parallel", "1", "--aliases", str(aliases),
                   "--models-memory", str(budget), ctx=512)
    try:
        url = s.url
        listed = call(url, "/v1/models")[1]["data"]
        ids = [m["id"] for m in listed]
        assert ids == [SMOLLM2.stem, "gpt-4o-mini", GEMMA.stem, "small-gemma"]
        assert listed[1]["meta"]["alias_of"] == SMOLLM2.stem and listed[0]["meta"]["aliases"] == ["gpt-4o-mini"]
        status, body = call(url, "/v1/completions", {"model": "gpt-4o-mini", "prompt": "Hi", "max_tokens": 2})
        assert status == 200 and body["model"] == SMOLLM2.stem
        cache = call(url, "/models/cache")[1]
        assert cache["bytes_budget"] == budget and cache["bytes"] <= budget and cache["models"] == [SMOLLM2.stem]
        # Loading the other model through its alias makes room: SmolLM2 goes.
        status, body = call(url, "/v1/chat/completions", {"model": "small-gemma:latest", "max_tokens": 2,
                                                          "messages": [{"role": "user", "content": "Hi"}]})
        assert status == 200 and body["model"] == GEMMA.stem
        cache = call(url, "/models/cache")[1]
        assert cache["models"] == [GEMMA.stem] and cache["evictions"] == 1 and cache["bytes"] <= budget
        status, body = call(url, "/v1/completions", {"model": "gpt-4", "prompt": "Hi"})
        assert status == 404 and "gpt-4o-mini" in body["error"]["message"]

        o = ollama.Client(host=url, timeout=120)
        # keep_alive 1.5 s: resident while in use, unloaded about 1.5 s after the reply.
        r = o.generate(model=GEMMA.stem, prompt="Hi", options={"num_predict": 2}, keep_alive="1500ms", stream=False)
        assert r.done
        ps = o.ps()
        assert [m.model for m in ps.models] == [GEMMA.stem + ":latest"]
        assert not ps.models[0].expires_at.isoformat().startswith("2999")
        t0 = time.time()
        while call(url, "/models/cache")[1]["resident"] and time.time() - t0 < 10:
            time.sleep(0.1)
        waited = time.time() - t0
        cache = call(url, "/models/cache")[1]
        assert cache["resident"] == 0 and cache["expirations"] == 1, cache
        assert 0.5 < waited < 5, waited
        metrics = urllib.request.urlopen(url + "/metrics", timeout=30).read().decode()
        assert "kiln_model_expirations_total 1" in metrics
        # A preload with a negative keep_alive keeps the model past an earlier deadline.
        assert o.generate(model=GEMMA.stem, prompt="", keep_alive="1s").done_reason == "load"
        assert o.generate(model=GEMMA.stem, prompt="", keep_alive=-1).done_reason == "load"
        time.sleep(1.6)
        assert call(url, "/models/cache")[1]["models"] == [GEMMA.stem]
        assert o.ps().models[0].expires_at.isoformat().startswith("2999")
    finally:
        s.stop()


def test_bad_aliases_file_is_a_clear_error(tmp_path):
    require(SMOLLM2.exists(), f"model not installed: {SMOLLM2} (run ./setup.sh)")
    from conftest import kiln_binary
    import subprocess
    cases = {"not json": "{", "names no model": json.dumps({"x": "nope"}),
             "shadows a model": json.dumps({SMOLLM2.stem: SMOLLM2.stem}), "not a string": json.dumps({"x": 3})}
    expected = {"not json": "not JSON", "names no model": "not one of the server's models",
                "shadows a model": "already a model's name", "not a string": "expected a model name"}
    for case, text in cases.items():
        f = tmp_path / "aliases.json"
        f.write_text(text)
        p = subprocess.run([str(kiln_binary()), "serve", "-m", str(SMOLLM2), "--port", "0", "--aliases", str(f)],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 1, (case, p.stderr)
        assert expected[case] in p.stderr and str(f) in p.stderr, (case, p.stderr)


def test_models_are_named_as_the_catalog_names_them(tmp_path):
    """-m by a catalog name keeps that name in /v1/models and /api/tags; a request
    may name the same file by any name of the scheme (path, stem, Ollama name,
    hf:), and a name of a file the server does not offer is a 404 that says so."""
    require(SMOLLM2.exists(), f"model not installed: {SMOLLM2} (run ./setup.sh)")
    # An Ollama store whose smollm2:135m is the installed file.
    store = tmp_path / "ollama"
    blob = store / "blobs" / ("sha256-" + "ab" * 32)
    blob.parent.mkdir(parents=True)
    blob.symlink_to(SMOLLM2.resolve())
    manifest = store / "manifests" / "registry.ollama.ai" / "library" / "smollm2" / "135m"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(json.dumps({"schemaVersion": 2, "layers": [
        {"mediaType": "application/vnd.ollama.image.model", "digest": "sha256:" + "ab" * 32, "size": SMOLLM2.stat().st_size}]}))
    empty = tmp_path / "kiln-models"
    empty.mkdir()
    env = {"OLLAMA_MODELS": str(store), "KILN_MODELS": str(empty), "HF_HUB_CACHE": str(tmp_path / "hub")}
    s = KilnServer("-m", "smollm2:135m", model=None, env=env)
    try:
        url = s.url
        assert [m["id"] for m in call(url, "/v1/models")[1]["data"]] == ["smollm2:135m"]
        assert [m["name"] for m in call(url, "/api/tags")[1]["models"]] == ["smollm2:135m"]
        first = call(url, "/v1/completions", {"model": "smollm2:135m", "prompt": "The sky is", "max_tokens": 4, "temperature": 0})
        assert first[0] == 200 and first[1]["model"] == "smollm2:135m"
        # The same file by its path, by the blob's stem and by the tag-less name is the same model.
        for other in [str(SMOLLM2.resolve()), blob.stem]:
            status, body = call(url, "/v1/completions", {"model": other, "prompt": "The sky is", "max_tokens": 4, "temperature": 0})
            assert status == 200, (other, body)
            assert body["choices"][0]["text"] == first[1]["choices"][0]["text"]
        status, body = call(url, "/v1/completions", {"model": "hf:nobody/nothing", "prompt": "x", "max_tokens": 1})
        assert status == 404 and "hf:nobody/nothing" in body["error"]["message"] and "smollm2:135m" in body["error"]["message"]
        status, body = call(url, "/v1/completions", {"model": "qwen3:8b", "prompt": "x", "max_tokens": 1})
        assert status == 404 and "qwen3:8b" in body["error"]["message"]
        # A file that exists but is not offered: said so, without its path.
        other = tmp_path / "other.gguf"
        other.write_bytes(SMOLLM2.read_bytes()[:1 << 20])
        status, body = call(url, "/v1/completions", {"model": str(other), "prompt": "x", "max_tokens": 1})
        assert status == 404 and "does not offer" in body["error"]["message"], body
        assert str(tmp_path) not in body["error"]["message"].replace(str(other), ""), body
        for path_leak in (str(store), str(empty)):
            assert path_leak not in body["error"]["message"]
    finally:
        s.stop()
