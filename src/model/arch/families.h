// Configure steps of the runnable families, one file each in this folder.
#pragma once

namespace kiln {

struct ArchConfig;
enum class SsmKind;

// The `ssm.*` keys of a Mamba-1 / Mamba-2 recurrence into spec.ssm (mamba.cpp).
void read_ssm_keys(ArchConfig& c, SsmKind kind);
// Granite's embedding, attention, residual and logit scales (granite.cpp; granitemoe too).
void read_granite_scales(ArchConfig& c);

void configure_llama(ArchConfig& c);
void configure_llama_embed(ArchConfig& c);  // llama.cpp (llama's layers, no output head)
void configure_qwen2(ArchConfig& c);
void configure_qwen3(ArchConfig& c);
void configure_smollm3(ArchConfig& c);
void configure_gemma(ArchConfig& c);
void configure_gemma2(ArchConfig& c);
void configure_gemma3(ArchConfig& c);
void configure_gemma_embedding(ArchConfig& c);  // gemma3's layers, not causal, Dense projections
void configure_granite(ArchConfig& c);
void configure_olmo2(ArchConfig& c);
void configure_phi3(ArchConfig& c);
void configure_starcoder2(ArchConfig& c);
void configure_internlm2(ArchConfig& c);
void configure_exaone(ArchConfig& c);
void configure_ernie4_5(ArchConfig& c);
void configure_minicpm(ArchConfig& c);
void configure_exaone4(ArchConfig& c);
void configure_phi2(ArchConfig& c);
void configure_gptj(ArchConfig& c);  // checked against tools/gptj_reference.py (llama.cpp has no graph)
void configure_stablelm(ArchConfig& c);
void configure_gptneox(ArchConfig& c);
void configure_command_r(ArchConfig& c);
void configure_cohere2(ArchConfig& c);
void configure_gemma4(ArchConfig& c);
void configure_gemma4_layers(ArchConfig& c);  // what gemma4-assistant shares with it
void configure_gemma4_assistant(ArchConfig& c);
void configure_bloom(ArchConfig& c);
void configure_mpt(ArchConfig& c);
void configure_baichuan(ArchConfig& c);
void configure_xverse(ArchConfig& c);
void configure_orion(ArchConfig& c);
void configure_qwen(ArchConfig& c);
void configure_seed_oss(ArchConfig& c);
void configure_arcee(ArchConfig& c);
void configure_falcon(ArchConfig& c);
void configure_gpt2(ArchConfig& c);  // gpt2 and starcoder
void configure_chatglm(ArchConfig& c);
void configure_glm4(ArchConfig& c);
void configure_hunyuan_dense(ArchConfig& c);
void configure_apertus(ArchConfig& c);
void configure_mamba(ArchConfig& c);
void configure_mamba2(ArchConfig& c);
void configure_lfm2(ArchConfig& c);
void configure_qwen35(ArchConfig& c);
// qwen35's hybrid layers without its IMROPE check (qwen35.cpp; qwen3next too).
void configure_gated_delta_net(ArchConfig& c);
void configure_qwen35moe(ArchConfig& c);
void configure_qwen3next(ArchConfig& c);
void configure_nemotron_h(ArchConfig& c);
void configure_nemotron_h_moe(ArchConfig& c);  // nemotron_h's layers with ungated ReLU² experts
void configure_granitehybrid(ArchConfig& c);   // Mamba-2 + attention, granite's scales, experts or dense
void configure_falcon_h1(ArchConfig& c);       // attention and Mamba-2 side by side in every layer
void configure_jamba(ArchConfig& c);
void configure_rwkv6(ArchConfig& c);           // RWKV-6 blocks (model/rwkv6.cpp)
void configure_rwkv7(ArchConfig& c);           // RWKV-7 blocks (model/rwkv7.cpp)
void configure_rwkv6qwen2(ArchConfig& c);
void configure_arwkv7(ArchConfig& c);  // RWKV-7 time mix + gated FFN (ARWKV)
// The layer setup rwkv6qwen2 and arwkv7 share: one token-shift row
// (token_shift_count 1), RMS norms, every layer a recurrent mixer without RoPE
// followed by the gated FFN, a separate output head.
void configure_rwkv_qwen_layers(ArchConfig& c);      // RWKV-6 time mix + qwen2's FFN           // Mamba-1 (dt / B / C normed) + attention, experts or dense
// Encoders (embeddings): the steps every post-norm encoder shares (bert.cpp), then each family.
void configure_encoder(ArchConfig& c);
void configure_bert(ArchConfig& c);
void configure_nomic_bert(ArchConfig& c);
void configure_nomic_bert_moe(ArchConfig& c);  // + an expert FFN every moe_every_n_layers
void configure_jina_bert_v2(ArchConfig& c);
void configure_modern_bert(ArchConfig& c);  // a pre-norm encoder (no configure_encoder)
void configure_neo_bert(ArchConfig& c);     // pre-norm RMS encoders (neo_bert.cpp)
void configure_eurobert(ArchConfig& c);
// mixture-of-experts families (model/moe.h)
void configure_gpt_oss(ArchConfig& c);
void configure_granitemoe(ArchConfig& c);
void configure_phimoe(ArchConfig& c);
void configure_deepseek2(ArchConfig& c);  // latent attention (model/mla.cpp)
void configure_glm4moe(ArchConfig& c);
void configure_ernie4_5_moe(ArchConfig& c);
void configure_llama4(ArchConfig& c);
void configure_mistral3(ArchConfig& c);  // llama + YaRN log multiplier, attention temperature
void configure_deepseek(ArchConfig& c);
void configure_dots1(ArchConfig& c);
void configure_hunyuan_moe(ArchConfig& c);
void configure_bailingmoe2(ArchConfig& c);
void configure_minimax_m2(ArchConfig& c);
void configure_olmoe(ArchConfig& c);
void configure_qwen2moe(ArchConfig& c);
void configure_qwen3moe(ArchConfig& c);

}  // namespace kiln
