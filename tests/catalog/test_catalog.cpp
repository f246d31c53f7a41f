// The catalog over fake stores built in a temp dir, laid out as the tools that
// own them write them (the Hugging Face hub cache's snapshots of symlinks into
// blobs/, Ollama's manifests naming blobs by digest, LM Studio's publisher/repo
// folders), pointing at the real SmolLM2 file.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "kiln/catalog.h"
#include "kiln/error.h"
#include "kiln/gguf/value.h"
#include "kiln/gguf/writer.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using kiln::Catalog;
using kiln::CatalogOptions;

namespace {

constexpr const char* k_commit = "0123456789abcdef0123456789abcdef01234567";
constexpr const char* k_old_commit = "fedcba9876543210fedcba9876543210fedcba98";
// A blob name: the hub and Ollama name blobs by a hash of their content (the
// catalog does not check it; presets do).
constexpr const char* k_smollm2_sha = "a7a6ec32a6b7d8d3ae30f42ad4bbdc92dafdcf5e65c6f4c5ddcf12dbc4a6b8b1";

struct Stores {
    fs::path root;
    CatalogOptions options;
};

void link(const fs::path& target, const fs::path& at) {
    fs::create_directories(at.parent_path());
    fs::create_symlink(target, at);
}

// A split model of three shards with llama metadata (no real tensors).
void write_split(const fs::path& dir, const std::string& prefix) {
    fs::create_directories(dir);
    for (int i = 0; i < 3; ++i) {
        kiln::gguf::Writer w;
        if (i == 0) {
            w.metadata().add("general.architecture", kiln::gguf::Value::string("llama"));
            w.metadata().add("llama.context_length", kiln::gguf::Value::u32(2048));
        }
        w.metadata().add("split.no", kiln::gguf::Value::u16(static_cast<uint16_t>(i)));
        w.metadata().add("split.count", kiln::gguf::Value::u16(3));
        w.metadata().add("split.tensors.count", kiln::gguf::Value::i32(3));
        w.add_tensor("t" + std::to_string(i), kiln::GgmlType::F32, {4}, std::vector<uint8_t>(16));
        w.write((dir / kiln::gguf::make_split_name(prefix, i + 1, 3)).string());
    }
}

// Every store, each holding the SmolLM2 file under its own layout.
Stores make_stores(const std::string& name) {
    Stores s;
    s.root = fs::path(kiln::test::temp_dir()) / name;
    fs::remove_all(s.root);
    const fs::path model = fs::absolute(kiln::test::smollm2_path());
    // Hugging Face: the blob is named by its hash; the snapshot links to it.
    const fs::path repo = s.root / "hf" / "models--HuggingFaceTB--SmolLM2-135M-Instruct-GGUF";
    link(model, repo / "blobs" / k_smollm2_sha);
    link(fs::path("../../blobs") / k_smollm2_sha, repo / "snapshots" / k_commit / "smollm2-135m-instruct-q4_1.gguf");
    // An incomplete download: the link's blob is not there.
    link(fs::path("../../blobs") / "missing", repo / "snapshots" / k_commit / "smollm2-135m-instruct-q8_0.gguf");
    // An older snapshot refs/main no longer points at.
    link(fs::path("../../blobs") / k_smollm2_sha, repo / "snapshots" / k_old_commit / "old-q4_0.gguf");
    fs::create_directories(repo / "refs");
    kiln::test::write_file((repo / "refs" / "main").string(), std::string(k_commit) + "\n");
    write_split(s.root / "hf" / "models--acme--split-GGUF" / "snapshots" / k_commit / "Q8_0", "model-Q8_0");
    fs::create_directories(s.root / "hf" / "models--acme--split-GGUF" / "refs");
    kiln::test::write_file((s.root / "hf" / "models--acme--split-GGUF" / "refs" / "main").string(), k_commit);
    // Ollama: a manifest per name:tag, its model layer naming the blob.
    const fs::path ollama = s.root / "ollama";
    const std::string digest = std::string(k_smollm2_sha);
    link(model, ollama / "blobs" / ("sha256-" + digest));
    const std::string manifest = R"({"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json",
        "config":{"mediaType":"application/vnd.docker.container.image.v1+json","digest":"sha256:)" + std::string(64, 'c') + R"(","size":10},
        "layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:)" + digest + R"(","size":98362432},
                  {"mediaType":"application/vnd.ollama.image.template","digest":"sha256:)" + std::string(64, 'd') + R"(","size":5}]})";
    for (const char* at : {"registry.ollama.ai/library/smollm2/135m", "registry.ollama.ai/someone/tiny/q4"}) {
        fs::create_directories((ollama / "manifests" / at).parent_path());
        kiln::test::write_file((ollama / "manifests" / at).string(), manifest);
    }
    fs::create_directories(ollama / "manifests/registry.ollama.ai/library/broken");
    kiln::test::write_file((ollama / "manifests/registry.ollama.ai/library/broken/latest").string(),
                           R"({"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:xyz"}]})");
    // LM Studio: publisher / repo / file.
    link(model, s.root / "lmstudio" / "lmstudio-community" / "SmolLM2-GGUF" / "SmolLM2-135M-Q4_1.gguf");
    // kiln's folder and a configured one.
    link(model, s.root / "kiln" / "smol.gguf");
    link(model, s.root / "folder" / "other.gguf");
    kiln::test::write_file((s.root / "folder" / "notes.txt").string(), "not a model");

    s.options.kiln_models = (s.root / "kiln").string();
    s.options.hf_hub = (s.root / "hf").string();
    s.options.ollama_models = ollama.string();
    s.options.lmstudio_models = {(s.root / "lmstudio").string()};
    s.options.folders = {(s.root / "folder").string()};
    return s;
}

std::string error_of(const Catalog& c, const std::string& name) {
    try {
        c.resolve(name);
    } catch (const kiln::Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(Sha256, KnownVectors) {
    EXPECT_EQ(kiln::sha256_hex("abc", 3), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(kiln::sha256_hex("", 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    const std::string path = kiln::test::temp_dir() + "/sha.bin";
    std::string bytes(5u << 20, 'x');  // over one read buffer
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 131 % 251);
    kiln::test::write_file(path, bytes);
    EXPECT_EQ(kiln::sha256_file(path), kiln::sha256_hex(bytes.data(), bytes.size()));
    EXPECT_THROW(kiln::sha256_file(path + ".missing"), kiln::Error);
}

TEST(Catalog, ResolvesEveryStoresNames) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    const Stores s = make_stores("resolve");
    const Catalog c(s.options);
    const fs::path model = fs::canonical(kiln::test::smollm2_path());
    auto same = [&](const std::string& name, const std::string& source) {
        const kiln::ResolvedModel r = c.resolve(name);
        EXPECT_EQ(fs::canonical(r.path), model) << name;
        EXPECT_EQ(r.source, source) << name;
    };
    same("hf:HuggingFaceTB/SmolLM2-135M-Instruct-GGUF", "hf");  // the one complete file of refs/main's snapshot
    same("hf:HuggingFaceTB/SmolLM2-135M-Instruct-GGUF:Q4_1", "hf");
    same("hf:HuggingFaceTB/SmolLM2-135M-Instruct-GGUF:q4_1", "hf");
    same("hf:HuggingFaceTB/SmolLM2-135M-Instruct-GGUF/smollm2-135m-instruct-q4_1.gguf", "hf");
    same("smollm2:135m", "ollama");
    same("someone/tiny:q4", "ollama");
    same("registry.ollama.ai/someone/tiny:q4", "ollama");
    same("lmstudio:lmstudio-community/SmolLM2-GGUF/SmolLM2-135M-Q4_1", "lmstudio");
    same("smol", "kiln");
    same("other", "folder");
    same(kiln::test::smollm2_path(), "path");
    // A split model resolves to its first shard, by prefix or QUANT.
    const kiln::ResolvedModel split = c.resolve("hf:acme/split-GGUF:Q8_0");
    EXPECT_EQ(fs::path(split.path).filename(), "model-Q8_0-00001-of-00003.gguf");
}

TEST(Catalog, ErrorsNameWhatWasTried) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    const Stores s = make_stores("errors");
    const Catalog c(s.options);
    // Q4_K must not match a Q4_K_M file, nor Q8_0 the incomplete download.
    std::string e = error_of(c, "hf:HuggingFaceTB/SmolLM2-135M-Instruct-GGUF:Q8_0");
    EXPECT_NE(e.find("no GGUF file of quantization Q8_0"), std::string::npos) << e;
    EXPECT_NE(e.find("kiln pull"), std::string::npos) << e;
    e = error_of(c, "hf:HuggingFaceTB/SmolLM2-135M-Instruct-GGUF/old-q4_0.gguf");  // only in the old snapshot
    EXPECT_NE(e.find("is not there"), std::string::npos) << e;
    e = error_of(c, "hf:nobody/nothing");
    EXPECT_NE(e.find("holds no snapshot"), std::string::npos) << e;
    e = error_of(c, "hf:broken");
    EXPECT_NE(e.find("expected hf:OWNER/REPO"), std::string::npos) << e;
    e = error_of(c, "smollm2");  // no :latest manifest
    EXPECT_NE(e.find("not found"), std::string::npos) << e;
    EXPECT_NE(e.find("library/smollm2/latest"), std::string::npos) << e;
    EXPECT_NE(e.find(s.options.kiln_models), std::string::npos) << e;
    e = error_of(c, "broken");
    EXPECT_NE(e.find("expected sha256:<64 hex digits>"), std::string::npos) << e;
    // A missing .gguf is taken as a path (the reader's error names it).
    EXPECT_EQ(c.resolve("missing.gguf").source, "path");
    e = error_of(c, "https://example.invalid/m.gguf");
    EXPECT_NE(e.find("kiln pull"), std::string::npos) << e;
    EXPECT_NE(error_of(c, "lmstudio:../x/y").find("expected lmstudio:"), std::string::npos);
    EXPECT_NE(error_of(c, "").find("empty"), std::string::npos);
}

TEST(Catalog, ListsEveryStoreOncePerStore) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    const Stores s = make_stores("list");
    const Catalog c(s.options);
    std::map<std::string, kiln::CatalogEntry> by_name;
    for (const kiln::CatalogEntry& e : c.list()) {
        EXPECT_TRUE(by_name.emplace(e.name, e).second) << "listed twice: " << e.name;
    }
    const std::vector<std::pair<std::string, std::string>> expected = {
        {"smol", "kiln"},
        {"other", "folder"},
        {"hf:HuggingFaceTB/SmolLM2-135M-Instruct-GGUF/smollm2-135m-instruct-q4_1.gguf", "hf"},
        {"smollm2:135m", "ollama"},
        {"someone/tiny:q4", "ollama"},
        {"lmstudio:lmstudio-community/SmolLM2-GGUF/SmolLM2-135M-Q4_1", "lmstudio"},
    };
    for (const auto& [name, source] : expected) {
        ASSERT_TRUE(by_name.count(name)) << name;
        const kiln::CatalogEntry& e = by_name.at(name);
        EXPECT_EQ(e.source, source);
        EXPECT_EQ(e.architecture, "llama") << name;
        EXPECT_EQ(e.quantization, "Q4_1") << name;
        EXPECT_EQ(e.file_size, 98362432u) << name;
        EXPECT_EQ(e.context_length, 8192u) << name;
        EXPECT_TRUE(e.supported) << name;
        EXPECT_TRUE(e.error.empty()) << e.error;
        // Every listed name resolves to the listed file.
        EXPECT_EQ(fs::canonical(c.resolve(name).path), fs::canonical(e.path)) << name;
    }
    // The split model is one entry: its first shard, the shards' summed size.
    const std::string split = "hf:acme/split-GGUF/Q8_0/model-Q8_0-00001-of-00003.gguf";
    ASSERT_TRUE(by_name.count(split));
    EXPECT_EQ(by_name.at(split).n_shards, 3);
    uint64_t sum = 0;
    for (int i = 1; i <= 3; ++i)
        sum += fs::file_size(s.root / "hf/models--acme--split-GGUF/snapshots" / k_commit / "Q8_0" /
                             kiln::gguf::make_split_name("model-Q8_0", i, 3));
    EXPECT_EQ(by_name.at(split).file_size, sum);
    EXPECT_EQ(by_name.at(split).context_length, 2048u);
    // Neither the incomplete download, the old snapshot nor later shards are listed;
    // the broken manifest is, with its error.
    for (const auto& [name, e] : by_name) {
        EXPECT_EQ(name.find("q8_0.gguf"), std::string::npos) << name;
        EXPECT_EQ(name.find("old-q4_0"), std::string::npos) << name;
        EXPECT_EQ(name.find("00002-of"), std::string::npos) << name;
    }
    ASSERT_TRUE(by_name.count("broken:latest"));
    EXPECT_NE(by_name.at("broken:latest").error.find("sha256:xyz"), std::string::npos);
    EXPECT_EQ(by_name.size(), expected.size() + 2);
}

TEST(Catalog, AliasesAndPresets) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    Stores s = make_stores("presets");
    const std::string sha = kiln::sha256_file(kiln::test::smollm2_path());
    s.options.aliases = {{"small", "smollm2:135m"}, {"loop-a", "loop-b"}, {"loop-b", "loop-a"}};
    kiln::Preset good{"hf:HuggingFaceTB/SmolLM2-135M-Instruct-GGUF:Q4_1", sha, 2048, {{"temperature", 0.2}}};
    kiln::Preset bad{"smol", std::string(64, '0'), 0, {}};
    s.options.presets = {{"pinned", good}, {"tampered", bad}};
    const Catalog c(s.options);
    const kiln::ResolvedModel a = c.resolve("small");
    EXPECT_EQ(a.source, "ollama");
    EXPECT_EQ(a.name, "small");
    const kiln::ResolvedModel p = c.resolve("pinned");
    EXPECT_EQ(p.source, "preset");
    ASSERT_TRUE(p.preset.has_value());
    EXPECT_EQ(p.preset->n_ctx, 2048);
    EXPECT_EQ(fs::canonical(p.path), fs::canonical(kiln::test::smollm2_path()));
    const std::string e = error_of(c, "tampered");
    EXPECT_NE(e.find(sha), std::string::npos) << e;                 // the file's hash
    EXPECT_NE(e.find(std::string(64, '0')), std::string::npos) << e;  // the pinned one
    EXPECT_NE(error_of(c, "loop-a").find("loop"), std::string::npos);
}
