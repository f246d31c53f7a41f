#!/usr/bin/env python3
"""Dumps llama.cpp's named intermediate tensors (attn_norm-0, Qcur-0, ffn_out-3,
l_out-29, result_output, ...) for a prompt, through llama.cpp's eval callback, so
a kiln run with a tensor hook can be compared step by step (tools/compare_tensors).

Usage: tools/dump_llama_tensors.py MODEL.gguf OUT.npz --tokens 1,2,3 [--names attn_norm,l_out]
Only f32 tensors are kept; each is saved as [n_rows, n_per_row] under "<name>".
"""
import argparse
import ctypes
import sys

import numpy as np
import llama_cpp

ggml = ctypes.CDLL(llama_cpp.__file__.replace("__init__.py", "lib/libggml-base.so"))
ggml.ggml_get_name.restype = ctypes.c_char_p
ggml.ggml_get_name.argtypes = [ctypes.c_void_p]
ggml.ggml_nbytes.restype = ctypes.c_size_t
ggml.ggml_nbytes.argtypes = [ctypes.c_void_p]
libggml = ctypes.CDLL(llama_cpp.__file__.replace("__init__.py", "lib/libggml.so"))
libggml.ggml_backend_tensor_get.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("out")
    ap.add_argument("--tokens", required=True)
    ap.add_argument("--names", default="")
    ap.add_argument("--flash-attn", action="store_true")
    args = ap.parse_args()
    tokens = [int(t) for t in args.tokens.split(",")]
    wanted = set(n for n in args.names.split(",") if n)
    dumped: dict[str, np.ndarray] = {}

    @llama_cpp.ggml_backend_sched_eval_callback
    def callback(t, ask, user_data):
        name = ggml.ggml_get_name(t).decode()
        base = name.rsplit("-", 1)[0] if "-" in name else name
        if wanted and base not in wanted:
            return bool(ask) is False
        if ask:
            return True
        ttype = ctypes.cast(t, ctypes.POINTER(ctypes.c_int32))[0]
        if ttype != 0:  # F32 only
            return True
        ne = [ctypes.cast(t + 16, ctypes.POINTER(ctypes.c_int64))[i] for i in range(4)]
        nbytes = ggml.ggml_nbytes(t)
        buf = np.empty(nbytes // 4, dtype=np.float32)
        libggml.ggml_backend_tensor_get(t, buf.ctypes.data, 0, nbytes)
        if buf.size == ne[0] * ne[1] * ne[2] * ne[3]:
            dumped[name] = buf.reshape(-1, ne[0]).copy() if ne[0] > 0 else buf.copy()
        return True

    llama_cpp.llama_backend_init()
    mp = llama_cpp.llama_model_default_params()
    model = llama_cpp.llama_model_load_from_file(args.model.encode(), mp)
    cp = llama_cpp.llama_context_default_params()
    cp.n_ctx = 512
    cp.n_batch = 512
    cp.n_threads = 1
    cp.n_threads_batch = 1
    cp.cb_eval = callback
    cp.cb_eval_user_data = None
    if hasattr(cp, "flash_attn_type"):
        cp.flash_attn_type = 1 if args.flash_attn else 0
    ctx = llama_cpp.llama_init_from_model(model, cp)
    arr = (llama_cpp.llama_token * len(tokens))(*tokens)
    batch = llama_cpp.llama_batch_get_one(arr, len(tokens))
    if llama_cpp.llama_decode(ctx, batch) != 0:
        sys.exit("llama_decode failed")
    np.savez(args.out, **dumped)
    print(f"{len(dumped)} tensors: {', '.join(list(dumped)[:12])} ...")


if __name__ == "__main__":
    main()
