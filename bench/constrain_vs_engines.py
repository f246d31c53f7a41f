"""Side by side: kiln's constraint engine, llguidance and XGrammar on the same JSON
Schemas, vocabularies and token sequences. Prints two tables:

* speed, per vocabulary and engine: schemas compiled / refused, compile time
  (median of --rounds per schema, then p50 / p95 over the schemas) and the time
  of one token mask (p50 / p99 / mean over every step of every round, walks
  through one valid document per schema, a fresh matcher each round — for kiln
  a Grammar compiled afresh, so nothing carries over — thread CPU time, one
  thread), over the walks that every engine completed; for kiln also a row for
  one more walk with the schema already compiled (its matcher starts from the
  allowed-token automaton the previous one left, as a server keeping a
  request's compiled schema would);
* coverage of the sample (byte level, vocabulary-independent): compiled,
  refused, schemas with an invalid instance accepted, invalid instances
  accepted, valid instances rejected.

Cases: the three JSON Schemas of bench/bench_constrain.cpp ("simple": enum +
integer + bool, "free strings", "complex": nested + arrays + formats) and every
--stride-th schema with instances of MaskBench (shared/testdata/jsonschema). The
document walked is the first valid instance, written by json.dumps (", " / ": "
separators); its tokens are the Hugging Face tokenizer's, given to every engine.
The instances are checked as compact JSON (kiln: validate() with any JSON
whitespace; llguidance: its tokenizer's tokens consumed, then is_accepting;
XGrammar: accept_string, then is_completed). kiln requires object keys in the
schema's order (docs/structured_output.md), so a valid instance written in
another order counts as rejected for it here; the corpus test reorders them.

The kiln side is build/bench/constrain_cases (a C++ program, timed inside);
llguidance and XGrammar are timed around their Python calls, which adds about a
microsecond per mask to their figures. XGrammar imports torch at module level
(only for its GPU kernels); where torch is not installed a stand-in module is put
in its place, which the CPU bitmask path never calls.

    .venv/bin/python bench/constrain_vs_engines.py [--stride 60] [--rounds 3]
        [--vocabs qwen3,llama3,gemma3] [--engines kiln,llguidance,xgrammar] [--json OUT]
        [--coverage-only]
"""
import argparse
import json
import lzma
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time
import types

ROOT = pathlib.Path(__file__).resolve().parents[1]
TESTDATA = ROOT.parent / "shared" / "testdata"
VOCAB_DIR = pathlib.Path(os.environ.get("KILN_VOCABS", pathlib.Path.home() / ".cache" / "kiln" / "vocabs"))
MODEL_DIR = pathlib.Path(os.environ.get("KILN_MODELS", pathlib.Path.home() / ".cache" / "kiln" / "models"))

# name: (Hugging Face tokenizer folder, the same vocabulary as GGUF for kiln)
VOCABS = {
    "qwen3": ("qwen3", VOCAB_DIR / "ggml-vocab-qwen2.gguf"),
    "llama3": ("llama-3.1", VOCAB_DIR / "ggml-vocab-llama-bpe.gguf"),
    "gemma3": ("gemma-3", MODEL_DIR / "gemma-3-270m-q4_k_m.gguf"),
}

# The JSON Schema cases of bench/bench_constrain.cpp (same schemas and documents).
BENCH_CASES = [
    ("simple: enum + integer + bool",
     {"type": "object", "properties": {"unit": {"enum": ["celsius", "fahrenheit"]},
                                       "days": {"type": "integer", "minimum": 1, "maximum": 14},
                                       "hourly": {"type": "boolean"}},
      "required": ["unit", "days", "hourly"], "additionalProperties": False},
     {"unit": "celsius", "days": 7, "hourly": False}),
    ("free strings",
     {"type": "object", "properties": {"title": {"type": "string"}, "body": {"type": "string"}},
      "required": ["title", "body"], "additionalProperties": False},
     {"title": "A short note on masks",
      "body": "Constrained decoding walks a trie of the vocabulary with the matcher state, and prunes every subtree whose prefix fails."}),
    ("complex: nested + arrays + formats",
     {"type": "object", "properties": {
         "id": {"type": "string", "format": "uuid"}, "created": {"type": "string", "format": "date-time"},
         "items": {"type": "array", "minItems": 1, "maxItems": 5, "items": {
             "type": "object", "properties": {"sku": {"type": "string", "pattern": "^[A-Z]{3}-\\d{4}$"},
                                              "qty": {"type": "integer", "minimum": 1},
                                              "price": {"type": "number", "minimum": 0}},
             "required": ["sku", "qty", "price"], "additionalProperties": False}}},
      "required": ["id", "created", "items"]},
     {"id": "3f2504e0-4f89-11d3-9a0c-0305e82c3301", "created": "2024-05-01T12:00:00Z",
      "items": [{"sku": "ABC-1234", "qty": 2, "price": 9.5}, {"sku": "XYZ-0001", "qty": 1, "price": 120}]}),
]


def load_cases(stride):
    cases = [{"id": name, "schema": json.dumps(schema), "document": json.dumps(doc, ensure_ascii=False),
              "instances": [{"text": json.dumps(doc, separators=(",", ":"), ensure_ascii=False), "valid": True}]}
             for name, schema, doc in BENCH_CASES]
    with lzma.open(TESTDATA / "jsonschema" / "maskbench.jsonl.xz", "rt") as f:
        recs = [json.loads(line) for line in f if line.strip()]
    recs = [r for r in recs if any(t["valid"] for t in r["tests"])]
    for r in recs[::stride]:
        doc = next(t["data"] for t in r["tests"] if t["valid"])
        cases.append({"id": r["id"], "schema": json.dumps(r["schema"]), "document": json.dumps(doc, ensure_ascii=False),
                      "instances": [{"text": json.dumps(t["data"], separators=(",", ":"), ensure_ascii=False), "valid": t["valid"]}
                                    for t in r["tests"]]})
    return cases


def thread_us():
    return time.thread_time_ns() / 1e3


def median(xs):
    return statistics.median(xs) if xs else float("nan")


# --- kiln ---------------------------------------------------------------------

def run_kiln(vocab_gguf, cases, tokens, rounds, check):
    binary = ROOT / "build" / "bench" / "constrain_cases"
    if not binary.exists():
        sys.exit(f"{binary} not found: cmake --build build --target constrain_cases")
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for c, toks in zip(cases, tokens):
            f.write(json.dumps({"id": c["id"], "schema": c["schema"], "tokens": toks,
                                "instances": c["instances"] if check else []}) + "\n")
        path = f.name
    try:
        out = subprocess.run([str(binary), str(vocab_gguf), path, str(rounds)], capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(path)
    results = []
    for line in out.splitlines():
        r = json.loads(line)
        results.append({"compiled": r["compiled"], "error": r.get("error", ""), "compile_ms": r.get("compile_ms"),
                        "mask_us": r.get("mask_us", []), "mask_warm_us": r.get("mask_warm_us", []), "walk_ok": r.get("walk_ok", False), "accepted": r.get("accepted", [])})
    return results


# --- llguidance ---------------------------------------------------------------

def run_llguidance(tok_json, cases, tokens, rounds, check):
    import llguidance
    import llguidance.numpy as lln
    tok = llguidance.LLTokenizer(str(tok_json))
    bitmask = lln.allocate_token_bitmask(1, tok.vocab_size)
    results = []
    for c, toks in zip(cases, tokens):
        r = {"compiled": False, "error": "", "compile_ms": None, "mask_us": [], "walk_ok": False, "accepted": []}
        times = []
        try:
            for _ in range(rounds):
                t0 = thread_us()
                grammar = llguidance.LLMatcher.grammar_from_json_schema(c["schema"])
                m = llguidance.LLMatcher(tok, grammar, log_level=0)
                times.append((thread_us() - t0) / 1e3)
                if m.is_error():
                    raise ValueError(m.get_error())
        except Exception as e:  # llguidance raises ValueError / RuntimeError with its message
            r["error"] = str(e)[:300]
            results.append(r)
            continue
        r["compiled"], r["compile_ms"] = True, median(times)
        walk_ok = True
        for _ in range(rounds):
            m = llguidance.LLMatcher(tok, grammar, log_level=0)
            for t in toks:
                t0 = thread_us()
                lln.fill_next_token_bitmask(m, bitmask, 0)
                r["mask_us"].append(thread_us() - t0)
                if not m.consume_token(t):
                    walk_ok = False
                    break
            if not walk_ok:
                break
        r["walk_ok"] = walk_ok
        if check:
            for inst in c["instances"]:
                m = llguidance.LLMatcher(tok, grammar, log_level=0)
                ok = all(m.consume_token(t) for t in tok.tokenize_str(inst["text"])) and m.is_accepting()
                r["accepted"].append(bool(ok))
        results.append(r)
    return results


# --- XGrammar -----------------------------------------------------------------

def import_xgrammar():
    from transformers import PreTrainedTokenizerFast  # noqa: F401 (before any torch stand-in)
    try:
        import torch  # noqa: F401
    except ImportError:
        import tvm_ffi  # noqa: F401 (loads before the stand-in: it looks for a real torch)

        class Stub:
            def __init__(self, *a, **k): pass
            def __call__(self, *a, **k): return Stub()
            def __getattr__(self, name): return Stub()
            def __getitem__(self, key): return Stub()
            def __or__(self, other): return Stub()
            __ror__ = __or__
        stub = types.ModuleType("torch")
        stub.__getattr__ = lambda name: Stub()
        stub.__path__ = []
        for n in ("Tensor", "dtype", "device", "Size", "Generator"):
            setattr(stub, n, type(n, (), {}))
        sys.modules["torch"] = stub
    import xgrammar
    return xgrammar


def run_xgrammar(tok_json, cases, tokens, rounds, check, byte_vocab=False):
    import numpy as np
    xgr = import_xgrammar()
    if byte_vocab:
        # Coverage only: its compile time grows with the vocabulary (it precomputes
        # token masks), its byte-level answers do not.
        info = xgr.TokenizerInfo([bytes([b]) for b in range(256)], vocab_type=xgr.VocabType.RAW)
    else:
        from transformers import PreTrainedTokenizerFast
        hf = PreTrainedTokenizerFast(tokenizer_file=str(tok_json))
        info = xgr.TokenizerInfo.from_huggingface(hf, vocab_size=len(hf))
    compiler = xgr.GrammarCompiler(info, max_threads=1, cache_enabled=False)
    bitmask = np.full((1, (info.vocab_size + 31) // 32), -1, dtype=np.int32)
    results = []
    for c, toks in zip(cases, tokens):
        r = {"compiled": False, "error": "", "compile_ms": None, "mask_us": [], "walk_ok": False, "accepted": []}
        times = []
        try:
            for _ in range(rounds):
                t0 = thread_us()
                compiled = compiler.compile_json_schema(c["schema"], strict_mode=False)
                times.append((thread_us() - t0) / 1e3)
        except Exception as e:  # XGrammar raises RuntimeError / its own errors with the message
            r["error"] = str(e)[:300]
            results.append(r)
            continue
        r["compiled"], r["compile_ms"] = True, median(times)
        walk_ok = True
        for _ in range(rounds):
            m = xgr.GrammarMatcher(compiled)
            for t in toks:
                t0 = thread_us()
                m.fill_next_token_bitmask(bitmask)
                r["mask_us"].append(thread_us() - t0)
                if not m.accept_token(t):
                    walk_ok = False
                    break
            if not walk_ok:
                break
        r["walk_ok"] = walk_ok
        if check:
            for inst in c["instances"]:
                m = xgr.GrammarMatcher(compiled)
                r["accepted"].append(bool(m.accept_string(inst["text"]) and m.is_completed()))
        results.append(r)
    return results


ENGINES = {"kiln": run_kiln, "llguidance": run_llguidance, "xgrammar": run_xgrammar}


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))] if xs else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stride", type=int, default=60, help="every N-th MaskBench schema with instances")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--vocabs", default="qwen3,llama3,gemma3")
    ap.add_argument("--engines", default="kiln,llguidance,xgrammar")
    ap.add_argument("--json", help="write every result here")
    ap.add_argument("--coverage-only", action="store_true",
                    help="only the coverage table (one round, no mask walks; XGrammar over a 256-byte vocabulary)")
    a = ap.parse_args()
    from tokenizers import Tokenizer

    cases = load_cases(a.stride)
    engines = a.engines.split(",")
    print(f"{len(cases)} cases ({len(BENCH_CASES)} bench schemas + every {a.stride}-th MaskBench schema), {a.rounds} rounds")
    all_results = {}
    coverage = None
    for vi, vname in enumerate(a.vocabs.split(",")):
        hf_dir, gguf = VOCABS[vname]
        with tempfile.TemporaryDirectory() as tmp:
            tok_json = pathlib.Path(tmp) / "tokenizer.json"
            with lzma.open(TESTDATA / "hf-tokenizers" / hf_dir / "tokenizer.json.xz") as src:
                tok_json.write_bytes(src.read())
            hf = Tokenizer.from_file(str(tok_json))
            tokens = [[] if a.coverage_only else hf.encode(c["document"], add_special_tokens=False).ids for c in cases]
            res = {}
            for e in engines:
                t0 = time.time()
                args = (gguf,) if e == "kiln" else (tok_json,)
                kw = {"byte_vocab": True} if e == "xgrammar" and a.coverage_only else {}
                res[e] = ENGINES[e](*args, cases, tokens, 1 if a.coverage_only else a.rounds, vi == 0, **kw)
                print(f"  {vname} {e}: {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
        all_results[vname] = res
        if vi == 0:
            coverage = res
        if a.coverage_only:
            break
        common = [i for i in range(len(cases)) if all(res[e][i]["walk_ok"] for e in engines)]
        print(f"\n{vname} ({hf.get_vocab_size()} tokens; masks over the {len(common)} walks every engine completed)")
        print(f"| engine | compiled | refused | compile p50 ms | compile p95 ms | mask p50 µs | mask p99 µs | mask mean µs | walks done |")
        print(f"|---|---|---|---|---|---|---|---|---|")
        for e in engines:
            r = res[e]
            comp = [x["compile_ms"] for x in r if x["compiled"]]
            masks = [t for i in common for t in r[i]["mask_us"]]
            print(f"| {e} | {len(comp)} | {len(r) - len(comp)} | {pct(comp, 0.5):.2f} | {pct(comp, 0.95):.2f} | "
                  f"{pct(masks, 0.5):.1f} | {pct(masks, 0.99):.1f} | {statistics.fmean(masks) if masks else float('nan'):.1f} | "
                  f"{sum(x['walk_ok'] for x in r)} |")
            warm = [t for i in common for t in r[i].get("mask_warm_us", [])]
            if warm:  # kiln: a second request with the same compiled schema
                print(f"| {e} (schema compiled before) | | | | | {pct(warm, 0.5):.1f} | {pct(warm, 0.99):.1f} | "
                      f"{statistics.fmean(warm):.1f} | |")
        for name, _, _ in BENCH_CASES:
            i = next(k for k, c in enumerate(cases) if c["id"] == name)
            row = []
            for e in engines:
                x = res[e][i]
                row.append(f"{e} {x['compile_ms']:.2f} ms / p50 {pct(x['mask_us'], 0.5):.1f} / max {max(x['mask_us'] or [float('nan')]):.0f} µs"
                           if x["compiled"] else f"{e} refused")
            print(f"  {name}: " + "; ".join(row))
    if a.coverage_only:
        print("(coverage only: the speed figures above are not measured)")

    print(f"\ncoverage of the {len(cases)} cases (compact instances, byte level)")
    print("| engine | compiled | refused | schemas accepting an invalid instance | invalid accepted | valid rejected |")
    print("|---|---|---|---|---|---|")
    for e in engines:
        fa_schemas = fa = fr = 0
        for c, x in zip(cases, coverage[e]):
            if not x["compiled"]:
                continue
            bad = [ok and not inst["valid"] for inst, ok in zip(c["instances"], x["accepted"])]
            fa += sum(bad)
            fa_schemas += any(bad)
            fr += sum(inst["valid"] and not ok for inst, ok in zip(c["instances"], x["accepted"]))
        n_comp = sum(x["compiled"] for x in coverage[e])
        print(f"| {e} | {n_comp} | {len(cases) - n_comp} | {fa_schemas} | {fa} | {fr} |")
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps({"cases": [c["id"] for c in cases], "results": all_results}))


if __name__ == "__main__":
    main()
