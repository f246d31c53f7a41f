// llama: the reference family (Llama 1-3, Mistral, SmolLM2, ...). Everything it
// adds over the common pass is detected by tensor presence at load: Q/K/V/O
// biases, the Llama 3 RoPE factors (rope_freqs.weight), a separate output head.
#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_llama(ArchConfig&) {}

}  // namespace kiln
