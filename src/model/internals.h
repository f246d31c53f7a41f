// The engine's access to what a Model keeps inside: its normalised spec and
// its bound weights (not part of the public API).
#pragma once

#include "kiln/model.h"
#include "model/nextn.h"
#include "model/spec.h"
#include "model/weights.h"

namespace kiln {

struct ModelInternals {
    static const ModelSpec& spec(const Model& m);
    static const ModelWeights& weights(const Model& m);
    // The multi-token-prediction head (src/model/nextn.h); null without one.
    static const NextnHead* nextn(const Model& m);
};

}  // namespace kiln
