#!/usr/bin/env python3
"""Regenerate the quantization fixtures under tests/golden/quant/.

Oracles (none of them is linked into kiln; they only produce the committed files):
  * the `gguf` package's numpy (de)quantizers, where it has them;
  * ggml's own C reference functions, reached through the shared libraries that
    llama-cpp-python ships (ctypes: dequantize_row_*, quantize_row_*_ref,
    ggml_get_type_traits()->to_float / from_float_ref, ggml_vec_dot_*);
  * plain numpy value conversion for the integer and f64 types.

Every type the gguf package dequantizes is also cross-checked against ggml's
to_float here, so a fixture records when the two oracles disagree.

Usage:  python tools/quant_fixtures.py [--models-only | --no-models]
Output: tests/golden/quant/manifest.json and the binary files it names.
        Binary files are raw little-endian arrays; the manifest gives counts.
"""
from __future__ import annotations

import argparse
import ctypes
import importlib.metadata
import importlib.util
import json
import os
import sys
from pathlib import Path

import numpy as np

import gguf
from gguf import GGMLQuantizationType as T
from gguf.constants import GGML_QUANT_SIZES

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "golden" / "quant"

FNV_OFFSET = np.uint64(0xCBF29CE484222325)
FNV_PRIME = np.uint64(0x100000001B3)


# ---------------------------------------------------------------------------
# ggml through ctypes

class TypeTraits(ctypes.Structure):
    _fields_ = [
        ("type_name", ctypes.c_char_p),
        ("blck_size", ctypes.c_int64),
        ("blck_size_interleave", ctypes.c_int64),
        ("type_size", ctypes.c_size_t),
        ("is_quantized", ctypes.c_bool),
        ("to_float", ctypes.c_void_p),
        ("from_float_ref", ctypes.c_void_p),
    ]


class CpuTypeTraits(ctypes.Structure):
    _fields_ = [
        ("from_float", ctypes.c_void_p),
        ("vec_dot", ctypes.c_void_p),
        ("vec_dot_type", ctypes.c_int),
        ("nrows", ctypes.c_int64),
    ]


ROW_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
VEC_DOT_FN = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.POINTER(ctypes.c_float), ctypes.c_size_t,
                              ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)


class Ggml:
    def __init__(self) -> None:
        spec = importlib.util.find_spec("llama_cpp")
        if spec is None or not spec.submodule_search_locations:
            sys.exit("llama-cpp-python is not installed (tools/setup_oracle.sh installs it)")
        lib = Path(spec.submodule_search_locations[0]) / "lib"
        self.base = ctypes.CDLL(str(lib / "libggml-base.so"), mode=ctypes.RTLD_GLOBAL)
        self.cpu = ctypes.CDLL(str(lib / "libggml-cpu.so"), mode=ctypes.RTLD_GLOBAL)
        self.base.ggml_get_type_traits.restype = ctypes.POINTER(TypeTraits)
        self.cpu.ggml_get_type_traits_cpu.restype = ctypes.POINTER(CpuTypeTraits)
        self.cpu.ggml_cpu_init()
        import llama_cpp  # only for its version string
        self.version = f"llama-cpp-python {llama_cpp.__version__}"

    def traits(self, t: int) -> TypeTraits:
        return self.base.ggml_get_type_traits(t).contents

    def cpu_traits(self, t: int) -> CpuTypeTraits:
        return self.cpu.ggml_get_type_traits_cpu(t).contents

    def type_size(self, t: int) -> int:
        return int(self.traits(t).type_size)

    def _symbol(self, lib, name):
        try:
            return getattr(lib, name)
        except AttributeError:
            return None

    def to_float_fn(self, qtype: T):
        """ggml's dequantizer: the traits' to_float, else an exported dequantize_row_<type>."""
        tr = self.traits(qtype.value)
        if tr.to_float:
            return ROW_FN(tr.to_float)
        sym = self._symbol(self.base, f"dequantize_row_{ggml_name(qtype)}")
        return ROW_FN(ctypes.cast(sym, ctypes.c_void_p).value) if sym else None

    def from_float_ref_fn(self, qtype: T):
        tr = self.traits(qtype.value)
        if tr.from_float_ref:
            return ROW_FN(tr.from_float_ref)
        sym = self._symbol(self.base, f"quantize_row_{ggml_name(qtype)}_ref")
        return ROW_FN(ctypes.cast(sym, ctypes.c_void_p).value) if sym else None

    def vec_dot_fn(self, qtype: T, generic: bool):
        if generic:
            dot_name = {T.F32: None, T.F16: None, T.BF16: None}.get(qtype, "")
            if dot_name is None:
                return None
            act = T(self.cpu_traits(qtype.value).vec_dot_type)
            name = f"ggml_vec_dot_{ggml_name(qtype)}_{ggml_name(act)}_generic"
            sym = self._symbol(self.cpu, name)
            return VEC_DOT_FN(ctypes.cast(sym, ctypes.c_void_p).value) if sym else None
        ct = self.cpu_traits(qtype.value)
        return VEC_DOT_FN(ct.vec_dot) if ct.vec_dot else None

    def dequantize(self, qtype: T, blocks: np.ndarray, n: int) -> np.ndarray | None:
        fn = self.to_float_fn(qtype)
        if fn is None:
            return None
        src = np.ascontiguousarray(blocks, dtype=np.uint8)
        out = np.zeros(n, dtype=np.float32)
        fn(src.ctypes.data, out.ctypes.data, n)
        return out

    def quantize_ref(self, qtype: T, x: np.ndarray) -> np.ndarray | None:
        fn = self.from_float_ref_fn(qtype)
        if fn is None:
            return None
        bs, ts = block_size(qtype), type_size(qtype)
        x = np.ascontiguousarray(x, dtype=np.float32)
        out = np.zeros(x.size // bs * ts, dtype=np.uint8)  # zeroed: Q8_K leaves bsums of zero blocks alone
        fn(x.ctypes.data, out.ctypes.data, x.size)
        return out

    def vec_dot(self, qtype: T, w: np.ndarray, a: np.ndarray, n: int, generic: bool) -> float | None:
        fn = self.vec_dot_fn(qtype, generic)
        if fn is None:
            return None
        s = ctypes.c_float(0)
        w = np.ascontiguousarray(w)
        a = np.ascontiguousarray(a)
        fn(n, ctypes.byref(s), 0, w.ctypes.data, 0, a.ctypes.data, 0, 1)
        return float(s.value)


# ---------------------------------------------------------------------------
# type table

# ggml's block_q8_1 is {f16 d; f16 s; int8 qs[32]} = 36 bytes; the gguf package
# still lists the older 40-byte layout (two f32). ggml's type_size is what files use.
SIZE_OVERRIDES = {T.Q8_1: (32, 36)}

ALL_TYPES = [
    T.F32, T.F16, T.BF16, T.F64, T.I8, T.I16, T.I32, T.I64,
    T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.Q8_1,
    T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K, T.Q6_K, T.Q8_K,
    T.IQ1_S, T.IQ1_M, T.IQ2_XXS, T.IQ2_XS, T.IQ2_S, T.IQ3_XXS, T.IQ3_S, T.IQ4_NL, T.IQ4_XS,
    T.TQ1_0, T.TQ2_0, T.MXFP4, T.NVFP4, T.Q1_0,
]

QUANTIZE_TYPES = [T.F32, T.F16, T.BF16, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.Q8_1,
                  T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K, T.Q6_K, T.Q8_K, T.IQ4_NL, T.TQ1_0, T.TQ2_0, T.MXFP4]
GGUF_QUANTIZES = {T.F32, T.F16, T.BF16, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0}

VEC_DOT_TYPES = {  # weight type -> activation type, as ggml pairs them
    T.F32: T.F32, T.F16: T.F16, T.BF16: T.BF16,
    T.Q4_0: T.Q8_0, T.Q4_1: T.Q8_1, T.Q5_0: T.Q8_0, T.Q5_1: T.Q8_1, T.Q8_0: T.Q8_0,
    T.Q2_K: T.Q8_K, T.Q3_K: T.Q8_K, T.Q4_K: T.Q8_K, T.Q5_K: T.Q8_K, T.Q6_K: T.Q8_K,
    T.IQ4_NL: T.Q8_0, T.IQ4_XS: T.Q8_K, T.TQ1_0: T.Q8_K, T.TQ2_0: T.Q8_K, T.MXFP4: T.Q8_0,
    T.IQ2_XXS: T.Q8_K, T.IQ2_XS: T.Q8_K, T.IQ2_S: T.Q8_K, T.IQ3_XXS: T.Q8_K, T.IQ3_S: T.Q8_K,
    T.IQ1_S: T.Q8_K, T.IQ1_M: T.Q8_K,
}
MIN_TYPES = {T.Q4_1, T.Q5_1, T.Q2_K, T.Q4_K, T.Q5_K}
GRID_IQ = {T.IQ2_XXS, T.IQ2_XS, T.IQ2_S, T.IQ3_XXS, T.IQ3_S, T.IQ1_S, T.IQ1_M}  # vec_dot weights: random blocks  # weights with an additive min term

PLAIN_DTYPES = {T.F32: np.float32, T.F16: np.float16, T.F64: np.float64, T.I8: np.int8,
                T.I16: np.int16, T.I32: np.int32, T.I64: np.int64}


def ggml_name(t: T) -> str:
    """The type as ggml's C symbols spell it: q4_0, q4_K, iq2_xxs."""
    return t.name.lower().replace("_k", "_K")


def block_size(t: T) -> int:
    return SIZE_OVERRIDES.get(t, GGML_QUANT_SIZES[t])[0]


def type_size(t: T) -> int:
    return SIZE_OVERRIDES.get(t, GGML_QUANT_SIZES[t])[1]


# ---------------------------------------------------------------------------
# hashing: FNV-1a 64. A tensor's digest is the FNV-1a 64 of the concatenated
# 8-byte little-endian FNV-1a 64 digests of its rows' f32 bytes (rows hash in
# parallel here; kiln computes the same thing row by row).

def fnv1a64_rows(rows: np.ndarray) -> np.ndarray:
    """rows: 2-D array; returns one uint64 digest per row over its raw bytes."""
    b = np.ascontiguousarray(rows).view(np.uint8).reshape(rows.shape[0], -1)
    h = np.full(b.shape[0], FNV_OFFSET, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(b.shape[1]):
            h ^= b[:, j].astype(np.uint64)
            h *= FNV_PRIME
    return h


def fnv1a64(data: bytes | np.ndarray) -> int:
    b = np.frombuffer(bytes(data) if not isinstance(data, np.ndarray) else np.ascontiguousarray(data).tobytes(),
                      dtype=np.uint8)
    return int(fnv1a64_rows(b.reshape(1, -1))[0])


def tensor_digest(values_2d: np.ndarray) -> int:
    return fnv1a64(fnv1a64_rows(values_2d.astype(np.float32, copy=False)).astype("<u8"))


# ---------------------------------------------------------------------------
# random blocks with sane scale fields

def sane_f16(rng: np.random.Generator, n: int) -> np.ndarray:
    """Random finite halves: mostly normal magnitudes in [2^-14, 2^5), some zeros and subnormals."""
    mag = np.exp2(rng.uniform(-14, 5, n)).astype(np.float16)
    sign = np.where(rng.random(n) < 0.5, -1, 1).astype(np.float16)
    v = mag * sign
    kind = rng.random(n)
    v[kind < 0.03] = 0
    sub = (kind >= 0.03) & (kind < 0.08)
    v[sub] = (rng.integers(1, 1024, sub.sum()).astype(np.uint16)).view(np.float16)
    return v.astype(np.float16)


# f16 scale fields by byte offset inside each block
F16_FIELDS = {
    T.Q4_0: [0], T.Q4_1: [0, 2], T.Q5_0: [0], T.Q5_1: [0, 2], T.Q8_0: [0], T.Q8_1: [0, 2],
    T.Q2_K: [80, 82], T.Q3_K: [108], T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208],
    T.IQ2_XXS: [0], T.IQ2_XS: [0], T.IQ3_XXS: [0], T.IQ1_S: [0], T.IQ4_NL: [0], T.IQ3_S: [0],
    T.IQ2_S: [0], T.IQ4_XS: [0], T.TQ1_0: [52], T.TQ2_0: [64], T.Q1_0: [0],
}


def random_blocks(t: T, n_elements: int, rng: np.random.Generator) -> np.ndarray:
    if t in PLAIN_DTYPES or t == T.BF16:
        if t == T.F32:
            return (rng.standard_normal(n_elements) * np.exp2(rng.uniform(-20, 20, n_elements))).astype(np.float32).view(np.uint8)
        if t == T.F16:
            bits = rng.integers(0, 1 << 16, n_elements, dtype=np.uint16)
            bits[(bits & 0x7C00) == 0x7C00] &= 0xBFFF  # no inf / nan
            return bits.view(np.uint8)
        if t == T.BF16:
            bits = rng.integers(0, 1 << 16, n_elements, dtype=np.uint16)
            bits[(bits & 0x7F80) == 0x7F80] &= 0xBFFF
            return bits.view(np.uint8)
        if t == T.F64:
            v = rng.standard_normal(n_elements) * np.exp2(rng.uniform(-160, 160, n_elements))
            v[::97] = 1e300  # overflows f32 -> inf in both oracle and kiln
            v[1::97] = 1e-300  # underflows to zero
            v[2::97] = 1.0 + 2.0 ** -24  # exact tie, rounds to even
            return v.astype(np.float64).view(np.uint8)
        info = np.iinfo(PLAIN_DTYPES[t])
        return rng.integers(info.min, info.max, n_elements, dtype=PLAIN_DTYPES[t], endpoint=True).view(np.uint8)

    bs, ts = block_size(t), type_size(t)
    nb = n_elements // bs
    blocks = rng.integers(0, 256, (nb, ts), dtype=np.uint8)
    for off in F16_FIELDS.get(t, []):
        blocks[:, off:off + 2] = sane_f16(rng, nb).view(np.uint8).reshape(nb, 2)
    if t == T.Q8_K:
        d = (rng.standard_normal(nb) * np.exp2(rng.uniform(-12, 2, nb))).astype(np.float32)
        blocks[:, 0:4] = d.view(np.uint8).reshape(nb, 4)
    if t == T.IQ1_M:
        # the f16 super-scale is spread over the top nibbles of the four trailing u16 scale words
        d = sane_f16(rng, nb).view(np.uint16)
        sc = blocks[:, 48:56].copy().view(np.uint16).reshape(nb, 4)
        for k in range(4):
            sc[:, k] = (sc[:, k] & 0x0FFF) | (((d >> (4 * k)) & 0xF) << 12)
        blocks[:, 48:56] = sc.view(np.uint8).reshape(nb, 8)
    return blocks.reshape(-1)


# ---------------------------------------------------------------------------
# oracles

def dequant_oracle(t: T, raw: np.ndarray, n: int, ggml: Ggml) -> tuple[np.ndarray, str]:
    if t in (T.I8, T.I16, T.I32, T.I64, T.F64):
        return raw.view(PLAIN_DTYPES[t]).astype(np.float32), "numpy astype(float32)"
    if t == T.Q8_1:
        blocks = raw.reshape(-1, 36)
        d = blocks[:, 0:2].copy().view(np.float16).astype(np.float32)
        q = blocks[:, 4:].view(np.int8).astype(np.float32)
        return (d * q).reshape(-1).astype(np.float32), "numpy from ggml's block_q8_1 (d * q; ggml has no Q8_1 to_float)"
    try:
        out = gguf.quants.dequantize(raw.copy(), t).reshape(-1).astype(np.float32)
        return out, "gguf package dequantize"
    except NotImplementedError:
        pass
    out = ggml.dequantize(t, raw, n)
    if out is None:
        raise SystemExit(f"no dequantization oracle for {t.name}")
    return out, f"ggml to_float (dequantize_row_{ggml_name(t)})"


def quantize_input(rng: np.random.Generator) -> np.ndarray:
    """24 chunks of 256 floats, each a different regime a quantizer must get right."""
    chunks = []
    for sigma in (1.0, 0.02, 100.0, 1e-3):
        chunks.append(rng.standard_normal(256) * sigma)
    chunks.append(rng.standard_normal(256) + 3.0)            # all offset: mins matter
    chunks.append(rng.standard_normal(256) - 2.0)
    chunks.append(rng.uniform(0, 1, 256))                     # all positive
    chunks.append(rng.uniform(-1, 0, 256))                    # all negative
    chunks.append(np.zeros(256))                              # all zero
    chunks.append(np.full(256, 0.5))                          # constant
    c = rng.standard_normal(256)
    c[::32] *= 40                                             # one outlier per 32
    chunks.append(c)
    chunks.append(rng.standard_normal(256) * 1e-6)            # f16 scales go subnormal
    chunks.append(rng.standard_normal(256) * 1e-30)           # scales underflow to zero
    chunks.append(rng.integers(-8, 9, 256).astype(np.float64))  # small integers: exact ties
    c = rng.integers(-127, 128, 256) + 0.5                    # midpoints of a 1/127-style grid
    c[::32] = 127.0
    chunks.append(c / 127.0)
    chunks.append(np.clip(rng.standard_normal(256) * 2e4, -6e4, 6e4))  # large, still inside f16 range
    c = rng.standard_normal(256)
    c[rng.random(256) < 0.9] = 0.0                            # sparse
    chunks.append(c)
    c = rng.standard_normal(256)
    c[16:] = 0.0                                              # a few live values per super-block
    chunks.append(c)
    chunks.append(np.abs(rng.standard_normal(256)) * np.where(np.arange(256) % 2 == 0, 1, -1))
    chunks.append(rng.laplace(size=256))
    chunks.append(rng.standard_t(3, 256))                     # heavy tails
    chunks.append(np.linspace(-1, 1, 256))
    chunks.append(np.sin(np.arange(256) * 0.1) * 5)
    chunks.append(rng.standard_normal(256))
    return np.concatenate(chunks).astype(np.float32)


def quantize_oracle(t: T, x: np.ndarray, ggml: Ggml) -> tuple[np.ndarray, str, str]:
    """Returns (bytes, oracle, agreement note with the other oracle)."""
    ref = ggml.quantize_ref(t, x)
    if t in GGUF_QUANTIZES:
        if t == T.F16:
            out = x.astype(np.float16).view(np.uint8).reshape(-1)
            name = "numpy astype(float16)"
        else:
            out = np.ascontiguousarray(gguf.quants.quantize(x.reshape(-1, 256), t)).reshape(-1).view(np.uint8)
            name = "gguf package quantize"
        if ref is None:
            note = "ggml: no reference quantizer"
        elif np.array_equal(ref, out):
            note = "ggml quantize_row_ref agrees bit for bit"
        else:
            nbad = int((ref.reshape(-1, type_size(t)) != out.reshape(-1, type_size(t))).any(axis=1).sum())
            note = f"ggml quantize_row_ref differs in {nbad} blocks"
        return out, name, note
    if ref is None:
        raise SystemExit(f"no quantization oracle for {t.name}")
    return ref, f"ggml quantize_row_{ggml_name(t)}_ref", ""


# ---------------------------------------------------------------------------
# fp16 / bf16 sweeps (kiln's test regenerates the same inputs)

def f32_sweep() -> np.ndarray:
    """Every 4099th float bit pattern, plus every f16 and bf16 rounding boundary and its neighbours."""
    u = np.arange(0, 1 << 32, 4099, dtype=np.uint64).astype(np.uint32)
    h = np.arange(0, 1 << 16, dtype=np.uint32)
    # f16: the float exactly halfway between consecutive halves (normal range), +-1 ulp
    f = np.arange(0, 0x7C00, dtype=np.uint16).view(np.float16).astype(np.float64)
    f_next = np.arange(1, 0x7C01, dtype=np.uint16).view(np.float16).astype(np.float64)
    f_next[-1] = 65536.0  # the would-be next half: the midpoint 65520 rounds to inf
    mid = ((f + f_next) / 2).astype(np.float32).view(np.uint32)
    mids = np.concatenate([mid - 1, mid, mid + 1])
    mids = np.concatenate([mids, mids | np.uint32(0x80000000)])
    # bf16: halfway between consecutive bf16 values is the pattern with low 16 bits 0x8000
    bmid = (h << 16) | np.uint32(0x8000)
    bmids = np.concatenate([bmid - 1, bmid, bmid + 1])
    return np.concatenate([u, mids.astype(np.uint32), bmids.astype(np.uint32)]).astype(np.uint32)


def fp16_fixtures() -> dict:
    halves = np.arange(0, 1 << 16, dtype=np.uint16)
    f16_to_f32 = halves.view(np.float16).astype(np.float32)
    bf16_to_f32 = gguf.quants.dequantize(halves.view(np.uint8).copy(), T.BF16).astype(np.float32)
    sweep = f32_sweep()
    with np.errstate(over="ignore", invalid="ignore"):
        f32_to_f16 = sweep.view(np.float32).astype(np.float16).view(np.uint16)
    # NaN: numpy keeps the payload; ggml's reference conversion (and kiln) return the
    # canonical quiet NaN with the input's sign. Only the NaN-ness is format-relevant.
    nan = np.isnan(sweep.view(np.float32))
    f32_to_f16 = np.where(nan, ((sweep >> 16) & 0x8000) | 0x7E00, f32_to_f16).astype(np.uint16)
    f32_to_bf16 = gguf.quants.quantize(sweep.view(np.float32).copy(), T.BF16).view(np.uint16)
    return {
        "sweep": "every 4099th u32 bit pattern, then f16 midpoints (+-1 ulp, both signs), then bf16 midpoints (+-1 ulp)",
        "sweep_count": int(sweep.size),
        "sweep_fnv": f"{fnv1a64(sweep.astype('<u4')):016x}",
        "f16_to_f32_fnv": f"{fnv1a64(f16_to_f32.view('<u4')):016x}",
        "bf16_to_f32_fnv": f"{fnv1a64(bf16_to_f32.view('<u4')):016x}",
        "f32_to_f16_fnv": f"{fnv1a64(f32_to_f16.view('<u2')):016x}",
        "f32_to_bf16_fnv": f"{fnv1a64(f32_to_bf16.astype('<u2')):016x}",
        "oracle": "numpy float16 casts (IEEE round-to-nearest-even; NaN -> sign | 0x7e00 as ggml does); "
                  "bf16 by the gguf package's BF16 (de)quantize",
    }


# ---------------------------------------------------------------------------

def write(path: Path, data: np.ndarray) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(np.ascontiguousarray(data).tobytes())
    return str(path.relative_to(OUT))


def make_dequant(ggml: Ggml, manifest: dict) -> None:
    entries = {}
    for t in ALL_TYPES:
        rng = np.random.default_rng(1000 + t.value)
        n = 8192 if block_size(t) <= 256 else 8192
        raw = random_blocks(t, n, rng)
        expect, oracle = dequant_oracle(t, raw, n, ggml)
        assert expect.size == n and raw.size == n // block_size(t) * type_size(t), t.name
        cross = ""
        g = ggml.dequantize(t, raw, n) if t not in (T.F32, T.Q8_1) else None
        if g is not None and "ggml" not in oracle:
            same = np.array_equal(g.view(np.uint32), expect.view(np.uint32))
            cross = "ggml to_float agrees bit for bit" if same else \
                f"ggml to_float differs in {int((g.view(np.uint32) != expect.view(np.uint32)).sum())} values"
        entries[t.name] = {
            "blocks": write(OUT / "dequant" / f"{t.name}.blocks", raw),
            "values": write(OUT / "dequant" / f"{t.name}.f32", expect.astype("<f4")),
            "n_elements": n,
            "oracle": oracle,
            "cross_check": cross,
        }
        print(f"dequant {t.name:8s} {oracle}; {cross}")
    manifest["dequant"] = entries


def make_quantize(ggml: Ggml, manifest: dict) -> None:
    x = quantize_input(np.random.default_rng(7))
    entries = {}
    for t in QUANTIZE_TYPES:
        out, oracle, note = quantize_oracle(t, x, ggml)
        entries[t.name] = {"bytes": write(OUT / "quantize" / f"{t.name}.blocks", out), "oracle": oracle,
                           "cross_check": note}
        print(f"quantize {t.name:8s} {oracle}; {note}")
    manifest["quantize"] = {"input": write(OUT / "quantize" / "input.f32", x.astype("<f4")),
                            "n_elements": int(x.size), "types": entries}


def make_vec_dot(ggml: Ggml, manifest: dict) -> None:
    n, rows = 1024, 4
    entries = {}
    for t, at in VEC_DOT_TYPES.items():
        rng = np.random.default_rng(500 + t.value)
        w_rows, a_rows, dots, generic = [], [], [], []
        for r in range(rows):
            w = rng.standard_normal(n).astype(np.float32) * np.float32(0.05 * (r + 1))
            if t in MIN_TYPES:
                w += np.float32(0.03 * (r - 1.5))  # make the mins matter
            a = rng.standard_normal(n).astype(np.float32) * np.float32(2.0 ** (r - 2))
            if t in GRID_IQ:  # ggml's quantizers need its grid maps initialised (and an importance matrix to be good)
                wq = random_blocks(t, n, rng)
            else:
                wq = w.view(np.uint8) if t == T.F32 else ggml.quantize_ref(t, w)
            aq = a.view(np.uint8) if at == T.F32 else ggml.quantize_ref(at, a)
            w_rows.append(wq)
            a_rows.append(aq)
            dots.append(ggml.vec_dot(t, wq, aq, n, generic=False))
            generic.append(ggml.vec_dot(t, wq, aq, n, generic=True))
        entries[t.name] = {
            "activation_type": at.name,
            "n": n,
            "rows": rows,
            "weights": write(OUT / "vec_dot" / f"{t.name}.weights", np.concatenate(w_rows)),
            "activations": write(OUT / "vec_dot" / f"{t.name}.{at.name}.activations", np.concatenate(a_rows)),
            "ggml_vec_dot": dots,
            "ggml_vec_dot_generic": generic if generic[0] is not None else None,
            "oracle": "weights and activations from ggml's reference quantizers; dots from ggml_vec_dot "
                      "(CPU-dispatched) and the exported _generic scalar version where there is one",
        }
        print(f"vec_dot {t.name:8s} x {at.name}: {dots[0]!r} (generic {generic[0]!r})")
    manifest["vec_dot"] = entries


def model_paths() -> list[Path]:
    models = Path(os.environ.get("KILN_MODELS", Path.home() / ".cache" / "kiln" / "models"))
    return [models / "SmolLM2-135M-Instruct.Q4_1.gguf", models / "gemma-3-270m-q4_k_m.gguf"]


def make_models(manifest: dict) -> None:
    out = {}
    for path in model_paths():
        if not path.exists():
            print(f"model {path.name}: not installed, skipped")
            continue
        reader = gguf.GGUFReader(path)
        tensors = {}
        for t in reader.tensors:
            rows_in = t.data.reshape(-1, t.data.shape[-1])  # one tensor row per array row
            digests = []
            for start in range(0, rows_in.shape[0], 8192):
                chunk = rows_in[start:start + 8192]
                vals = gguf.quants.dequantize(np.ascontiguousarray(chunk), t.tensor_type)
                digests.append(fnv1a64_rows(vals.astype(np.float32).reshape(chunk.shape[0], -1)))
            digest = fnv1a64(np.concatenate(digests).astype("<u8"))
            tensors[t.name] = {"type": t.tensor_type.name, "digest": f"{digest:016x}"}
        out[path.name] = {"file_size": path.stat().st_size, "tensors": tensors}
        print(f"model {path.name}: {len(tensors)} tensors")
    manifest["models"] = {
        "digest": "FNV-1a 64 over the 8-byte LE FNV-1a 64 digests of each row's f32 bytes",
        "oracle": "gguf package dequantize",
        "files": out,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models-only", action="store_true", help="only refresh the real-model digests")
    ap.add_argument("--no-models", action="store_true", help="keep the existing real-model digests")
    args = ap.parse_args()

    manifest_path = OUT / "manifest.json"
    old = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    ggml = Ggml()
    for t in ALL_TYPES:  # the table kiln uses must be ggml's
        assert ggml.type_size(t.value) == type_size(t), (t.name, ggml.type_size(t.value), type_size(t))
        assert ggml.traits(t.value).blck_size == block_size(t), t.name

    manifest = {
        "generator": "tools/quant_fixtures.py",
        "oracles": f"gguf {importlib.metadata.version('gguf')}, numpy {np.__version__}, ggml from {ggml.version}",
        "q8_1_note": "ggml's Q8_1 block is 36 bytes (f16 d, f16 s, 32 x int8); the gguf package's size table says 40",
    }
    if args.models_only:
        manifest.update({k: v for k, v in old.items() if k in ("fp16", "dequant", "quantize", "vec_dot")})
    else:
        manifest["fp16"] = fp16_fixtures()
        make_dequant(ggml, manifest)
        make_quantize(ggml, manifest)
        make_vec_dot(ggml, manifest)
    if args.no_models and "models" in old:
        manifest["models"] = old["models"]
    else:
        make_models(manifest)
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"wrote {manifest_path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
