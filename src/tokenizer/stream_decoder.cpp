#include "kiln/tokenizer.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"

namespace kiln {

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, const DecodeOptions& options)
    : tokenizer_(tokenizer), options_(options) {}

void StreamDecoder::reset() {
    pending_.clear();
    first_ = true;
}

std::string StreamDecoder::push(TokenId id) {
    const tok::Vocab& v = TokenizerAccess::impl(tokenizer_).vocab;
    std::string_view piece = tokenizer_.token_piece(id, options_.show_special);
    if (first_) {
        // As decode(): the first token loses the space SentencePiece put in front,
        // unless it is a BOS being removed (then nothing is stripped).
        first_ = false;
        if (options_.remove_special && v.add_bos && id == v.special.bos) return {};
        if (v.add_space_prefix && !piece.empty() && piece.front() == ' ') piece.remove_prefix(1);
    } else if (options_.remove_special && v.add_eos && id == v.special.eos) {
        return {};  // a stream cannot know the EOS is last; generation stops at it anyway
    }
    pending_.append(piece);

    // Emit every complete sequence; keep a sequence the next token may complete.
    std::string out;
    size_t pos = 0;
    while (pos < pending_.size()) {
        const int r = tok::utf8_sequence_status(pending_, pos);
        if (r == 0) break;
        if (r < 0) {
            out += "\xEF\xBF\xBD";
            pos += 1;
            continue;
        }
        out.append(pending_, pos, static_cast<size_t>(r));
        pos += static_cast<size_t>(r);
    }
    pending_.erase(0, pos);
    return out;
}

std::string StreamDecoder::flush() {
    std::string out = pending_.empty() ? std::string() : std::string("\xEF\xBF\xBD");
    pending_.clear();
    return out;
}

}  // namespace kiln
