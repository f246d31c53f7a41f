// Weights bound by tensor name with shape checks, used in place from the
// mapping. Optional tensors (biases, QK-norm, post-norms, output.weight,
// rope_freqs) are detected by presence and recorded in the spec.
#pragma once

#include <memory>
#include <string>
#include <optional>
#include <vector>

#include "compute/matmul.h"
#include "kiln/gguf/file.h"
#include "model/spec.h"
#include "model/ssm.h"

namespace kiln {

// An expert layer's tensors. The merged expert tensors (ffn_*_exps, [n_in,
// n_out, n_expert]) are bound as one Matrix view per expert, so each expert is
// repacked and multiplied by the same kernels as a dense matrix.
struct ExpertWeights {
    Matrix router;                       // ffn_gate_inp [n_embd, n_expert]
    const float* router_b = nullptr;     // [n_expert]
    const float* probs_bias = nullptr;   // exp_probs_b [n_expert]: selection bias (not in the weights)
    std::vector<Matrix> gate, up, down;  // [n_expert] of [n_embd, n_ff], [n_embd, n_ff], [n_ff, n_embd]
    const float* gate_b = nullptr;       // f32 [n_ff, n_expert]
    const float* up_b = nullptr;         // f32 [n_ff, n_expert]
    const float* down_b = nullptr;       // f32 [n_embd, n_expert]
    Matrix shexp_gate, shexp_up, shexp_down;  // the shared expert (empty: none)
    Matrix shexp_router;                 // ffn_gate_inp_shexp [n_embd, 1]: its sigmoid gate (empty: ungated)
    // Per-expert output scales ffn_{gate,up,down}_exps.scale [n_expert] (gemma4; null: none).
    const float* gate_s = nullptr;
    const float* up_s = nullptr;
    const float* down_s = nullptr;
    // gemma4's expert layers: the FFN beside the experts (LayerWeights::ffn_*) and
    // the experts' own norms; the router reads rms(x) / sqrt(n_embd) * router_in_s.
    const float* router_in_s = nullptr;  // ffn_gate_inp.scale [n_embd]
    const float* pre_norm_2 = nullptr;   // pre_ffw_norm_2: the experts' input norm
    const float* post_norm_1 = nullptr;  // post_ffw_norm_1: after the dense branch
    const float* post_norm_2 = nullptr;  // post_ffw_norm_2: after the experts
    // The experts stay in the file's mapping, unrepacked (beyond the expert memory
    // budget): the mapping is advised MADV_RANDOM (a fault reads its page only)
    // and the layer asks for its selected experts' pages before reading them.
    bool in_place = false;
};

// A multi-head latent attention layer's tensors (MlaSpec); Q without q_lora is
// LayerWeights::wq and the output projection LayerWeights::wo.
struct MlaWeights {
    Matrix wq_a, wq_b;                   // attn_q_a [n_embd, q_lora], attn_q_b [q_lora, n_head * head_dim_qk]
    const float* q_a_norm = nullptr;     // attn_q_a_norm [q_lora]
    Matrix wkv_a;                        // attn_kv_a_mqa [n_embd, kv_lora + n_rot]
    const float* kv_a_norm = nullptr;    // attn_kv_a_norm [kv_lora]
    std::vector<Matrix> k_b;             // attn_k_b per head: [head_dim_qk - n_rot, kv_lora]
    std::vector<Matrix> v_b;             // attn_v_b per head: [kv_lora, head_dim_v]
};

struct LayerWeights {
    const float* attn_norm = nullptr;
    const float* attn_norm_b = nullptr;
    // blk.N.attn_norm_2 (TensorRules::attn_norm_2): a decoder's attention input norm
    // where the FFN reads attn_norm (Falcon-40B); an encoder's second LayerNorm,
    // the layer input re-added (jina-bert-v2).
    const float* attn_norm_2 = nullptr;
    const float* attn_norm_2_b = nullptr;
    Matrix wq, wk, wv, wo;
    Matrix wqkv;  // fused [n_embd, q + k + v]; wq / wk / wv empty when present
    const float* bqkv = nullptr;
    const float* bq = nullptr;
    const float* bk = nullptr;
    const float* bv = nullptr;
    const float* bo = nullptr;
    const float* q_norm = nullptr;  // f32 [head_dim_k], or [n_head * head_dim_k] with TensorRules::qk_norm_full
    const float* k_norm = nullptr;  // f32 [head_dim_k], or [n_head_kv * head_dim_k]
    const float* q_norm_b = nullptr;  // LayerNorm biases of q_norm / k_norm (jina-bert-v2)
    const float* k_norm_b = nullptr;
    const float* attn_post_norm = nullptr;
    const float* attn_sinks = nullptr;  // f32 [n_head] (AttentionShape::sinks)
    const float* ffn_norm = nullptr;
    const float* ffn_norm_b = nullptr;
    Matrix ffn_gate, ffn_up, ffn_down;  // ffn_gate empty: a plain FFN, or gate and up fused in ffn_up
    bool ffn_gate_up_fused = false;     // ffn_up is [n_embd, 2 n_ff]: gate rows, then up rows
    const float* ffn_gate_b = nullptr;
    const float* ffn_up_b = nullptr;
    const float* ffn_down_b = nullptr;
    const float* ffn_act_s = nullptr;  // blk.N.ffn.act.scales [n_ff] (TensorRules::ffn_act_scales): act / this
    // Per-matrix output scales (`<name>.scale`, shape [1]; 1 when absent), as
    // llama.cpp applies them: Q/K/V/O after the product, before the bias; the
    // FFN's after the bias.
    float wq_s = 1.0f, wk_s = 1.0f, wv_s = 1.0f, wo_s = 1.0f, wqkv_s = 1.0f;
    float ffn_gate_s = 1.0f, ffn_up_s = 1.0f, ffn_down_s = 1.0f;
    const float* ffn_post_norm = nullptr;
    // Encoders' norms after the residual adds (ModelSpec::post_norm).
    const float* attn_out_norm = nullptr;   // blk.N.attn_output_norm [n_embd]
    const float* attn_out_norm_b = nullptr;
    const float* layer_out_norm = nullptr;  // blk.N.layer_output_norm [n_embd]
    const float* layer_out_norm_b = nullptr;
    float out_scale = 1.0f;  // blk.N.layer_output_scale (TensorRules::layer_out_scale; 1 when absent)
    // Per-layer embeddings (ModelSpec::n_embd_per_layer): blk.N.inp_gate
    // [n_embd, n_embd_per_layer], blk.N.proj [n_embd_per_layer, n_embd], blk.N.post_norm [n_embd].
    Matrix ple_gate, ple_proj;
    const float* ple_post_norm = nullptr;
    MlaWeights mla;  // a latent attention layer's (ModelSpec::mla)
    SsmWeights ssm;  // a recurrent layer's mixer (src/model/ssm.h)
    ExpertWeights moe;  // an expert layer's (LayerSpec::ffn == Experts)
};

// A multi-token-prediction (NextN) block, DeepSeek-V3 / GLM-4.5's form: the
// block's input is eh_proj · [enorm(embedding of token t+1) | hnorm(the trunk's
// final hidden state at t)], then the decoder layer stored at blk.N (the trunk's
// kind), then its own norm and output head, predicting token t+2.
struct NextnWeights {
    LayerWeights layer;
    Matrix eh_proj;                      // nextn.eh_proj [2 n_embd, n_embd]
    const float* enorm = nullptr;        // nextn.enorm [n_embd]
    const float* hnorm = nullptr;        // nextn.hnorm [n_embd]
    Matrix embed_tokens;                 // nextn.embed_tokens [n_embd, n_vocab] (optional: token_embd)
    Matrix head;                         // nextn.shared_head_head [n_embd, n_vocab] (optional: the output head)
    const float* head_norm = nullptr;    // nextn.shared_head_norm [n_embd] (optional: output_norm)
};

// A Gemma 4 assistant's input step (src/model/assistant.cpp): the target's
// token embedding (row lookups) times scale, beside the row's state, through pre.
struct AssistantInput {
    Matrix target_embd;  // the target's token_embd [n_embd_target, n_vocab]
    float scale = 1.0f;  // sqrt(n_embd_target), as llama.cpp's graph
    Matrix pre;          // nextn.pre_projection [2 n_embd_target, n_embd]
};

struct ModelWeights {
    Matrix tok_embd;                // [n_embd, n_vocab]
    const float* output_norm = nullptr;
    const float* output_norm_b = nullptr;
    Matrix output;                  // [n_embd, n_vocab]; the embedding when tied
    const float* output_b = nullptr;    // [n_vocab]
    const float* rope_freqs = nullptr;  // [n_rot / 2]
    const float* rope_long = nullptr;   // [n_rot / 2] LongRoPE factors past the original context
    const float* rope_short = nullptr;  // [n_rot / 2] ... within it
    std::vector<LayerWeights> layers;
    // Learned input rows added to the token's (encoders: then a LayerNorm).
    Matrix pos_embd;                // position_embd [n_embd, n_ctx_train] (row lookups; gpt2, starcoder, encoders)
    Matrix type_embd;               // token_types [n_embd, n_token_types] (row lookups)
    const float* tok_embd_norm = nullptr;  // token_embd_norm [n_embd]
    const float* tok_embd_norm_b = nullptr;
    // The classification head of rank pooling: cls [n_embd, n_embd] then tanh
    // (modern-bert: GELU then cls_norm; jina-bert-v2: cls [n_embd, 1] alone)
    // (optional), cls.output [n_embd, n_cls_out] (optional), each with a bias.
    Matrix cls, cls_out;
    const float* cls_b = nullptr;
    const float* cls_out_b = nullptr;
    const float* cls_norm = nullptr;  // modern-bert: cls, GELU, then this LayerNorm (no bias)
    // After pooling (ModelSpec::dense_2_out): dense_2 [n_embd, dense_2_out], dense_3 [dense_3_in, n_embd].
    Matrix dense_2, dense_3;
    // Per-layer embeddings (ModelSpec::n_embd_per_layer): per_layer_token_embd
    // [n_embd_per_layer * n_layer, n_vocab] (row lookups), per_layer_model_proj
    // [n_embd, n_embd_per_layer * n_layer], per_layer_proj_norm [n_embd_per_layer].
    Matrix ple_tok_embd, ple_model_proj;
    const float* ple_proj_norm = nullptr;
    // The file's first NextN block (ModelSpec::n_layer_nextn > 0), bound for drafting.
    std::vector<NextnWeights> nextn;
    // Set only in a NextN head's own weights (src/model/nextn.h): the forward pass
    // builds each row's input from its token and the trunk's hidden state by this block.
    const NextnWeights* nextn_input = nullptr;
    // A drafter reading a target's cache (ModelSpec::n_embd_target): nextn.pre_projection
    // [2 n_embd_target, n_embd] and nextn.post_projection [n_embd, n_embd_target].
    Matrix assistant_pre, assistant_post;
    // Set only in an assistant drafter's own view of these weights
    // (src/engine/assistant_draft.h): the forward pass builds each row's input
    // from the target's embedding of its token and the state beside it.
    const AssistantInput* assistant_input = nullptr;

    // Vectors (norms, biases) are copied out of the mapping at load, converted to
    // f32 where stored otherwise; matrices in a type the matmul does not take are
    // converted once at load. Both are kept here.
    std::vector<std::unique_ptr<std::vector<float>>> converted_vectors;
    std::vector<std::unique_ptr<std::vector<uint8_t>>> converted_matrices;
    std::vector<std::string> conversion_notes;  // "blk.0.ffn_down.weight: IQ1_S -> F32"
    uint64_t packed_bytes = 0;  // weights repacked at load for the SIMD kernels
    // The matrices' bytes in the file and in memory after load (repacked, in
    // place or converted), each distinct tensor once.
    uint64_t matrix_file_bytes = 0, matrix_resident_bytes = 0;
    uint64_t converted_bytes = 0;  // of converted_vectors and converted_matrices stored in another type
    uint64_t vector_bytes = 0;     // f32 vectors copied out of the mapping
    uint64_t mapped_bytes = 0;     // tensors bound in place from the mapping
    bool tok_embd_mapped = true;   // the embedding is read from the mapping (not converted)
    uint64_t lookup_table_bytes = 0;  // tables whose rows are read with pread (Matrix::rows_fd)
    PackPlan pack_plan;            // plan_only: what prepare_matrices would repack
    // Expert layers beyond the expert memory budget: their experts stay in the
    // file's mapping, unrepacked, read in place (compute/matmul.h). Layer indices
    // (a NextN block's: n_layer and on) and the bytes of their expert matrices.
    std::vector<int> in_place_expert_layers;
    uint64_t in_place_expert_bytes = 0;
};

// Binds every tensor the spec needs; sets spec's presence flags. Errors name
// the tensor and the expected versus found shape or type. A tensor of the file
// that the family does not read is an error naming it (llama.cpp refuses such a
// file too: its loader counts the tensors it created against the file's).
// plan_only checks the same and converts and repacks nothing: converted_bytes
// and pack_plan say what a load would allocate (src/engine/memory_plan.cpp).
//
// expert_budget: bytes of expert matrices repacked (LoadOptions::expert_memory_budget);
// unset, what the memory available now leaves (/proc/meminfo MemAvailable).
ModelWeights bind_weights(const gguf::File& file, ModelSpec& spec, bool plan_only = false,
                          std::optional<uint64_t> expert_budget = std::nullopt);


}  // namespace kiln
