// Subcommands of the `kiln` tool, one file each. Each returns the exit status and
// throws kiln::Error for failures, which main turns into one line on stderr.
#pragma once

#include <memory>
#include <string>

namespace kiln {
class Model;
}

namespace kiln::cli {

int cmd_inspect(int argc, char** argv);
int cmd_archs(int argc, char** argv);
int cmd_tensors(int argc, char** argv);
int cmd_metadata(int argc, char** argv);
int cmd_analyze(int argc, char** argv);
int cmd_dequant(int argc, char** argv);
int cmd_vocab(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_tokenize(int argc, char** argv);
int cmd_detokenize(int argc, char** argv);
int cmd_template(int argc, char** argv);
int cmd_run(int argc, char** argv);
int cmd_chat(int argc, char** argv);
int cmd_grammar(int argc, char** argv);
int cmd_serve(int argc, char** argv);
int cmd_list(int argc, char** argv);
int cmd_pull(int argc, char** argv);
int cmd_config(int argc, char** argv);
int cmd_plan(int argc, char** argv);
int cmd_perplexity(int argc, char** argv);
int cmd_quantize(int argc, char** argv);
int cmd_imatrix(int argc, char** argv);
int cmd_autotune(int argc, char** argv);
int cmd_embed(int argc, char** argv);
int cmd_rerank(int argc, char** argv);

// kiln bench --json-schema (bench_constraint.cpp).
int bench_constraint(std::shared_ptr<const Model> model, const std::string& schema_file, int n_gen, int reps, int n_threads,
                     bool json);

// kiln bench --spec MODE (bench_spec.cpp).
struct SpecBenchOptions {
    std::string mode;         // auto | ngram | draft | off
    std::string draft_model;  // --draft-model
    std::string prompt_file;  // --prompt-file (empty: the built-in editing task)
    int draft_max = 8, draft_min = 1;
    int n_gen = 128, reps = 5, n_threads = 0;
    bool json = false;
};
int bench_spec(std::shared_ptr<const Model> model, const SpecBenchOptions& options);

}  // namespace kiln::cli
