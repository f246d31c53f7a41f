// Tiny random encoder models (embeddings, reranking), written by kiln's GGUF
// writer with a fixed seed and a real WordPiece vocabulary copied in, with the
// tensor names and keys llama.cpp's converter writes. llama.cpp's pooled
// embeddings for them are committed (tools/tiny_embedding_fixtures.py) and
// compared in tests/engine/test_embedding.cpp. The decoder-based ones
// (qwen3_embed, llama-embed, qwen3_rerank, gemma-embedding) are tiny decoders of tiny_models.h
// rewritten with the embedding file's architecture and keys.
#pragma once

#include <string>
#include <vector>

namespace kiln::test {

struct TinyEncoderInfo {
    std::string name;         // "bert", "bert_rank"
    std::string description;  // what it exercises
    std::string vocab;        // the llama.cpp vocab-only file it copies: "bert-bge" (WordPiece), "nomic-bert-moe" (XLM-R Unigram), "qwen2", "llama-bpe"
};

// The test encoders; write_tiny_encoder also writes the speed table's
// bench_bert_base and bench_nomic_embed shapes, which are not listed.
std::vector<TinyEncoderInfo> tiny_encoders();

// Writes tiny encoder `name` to `path`, with the vocabulary of the GGUF at
// `vocab_source` (a vocab-only file: tiny_encoder_vocab(name)).
void write_tiny_encoder(const std::string& name, const std::string& vocab_source, const std::string& path);

// Where tiny encoder `name`'s vocabulary is: ggml-vocab-bert-bge.gguf in the
// shared test data, ggml-vocab-nomic-bert-moe.gguf in $KILN_VOCABS (default
// ~/.cache/kiln/vocabs, filled by tools/fetch_llamacpp_vocabs.sh).
std::string tiny_encoder_vocab(const std::string& name);

// The texts every tiny encoder is evaluated on (different lengths).
std::vector<std::string> tiny_encoder_texts();

}  // namespace kiln::test
