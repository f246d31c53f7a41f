// What a layer's binding step asks of the model file: tensors by name with their
// expected shape (weights.cpp implements it over the GGUF file, with the checks
// and load-time conversions every tensor gets). Mixers kept in their own files
// (src/model/ssm.cpp) bind their tensors through it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compute/matmul.h"

namespace kiln {

class TensorSource {
public:
    virtual ~TensorSource() = default;
    // f32 values of the given shape (trailing 1s of the file's shape ignored),
    // converted at load if stored otherwise; null when absent and not required.
    virtual const float* floats(const std::string& name, const std::vector<uint64_t>& shape, bool required) = 0;
    // A weight matrix [n_in, n_out] for matmul; empty when absent and not required.
    virtual Matrix matrix(const std::string& name, int64_t n_in, int64_t n_out, bool required) = 0;
    // Whether the file has the tensor (a layout chosen by presence); binds nothing.
    virtual bool has(const std::string& name) const = 0;
};

}  // namespace kiln
