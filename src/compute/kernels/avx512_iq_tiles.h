// The grid i-quants' AVX-512 tiles (decode and prefill), shared by the gather
// kernels (avx512_iq_grid.cpp) and the AVX512_VBMI ones (avx512vbmi_iq_grid.cpp).
// Included inside each file's anonymous namespace, after it defines
// KILN_IQ_TARGET (the functions' instruction-set target: the formats' operand
// code must inline into the tiles) and its formats. A format F gives
//   scale(w, ib, h)          each lane's integer scale of sub-block ib (k_per16: half h)
//   group(w, ib, l, lo, hi)  the unsigned levels of elements 8l .. 8l + 7 of sub-block ib
// or, instead of group, operands(w, ib, ops): all four groups' at once (ops[2l],
// ops[2l + 1]: group l's lo, hi), for formats that decode a sub-block in one go.
// No include guard: each including file instantiates its own copy.

// The activation sum of sub-block ib (k_per16: of its half h) of token t, times
// -offset: the start of that sub-block's sum (it removes the levels' offset).
template <int Offset, bool Per16>
KILN_IQ_TARGET inline __m512i sum_start(const uint8_t* a, int t, int ib, int h) {
    int16_t s;
    if constexpr (Per16)
        std::memcpy(&s, a + act_aux_offset(256) + 32 * t + 2 * (2 * ib + h), 2);
    else
        std::memcpy(&s, a + act_aux_offset(256) + 16 * t + 2 * ib, 2);
    return _mm512_set1_epi32(-Offset * static_cast<int32_t>(s));
}
template <typename F>
KILN_IQ_TARGET inline __m512i sum_start(const uint8_t* a, int t, int ib, int h) {
    return sum_start<F::k_offset, F::k_per16>(a, t, ib, h);
}

template <typename F>
concept IqWholeSubBlock = requires(const uint8_t* w, __m512i (&ops)[8]) { F::operands(w, 0, ops); };

// P panels x T tokens (see run_tiles; index k = p * T + t).
template <typename F, int P, int T>
KILN_IQ_TARGET void iq_tile(const uint8_t* w, uint64_t panel_bytes, const uint8_t* a, int64_t nb, uint64_t w_stride,
                                uint64_t a_stride, float* y, int64_t ldy, const __mmask16* rows, int64_t y_step, bool stream) {
    constexpr int halves = F::k_per16 ? 2 : 1;
    constexpr int groups = 4 / halves;  // groups of 8 per sub-block part
    __m512 acc[P * T];
    for (int k = 0; k < P * T; ++k) acc[k] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b, w += w_stride, a += a_stride) {
        if (T > 1 && stream) prefetch_block(w + w_stride, w_stride);
        __m512i isum[P * T];
        for (int k = 0; k < P * T; ++k) isum[k] = _mm512_setzero_si512();
        for (int ib = 0; ib < 8; ++ib) {
            // One token: an eighth of the next block's lines per sub-block.
            if constexpr (T == 1)
                for (int p = 0; p < P; ++p)
                    for (uint64_t off = (w_stride * ib / 8) & ~uint64_t{63}; off < w_stride * (ib + 1) / 8; off += 64)
                        prefetch_l1(w + p * panel_bytes + w_stride + off);
            [[maybe_unused]] __m512i ops[IqWholeSubBlock<F> ? P : 1][8];
            if constexpr (IqWholeSubBlock<F>)
                for (int p = 0; p < P; ++p) F::operands(w + p * panel_bytes, ib, ops[p]);
            for (int h = 0; h < halves; ++h) {
                __m512i dot[P * T];
                for (int t = 0; t < T; ++t) {
                    const __m512i start = sum_start<F>(a, t, ib, h);
                    for (int p = 0; p < P; ++p) dot[p * T + t] = start;
                }
                for (int p = 0; p < P; ++p) {
                    const uint8_t* wp = w + p * panel_bytes;
                    for (int l = groups * h; l < groups * (h + 1); ++l) {
                        __m512i lo, hi;
                        if constexpr (IqWholeSubBlock<F>) {
                            lo = ops[p][2 * l];
                            hi = ops[p][2 * l + 1];
                        } else {
                            F::group(wp, ib, l, lo, hi);
                        }
                        for (int t = 0; t < T; ++t) {
                            const uint8_t* at = a + 256 * t + 32 * ib + 8 * l;
                            dot[p * T + t] = _mm512_dpbusd_epi32(dot[p * T + t], lo, bcast_i32(at));
                            dot[p * T + t] = _mm512_dpbusd_epi32(dot[p * T + t], hi, bcast_i32(at + 4));
                        }
                    }
                }
                for (int p = 0; p < P; ++p) {
                    const __m512i ls = F::scale(w + p * panel_bytes, ib, h);
                    for (int t = 0; t < T; ++t) isum[p * T + t] = _mm512_add_epi32(isum[p * T + t], _mm512_mullo_epi32(dot[p * T + t], ls));
                }
            }
        }
        for (int p = 0; p < P; ++p) {
            const __m512 dw = load_f16x16(w + p * panel_bytes);
            for (int t = 0; t < T; ++t) {
                const __m512 d = _mm512_mul_ps(dw, bcast_f32(a + act_d_offset(256) + 4 * t));
                acc[p * T + t] = _mm512_add_ps(acc[p * T + t], _mm512_mul_ps(d, _mm512_cvtepi32_ps(isum[p * T + t])));
            }
        }
    }
    const __m512 factor = _mm512_set1_ps(iq_grid_factor(F::k_type));
    for (int p = 0; p < P; ++p)
        for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + t * ldy + p * y_step, rows[p], _mm512_mul_ps(factor, acc[p * T + t]));
}

template <typename F>
constexpr TileFn iq_tiles[9] = {iq_tile<F, 2, 1>, iq_tile<F, 1, 1>, iq_tile<F, 1, 2>, iq_tile<F, 1, 3>, iq_tile<F, 1, 4>,
                                iq_tile<F, 1, 5>, iq_tile<F, 1, 6>, iq_tile<F, 1, 7>, iq_tile<F, 1, 8>};

// ---- prefill: each panel block's grid lookups once for every token group ----

// One panel block at w in IqDecoded's form at out (64-byte aligned).
template <typename F>
KILN_IQ_TARGET void decode_block(const uint8_t* w, uint8_t* out) {
    constexpr int parts = F::k_per16 ? 2 : 1;
    for (int ib = 0; ib < 8; ++ib) {
        __m512i ops[8];
        if constexpr (IqWholeSubBlock<F>)
            F::operands(w, ib, ops);
        else
            for (int l = 0; l < 4; ++l) F::group(w, ib, l, ops[2 * l], ops[2 * l + 1]);
        for (int l = 0; l < 4; ++l) {
            _mm512_store_si512(out + IqDecoded::levels(ib, l), ops[2 * l]);
            _mm512_store_si512(out + IqDecoded::levels(ib, l) + 64, ops[2 * l + 1]);
        }
        for (int h = 0; h < parts; ++h) _mm512_store_si512(out + IqDecoded::scales(ib, h, parts), F::scale(w, ib, h));
    }
    std::memcpy(out + IqDecoded::d(parts), w, 32);
}

// Groups [l0, l1) of sub-block ib of the decoded block at dw against T tokens'
// activations (a: the group's), added to dot[t], then isum[t] += dot[t] x the
// part's int32 scales: every decoded tile's inner step.
template <int T>
KILN_IQ_TARGET inline void add_decoded_part(const uint8_t* dw, const uint8_t* a, int ib, int l0, int l1, const uint8_t* scales, __m512i* dot,
                                            __m512i* isum) {
    for (int l = l0; l < l1; ++l) {
        const __m512i lo = _mm512_load_si512(dw + IqDecoded::levels(ib, l));
        const __m512i hi = _mm512_load_si512(dw + IqDecoded::levels(ib, l) + 64);
        for (int t = 0; t < T; ++t) {
            const uint8_t* at = a + 256 * t + 32 * ib + 8 * l;
            dot[t] = _mm512_dpbusd_epi32(dot[t], lo, bcast_i32(at));
            dot[t] = _mm512_dpbusd_epi32(dot[t], hi, bcast_i32(at + 4));
        }
    }
    const __m512i sc = _mm512_load_si512(scales);
    for (int t = 0; t < T; ++t) isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(dot[t], sc));
}

// nb decoded blocks at dw x T tokens of one group (a: the group's activations of
// the first of them): iq_tile's operations in its order, with the levels and
// scales loaded. The row sums continue those left in y by the blocks before
// (first: none), and the last chunk of a row stores them times the format's
// power of two: the bits of iq_tile's single pass.
template <int Offset, bool Per16, int T>
KILN_IQ_TARGET void decoded_tile(const uint8_t* dw, const uint8_t* a, int64_t nb, uint64_t a_stride, float* y, int64_t ldy,
                                     __mmask16 rows, bool first, bool last, float factor) {
    constexpr int parts = Per16 ? 2 : 1;
    constexpr int groups = 4 / parts;
    constexpr uint64_t bytes = IqDecoded::bytes(parts);
    __m512 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(rows, y + t * ldy);
    for (int64_t b = 0; b < nb; ++b, dw += bytes, a += a_stride) {
        __m512i isum[T];
        for (int t = 0; t < T; ++t) isum[t] = _mm512_setzero_si512();
        for (int ib = 0; ib < 8; ++ib)
            for (int h = 0; h < parts; ++h) {
                __m512i dot[T];
                for (int t = 0; t < T; ++t) dot[t] = sum_start<Offset, Per16>(a, t, ib, h);
                add_decoded_part<T>(dw, a, ib, groups * h, groups * (h + 1), dw + IqDecoded::scales(ib, h, parts), dot, isum);
            }
        const __m512 dwf = load_f16x16(dw + IqDecoded::d(parts));
        for (int t = 0; t < T; ++t) {
            const __m512 d = _mm512_mul_ps(dwf, bcast_f32(a + act_d_offset(256) + 4 * t));
            acc[t] = _mm512_add_ps(acc[t], _mm512_mul_ps(d, _mm512_cvtepi32_ps(isum[t])));
        }
    }
    const __m512 f = _mm512_set1_ps(factor);
    for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + t * ldy, rows, last ? _mm512_mul_ps(f, acc[t]) : acc[t]);
}

using DecodedTileFn = void (*)(const uint8_t*, const uint8_t*, int64_t, uint64_t, float*, int64_t, __mmask16, bool, bool, float);

// Indexed by the group's token count (1 .. 8); shared by the formats of one offset and scale shape.
template <int Offset, bool Per16>
constexpr DecodedTileFn k_decoded_tiles[9] = {nullptr,
                                              decoded_tile<Offset, Per16, 1>,
                                              decoded_tile<Offset, Per16, 2>,
                                              decoded_tile<Offset, Per16, 3>,
                                              decoded_tile<Offset, Per16, 4>,
                                              decoded_tile<Offset, Per16, 5>,
                                              decoded_tile<Offset, Per16, 6>,
                                              decoded_tile<Offset, Per16, 7>,
                                              decoded_tile<Offset, Per16, 8>};

// Several token groups: per panel, IqDecoded::k_blocks blocks put in IqDecoded's
// form at a time by decode (a panel block at w into out, 64-byte aligned), then
// every group's decoded_tile over them. (A batch of one group reads each block
// once: run_tiles' direct path, which streams the panel from memory.) Shared by
// the grid i-quants, TQ1_0 (avx512_lowbit.cpp) and Q6_K (avx512_kquant.cpp, its
// own form and tiles).
// Bytes: one decoded block's size; tiles: the decoded tile per group size.
template <uint64_t Bytes>
KILN_IQ_TARGET void decoded_prefill(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy, float factor,
                                    void (*decode)(const uint8_t* w, uint8_t* out), const DecodedTileFn (&tiles)[9]) {
    constexpr uint64_t bytes = Bytes;
    alignas(64) uint8_t decoded[IqDecoded::k_blocks * bytes];  // [k_blocks] decoded blocks
    const uint64_t a_stride = a.format.block_stride;
    for (int64_t p = p0; p < p1; ++p) {
        const __mmask16 rows = panel_rows(w, p);
        for (int64_t b0 = 0; b0 < w.n_blocks; b0 += IqDecoded::k_blocks) {
            const int64_t nb = std::min<int64_t>(IqDecoded::k_blocks, w.n_blocks - b0);
            for (int64_t b = 0; b < nb; ++b) decode(w.panel(p) + static_cast<uint64_t>(b0 + b) * w.block_bytes, decoded + b * bytes);
            for (int64_t g = 0; g < a.n_groups(); ++g) {
                const int n = static_cast<int>(std::min<int64_t>(k_act_group, a.n_tokens - g * k_act_group));
                tiles[n](decoded, a.group(g) + static_cast<uint64_t>(b0) * a_stride, nb, a_stride,
                         y + g * k_act_group * ldy + p * k_panel_rows, ldy, rows, b0 == 0, b0 + nb == w.n_blocks, factor);
            }
        }
    }
}

template <typename F>
KILN_IQ_TARGET void iq_prefill(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    decoded_prefill<IqDecoded::bytes(F::k_per16 ? 2 : 1)>(w, a, p0, p1, y, ldy, iq_grid_factor(F::k_type), decode_block<F>,
                                                        k_decoded_tiles<F::k_offset, F::k_per16>);
}

template <typename F>
KILN_IQ_TARGET void iq_gemm(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    if (a.n_groups() > 1) return iq_prefill<F>(w, a, p0, p1, y, ldy);
    run_tiles(iq_tiles<F>, w, a, p0, p1, y, ldy);
}

