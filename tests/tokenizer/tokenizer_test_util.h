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
const Tokenizer& cached_tokenizer(const std::string& path, TokenizerCompat compat = TokenizerCompat::LlamaCpp);

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

namespace kiln::test {

// A vocabulary of the golden fixtures by its key: ggml-vocab-NAME, model-smollm2,
// model-gemma3, hf-NAME (decompressed once from tests/golden/tokenizer/vocabs).
// Empty when it is not available here; `why` then says what is missing.
std::string fixture_vocab_path(const std::string& key, std::string& why);

// Bytes of a corpus entry by id (tests/golden/tokenizer/corpus.json).
const std::string& corpus_text(const std::string& id);

// Keys of the JSON files in tests/golden/tokenizer/<dir> (without .json).
std::vector<std::string> golden_keys(const std::string& dir);

}  // namespace kiln::test
