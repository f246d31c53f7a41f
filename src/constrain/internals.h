// The compiled forms behind the public Grammar and TokenVocabulary (not part of
// the public API).
#pragma once

#include "kiln/constraint.h"

namespace kiln::constrain {

struct Internals {
    static const CompiledGrammar& compiled(const Grammar& g) { return *g.impl_; }
    static const VocabTrie& trie(const TokenVocabulary& v) { return *v.impl_; }
    static const std::shared_ptr<const VocabTrie>& trie_ptr(const TokenVocabulary& v) { return v.impl_; }
};

}  // namespace kiln::constrain
