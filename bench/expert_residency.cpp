// expert_residency: shows that a mixture-of-experts model whose experts stay in
// the file's mapping (LoadOptions::expert_memory_budget) decodes by reading only
// the selected experts' pages, and how fast it decodes from a cold page cache
// against a warm one (the README's long checks).
//
//   expert_residency -m model.gguf [--budget-mib 0] [-n 32] [-t 2]
//
// Loads the model with the given expert budget (0: every expert layer in place),
// drops the file from the page cache (madvise(MADV_DONTNEED) on this process's
// mapping of the in-place experts, then posix_fadvise(POSIX_FADV_DONTNEED) on the
// file: no root needed), decodes -n tokens one at a time (cold), then counts with
// mincore which pages of each in-place expert are resident and splits them by
// whether the router selected that expert for any of the tokens; the major
// page faults of the run come from getrusage. Then the same tokens again (warm).
// Prints one line per measure and a JSON object last.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "kiln/context.h"
#include "kiln/error.h"
#include "kiln/model.h"

namespace {

struct Options {
    std::string model;
    double budget_mib = 0;
    int n_gen = 32, threads = 2;
};

uint64_t page_size() { return static_cast<uint64_t>(sysconf(_SC_PAGESIZE)); }

// The whole pages of [p, p + n) (those that lie wholly inside it: a page shared
// with a neighbouring expert belongs to neither).
struct Range {
    uintptr_t begin = 0, end = 0;
    uint64_t pages() const { return (end - begin) / page_size(); }
};
Range whole_pages(const uint8_t* p, uint64_t n) {
    const uintptr_t ps = page_size();
    Range r{(reinterpret_cast<uintptr_t>(p) + ps - 1) / ps * ps, (reinterpret_cast<uintptr_t>(p) + n) / ps * ps};
    if (r.end < r.begin) r.end = r.begin;
    return r;
}

uint64_t resident_pages(const Range& r) {
    if (r.end == r.begin) return 0;
    std::vector<unsigned char> v(r.pages());
    if (mincore(reinterpret_cast<void*>(r.begin), r.end - r.begin, v.data()) != 0) throw kiln::Error(std::string("mincore: ") + std::strerror(errno));
    uint64_t n = 0;
    for (unsigned char c : v) n += c & 1;
    return n;
}

long major_faults() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_majflt;
}

// One expert's slice of one in-place expert tensor.
struct Slice {
    int layer, expert;
    Range pages;
};

int run(const Options& o) {
    kiln::LoadOptions lo;
    lo.expert_memory_budget = static_cast<uint64_t>(o.budget_mib * 1024 * 1024);
    auto model = kiln::Model::load(o.model, lo);
    for (const std::string& note : model->load_notes())
        if (note.find("in place") != std::string::npos) std::printf("load: %s\n", note.c_str());
    const kiln::gguf::File& file = model->file();

    // The in-place expert layers, as the load note names them ("(blk.A .. blk.B)").
    int first = -1, last = -1;
    for (const std::string& note : model->load_notes()) {
        const size_t at = note.find("(blk.");
        if (note.find("experts read in place") == std::string::npos || at == std::string::npos) continue;
        first = last = std::stoi(note.substr(at + 5));
        const size_t to = note.find(".. blk.", at);
        if (to != std::string::npos) last = std::stoi(note.substr(to + 7));
    }
    if (first < 0) throw kiln::Error(o.model + ": no experts stay in place with this budget");
    std::vector<Slice> slices;
    for (const kiln::gguf::TensorInfo& t : file.tensors()) {
        const std::string& name = t.name;
        if (name.rfind("blk.", 0) != 0 || t.shape.size() != 3 || name.find("_exps.weight") == std::string::npos) continue;
        const int layer = std::stoi(name.substr(4));
        if (layer < first || layer > last) continue;
        const uint64_t per = t.bytes / t.shape[2];
        const uint8_t* base = file.tensor_data(t);
        for (uint64_t j = 0; j < t.shape[2]; ++j) slices.push_back({layer, static_cast<int>(j), whole_pages(base + j * per, per)});
    }
    if (slices.empty()) throw kiln::Error(o.model + ": no expert tensors");

    kiln::ContextOptions co;
    co.n_ctx = o.n_gen + 16;
    co.n_threads = o.threads;
    kiln::Context ctx(model, co);
    std::vector<kiln::TokenId> tokens(static_cast<size_t>(o.n_gen));
    uint64_t x = 12345;
    for (auto& t : tokens) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        t = static_cast<kiln::TokenId>((x >> 33) % static_cast<uint64_t>(std::min(model->n_vocab(), 30000)));
    }
    // Drop: this process's mapping of the in-place experts, then the file's page cache.
    for (const Slice& s : slices)
        if (s.pages.end > s.pages.begin) madvise(reinterpret_cast<void*>(s.pages.begin), s.pages.end - s.pages.begin, MADV_DONTNEED);
    const int fd = open(o.model.c_str(), O_RDONLY);
    if (fd < 0) throw kiln::Error(o.model + ": cannot open: " + std::strerror(errno));
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
    uint64_t after_drop = 0, total = 0;
    for (const Slice& s : slices) {
        after_drop += resident_pages(s.pages);
        total += s.pages.pages();
    }
    std::printf("after the drop: %llu of %llu expert pages resident\n", static_cast<unsigned long long>(after_drop),
                static_cast<unsigned long long>(total));

    auto decode_all = [&] {
        ctx.clear();
        ctx.reset_expert_usage();
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < o.n_gen; ++i) ctx.decode(std::span<const kiln::TokenId>(&tokens[static_cast<size_t>(i)], 1));
        return o.n_gen / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    const long f0 = major_faults();
    const double cold = decode_all();
    const long f1 = major_faults();
    const auto& usage = ctx.expert_usage();
    uint64_t sel_pages = 0, sel_res = 0, idle_pages = 0, idle_res = 0;
    int sel = 0, idle = 0;
    for (const Slice& s : slices) {
        const bool used = static_cast<size_t>(s.layer) < usage.size() && static_cast<size_t>(s.expert) < usage[static_cast<size_t>(s.layer)].size() &&
                          usage[static_cast<size_t>(s.layer)][static_cast<size_t>(s.expert)] > 0;
        const uint64_t r = resident_pages(s.pages);
        (used ? sel_pages : idle_pages) += s.pages.pages();
        (used ? sel_res : idle_res) += r;
        ++(used ? sel : idle);
    }
    const double warm = decode_all();
    const long f2 = major_faults();
    auto pct = [](uint64_t a, uint64_t b) { return b ? 100.0 * static_cast<double>(a) / static_cast<double>(b) : 0.0; };
    std::printf("cold decode: %.2f t/s, %ld major faults (%d tokens)\n", cold, f1 - f0, o.n_gen);
    std::printf("selected experts' slices (%d): %llu of %llu pages resident (%.1f%%)\n", sel, static_cast<unsigned long long>(sel_res),
                static_cast<unsigned long long>(sel_pages), pct(sel_res, sel_pages));
    std::printf("never-selected experts' slices (%d): %llu of %llu pages resident (%.1f%%)\n", idle,
                static_cast<unsigned long long>(idle_res), static_cast<unsigned long long>(idle_pages), pct(idle_res, idle_pages));
    std::printf("warm decode: %.2f t/s, %ld major faults\n", warm, f2 - f1);
    std::printf("{\"cold_tokens_per_s\": %.3f, \"warm_tokens_per_s\": %.3f, \"cold_major_faults\": %ld, \"warm_major_faults\": %ld, "
                "\"pages_after_drop\": %llu, \"expert_pages\": %llu, \"selected_slices\": %d, \"selected_pages\": %llu, "
                "\"selected_resident\": %llu, \"idle_slices\": %d, \"idle_pages\": %llu, \"idle_resident\": %llu}\n",
                cold, warm, f1 - f0, f2 - f1, static_cast<unsigned long long>(after_drop), static_cast<unsigned long long>(total), sel,
                static_cast<unsigned long long>(sel_pages), static_cast<unsigned long long>(sel_res), idle,
                static_cast<unsigned long long>(idle_pages), static_cast<unsigned long long>(idle_res));
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    try {
        for (int i = 1; i < argc; ++i) {
            const std::string a = argv[i];
            auto value = [&]() -> std::string {
                if (i + 1 >= argc) throw kiln::Error("missing value after " + a);
                return argv[++i];
            };
            if (a == "-m" || a == "--model") o.model = value();
            else if (a == "--budget-mib") o.budget_mib = std::stod(value());
            else if (a == "-n") o.n_gen = std::stoi(value());
            else if (a == "-t") o.threads = std::stoi(value());
            else throw kiln::Error("unknown option " + a);
        }
        if (o.model.empty()) throw kiln::Error("usage: expert_residency -m MODEL [--budget-mib MIB] [-n TOKENS] [-t THREADS]");
        return run(o);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "expert_residency: %s\n", e.what());
        return 1;
    }
}
