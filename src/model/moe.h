// Mixture-of-experts layers (FfnKind::Experts): the router, the selected experts'
// gated FFNs and the optional shared expert. forward.cpp dispatches an expert
// layer's FFN here; nothing here names an architecture — the routing options are
// the MoeSpec the family's configure step filled in from the file's keys.
//
//   logits = router · x (+ router bias)                         f32 [n_expert, n]
//   probs  = softmax(logits) | sigmoid(logits) | logits          (MoeSpec::gating)
//   select = the n_expert_used largest of probs (+ selection bias), within the best
//            n_group_used groups when grouped; ties as llama.cpp's CPU argsort
//   w      = probs[select] (softmax over them for SoftmaxWeight), / their sum when
//            norm_weights, x weights_scale
//   out    = Σ_j w_j · down_j(act(gate_j x) ⊙ up_j x)   (summed in slot order j;
//            ungated experts: down_j(act(up_j x)))
//          + sigmoid(shexp_router · x) · shared expert(x)
// (llama4, weight_before_ffn: Σ_j down_j(act(gate_j (w_j x)) ⊙ up_j (w_j x));
// gemma4: per-expert output scales of the three products, the router on its own
// input.)
//
// Speed: a batch's tokens are grouped by expert, so each selected expert's
// weights are read once per batch as matrix x matrix by the packed kernels (all
// the batch's experts in one parallel region, compute/matmul_batch.h); in decode
// only the k selected experts' panels are read. Batch invariance holds: the
// routing is per token, every product element is computed as the kernels always
// compute it, and a token's k outputs are summed in its slot order.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "compute/matmul.h"
#include "compute/matmul_batch.h"
#include "compute/thread_pool.h"
#include "model/registry.h"
#include "model/spec.h"
#include "model/weights.h"

namespace kiln {

// The routing a family fixes. llama.cpp fixes it per architecture for some
// families (qwen3moe: softmax, renormalized) and reads it from the file for
// others (deepseek2: expert_gating_func, expert_weights_norm, ...): `from_keys`.
struct MoeDefaults {
    ExpertGating gating = ExpertGating::Softmax;
    bool norm_weights = false;
    bool from_keys = false;  // the routing keys, where present, override the defaults
    bool scale_from_key = false;  // with a fixed routing, expert_weights_scale still read (deepseek)
};

// Reads {arch}.expert_count, expert_used_count (required) and
// leading_dense_block_count into c.spec.moe; with from_keys also
// expert_gating_func, expert_weights_norm, expert_weights_scale,
// expert_group_count and expert_group_used_count. Without it, a routing key whose
// value contradicts the family's fixed routing is an error naming it (the file
// would mean something the family's reference does not do).
void read_moe_hparams(ArchConfig& c, const MoeDefaults& defaults);

struct RouterScratch {
    std::vector<float> probs, selection, group_score;
    std::vector<int32_t> order, group_order;
};

// One token's routing: logits f32 [n_expert] (the router's output, its bias
// added) to selected [n_expert_used] expert ids and their weights [n_expert_used].
void route_token(const MoeSpec& m, const float* logits, const float* selection_bias, int32_t* selected, float* weights,
                 RouterScratch& scratch);

// Whether a decode step runs each selected expert's gate / up -> activation ->
// down as one task of one parallel region (compute/matmul_batch.h,
// matmul_expert_chains) or as two regions; the bits are the same either way. On
// by default; KILN_EXPERT_CHAINS=0 in the environment turns it off (A/B runs),
// tests switch it here.
void set_expert_chains(bool on);
bool expert_chains();
// How many expert layers have run as chains in this process (tests).
uint64_t expert_chain_layers();

using MoeDump = std::function<void(const char* name, int layer, const float* data, int64_t n_per_row, int64_t n_rows)>;

class MoeBlock {
public:
    MoeBlock(const ModelSpec& spec, int n_batch_max);

    // out = the expert FFN of layer il for the normed rows h, f32 [n_embd, n] each;
    // the router reads router_in instead of h where given (gemma4).
    void eval(int il, const LayerWeights& lw, const float* h, int n, float* out, const ThreadPool& pool, MatmulScratch& mm,
              const MoeDump& dump, const float* router_in = nullptr);

    // How often each expert of each layer was selected since the last reset:
    // [n_layer][n_expert] (empty rows for dense layers).
    const std::vector<std::vector<uint64_t>>& usage() const { return usage_; }
    void reset_usage();

private:
    const ModelSpec& spec_;
    std::vector<std::vector<uint64_t>> usage_;
    std::vector<RouterScratch> router_scratch_;  // per thread
    std::vector<float> logits_;                   // [n_expert, n]
    std::vector<int32_t> selected_;               // [n_expert_used, n]
    std::vector<float> weights_;                  // [n_expert_used, n]
    std::vector<int32_t> count_, first_;          // [n_expert]: rows routed to each, their first grouped row
    std::vector<int32_t> slot_row_;               // [n_expert_used, n]: each (token, slot)'s grouped row
    std::vector<int32_t> row_token_;              // [n * n_expert_used]: each grouped row's token
    std::vector<float> xg_;                       // grouped inputs [n_embd, n * n_expert_used]
    std::vector<float> gate_, up_;                // grouped [n_ff, n * n_expert_used]
    std::vector<float> ones_;                     // [n_ff] the gate of ungated GELU experts
    std::vector<float> down_;                     // grouped [n_embd, n * n_expert_used]
    std::vector<float> sh_gate_, sh_up_;          // shared expert [n_ff_shexp, n]
    std::vector<float> sh_down_;                  // [n_embd, n]
    std::vector<float> sh_router_;                // [1, n]
    std::vector<ExpertChain> chains_;             // a decode step's selected experts (matmul_expert_chains)
    std::vector<int64_t> chain_id_;               // their expert ids
};

}  // namespace kiln
