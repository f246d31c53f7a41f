// kiln — command line entry point: dispatches to one function per subcommand.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "commands.h"
#include "common.h"
#include "kiln/error.h"

namespace {

struct Subcommand {
    const char* name;
    int (*run)(int, char**);
    const char* help;
};

const Subcommand k_subcommands[] = {
    {"run", kiln::cli::cmd_run, "complete a prompt (raw text)"},
    {"chat", kiln::cli::cmd_chat, "chat with a model through its chat template"},
    {"embed", kiln::cli::cmd_embed, "embeddings of texts (an embedding model); --json in the OpenAI shape"},
    {"rerank", kiln::cli::cmd_rerank, "documents ranked for a query by a reranker (a cross-encoder)"},
    {"serve", kiln::cli::cmd_serve, "HTTP server (OpenAI, Anthropic and Ollama APIs)"},
    {"inspect", kiln::cli::cmd_inspect, "model card of a GGUF file"},
    {"archs", kiln::cli::cmd_archs, "architectures kiln knows, their layer kinds, which run and are checked"},
    {"tensors", kiln::cli::cmd_tensors, "tensor table (name, type, shape, offset, bytes)"},
    {"metadata", kiln::cli::cmd_metadata, "metadata keys and values"},
    {"analyze", kiln::cli::cmd_analyze, "parameters, bits per weight, KV cache size, file layout"},
    {"dequant", kiln::cli::cmd_dequant, "dequantize a tensor to f32 (text or .npy)"},
    {"vocab", kiln::cli::cmd_vocab, "search the vocabulary; a token's nearest neighbours in the embedding matrix"},
    {"bench", kiln::cli::cmd_bench, "prompt processing and generation speed"},
    {"tokenize", kiln::cli::cmd_tokenize, "token ids of a text (the file's tokenizer)"},
    {"detokenize", kiln::cli::cmd_detokenize, "text of token ids"},
    {"template", kiln::cli::cmd_template, "render a chat prompt with a model's chat template"},
    {"grammar", kiln::cli::cmd_grammar, "compile a JSON Schema / GBNF / regex constraint, check a text"},
    {"list", kiln::cli::cmd_list, "the models found (kiln folder, Hugging Face cache, Ollama, LM Studio, configured folders)"},
    {"pull", kiln::cli::cmd_pull, "download a model (hf:OWNER/REPO[:QUANT|/FILE] or a URL) with resume and SHA-256 checks"},
    {"config", kiln::cli::cmd_config, "the configuration and where each value came from (--print)"},
    {"plan", kiln::cli::cmd_plan, "the memory a model will take at a context, before loading it"},
    {"perplexity", kiln::cli::cmd_perplexity, "perplexity of a model over a text (as llama-perplexity computes it)"},
    {"autotune", kiln::cli::cmd_autotune, "measure the fastest threads, batch size and KV cache type here; save them to the config file"},
    {"imatrix", kiln::cli::cmd_imatrix, "importance matrix of a model over a text (llama-imatrix's format), for quantize --imatrix"},
    {"quantize", kiln::cli::cmd_quantize, "make a smaller file: a preset (Q4_K_M, Q8_0, ...) with llama-quantize's tensor types and bytes"},
};

void usage(std::FILE* out) {
    std::fprintf(out, "usage: kiln [--config FILE] <command> [options]\n\ncommands:\n");
    for (const auto& s : k_subcommands) std::fprintf(out, "  %-10s %s\n", s.name, s.help);
    std::fprintf(out, "\nkiln <command> --help shows the options of a command.\n");
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        usage(stderr);
        return 1;
    }
    // --config FILE (or --config=FILE), anywhere on the line, is every command's:
    // taken out before the subcommand parses the rest.
    std::vector<char*> args;
    for (int i = 0; i < argc; ++i) {
        std::string_view a = argv[i];
        if (i > 0 && a == "--config") {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "kiln: --config needs a file\n");
                return 1;
            }
            kiln::cli::set_config_path(argv[++i]);
        } else if (i > 0 && a.rfind("--config=", 0) == 0) {
            kiln::cli::set_config_path(std::string(a.substr(9)));
        } else {
            args.push_back(argv[i]);
        }
    }
    argc = static_cast<int>(args.size());
    args.push_back(nullptr);
    argv = args.data();
    if (argc < 2) {
        usage(stderr);
        return 1;
    }
    std::string_view cmd = argv[1];
    if (cmd == "--help" || cmd == "-h" || cmd == "help") {
        usage(stdout);
        return 0;
    }
    for (const auto& s : k_subcommands) {
        if (cmd != s.name) continue;
        try {
            return s.run(argc - 1, argv + 1);
        } catch (const kiln::Error& e) {
            std::fprintf(stderr, "kiln %s: %s\n", s.name, e.what());
            return 1;
        } catch (const std::bad_alloc&) {
            std::fprintf(stderr, "kiln %s: out of memory\n", s.name);
            return 1;
        } catch (const std::exception& e) {
            std::fprintf(stderr, "kiln %s: %s\n", s.name, e.what());
            return 1;
        }
    }
    std::fprintf(stderr, "kiln: unknown command '%s' (kiln --help lists them)\n", argv[1]);
    return 1;
}
