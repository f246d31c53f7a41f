// kiln pull (kiln/pull.h): the hub's file list, then each file fetched with
// resume into the hub cache layout, checked, and linked into its snapshot.
#include "kiln/pull.h"

#include <httplib.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "catalog/hf_names.h"
#include "kiln/catalog.h"
#include "kiln/error.h"

namespace fs = std::filesystem;

namespace kiln {

namespace {

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "";
}

struct Url {
    std::string base;  // scheme://host[:port]
    std::string path;  // /...
};

Url split_url(const std::string& url) {
    static const std::regex re(R"(^(https?://[^/?#]+)(.*)$)");
    std::smatch m;
    if (!std::regex_match(url, m, re)) throw Error("'" + url + "' is not an http:// or https:// URL", ErrorKind::InvalidInput);
    std::string path = m[2].str();
    if (path.empty()) path = "/";
    return {m[1].str(), path};
}

std::unique_ptr<httplib::Client> client(const std::string& base, const PullOptions& o) {
    auto c = std::make_unique<httplib::Client>(base);
    c->set_follow_location(true);
    c->set_connection_timeout(o.connect_timeout_s, 0);
    c->set_read_timeout(o.read_timeout_s, 0);
    if (!o.token.empty()) c->set_bearer_token_auth(o.token);
    return c;
}

[[noreturn]] void unreachable(const std::string& url, httplib::Error e, const std::string& during) {
    std::string why = httplib::to_string(e);
    if (e == httplib::Error::Connection)
        throw Error("cannot reach " + split_url(url).base + " (" + why + "; offline? HF_ENDPOINT sets the hub) while " + during,
                    ErrorKind::ResourceExhausted);
    throw Error(during + ": " + why + " (" + url + ")", ErrorKind::ResourceExhausted);
}

nlohmann::json get_json(const std::string& url, const PullOptions& o, const std::string& what) {
    const Url u = split_url(url);
    auto c = client(u.base, o);
    httplib::Result r = c->Get(u.path.c_str());
    if (!r) unreachable(url, r.error(), "reading " + what);
    if (r->status == 401 || r->status == 403)
        throw Error(what + ": the hub answered " + std::to_string(r->status) +
                        (o.token.empty() ? " (a gated or private repository needs HF_TOKEN)" : " (HF_TOKEN was refused)"),
                    ErrorKind::InvalidInput);
    if (r->status == 404) throw Error(what + ": not found on " + u.base + " (404)", ErrorKind::InvalidInput);
    if (r->status != 200) throw Error(what + ": the hub answered " + std::to_string(r->status), ErrorKind::ResourceExhausted);
    auto j = nlohmann::json::parse(r->body, nullptr, false);
    if (j.is_discarded() || !j.is_object()) throw Error(what + ": the hub's answer is not a JSON object", ErrorKind::ResourceExhausted);
    return j;
}

uint64_t file_size_or_zero(const fs::path& p) {
    std::error_code ec;
    const auto n = fs::file_size(p, ec);
    return ec ? 0 : static_cast<uint64_t>(n);
}

// Fetches `url` into `part`, resuming from what it holds. Returns the bytes
// fetched now. `expected` (0: unknown) bounds the file.
uint64_t fetch(const std::string& url, const fs::path& part, uint64_t expected, const std::string& label,
               const PullOptions& o) {
    uint64_t have = file_size_or_zero(part);
    if (expected && have > expected) {
        fs::remove(part);
        have = 0;
    }
    if (expected && have == expected) return 0;
    const Url u = split_url(url);
    auto c = client(u.base, o);
    httplib::Headers headers;
    if (have) headers.emplace("Range", "bytes=" + std::to_string(have) + "-");
    std::FILE* f = nullptr;
    uint64_t done = have, fetched = 0, total = expected;
    int status = 0;
    const auto t0 = std::chrono::steady_clock::now();
    auto last_report = t0;
    PullProgress p{label, have, expected, have, 0, false};
    auto report = [&](bool force) {
        const auto now = std::chrono::steady_clock::now();
        if (!o.progress || (!force && now - last_report < std::chrono::milliseconds(100))) return;
        last_report = now;
        p.done = done;
        p.total = total;
        p.seconds = std::chrono::duration<double>(now - t0).count();
        o.progress(p);
    };
    report(true);
    std::string write_error;
    httplib::Result r = c->Get(
        u.path.c_str(), headers,
        [&](const httplib::Response& res) {
            status = res.status;
            if (status == 206) {
                f = std::fopen(part.c_str(), "ab");
            } else if (status == 200) {
                done = have = 0;  // the server sent the whole file: start again
                p.resumed_at = 0;
                f = std::fopen(part.c_str(), "wb");
                if (!total && res.has_header("Content-Length"))
                    total = std::strtoull(res.get_header_value("Content-Length").c_str(), nullptr, 10);
            } else {
                return false;
            }
            if (!f) write_error = "cannot write " + part.string();
            return f != nullptr;
        },
        [&](const char* data, size_t n) {
            if (std::fwrite(data, 1, n, f) != n) {
                write_error = "cannot write " + part.string() + " (disk full?)";
                return false;
            }
            done += n;
            fetched += n;
            report(false);
            return true;
        });
    if (f) std::fclose(f);
    if (!write_error.empty()) throw Error(write_error, ErrorKind::ResourceExhausted);
    if (status == 416 && expected && file_size_or_zero(part) == expected) return fetched;
    if (status != 0 && status != 200 && status != 206) {
        if (status == 401 || status == 403)
            throw Error(label + ": " + std::to_string(status) +
                            (o.token.empty() ? " (a gated or private repository needs HF_TOKEN)" : " (HF_TOKEN was refused)"),
                        ErrorKind::InvalidInput);
        throw Error(label + ": the server answered " + std::to_string(status) + " for " + url,
                    ErrorKind::ResourceExhausted);
    }
    if (!r) {
        report(true);
        if (r.error() == httplib::Error::Connection && fetched == 0 && status == 0) unreachable(url, r.error(), "fetching " + label);
        throw Error(label + ": the download stopped after " + std::to_string(done) + " of " +
                        (total ? std::to_string(total) : std::string("?")) + " bytes (" + httplib::to_string(r.error()) +
                        "); kiln pull again resumes it",
                    ErrorKind::ResourceExhausted);
    }
    if (total && done != total)
        throw Error(label + ": the download ended after " + std::to_string(done) + " of " + std::to_string(total) +
                        " bytes; kiln pull again resumes it",
                    ErrorKind::ResourceExhausted);
    report(true);
    return fetched;
}

// Checks a finished part against its size and SHA-256, then renames it into place.
void check_and_place(const fs::path& part, const fs::path& final_path, uint64_t size, const std::string& sha256,
                     const std::string& label) {
    const uint64_t got = file_size_or_zero(part);
    if (size && got != size) {
        fs::remove(part);
        throw Error(label + ": " + std::to_string(got) + " bytes, the hub lists " + std::to_string(size) +
                        " (the partial file was removed)",
                    ErrorKind::ResourceExhausted);
    }
    if (!sha256.empty()) {
        const std::string h = sha256_file(part.string());
        if (h != sha256) {
            fs::remove(part);
            throw Error(label + ": SHA-256 " + h + ", expected " + sha256 + " (the file was removed)", ErrorKind::ResourceExhausted);
        }
    }
    fs::rename(part, final_path);
}

// "NAME-00001-of-00003.gguf" -> the regex of its shards, or none.
std::optional<std::regex> shard_pattern(const std::string& rel) {
    static const std::regex re(R"(^(.*)-(\d{5})-of-(\d{5})\.gguf$)");
    std::smatch m;
    if (!std::regex_match(rel, m, re)) return std::nullopt;
    std::string stem;
    for (char ch : m[1].str()) {
        if (std::string("\\^$.|?*+()[]{}").find(ch) != std::string::npos) stem += '\\';
        stem += ch;
    }
    return std::regex("^" + stem + "-\\d{5}-of-" + m[3].str() + "\\.gguf$");
}

struct HubFile {
    std::string rel, sha256;
    uint64_t size = 0;
};

std::vector<HubFile> choose_files(const std::string& spec, const std::vector<HubFile>& gguf, const std::string& quant,
                                  const std::string& file) {
    std::string have;
    for (const HubFile& f : gguf) have += (have.empty() ? "" : ", ") + f.rel;
    const std::string listing = have.empty() ? " (it has no GGUF files)" : " (it has " + have + ")";
    std::vector<const HubFile*> matches;
    for (const HubFile& f : gguf) {
        if (!file.empty() ? f.rel == file : !quant.empty() ? catalog_detail::names_quant(f.rel, quant) : true) {
            // A projector is never the model unless named; of split files, the first shard stands for all.
            if (file.empty() && fs::path(f.rel).filename().string().rfind("mmproj", 0) == 0) continue;
            auto shards = shard_pattern(f.rel);
            if (file.empty() && shards && f.rel.find("-00001-of-") == std::string::npos) continue;
            matches.push_back(&f);
        }
    }
    if (quant.empty() && file.empty() && matches.size() > 1) {
        std::vector<const HubFile*> q4km;
        for (const HubFile* f : matches)
            if (catalog_detail::names_quant(f->rel, "Q4_K_M")) q4km.push_back(f);
        if (q4km.size() == 1) matches = q4km;
    }
    if (matches.empty())
        throw Error("'" + spec + "': no GGUF file" + (file.empty() ? quant.empty() ? "" : " of quantization " + quant : " " + file) +
                        " in the repository" + listing,
                    ErrorKind::InvalidInput);
    if (matches.size() > 1)
        throw Error("'" + spec + "': several GGUF files match" + listing + "; name one with /FILE or :QUANT",
                    ErrorKind::InvalidInput);
    std::vector<HubFile> out;
    if (auto shards = shard_pattern(matches[0]->rel)) {
        for (const HubFile& f : gguf)
            if (std::regex_match(f.rel, *shards)) out.push_back(f);
    } else {
        out.push_back(*matches[0]);
    }
    return out;
}

PullResult pull_hf(const std::string& spec, const PullOptions& o) {
    const std::string body = spec.substr(3);
    const size_t slash = body.find('/');
    if (slash == std::string::npos || slash == 0) throw Error("'" + spec + "': expected hf:OWNER/REPO[:QUANT|/FILE]", ErrorKind::InvalidInput);
    const size_t cut = body.find_first_of(":/", slash + 1);
    const std::string owner = body.substr(0, slash);
    const std::string repo = body.substr(slash + 1, cut == std::string::npos ? std::string::npos : cut - slash - 1);
    if (repo.empty()) throw Error("'" + spec + "': expected hf:OWNER/REPO[:QUANT|/FILE]", ErrorKind::InvalidInput);
    std::string quant, file;
    if (cut != std::string::npos) (body[cut] == ':' ? quant : file) = body.substr(cut + 1);
    for (const std::string& part : {owner, repo, file})
        if (part.find("..") != std::string::npos || part.find('\\') != std::string::npos)
            throw Error("'" + spec + "': a name part may not contain '..' or '\\'", ErrorKind::InvalidInput);
    if (o.hf_hub.empty()) throw Error("kiln pull: no hub cache folder", ErrorKind::InvalidInput);

    const std::string api = o.endpoint + "/api/models/" + owner + "/" + repo + "/revision/" + o.revision + "?blobs=true";
    const nlohmann::json info = get_json(api, o, "the file list of " + owner + "/" + repo);
    const std::string commit = info.value("sha", "");
    if (commit.empty() || commit.find('/') != std::string::npos || commit.find("..") != std::string::npos)
        throw Error("the file list of " + owner + "/" + repo + " names no commit ('sha')", ErrorKind::ResourceExhausted);
    std::vector<HubFile> gguf;
    if (auto s = info.find("siblings"); s != info.end() && s->is_array())
        for (const auto& f : *s) {
            if (!f.is_object() || !f.contains("rfilename") || !f["rfilename"].is_string()) continue;
            HubFile h;
            h.rel = f["rfilename"].get<std::string>();
            if (!h.rel.ends_with(".gguf") || h.rel.find("..") != std::string::npos) continue;
            if (auto l = f.find("lfs"); l != f.end() && l->is_object()) {
                h.sha256 = l->value("sha256", "");
                h.size = l->value("size", uint64_t{0});
            }
            if (!h.size && f.contains("size") && f["size"].is_number_unsigned()) h.size = f["size"].get<uint64_t>();
            gguf.push_back(std::move(h));
        }
    const std::vector<HubFile> chosen = choose_files(spec, gguf, quant, file);

    const fs::path repo_dir = fs::path(o.hf_hub) / ("models--" + owner + "--" + repo);
    const fs::path blobs = repo_dir / "blobs", snapshot = repo_dir / "snapshots" / commit;
    fs::create_directories(blobs);
    PullResult out;
    for (const HubFile& f : chosen) {
        static const std::regex hex64("^[0-9a-f]{64}$");
        if (!std::regex_match(f.sha256, hex64))
            throw Error(owner + "/" + repo + "/" + f.rel + ": the hub lists no SHA-256 for it, so it cannot be checked",
                        ErrorKind::ResourceExhausted);
        const fs::path blob = blobs / f.sha256;
        const fs::path link = snapshot / f.rel;
        if (file_size_or_zero(blob) != f.size || !fs::exists(blob)) {
            const fs::path part = blobs / (f.sha256 + ".incomplete");
            out.bytes_fetched += fetch(o.endpoint + "/" + owner + "/" + repo + "/resolve/" + commit + "/" + f.rel, part, f.size,
                                       f.rel, o);
            check_and_place(part, blob, f.size, f.sha256, f.rel);
        }
        if (o.progress) o.progress({f.rel, f.size, f.size, 0, 0, true});
        fs::create_directories(link.parent_path());
        std::error_code ec;
        fs::remove(link, ec);
        fs::create_symlink(fs::relative(blob, link.parent_path()), link);
        out.paths.push_back(link.string());
    }
    fs::create_directories(repo_dir / "refs");
    std::ofstream(repo_dir / "refs" / o.revision, std::ios::trunc) << commit;
    out.name = "hf:" + owner + "/" + repo + "/" + chosen[0].rel;
    return out;
}

PullResult pull_url(const std::string& url, const PullOptions& o) {
    const Url u = split_url(url);
    std::string name = u.path.substr(0, u.path.find_first_of("?#"));
    name = name.substr(name.rfind('/') + 1);
    if (name.empty() || name == "." || name == ".." || !name.ends_with(".gguf"))
        throw Error("'" + url + "': the URL does not end in a .gguf file name", ErrorKind::InvalidInput);
    static const std::regex hex64("^[0-9a-f]{64}$");
    if (!o.sha256.empty() && !std::regex_match(o.sha256, hex64))
        throw Error("--sha256 '" + o.sha256 + "': expected 64 lower-case hex digits", ErrorKind::InvalidInput);
    if (o.kiln_models.empty()) throw Error("kiln pull: no kiln models folder", ErrorKind::InvalidInput);
    fs::create_directories(o.kiln_models);
    const fs::path final_path = fs::path(o.kiln_models) / name, part = fs::path(o.kiln_models) / (name + ".part");
    PullResult out;
    if (fs::exists(final_path)) {
        if (!o.sha256.empty() && sha256_file(final_path.string()) != o.sha256)
            throw Error(final_path.string() + " is there with another SHA-256 than --sha256; remove it to fetch again",
                        ErrorKind::InvalidInput);
    } else {
        out.bytes_fetched = fetch(url, part, 0, name, o);
        check_and_place(part, final_path, 0, o.sha256, name);
    }
    if (o.progress) o.progress({name, file_size_or_zero(final_path), file_size_or_zero(final_path), 0, 0, true});
    out.paths.push_back(final_path.string());
    out.name = name.substr(0, name.size() - 5);
    return out;
}

}  // namespace

PullOptions PullOptions::from_environment() {
    PullOptions o;
    if (std::string e = env("HF_ENDPOINT"); !e.empty()) o.endpoint = e;
    while (!o.endpoint.empty() && o.endpoint.back() == '/') o.endpoint.pop_back();
    o.token = env("HF_TOKEN");
    const CatalogOptions c = CatalogOptions::from_environment();
    o.hf_hub = c.hf_hub;
    o.kiln_models = c.kiln_models;
    return o;
}

PullResult pull_model(const std::string& spec, const PullOptions& options) {
    try {
        if (spec.rfind("hf:", 0) == 0) return pull_hf(spec, options);
        if (spec.rfind("https://", 0) == 0 || spec.rfind("http://", 0) == 0) return pull_url(spec, options);
    } catch (const fs::filesystem_error& e) {
        throw Error(std::string("kiln pull: ") + e.what(), ErrorKind::ResourceExhausted);
    }
    throw Error("'" + spec + "': kiln pull takes hf:OWNER/REPO[:QUANT|/FILE] or an https:// URL", ErrorKind::InvalidInput);
}

}  // namespace kiln
