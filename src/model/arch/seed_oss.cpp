// seed_oss (ByteDance Seed-OSS-36B): llama's block with NEOX RoPE, a head size
// from attention.key_length (128 x 80 heads over a width of 5120), Q/K/V biases
// by presence, the FFN's input norm stored as post_attention_norm, output head
// separate or tied. llama.cpp's graph would add an attention-output bias, but its
// loader never creates one, so a file with it is refused (naming it).
#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_seed_oss(ArchConfig& c) { c.spec.ffn_norm_tensor = "post_attention_norm.weight"; }

}  // namespace kiln
