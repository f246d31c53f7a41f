// Downloading models (kiln pull; docs/models.md, "Downloading"):
//
//   kiln::PullOptions o = kiln::PullOptions::from_environment();
//   o.progress = [](const kiln::PullProgress& p) { show(p); };
//   kiln::PullResult r = kiln::pull_model("hf:OWNER/REPO:Q4_K_M", o);
//   // r.name ("hf:OWNER/REPO/FILE") now resolves through the Catalog, offline.
//
// hf: names are fetched from the Hugging Face hub into the hub cache layout
// (models--OWNER--REPO/blobs/SHA256, snapshots/COMMIT/FILE -> the blob,
// refs/REVISION), where the Catalog, llama.cpp and huggingface_hub find them. A
// file is written as blobs/SHA256.incomplete, resumed from there with an HTTP
// range request, checked against the size and the SHA-256 the hub lists, and
// only then renamed into place: a partial or wrong file never looks complete.
// An https:// (or http://) URL is saved into the kiln folder under its file
// name, through NAME.part, checked against --sha256 when one is given.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kiln {

struct PullProgress {
    std::string file;         // the file being fetched
    uint64_t done = 0;        // bytes on disk so far (a resumed part counts)
    uint64_t total = 0;       // its size (0: unknown)
    uint64_t resumed_at = 0;  // bytes that were already there when this fetch began
    double seconds = 0;       // since this fetch began
    bool finished = false;    // the file is complete and checked
};

struct PullOptions {
    std::string endpoint = "https://huggingface.co";  // $HF_ENDPOINT
    std::string token;                                  // $HF_TOKEN: sent as a bearer token
    std::string hf_hub;       // the hub cache ($HF_HUB_CACHE, $HF_HOME/hub, ~/.cache/huggingface/hub)
    std::string kiln_models;  // URL downloads ($KILN_MODELS, ~/.cache/kiln/models)
    std::string revision = "main";
    std::string sha256;       // URL downloads: the expected SHA-256 (64 hex digits), if known
    int connect_timeout_s = 10, read_timeout_s = 60;
    std::function<void(const PullProgress&)> progress;

    static PullOptions from_environment();
};

struct PullResult {
    std::string name;                // what -m accepts now
    std::vector<std::string> paths;  // the files (every shard of a split model), in order
    uint64_t bytes_fetched = 0;      // 0 when everything was there already
};

// Throws kiln::Error naming the model, file, URL or status: an unreachable
// endpoint ("offline?"), an unknown repository or file, several files matching,
// a size or SHA-256 that differs (both shown; the partial file is removed).
PullResult pull_model(const std::string& spec, const PullOptions& options);

}  // namespace kiln
