#!/usr/bin/env python3
"""Chat-template renders per second: kiln beside Python jinja2 (Hugging Face's environment).

Both render the 20-message conversation with three tools in bench/data/jinja_conversation.json
through the same three large templates. Python renders a prebuilt context with the template compiled
once (transformers' _compile_jinja_template); kiln goes from JSON messages to prompt through its
chat wrapper (bench/bench_jinja). Rates use CPU time, and the engines run interleaved per template,
because the shared development machines vary by tens of percent from one run to the next.

  python bench/jinja_vs_python.py [--bench build/bench/bench_jinja] [--kiln build/kiln] [--seconds 2]
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from transformers.utils.chat_template_utils import _alias_reasoning_fields, _compile_jinja_template, _normalize_chat_messages

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = ["openai-gpt-oss-120b", "Kimi-K3", "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"]


def python_rate(template, ctx, seconds):
    template.render(**ctx)  # warm up
    n = 0
    t0 = time.process_time()
    while True:
        for _ in range(10):
            template.render(**ctx)
        n += 10
        dt = time.process_time() - t0
        if dt >= seconds:
            return n / dt


def kiln_rate(bench, kind, name, seconds):
    out = subprocess.run(
        [bench, f"--benchmark_filter=^{kind}/{name}$", "--benchmark_format=json", f"--benchmark_min_time={seconds}"],
        check=True, capture_output=True, text=True, env={"KILN_SOURCE_DIR": str(ROOT)})
    runs = json.loads(out.stdout)["benchmarks"]
    return runs[0]["items_per_second"]


def same_output(kiln, name, conv, expected):
    with tempfile.TemporaryDirectory() as d:
        m = Path(d) / "m.json"
        m.write_text(json.dumps(conv["messages"]))
        t = Path(d) / "t.json"
        t.write_text(json.dumps(conv["tools"]))
        out = subprocess.run([kiln, "template", str(ROOT / "tests/data/shared/templates" / (name + ".jinja")),
                              "--messages", str(m), "--tools", str(t), "--bos-token", "<s>", "--eos-token", "</s>"],
                             check=True, capture_output=True)
        return out.stdout.decode("utf-8") == expected


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", default=str(ROOT / "build/bench/bench_jinja"))
    ap.add_argument("--kiln", default=str(ROOT / "build/kiln"), help="also check that kiln's prompt equals jinja2's")
    ap.add_argument("--seconds", type=float, default=2.0)
    args = ap.parse_args()

    conv = json.loads((ROOT / "bench/data/jinja_conversation.json").read_text())
    messages = _alias_reasoning_fields(_normalize_chat_messages(json.loads(json.dumps(conv["messages"]))))
    ctx = {"messages": messages, "tools": conv["tools"], "add_generation_prompt": True, "bos_token": "<s>", "eos_token": "</s>"}

    print("renders per second (CPU time); render: prepared context, as jinja2 is timed; "
          "chat: JSON messages to prompt through kiln's chat wrapper")
    print(f"{'template':38s} {'jinja2':>8s} {'kiln render':>12s} {'ratio':>6s} {'kiln chat':>10s} {'ratio':>6s}  prompt")
    for name in TEMPLATES:
        source = (ROOT / "tests/data/shared/templates" / (name + ".jinja")).read_text()
        template = _compile_jinja_template(source)
        expected = template.render(**ctx)
        py = python_rate(template, ctx, args.seconds)
        kr = kiln_rate(args.bench, "render", name, args.seconds)
        kc = kiln_rate(args.bench, "chat", name, args.seconds)
        check = ""
        if Path(args.kiln).exists():
            check = ", identical" if same_output(args.kiln, name, conv, expected) else ", DIFFERENT"
        print(f"{name:38s} {py:8.0f} {kr:12.0f} {kr / py:5.1f}x {kc:10.0f} {kc / py:5.1f}x  {len(expected)} chars{check}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
