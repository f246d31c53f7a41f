// arcee (Arcee AFM-4.5B): llama's attention (RMS norms, NORM RoPE, Q/K/V biases
// by presence, rope_freqs by presence) with a plain FFN whose activation is
// ReLU² (down(max(up(x), 0)²), no gate, no biases); output head separate or tied.
#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_arcee(ArchConfig& c) {
    c.spec.activation = FfnActivation::Relu2;
    c.spec.tensors.rope_freqs = TensorUse::Optional;
}

}  // namespace kiln
