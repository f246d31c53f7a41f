#include "tokenizer/splitters.h"

#include "tokenizer/unicode.h"

namespace kiln::tok {

namespace {

constexpr uint32_t k_outside = 0xFFFFFFFFu;
constexpr uint16_t k_l = cpt::k_letter, k_n = cpt::k_number, k_m = cpt::k_mark, k_ws = cpt::k_whitespace;

// The piece being cut. Reads past its end see "nothing" (codepoint k_outside, no
// flags), which is how the expressions' lookaheads treat the end of the text.
struct Cursor {
    const uint32_t* cps;
    const uint16_t* fl;
    uint32_t end;
    std::vector<uint32_t>& ends;
    uint32_t last;

    uint32_t cp(uint32_t p) const { return p < end ? cps[p] : k_outside; }
    uint16_t f(uint32_t p) const { return p < end ? fl[p] : 0; }
    // Closes the current piece at `to` (nothing when it would be empty).
    void emit(uint32_t to) {
        if (to > last) ends.push_back(to);
        last = to;
    }
};

bool is_contraction_letter(uint32_t c) { return c == 's' || c == 't' || c == 'm' || c == 'd'; }
bool is_contraction_pair(uint32_t a, uint32_t b) {
    return (a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l');
}

// 's 't 're 've 'm 'll 'd at p; returns the length matched (0 if none).
uint32_t contraction_at(const Cursor& c, uint32_t p, bool ignore_case) {
    if (c.cp(p) != '\'' || p + 1 >= c.end) return 0;
    uint32_t n1 = c.cp(p + 1);
    if (ignore_case) n1 = to_lower(n1);
    if (is_contraction_letter(n1)) return 2;
    if (p + 2 < c.end) {
        uint32_t n2 = c.cp(p + 2);
        if (ignore_case) n2 = to_lower(n2);
        if (is_contraction_pair(n1, n2)) return 3;
    }
    return 0;
}

bool is_line_break(uint32_t c) { return c == '\r' || c == '\n'; }

// The whitespace tail shared by the Llama 3 family: \s*[\r\n]+ | \s+(?!\S) | \s+ ,
// else a single codepoint. Returns the new position.
uint32_t whitespace_tail(Cursor& c, uint32_t p) {
    uint32_t n = 0, last_break = 0;
    while (c.f(p + n) & k_ws) {
        if (is_line_break(c.cp(p + n))) last_break = p + n + 1;
        ++n;
    }
    if (last_break > 0) {
        p = last_break;
    } else if (n > 1 && p + n < c.end) {
        p += n - 1;  // leave the last one to prefix the next word
    } else if (n > 0) {
        p += n;
    } else {
        p += 1;
    }
    c.emit(p);
    return p;
}

// \p{N}{1,max}: the run of digits at p in groups of at most max, each emitted.
// Returns the new position.
uint32_t digit_groups(Cursor& c, uint32_t p, uint32_t max) {
    uint32_t run = p;
    while (c.f(p) & k_n) {
        if (++p - run >= max) {
            c.emit(p);
            run = p;
        }
    }
    c.emit(p);
    return p;
}

}  // namespace

void split_gpt2(const SplitInput& in, uint32_t begin, uint32_t end, std::vector<uint32_t>& ends) {
    Cursor c{in.cps, in.flags, end, ends, begin};
    for (uint32_t p = begin; p < end;) {
        const uint32_t ch = c.cp(p);
        const uint16_t fl = c.f(p);
        if (uint32_t k = contraction_at(c, p, false)) {
            p += k;
            c.emit(p);
            continue;
        }
        // An optional leading space belongs to the word after it.
        const uint16_t f2 = ch == ' ' ? c.f(p + 1) : fl;
        if (f2 & k_l) {
            p += ch == ' ';
            while (c.f(p) & k_l) ++p;
            c.emit(p);
            continue;
        }
        if (f2 & k_n) {
            p += ch == ' ';
            while (c.f(p) & k_n) ++p;
            c.emit(p);
            continue;
        }
        if (!(f2 & (k_ws | k_l | k_n)) && f2) {
            p += ch == ' ';
            while (!(c.f(p) & (k_ws | k_l | k_n)) && c.f(p)) ++p;
            c.emit(p);
            continue;
        }
        uint32_t n = 0;
        while (c.f(p + n) & k_ws) ++n;
        if (n > 1 && p + n < end) {
            p += n - 1;
        } else if (n > 0) {
            p += n;
        } else {
            p += 1;
        }
        c.emit(p);
    }
}

void split_llama3(const SplitInput& in, uint32_t begin, uint32_t end, uint32_t max_digits,
                  std::vector<uint32_t>& ends) {
    Cursor c{in.cps, in.flags, end, ends, begin};
    for (uint32_t p = begin; p < end;) {
        const uint32_t ch = c.cp(p);
        const uint16_t fl = c.f(p);
        if (uint32_t k = contraction_at(c, p, true)) {
            p += k;
            c.emit(p);
            continue;
        }
        // [^\r\n\p{L}\p{N}]?\p{L}+
        if (!(is_line_break(ch) || (fl & k_n)) && ((fl & k_l) || (c.f(p + 1) & k_l))) {
            ++p;
            while (c.f(p) & k_l) ++p;
            c.emit(p);
            continue;
        }
        // \p{N}{1,max_digits}
        if (fl & k_n) {
            p = digit_groups(c, p, max_digits);
            continue;
        }
        // " ?[^\s\p{L}\p{N}]+[\r\n]*"
        const uint16_t f2 = ch == ' ' ? c.f(p + 1) : fl;
        if (!(f2 & (k_ws | k_l | k_n)) && fl) {
            p += ch == ' ';
            while (!(c.f(p) & (k_ws | k_l | k_n)) && c.f(p)) ++p;
            while (is_line_break(c.cp(p))) ++p;
            c.emit(p);
            continue;
        }
        p = whitespace_tail(c, p);
    }
}

void split_qwen35(const SplitInput& in, uint32_t begin, uint32_t end, std::vector<uint32_t>& ends) {
    Cursor c{in.cps, in.flags, end, ends, begin};
    for (uint32_t p = begin; p < end;) {
        const uint32_t ch = c.cp(p);
        const uint16_t fl = c.f(p);
        if (uint32_t k = contraction_at(c, p, true)) {
            p += k;
            c.emit(p);
            continue;
        }
        // [^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+
        if (!(is_line_break(ch) || (fl & k_n)) && ((fl & (k_l | k_m)) || (c.f(p + 1) & (k_l | k_m)))) {
            ++p;
            while (c.f(p) & (k_l | k_m)) ++p;
            c.emit(p);
            continue;
        }
        if (fl & k_n) {
            ++p;
            c.emit(p);
            continue;
        }
        // " ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*"
        const uint16_t f2 = ch == ' ' ? c.f(p + 1) : fl;
        if (!(f2 & (k_ws | k_l | k_m | k_n)) && fl) {
            p += ch == ' ';
            while (!(c.f(p) & (k_ws | k_l | k_m | k_n)) && c.f(p)) ++p;
            while (is_line_break(c.cp(p))) ++p;
            c.emit(p);
            continue;
        }
        p = whitespace_tail(c, p);
    }
}

void split_kimi_k2(const SplitInput& in, uint32_t begin, uint32_t end, std::vector<uint32_t>& ends) {
    Cursor c{in.cps, in.flags, end, ends, begin};
    auto letter_not_han = [&](uint32_t p) { return (c.f(p) & k_l) && !is_han(c.cp(p)); };
    for (uint32_t p = begin; p < end;) {
        const uint32_t ch = c.cp(p);
        const uint16_t fl = c.f(p);
        // [\p{Han}]+
        if (is_han(ch)) {
            while (is_han(c.cp(p))) ++p;
            c.emit(p);
            continue;
        }
        // [^\r\n\p{L}\p{N}]?[letters without Han]+ followed by an optional contraction
        const bool can_lead = !(is_line_break(ch) || (fl & (k_l | k_n)));
        if (letter_not_han(p) || (can_lead && letter_not_han(p + 1))) {
            if (can_lead) ++p;
            while (letter_not_han(p)) ++p;
            if (uint32_t k = contraction_at(c, p, true)) p += k;
            c.emit(p);
            continue;
        }
        if (fl & k_n) {
            p = digit_groups(c, p, 3);
            continue;
        }
        const uint16_t f2 = ch == ' ' ? c.f(p + 1) : fl;
        if (!(f2 & (k_ws | k_l | k_n)) && f2) {
            p += ch == ' ';
            while (!(c.f(p) & (k_ws | k_l | k_n)) && c.f(p)) ++p;
            while (is_line_break(c.cp(p))) ++p;
            c.emit(p);
            continue;
        }
        p = whitespace_tail(c, p);
    }
}

void split_digit_groups(const SplitInput& in, uint32_t begin, uint32_t end, std::vector<uint32_t>& ends) {
    Cursor c{in.cps, in.flags, end, ends, begin};
    for (uint32_t p = begin; p < end;) {
        if (!(c.f(p) & k_n)) {
            ++p;
            continue;
        }
        const uint32_t run = p;
        while (c.f(p) & k_n) ++p;
        const uint32_t count = p - run;
        uint32_t at = run;
        if (count % 3) {
            at += count % 3;
            c.emit(at);
        }
        while (at < p) {
            at += 3;
            c.emit(at);
        }
    }
    c.emit(end);
}

void split_newlines(const SplitInput& in, uint32_t begin, uint32_t end, std::vector<uint32_t>& ends) {
    for (uint32_t p = begin; p < end;) {
        const bool nl = in.cps[p] == '\n';
        while (p < end && (in.cps[p] == '\n') == nl) ++p;
        ends.push_back(p);
    }
}

namespace {

bool in_class(ClassKind cls, uint32_t cp, uint16_t fl) {
    switch (cls) {
        case ClassKind::Number: return fl & k_n;
        case ClassKind::AsciiDigit: return cp >= '0' && cp <= '9';
        case ClassKind::PunctSymbolsTick:
            if (cp == '`') return true;
            [[fallthrough]];
        case ClassKind::PunctSymbols:
            return (fl & cpt::k_punctuation) || cp == '$' || cp == '+' || cp == '<' || cp == '=' || cp == '>' ||
                   cp == '^' || cp == '~' || cp == '|';
        case ClassKind::LineBreak: return cp == '\r' || cp == '\n';
    }
    return false;
}

}  // namespace

void split_class(const SplitInput& in, uint32_t begin, uint32_t end, ClassKind cls, uint32_t min_run,
                 uint32_t max_run, std::vector<uint32_t>& ends) {
    Cursor c{in.cps, in.flags, end, ends, begin};
    uint32_t p = begin;
    while (p < end) {
        if (!in_class(cls, in.cps[p], in.flags[p])) {
            ++p;
            continue;
        }
        uint32_t run_end = p;
        while (run_end < end && in_class(cls, in.cps[run_end], in.flags[run_end])) ++run_end;
        // Leftmost-longest matches inside the run; a remainder shorter than
        // min_run matches nothing and joins the gap after it.
        while (run_end - p >= min_run) {
            uint32_t len = run_end - p < max_run ? run_end - p : max_run;
            c.emit(p);
            p += len;
            c.emit(p);
        }
        p = run_end;
    }
    c.emit(end);
}

void split_trailing_space(const SplitInput& in, uint32_t begin, uint32_t end, std::vector<uint32_t>& ends) {
    uint32_t p = end;
    while (p > begin && (in.flags[p - 1] & k_ws)) --p;
    if (p > begin && p < end) ends.push_back(p);
    ends.push_back(end);
}

void split_digit_lookahead(const SplitInput& in, uint32_t begin, uint32_t end, std::vector<uint32_t>& ends) {
    uint32_t p = begin;
    while (p < end) {
        if (!(in.cps[p] >= '0' && in.cps[p] <= '9')) {
            ++p;
            continue;
        }
        uint32_t run_end = p;
        while (run_end < end && in.cps[run_end] >= '0' && in.cps[run_end] <= '9') ++run_end;
        // Cuts at run_end - 3k, k >= 1, that lie inside the piece (not at its start).
        uint32_t first = p + (run_end - p) % 3;
        for (uint32_t q = first; q < run_end; q += 3)
            if (q > begin) ends.push_back(q);
        p = run_end;
    }
    ends.push_back(end);
}

}  // namespace kiln::tok
