"""Speculative decoding in kiln serve (--spec, --draft-model, --draft-max,
--draft-min): every sequence drafts inside continuous batching, the replies are
the same as with --spec off (greedy), the response timings carry llama-server's
draft_n / draft_n_accepted, /metrics counts them, and a draft model whose
vocabulary differs is refused at load naming the difference.

The target is SmolLM2 re-encoded as Q8_0 by `kiln quantize` (a second file of
the same vocabulary), drafted for by the installed Q4_1 file."""
import json
import subprocess
import threading
import urllib.request

import pytest

from conftest import MODELS, SMOLLM2, KilnServer, kiln_binary, require

GEMMA3 = MODELS / "gemma-3-270m-q4_k_m.gguf"

PROMPTS = [
    "Rewrite the following text, replacing every 'cat' with 'dog' and changing nothing else: "
    "The cat sat on the mat. The cat was happy. The cat liked fish, milk and sleeping in the sun all afternoon.",
    "Copy this list exactly, one item per line: apples, pears, plums, cherries, grapes, lemons.",
]


@pytest.fixture(scope="module")
def q8_target(tmp_path_factory):
    require(SMOLLM2.exists(), f"model not installed: {SMOLLM2} (run ./setup.sh)")
    require(kiln_binary().exists(), f"no kiln binary at {kiln_binary()}")
    out = tmp_path_factory.mktemp("spec") / "smollm2-q8_0.gguf"
    subprocess.run([str(kiln_binary()), "quantize", "--allow-requantize", str(SMOLLM2), str(out), "Q8_0"],
                   check=True, capture_output=True, timeout=120)
    return out


def post(url, path, body):
    req = urllib.request.Request(url + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.load(r)


def metrics(url):
    with urllib.request.urlopen(url + "/metrics", timeout=30) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def replies_together(url, prompts, max_tokens=48):
    """The prompts sent at once (they share the batch), greedy; the responses in order."""
    out = [None] * len(prompts)

    def one(i):
        out[i] = post(url, "/v1/chat/completions", {"messages": [{"role": "user", "content": prompts[i]}],
                                                   "temperature": 0, "max_tokens": max_tokens})

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(prompts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def test_greedy_replies_are_the_same_with_speculation_on_and_off(q8_target):
    runs = {}
    for name, args in (("off", ["--spec", "off"]),
                       ("draft", ["--spec", "draft", "--draft-model", str(SMOLLM2), "--draft-max", "6"]),
                       ("auto", ["--draft-model", str(SMOLLM2)]),
                       ("ngram", ["--spec", "ngram", "--draft-min", "2"])):
        s = KilnServer("--parallel", "2", *args, model=q8_target, ctx=512)
        try:
            responses = replies_together(s.url, PROMPTS)
            runs[name] = (responses, metrics(s.url), list(s.log))
        finally:
            s.stop()
    off_texts = [r["choices"][0]["message"]["content"] for r in runs["off"][0]]
    assert all(len(t) > 20 for t in off_texts), off_texts
    for name in ("draft", "auto", "ngram"):
        responses, m, log = runs[name]
        assert [r["choices"][0]["message"]["content"] for r in responses] == off_texts, name
        drafted = sum(r["timings"]["draft_n"] for r in responses)
        accepted = sum(r["timings"]["draft_n_accepted"] for r in responses)
        assert 0 <= accepted <= drafted, name
        assert m["kiln_draft_tokens_total"] == drafted and m["kiln_draft_tokens_accepted_total"] == accepted, name
        model = f'{{model_name="{q8_target.stem}"}}'
        assert m["vllm:spec_decode_num_draft_tokens_total" + model] == drafted, name
        assert m["vllm:spec_decode_num_accepted_tokens_total" + model] == accepted, name
        if name in ("draft", "ngram"):
            assert drafted > 0 and accepted > 0, (name, drafted, accepted)
        if name == "draft":
            # The Q4_1 file agrees with its Q8_0 re-encoding on most tokens.
            assert accepted >= 0.6 * drafted, (drafted, accepted)
            assert any("speculation draft with draft model " + SMOLLM2.name in line for line in log), log
    responses, m, _ = runs["off"]
    assert all(r["timings"]["draft_n"] == 0 for r in responses)
    assert m["kiln_draft_tokens_total"] == 0


def test_a_draft_model_with_another_vocabulary_is_refused_at_load():
    require(SMOLLM2.exists() and GEMMA3.exists(), "SmolLM2 and Gemma 3 must be installed (run ./setup.sh)")
    proc = subprocess.run([str(kiln_binary()), "serve", "-m", str(SMOLLM2), "--draft-model", str(GEMMA3),
                           "--port", "0", "-t", "1", "-c", "256"], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "cannot draft for" in proc.stderr and "262144 tokens, the target's 49152" in proc.stderr, proc.stderr


def test_bad_speculation_flags_are_errors():
    require(SMOLLM2.exists(), f"model not installed: {SMOLLM2}")
    for args, message in ((["--spec", "draft"], "--spec draft needs --draft-model"),
                          (["--spec", "off", "--draft-model", str(SMOLLM2)], "--draft-model drafts only with"),
                          (["--spec", "mtp"], "has no multi-token-prediction layers")):
        proc = subprocess.run([str(kiln_binary()), "serve", "-m", str(SMOLLM2), "--port", "0", *args],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode != 0 and message in proc.stderr, (args, proc.stderr)


def post_status(url, path, body):
    """(HTTP status, JSON body) of a POST, errors included."""
    req = urllib.request.Request(url + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=300) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def test_a_request_sets_its_own_speculation():
    """"speculative": {"mode", "n_max", "n_min"} (and llama-server's flat
    speculative.n_max / n_min) over the server's --spec; the greedy reply is the
    same either way; what kiln cannot do is a 400 that names the field."""
    s = KilnServer("--spec", "off", ctx=512)
    try:
        base = {"messages": [{"role": "user", "content": PROMPTS[0]}], "temperature": 0, "max_tokens": 40}
        status, off = post_status(s.url, "/v1/chat/completions", base)
        assert status == 200 and off["timings"]["draft_n"] == 0
        status, on = post_status(s.url, "/v1/chat/completions", {**base, "speculative": {"mode": "ngram", "n_min": 2}})
        assert status == 200, on
        assert on["choices"][0]["message"]["content"] == off["choices"][0]["message"]["content"]
        assert on["timings"]["draft_n"] > 0 and on["timings"]["draft_n_accepted"] > 0, on["timings"]
        # llama-server's names cap the draft; the text is still the same.
        status, capped = post_status(s.url, "/v1/completions", {"prompt": PROMPTS[1], "temperature": 0, "max_tokens": 24,
                                                               "speculative": {"mode": "ngram"}, "speculative.n_max": 2})
        assert status == 200, capped
        status, plain = post_status(s.url, "/v1/completions", {"prompt": PROMPTS[1], "temperature": 0, "max_tokens": 24})
        assert capped["choices"][0]["text"] == plain["choices"][0]["text"]
        for fields, param, words in (({"speculative": {"mode": "draft"}}, None, "without a draft model"),
                                     ({"speculative": {"mode": "fast"}}, "speculative.mode", "auto, off, ngram, draft or mtp"),
                                     ({"speculative": {"mode": "mtp"}}, None, "no multi-token-prediction layers"),
                                     ({"speculative": {"p_min": 0.5}}, "speculative.p_min", "not a speculative"),
                                     ({"speculative.p_min": 0.5}, "speculative.p_min", "not supported"),
                                     ({"speculative": {"n_max": 100}}, "speculative.n_max", None),
                                     ({"speculative": {"n_max": 2, "n_min": 3}}, "speculative.n_min", "larger than")):
            status, err = post_status(s.url, "/v1/chat/completions", {**base, **fields})
            assert status == 400, (fields, status, err)
            if param:
                assert err["error"]["param"] == param, (fields, err)
            if words:
                assert words in err["error"]["message"], (fields, err)
    finally:
        s.stop()


def test_every_api_reads_the_speculation_fields():
    s = KilnServer("--spec", "off", ctx=512)
    try:
        bad = {"speculative": {"mode": "fast"}}
        for path, body in (("/v1/responses", {"input": "hi", "max_output_tokens": 8}),
                           ("/v1/messages", {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 8}),
                           ("/api/chat", {"messages": [{"role": "user", "content": "hi"}], "stream": False})):
            status, err = post_status(s.url, path, {**body, **bad})
            assert status == 400 and "speculative.mode" in json.dumps(err), (path, status, err)
            status, ok = post_status(s.url, path, {**body, "speculative": {"mode": "ngram", "n_max": 4}})
            assert status == 200, (path, status, ok)
    finally:
        s.stop()


def test_streaming_attention_server():
    """kiln serve --flash-attn on: every sequence through streaming attention; a
    greedy reply through continuous batching with speculation on equals the same
    server's reply with it off (lossless: verification's rows give a token the
    bits it gets alone in either attention)."""
    s = KilnServer("--flash-attn", "on", ctx=512)
    try:
        base = {"messages": [{"role": "user", "content": PROMPTS[0]}], "temperature": 0, "max_tokens": 40}
        status, off = post_status(s.url, "/v1/chat/completions", {**base, "speculative": {"mode": "off"}})
        assert status == 200, off
        status, on = post_status(s.url, "/v1/chat/completions", {**base, "speculative": {"mode": "ngram", "n_min": 2}})
        assert status == 200, on
        assert on["choices"][0]["message"]["content"] == off["choices"][0]["message"]["content"]
        assert off["choices"][0]["message"]["content"]
    finally:
        s.stop()


def test_a_model_with_an_mtp_head_drafts_with_it():
    """A tiny glm4moe with a NextN block (random weights: its drafts are nearly
    always wrong, so every step rolls back): speculative.mode "mtp" per request
    and --spec mtp give the replies of --spec off, with the drafts counted."""
    require(SMOLLM2.exists(), f"model not installed: {SMOLLM2}")
    tool = kiln_binary().parent / "tests" / "make_tiny_model"
    require(tool.exists(), f"no make_tiny_model at {tool}")
    import tempfile
    from pathlib import Path
    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / "tiny-glm4moe.gguf"
        subprocess.run([str(tool), "glm4moe", str(SMOLLM2), str(model)], check=True, capture_output=True, timeout=120)
        body = {"prompt": "The quick brown fox jumps over the lazy dog", "temperature": 0, "max_tokens": 24}
        texts = {}
        s = KilnServer("--spec", "off", "--parallel", "2", model=model, ctx=256)
        try:
            status, off = post_status(s.url, "/v1/completions", body)
            assert status == 200 and off["timings"]["draft_n"] == 0, off
            status, on = post_status(s.url, "/v1/completions", {**body, "speculative": {"mode": "mtp", "n_max": 3}})
            assert status == 200, on
            assert on["choices"][0]["text"] == off["choices"][0]["text"]
            assert on["timings"]["draft_n"] > 0, on["timings"]
            texts["off"] = off["choices"][0]["text"]
        finally:
            s.stop()
        s = KilnServer("--spec", "mtp", model=model, ctx=256)
        try:
            status, on = post_status(s.url, "/v1/completions", body)
            assert status == 200 and on["choices"][0]["text"] == texts["off"], on
            assert on["timings"]["draft_n"] > 0 and metrics(s.url)["kiln_draft_tokens_total"] == on["timings"]["draft_n"]
        finally:
            s.stop()


def test_a_gemma4_assistant_drafts_reading_the_targets_cache():
    """A tiny gemma4 target with a tiny gemma4-assistant as --draft-model (no cells
    of its own: it reads the target's; random weights, so nearly every draft is
    rejected): speculative.mode "draft" per request gives the reply of "off", with
    the drafts counted; an assistant that cannot read the target's cache is a
    start-up error naming what differs."""
    require(SMOLLM2.exists(), f"model not installed: {SMOLLM2}")
    tool = kiln_binary().parent / "tests" / "make_tiny_model"
    require(tool.exists(), f"no make_tiny_model at {tool}")
    import tempfile
    from pathlib import Path
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for name in ("gemma4", "gemma4@q8_0", "assistant:gemma4"):
            paths[name] = Path(tmp) / (name.replace(":", "_") + ".gguf")
            subprocess.run([str(tool), name, str(SMOLLM2), str(paths[name])], check=True, capture_output=True, timeout=120)
        body = {"prompt": "The quick brown fox jumps over the lazy dog", "temperature": 0, "max_tokens": 24}
        s = KilnServer("--spec", "auto", "--draft-model", str(paths["assistant:gemma4"]), "--parallel", "2",
                       model=paths["gemma4"], ctx=256)
        try:
            status, off = post_status(s.url, "/v1/completions", {**body, "speculative": {"mode": "off"}})
            assert status == 200 and off["timings"]["draft_n"] == 0, off
            status, on = post_status(s.url, "/v1/completions", {**body, "speculative": {"mode": "draft", "n_max": 3}})
            assert status == 200, on
            assert on["choices"][0]["text"] == off["choices"][0]["text"]
            assert on["timings"]["draft_n"] > 0, on["timings"]
        finally:
            s.stop()
        proc = subprocess.run([str(kiln_binary()), "serve", "-m", str(paths["gemma4@q8_0"]), "--draft-model",
                               str(paths["assistant:gemma4"]), "--port", "0", "-t", "1", "-c", "256"],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode != 0
        assert "embedding_length_out is 64, the target's width 256" in proc.stderr, proc.stderr
