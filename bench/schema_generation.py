"""Long check: generation correctness over the whole hand-written schema corpus
(tests/server/generation_schemas.py, 105 schemas: every supported JSON Schema
keyword plus public APIs' tool definitions) on both real models at temperature 1,
N samples per schema (default 10), every completed reply validated with
`jsonschema` (formats included). Prints, per model: schemas, replies, valid,
invalid (must be 0), cut by max_tokens, refused schemas (must be 0).

    .venv/bin/python bench/schema_generation.py [--samples 10] [--models smollm2,gemma3] [--every 1]
"""
import argparse
import concurrent.futures
import json
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "server"))

from conftest import MODELS, SMOLLM2, KilnServer  # noqa: E402
import generation_schemas  # noqa: E402
from test_schema_generation import generate  # noqa: E402

MODEL_FILES = {"smollm2": SMOLLM2, "gemma3": MODELS / "gemma-3-270m-q4_k_m.gguf"}


def run_model(path, samples, max_tokens, every):
    s = KilnServer("--parallel", "4", model=path, ctx=4096)
    try:
        counts = {"schemas": 0, "replies": 0, "valid": 0, "invalid": 0, "length": 0, "refused": 0}
        invalid = []

        def one(entry):
            name, prompt, schema = entry
            return entry, generate(s, "", prompt, schema, n=samples, seed=1234, max_tokens=max_tokens)

        t0 = time.time()
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            for (name, _, schema), reply in pool.map(one, generation_schemas.ALL[::every]):
                counts["schemas"] += 1
                if "choices" not in reply:
                    counts["refused"] += 1
                    invalid.append((name, "refused", json.dumps(reply)[:200]))
                    continue
                v = generation_schemas.validator(schema)
                for choice in reply["choices"]:
                    counts["replies"] += 1
                    if choice["finish_reason"] != "stop":
                        counts["length"] += 1
                        continue
                    try:
                        errors = list(v.iter_errors(json.loads(choice["message"]["content"])))
                    except json.JSONDecodeError as e:
                        errors = [e]
                    if errors:
                        counts["invalid"] += 1
                        invalid.append((name, choice["message"]["content"][:200], str(errors[0])[:200]))
                    else:
                        counts["valid"] += 1
                print(f"  {name}: {[c['finish_reason'] for c in reply['choices']]}; so far {counts}", file=sys.stderr, flush=True)
        counts["seconds"] = round(time.time() - t0)
        return counts, invalid
    finally:
        s.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=10)
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--models", default="smollm2,gemma3")
    ap.add_argument("--every", type=int, default=1, help="every N-th schema of the corpus (a stated subset)")
    a = ap.parse_args()
    ok = True
    for m in a.models.split(","):
        counts, invalid = run_model(MODEL_FILES[m], a.samples, a.max_tokens, a.every)
        print(f"{m}: {counts}")
        for item in invalid:
            print("   ", item)
        ok = ok and counts["invalid"] == 0 and counts["refused"] == 0
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
