#!/usr/bin/env python3
"""Prefix reuse in a long conversation: kiln serve against llama-server.

Both servers get the same model file, chat template, threads and context, one
slot. A conversation of --turns user messages (each ~--words long, greedy replies
of 8 tokens) is sent turn by turn, then the --edit-th user message is edited and
the conversation sent again. Reported from each server's own `timings`
(prompt_n: prompt tokens evaluated, prompt_ms): the 2nd turn and the edited turn.
llama.cpp re-evaluates the whole prompt where its sliding-window or recurrent
cache cannot return to the divergence (its issues #14157, #16416); kiln restores
a checkpoint at the start of the edited message. Servers run one after the
other, --rounds times, alternating which goes first (the machine may be shared:
compare the token counts, and times only as ratios).

  .venv/bin/python bench/prefix_reuse_vs_llamacpp.py --model M.gguf --template T.jinja \
      --llama-server path/to/llama-server [--ctx 8192] [--turns 12] [--edit 3] [--engines kiln,llama.cpp]
"""
import argparse
import json
import os
import statistics
import subprocess
import urllib.request

from server_process import free_port, wait_ready  # bench/, the script's folder

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PARAGRAPH = ("The river runs past the old mill, where the miller keeps a ledger of every sack of grain that "
             "passes through his doors. In spring the water rises, and the wheel turns faster than the stones can "
             "grind; in autumn it slows, and the village children race paper boats along the sluice. ")


def start(kind, args, port):
    if kind == "kiln":
        cmd = [args.kiln, "serve", "-m", args.model, "--host", "127.0.0.1", "--port", str(port), "-t", str(args.threads),
               "--parallel", "1", "-c", str(args.ctx), "--chat-template-file", args.template]
        env = os.environ
    else:
        cmd = [args.llama_server, "-m", args.model, "--host", "127.0.0.1", "--port", str(port), "-t", str(args.threads),
               "-np", "1", "-c", str(args.ctx), "--no-webui", "--jinja", "--chat-template-file", args.template]
        env = dict(os.environ, LD_LIBRARY_PATH=os.path.dirname(args.llama_server))
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    wait_ready(f"http://127.0.0.1:{port}", proc, timeout=300)
    return proc


def chat(url, messages):
    body = json.dumps({"messages": messages, "max_tokens": 8, "temperature": 0}).encode()
    req = urllib.request.Request(url + "/v1/chat/completions", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=1200) as r:
        j = json.load(r)
    t = j.get("timings", {})
    return j, t.get("prompt_n", -1), t.get("prompt_ms", -1.0), j["usage"]["prompt_tokens"]


def conversation(url, args):
    messages, out = [], {}
    for turn in range(args.turns):
        messages.append({"role": "user", "content": f"Note {turn + 1}. " + PARAGRAPH * args.paragraphs + "Summarise it."})
        j, n, ms, prompt = chat(url, messages)
        messages.append({"role": "assistant", "content": j["choices"][0]["message"]["content"] or ""})
        if turn == 1:
            out["second"] = (n, ms, prompt)
    edited = [dict(m) for m in messages[:-1]]
    k = 2 * (args.edit - 1)
    edited[k]["content"] = f"Note {args.edit}, rewritten. " + edited[k]["content"]
    _, n, ms, prompt = chat(url, edited)
    out["edited"] = (n, ms, prompt)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--template", required=True)
    ap.add_argument("--kiln", default=os.path.join(ROOT, "build", "kiln"))
    ap.add_argument("--llama-server", default="")
    ap.add_argument("--engines", default="kiln,llama.cpp", help="which to run (comma-separated)")
    ap.add_argument("--ctx", type=int, default=8192)
    ap.add_argument("--turns", type=int, default=12)
    ap.add_argument("--edit", type=int, default=3)
    ap.add_argument("--paragraphs", type=int, default=6)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    runs = {k: [] for k in args.engines.split(",")}
    if "llama.cpp" in runs and not args.llama_server:
        ap.error("--llama-server is needed to run llama.cpp")
    for r in range(args.rounds):
        order = list(runs) if r % 2 == 0 else list(reversed(list(runs)))
        for kind in order:
            port = free_port()
            proc = start("kiln" if kind == "kiln" else "llama", args, port)
            try:
                runs[kind].append(conversation(f"http://127.0.0.1:{port}", args))
            finally:
                proc.terminate()
                proc.wait(timeout=30)
    print(f"{os.path.basename(args.model)}, -c {args.ctx}, {args.turns} turns, edit turn {args.edit}, {args.threads} threads")
    print("| engine | 2nd turn: prompt / evaluated tokens | 2nd turn prefill ms | edited: prompt / evaluated tokens | edited prefill ms |")
    print("|---|---|---|---|---|")
    for kind, rs in runs.items():
        s_ms = statistics.median(x["second"][1] for x in rs)
        e_ms = statistics.median(x["edited"][1] for x in rs)
        s, e = rs[0]["second"], rs[0]["edited"]
        print(f"| {kind} | {s[2]} / {s[0]} | {s_ms:.0f} | {e[2]} / {e[0]} | {e_ms:.0f} |")
    for kind, rs in runs.items():  # token counts must not move between rounds; times do
        counts = sorted({(x["second"][0], x["edited"][0]) for x in rs})
        times = ", ".join(f"{x['second'][1]:.0f}/{x['edited'][1]:.0f}" for x in rs)
        print(f"{kind}: evaluated (2nd, edited) per round {counts}; prefill ms (2nd/edited) per round: {times}")
    if "kiln" in runs and "llama.cpp" in runs and args.rounds > 0:
        for part in ("second", "edited"):
            ratios = [l[part][1] / k[part][1] for k, l in zip(runs["kiln"], runs["llama.cpp"]) if k[part][1] > 0]
            if ratios:
                print(f"{part} turn prefill time, llama.cpp / kiln: median of per-round ratios {statistics.median(ratios):.2f}x "
                      f"(min {min(ratios):.2f}, max {max(ratios):.2f}, {len(ratios)} rounds)")


if __name__ == "__main__":
    main()
