#!/usr/bin/env python3
"""Writes the corpus of broken GGUF files in tests/data/broken/ and MANIFEST.json
(file -> a substring the reader's error must contain). Pure standard library: the
files are built byte by byte so that each one is wrong in exactly one way.

Usage: tools/make_broken_gguf.py
"""
import json
import struct
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "broken"

U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)


def s(text: bytes | str) -> bytes:
    if isinstance(text, str):
        text = text.encode()
    return struct.pack("<Q", len(text)) + text


def kv(key: str, vtype: int, body: bytes) -> bytes:
    return s(key) + struct.pack("<I", vtype) + body


def tensor(name: str, dims: list[int], ttype: int, offset: int) -> bytes:
    return s(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims) + \
        struct.pack("<II", ttype, 0)[:4] + struct.pack("<Q", offset)


def gguf(kvs: list[bytes], tensors: list[bytes], data: bytes = b"", version: int = 3, magic: bytes = b"GGUF",
         n_tensors: int | None = None, n_kv: int | None = None, align: int = 32) -> bytes:
    head = magic + struct.pack("<I", version)
    head += struct.pack("<QQ", len(tensors) if n_tensors is None else n_tensors, len(kvs) if n_kv is None else n_kv)
    body = head + b"".join(kvs) + b"".join(tensors)
    body += b"\0" * ((align - len(body) % align) % align)
    return body + data


ARCH = kv("general.architecture", STR, s("llama"))
F32_TYPE = 0
Q4_0_TYPE = 2


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    cases: dict[str, tuple[bytes, str]] = {}
    good_tensor = tensor("a", [8], F32_TYPE, 0)
    cases["empty"] = (b"", "truncated")
    cases["short_header"] = (b"GGUF\x03\x00\x00", "truncated")
    cases["wrong_magic"] = (gguf([ARCH], []).replace(b"GGUF", b"GGML", 1), "not a GGUF file")
    cases["version_1"] = (gguf([ARCH], [], version=1), "GGUF version 1 is not supported")
    cases["version_99"] = (gguf([ARCH], [], version=99), "GGUF version 99 is not supported")
    cases["big_endian"] = (b"GGUF" + struct.pack(">I", 3) + struct.pack(">QQ", 0, 0), "big-endian")
    cases["huge_tensor_count"] = (gguf([ARCH], [], n_tensors=2**62), "tensor count")
    cases["huge_kv_count"] = (gguf([ARCH], [], n_kv=2**60), "metadata count")
    cases["huge_key_length"] = (gguf([struct.pack("<Q", 2**63) + b"x"], []), "exceeds")
    cases["huge_string_length"] = (gguf([s("k") + struct.pack("<I", STR) + struct.pack("<Q", 2**40) + b"abc"], []),
                                   "exceeds")
    cases["huge_array_count"] = (gguf([s("k") + struct.pack("<IIQ", ARR, U32, 2**61)], []), "cannot fit")
    cases["huge_string_array_count"] = (gguf([s("k") + struct.pack("<IIQ", ARR, STR, 2**50)], []), "cannot fit")
    cases["unknown_value_type"] = (gguf([kv("k", 13, b"\0" * 8)], []), "unknown value type 13")
    cases["unknown_array_type"] = (gguf([s("k") + struct.pack("<IIQ", ARR, 77, 1)], []), "unknown array element type")
    deep = struct.pack("<I", ARR)
    for _ in range(12):
        deep += struct.pack("<IQ", ARR, 1)
    deep += struct.pack("<IQ", U8, 0)
    cases["arrays_nested_too_deep"] = (gguf([s("k") + deep], []), "nested deeper")
    cases["bool_value_2"] = (gguf([kv("k", BOOL, b"\x02")], []), "bool value 2")
    cases["duplicate_key"] = (gguf([ARCH, ARCH], []), "duplicate metadata key 'general.architecture'")
    cases["empty_key"] = (gguf([kv("", U8, b"\x01")], []), "empty key")
    cases["alignment_not_power_of_two"] = (gguf([kv("general.alignment", U32, struct.pack("<I", 48))], []),
                                           "not a power of two")
    cases["alignment_zero"] = (gguf([kv("general.alignment", U32, struct.pack("<I", 0))], []), "not a power of two")
    cases["alignment_wrong_type"] = (gguf([kv("general.alignment", STR, s("32"))], []),
                                     "GGUF metadata 'general.alignment': expected u32, found string")
    cases["unknown_tensor_type"] = (gguf([ARCH], [tensor("a", [8], 4, 0)], b"\0" * 32), "unknown ggml type id 4")
    cases["tensor_type_huge"] = (gguf([ARCH], [tensor("a", [8], 0xFFFFFFFF, 0)], b"\0" * 32), "unknown ggml type id")
    cases["zero_dimension"] = (gguf([ARCH], [tensor("a", [8, 0], F32_TYPE, 0)], b"\0" * 32), "dimension 1 is zero")
    cases["five_dimensions"] = (gguf([ARCH], [tensor("a", [1, 1, 1, 1, 1], F32_TYPE, 0)], b"\0" * 32),
                                "5 dimensions")
    cases["zero_dimensions"] = (gguf([ARCH], [tensor("a", [], F32_TYPE, 0)], b"\0" * 32), "0 dimensions")
    cases["element_count_overflow"] = (gguf([ARCH], [tensor("a", [2**32, 2**32], F32_TYPE, 0)], b"\0" * 32),
                                       "element count overflows")
    cases["row_not_block_multiple"] = (gguf([ARCH], [tensor("a", [33], Q4_0_TYPE, 0)], b"\0" * 64),
                                       "not a multiple of the Q4_0 block size 32")
    cases["misaligned_offset"] = (gguf([ARCH], [tensor("a", [8], F32_TYPE, 4)], b"\0" * 64),
                                  "not a multiple of the alignment 32")
    cases["data_past_eof"] = (gguf([ARCH], [tensor("a", [64], F32_TYPE, 0)], b"\0" * 32), "runs past the end of the file")
    cases["offset_past_eof"] = (gguf([ARCH], [tensor("a", [8], F32_TYPE, 2**40)], b"\0" * 32),
                                "runs past the end of the file")
    cases["overlapping_tensors"] = (gguf([ARCH], [tensor("a", [16], F32_TYPE, 0), tensor("b", [16], F32_TYPE, 32)],
                                         b"\0" * 128), "overlap")
    cases["duplicate_tensor"] = (gguf([ARCH], [good_tensor, tensor("a", [8], F32_TYPE, 32)], b"\0" * 64),
                                 "duplicate tensor name 'a'")
    cases["empty_tensor_name"] = (gguf([ARCH], [tensor("", [8], F32_TYPE, 0)], b"\0" * 32), "empty name")
    cases["truncated_tensor_table"] = (gguf([ARCH], [good_tensor], b"\0" * 32)[:70], "truncated")
    cases["truncated_in_string"] = (gguf([kv("general.name", STR, s("a long name here"))], [])[:40], "truncated")
    cases["tensor_count_lies"] = (gguf([ARCH], [good_tensor], b"\0" * 32, n_tensors=3), "tensor 1 has an empty name")
    manifest = {}
    for name, (data, expect) in sorted(cases.items()):
        (OUT / f"{name}.gguf").write_bytes(data)
        manifest[f"{name}.gguf"] = expect
    (OUT / "MANIFEST.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"wrote {len(cases)} files to {OUT}")


if __name__ == "__main__":
    main()
