// Finding models where people already keep them: one naming scheme for `-m`,
// a request's `model` field and the model lists (docs/models.md, "Naming models").
//
//   kiln::Catalog catalog(kiln::CatalogOptions::from_environment());
//   std::string path = catalog.resolve("smollm2:135m").path;   // an Ollama model
//   for (const auto& e : catalog.list()) ...                    // every store
//
// A name is, in this order: a path to a GGUF file; an alias or a preset of the
// config file (kiln/config.h); `hf:OWNER/REPO[:QUANT|/FILE]` in the Hugging Face
// hub cache; `lmstudio:PUBLISHER/REPO/STEM` in LM Studio's folder; a file stem in
// $KILN_MODELS or a configured folder; an Ollama name `[NAMESPACE/]MODEL[:TAG]`
// (no tag: `latest`). Split files (NAME-00001-of-00003.gguf) are one model named
// by their prefix, resolved to the first shard. Nothing here touches the network.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

// A named model pinned by its SHA-256 (the config file's "presets").
struct Preset {
    std::string model;   // a name in the scheme above (not another preset)
    std::string sha256;  // lower-case hex of the file (of the first shard for a split model)
    int n_ctx = 0;       // default context (0: none)
    // Default sampling: any of temperature, top_k, top_p, min_p, seed, n_predict.
    std::map<std::string, double> sampling;
};

struct CatalogOptions {
    std::string kiln_models;    // $KILN_MODELS, else ~/.cache/kiln/models
    std::string hf_hub;         // $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub
    std::string ollama_models;  // $OLLAMA_MODELS, else ~/.ollama/models
    std::vector<std::string> lmstudio_models;  // ~/.lmstudio/models and ~/.cache/lm-studio/models
    std::vector<std::string> folders;          // configured folders (source "folder")
    std::map<std::string, std::string> aliases;  // name -> name
    std::map<std::string, Preset> presets;

    // The defaults from the environment ($KILN_MODELS, $HF_HUB_CACHE, $HF_HOME,
    // $OLLAMA_MODELS, $HOME); no folders, aliases or presets.
    static CatalogOptions from_environment();
};

struct CatalogEntry {
    std::string name;    // what -m accepts
    std::string source;  // "kiln", "hf", "ollama", "lmstudio", "folder"
    std::string path;    // the GGUF file (the first shard of a split model)
    // From the file's front (empty / 0 when it cannot be read: see error).
    std::string architecture;
    std::string quantization;  // general.file_type's name, else the type holding most bytes
    uint64_t file_size = 0;    // summed over shards
    uint64_t context_length = 0;
    int n_shards = 1;
    bool supported = false;  // an architecture kiln runs
    std::string error;  // why the file could not be read ("" when it could)
};

struct ResolvedModel {
    std::string path;    // the GGUF file to open
    std::string source;  // as CatalogEntry::source, or "path", "alias", "preset"
    std::string name;    // the name asked for
    std::optional<Preset> preset;  // when the name was a preset (its hash checked)
};

class Catalog {
public:
    explicit Catalog(CatalogOptions options);

    const CatalogOptions& options() const { return options_; }

    // The file a name stands for. Throws kiln::Error (invalid input) naming the
    // name, what it was taken for and where it was looked for; a preset whose
    // file's SHA-256 differs is refused with both hashes.
    ResolvedModel resolve(const std::string& name) const;

    // Every GGUF model in every store, each store's listing sorted by name; a
    // file reachable from several stores is listed once per store. Reads only
    // the files' fronts.
    std::vector<CatalogEntry> list() const;

private:
    ResolvedModel resolve_plain(const std::string& name, int depth) const;
    CatalogOptions options_;
};

// Lower-case hex SHA-256 of a file's bytes (errors name the file).
std::string sha256_file(const std::string& path);
// Lower-case hex SHA-256 of bytes.
std::string sha256_hex(const void* data, size_t n);

}  // namespace kiln
