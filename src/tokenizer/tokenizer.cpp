#include "kiln/tokenizer.h"

#include <algorithm>

#include "kiln/error.h"
#include "kiln/gguf/file.h"
#include "tokenizer/tokenizer_impl.h"

namespace kiln {

using namespace tok;

namespace {

// llama.cpp's clean-up of detokenized text (clean_up_tokenization_spaces): three
// in-place passes, kept in its exact form because the passes read characters the
// earlier steps may have rewritten.
void clean_up_spaces(std::string& text) {
    auto pass = [&](auto&& step) {
        const size_t total_in = text.size();
        size_t total = total_in ? 1 : 0;
        for (size_t i = 1; i < total_in; ++i) step(i, total, total_in);
        text.resize(total);
    };
    // " ?", " !", " .", " ," lose the space.
    pass([&](size_t& i, size_t& total, size_t) {
        const char x = text[i];
        if (text[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) --total;
        text[total++] = x;
    });
    // " ' " becomes "'".
    pass([&](size_t& i, size_t& total, size_t total_in) {
        const char x = text[i];
        if (x == '\'' && i + 1 < total_in && text[i - 1] == ' ' && text[i + 1] == ' ') {
            --total;
            text[++i] = '\0';
        }
        text[total++] = x;
    });
    // " 's", " 'm", " 're", " 've" lose the space (" 't", " 'd", " 'll" keep it).
    pass([&](size_t& i, size_t& total, size_t total_in) {
        const char x = text[i];
        if (text[i - 1] == ' ' && x == '\'' && i + 1 < total_in) {
            const char x1 = text[i + 1];
            if (x1 == 's' || x1 == 'm') {
                --total;
            } else if (x1 != 't' && x1 != 'd' && i + 2 < total_in) {
                const char x2 = text[i + 2];
                if ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) --total;
            }
        }
        text[total++] = x;
    });
}

}  // namespace

Tokenizer Tokenizer::from_gguf(const gguf::File& file, const TokenizerLoadOptions& options) {
    auto impl = std::make_shared<Impl>();
    impl->vocab = load_vocab(file, options.compat);
    Vocab& v = impl->vocab;
    if (options.require_end_of_generation && v.eog_ids.empty())
        throw Error(v.path +
                    ": the tokenizer has no end-of-generation token (no eos/eot/eom id in tokenizer.ggml.* and "
                    "none of <|eot_id|>, <|im_end|>, <|end|>, <end_of_turn>, <|endoftext|>, </s>, ... in the "
                    "vocabulary); a generating model needs one");
    impl->special.build(v);
    switch (v.scheme) {
        case Scheme::Bpe: impl->bpe.build(v); break;
        case Scheme::Wpm: impl->wpm.build(v); break;
        case Scheme::Ugm: impl->ugm.build(v); break;
        case Scheme::Spm: break;
    }
    return Tokenizer(std::move(impl));
}

Tokenizer Tokenizer::load(const std::string& path, const TokenizerLoadOptions& options) {
    gguf::File file = gguf::File::open(path);
    return from_gguf(file, options);
}

std::vector<TokenId> Tokenizer::encode(std::string_view text, const EncodeOptions& options) const {
    std::vector<TokenId> out;
    encode(text, out, options);
    return out;
}

void Tokenizer::Impl::encode(std::string_view text, std::vector<TokenId>& out, const EncodeOptions& options) const {
    const Vocab& v = vocab;
    if (text.size() > UINT32_MAX / 4) throw Error("tokenizer: text of " + std::to_string(text.size()) + " bytes is too long");
    thread_local std::vector<Fragment> fragments;
    special.split(text, options.parse_special, fragments);

    const size_t start = out.size();
    bool add_first = false, add_last = false;
    TokenId first = k_no_token, last = k_no_token;
    if (options.add_special) {
        if (v.scheme == Scheme::Wpm) {
            // BERT frames every input with [CLS] ... [SEP].
            first = v.special.bos, last = v.special.sep;
            add_first = add_last = true;
        } else {
            first = v.special.bos, last = v.special.eos;
            add_first = v.add_bos;
            add_last = v.add_eos;
        }
    }

    thread_local std::string spm_text;
    bool prev_special = true;  // SentencePiece: a text run after a special token gets the space prefix
    for (const Fragment& f : fragments) {
        if (f.token != k_no_token) {
            out.push_back(f.token);
            prev_special = true;
            continue;
        }
        std::string_view raw = text.substr(f.offset, f.length);
        switch (v.scheme) {
            case Scheme::Spm: {
                spm_text.clear();
                if (v.add_space_prefix && prev_special) spm_text += "\xE2\x96\x81";
                for (char c : raw) {
                    if (c == ' ') spm_text += "\xE2\x96\x81";
                    else spm_text.push_back(c);
                }
                spm_tokenize(v, spm_text, out);
                break;
            }
            case Scheme::Bpe: bpe.tokenize(raw, out); break;
            case Scheme::Wpm: wpm.tokenize(raw, out); break;
            case Scheme::Ugm: ugm.tokenize(raw, out); break;
        }
        prev_special = false;
    }

    // BOS / EOS as the metadata says, but never twice: a text that already starts
    // with BOS (a rendered chat template) keeps just that one.
    if (add_first && first != k_no_token && (out.size() == start || out[start] != first))
        out.insert(out.begin() + static_cast<ptrdiff_t>(start), first);
    if (add_last && last != k_no_token && (out.size() == start || out.back() != last)) out.push_back(last);
}

void Tokenizer::encode(std::string_view text, std::vector<TokenId>& out, const EncodeOptions& options) const {
    impl_->encode(text, out, options);
}

std::string_view Tokenizer::Impl::piece(TokenId id, bool show_special) const {
    if (!show_special && vocab.has(attr::k_control | attr::k_unknown, id)) return {};
    return vocab.pieces[static_cast<size_t>(id)];
}

std::string Tokenizer::decode(std::span<const TokenId> ids, const DecodeOptions& options) const {
    const Impl& im = *impl_;
    const Vocab& v = im.vocab;
    for (TokenId id : ids)
        if (id < 0 || static_cast<size_t>(id) >= v.size())
            throw Error("token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                        std::to_string(v.size() - 1) + ")");
    bool strip_space = v.add_space_prefix;  // the space SentencePiece put in front of the text
    if (options.remove_special && v.add_bos && !ids.empty() && ids.front() == v.special.bos) {
        strip_space = false;
        ids = ids.subspan(1);
    }
    if (options.remove_special && v.add_eos && !ids.empty() && ids.back() == v.special.eos)
        ids = ids.subspan(0, ids.size() - 1);
    std::string text;
    for (TokenId id : ids) {
        std::string_view p = im.piece(id, options.show_special);
        if (strip_space && !p.empty() && p.front() == ' ') p.remove_prefix(1);
        strip_space = false;
        text.append(p);
    }
    if (v.clean_spaces && options.clean_up_spaces) clean_up_spaces(text);
    return text;
}

std::string_view Tokenizer::token_piece(TokenId id, bool show_special) const {
    if (id < 0 || static_cast<size_t>(id) >= n_vocab()) throw Error("token id " + std::to_string(id) + " is outside the vocabulary");
    return impl_->piece(id, show_special);
}

size_t Tokenizer::n_vocab() const { return impl_->vocab.size(); }

std::string_view Tokenizer::token_text(TokenId id) const {
    if (id < 0 || static_cast<size_t>(id) >= n_vocab()) throw Error("token id " + std::to_string(id) + " is outside the vocabulary");
    return impl_->vocab.texts[static_cast<size_t>(id)];
}

float Tokenizer::token_score(TokenId id) const {
    if (id < 0 || static_cast<size_t>(id) >= n_vocab()) throw Error("token id " + std::to_string(id) + " is outside the vocabulary");
    return impl_->vocab.scores[static_cast<size_t>(id)];
}

TokenType Tokenizer::token_type(TokenId id) const {
    if (id < 0 || static_cast<size_t>(id) >= n_vocab()) throw Error("token id " + std::to_string(id) + " is outside the vocabulary");
    return token_type_of(impl_->vocab.attrs[static_cast<size_t>(id)]);
}

bool Tokenizer::is_control(TokenId id) const {
    return id >= 0 && static_cast<size_t>(id) < n_vocab() && impl_->vocab.has(attr::k_control | attr::k_unknown, id);
}

TokenId Tokenizer::find_token(std::string_view text) const { return impl_->vocab.find(text); }

TokenizerScheme Tokenizer::scheme() const {
    switch (impl_->vocab.scheme) {
        case Scheme::Spm: return TokenizerScheme::SentencePiece;
        case Scheme::Bpe: return TokenizerScheme::BytePairEncoding;
        case Scheme::Wpm: return TokenizerScheme::WordPiece;
        case Scheme::Ugm: return TokenizerScheme::Unigram;
    }
    return TokenizerScheme::SentencePiece;
}

const std::string& Tokenizer::model_name() const { return impl_->vocab.model; }
const std::string& Tokenizer::pre_name() const { return impl_->vocab.pre; }
const SpecialTokens& Tokenizer::special() const { return impl_->vocab.special; }
bool Tokenizer::add_bos() const { return impl_->vocab.add_bos; }
bool Tokenizer::add_eos() const { return impl_->vocab.add_eos; }

bool Tokenizer::is_end_of_generation(TokenId id) const {
    const auto& e = impl_->vocab.eog_ids;
    return std::binary_search(e.begin(), e.end(), id);
}

std::span<const TokenId> Tokenizer::end_of_generation_ids() const { return impl_->vocab.eog_ids; }

}  // namespace kiln
