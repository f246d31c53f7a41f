#include "tokenizer/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 32
#include <pcre2.h>

#include "kiln/error.h"
#include "tokenizer/splitters.h"
#include "tokenizer/unicode.h"

namespace kiln::tok {

namespace {

// The expressions come from the models' tokenizer.json files, in the forms
// llama.cpp runs them: (?i:...) spelled out as character pairs and possessive
// quantifiers made greedy, because its regex engine (ECMAScript) has neither.
// Tekken and gpt-4o express \p{Lu}/\p{Ll} through [^a-z]/[^A-Z] lookaheads for
// the same reason; the pieces follow that form, not the original.
constexpr const char* k_gpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr const char* k_llama3 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* k_qwen2 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* k_qwen35 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* k_jais2 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s{512}(?!\S)|\s{256}(?!\S)|\s{128}(?!\S)|\s{64}(?!\S)|\s{32}(?!\S)|\s{16}(?!\S)|\s{8}(?!\S)|\s{4}(?!\S)|\s{1,2}(?!\S)|\s{1})";
constexpr const char* k_deepseek_llm_letters =
    "\\s?[A-Za-z\u00B5\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u01BA\u01BC-\u01BF\u01C4-\u0293\u0295-\u02AF\u0370-"
    "\u0373\u0376\u0377\u037B-\u037D\u037F\u0386\u0388-\u038A\u038C\u038E-\u03A1\u03A3-\u03F5\u03F7-\u0481"
    "\u048A-\u052F\u0531-\u0556\u10A0-\u10C5\u13A0-\u13F5\u13F8-\u13FD\u1C90-\u1CBA\u1CBD-\u1CBF\u1D00-"
    "\u1D2B\u1D6B-\u1D77\u1D79-\u1D9A\u1E00-\u1F15\u1F18-\u1F1D\u1F20-\u1F45\u1F48-\u1F4D\u1F50-\u1F57\u1F59"
    "\u1F5B\u1F5D\u1F5F-\u1F7D\u1F80-\u1FB4\u1FB6-\u1FBC\u1FBE\u1FC2-\u1FC4\u1FC6-\u1FCC\u1FD0-\u1FD3\u1FD6-"
    "\u1FDB\u1FE0-\u1FEC\u1FF2-\u1FF4\u1FF6-\u1FFC\u2102\u2107\u210A-\u2113\u2115\u2119-\u211D\u2124\u2126"
    "\u2128\u212A-\u212D\u212F-\u2134\u2139\u213C-\u213F\u2145-\u2149\u214E\u2183\u2184\u2C00-\u2C7B\u2C7E-"
    "\u2CE4\u2CEB-\u2CEE\u2CF2\u2CF3\uA640-\uA66D\uA680-\uA69B\uA722-\uA76F\uA771-\uA787\uA78B-\uA78E\uAB70-"
    "\uABBF\uFB00-\uFB06\uFB13-\uFB17\uFF21-\uFF3A\uFF41-\uFF5A\U00010400-\U0001044F\U000104B0-\U000104D3"
    "\U000104D8-\U000104FB\U00010C80-\U00010CB2\U00010CC0-\U00010CF2\U000118A0-\U000118DF\U0001E900-"
    "\U0001E943]+";
constexpr const char* k_deepseek_llm_punct = "\\s?[!-/:-~\uFF01-\uFF0F\uFF1A-\uFF5E\u2018-\u201F\u3000-\u3002]+";
constexpr const char* k_deepseek_cjk = "[\u4E00-\u9FA5\u0800-\u4E00\uAC00-\uD7FF]+";
constexpr const char* k_cjk_kana = "[\u4E00-\u9FA5\u3040-\u309F\u30A0-\u30FF]+";
constexpr const char* k_deepseek_v3 =
    R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* k_spark =
    R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+|[\r\n]|\s+(?!\S)|\s+)";
constexpr const char* k_youtu_cjk =
    "[\uAC00-\uD7A3\u3131-\u318E]+|[\uFF01\u2026\u201C\u201D\u2018\u2019\u2014\uFF1A\uFF1B\uFF0C\u3001-\u303F"
    "\uFE30-\uFE4F]+|[\u3105-\u312F]+|[\u4E00-\u9FA5\u3040-\u309F\u30A0-\u30FF]+";
constexpr const char* k_youtu =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* k_bloom = " ?[^(\\s|.,!?\u2026\u3002\uFF0C\u3001\u0964\u06D4\u060C)]+";
constexpr const char* k_tekken =
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* k_gpt4o =
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// The originals (tokenizer.json) of the two rewritten above, for TokenizerCompat::HuggingFace.
constexpr const char* k_o200k_original =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* k_tekken_original =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* k_granite_multi =
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}\p{M}])([^a-z]))*((?=[\p{L}\p{M}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}\p{M}])([^a-z]))+((?=[\p{L}\p{M}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* k_tiny_aya =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* k_bailing =
    R"('(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)";
constexpr const char* k_seed_coder =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* k_ufakzeka = R"([^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* k_afmoe_cjk =
    "[\u4E00-\u9FFF\u3400-\u4DBF\u8C48-\uFAFF\u3040-\u309F\u30A0-\u30FF\uFF65-\uFF9F\u2F00-\u2FDF\u0E40-\u0E7F"
    "\u0E80-\u0EFF\u1780-\u17FF\u1000-\u109F\uAA60-\uAA7F\uA9E0-\uA9FF\uAC00-\uD7AF\u1100-\u11FF]+";
constexpr const char* k_exaone_moe =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]?|\s*[\r\n]|\s+(?!\S)|\s+)";
constexpr const char* k_minicpm5 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

constexpr StepSpec s_gpt2{StepKind::Gpt2, k_gpt2};
constexpr StepSpec s_llama3{StepKind::Llama3, k_llama3};
constexpr StepSpec s_qwen2{StepKind::Qwen2, k_qwen2};
constexpr StepSpec s_numbers{StepKind::Numbers, R"(\p{N})"};
constexpr StepSpec s_number_runs{StepKind::NumberRuns, R"(\p{N}+)"};
constexpr StepSpec s_number_triples{StepKind::NumberTriples, R"(\p{N}{1,3})"};
constexpr StepSpec s_ascii_triples{StepKind::AsciiTriples, R"([0-9][0-9][0-9])"};
constexpr StepSpec s_punct_runs{StepKind::PunctRuns, R"([\p{P}\$\+<=>\^~\|]+)"};
constexpr StepSpec s_punct_tick_runs{StepKind::PunctTickRuns, R"([\p{P}\$\+<=>\^~\|`]+)"};
constexpr StepSpec s_line_breaks{StepKind::LineBreaks, "[\r\n]"};
constexpr StepSpec s_newlines{StepKind::Newlines, R"([^\n]+|[\n]+)"};
constexpr StepSpec s_digit_groups{StepKind::DigitGroups, R"(\d{1,3}(?=(?:\d{3})*\b))"};
constexpr StepSpec regex(const char* e) { return StepSpec{StepKind::Regex, e}; }
constexpr StepSpec unicode_regex(const char* e) { return StepSpec{StepKind::Regex, e, true}; }

std::vector<PreTokenizerSpec> build_table() {
    std::vector<PreTokenizerSpec> t;
    auto add = [&](const char* family, std::vector<std::string_view> names, std::vector<StepSpec> steps) -> PreTokenizerSpec& {
        PreTokenizerSpec s;
        s.family = family;
        s.names = std::move(names);
        s.steps = std::move(steps);
        t.push_back(std::move(s));
        return t.back();
    };
    // Flags follow llama.cpp's table of names (clean_spaces, ignore_merges,
    // add_bos, ...); the expression lists its tokenizer constructor.
    add("default", {"default"}, {s_punct_runs, s_gpt2, s_number_runs, s_ascii_triples});
    auto& llama3 = add("llama3", {"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0",
                                  "lfm2", "jina-v5-nano"},
                       {s_llama3});
    llama3.ignore_merges = true;
    llama3.add_bos = true;
    add("dbrx", {"dbrx", "smaug-bpe"}, {s_llama3});
    add("jais2", {"jais-2"}, {regex(k_jais2)});
    add("deepseek-llm", {"deepseek-llm"},
        {s_line_breaks, regex(k_deepseek_llm_letters), regex(k_deepseek_llm_punct),
         StepSpec{StepKind::TrailingSpace, R"(\s+$)"}, regex(k_deepseek_cjk), s_number_runs})
        .clean_spaces = false;
    add("deepseek-v3", {"deepseek-v3", "hunyuan-dense", "joyai-llm", "hy_v4"},
        {s_number_triples, regex(k_cjk_kana), regex(k_deepseek_v3)})
        .clean_spaces = false;
    add("spark2_5", {"spark2_5"}, {s_number_triples, regex(k_cjk_kana), regex(k_spark), s_numbers}).clean_spaces =
        false;
    auto& youtu = add("youtu", {"youtu"}, {regex(k_youtu_cjk), regex(k_youtu)});
    youtu.clean_spaces = false;
    youtu.ignore_merges = true;
    add("deepseek-coder", {"deepseek-coder"},
        {s_line_breaks, regex(R"(\s?\p{L}+)"), regex(R"(\s?\p{P}+)"), regex(k_deepseek_cjk), s_numbers})
        .clean_spaces = false;
    add("falcon", {"falcon"}, {s_punct_tick_runs, s_gpt2, s_ascii_triples});
    add("starcoder", {"starcoder", "refact", "codeshell", "exaone", "minerva-7b", "mellum2"}, {s_numbers, s_gpt2});
    add("command-r", {"command-r", "smollm"}, {s_numbers, s_gpt2}).clean_spaces = false;
    add("gpt-2", {"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum",
                  "modern-bert", "exaone4", "mpt", "olmo", "jais"},
        {s_gpt2});
    add("gpt-2 (trillion)", {"trillion", "granite-docling"}, {s_gpt2}).clean_spaces = false;
    add("roberta", {"jina-v1-en", "jina-v2-code", "roberta-bpe"}, {s_gpt2}).add_sep = true;
    auto& gemma4 = add("gemma4", {"gemma4", "granite-embed-multi-311m"}, {s_newlines});
    gemma4.byte_encode = false;
    gemma4.escape_whitespace = true;
    auto& sarvam = add("sarvam-moe", {"sarvam-moe"}, {s_newlines});
    sarvam.byte_encode = false;
    sarvam.escape_whitespace = true;
    sarvam.clean_spaces = false;
    auto& ws = add("whitespace", {"whitespace"}, {regex(R"(\S+)")});
    ws.byte_encode = false;
    ws.lowercase = false;
    add("qwen2", {"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "hunyuan", "solar-open", "grok-2"}, {s_qwen2})
        .clean_spaces = false;
    add("qwen2 (clean spaces)", {"stablelm2", "megrez"}, {s_qwen2});
    add("qwen35", {"qwen35"}, {StepSpec{StepKind::Qwen35, k_qwen35}}).clean_spaces = false;
    add("bloom", {"bloom", "gpt3-finnish"}, {regex(k_bloom)});
    add("poro", {"poro-chat"}, {regex(k_bloom)}).clean_spaces = false;
    auto& chatglm = add("chatglm", {"chatglm-bpe"}, {s_llama3});
    chatglm.no_bos = true;
    auto& glm4 = add("glm4", {"glm4", "glm5"}, {s_llama3});
    glm4.no_bos = true;
    glm4.ignore_merges = true;
    add("viking", {"viking"}, {regex(k_bloom), s_numbers}).clean_spaces = false;
    auto& tekken = add("tekken", {"tekken"}, {regex(k_tekken)});
    tekken.hf_steps = {unicode_regex(k_tekken_original)};
    tekken.clean_spaces = false;
    tekken.ignore_merges = true;
    tekken.add_bos = true;
    auto& chameleon = add("chameleon", {"chameleon"},
                          {regex("<sentinel:[0-9]+>"), regex("(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z"),
                           regex("([\\t\\n]|    |  )"), s_numbers, regex(R"([\p{P}!-/:-@\[-`{-~])"), s_gpt2});
    chameleon.add_bos = true;
    chameleon.clean_spaces = false;
    auto& gpt4o = add("gpt-4o", {"gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"}, {regex(k_gpt4o)});
    gpt4o.clean_spaces = false;
    gpt4o.hf_steps = {unicode_regex(k_o200k_original)};
    auto& granite = add("granite-embed-multi-97m", {"granite-embed-multi-97m"}, {regex(k_granite_multi)});
    granite.clean_spaces = false;
    granite.ignore_merges = true;
    add("tiny_aya", {"tiny_aya", "cohere2moe"}, {s_digit_groups, regex(k_tiny_aya)}).clean_spaces = false;
    add("kimi-k2", {"kimi-k2"}, {StepSpec{StepKind::KimiK2, "[\\p{Han}]+|... (Kimi-K2)"}}).clean_spaces = false;
    add("superbpe", {"superbpe"}, {s_number_runs, StepSpec{StepKind::DigitLookahead, R"((?=(\d{3})+(?!\d)))"}})
        .clean_spaces = false;
    add("bailingmoe", {"bailingmoe", "bailingmoe2", "llada-moe"}, {regex(k_bailing)}).clean_spaces = false;
    add("seed-coder", {"seed-coder"}, {regex(k_seed_coder)}).clean_spaces = false;
    add("ufakzeka", {"ufakzeka"}, {regex(k_ufakzeka)}).clean_spaces = false;
    add("afmoe", {"afmoe"}, {s_digit_groups, regex(k_afmoe_cjk), regex(k_deepseek_v3)}).clean_spaces = false;
    add("laguna", {"laguna"}, {s_newlines, s_qwen2}).clean_spaces = false;
    add("exaone-moe", {"exaone-moe"}, {regex(k_exaone_moe)});
    add("minicpm5", {"minicpm5"}, {s_number_triples, regex(k_minicpm5)}).ignore_merges = true;
    return t;
}

}  // namespace

const std::vector<PreTokenizerSpec>& pre_tokenizer_table() {
    static const std::vector<PreTokenizerSpec> table = build_table();
    return table;
}

const PreTokenizerSpec* find_pre_tokenizer(std::string_view name) {
    for (const auto& row : pre_tokenizer_table())
        for (std::string_view n : row.names)
            if (n == name) return &row;
    return nullptr;
}

// ---------------------------------------------------------------------------
// PCRE2 steps

namespace {

std::u32string utf8_to_u32_pattern(std::string_view s) {
    std::vector<uint32_t> cps;
    decode_utf8(s, cps);
    return std::u32string(cps.begin(), cps.end());
}

// Codes that stand for a non-ASCII codepoint in the collapsed text: one per
// category an expression can name, one for the rest. Any value above 0x7F that
// PCRE2's default tables do not class as space (0x85, 0xA0) would do.
constexpr uint32_t k_code_number = 0xE1, k_code_letter = 0xE2, k_code_punct = 0xE3, k_code_mark = 0xE4,
                   k_code_symbol = 0xE5, k_code_other = 0xE0;
constexpr uint32_t k_code_space = 0x0B;  // \v: \s matches it in every engine

uint32_t collapse(uint32_t cp, uint16_t fl) {
    if (cp < 0x80) return cp;
    if (fl & cpt::k_whitespace) return k_code_space;
    switch (fl & cpt::k_categories) {
        case cpt::k_number: return k_code_number;
        case cpt::k_letter: return k_code_letter;
        case cpt::k_punctuation: return k_code_punct;
        case cpt::k_mark: return k_code_mark;
        case cpt::k_symbol: return k_code_symbol;
        default: return k_code_other;
    }
}

// The class body standing for \p{NAME} in collapsed text: the category's code
// and its ASCII members (taken from the same Unicode table).
bool category_class(std::string_view name, std::u32string& out) {
    uint16_t mask;
    uint32_t code;
    if (name == "N") mask = cpt::k_number, code = k_code_number;
    else if (name == "L" || name == "Lu" || name == "Ll" || name == "Lt" || name == "Lm" || name == "Lo")
        mask = cpt::k_letter, code = k_code_letter;  // case is not kept by the collapsed text
    else if (name == "P") mask = cpt::k_punctuation, code = k_code_punct;
    else if (name == "M") mask = cpt::k_mark, code = k_code_mark;
    else if (name == "S") mask = cpt::k_symbol, code = k_code_symbol;
    else return false;
    out.push_back(code);
    for (uint32_t c = 0; c < 0x80; ++c) {
        if (!(codepoint_flags(c) & mask)) continue;
        // Escape everything that is not alphanumeric so it stays a literal in a class.
        bool alnum = (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
        if (!alnum) out.push_back('\\');
        out.push_back(c);
    }
    return true;
}

bool has_category(std::string_view expr) { return expr.find("\\p{") != std::string_view::npos; }

// \s as Hugging Face's engine reads it: the White_Space property (PCRE2's UCP \s
// leaves out U+0085).
constexpr const char32_t* k_white_space_members =
    UR"(\t-\r \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000})";

std::u32string unicode_expression(std::string_view expr) {
    std::u32string in = utf8_to_u32_pattern(expr), out;
    bool in_class = false;
    for (size_t i = 0; i < in.size(); ++i) {
        char32_t c = in[i];
        if (c == '\\' && i + 1 < in.size()) {
            char32_t e = in[i + 1];
            if (e == 's' || e == 'S') {
                if (in_class && e == 'S') throw Error("pre-tokenizer expression: \\S inside a class is not supported", ErrorKind::Unsupported);
                if (!in_class) out += e == 's' ? U"[" : U"[^";
                out += k_white_space_members;
                if (!in_class) out += U"]";
            } else {
                out.push_back(c);
                out.push_back(e);
            }
            ++i;
            continue;
        }
        if (c == '[' && !in_class) in_class = true;
        else if (c == ']' && in_class) in_class = false;
        out.push_back(c);
    }
    return out;
}

// Expression for the collapsed text: \p{X} becomes [code + ASCII members], or
// just those members inside a bracket class.
std::u32string collapse_expression(std::string_view expr) {
    std::u32string out;
    bool in_class = false;
    for (size_t i = 0; i < expr.size(); ++i) {
        char c = expr[i];
        if (c == '\\' && i + 1 < expr.size()) {
            if (expr[i + 1] == 'p' && i + 2 < expr.size() && expr[i + 2] == '{') {
                size_t close = expr.find('}', i + 3);
                if (close != std::string_view::npos) {
                    std::u32string body;
                    if (category_class(expr.substr(i + 3, close - i - 3), body)) {
                        if (!in_class) out.push_back('[');
                        out += body;
                        if (!in_class) out.push_back(']');
                        i = close;
                        continue;
                    }
                    throw Error("pre-tokenizer expression: unsupported category " +
                                std::string(expr.substr(i, close - i + 1)));
                }
            }
            out.push_back(static_cast<unsigned char>(c));
            out.push_back(static_cast<unsigned char>(expr[i + 1]));
            ++i;
            continue;
        }
        if (c == '[' && !in_class) in_class = true;
        else if (c == ']' && in_class) in_class = false;
        if (static_cast<unsigned char>(c) >= 0x80)
            throw Error("pre-tokenizer expression mixes \\p{..} classes and non-ASCII characters");
        out.push_back(static_cast<unsigned char>(c));
    }
    return out;
}


struct JitStack {
    pcre2_jit_stack* stack = nullptr;
    pcre2_match_context* context = nullptr;
    JitStack() {
        // Matches are short, but a single match can span a long run (a 1 MB word).
        stack = pcre2_jit_stack_create(64 * 1024, 64 * 1024 * 1024, nullptr);
        context = pcre2_match_context_create(nullptr);
        if (stack && context) pcre2_jit_stack_assign(context, nullptr, stack);
    }
    ~JitStack() {
        if (context) pcre2_match_context_free(context);
        if (stack) pcre2_jit_stack_free(stack);
    }
};

pcre2_match_context* thread_match_context() {
    thread_local JitStack js;
    return js.context;
}

}  // namespace

struct PreTokenizer::CompiledRegex {
    enum class Subject { Collapsed, Wide, Unicode };
    pcre2_code* code = nullptr;
    Subject subject = Subject::Wide;
    bool jit = false;

    CompiledRegex(std::string_view expr, bool unicode) {
        std::u32string pattern;
        uint32_t options = PCRE2_DOLLAR_ENDONLY;
        if (unicode) {
            // Real Unicode classes on the codepoints (Hugging Face's reading).
            subject = Subject::Unicode;
            pattern = unicode_expression(expr);
            options |= PCRE2_UTF | PCRE2_UCP;
        } else {
            // Not UTF, not UCP: the code units are codepoints (or collapsed codes)
            // and \s, \d, \w keep their ASCII meaning, as in ECMAScript.
            subject = has_category(expr) ? Subject::Collapsed : Subject::Wide;
            pattern = subject == Subject::Collapsed ? collapse_expression(expr) : utf8_to_u32_pattern(expr);
        }
        int err = 0;
        PCRE2_SIZE offset = 0;
        code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options, &err, &offset,
                             nullptr);
        if (!code) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(err, msg, 256);
            std::string m;
            for (PCRE2_UCHAR* p = msg; *p; ++p) m.push_back(static_cast<char>(*p));
            throw Error("pre-tokenizer expression '" + std::string(expr) + "' does not compile: " + m);
        }
        jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
    }
    ~CompiledRegex() {
        if (code) pcre2_code_free(code);
    }

    // Cuts [begin, end) of subject into matches and gaps, with std::regex_iterator's
    // rules for empty matches (retry non-empty at the same place, else move on).
    void split(const uint32_t* subject, uint32_t begin, uint32_t end, pcre2_match_data* md,
               std::vector<uint32_t>& ends) const {
        const auto* s = reinterpret_cast<PCRE2_SPTR>(subject + begin);
        const PCRE2_SIZE len = end - begin;
        PCRE2_SIZE start = 0, last = 0;
        uint32_t options = 0;
        pcre2_match_context* mc = thread_match_context();
        auto close = [&](PCRE2_SIZE to) {
            if (to > last) ends.push_back(begin + static_cast<uint32_t>(to));
            last = to;
        };
        while (start <= len) {
            // The subject of a UTF expression is checked once when it is built.
            int rc = pcre2_match(code, s, len, start, options | PCRE2_NO_UTF_CHECK, md, mc);
            if (rc == PCRE2_ERROR_NOMATCH) {
                if (options == 0) break;
                // No non-empty match where the empty one was: search on from the next unit.
                options = 0;
                ++start;
                continue;
            }
            if (rc < 0) {
                throw Error("pre-tokenizer expression failed on the input (PCRE2 error " + std::to_string(rc) + ")");
            }
            const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
            close(ov[0]);
            close(ov[1]);
            if (ov[1] == ov[0]) {
                options = PCRE2_NOTEMPTY_ATSTART | PCRE2_ANCHORED;
            } else {
                options = 0;
            }
            start = ov[1];
        }
        close(len);
    }
};

PreTokenizer::PreTokenizer(const PreTokenizerSpec& spec, bool force_regex, bool hugging_face) : spec_(spec) {
    const auto& steps = hugging_face && !spec.hf_steps.empty() ? spec.hf_steps : spec.steps;
    for (const StepSpec& step : steps) {
        StepKind kind = step.kind;
        if (force_regex && kind != StepKind::KimiK2 && kind != StepKind::DigitGroups) kind = StepKind::Regex;
        kinds_.push_back(kind);
        regexes_.push_back(kind == StepKind::Regex ? std::make_unique<CompiledRegex>(step.regex, step.unicode) : nullptr);
    }
}

PreTokenizer::~PreTokenizer() = default;

void PreTokenizer::split(const std::vector<uint32_t>& cps, const std::vector<uint16_t>& flags,
                         std::vector<uint32_t>& bounds) const {
    const uint32_t n = static_cast<uint32_t>(cps.size());
    bounds.clear();
    if (n == 0) return;
    bounds.push_back(n);
    const SplitInput in{cps.data(), flags.data()};

    // The regex subjects, built once per call and only when a step needs them.
    std::vector<uint32_t> collapsed, wide, unicode;
    std::vector<uint32_t> next;
    for (size_t k = 0; k < kinds_.size(); ++k) {
        next.clear();
        next.reserve(bounds.size() * 2);
        const CompiledRegex* re = regexes_[k].get();
        const uint32_t* subject = nullptr;
        if (re) {
            using S = CompiledRegex::Subject;
            std::vector<uint32_t>& v = re->subject == S::Collapsed ? collapsed : re->subject == S::Wide ? wide : unicode;
            if (v.empty()) {
                v.resize(n);
                for (uint32_t i = 0; i < n; ++i) {
                    const uint32_t c = cps[i];
                    switch (re->subject) {
                        case S::Collapsed: v[i] = collapse(c, flags[i]); break;
                        case S::Wide: v[i] = (c > 0x7F && (flags[i] & cpt::k_whitespace)) ? k_code_space : c; break;
                        // UTF-32 must not hold surrogates (lenient decoding lets them through).
                        case S::Unicode: v[i] = (c >= 0xD800 && c <= 0xDFFF) ? k_replacement_char : c; break;
                    }
                }
            }
            subject = v.data();
        }
        // One match block per step, not per piece.
        std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> md(
            re ? pcre2_match_data_create_from_pattern(re->code, nullptr) : nullptr, &pcre2_match_data_free);
        if (re && !md) throw Error("pre-tokenizer: out of memory", ErrorKind::ResourceExhausted);
        uint32_t begin = 0;
        for (uint32_t end : bounds) {
            switch (kinds_[k]) {
                case StepKind::Gpt2: split_gpt2(in, begin, end, next); break;
                case StepKind::Llama3: split_llama3(in, begin, end, 3, next); break;
                case StepKind::Qwen2: split_llama3(in, begin, end, 1, next); break;
                case StepKind::Qwen35: split_qwen35(in, begin, end, next); break;
                case StepKind::KimiK2: split_kimi_k2(in, begin, end, next); break;
                case StepKind::DigitGroups: split_digit_groups(in, begin, end, next); break;
                case StepKind::Newlines: split_newlines(in, begin, end, next); break;
                case StepKind::Numbers: split_class(in, begin, end, ClassKind::Number, 1, 1, next); break;
                case StepKind::NumberRuns: split_class(in, begin, end, ClassKind::Number, 1, UINT32_MAX, next); break;
                case StepKind::NumberTriples: split_class(in, begin, end, ClassKind::Number, 1, 3, next); break;
                case StepKind::AsciiTriples: split_class(in, begin, end, ClassKind::AsciiDigit, 3, 3, next); break;
                case StepKind::PunctRuns:
                    split_class(in, begin, end, ClassKind::PunctSymbols, 1, UINT32_MAX, next);
                    break;
                case StepKind::PunctTickRuns:
                    split_class(in, begin, end, ClassKind::PunctSymbolsTick, 1, UINT32_MAX, next);
                    break;
                case StepKind::LineBreaks: split_class(in, begin, end, ClassKind::LineBreak, 1, 1, next); break;
                case StepKind::TrailingSpace: split_trailing_space(in, begin, end, next); break;
                case StepKind::DigitLookahead: split_digit_lookahead(in, begin, end, next); break;
                case StepKind::Regex: re->split(subject, begin, end, md.get(), next); break;
            }
            begin = end;
        }
        bounds.swap(next);
    }
}

}  // namespace kiln::tok
