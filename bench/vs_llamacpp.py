#!/usr/bin/env python3
"""kiln vs llama.cpp, side by side on the same GGUF files, threads and workload.

    bench/vs_llamacpp.py [--models all|lowbit|smollm2,gemma3,q4_0,q8_0,q4_k,q5_k,q6_k,f16,bf16,q2_k,...,tq2_0 (LOWBIT),qwen35_q8_0,qwen35_q4_0,qwen3moe_q4_k,deepseek2_q4_k,gpt_oss_mxfp4] [-t 2]
                         [-p 512] [-n 128] [-d 0[,2048,8192]] [--rounds 3] [--kiln build/kiln]
                         [--isa avx512|avx512-noamx|avx2|avx2-novnni|scalar] [--flash-attn on|off] [--llama-python PY]
                         [--llama-no-amx]

Runs with the oracle virtual environment's python (llama-cpp-python built from
source with native CPU flags: tools/setup_oracle.sh). For every model and round,
kiln (`kiln bench --json`) and llama.cpp (this script in a fresh process, through
llama.cpp's C API) run one after the other, alternating which goes first: each
process loads the model, runs a warm-up prompt and generation, then one timed
prompt of -p random tokens in one batch (pp) and -n single-token decode steps
(tg). With -d D both engines first fill the cache with D random tokens and time
pp and tg after them (llama-bench's -d; llama.cpp with its default flash
attention setting and an f16 cache, as kiln); a list of depths gives one row per
model and depth. --isa runs kiln at that kernel level (KILN_ISA) and llama.cpp
from the build for it: tools/setup_oracle.sh --avx2 makes .venv-avx2 (AVX2, FMA,
F16C; used for avx2-novnni) and --avx-vnni .venv-avxvnni (used for avx2);
--llama-python overrides; --llama-no-amx keeps llama.cpp off its AMX path (a preloaded
shim refuses its AMX permission request: bench/no_amx_preload.c). The machine is shared, so only ratios from interleaved rounds mean much;
the table gives the median over rounds of each figure and of the per-round
ratios kiln / llama.cpp.

The synthetic ~1B llama-shaped models (random weights, fixed seed) are written on
first use by build/bench/make_bench_model into ~/.cache/kiln/bench-models.

It also prints this machine's probes (main-memory read bandwidth, int8 and f32
multiply-add rates, from kiln bench) and, per model, the decode bound (weight
bytes read per token / bandwidth) and the prefill bound (2 x layer weights per
token / int8 or f32 rate), with the fraction of each that both engines reach.
Every kiln run probes after its timed tests, and a model's bounds are the highest
of its rounds: the bandwidth the neighbours leave changes from minute to minute,
and a bound taken at a poor moment would be beaten by a later round. The last two
columns set each round against the bound probed in that round instead (medians):
on a machine whose bandwidth moves that much, the share of what it gave then.
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS_DIR = os.environ.get("KILN_MODELS", os.path.expanduser("~/.cache/kiln/models"))
BENCH_DIR = os.path.expanduser("~/.cache/kiln/bench-models")
REAL = {
    "smollm2": ("SmolLM2-135M Q4_1", os.path.join(MODELS_DIR, "SmolLM2-135M-Instruct.Q4_1.gguf")),
    "gemma3": ("Gemma 3 270M Q4_K_M", os.path.join(MODELS_DIR, "gemma-3-270m-q4_k_m.gguf")),
}
SYNTHETIC = {"q4_0": "Q4_0", "q8_0": "Q8_0", "q4_k": "Q4_K", "q5_k": "Q5_K", "q6_k": "Q6_K", "f16": "F16", "bf16": "BF16",
             # the low-bit types (not in "all": --models lowbit or by name)
             "q2_k": "Q2_K", "q3_k": "Q3_K", "iq4_xs": "IQ4_XS", "mxfp4": "MXFP4", "iq3_xxs": "IQ3_XXS", "iq3_s": "IQ3_S",
             "iq2_xxs": "IQ2_XXS", "iq2_xs": "IQ2_XS", "iq2_s": "IQ2_S", "iq1_s": "IQ1_S", "iq1_m": "IQ1_M",
             "tq1_0": "TQ1_0", "tq2_0": "TQ2_0"}
LOWBIT = ["q2_k", "q3_k", "iq4_xs", "mxfp4", "iq3_xxs", "iq3_s", "iq2_xxs", "iq2_xs", "iq2_s", "iq1_s", "iq1_m", "tq1_0", "tq2_0"]
# Synthetic shapes beyond the llama ones (make_bench_model --arch), not part of "all":
# key -> (name, file, make_bench_model arguments).
# Qwen 3.5 0.8B's hybrid shape (docs/models.md), 24 layers.
# Qwen3-30B-A3B's layer (2048 wide, 32 / 4 heads of 128, 128 experts of width 768,
# 8 selected) with 8 of its 48 layers so the file (2.9 GB in Q4_K) fits this machine.
SYNTHETIC_SHAPES = {
    **{f"qwen35_{t.lower()}": (f"qwen35 0.8B-shaped {t} (synthetic)", f"qwen35-0.8b-{t}.gguf",
                               ["--arch", "qwen35", "--layers", "24", "--type", t]) for t in ("Q8_0", "Q4_0")},
    "qwen3moe_q4_k": ("Qwen3-30B-A3B shape, 8 of 48 layers, Q4_K (synthetic)", "qwen3moe-30b-a3b-8layers-Q4_K.gguf",
                      ["--arch", "qwen3moe", "--type", "Q4_K", "--layers", "8", "--embd", "2048", "--ff", "768", "--heads", "32",
                       "--kv-heads", "4", "--head-dim", "128", "--experts", "128", "--experts-used", "8"]),
    # DeepSeek-V2-Lite's shape (latent attention, 1 dense + 64 experts top 6 + 2 shared)
    # with 8 of its 27 layers (2.3 GB in Q4_K, the 1408-wide expert rows in Q5_0).
    "deepseek2_q4_k": ("DeepSeek-V2-Lite shape, 8 of 27 layers, Q4_K (synthetic)", "deepseek2-v2-lite-8layers-Q4_K.gguf",
                       ["--arch", "deepseek2", "--type", "Q4_K", "--layers", "8"]),
    # gpt-oss-20b's shape (64 / 8 heads of 64 with sinks, sliding 128 / full, 32 experts
    # of width 2880 top 4 with biases) with 8 of its 24 layers (3.9 GB): MXFP4 experts,
    # Q8_0 attention / embedding / head, f32 router, as the MXFP4 release.
    "gpt_oss_mxfp4": ("gpt-oss-20b shape, 8 of 24 layers, MXFP4 experts (synthetic)", "gpt-oss-20b-8layers-MXFP4.gguf",
                      ["--arch", "gpt-oss", "--type", "MXFP4", "--layers", "8"]),
}


def model_path(key, kiln_build, positions=0):
    if key in REAL:
        return REAL[key]
    if key in SYNTHETIC_SHAPES:
        name, file, args = SYNTHETIC_SHAPES[key]
        path = os.path.join(BENCH_DIR, file)
        if not os.path.exists(path):
            os.makedirs(BENCH_DIR, exist_ok=True)
            tool = os.path.join(kiln_build, "bench", "make_bench_model")
            print(f"writing {path} ...", file=sys.stderr)
            subprocess.run([tool, *args, "--tokenizer", REAL["smollm2"][1], "--out", path], check=True)
        return (name, path)
    t = SYNTHETIC[key]
    # The 1B files say a 4,096-token context; deeper tests use a copy that says 16,384
    # (the same weights: make_bench_model --ctx).
    long_path = os.path.join(BENCH_DIR, f"llama-1b-{t}-ctx16384.gguf")
    long = positions > 4096 or os.path.exists(long_path)  # the same weights either way
    path = long_path if long else os.path.join(BENCH_DIR, f"llama-1b-{t}.gguf")
    if not os.path.exists(path):
        os.makedirs(BENCH_DIR, exist_ok=True)
        tool = os.path.join(kiln_build, "bench", "make_bench_model")
        print(f"writing {path} ...", file=sys.stderr)
        subprocess.run([tool, "--type", t, "--tokenizer", REAL["smollm2"][1], "--out", path] + (["--ctx", "16384"] if long else []),
                       check=True)
    return (f"llama 1B {t} (synthetic)", path)


# ---- llama.cpp worker (runs in its own process) ------------------------------------------

def llama_worker(path, threads, n_prompt, n_gen, depth):
    import llama_cpp as L

    L.llama_backend_init()
    t0 = time.perf_counter()
    mp = L.llama_model_default_params()
    model = L.llama_model_load_from_file(path.encode(), mp)
    if not model:
        raise SystemExit(f"llama.cpp could not load {path}")
    cp = L.llama_context_default_params()
    cp.n_ctx = depth + max(n_prompt, n_gen + 1) + 16
    cp.n_batch = max(n_prompt, 512 if depth else 1)
    cp.n_ubatch = cp.n_batch
    cp.n_threads = threads
    cp.n_threads_batch = threads
    ctx = L.llama_init_from_model(model, cp)
    load_s = time.perf_counter() - t0
    n_vocab = L.llama_vocab_n_tokens(L.llama_model_get_vocab(model))
    mem = L.llama_get_memory(ctx)
    rng = random.Random(7)

    def decode(tokens):
        arr = (L.llama_token * len(tokens))(*tokens)
        if L.llama_decode(ctx, L.llama_batch_get_one(arr, len(tokens))) != 0:
            raise SystemExit("llama_decode failed")

    def fill():  # an empty cache, then `depth` tokens in it
        L.llama_memory_clear(mem, True)
        toks = [rng.randrange(n_vocab) for _ in range(depth)]
        for i in range(0, depth, cp.n_batch):
            decode(toks[i:i + cp.n_batch])

    def run():
        pp = tg = 0.0
        if n_prompt > 0:
            toks = [rng.randrange(n_vocab) for _ in range(n_prompt)]
            fill()
            t = time.perf_counter()
            decode(toks)
            L.llama_synchronize(ctx)
            pp = n_prompt / (time.perf_counter() - t)
        if n_gen > 0:
            toks = [rng.randrange(n_vocab) for _ in range(n_gen + 1)]
            fill()
            decode(toks[:1])
            t = time.perf_counter()
            for tok in toks[1:]:
                decode([tok])
            L.llama_synchronize(ctx)
            tg = n_gen / (time.perf_counter() - t)
        return pp, tg

    run()  # warm-up, as kiln bench does
    pp, tg = run()
    print(json.dumps({"pp_tokens_per_s": pp, "tg_tokens_per_s": tg, "load_seconds": load_s}))


# ---- driver ----------------------------------------------------------------------------------

def run_kiln(kiln, path, threads, n_prompt, n_gen, depth, isa, flash_attn="off"):
    cmd = [kiln, "bench", "-m", path, "-t", str(threads), "-p", str(n_prompt), "-n", str(n_gen), "-d", str(depth), "-r", "1",
           "--flash-attn", flash_attn, "--json"]
    env = dict(os.environ, **({"KILN_ISA": isa} if isa else {}))
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out)


def run_llama(python, path, threads, n_prompt, n_gen, depth, preload=None):
    cmd = [python, os.path.abspath(__file__), "--llama-worker", path, "-t", str(threads), "-p", str(n_prompt),
           "-n", str(n_gen), "-d", str(depth)]
    env = dict(os.environ, **({"LD_PRELOAD": preload} if preload else {}))
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def kiln_build_dir(kiln):
    return os.path.dirname(os.path.abspath(kiln))


def median(xs):
    return statistics.median(xs) if xs else 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="all")
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("-p", "--n-prompt", type=int, default=512)
    ap.add_argument("-n", "--n-gen", type=int, default=128)
    ap.add_argument("-d", "--depth", default="0", help="tokens in the cache before each test (a comma list: a row per depth)")
    ap.add_argument("--isa", help="kiln's kernel level (KILN_ISA) and the llama.cpp build for it")
    ap.add_argument("--flash-attn", choices=["on", "off"], default="off",
                    help="kiln's attention: off (the default order) or on (streaming); llama.cpp keeps its default")
    ap.add_argument("--llama-python", help="the python whose llama_cpp runs llama.cpp (default: by --isa)")
    ap.add_argument("--llama-no-amx", action="store_true",
                    help="llama.cpp without its AMX path (bench/no_amx_preload.c refuses its AMX permission request)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--kiln", default=os.path.join(ROOT, "build", "kiln"))
    ap.add_argument("--json", help="also write the raw results to this file")
    ap.add_argument("--llama-worker", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.llama_worker:
        llama_worker(a.llama_worker, a.threads, a.n_prompt, a.n_gen, int(a.depth))
        return
    depths = [int(x) for x in a.depth.split(",")]
    python = a.llama_python or sys.executable
    if not a.llama_python and a.isa in ("avx2", "avx2-novnni"):
        python = os.path.join(ROOT, ".venv-avxvnni" if a.isa == "avx2" else ".venv-avx2", "bin", "python")
        if not os.path.exists(python):
            sys.exit(f"{python} missing: tools/setup_oracle.sh {'--avx-vnni' if a.isa == 'avx2' else '--avx2'} builds it")
    probe_info = subprocess.run([python, "-c", "import llama_cpp; print(llama_cpp.__version__); "
                                 "print(llama_cpp.llama_print_system_info().decode())"], check=True, capture_output=True,
                                text=True).stdout.split("\n", 1)
    version, info = probe_info[0].strip(), probe_info[1]
    preload = None
    if a.llama_no_amx:
        preload = os.path.join(kiln_build_dir(a.kiln), "no_amx_preload.so")
        subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", preload, os.path.join(ROOT, "bench", "no_amx_preload.c"), "-ldl"],
                       check=True)
    if a.models == "all":
        keys = list(REAL) + [k for k in SYNTHETIC if k not in LOWBIT]
    elif a.models == "lowbit":
        keys = LOWBIT
    else:
        keys = a.models.split(",")
    kiln_build = kiln_build_dir(a.kiln)
    print(f"llama.cpp (llama-cpp-python {version}, {os.path.relpath(python, ROOT)}): {info.strip()}")
    print(f"kiln: KILN_ISA={a.isa or '(best)'}, --flash-attn {a.flash_attn}" + ("; llama.cpp without AMX" if preload else ""))
    print(f"threads {a.threads}, pp{a.n_prompt}, tg{a.n_gen}, depths {','.join(map(str, depths))}, {a.rounds} interleaved rounds\n")
    # Every file is written (or found missing) before the first timed run: a model
    # that cannot be made stops the run before it has spent time on the others.
    cases = [(k, d, *model_path(k, kiln_build, d + max(a.n_prompt, a.n_gen) + 16)) for k in keys for d in depths]
    results = []
    probes = []  # every kiln run's JSON (each carries its own probes)

    def save_json():
        if a.json:
            with open(a.json, "w") as f:
                json.dump({"probe": probe_maxima(), "results": results, "llama_cpp": info, "isa": a.isa}, f, indent=1)

    def probe_maxima():
        if not probes:
            return None
        p = {k: max(x.get(k, 0) for x in probes)
             for k in ("read_bandwidth_bytes_per_s", "int8_ops_per_s", "f32_flops_per_s", "bf16_flops_per_s")}
        p["kernels"] = probes[0].get("kernels", "?")
        return p

    for key, depth, name, path in cases:
        if not os.path.exists(path):
            print(f"{name}: {path} missing, skipped")
            continue
        kiln_runs, llama_runs = [], []
        for r in range(a.rounds):
            order = ["kiln", "llama"] if r % 2 == 0 else ["llama", "kiln"]
            for who in order:
                if who == "kiln":
                    kiln_runs.append(run_kiln(a.kiln, path, a.threads, a.n_prompt, a.n_gen, depth, a.isa, a.flash_attn))
                else:
                    llama_runs.append(run_llama(python, path, a.threads, a.n_prompt, a.n_gen, depth, preload))
        probes.extend(kiln_runs)
        row = {"key": key, "name": name, "path": path, "depth": depth, "kiln": kiln_runs, "llama": llama_runs,
               "pp_bound": max(x.get("pp_bound_tokens_per_s", 0) for x in kiln_runs),
               "tg_bound": max(x.get("tg_bound_tokens_per_s", 0) for x in kiln_runs),
               "pp_bound_kind": kiln_runs[0].get("pp_bound_kind", ""), "weight_bytes": kiln_runs[0].get("weight_bytes", 0)}
        for test in ("pp", "tg"):
            f = f"{test}_tokens_per_s"
            row[f"kiln_{test}"] = median([x[f] for x in kiln_runs])
            row[f"llama_{test}"] = median([x[f] for x in llama_runs])
            row[f"ratio_{test}"] = median([k[f] / l[f] for k, l in zip(kiln_runs, llama_runs) if l[f] > 0])
            # Other jobs on a shared machine only ever slow a run down: the best
            # round of each engine is the closest to what it does on a quiet one.
            row[f"kiln_{test}_best"] = max(x[f] for x in kiln_runs)
            row[f"llama_{test}_best"] = max(x[f] for x in llama_runs)
            # Each round against the bound probed in that round's kiln run: where the
            # bandwidth moves from minute to minute, the share of what the machine gave
            # at that moment (the best-of columns set a best round against the best probe).
            b = f"{test}_bound_tokens_per_s"
            row[f"kiln_{test}_of_round"] = median([k[f] / k[b] for k in kiln_runs if k.get(b, 0) > 0] or [0])
            row[f"llama_{test}_of_round"] = median([l[f] / k[b] for k, l in zip(kiln_runs, llama_runs) if k.get(b, 0) > 0] or [0])
        row["kiln_load"] = median([x["load_seconds"] for x in kiln_runs])
        row["llama_load"] = median([x["load_seconds"] for x in llama_runs])
        row["kiln_rss"] = median([x["peak_rss_bytes"] for x in kiln_runs])
        results.append(row)
        bw = [x.get("read_bandwidth_bytes_per_s", 0) / 1e9 for x in kiln_runs] or [0]
        print(f"{name} @ d{depth}: pp {row['kiln_pp']:.1f} vs {row['llama_pp']:.1f} (x{row['ratio_pp']:.2f}), "
              f"tg {row['kiln_tg']:.1f} vs {row['llama_tg']:.1f} (x{row['ratio_tg']:.2f}); "
              f"memory read {min(bw):.1f}-{max(bw):.1f} GB/s", flush=True)
        save_json()  # what was measured survives a later model's failure

    probe = probe_maxima()
    if probes:
        def span(field, scale, fmt):
            v = [x.get(field, 0) / scale for x in probes if x.get(field, 0) > 0]
            return f"{min(v):{fmt}}-{max(v):{fmt}}" if v else "-"

        print(f"\nkiln kernels: {probe['kernels']}")
        print(f"probes (kiln bench, {a.threads} threads, lowest-highest of {len(probes)} runs): "
              f"memory read {span('read_bandwidth_bytes_per_s', 1e9, '.1f')} GB/s, "
              f"int8 {span('int8_ops_per_s', 1e9, '.0f')} Gop/s, f32 fma {span('f32_flops_per_s', 1e9, '.0f')} GFLOP/s"
              + (f", bf16 dot {span('bf16_flops_per_s', 1e9, '.0f')} GFLOP/s" if probe["bf16_flops_per_s"] else ""))
        print("bounds: each model's highest probes over its rounds")

    def pct(v, b):
        return f"{100 * v / b:.0f}%" if b else "-"

    print("\nmedian over rounds (t/s), median of the per-round ratios, and the best round of each engine:")
    print("\n| model | depth | test | kiln | llama.cpp | kiln / llama.cpp | best kiln | best llama.cpp | best ratio | bound | "
          "kiln best of bound | llama.cpp best of bound | kiln of round's bound | llama.cpp of round's bound |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for row in results:
        for test in ("pp", "tg"):
            n = a.n_prompt if test == "pp" else a.n_gen
            b = row[f"{test}_bound"]
            kind = row["pp_bound_kind"] if test == "pp" else "bandwidth"
            kb, lb = row[f"kiln_{test}_best"], row[f"llama_{test}_best"]
            print(f"| {row['name']} | {row['depth']} | {test}{n} | {row[f'kiln_{test}']:.1f} | {row[f'llama_{test}']:.1f} | "
                  f"{row[f'ratio_{test}']:.2f} | {kb:.1f} | {lb:.1f} | {kb / lb if lb else 0:.2f} | {b:.0f} ({kind}) | "
                  f"{pct(kb, b)} | {pct(lb, b)} | {pct(row[f'kiln_{test}_of_round'], 1)} | {pct(row[f'llama_{test}_of_round'], 1)} |")
    # The issue's test for long contexts: the extra time of a decode step at depth
    # D over one at depth 0, against the time to read the cache it adds once.
    extra = [(r0, r) for r0 in results if r0["depth"] == 0 for r in results if r["key"] == r0["key"] and r["depth"] > 0]
    if extra and probe and probe["read_bandwidth_bytes_per_s"] > 0:
        bw = probe["read_bandwidth_bytes_per_s"]
        print("\n| model | depth | kiln decode step extra over depth 0 | cache bytes read / bandwidth | ratio | "
              "llama.cpp step extra |")
        print("|---|---|---|---|---|---|")
        for r0, r in extra:
            k_extra = 1e3 / r["kiln_tg"] - 1e3 / r0["kiln_tg"]
            l_extra = 1e3 / r["llama_tg"] - 1e3 / r0["llama_tg"]
            budget = 1e3 * median([x.get("cache_bytes_per_step", 0) for x in r["kiln"]]) / bw
            print(f"| {r['name']} | {r['depth']} | {k_extra:.2f} ms | {budget:.2f} ms | {k_extra / budget if budget else 0:.2f} | "
                  f"{l_extra:.2f} ms |")
    print("\n| model | weights | kiln load s | llama.cpp load s | kiln peak RSS |")
    print("|---|---|---|---|---|")
    for row in results:
        print(f"| {row['name']} | {row['weight_bytes'] / 2**20:.0f} MiB | {row['kiln_load']:.2f} | {row['llama_load']:.2f} | "
              f"{row['kiln_rss'] / 2**20:.0f} MiB |")
    save_json()


if __name__ == "__main__":
    main()
