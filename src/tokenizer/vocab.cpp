#include "tokenizer/vocab.h"

#include <algorithm>
#include <cstdlib>
#include <limits>

#include "kiln/error.h"
#include "kiln/gguf/file.h"
#include "tokenizer/unicode.h"

namespace kiln::tok {

namespace {

constexpr std::string_view k_space_marker = "\xE2\x96\x81";  // U+2581, SentencePiece's escaped space

[[noreturn]] void fail(const Vocab& v, const std::string& what) { throw Error(v.path + ": " + what); }

std::string lowercase_ascii(std::string s) {
    for (char& c : s)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return s;
}

bool contains_any(const std::string& s, std::initializer_list<std::string_view> parts) {
    for (std::string_view p : parts)
        if (s.find(p) != std::string::npos) return true;
    return false;
}

bool in_list(std::string_view s, std::initializer_list<std::string_view> list) {
    return std::find(list.begin(), list.end(), s) != list.end();
}

// Token ids are stored as u32; a negative signed value means "none".
std::optional<uint64_t> read_id(const gguf::Metadata& md, std::string_view key) {
    const gguf::Value* v = md.find(key);
    if (!v) return std::nullopt;
    if (!v->is_integer()) gguf::Metadata::type_error(key, "an integer token id", *v);
    if (v->type() == gguf::ValueType::I8 || v->type() == gguf::ValueType::I16 || v->type() == gguf::ValueType::I32 ||
        v->type() == gguf::ValueType::I64) {
        if (v->raw_i64() < 0) return std::nullopt;
    }
    return v->raw_u64();
}

uint16_t attr_of_type(int32_t type) {
    switch (type) {
        case 1: return attr::k_normal;
        case 2: return attr::k_unknown;
        case 3: return attr::k_control;
        case 4: return attr::k_user_defined;
        case 5: return attr::k_unused;
        case 6: return attr::k_byte;
        default: return 0;  // undefined
    }
}

void replace_all(std::string& s, std::string_view from, std::string_view to) {
    if (s.find(from) == std::string::npos) return;
    std::string out;
    out.reserve(s.size());
    size_t pos = 0;
    for (size_t hit; (hit = s.find(from, pos)) != std::string::npos; pos = hit + from.size()) {
        out.append(s, pos, hit - pos);
        out.append(to);
    }
    out.append(s, pos, std::string::npos);
    s = std::move(out);
}

// Byte-level BPE token text back to bytes. A codepoint outside the GPT-2 alphabet
// is kept visible, the way llama.cpp marks it.
std::string decode_gpt2_text(std::string_view text) {
    std::string out;
    size_t pos = 0;
    while (pos < text.size()) {
        uint32_t cp = decode_utf8(text, pos);
        int b = gpt2_codepoint_to_byte(cp);
        if (b >= 0) {
            out.push_back(static_cast<char>(b));
            continue;
        }
        std::string utf8;
        append_utf8(utf8, cp);
        out += "[UNK_BYTE_0x";
        static const char* hex = "0123456789abcdef";
        for (unsigned char c : utf8) {
            out.push_back(hex[c >> 4]);
            out.push_back(hex[c & 15]);
        }
        out.append(text);
        out.push_back(']');
    }
    return out;
}

// <0xHH> -> HH, read like strtol on the two characters after "<0x".
bool parse_byte_token(std::string_view text, uint8_t& out) {
    if (text.size() < 5) return false;
    char buf[3] = {text[3], text[4], 0};
    out = static_cast<uint8_t>(std::strtol(buf, nullptr, 16));
    return true;
}

void compute_pieces(Vocab& v) {
    v.pieces.resize(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
        const uint16_t a = v.attrs[i];
        const std::string& text = v.texts[i];
        std::string& piece = v.pieces[i];
        if (a & (attr::k_unknown | attr::k_control | attr::k_user_defined)) {
            piece = text;
        } else if (a & attr::k_normal) {
            if (v.scheme == Scheme::Bpe && !v.escape_whitespaces) {
                piece = decode_gpt2_text(text);
            } else {
                piece = text;
                replace_all(piece, k_space_marker, " ");
            }
        } else if (a & attr::k_byte) {
            uint8_t b = 0;
            if (v.scheme == Scheme::Wpm || !parse_byte_token(text, b))
                fail(v, "token " + std::to_string(i) + " has type byte but its text '" + text + "' is not <0xHH>");
            piece.assign(1, static_cast<char>(b));
        }
        // unused / undefined tokens decode to nothing
    }
}

}  // namespace

TokenId Vocab::byte_token(uint8_t b) const {
    static const char* hex = "0123456789ABCDEF";
    const char buf[6] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
    TokenId id = find(std::string_view(buf, 6));
    if (id >= 0) return id;
    const char one = static_cast<char>(b);
    return find(std::string_view(&one, 1));
}

TokenType token_type_of(uint16_t a) {
    if (a & attr::k_unused) return TokenType::Unused;
    if (a & attr::k_unknown) return TokenType::Unknown;
    if (a & attr::k_control) return TokenType::Control;
    if (a & attr::k_user_defined) return TokenType::UserDefined;
    if (a & attr::k_byte) return TokenType::Byte;
    if (a & attr::k_normal) return TokenType::Normal;
    return TokenType::Undefined;
}

Vocab load_vocab(const gguf::File& file, TokenizerCompat compat) {
    Vocab v;
    v.path = file.path();
    v.hugging_face = compat == TokenizerCompat::HuggingFace;
    std::vector<uint16_t> stored_attrs;  // types as the file stores them
    const gguf::Metadata& md = file.metadata();
    try {
        if (!md.has("tokenizer.ggml.model"))
            fail(v, "GGUF metadata 'tokenizer.ggml.model' is missing (the file has no tokenizer)");
        v.model = md.get_string("tokenizer.ggml.model");
        v.pre = md.find_string("tokenizer.ggml.pre").value_or("");

        // Scheme and its default special ids (before the metadata names its own).
        SpecialTokens& sp = v.special;
        bool need_merges = false;
        if (v.model == "llama") {
            v.scheme = Scheme::Spm;
            sp.bos = 1, sp.eos = 2, sp.unk = 0;
        } else if (v.model == "bert") {
            v.scheme = Scheme::Wpm;
            sp.bos = 101, sp.unk = 100, sp.sep = 102, sp.pad = 0, sp.mask = 103;
            v.add_sep = true;
        } else if (v.model == "gpt2") {
            v.scheme = Scheme::Bpe;
            sp.bos = 11, sp.eos = 11;
            need_merges = v.pre != "kimi-k2";  // Kimi-K2 splits without merges
        } else if (v.model == "gemma4") {
            v.scheme = Scheme::Bpe;
            need_merges = true;
            v.pre = "gemma4";
        } else if (v.model == "t5") {
            v.scheme = Scheme::Ugm;
            sp.eos = 1, sp.unk = 2, sp.pad = 0;
        } else {
            fail(v, "unsupported tokenizer model '" + v.model + "'");
        }

        if (need_merges || (v.scheme == Scheme::Bpe && md.has("tokenizer.ggml.merges"))) {
            if (!md.has("tokenizer.ggml.merges")) fail(v, "GGUF metadata 'tokenizer.ggml.merges' is missing");
            v.merges = file.read_strings("tokenizer.ggml.merges");
        }

        switch (v.scheme) {
            case Scheme::Bpe: {
                if (v.pre.empty()) v.pre = "default";
                v.pre_spec = find_pre_tokenizer(v.pre);
                if (!v.pre_spec) fail(v, "unsupported pre-tokenizer '" + v.pre + "'");
                const PreTokenizerSpec& ps = *v.pre_spec;
                v.add_space_prefix = false;
                v.escape_whitespaces = ps.escape_whitespace;
                v.clean_spaces = ps.clean_spaces;
                v.ignore_merges = ps.ignore_merges;
                v.byte_encode = ps.byte_encode;
                v.add_bos = ps.add_bos;
                v.add_sep = ps.add_sep;
                v.lowercase = ps.lowercase;
                if (ps.no_bos) sp.bos = k_no_token;
                break;
            }
            case Scheme::Spm:
                v.add_space_prefix = true;
                v.add_bos = true;
                break;
            case Scheme::Wpm:
                v.clean_spaces = true;
                v.add_bos = true;
                v.add_sep = true;
                break;
            case Scheme::Ugm:
                v.add_eos = true;
                break;
        }
        if (v.pre.empty()) v.pre = "default";
        v.add_space_prefix = md.find_bool("tokenizer.ggml.add_space_prefix").value_or(v.add_space_prefix);
        v.remove_extra_whitespaces =
            md.find_bool("tokenizer.ggml.remove_extra_whitespaces").value_or(v.remove_extra_whitespaces);

        // Tokens, scores, types.
        if (!md.has("tokenizer.ggml.tokens")) fail(v, "GGUF metadata 'tokenizer.ggml.tokens' is missing");
        v.texts = file.read_strings("tokenizer.ggml.tokens");
        const size_t n = v.texts.size();
        if (n == 0) fail(v, "GGUF metadata 'tokenizer.ggml.tokens' is empty");
        if (n > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
            fail(v, "GGUF metadata 'tokenizer.ggml.tokens' has too many entries");

        v.scores.assign(n, 0.0f);
        if (const gguf::Value* s = md.find("tokenizer.ggml.scores")) {
            if (s->type() != gguf::ValueType::Array ||
                (s->elem_type() != gguf::ValueType::F32 && s->elem_type() != gguf::ValueType::I32))
                gguf::Metadata::type_error("tokenizer.ggml.scores", "array[f32] or array[i32]", *s);
            if (s->count() < n)
                fail(v, "GGUF metadata 'tokenizer.ggml.scores': " + std::to_string(s->count()) + " entries for " +
                            std::to_string(n) + " tokens");
            if (s->elem_type() == gguf::ValueType::F32) {
                std::vector<float> f = file.read_f32s("tokenizer.ggml.scores");
                std::copy_n(f.begin(), n, v.scores.begin());
            } else {
                std::vector<int32_t> f = file.read_i32s("tokenizer.ggml.scores");
                for (size_t i = 0; i < n; ++i) v.scores[i] = static_cast<float>(f[i]);
            }
        }
        v.attrs.assign(n, attr::k_normal);
        if (const gguf::Value* t = md.find("tokenizer.ggml.token_type")) {
            if (t->type() != gguf::ValueType::Array || t->elem_type() != gguf::ValueType::I32)
                gguf::Metadata::type_error("tokenizer.ggml.token_type", "array[i32]", *t);
            if (t->count() < n)
                fail(v, "GGUF metadata 'tokenizer.ggml.token_type': " + std::to_string(t->count()) +
                            " entries for " + std::to_string(n) + " tokens");
            std::vector<int32_t> types = file.read_i32s("tokenizer.ggml.token_type");
            for (size_t i = 0; i < n; ++i) v.attrs[i] = attr_of_type(types[i]);
        }
        stored_attrs = v.attrs;
        // Qwen's tokenizer.json normalizes to NFC; llama.cpp does not.
        v.nfc = v.hugging_face && v.scheme == Scheme::Bpe && in_list(v.pre, {"qwen2", "deepseek-r1-qwen", "qwen35"});
        v.text_to_id.reserve(n);
        for (size_t i = 0; i < n; ++i) {
            if (v.texts[i].empty()) v.texts[i] = "[EMPTY_" + std::to_string(i) + "]";
            v.max_token_len = std::max(v.max_token_len, v.texts[i].size());
        }
        // After the loop above: the map views the strings, which no longer move.
        for (size_t i = 0; i < n; ++i) v.text_to_id.put(v.texts[i], static_cast<TokenId>(i));

        if (v.scheme == Scheme::Ugm) {
            if (const gguf::Value* cm = md.find("tokenizer.ggml.precompiled_charsmap")) {
                if (cm->type() != gguf::ValueType::Array ||
                    (cm->elem_type() != gguf::ValueType::U8 && cm->elem_type() != gguf::ValueType::I8))
                    gguf::Metadata::type_error("tokenizer.ggml.precompiled_charsmap", "array[u8]", *cm);
                for (const gguf::Value& b : file.read_array(*cm))
                    v.precompiled_charsmap.push_back(static_cast<uint8_t>(b.raw_u64()));
            }
        }

        // Special ids named by the metadata (a value outside the vocabulary keeps the default).
        struct IdKey {
            const char* key;
            TokenId* id;
        };
        const IdKey id_keys[] = {
            {"tokenizer.ggml.bos_token_id", &sp.bos},       {"tokenizer.ggml.eos_token_id", &sp.eos},
            {"tokenizer.ggml.eot_token_id", &sp.eot},       {"tokenizer.ggml.eom_token_id", &sp.eom},
            {"tokenizer.ggml.unknown_token_id", &sp.unk},   {"tokenizer.ggml.seperator_token_id", &sp.sep},
            {"tokenizer.ggml.padding_token_id", &sp.pad},   {"tokenizer.ggml.mask_token_id", &sp.mask},
            {"tokenizer.ggml.fim_pre_token_id", &sp.fim_pre}, {"tokenizer.ggml.fim_suf_token_id", &sp.fim_suf},
            {"tokenizer.ggml.fim_mid_token_id", &sp.fim_mid}, {"tokenizer.ggml.fim_pad_token_id", &sp.fim_pad},
            {"tokenizer.ggml.fim_rep_token_id", &sp.fim_rep}, {"tokenizer.ggml.fim_sep_token_id", &sp.fim_sep},
            // older names of the first three FIM keys
            {"tokenizer.ggml.prefix_token_id", &sp.fim_pre}, {"tokenizer.ggml.suffix_token_id", &sp.fim_suf},
            {"tokenizer.ggml.middle_token_id", &sp.fim_mid},
        };
        for (const IdKey& k : id_keys) {
            if (*k.id >= 0 && static_cast<size_t>(*k.id) >= n) *k.id = k_no_token;
            if (auto id = read_id(md, k.key); id && *id < n) *k.id = static_cast<TokenId>(*id);
        }
        v.add_bos = md.find_bool("tokenizer.ggml.add_bos_token").value_or(v.add_bos);
        v.add_eos = md.find_bool("tokenizer.ggml.add_eos_token").value_or(v.add_eos);
        v.add_sep = md.find_bool("tokenizer.ggml.add_sep_token").value_or(v.add_sep);
        if (v.pre == "gemma4" || v.pre == "granite-embed-multi-311m") v.add_bos = true;  // as llama.cpp: Gemma 4 always starts with BOS
        v.lowercase = md.find_bool("tokenizer.ggml.normalizer.lowercase").value_or(v.lowercase);
        v.strip_accents = md.find_bool("tokenizer.ggml.normalizer.strip_accents").value_or(v.lowercase);
    } catch (const Error& e) {
        std::string msg = e.what();
        if (msg.rfind(v.path, 0) == 0) throw;
        throw Error(v.path + ": " + msg);
    }

    const size_t n = v.size();
    SpecialTokens& sp = v.special;
    // Ids whose text maps back to them (one per distinct text), as llama.cpp
    // walks its text -> id map.
    std::vector<uint8_t> canonical(n);
    for (size_t i = 0; i < n; ++i) canonical[i] = v.text_to_id.get(v.texts[i]) == static_cast<TokenId>(i);
    auto for_each_text = [&](auto&& fn) {
        for (size_t i = 0; i < n; ++i)
            if (canonical[i]) fn(static_cast<TokenId>(i), v.texts[i]);
    };
    // Every text the lists below recognise starts with one of these bytes.
    auto maybe_listed = [](const std::string& t) {
        return !t.empty() && (t[0] == '<' || t[0] == '[' || t[0] == '_' || t[0] == '\xE2');
    };
    auto promote = [&](TokenId id) { v.attrs[static_cast<size_t>(id)] |= attr::k_control; };

    // Special tokens the converters do not always name, recognised by their text
    // (llama.cpp's list). A token found this way is treated as control.
    struct Detect {
        TokenId* id;
        std::initializer_list<std::string_view> texts;
    };
    const Detect detect[] = {
        {&sp.eot, {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>", "<EOT>",
                   "_<EOT>", "[EOT]", "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>", "<end_of_utterance>"}},
        {&sp.eom, {"<|eom_id|>"}},
        {&sp.fim_pre, {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "begin\xEF\xBD\x9C>",
                       "<PRE>", "\xE2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>"}},
        {&sp.fim_suf, {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<\xEF\xBD\x9C" "fim\xE2\x96\x81hole\xEF\xBD\x9C>",
                       "<SUF>", "\xE2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>"}},
        {&sp.fim_mid, {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "end\xEF\xBD\x9C>",
                       "<MID>", "\xE2\x96\x81<MID>", "<|code_middle|>", "<|middle|>"}},
        {&sp.fim_pad, {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"}},
        {&sp.fim_rep, {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"}},
        {&sp.fim_sep, {"<|file_sep|>"}},
    };
    for (const Detect& d : detect) {
        if (*d.id != k_no_token) continue;
        for_each_text([&](TokenId id, const std::string& text) {
            if (*d.id == k_no_token && maybe_listed(text) && in_list(text, d.texts)) {
                *d.id = id;
                promote(id);
            }
        });
    }
    // Control tokens named "unused" are unused.
    for_each_text([&](TokenId id, const std::string& text) {
        uint16_t& a = v.attrs[static_cast<size_t>(id)];
        if ((a & attr::k_control) && text.find("unused") != std::string::npos) a |= attr::k_unused;
    });

    // End of generation.
    std::vector<TokenId> eog;
    for (TokenId id : {sp.fim_pad, sp.fim_rep, sp.fim_sep})
        if (id != k_no_token) eog.push_back(id);
    for_each_text([&](TokenId id, const std::string& text) {
        if (maybe_listed(text) && in_list(text, {"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
                           "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
                           "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
                           "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>", "[e~["})) {
            eog.push_back(id);
            promote(id);
        }
    });
    // gpt-oss (harmony) markers are always rendered.
    for_each_text([&](TokenId id, const std::string& text) {
        if (maybe_listed(text) && in_list(text, {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"}))
            v.attrs[static_cast<size_t>(id)] = attr::k_user_defined;
    });
    for (TokenId id : {sp.eos, sp.eot, sp.eom})
        if (id != k_no_token) eog.push_back(id);
    std::sort(eog.begin(), eog.end());
    eog.erase(std::unique(eog.begin(), eog.end()), eog.end());
    auto eog_with_text = [&](std::string_view text) -> TokenId {
        for (TokenId id : eog)
            if (v.texts[static_cast<size_t>(id)] == text) return id;
        return k_no_token;
    };
    // Harmony and Solar Open end a message with <|end|> but keep generating
    // (<|return|> / <|call|> end the turn): <|end|> is then not an end.
    {
        TokenId end = eog_with_text("<|end|>");
        bool has_return = eog_with_text("<|return|>") != k_no_token;
        bool has_call = eog_with_text("<|call|>") != k_no_token || eog_with_text("<|calls|>") != k_no_token;
        bool has_flush = eog_with_text("<|flush|>") != k_no_token;
        if (end != k_no_token && ((has_return && has_call) || (has_call && has_flush))) {
            eog.erase(std::find(eog.begin(), eog.end(), end));
            v.attrs[static_cast<size_t>(end)] = attr::k_user_defined;
        }
    }
    // Gemma 4 and PLaMo have an ordinary </s>.
    {
        TokenId s = eog_with_text("</s>");
        if (s != k_no_token &&
            (eog_with_text("<|tool_response>") != k_no_token || eog_with_text("<|plamo:eos|>") != k_no_token)) {
            eog.erase(std::find(eog.begin(), eog.end(), s));
            v.attrs[static_cast<size_t>(s)] = attr::k_normal;
        }
    }
    v.eog_ids = std::move(eog);
    // Hugging Face cuts out exactly the added tokens, which the converter stored as
    // control / user-defined: no promotion by text there.
    if (v.hugging_face) v.attrs = stored_attrs;

    // Special tokens are cut out of the text longest first. std::sort (not stable)
    // on ascending ids with this comparator gives the same order as llama.cpp's
    // build with the same standard library, ties included.
    for (size_t i = 0; i < n; ++i)
        if (v.attrs[i] & (attr::k_control | attr::k_user_defined | attr::k_unknown))
            v.special_order.push_back(static_cast<TokenId>(i));
    std::sort(v.special_order.begin(), v.special_order.end(), [&](TokenId a, TokenId b) {
        return v.texts[static_cast<size_t>(a)].size() > v.texts[static_cast<size_t>(b)].size();
    });

    compute_pieces(v);

    // Strip attributes that GGUF does not carry, set as llama.cpp sets them for the
    // families whose Hugging Face tokenizers declare them (lstrip / rstrip).
    {
        const gguf::Metadata& md2 = file.metadata();
        std::string name = lowercase_ascii(md2.find_string("general.name").value_or(""));
        std::string arch = md2.find_string("general.architecture").value_or("");
        std::string pre = md2.find_string("tokenizer.ggml.pre").value_or("");
        auto set = [&](std::string_view text, uint16_t bit, bool on) {
            TokenId id = v.find(text);
            if (id < 0) return;
            uint16_t& a = v.attrs[static_cast<size_t>(id)];
            a = on ? (a | bit) : (a & ~bit);
        };
        if (contains_any(pre, {"jina-v2-de", "jina-v2-es", "jina-v2-code"}) ||
            contains_any(arch, {"nomic-bert-moe", "jina-bert-v3"})) {
            set("<mask>", attr::k_lstrip, true);
        } else if (contains_any(name, {"phi-3", "phi3"})) {
            for (TokenId id : v.special_order) v.attrs[static_cast<size_t>(id)] |= attr::k_rstrip;
            set("</s>", attr::k_rstrip, true);
            for (std::string_view t : {"<unk>", "<s>", "<|endoftext|>"}) set(t, attr::k_rstrip, false);
        } else if (contains_any(name, {"modern-bert"})) {
            set("[MASK]", attr::k_lstrip, true);
        }
    }
    return v;
}

}  // namespace kiln::tok
