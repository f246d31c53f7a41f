"""The tokenizer test corpus (imported by tools/tokenizer_fixtures.py, which
writes it to tests/golden/tokenizer/corpus.json).

Each entry is (id, text) where text is a str, or bytes for input that is not
valid UTF-8. The aim is breadth: code, whitespace runs, CJK, emoji and ZWJ
sequences, combining marks, right-to-left and Indic scripts, Thai, numbers of
every length, special-token strings inside text, invalid UTF-8.
"""

PYTHON_CODE = '''def fib(n: int) -> int:
    """Return the n-th Fibonacci number."""
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


if __name__ == "__main__":
    print([fib(i) for i in range(10)])  # [0, 1, 1, 2, 3, 5, 8, 13, 21, 34]
'''

CPP_CODE = '''#include <vector>
template <typename T>
struct Span { T* data; size_t size; };
int main(int argc, char** argv) {
\tstd::vector<int> v{1, 2, 3};
\tfor (auto& x : v) x <<= 2;   // shift
\treturn v.size() != 3 ? -1 : 0;
}
'''

JSON_TEXT = '{"name": "kiln", "version": [0, 1, 0], "ok": true, "ratio": 0.75, "tags": ["a", "b"], "nested": {"x": null}}'

HTML_TEXT = '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>T&amp;C</title></head>\n<body><p class="x">Hi &lt;there&gt;</p></body></html>'

MIXED_PARAGRAPH = (
    "The quick brown fox jumps over the lazy dog. Le cœur a ses raisons que la raison ne connaît point. "
    "Über den Wolken muss die Freiheit wohl grenzenlos sein. ¿Dónde está la biblioteca? "
    "Съешь же ещё этих мягких французских булок. Η γλώσσα μου έδωσαν ελληνική. "
    "我能吞下玻璃而不伤身体。私はガラスを食べられます。それは私を傷つけません。나는 유리를 먹을 수 있어요. "
    "أنا قادر على أكل الزجاج و هذا لا يؤلمني. אני יכול לאכול זכוכית וזה לא מזיק לי. "
    "मैं काँच खा सकता हूँ और मुझे उससे कोई चोट नहीं पहुंचती. ฉันกินกระจกได้ แต่มันไม่ทำให้ฉันเจ็บ"
)

CORPUS = [
    # --- empty and tiny
    ("empty", ""),
    ("space", " "),
    ("two_spaces", "  "),
    ("tab", "\t"),
    ("newline", "\n"),
    ("a", "a"),
    ("hello", "Hello"),
    ("hello_world", "Hello world"),
    ("hello_world_lead_space", " Hello world"),
    ("hello_world_trailing_space", "Hello world "),
    ("sentence", "Hello, world! How are you today?"),
    # --- whitespace runs
    ("spaces_between", "a  b   c    d     e"),
    ("spaces_run_32", " " * 32 + "x"),
    ("spaces_only_17", " " * 17),
    ("tabs", "\t\tindented\t\ttabs\t"),
    ("newlines", "line1\nline2\n\nline4\n\n\n\nline8"),
    ("crlf", "windows\r\nline\r\n\r\nend"),
    ("mixed_ws", " \n \n\n \t \t\t \t\n  \n   \n    \n     \n"),
    ("ws_before_newline", "text   \n   more  \t\n"),
    ("newline_runs", "\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\nx"),
    ("unicode_spaces", "a\u00a0b\u2003c\u3000d\u2028e\u2029f\u202fg\u205fh\u1680i\u0085j"),
    ("zero_width", "zero\u200bwidth\u200cnon\u200djoiner\ufeffbom"),
    # --- code
    ("python", PYTHON_CODE),
    ("cpp", CPP_CODE),
    ("json", JSON_TEXT),
    ("html", HTML_TEXT),
    ("shell", "$ ls -la | grep '.gguf' && echo \"done\" > /dev/null 2>&1"),
    ("regex_like", r"^(?:[a-z0-9!#$%&'*+/=?^_`{|}~-]+)@\w+\.\w{2,}$"),
    ("url", "https://example.com/path/to/page?query=1&b=two#frag"),
    ("email", "contact: first.last+tag@sub.example.org"),
    ("math", "∀x∈ℝ: x² ≥ 0, ∑_{i=1}^{n} i = n(n+1)/2, π ≈ 3.14159, ∞ ≠ ∅"),
    ("punct_runs", "Wait... what?!?! ------======= ''''''```````\"\"\"\"......!!!!!!??????"),
    ("brackets", "([{<>}]) (( )) [[ ]] {{ }} <<>>"),
    # --- contractions and case
    ("contractions", "I've been 'told he's there, 'RE you sure? 'M not sure I'll make it, 'D you like some tea? We'Ve a'lL"),
    ("contractions_upper", "DON'T WON'T I'M YOU'RE THEY'LL WE'D IT'S"),
    ("camel_case", "HelloWORLD fooBarBaz XMLHttpRequest iPhone macOS"),
    ("apostrophes", "rock 'n' roll, the '90s, O'Neil, l'été, ' lone"),
    # --- numbers of every length
    ("digits_1_to_12", " ".join("1234567890123"[:k] for k in range(1, 13))),
    ("digits_long", "12345678901234567890123456789012345678901234567890"),
    ("numbers_mixed", "3 33 333 3333 33333 333333 3333333 33333333 3.3 3..3 3...3"),
    ("numbers_formats", "1,234,567.89 -42 +7 1e10 6.02e23 0x1F 0b1010 007 3/4 50% $19.99 €5 ¥100"),
    ("numbers_unicode", "٣٤٥ ۱۲۳ १२३ ১২৩ ๑๒๓ １２３ ²³ ½ ¾ Ⅻ ① ⑳ 𝟙𝟚𝟛"),
    ("phone_date", "+1 (555) 123-4567, 2024-02-29T13:45:00Z, 12:30pm"),
    ("digits_letters", "abc123def4567ghi89 a1b2c3 x86_64 utf8 mp3"),
    # --- scripts
    ("latin_diacritics", "Ünïcödé façade naïve café résumé coöperate São Paulo Kraków Øresund"),
    ("german_turkish", "Straße STRASSE İstanbul ıi İI Ğğ Şş"),
    ("cyrillic", "Привет, мир! Съешь же ещё этих мягких французских булок."),
    ("greek", "Γειά σου Κόσμε! ΑΒΓΔ αβγδ ϐϑϕ"),
    ("chinese", "我想在apple工作1314151天～ 中文分词测试：你好，世界！"),
    ("japanese", "日本語のテキスト、ひらがなとカタカナ。ｶﾀｶﾅ半角"),
    ("korean", "안녕하세요 세계! 한국어 텍스트입니다. ᄀᄁᄂ"),
    ("arabic", "مرحبا بالعالم! هذا نص عربي مع تشكيل: مَرْحَبًا"),
    ("hebrew", "שלום עולם! עִבְרִית"),
    ("hindi", "नमस्ते दुनिया! हिन्दी में पाठ। क्षत्रिय"),
    ("bengali_tamil", "আমি বাংলায় গান গাই। தமிழ் மொழி"),
    ("thai", "สวัสดีชาวโลก ภาษาไทยไม่มีช่องว่างระหว่างคำ"),
    ("khmer", "កាន់តែពិសេសអាច"),
    ("mixed_paragraph", MIXED_PARAGRAPH),
    ("rtl_mixed", "The word \u05e9\u05dc\u05d5\u05dd means peace; \u202eRTL override\u202c done"),
    # --- combining marks
    ("combining_acute", "e\u0301 a\u0300 o\u0308 n\u0303 c\u0327"),
    ("combining_stack", "Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319\u0324\u031e\u0349\u035a\u032f\u031e\u0320\u034dA\u036b\u0357\u0334\u0362\u0335\u031c\u0330\u0354L\u0368\u0367\u0369\u0358\u0320G\u0311\u0357\u030e\u0305\u035b\u0341\u0334\u033b\u0348\u034d\u0354\u0339O"),
    ("vietnamese", "Tiếng Việt có dấu: Việt Nam, phở, cà phê sữa đá"),
    ("devanagari_virama", "क्ष त्र ज्ञ श्र द्ध"),
    ("hangul_jamo", "\u1100\u1161\u11a8 \u1112\u1161\u11ab"),
    # --- emoji
    ("emoji_simple", "🚀 (normal) 😶\u200d🌫️ (multiple emojis concatenated) ✅ 🦙🦙"),
    ("emoji_zwj_family", "👨\u200d👩\u200d👧\u200d👦 👩\u200d💻 🏳️\u200d🌈 🧑\u200d🤝\u200d🧑"),
    ("emoji_skin_tones", "👍🏻 👍🏼 👍🏽 👍🏾 👍🏿 🤷🏽\u200d♀️"),
    ("emoji_flags_keycaps", "🇺🇸 🇯🇵 🇩🇪 #️⃣ 1️⃣ *️⃣ ©️ ®️ ™️"),
    ("emoji_text_mix", "I ❤️ tokenizers!!! 😂😂😂 lol 🔥🔥 #blessed @user"),
    ("emoji_newer", "🫠 🫡 🫶 🪿 🫎 🩷"),
    # --- special-token strings inside text
    ("sp_endoftext", "Hello<|endoftext|>World<|endoftext|>"),
    ("sp_im", "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n"),
    ("sp_llama3", "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"),
    ("sp_llama2", "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nWhat is 2+2? [/INST] 4 </s><s>[INST] Thanks [/INST]"),
    ("sp_gemma", "<bos><start_of_turn>user\nWrite a haiku<end_of_turn>\n<start_of_turn>model\n"),
    ("sp_bert", "[CLS] the [MASK] sat on the mat [SEP] [PAD] [UNK]"),
    ("sp_harmony", "<|start|>assistant<|channel|>analysis<|message|>thinking<|end|><|start|>assistant<|channel|>final<|message|>Hi<|return|>"),
    ("sp_fim", "<|fim_prefix|>def f(x):\n    <|fim_suffix|>\n    return y<|fim_middle|>"),
    ("sp_misc", "<unk> <pad> <mask> <eos> </s> <|end|> <|user|> <|assistant|> <|system|>"),
    ("sp_partial", "<|im_sta <|endoftext <|<|endoftext|>|> <s <s> >s< </s </s>>"),
    ("sp_adjacent", "<|im_end|><|im_end|><s></s><s>x</s><end_of_turn><end_of_turn>"),
    ("sp_spaces_around", "  <|im_start|>  user  <|im_end|>  \n  <s>  x  </s>  "),
    ("bos_leading_spm", "<s>Hello world"),
    ("bos_leading_llama3", "<|begin_of_text|>Hello world"),
    ("bos_leading_gemma", "<bos>Hello world"),
    ("bos_leading_gpt2", "<|endoftext|>Hello world"),
    ("bos_leading_startoftext", "<|startoftext|>Hello world"),
    ("eos_trailing", "Hello world</s>"),
    ("unused_tokens", "<unused0> <unused99> [multimodal] <image_soft_token> <start_of_image>"),
    ("sp_like_brackets", "<|reserved_special_token_0|> <|finetune_right_pad_id|> <|python_tag|>"),
    # --- byte-level oddities (valid UTF-8)
    ("controls", "a\x00b\x01c\x07d\x1b[31mred\x1b[0m\x7f\x08"),
    ("private_use", "\ue000\uf8ff\U000f0000"),
    ("noncharacters", "\ufffe\uffff\U0001fffe"),
    ("replacement_char", "\ufffd literal replacement \ufffd\ufffd"),
    ("astral", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕏 𓀀 𐍈 🀄 𝄞"),
    ("long_word", "Donaudampfschifffahrtselektrizitätenhauptbetriebswerkbauunterbeamtengesellschaft"),
    ("long_token_run", "a" * 300),
    ("repeated_pairs", "abababababababababababababababababababab"),
    ("spaces_in_word_like", "▁ ▁▁ ▁x x▁ Ġ Ġx Ċ"),
    ("newline_spaces_mix", "a\n b\n  c\n\td\n \n e"),
    # --- invalid UTF-8 (bytes)
    ("bad_lone_continuation", b"abc\x80def"),
    ("bad_ff", b"\xff\xfe\xfd"),
    ("bad_truncated_2", b"x\xc3"),
    ("bad_truncated_3", b"\xe2\x82 euro"),
    ("bad_truncated_4", b"\xf0\x9f\x98 smile"),
    ("bad_overlong", b"\xc0\x80\xc1\xbf\xe0\x80\x80"),
    ("bad_surrogate", b"\xed\xa0\x80\xed\xbf\xbf"),
    ("bad_mixed", b"Hello \xc3\x28 W\xa0\xa1orld \xe2\x28\xa1 ok"),
    ("bad_f8", b"\xf8\x88\x80\x80\x80 five"),
    ("bad_in_special", b"<|im_start|>\xff<|im_end|>\x80"),
    ("bad_cjk_cut", "中文".encode()[:-1] + b" tail"),
]
