// Shared helpers of the tokenizer tests: where the vocabularies are, a cache of
// loaded tokenizers, llama.cpp's .inp/.out vector files.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/tokenizer.h"

namespace kiln::test {

// tests/data/shared/tokenizer (committed vocab-only GGUFs and vectors).
std::string shared_vocab_dir();
// $KILN_VOCABS, else ~/.cache/kiln/vocabs: the larger llama.cpp vocabs that
// tools/fetch_llamacpp_vocabs.sh copies from the llama-cpp-python sdist.
std::string cached_vocab_dir();
// Path of ggml-vocab-NAME.gguf: the committed copy, else the cached one, else "".
std::string vocab_path(const std::string& name);
// Names NAME of every ggml-vocab-NAME.gguf in both folders, plus the names the
// fetch script provides (so a missing one shows up as a skipped test).
std::vector<std::string> all_vocab_names();

// Tokenizers are loaded once per process (some vocabularies take 100+ ms).
const Tokenizer& cached_tokenizer(const std::string& path);

struct VocabVector {
    std::string text;
    std::vector<TokenId> ids;
};
// Reads NAME.gguf.inp / .out next to the vocab, or in the shared folder.
// Empty when there are none.
std::vector<VocabVector> read_vectors(const std::string& name);

std::string format_ids(const std::vector<TokenId>& ids);
std::string escape_text(const std::string& text);  // for failure messages

}  // namespace kiln::test
