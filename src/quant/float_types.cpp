// Plain number types: F32, F16, BF16, F64 and the integer types, as rows of f32;
// F16 / BF16 quantization (round to nearest even); the F32 / F16 / BF16 dot products.
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>

#include "quant/blocks.h"
#include "quant/kernels.h"

namespace kiln::quant {

namespace {

template <typename T>
T load(const uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
}

// double -> float, round to nearest even; beyond the float range the result is
// +-inf (what the hardware conversion gives, spelled out because C++ leaves an
// out-of-range conversion undefined).
float narrow_to_float(double v) {
    // Half an ulp above FLT_MAX rounds up to infinity (ties to even: FLT_MAX is odd).
    constexpr double k_overflow = 0x1.ffffffp127;
    if (v >= k_overflow) return std::numeric_limits<float>::infinity();
    if (v <= -k_overflow) return -std::numeric_limits<float>::infinity();
    return static_cast<float>(v);
}

template <typename Int>
void dequantize_ints(const void* src, float* dst, int64_t n) {
    const auto* p = static_cast<const uint8_t*>(src);
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(load<Int>(p + i * sizeof(Int)));
}

// The accumulation every float dot product shares (see VecDotFn): one sum in
// element order, each product added with one rounding.
template <typename Weight, typename Act>
float ordered_fma(int64_t n, Weight weight, Act act) {
    float sum = 0.0f;
    for (int64_t i = 0; i < n; ++i) sum = std::fma(weight(i), act(i), sum);
    return sum;
}

}  // namespace

void dequantize_row_f32(const void* src, float* dst, int64_t n) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

void dequantize_row_f16(const void* src, float* dst, int64_t n) {
    const auto* p = static_cast<const uint8_t*>(src);
    for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(load_u16(p + 2 * i));
}

void dequantize_row_bf16(const void* src, float* dst, int64_t n) {
    const auto* p = static_cast<const uint8_t*>(src);
    for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(load_u16(p + 2 * i));
}

void dequantize_row_f64(const void* src, float* dst, int64_t n) {
    const auto* p = static_cast<const uint8_t*>(src);
    for (int64_t i = 0; i < n; ++i) dst[i] = narrow_to_float(load<double>(p + 8 * i));
}

void dequantize_row_i8(const void* src, float* dst, int64_t n) { dequantize_ints<int8_t>(src, dst, n); }
void dequantize_row_i16(const void* src, float* dst, int64_t n) { dequantize_ints<int16_t>(src, dst, n); }
void dequantize_row_i32(const void* src, float* dst, int64_t n) { dequantize_ints<int32_t>(src, dst, n); }
void dequantize_row_i64(const void* src, float* dst, int64_t n) { dequantize_ints<int64_t>(src, dst, n); }

void quantize_row_f32(const float* src, void* dst, int64_t n) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

void quantize_row_f16(const float* src, void* dst, int64_t n) {
    auto* p = static_cast<uint8_t*>(dst);
    for (int64_t i = 0; i < n; ++i) store_u16(p + 2 * i, fp32_to_fp16(src[i]));
}

void quantize_row_bf16(const float* src, void* dst, int64_t n) {
    auto* p = static_cast<uint8_t*>(dst);
    for (int64_t i = 0; i < n; ++i) store_u16(p + 2 * i, fp32_to_bf16(src[i]));
}

float vec_dot_f32(int64_t n, const void* w, const void* a) {
    const auto* pw = static_cast<const uint8_t*>(w);
    const auto* pa = static_cast<const uint8_t*>(a);
    return ordered_fma(n, [&](int64_t i) { return load_f32(pw + 4 * i); }, [&](int64_t i) { return load_f32(pa + 4 * i); });
}

// The products of two halves (11-bit significands) are exact in f32, so the fused
// multiply-add rounds as a separate multiply and add would.
float vec_dot_f16(int64_t n, const void* w, const void* a) {
    const auto* pw = static_cast<const uint8_t*>(w);
    const auto* pa = static_cast<const uint8_t*>(a);
    return ordered_fma(n, [&](int64_t i) { return load_f16(pw + 2 * i); }, [&](int64_t i) { return load_f16(pa + 2 * i); });
}

// The x86 BF16 dot-product instruction's arithmetic (VDPBF16PS), so that it can
// run the reference as is: element pairs (2j, 2j + 1) in order, the odd element's
// product first (a missing last odd element counts as 0 x 0); each step one fused
// multiply-add with bfloat16 subnormal inputs taken as zero and a result below
// f32's normal range flushed to zero of its sign. (Checked bit for bit against the
// instruction by tests/compute on CPUs that have it.)
float vec_dot_bf16(int64_t n, const void* w, const void* a) {
    const auto* pw = static_cast<const uint8_t*>(w);
    const auto* pa = static_cast<const uint8_t*>(a);
    auto flush = [](float v) { return std::fabs(v) < FLT_MIN ? std::copysign(0.0f, v) : v; };
    auto value = [&](const uint8_t* p, int64_t i) { return i < n ? flush(bf16_to_fp32(load_u16(p + 2 * i))) : 0.0f; };
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i += 2) {
        sum = flush(std::fma(value(pw, i + 1), value(pa, i + 1), sum));
        sum = flush(std::fma(value(pw, i), value(pa, i), sum));
    }
    return sum;
}

}  // namespace kiln::quant
