#!/usr/bin/env python3
"""Reference reads of real GGUF files by the `gguf` package, for tests/gguf.

For each file: version, data section offset, every metadata key in file order
(type, value; arrays as element type + count + FNV-1a 64 of their canonical
bytes, with the elements themselves when short) and every tensor (name, type,
shape in ggml order, offset from the data section, bytes).

Canonical bytes of an array: numbers as stored (little-endian, element type's
width); strings as u64 length + UTF-8 bytes each; bools as one byte each.

Usage: tools/gguf_fixtures.py   (writes tests/golden/gguf/*.json)
Needs the oracle environment (tools/setup_oracle.sh) and the installed models.
"""
import json
import os
import sys
from pathlib import Path

import numpy as np
from gguf import GGUFReader, GGMLQuantizationType, GGUFValueType

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "golden" / "gguf"
MODELS = Path(os.environ.get("KILN_MODELS", Path.home() / ".cache" / "kiln" / "models"))

TYPE_NAMES = {
    GGUFValueType.UINT8: "u8", GGUFValueType.INT8: "i8", GGUFValueType.UINT16: "u16",
    GGUFValueType.INT16: "i16", GGUFValueType.UINT32: "u32", GGUFValueType.INT32: "i32",
    GGUFValueType.FLOAT32: "f32", GGUFValueType.BOOL: "bool", GGUFValueType.STRING: "string",
    GGUFValueType.ARRAY: "array", GGUFValueType.UINT64: "u64", GGUFValueType.INT64: "i64",
    GGUFValueType.FLOAT64: "f64",
}
INLINE_MAX = 64


def fnv1a64(data: bytes) -> str:
    h = 0xCBF29CE484222325
    # Process in numpy for speed: FNV is sequential, so fall back to a tight loop.
    for b in data:
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def scalar(v, t):
    if t == GGUFValueType.STRING:
        return bytes(v).decode("utf-8", errors="surrogateescape")
    x = v.tolist()[0]
    if t == GGUFValueType.BOOL:
        return bool(x)
    return x


def describe(reader: GGUFReader, path: Path) -> dict:
    md = []
    for field in reader.fields.values():
        t = field.types[0]
        entry = {"key": field.name, "type": TYPE_NAMES[t]}
        if t == GGUFValueType.ARRAY:
            et = field.types[-1] if len(field.types) > 1 else GGUFValueType.UINT8
            if len(field.types) > 2:
                raise SystemExit(f"{path}: nested array in {field.name} not handled by this script")
            entry["elem_type"] = TYPE_NAMES[et]
            entry["count"] = len(field.data)
            if et == GGUFValueType.STRING:
                chunks = []
                for idx in field.data:
                    raw = bytes(field.parts[idx])
                    chunks.append(len(raw).to_bytes(8, "little") + raw)
                canon = b"".join(chunks)
                items = [bytes(field.parts[i]).decode("utf-8", errors="surrogateescape") for i in field.data]
            else:
                arr = np.concatenate([field.parts[i] for i in field.data]) if field.data else np.zeros(0)
                canon = arr.tobytes()
                items = [bool(x) if et == GGUFValueType.BOOL else x for x in arr.tolist()]
            entry["fnv1a64"] = fnv1a64(canon)
            if entry["count"] <= INLINE_MAX:
                entry["items"] = items
        else:
            entry["value"] = scalar(field.parts[field.data[0]], t)
        md.append(entry)
    tensors = []
    for t in reader.tensors:
        tensors.append({
            "name": t.name,
            "type": GGMLQuantizationType(t.tensor_type).name,
            "shape": [int(x) for x in t.shape],
            "offset": int(t.data_offset - reader.data_offset),
            "bytes": int(t.n_bytes),
        })
    version = int(reader.fields["GGUF.version"].parts[0][0]) if "GGUF.version" in reader.fields else None
    return {"file": path.name, "version": version, "data_offset": int(reader.data_offset),
            "metadata": [m for m in md if not m["key"].startswith("GGUF.")], "tensors": tensors}


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    from gguf import GGML_QUANT_SIZES
    types = [{"id": int(t.value), "name": t.name, "block_size": GGML_QUANT_SIZES[t][0],
              "block_bytes": GGML_QUANT_SIZES[t][1]} for t in GGMLQuantizationType]
    (OUT / "ggml_types.json").write_text(json.dumps(types, indent=1) + "\n")
    files = [MODELS / "SmolLM2-135M-Instruct.Q4_1.gguf", MODELS / "gemma-3-270m-q4_k_m.gguf"]
    files += sorted((ROOT / "tests" / "data" / "shared" / "tokenizer").glob("ggml-vocab-*.gguf"))
    for path in files:
        if not path.exists():
            sys.exit(f"missing {path}: run ./setup.sh first")
        desc = describe(GGUFReader(path), path)
        out = OUT / (path.name + ".json")
        out.write_text(json.dumps(desc, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        print(f"{out.relative_to(ROOT)}: {len(desc['metadata'])} keys, {len(desc['tensors'])} tensors")


if __name__ == "__main__":
    main()
