// The per-level kernel tables and the choice of the active one.
#include <atomic>
#include <cstdlib>
#include <iterator>
#include <string>
#include <vector>

#include "compute/alibi.h"
#include "compute/attention.h"
#include "compute/kernels/kernels.h"
#include "compute/kernels/target.h"
#include "compute/kernels/x86.h"
#include "compute/ops.h"
#include "compute/ssm.h"
#include "kiln/error.h"
#include "kiln/quant.h"

namespace kiln {

const KernelTable& scalar_kernels() {
    static const KernelTable t = [] {
        KernelTable k;
        k.isa = Isa::Scalar;
        k.silu_mul = ops::silu_mul;
        k.ssm_scan2 = ssm::scan2_step;
        k.ssm_delta = ssm::delta_step;
        k.ssm_delta_apply = ssm::delta_apply;
        k.rwkv_wkv6 = ssm::wkv6_step;
        k.rwkv_gla = ssm::gla_step;
        k.rwkv_wkv7 = ssm::wkv7_step;
        k.rope_apply = ops::rope_apply;
        k.f32_to_f16 = [](const float* src, uint16_t* dst, int64_t n) {
            for (int64_t i = 0; i < n; ++i) dst[i] = quant::fp32_to_fp16(src[i]);
        };
        k.round_to_f16 = [](const float* src, float* dst, int64_t n) {
            for (int64_t i = 0; i < n; ++i) dst[i] = quant::fp16_to_fp32(quant::fp32_to_fp16(src[i]));
        };
        k.round_to_bf16 = [](const float* src, float* dst, int64_t n) {
            for (int64_t i = 0; i < n; ++i) dst[i] = quant::bf16_to_fp32(quant::fp32_to_bf16(src[i]));
        };
        k.q8_0_to_f32 = [](const uint8_t* row, float* dst, int64_t n) { quant::dequantize_row(GgmlType::Q8_0, row, dst, n); };
        k.gelu_mul = ops::gelu_mul;
        k.rms_norm = ops::rms_norm;
        k.softmax = ops::softmax;
        k.attend_row = attend_rows_scalar;
        k.attend_stream = attend_stream_scalar;
        k.alibi_bias = alibi_bias;
        return k;
    }();
    return t;
}

#if KILN_HAVE_X86_KERNELS

// q5k_layout: the panel layout the level's Q5_K kernels read (layout.h).
#define KILN_QUANT_KERNELS(ns, q5k_layout)                                                                               \
    {GgmlType::Q4_0, ns::gemm_q4_0}, {GgmlType::Q4_1, ns::gemm_q4_1}, {GgmlType::Q5_0, ns::gemm_q5_0},                  \
        {GgmlType::Q5_1, ns::gemm_q5_1}, {GgmlType::Q8_0, ns::gemm_q8_0}, {GgmlType::IQ4_NL, ns::gemm_iq4_nl},          \
        {GgmlType::Q4_K, ns::gemm_q4_K}, {GgmlType::Q5_K, ns::gemm_q5_K, q5k_layout}, {GgmlType::Q6_K, ns::gemm_q6_K}, \
        {GgmlType::Q2_K, ns::gemm_q2_K}, {GgmlType::Q3_K, ns::gemm_q3_K}, {GgmlType::IQ4_XS, ns::gemm_iq4_xs},          \
        {GgmlType::TQ2_0, ns::gemm_tq2_0}, {GgmlType::TQ1_0, ns::gemm_tq1_0}, {GgmlType::MXFP4, ns::gemm_mxfp4},       \
        {GgmlType::IQ2_XXS, ns::gemm_iq2_xxs}, {GgmlType::IQ2_XS, ns::gemm_iq2_xs}, {GgmlType::IQ2_S, ns::gemm_iq2_s},   \
        {GgmlType::IQ3_XXS, ns::gemm_iq3_xxs}, {GgmlType::IQ3_S, ns::gemm_iq3_s}, {GgmlType::IQ1_S, ns::gemm_iq1_s},     \
        {GgmlType::IQ1_M, ns::gemm_iq1_m}

namespace {
const QuantKernel k_avx2_quant[] = {KILN_QUANT_KERNELS(avx2, PanelLayout::BitPlanes)};
const QuantKernel k_avx2_vnni_quant[] = {KILN_QUANT_KERNELS(avx2::vnni, PanelLayout::BitPlanes)};
const QuantKernel k_avx512_quant[] = {KILN_QUANT_KERNELS(avx512, PanelLayout::Standard)};

// The AVX2 table; its quantized products with AVX-VNNI's vpdpbusd or without.
KernelTable make_avx2_table(bool avx_vnni) {
    KernelTable k = scalar_kernels();
    k.isa = Isa::Avx2;
    k.avx_vnni = avx_vnni;
    k.quant = avx_vnni ? std::span<const QuantKernel>(k_avx2_vnni_quant) : std::span<const QuantKernel>(k_avx2_quant);
    k.prep_act = avx2::prep_act;
    k.gemm_float = avx2::gemm_float;
    k.silu_mul = avx2::silu_mul;
    k.f32_to_f16 = avx2::f32_to_f16;
    k.round_to_f16 = avx2::round_to_f16;
    k.round_to_bf16 = avx2::round_to_bf16;
    k.q8_0_to_f32 = avx2::q8_0_to_f32;
    k.rope_apply = avx2::rope_apply;
    k.gelu_mul = avx2::gelu_mul;
    k.rms_norm = avx2::rms_norm;
    k.softmax = avx2::softmax;
    k.attend_row = avx2::attend_row;
    k.attend_block = avx2::attend_block;
    k.attend_stream = avx2::attend_stream;
    k.alibi_bias = avx2::alibi_bias;
    k.ssm_scan2 = avx2::ssm_scan2;
    k.ssm_delta = avx2::ssm_delta;
    k.ssm_delta_apply = avx2::ssm_delta_apply;
    k.rwkv_wkv6 = avx2::rwkv_wkv6;
    k.rwkv_gla = avx2::rwkv_gla;
    k.rwkv_wkv7 = avx2::rwkv_wkv7;
    return k;
}
}  // namespace

const KernelTable& avx2_kernels() {
    static const KernelTable t = make_avx2_table(cpu_features().avx_vnni);
    return t;
}

const KernelTable& avx2_kernels_without_vnni() {
    static const KernelTable t = make_avx2_table(false);
    return t;
}

namespace {
// The AVX-512 products: the grid i-quants by VBMI permutes (vbmi), the prefill of
// the types that have AMX kernels by AMX tiles (amx).
std::vector<QuantKernel> avx512_quant(bool vbmi, bool amx) {
    std::vector<QuantKernel> out(std::begin(k_avx512_quant), std::end(k_avx512_quant));
    for (QuantKernel& k : out) {
        if (vbmi) switch (k.type) {
                case GgmlType::IQ2_XXS: k.gemm = avx512::vbmi::gemm_iq2_xxs; break;
                case GgmlType::IQ2_XS: k.gemm = avx512::vbmi::gemm_iq2_xs; break;
                case GgmlType::IQ2_S: k.gemm = avx512::vbmi::gemm_iq2_s; break;
                case GgmlType::IQ3_XXS: k.gemm = avx512::vbmi::gemm_iq3_xxs; break;
                case GgmlType::IQ3_S: k.gemm = avx512::vbmi::gemm_iq3_s; break;
                case GgmlType::IQ1_S: k.gemm = avx512::vbmi::gemm_iq1_s; break;
                case GgmlType::IQ1_M: k.gemm = avx512::vbmi::gemm_iq1_m; break;
                default: break;
            }
        if (amx) switch (k.type) {
                case GgmlType::Q4_0: k.gemm = avx512::amx::gemm_q4_0; break;
                case GgmlType::Q4_1: k.gemm = avx512::amx::gemm_q4_1; break;
                case GgmlType::Q5_0: k.gemm = avx512::amx::gemm_q5_0; break;
                case GgmlType::Q5_1: k.gemm = avx512::amx::gemm_q5_1; break;
                case GgmlType::Q8_0: k.gemm = avx512::amx::gemm_q8_0; break;
                case GgmlType::IQ4_NL: k.gemm = avx512::amx::gemm_iq4_nl; break;
                case GgmlType::MXFP4: k.gemm = avx512::amx::gemm_mxfp4; break;
                default: break;
            }
    }
    return out;
}

KernelTable make_avx512_table(bool vbmi, bool amx) {
    // One list per variant, alive as long as the program (the tables are static).
    static const std::vector<QuantKernel> lists[2][2] = {{avx512_quant(false, false), avx512_quant(false, true)},
                                                         {avx512_quant(true, false), avx512_quant(true, true)}};
    KernelTable k = scalar_kernels();
    k.isa = Isa::Avx512;
    k.avx512_vbmi = vbmi;
    k.amx = amx;
    k.quant = lists[vbmi][amx];
    k.prep_act = avx512::prep_act;
    k.bf16_pair_acts = cpu_features().avx512bf16;
    k.gemm_float = k.bf16_pair_acts ? avx512::gemm_float : avx512::gemm_float_bf16_emulated;
    k.silu_mul = avx512::silu_mul;
    k.f32_to_f16 = avx512::f32_to_f16;
    k.round_to_f16 = avx512::round_to_f16;
    k.round_to_bf16 = avx512::round_to_bf16;
    k.q8_0_to_f32 = avx512::q8_0_to_f32;
    k.rope_apply = avx512::rope_apply;
    k.gelu_mul = avx512::gelu_mul;
    k.rms_norm = avx512::rms_norm;
    k.softmax = avx512::softmax;
    k.attend_row = avx512::attend_row;
    k.attend_block = avx512::attend_block;
    k.attend_stream = avx512::attend_stream;
    k.alibi_bias = avx512::alibi_bias;
    k.ssm_scan2 = avx512::ssm_scan2;
    k.ssm_delta = avx512::ssm_delta;
    k.ssm_delta_apply = avx512::ssm_delta_apply;
    k.rwkv_wkv6 = avx512::rwkv_wkv6;
    k.rwkv_gla = avx512::rwkv_gla;
    k.rwkv_wkv7 = avx512::rwkv_wkv7;
    return k;
}
}  // namespace

const KernelTable& avx512_kernels() {
    static const KernelTable t = make_avx512_table(cpu_features().avx512vbmi, cpu_features().amx_int8);
    return t;
}

const KernelTable& avx512_kernels_without_vbmi() {
    static const KernelTable t = make_avx512_table(false, cpu_features().amx_int8);
    return t;
}

const KernelTable& avx512_kernels_without_amx() {
    static const KernelTable t = make_avx512_table(cpu_features().avx512vbmi, false);
    return t;
}

#undef KILN_QUANT_KERNELS

#endif

namespace {

const KernelTable* compiled_table(Isa isa) {
    switch (isa) {
        case Isa::Scalar: return &scalar_kernels();
#if KILN_HAVE_X86_KERNELS
        case Isa::Avx2: return &avx2_kernels();
        case Isa::Avx512: return &avx512_kernels();
#else
        default: return nullptr;
#endif
    }
    return nullptr;
}

// KILN_ISA=scalar|avx2|avx512 lowers the level (never raises it past the CPU's);
// avx2-novnni is the AVX2 level without AVX-VNNI (as on CPUs that lack it),
// avx512-novbmi the AVX-512 level without AVX512_VBMI (Skylake-X, Cascade Lake),
// avx512-noamx the AVX-512 level without AMX tiles (every AVX-512 CPU before
// Sapphire Rapids, and AMD's).
const KernelTable* initial_table() {
    Isa isa = best_isa();
    bool without_vnni = false, without_vbmi = false, without_amx = false;
    if (const char* env = std::getenv("KILN_ISA")) {
        const std::string v = env;
        Isa want = isa;
        if (v == "scalar") want = Isa::Scalar;
        if (v == "avx2" || v == "avx2-novnni") want = Isa::Avx2;
        if (v == "avx512" || v == "avx512-novbmi" || v == "avx512-noamx") want = Isa::Avx512;
        if (static_cast<int>(want) < static_cast<int>(isa)) isa = want;
        without_vnni = v == "avx2-novnni";
        without_vbmi = v == "avx512-novbmi";
        without_amx = v == "avx512-noamx";
    }
    while (!compiled_table(isa) || !isa_supported(isa)) isa = static_cast<Isa>(static_cast<int>(isa) - 1);
#if KILN_HAVE_X86_KERNELS
    if (isa == Isa::Avx2 && without_vnni) return &avx2_kernels_without_vnni();
    if (isa == Isa::Avx512 && without_vbmi) return &avx512_kernels_without_vbmi();
    if (isa == Isa::Avx512 && without_amx) return &avx512_kernels_without_amx();
#endif
    return compiled_table(isa);
}

std::atomic<const KernelTable*>& active() {
    static std::atomic<const KernelTable*> a{initial_table()};
    return a;
}

}  // namespace

const KernelTable& kernels() { return *active().load(std::memory_order_relaxed); }

std::string kernels_name(const KernelTable& k) {
    return std::string(isa_name(k.isa)) + (k.avx_vnni ? "+avx-vnni" : "") + (k.avx512_vbmi ? "+vbmi" : "") + (k.amx ? "+amx" : "");
}

const KernelTable* kernel_table(Isa isa) { return isa_supported(isa) ? compiled_table(isa) : nullptr; }

void set_active_isa(Isa isa) {
    const KernelTable* t = kernel_table(isa);
    if (!t) throw Error("kernel level " + std::string(isa_name(isa)) + " is not available on this CPU");
    active().store(t, std::memory_order_relaxed);
}

}  // namespace kiln
