"""The metrics an inference gateway's endpoint picker scrapes (Gateway API Inference
Extension, model-server protocol): names, types and semantics of kiln's own and the
vLLM-compatible names its default configuration reads; replica id and model
fingerprint in /props."""
import json
import threading
import time
import urllib.request

import pytest

from conftest import SMOLLM2, KilnServer

prom_parser = pytest.importorskip("prometheus_client.parser")


def scrape(url):
    with urllib.request.urlopen(url + "/metrics", timeout=30) as r:
        text = r.read().decode()
    families = {f.name: f for f in prom_parser.text_string_to_metric_families(text)}
    return text, families


def value(families, name, model):
    # prometheus_client strips a counter's _total suffix from the family name.
    fam = families[name]
    samples = [s for s in fam.samples if s.labels.get("model_name") == model and not s.name.endswith("_created")]
    assert len(samples) == 1, (name, samples)
    return samples[0].value


def post(url, path, body):
    req = urllib.request.Request(url + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.load(r), dict(r.headers)


def test_gateway_metrics_names_types_and_semantics():
    s = KilnServer("--parallel", "1", "--replica-id", "replica-a", ctx=1024)
    try:
        url, model = s.url, SMOLLM2.stem
        props, headers = post(url, "/apply-template", {"messages": [{"role": "user", "content": "x"}]})
        assert headers.get("X-Kiln-Replica") == "replica-a"
        with urllib.request.urlopen(url + "/props", timeout=30) as r:
            p = json.load(r)
        assert p["replica_id"] == "replica-a" and len(p["model_fingerprint"]) == 16

        text, fams = scrape(url)
        types = {"vllm:num_requests_waiting": "gauge", "vllm:num_requests_running": "gauge",
                 "vllm:kv_cache_usage_perc": "gauge", "vllm:gpu_cache_usage_perc": "gauge",
                 "vllm:cache_config_info": "gauge", "vllm:prefix_cache_queries": "counter",
                 "vllm:prefix_cache_hits": "counter", "vllm:prompt_tokens": "counter",
                 "vllm:generation_tokens": "counter", "kiln_model_requests_waiting": "gauge",
                 "kiln_model_requests_running": "gauge", "kiln_kv_cache_usage_ratio": "gauge",
                 "kiln_prefix_cache_queries": "counter", "kiln_prefix_cache_hits": "counter"}
        for name, t in types.items():
            assert fams[name].type == t, (name, fams[name].type)
        # Idle: nothing queued or running, no KV positions held.
        for name in ("vllm:num_requests_waiting", "vllm:num_requests_running", "vllm:kv_cache_usage_perc"):
            assert value(fams, name, model) == 0, name
        info = [x for x in fams["vllm:cache_config_info"].samples if x.labels.get("model_name") == model]
        assert len(info) == 1 and info[0].value == 1
        block, blocks = int(info[0].labels["block_size"]), int(info[0].labels["num_gpu_blocks"])
        assert block == 16 and blocks == 1024 // 16  # one slot of 1024 positions

        # --parallel 1 and three long streams: one runs, two wait, and the KV use moves.
        seen = {"running": 0, "waiting": 0, "usage": 0.0}
        stop = threading.Event()

        def stream(i):
            body = {"prompt": f"Count from {i}: 1, 2, 3,", "max_tokens": 120, "temperature": 0, "stream": True}
            req = urllib.request.Request(url + "/v1/completions", data=json.dumps(body).encode())
            with urllib.request.urlopen(req, timeout=300) as r:
                r.read()

        threads = [threading.Thread(target=stream, args=(i,)) for i in range(3)]
        for t in threads:
            t.start()
        deadline = time.time() + 120
        while any(t.is_alive() for t in threads) and time.time() < deadline:
            _, f = scrape(url)
            seen["running"] = max(seen["running"], value(f, "vllm:num_requests_running", model))
            seen["waiting"] = max(seen["waiting"], value(f, "vllm:num_requests_waiting", model))
            seen["usage"] = max(seen["usage"], value(f, "vllm:kv_cache_usage_perc", model))
            assert value(f, "vllm:num_requests_running", model) <= 1
            assert 0 <= value(f, "vllm:kv_cache_usage_perc", model) <= 1
            assert value(f, "vllm:kv_cache_usage_perc", model) == value(f, "kiln_kv_cache_usage_ratio", model)
            time.sleep(0.02)
        for t in threads:
            t.join()
        # Waiting reaches 2 while one runs; a scrape between the third request's arrival
        # and the scheduler's taking the first one can see all three waiting.
        assert seen["running"] == 1 and 2 <= seen["waiting"] <= 3, seen
        assert seen["usage"] > 0, seen
        _, fams = scrape(url)
        assert value(fams, "vllm:num_requests_running", model) == 0
        assert value(fams, "vllm:kv_cache_usage_perc", model) == 0

        # The prefix cache: the same prompt again is served from the cache.
        queries0 = value(fams, "vllm:prefix_cache_queries", model)
        hits0 = value(fams, "vllm:prefix_cache_hits", model)
        prompt = "The river runs past the old mill and under the stone bridge."
        for _ in range(2):
            post(url, "/v1/completions", {"prompt": prompt, "max_tokens": 2, "temperature": 0})
        _, fams = scrape(url)
        n_prompt = len(post(url, "/tokenize", {"content": prompt})[0]["tokens"])
        queries = value(fams, "vllm:prefix_cache_queries", model) - queries0
        hits = value(fams, "vllm:prefix_cache_hits", model) - hits0
        assert queries >= 2 * n_prompt and hits >= n_prompt - 1, (queries, hits, n_prompt)
        assert value(fams, "kiln_prefix_cache_hits", model) == value(fams, "vllm:prefix_cache_hits", model)
        assert value(fams, "vllm:generation_tokens", model) >= 3 * 120 * 0.5
    finally:
        s.stop()
