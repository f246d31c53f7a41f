"""POST /v1/embeddings through the official openai client, Ollama's /api/embed and
/v1/rerank (Jina and TEI shapes, on a tiny random cross-encoder and end to end
with a tiny Qwen3-style reranker: its scores equal `kiln rerank`'s and llama.cpp's),
against `kiln serve` with the real embedding model (all-MiniLM-L6-v2, from
setup.sh) beside a chat model (SmolLM2): vectors equal the committed numpy
reference (tests/golden/embedding/minilm.json) within cosine 0.9999, both
encodings, token-id input, dimensions, usage, truncation, and the 400s that say
why a chat model cannot embed and an embedding model cannot chat."""
import base64
import json

import numpy as np
import pytest

from conftest import MODELS, ROOT, SMOLLM2, KilnServer, require

MINILM = MODELS / "all-MiniLM-L6-v2.F16.gguf"
FIXTURE = json.loads((ROOT / "tests" / "golden" / "embedding" / "minilm.json").read_text())
EMBED_MODEL = "all-MiniLM-L6-v2.F16"
CHAT_MODEL = "SmolLM2-135M-Instruct.Q4_1"
TEXTS = FIXTURE["texts"][:4]


@pytest.fixture(scope="module")
def embed_server():
    require(MINILM.exists(), f"model not installed: {MINILM} (run ./setup.sh)")
    # -c 2048 is more than MiniLM's 512 positions: an embedding model takes its own (capped) context.
    s = KilnServer("-m", str(SMOLLM2), "--parallel", "2", model=MINILM, ctx=2048)
    yield s
    s.stop()


@pytest.fixture(scope="module")
def oai(embed_server):
    openai = pytest.importorskip("openai")
    return openai.OpenAI(base_url=embed_server.url + "/v1", api_key="unused", max_retries=0, timeout=120)


def test_float_and_base64_equal_the_reference(oai):
    r = oai.embeddings.create(model=EMBED_MODEL, input=TEXTS, encoding_format="float")
    assert r.model == EMBED_MODEL and len(r.data) == len(TEXTS)
    floats = [np.array(d.embedding, dtype=np.float32) for d in r.data]
    for i, v in enumerate(floats):
        assert r.data[i].index == i
        assert float(np.dot(v, FIXTURE["reference"][i])) >= 0.9999, TEXTS[i]
    tokens = sum(len(FIXTURE["llama_tokens"][i]) for i in range(len(TEXTS)))
    assert r.usage.prompt_tokens == tokens and r.usage.total_tokens == tokens

    b = oai.embeddings.create(model=EMBED_MODEL, input=TEXTS, encoding_format="base64")
    for i, d in enumerate(b.data):
        assert isinstance(d.embedding, str)
        assert np.array_equal(np.frombuffer(base64.b64decode(d.embedding), dtype="<f4"), floats[i])
    # The client's default asks for base64 and decodes it itself.
    default = oai.embeddings.create(model=EMBED_MODEL, input=TEXTS[0])
    assert np.array_equal(np.array(default.data[0].embedding, dtype=np.float32), floats[0])


def test_token_ids_dimensions_and_a_single_string(oai):
    ids = FIXTURE["llama_tokens"][0]
    by_text = oai.embeddings.create(model=EMBED_MODEL, input=TEXTS[0], encoding_format="float").data[0].embedding
    by_ids = oai.embeddings.create(model=EMBED_MODEL, input=[ids], encoding_format="float").data[0].embedding
    flat = oai.embeddings.create(model=EMBED_MODEL, input=ids, encoding_format="float").data[0].embedding
    assert by_ids == by_text and flat == by_text
    small = oai.embeddings.create(model=EMBED_MODEL, input=TEXTS[1], dimensions=64, encoding_format="float").data[0]
    v = np.array(small.embedding)
    assert len(v) == 64 and abs(np.linalg.norm(v) - 1) < 1e-5


def test_over_long_input_is_a_400_unless_truncated(oai):
    import openai
    long = "word " * 600
    with pytest.raises(openai.BadRequestError) as e:
        oai.embeddings.create(model=EMBED_MODEL, input=long)
    assert "602 tokens, more than the context of 512" in str(e.value)
    r = oai.embeddings.create(model=EMBED_MODEL, input=long, extra_body={"truncate": True})
    assert r.usage.prompt_tokens == 512


def test_chat_model_and_embedding_model_refuse_the_other_route(oai):
    import openai
    with pytest.raises(openai.BadRequestError) as e:
        oai.embeddings.create(model=CHAT_MODEL, input="x")
    assert "generative model" in str(e.value) and "no pooling type" in str(e.value)
    with pytest.raises(openai.BadRequestError) as e:
        oai.chat.completions.create(model=EMBED_MODEL, messages=[{"role": "user", "content": "hi"}])
    assert "is an embedding model" in str(e.value)
    with pytest.raises(openai.BadRequestError) as e:
        oai.embeddings.create(model=EMBED_MODEL, input="x", encoding_format="int8")
    assert "encoding_format" in str(e.value)


def test_ollama_embed(embed_server, oai):
    ollama = pytest.importorskip("ollama")
    client = ollama.Client(host=embed_server.url, timeout=120)
    r = client.embed(model=EMBED_MODEL, input=TEXTS[:2])
    want = oai.embeddings.create(model=EMBED_MODEL, input=TEXTS[:2], encoding_format="float")
    assert [list(map(float, e)) for e in r.embeddings] == [d.embedding for d in want.data]
    assert r.prompt_eval_count == want.usage.prompt_tokens
    # Ollama truncates by default.
    assert len(client.embed(model=EMBED_MODEL, input="word " * 600).embeddings[0]) == 384
    with pytest.raises(ollama.ResponseError) as e:
        client.embed(model=EMBED_MODEL, input="word " * 600, truncate=False)
    assert e.value.status_code == 400


@pytest.fixture(scope="module")
def rerank_server(tmp_path_factory):
    import os
    from conftest import kiln_binary
    tool = kiln_binary().parent / "tests" / "make_tiny_encoder"
    vocab = ROOT.parent / "shared" / "testdata" / "tokenizer" / "ggml-vocab-bert-bge.gguf"
    require(tool.exists(), f"no {tool} (build the tests)")
    require(vocab.exists(), f"no {vocab}")
    path = tmp_path_factory.mktemp("rerank") / "tiny-rerank.gguf"
    import subprocess
    subprocess.run([str(tool), "bert_rank", str(vocab), str(path)], check=True)
    s = KilnServer("--parallel", "1", model=path, ctx=512)
    yield s
    s.stop()


def test_rerank_jina_and_tei_shapes(rerank_server):
    import urllib.request

    def post(path, body):
        req = urllib.request.Request(rerank_server.url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    docs = ["first document", "the second one", "third", "and a fourth"]
    status, jina = post("/v1/rerank", {"query": "what?", "documents": docs, "top_n": 3})
    assert status == 200, jina
    res = jina["results"]
    assert len(res) == 3 and jina["usage"]["total_tokens"] > 8
    assert [r["relevance_score"] for r in res] == sorted((r["relevance_score"] for r in res), reverse=True)
    assert all(r["document"]["text"] == docs[r["index"]] for r in res)
    status, tei = post("/rerank", {"query": "what?", "texts": docs, "return_text": True, "raw_scores": True})
    assert status == 200, tei
    assert [t["index"] for t in tei[:3]] == [r["index"] for r in res]
    assert all(abs(t["score"] - r["relevance_score"]) < 1e-6 for t, r in zip(tei, res))
    assert tei[0]["text"] == docs[tei[0]["index"]]
    status, sig = post("/rerank", {"query": "what?", "texts": docs})
    assert all(0 < t["score"] < 1 for t in sig) and "text" not in sig[0]
    status, err = post("/v1/rerank", {"query": "what?"})
    assert status == 400 and "documents" in err["error"]["message"]


def _vocab_dir():
    """Where tools/fetch_llamacpp_vocabs.sh puts llama.cpp's larger vocab-only files."""
    import os
    import pathlib
    env = os.environ.get("KILN_VOCABS")
    return pathlib.Path(env) if env else pathlib.Path.home() / ".cache" / "kiln" / "vocabs"


@pytest.fixture(scope="module")
def qwen3_rerank(tmp_path_factory):
    """The tiny Qwen3-style reranker (tests/support/tiny_encoders.cpp: cls.output's yes / no rows,
    the file's rerank prompt), written by make_tiny_encoder as the library tests write it, so
    its sha256 is the fixture's, whose pair scores are llama.cpp's."""
    import hashlib
    import subprocess
    from conftest import kiln_binary
    tool = kiln_binary().parent / "tests" / "make_tiny_encoder"
    vocab = _vocab_dir() / "ggml-vocab-qwen2.gguf"
    require(tool.exists(), f"no {tool} (build the tests)")
    require(vocab.exists(), f"no {vocab} (tools/fetch_llamacpp_vocabs.sh)")
    path = tmp_path_factory.mktemp("qwen3-rerank") / "tiny-qwen3-rerank.gguf"
    subprocess.run([str(tool), "qwen3_rerank", str(vocab), str(path)], check=True)
    fx = json.loads((ROOT / "tests" / "golden" / "embedding" / "tiny" / "qwen3_rerank.json").read_text())
    assert hashlib.sha256(path.read_bytes()).hexdigest() == fx["sha256"], "the tiny reranker differs from the fixture's"
    s = KilnServer("--parallel", "1", model=path, ctx=512)
    yield s, path, fx["pairs"]
    s.stop()


def test_rerank_qwen3_style_end_to_end(qwen3_rerank, tmp_path):
    """/v1/rerank and /rerank with a Qwen3-style reranker: each pair is the file's rerank prompt
    and its score P(yes); the server's scores are `kiln rerank`'s (the library path) bit for bit
    and llama.cpp's (the fixture) within 1e-6."""
    import subprocess
    import urllib.request
    from conftest import kiln_binary
    server, path, pairs = qwen3_rerank

    def post(route, body):
        req = urllib.request.Request(server.url + route, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    query, docs = pairs["query"], pairs["documents"]
    want = pairs["kiln_scores"]  # llama.cpp's P(yes) on the same prompt tokens
    status, jina = post("/v1/rerank", {"query": query, "documents": docs})
    assert status == 200, jina
    res = jina["results"]
    assert sorted(r["index"] for r in res) == list(range(len(docs)))
    assert [r["relevance_score"] for r in res] == sorted((r["relevance_score"] for r in res), reverse=True)
    for r in res:
        assert abs(r["relevance_score"] - want[r["index"]]) < 1e-6, (r, want)
        assert 0.0 < r["relevance_score"] < 1.0 and r["document"]["text"] == docs[r["index"]]
    assert jina["usage"]["prompt_tokens"] == sum(len(t) for t in pairs["kiln_tokens"])

    # The library path: `kiln rerank` on the same file gives the same numbers.
    doc_file = tmp_path / "docs.txt"
    doc_file.write_text("\n".join(docs) + "\n")
    cli = subprocess.run([str(kiln_binary()), "rerank", "-m", str(path), "--query", query, "--documents", str(doc_file),
                          "--json", "-t", "2"], check=True, capture_output=True, text=True)
    lib = {r["index"]: r["relevance_score"] for r in json.loads(cli.stdout)["results"]}
    assert {r["index"]: r["relevance_score"] for r in res} == lib

    # top_n; TEI's shape keeps the probability as it is (no sigmoid over P(yes)), raw or not.
    status, top = post("/v1/rerank", {"query": query, "documents": docs, "top_n": 2, "return_documents": False})
    assert status == 200 and [r["index"] for r in top["results"]] == [r["index"] for r in res[:2]]
    assert "document" not in top["results"][0]
    for raw in (False, True):
        status, tei = post("/rerank", {"query": query, "texts": docs, "raw_scores": raw})
        assert status == 200, tei
        assert [(t["index"], t["score"]) for t in tei] == [(r["index"], r["relevance_score"]) for r in res]
