#include "compute/activation_quant.h"

#include <cmath>
#include <cstring>

#include "kiln/error.h"
#include "kiln/quant.h"

namespace kiln {

namespace {

constexpr int k_qk = 32;

struct Q8Scale {
    float d;   // stored scale
    float id;  // multiplier
};

Q8Scale q8_scale(const float* x) {
    float amax = 0.0f;
    for (int j = 0; j < k_qk; ++j) amax = std::fmax(amax, std::fabs(x[j]));
    return {amax / 127.0f, amax != 0.0f ? 127.0f / amax : 0.0f};
}

int8_t q8_level(float v) {
    // nearbyint rounds to nearest, ties to even, in the default rounding mode.
    return static_cast<int8_t>(static_cast<int>(std::nearbyint(v)));
}

void put_f16(uint8_t* p, float v) {
    uint16_t h = quant::fp32_to_fp16(v);
    std::memcpy(p, &h, 2);
}

}  // namespace

// Block layouts as GGUF Q8_0 (f16 d, 32 x int8) and Q8_1 (f16 d, f16 s, 32 x int8).
void quantize_activations_q8_0(const float* x, void* dst, int64_t n) {
    auto* out = static_cast<uint8_t*>(dst);
    for (int64_t b = 0; b < n / k_qk; ++b, x += k_qk, out += 34) {
        const Q8Scale s = q8_scale(x);
        put_f16(out, s.d);
        for (int j = 0; j < k_qk; ++j) out[2 + j] = static_cast<uint8_t>(q8_level(x[j] * s.id));
    }
}

void quantize_activations_q8_1(const float* x, void* dst, int64_t n) {
    auto* out = static_cast<uint8_t*>(dst);
    for (int64_t b = 0; b < n / k_qk; ++b, x += k_qk, out += 36) {
        const Q8Scale s = q8_scale(x);
        put_f16(out, s.d);
        int sum = 0;
        for (int j = 0; j < k_qk; ++j) {
            const int8_t q = q8_level(x[j] * s.id);
            out[4 + j] = static_cast<uint8_t>(q);
            sum += q;
        }
        put_f16(out + 2, s.d * static_cast<float>(sum));
    }
}

void quantize_activations(GgmlType type, const float* x, void* dst, int64_t n) {
    switch (type) {
        case GgmlType::Q8_0: quantize_activations_q8_0(x, dst, n); return;
        case GgmlType::Q8_1: quantize_activations_q8_1(x, dst, n); return;
        default: quant::quantize_row(type, x, dst, n); return;
    }
}

}  // namespace kiln
