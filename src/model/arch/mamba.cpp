// mamba, mamba2: attention-free stacks of recurrent layers, each `attn_norm` →
// the selective-scan mixer (src/model/ssm.cpp) → residual, with no FFN. The
// recurrence's sizes come from the `ssm.*` keys; Mamba-2 adds head groups
// sharing B and C (`ssm.group_count`) and a grouped RMSNorm gate.
#include <string>

#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

namespace {

int ssm_key(ArchConfig& c, const char* name, int min) {
    const std::string key = c.key(name);
    const uint64_t v = c.metadata.get_uint(key);
    if (v < static_cast<uint64_t>(min) || v > (1u << 20))
        throw Error("GGUF metadata '" + key + "': " + std::to_string(v) + " is out of range (at least " + std::to_string(min) + ")");
    return static_cast<int>(v);
}

}  // namespace

void read_ssm_keys(ArchConfig& c, SsmKind kind) {
    ModelSpec& s = c.spec;
    SsmSpec& m = s.ssm;
    m.kind = kind;
    m.d_conv = ssm_key(c, "ssm.conv_kernel", 1);
    m.d_inner = ssm_key(c, "ssm.inner_size", 1);
    m.d_state = ssm_key(c, "ssm.state_size", 1);
    m.dt_rank = ssm_key(c, "ssm.time_step_rank", 1);
    if (kind == SsmKind::Mamba2) {
        m.n_group = ssm_key(c, "ssm.group_count", 1);
        if (m.d_inner % m.dt_rank != 0 || m.dt_rank % m.n_group != 0)
            throw Error("GGUF metadata: '" + c.key("ssm.inner_size") + "' " + std::to_string(m.d_inner) + ", '" +
                        c.key("ssm.time_step_rank") + "' (heads) " + std::to_string(m.dt_rank) + " and '" +
                        c.key("ssm.group_count") + "' " + std::to_string(m.n_group) +
                        ": the heads must split the channels and the groups the heads");
    } else {
        // FalconMamba: dt, B and C RMS-normed without weights (llama.cpp's mamba
        // graph; its mamba loader reads no norm tensors for them).
        m.dt_bc_rms = c.metadata.find_bool(c.key("ssm.dt_b_c_rms")).value_or(false);
    }
}

namespace {

void configure_ssm(ArchConfig& c, SsmKind kind) {
    read_ssm_keys(c, kind);
    for (LayerSpec& l : c.spec.layers) {
        l.mixer = MixerKind::Recurrent;
        l.ffn = FfnKind::None;
        l.use_rope = false;
    }
}

}  // namespace

void configure_mamba(ArchConfig& c) { configure_ssm(c, SsmKind::Mamba1); }
void configure_mamba2(ArchConfig& c) { configure_ssm(c, SsmKind::Mamba2); }

}  // namespace kiln
