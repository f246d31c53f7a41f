// Open-addressing hash maps for the tokenizer's hot lookups: token text -> id
// (string keys viewed in storage the caller keeps alive) and merge pair -> rank.
// std::unordered_map allocates a node per entry and chases pointers on every
// lookup; these keep entries in one flat array and probe linearly.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace kiln::tok {

inline uint64_t hash_bytes(const char* p, size_t n) {
    // Multiply-xorshift over 8-byte words; tokens are short, so the tail matters.
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (n * 0xC2B2AE3D27D4EB4Full);
    while (n >= 8) {
        uint64_t w;
        std::memcpy(&w, p, 8);
        h = (h ^ (w * 0x87C37B91114253D5ull)) * 0x4CF5AD432745937Full;
        h ^= h >> 31;
        p += 8;
        n -= 8;
    }
    uint64_t w = 0;
    if (n) std::memcpy(&w, p, n);
    h = (h ^ (w * 0x87C37B91114253D5ull)) * 0x4CF5AD432745937Full;
    h ^= h >> 29;
    h *= 0x165667B19E3779F9ull;
    h ^= h >> 32;
    return h;
}

inline uint64_t hash_u64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xFF51AFD7ED558CCDull;
    x ^= x >> 33;
    x *= 0xC4CEB9FE1A85EC53ull;
    x ^= x >> 33;
    return x;
}

// string_view -> int32 value. Keys are not copied: they must outlive the map.
class StringMap {
public:
    void reserve(size_t n) {
        size_t cap = 16;
        while (cap < n * 2) cap <<= 1;
        slots_.assign(cap, Slot{});
        mask_ = cap - 1;
        size_ = 0;
    }
    size_t size() const { return size_; }

    // Inserts or overwrites (the last insertion of a key wins).
    void put(std::string_view key, int32_t value) {
        if ((size_ + 1) * 2 > slots_.size()) grow();
        uint64_t h = hash_bytes(key.data(), key.size());
        size_t i = h & mask_;
        for (;; i = (i + 1) & mask_) {
            Slot& s = slots_[i];
            if (s.data == nullptr) {
                s = Slot{key.data(), static_cast<uint32_t>(key.size()), value, h};
                ++size_;
                return;
            }
            if (s.hash == h && s.len == key.size() && std::memcmp(s.data, key.data(), key.size()) == 0) {
                s.value = value;
                return;
            }
        }
    }

    // -1 when absent.
    int32_t get(std::string_view key) const {
        if (slots_.empty()) return -1;
        uint64_t h = hash_bytes(key.data(), key.size());
        for (size_t i = h & mask_;; i = (i + 1) & mask_) {
            const Slot& s = slots_[i];
            if (s.data == nullptr) return -1;
            if (s.hash == h && s.len == key.size() && std::memcmp(s.data, key.data(), key.size()) == 0)
                return s.value;
        }
    }

private:
    struct Slot {
        const char* data = nullptr;
        uint32_t len = 0;
        int32_t value = 0;
        uint64_t hash = 0;
    };
    void grow() {
        std::vector<Slot> old;
        old.swap(slots_);
        reserve(old.empty() ? 8 : old.size());
        for (const Slot& s : old)
            if (s.data) put(std::string_view(s.data, s.len), s.value);
    }

    std::vector<Slot> slots_;
    size_t mask_ = 0;
    size_t size_ = 0;
};

// uint64 key -> two int32 values (a merge pair -> rank and result). The key
// 0xFFFFFFFFFFFFFFFF is reserved as the empty marker.
class PairMap {
public:
    static constexpr uint64_t k_empty = ~0ull;
    struct Entry {
        uint64_t key = k_empty;
        int32_t a = 0;
        int32_t b = 0;
    };

    void reserve(size_t n) {
        size_t cap = 16;
        while (cap < n * 2) cap <<= 1;
        slots_.assign(cap, Entry{});
        mask_ = cap - 1;
        size_ = 0;
    }
    // Keeps the first value stored for a key.
    bool insert_if_absent(uint64_t key, int32_t a, int32_t b) {
        if ((size_ + 1) * 2 > slots_.size()) grow();
        for (size_t i = hash_u64(key) & mask_;; i = (i + 1) & mask_) {
            Entry& e = slots_[i];
            if (e.key == k_empty) {
                e = Entry{key, a, b};
                ++size_;
                return true;
            }
            if (e.key == key) return false;
        }
    }
    const Entry* find(uint64_t key) const {
        if (slots_.empty()) return nullptr;
        for (size_t i = hash_u64(key) & mask_;; i = (i + 1) & mask_) {
            const Entry& e = slots_[i];
            if (e.key == key) return &e;
            if (e.key == k_empty) return nullptr;
        }
    }
    size_t size() const { return size_; }

private:
    void grow() {
        std::vector<Entry> old;
        old.swap(slots_);
        reserve(old.empty() ? 8 : old.size());
        for (const Entry& e : old)
            if (e.key != k_empty) insert_if_absent(e.key, e.a, e.b);
    }
    std::vector<Entry> slots_;
    size_t mask_ = 0;
    size_t size_ = 0;
};

}  // namespace kiln::tok
