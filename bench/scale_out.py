#!/usr/bin/env python3
"""Three `kiln serve` replicas behind HAProxy on 127.0.0.1 (a long check, not in CI).

A client replays multi-turn conversations concurrently (each turn resends the whole
history, as chat clients do), first with HAProxy's prefix affinity
(deploy/haproxy/haproxy.cfg: consistent hash over the start of the body) and then
with round-robin. For each mode it reports, summed over the replicas' /metrics: the
prompt tokens asked for, those served from the prefix cache, those prefilled, and
the client's time to first token and aggregate generated tokens/s. Then, with
affinity, one replica is killed mid-run: requests sent after the kill must all
succeed (HAProxy retries a refused connection on another replica and its health
check takes the dead one out), requests in flight on it end with an error the
client may retry; the replica is restarted and must serve again.

Usage: .venv/bin/python bench/scale_out.py [--conversations 9] [--turns 5] [--max-tokens 16]
          [--parallel 4] [--model FILE] [--binary build/kiln] [--json OUT]
Needs Debian's haproxy (setup.sh installs it). Exits 1 when a check fails.
"""
import argparse
import json
import os
import pathlib
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

from server_process import free_port  # bench/, the script's folder

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODELS = pathlib.Path(os.environ.get("KILN_MODELS", pathlib.Path.home() / ".cache" / "kiln" / "models"))
TOPICS = ["rivers", "volcanoes", "bread", "bicycles", "owls", "glaciers", "violins", "comets", "tea", "bridges",
          "lighthouses", "bees"]


def get(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def wait_healthy(url, proc=None, seconds=120):
    end = time.time() + seconds
    while time.time() < end:
        if proc is not None and proc.poll() is not None:
            raise SystemExit(f"replica at {url} exited")
        try:
            get(url + "/health", 2)
            return
        except Exception:
            time.sleep(0.1)
    raise SystemExit(f"replica at {url} did not become healthy")


class Replica:
    def __init__(self, args, rid, port):
        self.args, self.rid, self.port = args, rid, port
        self.url = f"http://127.0.0.1:{port}"
        self.proc = None

    def start(self):
        cmd = [self.args.binary, "serve", "-m", self.args.model, "--host", "127.0.0.1", "--port", str(self.port),
               "--parallel", str(self.args.parallel), "-t", "1", "-c", "4096", "--replica-id", self.rid, "-q"]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_healthy(self.url, self.proc)

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()

    def counters(self):
        text = get(self.url + "/metrics")
        out = {}
        for name in ("vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total", "vllm:prompt_tokens_total",
                     "vllm:generation_tokens_total"):
            out[name] = sum(float(v) for v in re.findall(r"^" + re.escape(name) + r"\{[^}]*\} (\S+)", text, re.M))
        return out


class Proxy:
    def __init__(self, replicas, port, mode):
        cfg = (ROOT / "deploy" / "haproxy" / "haproxy.cfg").read_text()
        cfg = cfg.replace("bind 127.0.0.1:8080", f"bind 127.0.0.1:{port}")
        for i, r in enumerate(replicas):
            cfg = re.sub(rf"server r{i + 1} 127\.0\.0\.1:\d+", f"server {r.rid} 127.0.0.1:{r.port}", cfg)
        if mode == "round-robin":
            cfg = re.sub(r"^\s*balance hash .*$", "    balance roundrobin", cfg, flags=re.M)
            cfg = re.sub(r"^\s*hash-(type|balance-factor) .*$", "", cfg, flags=re.M)
        self.file = tempfile.NamedTemporaryFile("w", suffix=".cfg", delete=False)
        self.file.write(cfg)
        self.file.close()
        self.url = f"http://127.0.0.1:{port}"
        self.proc = subprocess.Popen(["haproxy", "-f", self.file.name], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        wait_healthy(self.url, self.proc, 30)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(30)
        os.unlink(self.file.name)


def system_prompt(i):
    topic = TOPICS[i % len(TOPICS)]
    facts = " ".join(f"Fact {k}: {topic} are discussed here in plain words, sentence {k}." for k in range(12))
    return f"You are a patient tutor on {topic}. Conversation {i}. {facts} Answer in one short sentence."


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.ttft, self.tokens, self.replicas = [], 0, {}
        self.errors, self.after_kill_errors, self.in_flight_errors = [], [], []

    def add(self, **kw):
        with self.lock:
            for k, v in kw.items():
                if k == "ttft":
                    self.ttft.append(v)
                elif k == "tokens":
                    self.tokens += v
                elif k == "replica":
                    self.replicas[v] = self.replicas.get(v, 0) + 1
                else:
                    getattr(self, k).append(v)


def one_turn(url, messages, max_tokens):
    """Streams one reply; returns (text, ttft seconds, generated tokens, replica id)."""
    body = {"messages": messages, "max_tokens": max_tokens, "temperature": 0, "stream": True,
            "stream_options": {"include_usage": True}}
    req = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    t0 = time.time()
    ttft, text, tokens = None, "", 0
    with urllib.request.urlopen(req, timeout=600) as r:
        replica = r.headers.get("X-Kiln-Replica", "?")
        done = False
        for raw in r:
            line = raw.decode().strip()
            if not line.startswith("data: "):
                continue
            if line == "data: [DONE]":
                done = True
                break
            chunk = json.loads(line[6:])
            if "error" in chunk:
                raise RuntimeError(chunk["error"].get("message", "error event"))
            for c in chunk.get("choices", []):
                piece = c.get("delta", {}).get("content") or ""
                if piece and ttft is None:
                    ttft = time.time() - t0
                text += piece
            if chunk.get("usage"):
                tokens = chunk["usage"]["completion_tokens"]
        if not done:
            raise RuntimeError("the stream ended without [DONE]")
    return text, ttft if ttft is not None else time.time() - t0, tokens, replica


def run_conversations(url, args, stats, kill_at=None):
    def conversation(i):
        messages = [{"role": "system", "content": system_prompt(i)}]
        for turn in range(args.turns):
            messages.append({"role": "user", "content": f"Question {turn + 1}: tell me one more thing about "
                                                        f"{TOPICS[i % len(TOPICS)]}."})
            sent = time.time()
            for attempt in range(2):  # an in-flight request on a replica that died is retried once
                try:
                    text, ttft, tokens, replica = one_turn(url, messages, args.max_tokens)
                    stats.add(ttft=ttft, tokens=tokens, replica=replica)
                    break
                except Exception as e:  # noqa: BLE001 - every failure is counted and reported
                    what = f"conversation {i} turn {turn}: {e!r}"
                    if kill_at is not None and sent >= kill_at[0]:
                        stats.add(after_kill_errors=what)  # sent after the kill: must not happen
                    elif kill_at is not None and time.time() >= kill_at[0]:
                        stats.add(in_flight_errors=what)   # on the replica when it died: retried
                    else:
                        stats.add(errors=what)
                    sent = time.time()
                    if attempt == 1:
                        text = ""
            messages.append({"role": "assistant", "content": text})

    threads = [threading.Thread(target=conversation, args=(i,)) for i in range(args.conversations)]
    t0 = time.time()
    for t in threads:
        t.start()
    return threads, t0


def measure(replicas, proxy, args, mode):
    before = [r.counters() for r in replicas]
    stats = Stats()
    threads, t0 = run_conversations(proxy.url, args, stats)
    for t in threads:
        t.join()
    wall = time.time() - t0
    after = [r.counters() for r in replicas]
    delta = {k: sum(a[k] - b[k] for a, b in zip(after, before)) for k in before[0]}
    return {
        "mode": mode,
        "prompt_tokens": delta["vllm:prefix_cache_queries_total"],
        "cached_tokens": delta["vllm:prefix_cache_hits_total"],
        "prefilled_tokens": delta["vllm:prompt_tokens_total"],
        "generated_tokens": delta["vllm:generation_tokens_total"],
        "hit_rate": delta["vllm:prefix_cache_hits_total"] / max(1.0, delta["vllm:prefix_cache_queries_total"]),
        "ttft_p50_ms": 1000 * statistics.median(stats.ttft) if stats.ttft else None,
        "ttft_p90_ms": 1000 * statistics.quantiles(stats.ttft, n=10)[-1] if len(stats.ttft) >= 10 else None,
        "tokens_per_s": stats.tokens / wall,
        "wall_s": wall,
        "errors": stats.errors,
        "by_replica": stats.replicas,
    }


def failover(replicas, proxy, args):
    stats = Stats()
    kill_at = [float("inf")]
    threads, t0 = run_conversations(proxy.url, args, stats, kill_at)
    time.sleep(args.kill_after)
    victim = replicas[1]
    kill_at[0] = time.time()
    victim.kill()
    for t in threads:
        t.join()
    # Restart it and check it takes requests again.
    victim.start()
    time.sleep(3)  # HAProxy's health check (rise 2, every 1 s) takes it back
    rejoin = Stats()
    threads, _ = run_conversations(proxy.url, argparse.Namespace(**{**vars(args), "turns": 2}), rejoin)
    for t in threads:
        t.join()
    return {"killed": victim.rid, "killed_after_s": args.kill_after, "errors_before_kill": stats.errors,
            "errors_after_kill": stats.after_kill_errors, "in_flight_at_kill": stats.in_flight_errors, "by_replica_during": stats.replicas,
            "by_replica_after_restart": rejoin.replicas, "rejoin_errors": rejoin.errors + rejoin.after_kill_errors}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--conversations", type=int, default=9)
    ap.add_argument("--turns", type=int, default=5)
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--parallel", type=int, default=4)
    ap.add_argument("--kill-after", type=float, default=8.0, help="seconds into the failover run")
    ap.add_argument("--model", default=str(MODELS / "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--binary", default=str(ROOT / "build" / "kiln"))
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
    replicas = [Replica(args, f"r{i + 1}", free_port()) for i in range(3)]
    results = {}
    proxy = None
    try:
        for r in replicas:
            r.start()
        for mode in ("affinity", "round-robin"):
            # Fresh replicas per mode, so neither inherits the other's prefix cache.
            for r in replicas:
                r.stop()
                r.start()
            proxy = Proxy(replicas, free_port(), mode)
            results[mode] = measure(replicas, proxy, args, mode)
            proxy.stop()
            proxy = None
        proxy = Proxy(replicas, free_port(), "affinity")
        results["failover"] = failover(replicas, proxy, args)
    finally:
        if proxy:
            proxy.stop()
        for r in replicas:
            r.stop()

    print(f"\n{args.conversations} conversations x {args.turns} turns, {args.max_tokens} tokens a reply, 3 replicas "
          f"(--parallel {args.parallel}, 1 thread each), model {pathlib.Path(args.model).name}")
    print("| routing | prompt tokens | from the prefix cache | prefilled | hit rate | TTFT p50 / p90 ms | tokens/s | requests per replica |")
    print("|---|---|---|---|---|---|---|---|")
    for mode in ("affinity", "round-robin"):
        m = results[mode]
        print(f"| {mode} | {m['prompt_tokens']:.0f} | {m['cached_tokens']:.0f} | {m['prefilled_tokens']:.0f} | "
              f"{m['hit_rate'] * 100:.1f}% | {m['ttft_p50_ms']:.0f} / {m['ttft_p90_ms'] or 0:.0f} | "
              f"{m['tokens_per_s']:.1f} | {json.dumps(m['by_replica'], sort_keys=True)} |")
    a, rr = results["affinity"], results["round-robin"]
    cut = 1 - a["prefilled_tokens"] / max(1.0, rr["prefilled_tokens"])
    print(f"affinity prefills {cut * 100:.1f}% fewer prompt tokens than round-robin")
    f = results["failover"]
    print(f"failover: killed {f['killed']} after {f['killed_after_s']} s; requests per replica during the run "
          f"{json.dumps(f['by_replica_during'], sort_keys=True)}; in flight on it (an error, retried) "
          f"{len(f['in_flight_at_kill'])}; failed requests sent after the kill {len(f['errors_after_kill'])}; "
          f"errors before the kill {len(f['errors_before_kill'])}; after the restart "
          f"{json.dumps(f['by_replica_after_restart'], sort_keys=True)} with {len(f['rejoin_errors'])} errors")
    for e in (a["errors"] + rr["errors"] + f["errors_before_kill"] + f["errors_after_kill"] + f["rejoin_errors"])[:10]:
        print("  error:", e)
    for e in f["in_flight_at_kill"][:10]:
        print("  in flight at the kill:", e)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=1))
    ok = (cut >= 0.5 and not a["errors"] and not rr["errors"] and not f["errors_before_kill"]
          and not f["errors_after_kill"] and not f["rejoin_errors"]
          and f["by_replica_after_restart"].get(f["killed"], 0) > 0)
    print("PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
