#!/usr/bin/env python3
"""An independent GPT-J forward pass in numpy, the oracle for kiln's `gptj` family.

llama.cpp names the gptj architecture but has no graph for it, so kiln's tiny
gptj model is checked against this instead. It follows transformers'
modeling_gptj (GPTJBlock, GPTJAttention, GPTJMLP) read as a definition, in
float64, on the weights of a GGUF with gguf-py's GPTJ tensor names (dequantized
by the gguf package):

  h   = LayerNorm(x)                       ln_1, with bias
  x   = x + Attn(h) + MLP(h)               one parallel block per layer
  Attn: q, k, v projections without bias; rotate_every_two on the first
        rope.dimension_count dimensions of each head (adjacent pairs, base
        rope.freq_base); softmax(q k^T / sqrt(head size)) causal; out_proj
        without bias
  MLP : fc_out(gelu_new(fc_in(h)))         both with bias; gelu_new is the tanh form
  logits = lm_head(LayerNorm(x))           ln_f and lm_head with biases

A product with a quantized weight first rounds its input rows as ggml's CPU
backend does for that weight type (Q8_0 blocks of 32 for Q4_0..Q8_0, Q8_K blocks
of 256 for the K-quants; quantize_row_q8_0_ref / quantize_row_q8_K_ref): that
rounding is part of how a GGUF of that type is run, in kiln as in llama.cpp.

Usage: tools/gptj_reference.py MODEL.gguf TOKEN... (prints the last position's
argmax); tools/tiny_model_fixtures.py imports `GptJ` for the gptj fixtures.
"""
import sys

import numpy as np
import gguf


class GptJ:
    def __init__(self, path: str):
        r = gguf.GGUFReader(path)
        arch = bytes(r.fields["general.architecture"].parts[-1]).decode()
        if arch != "gptj":
            raise SystemExit(f"{path}: architecture {arch!r}, not gptj")

        def key(name: str):
            f = r.fields.get(f"gptj.{name}")
            return None if f is None else f.parts[-1][0]

        self.n_layer = int(key("block_count"))
        self.n_head = int(key("attention.head_count"))
        self.n_head_kv = int(key("attention.head_count_kv") or self.n_head)
        self.eps = float(key("attention.layer_norm_epsilon"))
        self.base = float(key("rope.freq_base") or 10000.0)
        self.w, self.types = {}, {}
        for t in r.tensors:
            self.types[t.name] = t.tensor_type
            a = gguf.quants.dequantize(t.data, t.tensor_type)
            self.w[t.name] = np.asarray(a, dtype=np.float64).reshape([int(n) for n in reversed(t.shape)])
        self.n_embd = self.w["token_embd.weight"].shape[1]
        self.head_dim = self.n_embd // self.n_head
        self.n_rot = int(key("rope.dimension_count") or self.head_dim)
        known = {"token_embd.weight", "output_norm.weight", "output_norm.bias", "output.weight", "output.bias"}
        for il in range(self.n_layer):
            for n in ("attn_norm.weight", "attn_norm.bias", "attn_q.weight", "attn_k.weight", "attn_v.weight",
                      "attn_output.weight", "ffn_up.weight", "ffn_up.bias", "ffn_down.weight", "ffn_down.bias"):
                known.add(f"blk.{il}.{n}")
        extra = sorted(set(self.w) - known)
        if extra:  # a tensor GPT-J's definition has no place for: not silently ignored
            raise SystemExit(f"{path}: tensors outside GPT-J's definition: {', '.join(extra)}")

    @staticmethod
    def _round_half_away(v):
        return np.sign(v) * np.floor(np.abs(v) + 0.5)

    @classmethod
    def _q8_0(cls, x):
        b = x.astype(np.float32).reshape(-1, 32)
        d = (np.abs(b).max(axis=1, keepdims=True) / np.float32(127)).astype(np.float32)
        inv = np.where(d > 0, np.float32(1) / np.where(d > 0, d, 1), 0).astype(np.float32)
        q = cls._round_half_away((b * inv).astype(np.float32))
        return (q * d.astype(np.float16).astype(np.float64)).reshape(x.shape)

    @staticmethod
    def _q8_k(x):
        b = x.astype(np.float32).reshape(-1, 256)
        idx = np.abs(b).argmax(axis=1)  # the first largest magnitude, as ggml's scan keeps
        mx = b[np.arange(b.shape[0]), idx][:, None]
        iscale = np.where(mx != 0, np.float32(-127) / np.where(mx != 0, mx, 1), 0).astype(np.float32)
        q = np.minimum(np.rint((iscale * b).astype(np.float32)), 127)  # nearest_int: ties to even
        d = np.where(iscale != 0, np.float32(1) / np.where(iscale != 0, iscale, 1), 0).astype(np.float32)
        return (q * d.astype(np.float64)).reshape(x.shape)

    def _mm(self, x, name):
        t = self.types[name]
        Q = gguf.GGMLQuantizationType
        if t in (Q.Q4_0, Q.Q4_1, Q.Q5_0, Q.Q5_1, Q.Q8_0):
            x = self._q8_0(x)
        elif t in (Q.Q2_K, Q.Q3_K, Q.Q4_K, Q.Q5_K, Q.Q6_K):
            x = self._q8_k(x)
        elif t not in (Q.F32, Q.F16, Q.BF16):
            raise SystemExit(f"{name}: weight type {t.name} not handled by this reference")
        return x @ self.w[name].T

    def _layer_norm(self, x, name):
        mu = x.mean(axis=-1, keepdims=True)
        var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
        return (x - mu) / np.sqrt(var + self.eps) * self.w[name + ".weight"] + self.w[name + ".bias"]

    def _rotate(self, x, pos):
        # x [n, heads, head_dim]; transformers' create_sinusoidal_positions and
        # apply_rotary_pos_emb: pair (2i, 2i + 1) turned by pos * base^(-2i / n_rot).
        inv_freq = 1.0 / (self.base ** (np.arange(0, self.n_rot, 2, dtype=np.float64) / self.n_rot))
        ang = pos[:, None] * inv_freq[None, :]
        sin, cos = np.sin(ang)[:, None, :], np.cos(ang)[:, None, :]
        out = x.copy()
        even, odd = x[:, :, 0:self.n_rot:2], x[:, :, 1:self.n_rot:2]
        out[:, :, 0:self.n_rot:2] = even * cos - odd * sin
        out[:, :, 1:self.n_rot:2] = odd * cos + even * sin
        return out

    @staticmethod
    def _gelu_new(x):
        return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))

    def logits(self, tokens):
        """Logits [len(tokens), n_vocab] for every position of one causal sequence."""
        n = len(tokens)
        pos = np.arange(n, dtype=np.float64)
        x = self.w["token_embd.weight"][np.asarray(tokens)]
        mask = np.triu(np.full((n, n), -np.inf), k=1)
        group = self.n_head // self.n_head_kv
        for il in range(self.n_layer):
            p = f"blk.{il}."
            h = self._layer_norm(x, p + "attn_norm")
            q = self._mm(h, p + "attn_q.weight").reshape(n, self.n_head, self.head_dim)
            k = self._mm(h, p + "attn_k.weight").reshape(n, self.n_head_kv, self.head_dim)
            v = self._mm(h, p + "attn_v.weight").reshape(n, self.n_head_kv, self.head_dim)
            q, k = self._rotate(q, pos), self._rotate(k, pos)
            att = np.empty((n, self.n_head, self.head_dim))
            for hd in range(self.n_head):
                s = q[:, hd, :] @ k[:, hd // group, :].T / np.sqrt(self.head_dim) + mask
                s = np.exp(s - s.max(axis=1, keepdims=True))
                att[:, hd, :] = (s / s.sum(axis=1, keepdims=True)) @ v[:, hd // group, :]
            attn_out = self._mm(att.reshape(n, self.n_embd), p + "attn_output.weight")
            up = self._mm(h, p + "ffn_up.weight") + self.w[p + "ffn_up.bias"]
            ffn_out = self._mm(self._gelu_new(up), p + "ffn_down.weight") + self.w[p + "ffn_down.bias"]
            x = x + attn_out + ffn_out
        h = self._layer_norm(x, "output_norm")
        return self._mm(h, "output.weight") + self.w["output.bias"]


def main() -> None:
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    model = GptJ(sys.argv[1])
    logits = model.logits([int(t) for t in sys.argv[2:]])
    print(int(np.argmax(logits[-1])), float(logits[-1].max()))


if __name__ == "__main__":
    main()
