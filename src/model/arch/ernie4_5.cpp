// ernie4_5 (ERNIE 4.5 dense, 0.3B): llama's block with NORM RoPE and a head size
// from attention.key_length that may exceed width / heads (the 0.3B model: 16
// heads of 128 over a width of 1024); output separate or tied. llama.cpp's
// loader also accepts an attention-output bias but its graph never adds it, so
// kiln does not read one (a file with it is refused, naming it).
#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_ernie4_5(ArchConfig&) {}

}  // namespace kiln
