// The recurrent-state store on its own: a toy recurrence (each position mixes
// its token into every layer's state) checkpointed, rolled back and copied must
// always equal a straight run from zero.
#include <gtest/gtest.h>

#include <cstring>

#include "cache/hybrid_memory.h"
#include "cache/recurrent_state.h"

namespace {

const std::vector<uint64_t> k_layers = {96, 0, 200};  // bytes per sequence; layer 1 has none

void advance(kiln::RecurrentState& st, int seq, int32_t token) {
    for (int il = 0; il < static_cast<int>(k_layers.size()); ++il) {
        uint8_t* s = st.state(il, seq);
        for (uint64_t i = 0; i < st.state_bytes(il); ++i)
            s[i] = static_cast<uint8_t>(s[i] * 31 + static_cast<uint8_t>(token) + static_cast<uint8_t>(i) + il);
    }
}

std::vector<uint8_t> snapshot(kiln::RecurrentState& st, int seq) {
    std::vector<uint8_t> out;
    for (int il = 0; il < static_cast<int>(k_layers.size()); ++il)
        out.insert(out.end(), st.state(il, seq), st.state(il, seq) + st.state_bytes(il));
    return out;
}

std::vector<uint8_t> straight(const std::vector<int32_t>& tokens, size_t n) {
    kiln::RecurrentState st(k_layers, {.n_seq = 1, .n_ctx = 100, .n_checkpoints = 0});
    for (size_t i = 0; i < n; ++i) advance(st, 0, tokens[i]);
    return snapshot(st, 0);
}

}  // namespace

TEST(RecurrentState, RollbackToACheckpointThenRedecodeEqualsStraightRun) {
    std::vector<int32_t> t;
    for (int i = 0; i < 60; ++i) t.push_back(i * 7 + 3);
    kiln::RecurrentState st(k_layers, {.n_seq = 3, .n_ctx = 100, .n_checkpoints = 3});
    int64_t pos = 0;
    for (; pos < 50; ++pos) {
        advance(st, 1, t[static_cast<size_t>(pos)]);
        if ((pos + 1) % 10 == 0) st.checkpoint(1, pos + 1);
    }
    // Three checkpoints are kept: 30, 40, 50 (10 and 20 were replaced).
    EXPECT_EQ(st.checkpoints(1), (std::vector<int64_t>{30, 40, 50}));
    // Back to 45: the state at 40 comes back; positions 40..44 are evaluated again.
    const int64_t back = st.rollback(1, 45, 50);
    EXPECT_EQ(back, 40);
    EXPECT_EQ(st.checkpoints(1), (std::vector<int64_t>{30, 40}));  // 50 lay in the dropped future
    for (int64_t p = back; p < 45; ++p) advance(st, 1, t[static_cast<size_t>(p)]);
    EXPECT_EQ(snapshot(st, 1), straight(t, 45));
    // Before every checkpoint: from zero.
    EXPECT_EQ(st.rollback(1, 12, 45), 0);
    EXPECT_EQ(snapshot(st, 1), straight(t, 0));
}

TEST(RecurrentState, CopyPrefixTakesTheLiveStateOrACheckpoint) {
    std::vector<int32_t> t;
    for (int i = 0; i < 30; ++i) t.push_back(i * 5 + 1);
    kiln::RecurrentState st(k_layers, {.n_seq = 2, .n_ctx = 100, .n_checkpoints = 2});
    for (int64_t p = 0; p < 30; ++p) {
        advance(st, 0, t[static_cast<size_t>(p)]);
        if (p + 1 == 20) st.checkpoint(0, 20);
    }
    EXPECT_EQ(st.copy_prefix(0, 1, 30, 30), 30);  // the whole: the live state
    EXPECT_EQ(snapshot(st, 1), straight(t, 30));
    EXPECT_EQ(st.copy_prefix(0, 1, 25, 30), 20);  // part: the checkpoint at 20
    EXPECT_EQ(snapshot(st, 1), straight(t, 20));
    EXPECT_EQ(snapshot(st, 0), straight(t, 30));  // the source is untouched
    st.clear(1);
    EXPECT_EQ(snapshot(st, 1), straight(t, 0));
}

TEST(HybridMemory, RollsBothPartsBackToWhatTheStateAllows) {
    std::vector<kiln::KvLayerShape> kv = {{.n_head_kv = 1, .head_dim_k = 32, .head_dim_v = 32}, {}, {}};
    auto cache = std::make_unique<kiln::KvCache>(kv, kiln::KvCacheOptions{.n_seq = 2, .n_ctx = 64});
    auto state = std::make_unique<kiln::RecurrentState>(k_layers, kiln::RecurrentStateOptions{.n_seq = 2, .n_ctx = 64});
    kiln::RecurrentState* rs = state.get();
    kiln::HybridMemory mem(std::move(cache), std::move(state));
    EXPECT_NE(mem.kv(), nullptr);
    EXPECT_EQ(mem.recurrent(), rs);
    mem.checkpoint(0, 16);
    EXPECT_EQ(mem.rollback(0, 20, 30), 16);
    EXPECT_EQ(mem.rollback(0, 10, 16), 0);
}

// What a decode step reads of the cache (kiln bench's bound at depth): every
// full layer's rows up to the query, a sliding layer's window at most.
TEST(KvCache, BytesReadCountsWindowsAndRowFormats) {
    std::vector<kiln::KvLayerShape> layers = {{.n_head_kv = 2, .head_dim_k = 64, .head_dim_v = 64},
                                              {.n_head_kv = 1, .head_dim_k = 32, .head_dim_v = 32, .window = 8},
                                              {}};
    const kiln::KvCache f16(layers, kiln::KvCacheOptions{.type = kiln::KvType::F16, .n_seq = 1, .n_ctx = 64});
    const uint64_t full_row = 2 * 128 * 2, window_row = 2 * 32 * 2;  // K + V of a position, f16
    EXPECT_EQ(f16.bytes_read(0), full_row + window_row);
    EXPECT_EQ(f16.bytes_read(5), 6 * (full_row + window_row));
    EXPECT_EQ(f16.bytes_read(40), 41 * full_row + 8 * window_row);
    EXPECT_EQ(f16.bytes_per_position(), full_row + window_row);
    const kiln::KvCache q8(layers, kiln::KvCacheOptions{.type = kiln::KvType::Q8_0, .n_seq = 1, .n_ctx = 64});
    EXPECT_EQ(q8.bytes_read(40), 41 * (2 * 4 * 34) + 8 * (2 * 34));
}
