// The pushdown recogniser: see recognizer.h.
#include "constrain/recognizer.h"

#include "kiln/error.h"

namespace kiln::constrain {

namespace {

// More stacks than this in one state means a grammar so ambiguous that the
// matcher would crawl; it is reported rather than run.
constexpr size_t k_max_tops = 1u << 20;

inline uint64_t mix(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return k;
}

}  // namespace

Recognizer::Recognizer(const CompiledGrammar* grammar) : g_(grammar), table_(64) {}

void Recognizer::begin_step() {
    ++stamp_;
    used_ = 0;
    if (stamp_ == 0) {  // wrapped: old stamps could collide
        for (Slot& s : table_) s.stamp = 0;
        stamp_ = 1;
    }
    complete_ = false;
    work_.clear();
}

// Inserts key -> value unless present; returns true when inserted, else sets existing.
bool Recognizer::visit(uint64_t key, uint32_t value, uint32_t& existing) {
    if ((used_ + 1) * 2 > table_.size()) {
        std::vector<Slot> old;
        old.swap(table_);
        table_.assign(old.size() * 2, Slot{0, 0, 0});
        const size_t mask = table_.size() - 1;
        for (const Slot& s : old) {
            if (s.stamp != stamp_) continue;
            size_t i = mix(s.key) & mask;
            while (table_[i].stamp == stamp_) i = (i + 1) & mask;
            table_[i] = s;
        }
    }
    const size_t mask = table_.size() - 1;
    size_t i = mix(key) & mask;
    while (table_[i].stamp == stamp_) {
        if (table_[i].key == key) {
            existing = table_[i].value;
            return false;
        }
        i = (i + 1) & mask;
    }
    table_[i] = Slot{key, value, stamp_};
    ++used_;
    return true;
}

// The frame to return to (pos, parent): one node per distinct pair, found again
// on later steps.
uint32_t Recognizer::frame(uint32_t pos, uint32_t parent) {
    if ((frames_used_ + 1) * 2 > frames_.size()) rehash_frames();
    const size_t mask = frames_.size() - 1;
    size_t i = mix((uint64_t{pos} << 32) | parent) & mask;
    const auto n_nodes = static_cast<uint32_t>(arena_.size());
    size_t reuse = SIZE_MAX;
    while (frames_[i] != k_empty_slot) {
        const uint32_t id = frames_[i];
        if (id < n_nodes) {
            if (arena_[id].pos == pos && arena_[id].parent == parent) return id;
        } else if (reuse == SIZE_MAX) {
            reuse = i;  // truncated away
        }
        i = (i + 1) & mask;
    }
    if (reuse != SIZE_MAX) {
        i = reuse;
    } else {
        ++frames_used_;
    }
    frames_[i] = n_nodes;
    arena_.push_back({pos, parent});
    return n_nodes;
}

void Recognizer::rehash_frames() {
    std::vector<uint32_t> old;
    old.swap(frames_);
    // Live entries only; grow when they alone fill a quarter.
    size_t live = 0;
    for (uint32_t id : old)
        if (id != k_empty_slot && id < arena_.size()) ++live;
    size_t size = std::max<size_t>(64, old.size());
    while (live * 4 > size) size *= 2;
    frames_.assign(size, k_empty_slot);
    frames_used_ = 0;
    const size_t mask = size - 1;
    for (uint32_t id : old) {
        if (id == k_empty_slot || id >= arena_.size()) continue;
        size_t i = mix((uint64_t{arena_[id].pos} << 32) | arena_[id].parent) & mask;
        bool dup = false;
        while (frames_[i] != k_empty_slot) {
            const StackNode& o = arena_[frames_[i]];
            if (o.pos == arena_[id].pos && o.parent == arena_[id].parent) dup = true;
            i = (i + 1) & mask;
        }
        if (dup) continue;
        frames_[i] = id;
        ++frames_used_;
    }
}

void Recognizer::push(uint32_t pos, uint32_t parent) { work_.push_back({pos, parent}); }

void Recognizer::close() {
    const CompiledGrammar& g = *g_;
    while (!work_.empty()) {
        const Work w = work_.back();
        work_.pop_back();
        uint32_t unused = 0;
        if (!visit((uint64_t{w.pos} << 32) | w.parent, 0, unused)) continue;
        const uint32_t e = g.elems[w.pos];
        switch (elem_kind(e)) {
            case k_kind_set:
                // Tops are canonical too, so equal states have equal top ids.
                pool_.push_back(frame(w.pos, w.parent));
                break;
            case k_kind_ref: {
                // A reference in tail position returns straight to our parent.
                const uint32_t f = g.elems[w.pos + 1] == k_elem_end ? w.parent : frame(w.pos + 1, w.parent);
                const uint32_t r = elem_index(e);
                for (uint32_t a = g.rule_alt_begin[r]; a < g.rule_alt_begin[r + 1]; ++a) push(g.alt_starts[a], f);
                break;
            }
            default:  // end of an alternative: return to the parent frame
                if (w.parent == k_no_parent) {
                    complete_ = true;
                } else {
                    const StackNode f = arena_[w.parent];
                    push(f.pos, f.parent);
                }
                break;
        }
    }
}

State Recognizer::start() {
    begin_step();
    const CompiledGrammar& g = *g_;
    State s;
    s.tops_begin = static_cast<uint32_t>(pool_.size());
    for (uint32_t a = g.rule_alt_begin[g.root]; a < g.rule_alt_begin[g.root + 1]; ++a) push(g.alt_starts[a], k_no_parent);
    close();
    s.tops_end = static_cast<uint32_t>(pool_.size());
    s.arena_end = static_cast<uint32_t>(arena_.size());
    s.complete = complete_;
    return s;
}

State Recognizer::step(const State& from, uint8_t b) {
    begin_step();
    const CompiledGrammar& g = *g_;
    State s;
    s.tops_begin = static_cast<uint32_t>(pool_.size());
    for (uint32_t i = from.tops_begin; i < from.tops_end; ++i) {
        const StackNode n = arena_[pool_[i]];
        if (g.sets[elem_index(g.elems[n.pos])].test(b)) push(n.pos + 1, n.parent);
    }
    close();
    s.tops_end = static_cast<uint32_t>(pool_.size());
    s.arena_end = static_cast<uint32_t>(arena_.size());
    s.complete = complete_;
    if (s.tops_end - s.tops_begin > k_max_tops)
        throw Error("grammar: more than " + std::to_string(k_max_tops) + " parse stacks after one byte (the grammar is too ambiguous)");
    return s;
}

State Recognizer::load(const uint32_t* tops, size_t n, bool complete) {
    pool_.assign(tops, tops + n);
    State s;
    s.tops_begin = 0;
    s.tops_end = static_cast<uint32_t>(n);
    s.arena_end = static_cast<uint32_t>(arena_.size());
    s.complete = complete;
    return s;
}

State Recognizer::compact(const State& s, uint32_t at) {
    State out = s;
    if (at != s.tops_begin) {
        for (uint32_t i = 0; i < s.tops_end - s.tops_begin; ++i) pool_[at + i] = pool_[s.tops_begin + i];
        out.tops_begin = at;
        out.tops_end = at + (s.tops_end - s.tops_begin);
    }
    pool_.resize(out.tops_end);
    return out;
}

}  // namespace kiln::constrain
