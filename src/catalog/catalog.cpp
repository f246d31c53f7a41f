// The model catalog (kiln/catalog.h): the stores people keep GGUF files in, and
// the one naming scheme over them. Layouts, as those tools write them:
//   Hugging Face hub cache  HUB/models--OWNER--REPO/refs/main (a commit hash),
//                           HUB/models--OWNER--REPO/snapshots/COMMIT/FILE -> ../../blobs/HASH
//   Ollama store            OLLAMA/manifests/HOST/NAMESPACE/MODEL/TAG (JSON; the layer of media
//                           type application/vnd.ollama.image.model names the GGUF blob by digest),
//                           OLLAMA/blobs/sha256-HEX
//   LM Studio               ROOT/PUBLISHER/REPO/FILE.gguf
//   kiln / folders          DIR/FILE.gguf
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kiln/catalog.h"

#include "catalog/hf_names.h"
#include "kiln/error.h"
#include "kiln/gguf/file.h"
#include "kiln/model_card.h"
#include "model/registry.h"

namespace fs = std::filesystem;

namespace kiln {

namespace {

using catalog_detail::names_quant;

constexpr const char* k_ollama_host = "registry.ollama.ai";
constexpr const char* k_ollama_library = "library";
constexpr const char* k_ollama_model_media = "application/vnd.ollama.image.model";

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v && *v ? v : "";
}

std::string home() {
    std::string h = env("HOME");
    return h.empty() ? "." : h;
}

bool is_file(const fs::path& p) {
    std::error_code ec;
    return fs::is_regular_file(p, ec);  // follows symlinks: a dangling one is no file
}

bool is_dir(const fs::path& p) {
    std::error_code ec;
    return fs::is_directory(p, ec);
}

bool has_gguf_magic(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    char magic[4] = {};
    return in.read(magic, 4) && std::string_view(magic, 4) == "GGUF";
}

std::string read_small_file(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    if (!in) throw Error(p.string() + ": cannot read");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// Sorted entries of a folder (none when it does not exist or cannot be read).
std::vector<fs::path> children(const fs::path& dir) {
    std::vector<fs::path> out;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) out.push_back(it->path());
    std::sort(out.begin(), out.end());
    return out;
}

// How a GGUF file name takes part in a listing: a whole file (stem), the first
// shard of a split model (its prefix), or a later shard (skipped).
bool model_stem(const std::string& filename, std::string& stem) {
    if (filename.size() <= 5 || filename.substr(filename.size() - 5) != ".gguf") return false;
    gguf::SplitName split;
    if (gguf::parse_split_name(filename, split)) {
        if (split.no != 1) return false;
        stem = split.prefix;
        return true;
    }
    stem = filename.substr(0, filename.size() - 5);
    return true;
}

// DIR/STEM.gguf, or the first shard DIR/STEM-00001-of-N.gguf.
std::optional<fs::path> find_stem(const fs::path& dir, const std::string& stem) {
    if (is_file(dir / (stem + ".gguf"))) return dir / (stem + ".gguf");
    for (const fs::path& p : children(dir)) {
        gguf::SplitName split;
        if (gguf::parse_split_name(p.filename().string(), split) && split.no == 1 && split.prefix == stem && is_file(p)) return p;
    }
    return std::nullopt;
}

// --- Hugging Face hub cache ---------------------------------------------------

fs::path hf_repo_dir(const std::string& hub, const std::string& owner, const std::string& repo) {
    return fs::path(hub) / ("models--" + owner + "--" + repo);
}

// The snapshot refs/main points at; without refs, the only (or newest) snapshot.
std::optional<fs::path> hf_snapshot(const fs::path& repo_dir) {
    const fs::path ref = repo_dir / "refs" / "main";
    if (is_file(ref)) {
        std::string commit = read_small_file(ref);
        while (!commit.empty() && (commit.back() == '\n' || commit.back() == '\r' || commit.back() == ' ')) commit.pop_back();
        if (!commit.empty() && commit.find('/') == std::string::npos && is_dir(repo_dir / "snapshots" / commit))
            return repo_dir / "snapshots" / commit;
    }
    std::optional<fs::path> best;
    fs::file_time_type best_time{};
    for (const fs::path& s : children(repo_dir / "snapshots")) {
        std::error_code ec;
        const auto t = fs::last_write_time(s, ec);
        if (is_dir(s) && !ec && (!best || t > best_time)) best = s, best_time = t;
    }
    return best;
}

struct HfFile {
    std::string rel;   // path inside the snapshot ("Q4_K_M/model-00001-of-00002.gguf")
    fs::path path;
};

// The models of a snapshot: whole files and first shards whose blob is there.
std::vector<HfFile> hf_models(const fs::path& snapshot) {
    std::vector<HfFile> out;
    std::error_code ec;
    for (fs::recursive_directory_iterator it(snapshot, fs::directory_options::skip_permission_denied, ec), end; !ec && it != end;
         it.increment(ec)) {
        std::string stem;
        if (!model_stem(it->path().filename().string(), stem) || !is_file(it->path())) continue;
        out.push_back({it->path().lexically_relative(snapshot).generic_string(), it->path()});
    }
    std::sort(out.begin(), out.end(), [](const HfFile& a, const HfFile& b) { return a.rel < b.rel; });
    return out;
}

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}


ResolvedModel resolve_hf(const CatalogOptions& o, const std::string& name) {
    const std::string spec = name.substr(3);
    const size_t slash = spec.find('/');
    if (slash == std::string::npos || slash == 0)
        throw Error("model '" + name + "': expected hf:OWNER/REPO[:QUANT|/FILE]");
    const std::string owner = spec.substr(0, slash);
    const size_t cut = spec.find_first_of(":/", slash + 1);
    const std::string repo = spec.substr(slash + 1, cut == std::string::npos ? std::string::npos : cut - slash - 1);
    if (repo.empty()) throw Error("model '" + name + "': expected hf:OWNER/REPO[:QUANT|/FILE]");
    std::string quant, file;
    if (cut != std::string::npos) (spec[cut] == ':' ? quant : file) = spec.substr(cut + 1);
    const fs::path repo_dir = hf_repo_dir(o.hf_hub, owner, repo);
    const auto snapshot = hf_snapshot(repo_dir);
    const std::string pull_hint = "; kiln pull hf:" + owner + "/" + repo + (quant.empty() ? "" : ":" + quant) +
                                  (file.empty() ? "" : "/" + file) + " downloads it";
    if (!snapshot) throw Error("model '" + name + "': " + repo_dir.string() + " holds no snapshot" + pull_hint);
    ResolvedModel r{"", "hf", name, std::nullopt};
    if (!file.empty()) {
        if (file.find("..") != std::string::npos) throw Error("model '" + name + "': the file may not contain '..'");
        const fs::path p = *snapshot / file;
        if (!is_file(p)) throw Error("model '" + name + "': " + p.string() + " is not there" + pull_hint);
        r.path = p.string();
        return r;
    }
    const std::vector<HfFile> models = hf_models(*snapshot);
    std::vector<const HfFile*> matches;
    for (const HfFile& f : models)
        if (quant.empty() ? true : names_quant(f.rel, quant)) matches.push_back(&f);
    // Without a quantization, llama.cpp's default choice (Q4_K_M) when the repo has several.
    if (quant.empty() && matches.size() > 1) {
        std::vector<const HfFile*> q4km;
        for (const HfFile* f : matches)
            if (names_quant(f->rel, "Q4_K_M")) q4km.push_back(f);
        if (q4km.size() == 1) matches = q4km;
    }
    if (matches.size() == 1) {
        r.path = matches[0]->path.string();
        return r;
    }
    std::string have;
    for (const HfFile& f : models) have += (have.empty() ? "" : ", ") + f.rel;
    if (matches.empty())
        throw Error("model '" + name + "': no GGUF file" + (quant.empty() ? "" : " of quantization " + quant) + " in " +
                    snapshot->string() + (have.empty() ? "" : " (it has " + have + ")") + pull_hint);
    throw Error("model '" + name + "': several GGUF files match in " + snapshot->string() + " (" + have +
                "); name one with hf:" + owner + "/" + repo + "/FILE or :QUANT");
}

// --- Ollama store -----------------------------------------------------------

struct OllamaName {
    std::string host = k_ollama_host, ns = k_ollama_library, model, tag = "latest";
};

// [HOST/][NAMESPACE/]MODEL[:TAG]; false when the text is not of that form.
bool parse_ollama_name(const std::string& name, OllamaName& out) {
    std::string base = name;
    const size_t colon = name.rfind(':');
    if (colon != std::string::npos && name.find('/', colon) == std::string::npos) {
        base = name.substr(0, colon);
        out.tag = name.substr(colon + 1);
        if (out.tag.empty()) return false;
    }
    std::vector<std::string> parts;
    for (size_t start = 0;;) {
        const size_t s = base.find('/', start);
        parts.push_back(base.substr(start, s == std::string::npos ? std::string::npos : s - start));
        if (s == std::string::npos) break;
        start = s + 1;
    }
    if (parts.size() > 3) return false;
    for (const std::string& p : parts)
        if (p.empty() || p == "." || p == "..") return false;
    if (out.tag == "." || out.tag == ".." || out.tag.find('/') != std::string::npos) return false;
    out.model = parts.back();
    if (parts.size() >= 2) out.ns = parts[parts.size() - 2];
    if (parts.size() == 3) out.host = parts[0];
    return true;
}

std::string ollama_display_name(const OllamaName& n) {
    std::string s = n.model + ":" + n.tag;
    if (n.ns != k_ollama_library || n.host != k_ollama_host) s = n.ns + "/" + s;
    if (n.host != k_ollama_host) s = n.host + "/" + s;
    return s;
}

// The GGUF blob a manifest names; an error naming the manifest when it names none.
fs::path ollama_blob(const fs::path& root, const fs::path& manifest) {
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(read_small_file(manifest));
    } catch (const nlohmann::json::exception& e) {
        throw Error(manifest.string() + ": not a JSON manifest (" + e.what() + ")");
    }
    if (!j.is_object() || !j.contains("layers") || !j["layers"].is_array())
        throw Error(manifest.string() + ": manifest without a 'layers' array");
    for (const auto& layer : j["layers"]) {
        if (!layer.is_object() || layer.value("mediaType", "") != k_ollama_model_media) continue;
        const std::string digest = layer.value("digest", "");
        if (digest.rfind("sha256:", 0) != 0 || digest.size() != 7 + 64 || digest.find_first_not_of("0123456789abcdef", 7) != std::string::npos)
            throw Error(manifest.string() + ": model layer digest '" + digest + "', expected sha256:<64 hex digits>");
        const fs::path blob = root / "blobs" / ("sha256-" + digest.substr(7));
        if (!is_file(blob)) throw Error(manifest.string() + ": its model blob " + blob.string() + " is missing");
        return blob;
    }
    throw Error(manifest.string() + ": no layer of media type " + std::string(k_ollama_model_media));
}

// --- one entry of a listing -------------------------------------------------

CatalogEntry describe_entry(std::string name, std::string source, const fs::path& path) {
    CatalogEntry e;
    e.name = std::move(name);
    e.source = std::move(source);
    e.path = path.string();
    try {
        const gguf::File file = gguf::File::open(e.path);
        const ModelCard card = describe_model(file);
        e.architecture = card.architecture;
        e.file_size = card.file_size;
        e.n_shards = static_cast<int>(card.n_shards);
        e.context_length = card.n_ctx_train.value_or(0);
        e.quantization = card.file_type;
        if (e.quantization.empty()) {  // the type that holds most of the bytes
            uint64_t most = 0;
            for (const auto& [type, use] : card.type_mix)
                if (use.bytes > most) most = use.bytes, e.quantization = type;
        }
        // Resolved as Model::load resolves it (spelling variants, the key namespace).
        try {
            const ArchRow* row = resolve_architecture(file.metadata()).row;
            e.supported = row && row->configure;
        } catch (const Error&) {
            e.supported = false;  // a projector or an unknown architecture
        }
    } catch (const Error& err) {
        std::error_code ec;
        e.file_size = fs::file_size(path, ec);
        e.error = err.what();
    }
    return e;
}

void list_folder(const fs::path& dir, const std::string& source, std::vector<CatalogEntry>& out) {
    for (const fs::path& p : children(dir)) {
        std::string stem;
        if (model_stem(p.filename().string(), stem) && is_file(p)) out.push_back(describe_entry(stem, source, p));
    }
}

}  // namespace

namespace catalog_detail {

// Whether `quant` (Q4_K_M) is a whole word of the file name: bounded by
// characters that cannot continue a type name (so Q4_K does not match Q4_K_M).
bool names_quant(const std::string& rel, const std::string& quant) {
    const std::string r = lower(rel), q = lower(quant);
    auto word_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    for (size_t at = r.find(q); at != std::string::npos; at = r.find(q, at + 1)) {
        const bool start = at == 0 || !std::isalnum(static_cast<unsigned char>(r[at - 1]));
        const bool end = at + q.size() == r.size() || !word_char(r[at + q.size()]);
        if (start && end) return true;
    }
    return false;
}

}  // namespace catalog_detail

CatalogOptions CatalogOptions::from_environment() {
    CatalogOptions o;
    const std::string h = home();
    o.kiln_models = env("KILN_MODELS");
    if (o.kiln_models.empty()) o.kiln_models = h + "/.cache/kiln/models";
    o.hf_hub = env("HF_HUB_CACHE");
    if (o.hf_hub.empty() && !env("HF_HOME").empty()) o.hf_hub = env("HF_HOME") + "/hub";
    if (o.hf_hub.empty()) o.hf_hub = (env("XDG_CACHE_HOME").empty() ? h + "/.cache" : env("XDG_CACHE_HOME")) + "/huggingface/hub";
    o.ollama_models = env("OLLAMA_MODELS");
    if (o.ollama_models.empty()) o.ollama_models = h + "/.ollama/models";
    o.lmstudio_models = {h + "/.lmstudio/models", h + "/.cache/lm-studio/models"};
    return o;
}

Catalog::Catalog(CatalogOptions options) : options_(std::move(options)) {}

ResolvedModel Catalog::resolve(const std::string& name) const { return resolve_plain(name, 0); }

ResolvedModel Catalog::resolve_plain(const std::string& name, int depth) const {
    const CatalogOptions& o = options_;
    if (name.empty()) throw Error("empty model name");
    if (depth > 8) throw Error("model '" + name + "': aliases refer to each other in a loop");
    // A path first: whatever the user can point at is what they mean.
    if (is_file(name)) return {name, "path", name, std::nullopt};
    // A .gguf name is a path even when missing: the reader's error names it.
    if (name.size() > 5 && name.substr(name.size() - 5) == ".gguf" && name.rfind("hf:", 0) != 0 && name.rfind("lmstudio:", 0) != 0 &&
        name.find("://") == std::string::npos)
        return {name, "path", name, std::nullopt};
    if (auto a = o.aliases.find(name); a != o.aliases.end()) {
        ResolvedModel r = resolve_plain(a->second, depth + 1);
        r.name = name;
        if (r.source == "path") r.source = "alias";
        return r;
    }
    if (auto p = o.presets.find(name); p != o.presets.end()) {
        if (o.presets.count(p->second.model))
            throw Error("preset '" + name + "': its model '" + p->second.model + "' is another preset");
        ResolvedModel r = resolve_plain(p->second.model, depth + 1);
        if (!p->second.sha256.empty()) {
            const std::string have = sha256_file(r.path);
            if (have != lower(p->second.sha256))
                throw Error("preset '" + name + "': " + r.path + " has SHA-256 " + have + ", the preset pins " +
                            lower(p->second.sha256) + " (a different file; refusing it)");
        }
        r.name = name;
        r.source = "preset";
        r.preset = p->second;
        return r;
    }
    if (name.rfind("hf:", 0) == 0) return resolve_hf(o, name);
    if (name.rfind("https://", 0) == 0 || name.rfind("http://", 0) == 0)
        throw Error("model '" + name + "' is a URL: download it first with kiln pull " + name);
    if (name.rfind("lmstudio:", 0) == 0) {
        const std::string rel = name.substr(9);
        const size_t last = rel.rfind('/');
        if (rel.find("..") != std::string::npos || last == std::string::npos)
            throw Error("model '" + name + "': expected lmstudio:PUBLISHER/REPO/STEM");
        for (const std::string& root : o.lmstudio_models)
            if (auto p = find_stem(fs::path(root) / rel.substr(0, last), rel.substr(last + 1))) return {p->string(), "lmstudio", name, std::nullopt};
        std::string roots;
        for (const std::string& r : o.lmstudio_models) roots += (roots.empty() ? "" : ", ") + r;
        throw Error("model '" + name + "': not found in LM Studio's folders (" + roots + ")");
    }
    std::string where;
    if (name.find('/') == std::string::npos && name.find(':') == std::string::npos) {
        std::vector<std::pair<std::string, std::string>> dirs = {{o.kiln_models, "kiln"}};
        for (const std::string& f : o.folders) dirs.push_back({f, "folder"});
        for (const auto& [dir, source] : dirs) {
            if (auto p = find_stem(dir, name)) return {p->string(), source, name, std::nullopt};
            where += (where.empty() ? "" : ", ") + dir;
        }
    }
    OllamaName on;
    if (parse_ollama_name(name, on)) {
        const fs::path root = o.ollama_models;
        const fs::path manifest = root / "manifests" / on.host / on.ns / on.model / on.tag;
        if (is_file(manifest)) return {ollama_blob(root, manifest).string(), "ollama", name, std::nullopt};
        where += (where.empty() ? "" : ", ") + ("the Ollama store (" + manifest.string() + ")");
    }
    throw Error("model '" + name + "' not found: it is no file, alias or preset, and not in " + where +
                " (kiln list shows the models found)");
}

std::vector<CatalogEntry> Catalog::list() const {
    const CatalogOptions& o = options_;
    std::vector<CatalogEntry> out;
    list_folder(o.kiln_models, "kiln", out);
    for (const std::string& f : o.folders) list_folder(f, "folder", out);
    // Hugging Face: every repository's current snapshot.
    for (const fs::path& repo_dir : children(o.hf_hub)) {
        const std::string dir = repo_dir.filename().string();
        if (dir.rfind("models--", 0) != 0) continue;
        const std::string owner_repo = dir.substr(8);
        const size_t sep = owner_repo.find("--");
        if (sep == std::string::npos) continue;
        const std::string id = owner_repo.substr(0, sep) + "/" + owner_repo.substr(sep + 2);
        if (auto snapshot = hf_snapshot(repo_dir))
            for (const HfFile& f : hf_models(*snapshot)) out.push_back(describe_entry("hf:" + id + "/" + f.rel, "hf", f.path));
    }
    // Ollama: manifests/HOST/NAMESPACE/MODEL/TAG whose model layer is a GGUF blob.
    const fs::path manifests = fs::path(o.ollama_models) / "manifests";
    for (const fs::path& host : children(manifests))
        for (const fs::path& ns : children(host))
            for (const fs::path& model : children(ns))
                for (const fs::path& tag : children(model)) {
                    if (!is_file(tag)) continue;
                    OllamaName n{host.filename().string(), ns.filename().string(), model.filename().string(), tag.filename().string()};
                    const std::string name = ollama_display_name(n);
                    try {
                        const fs::path blob = ollama_blob(o.ollama_models, tag);
                        if (has_gguf_magic(blob)) out.push_back(describe_entry(name, "ollama", blob));
                    } catch (const Error& err) {
                        CatalogEntry e;
                        e.name = name;
                        e.source = "ollama";
                        e.path = tag.string();
                        e.error = err.what();
                        out.push_back(e);
                    }
                }
    // LM Studio: PUBLISHER/REPO/FILE.gguf under each of its roots.
    for (const std::string& root : o.lmstudio_models)
        for (const fs::path& publisher : children(root))
            for (const fs::path& repo : children(publisher))
                for (const fs::path& p : children(repo)) {
                    std::string stem;
                    if (!model_stem(p.filename().string(), stem) || !is_file(p)) continue;
                    out.push_back(describe_entry(
                        "lmstudio:" + publisher.filename().string() + "/" + repo.filename().string() + "/" + stem, "lmstudio", p));
                }
    return out;
}

}  // namespace kiln
