// Speculative decoding with a draft model (Engine::set_draft_model,
// SpecMode::Draft / Auto): the vocabulary check at load (a gemma draft for a
// SmolLM2 target, a copy with one token's text changed, an embedding model),
// then losslessness end to end. Targets and drafts are made in the test's
// temporary directory: SmolLM2 with its layers re-encoded as Q8_0 (a target
// the installed Q4_1 file drafts for well) and a tiny random llama with
// SmolLM2's vocabulary (a draft that is nearly always wrong, so the rejection
// and rollback paths run on every step), and a tiny hybrid (qwen35) draft whose
// recurrent state returns only to checkpoints.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "engine/draft_model.h"
#include "engine/spec_control.h"
#include "kiln/chat.h"
#include "kiln/engine.h"
#include "kiln/error.h"
#include "kiln/gguf/writer.h"
#include "support/requantize.h"
#include "support/test_support.h"
#include "support/tiny_models.h"

namespace {

using kiln::SpecMode;
using kiln::TokenId;
using ModelPtr = std::shared_ptr<const kiln::Model>;

kiln::ContextOptions ctx(int n_ctx, int n_seq_max = 1) {
    kiln::ContextOptions o;
    o.n_ctx = n_ctx;
    o.n_seq_max = n_seq_max;
    return o;
}

ModelPtr load(const std::string& path) {
    static std::map<std::string, ModelPtr> models;
    auto& m = models[path];
    if (!m) m = kiln::Model::load(path);
    return m;
}

// SmolLM2 with every layer matrix as Q8_0, made once per test process.
std::string q8_target() {
    static const std::string path = [] {
        const std::string p = kiln::test::temp_dir() + "/draft-smollm2-q8_0.gguf";
        kiln::test::requantize_layers(kiln::test::smollm2_path(), p, kiln::GgmlType::Q8_0);
        return p;
    }();
    return path;
}

std::string tiny(const std::string& family) {
    const std::string p = kiln::test::temp_dir() + "/draft-tiny-" + family + ".gguf";
    if (kiln::test::missing_reason(p).empty()) return p;
    kiln::test::write_tiny_model(family, kiln::test::smollm2_path(), p);
    return p;
}

struct Prompt {
    std::string name, user;
    int max_tokens;
};

std::vector<Prompt> prompts() {
    std::ifstream in(kiln::test::data_path("spec/prompts.json"));
    const auto j = nlohmann::json::parse(in);
    std::vector<Prompt> out;
    for (const auto& p : j) out.push_back({p.at("name"), p.at("user"), p.at("max_tokens")});
    return out;
}

std::vector<TokenId> chat_prompt(const ModelPtr& model, const std::string& user) {
    kiln::EncodeOptions eo;
    eo.parse_special = true;
    kiln::ChatSession chat(model);
    chat.add_user(user);
    return model->tokenizer().encode(chat.render({}), eo);
}

kiln::GenerateOptions options(SpecMode mode, int max_tokens, const kiln::SamplingParams& sampling) {
    kiln::GenerateOptions o;
    o.max_tokens = max_tokens;
    o.sampling = sampling;
    o.spec.mode = mode;
    return o;
}

void expect_same(const kiln::GenerationResult& a, const kiln::GenerationResult& b, const std::string& what) {
    EXPECT_EQ(a.tokens, b.tokens) << what;
    EXPECT_EQ(a.text, b.text) << what;
    EXPECT_EQ(a.finish, b.finish) << what;
    EXPECT_EQ(a.completion_tokens, b.completion_tokens) << what;
}

std::string load_error(const ModelPtr& target, const ModelPtr& draft) {
    kiln::Engine engine(target, ctx(64));
    try {
        engine.set_draft_model(draft);
    } catch (const kiln::Error& e) {
        EXPECT_EQ(e.kind(), kiln::ErrorKind::InvalidInput);
        return e.what();
    }
    return "";
}

// The controller with a draft model: its passes count in the cost (gamma), the
// draft mode always drafts, and auto drafts only while that pays.
TEST(DraftControl, DraftCostCountsAndDraftModeAlwaysDrafts) {
    kiln::SpecCost cost;
    cost.set_draft_prior(0.5);
    EXPECT_NEAR(cost.ratio(4, true), 1.0 + (0.15 + 0.5) * 4, 1e-9);
    EXPECT_NEAR(cost.ratio(4, false), 1.0 + 0.15 * 4, 1e-9);
    cost.record(1, 0.010);
    for (int i = 0; i < 60; ++i) cost.record_draft(4, 0.008);  // a draft pass: 0.2 of a target pass
    EXPECT_NEAR(cost.gamma(), 0.2, 1e-3);

    kiln::SpecOptions o;
    o.mode = SpecMode::Draft;
    o.draft_max = 8;
    o.draft_min = 2;
    kiln::SpecControl draft(o, true);
    EXPECT_EQ(draft.plan(100, cost), 2);  // the prior acceptance: the shortest allowed
    for (int i = 0; i < 10; ++i) draft.result(8, 8, cost);
    EXPECT_EQ(draft.plan(100, cost), 8);  // every token accepted: the longest
    for (int i = 0; i < 20; ++i) draft.result(4, 0, cost);
    EXPECT_EQ(draft.plan(100, cost), 2);  // nothing accepted: still drafts, the shortest
    EXPECT_EQ(draft.plan(1, cost), 0);    // no room for draft_min

    // auto with an expensive draft model does not draft at the prior acceptance;
    // with a cheap one it does.
    o.mode = SpecMode::Auto;
    o.draft_min = 1;
    kiln::SpecCost dear;
    dear.set_draft_prior(1.0);
    EXPECT_EQ(kiln::SpecControl(o, true).plan(100, dear), 0);
    kiln::SpecCost cheap;
    cheap.set_draft_prior(0.05);
    EXPECT_GT(kiln::SpecControl(o, true).plan(100, cheap), 0);
}

TEST(DraftVocabulary, GemmaDraftForSmolLM2IsRefusedNamingTheDifference) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    KILN_REQUIRE_MODEL(kiln::test::gemma3_path());
    const std::string err = load_error(load(kiln::test::smollm2_path()), load(kiln::test::gemma3_path()));
    EXPECT_NE(err.find("gemma-3-270m-q4_k_m.gguf' cannot draft for"), std::string::npos) << err;
    EXPECT_NE(err.find("262144 tokens, the target's 49152"), std::string::npos) << err;
    // The first token whose text differs is named too: SmolLM2's 0 is <|endoftext|>, Gemma's <pad>.
    EXPECT_NE(err.find("token 0 is '<pad>' in the draft, '<|endoftext|>' in the target"), std::string::npos) << err;
}

TEST(DraftVocabulary, OneChangedTokenTextIsNamed) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    // The tiny llama (SmolLM2's vocabulary) with token 1234's text changed.
    const std::string src = tiny("llama");
    const std::string dst = kiln::test::temp_dir() + "/draft-changed-token.gguf";
    {
        kiln::gguf::File f = kiln::gguf::File::open(src);
        kiln::gguf::Writer w;
        kiln::gguf::Metadata md = kiln::gguf::materialize_metadata(f);
        std::vector<kiln::gguf::Value> items = md.at("tokenizer.ggml.tokens").items();
        ASSERT_GT(items.size(), 1234u);
        const std::string before = items[1234].raw_string();
        items[1234] = kiln::gguf::Value::string("kiln-changed");
        md.add("tokenizer.ggml.tokens", kiln::gguf::Value::array(kiln::gguf::ValueType::String, std::move(items)));
        w.metadata() = md;
        for (const auto& t : f.tensors()) w.add_tensor_view(t.name, t.type, t.shape, f.tensor_data(t), t.bytes);
        w.write(dst);
        const std::string err = load_error(load(kiln::test::smollm2_path()), kiln::Model::load(dst));
        EXPECT_NE(err.find("token 1234 is 'kiln-changed' in the draft, '" + before + "' in the target"), std::string::npos)
            << err;
    }
    // The same vocabulary loads.
    EXPECT_EQ(load_error(load(kiln::test::smollm2_path()), load(src)), "");
}

TEST(DraftVocabulary, EmbeddingModelIsRefused) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    KILN_REQUIRE_MODEL(kiln::test::minilm_path());
    const std::string err = load_error(load(kiln::test::smollm2_path()), load(kiln::test::minilm_path()));
    EXPECT_NE(err.find("no output head"), std::string::npos) << err;
}

TEST(DraftOptions, DraftModeNeedsADraftModelAndTheModelStaysWhileSequencesRun) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    auto model = load(kiln::test::smollm2_path());
    kiln::Engine engine(model, ctx(128));
    EXPECT_EQ(engine.draft_model(), nullptr);
    const std::vector<TokenId> toks = {1, 2, 3};
    EXPECT_THROW(engine.submit(toks, options(SpecMode::Draft, 4, kiln::SamplingParams::greedy())), kiln::Error);
    engine.set_draft_model(load(tiny("llama")));
    ASSERT_NE(engine.draft_model(), nullptr);
    EXPECT_GT(engine.draft_memory_bytes(), 0u);
    engine.submit(toks, options(SpecMode::Draft, 4, kiln::SamplingParams::greedy()));
    EXPECT_THROW(engine.set_draft_model(nullptr), kiln::Error);  // a sequence is generating
    while (engine.busy()) engine.step();
    engine.set_draft_model(nullptr);
    EXPECT_EQ(engine.draft_model(), nullptr);
}

// Greedy with each draft equals plain greedy on committed prompts; the
// SmolLM2 Q4_1 draft is mostly right for its Q8_0 target, the tiny random one
// mostly wrong.
TEST(DraftModel, GreedyWithADraftModelEqualsPlainGreedy) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    auto target = load(q8_target());
    const std::pair<std::string, std::string> drafts[] = {{"smollm2-q4_1", kiln::test::smollm2_path()},
                                                          {"tiny-llama", tiny("llama")}};
    const auto all = prompts();
    for (const auto& [name, path] : drafts) {
        kiln::Session session(target, ctx(512));
        session.engine().set_draft_model(load(path));
        int drafted = 0, accepted = 0;
        for (const Prompt& p : all) {
            // An edit that copies its input and free text; the random draft, which
            // is rejected on nearly every step, on the edit only.
            if (p.name != "edit_replace" && (p.name != "free_text" || name == "tiny-llama")) continue;
            const auto toks = chat_prompt(target, p.user);
            session.reset();
            const auto plain = session.generate(toks, options(SpecMode::Off, p.max_tokens, kiln::SamplingParams::greedy()));
            for (SpecMode mode : {SpecMode::Draft, SpecMode::Auto}) {
                if (name == "tiny-llama" && mode == SpecMode::Auto) continue;  // auto stops drafting it at once
                session.reset();
                const auto spec = session.generate(toks, options(mode, p.max_tokens, kiln::SamplingParams::greedy()));
                expect_same(plain, spec, name + " " + p.name + " " + std::string(kiln::spec_mode_name(mode)));
                EXPECT_LE(spec.spec.accepted, spec.spec.drafted);
                EXPECT_EQ(spec.spec.steps + spec.spec.accepted,
                          spec.completion_tokens + (spec.finish == kiln::FinishReason::Stop ? 1 : 0));
                if (mode == SpecMode::Draft) {
                    // Every step drafts but the prompt's and one with room for no draft (max_tokens).
                    EXPECT_GE(spec.spec.draft_steps + 2, spec.spec.steps) << name << " " << p.name;
                    drafted += spec.spec.drafted;
                    accepted += spec.spec.accepted;
                }
            }
        }
        std::printf("draft %s: drafted %d, accepted %d (%.1f%%)\n", name.c_str(), drafted, accepted,
                    drafted ? 100.0 * accepted / drafted : 0.0);
        if (name == "smollm2-q4_1") {
            EXPECT_GT(accepted, drafted * 6 / 10) << "the Q4_1 file should mostly agree with its Q8_0 re-encoding";
        } else {
            EXPECT_GT(drafted, 0);
            EXPECT_LT(accepted, drafted / 4) << "a random draft should mostly be rejected";
        }
    }
}

TEST(DraftModel, SeededSamplingIsTheSameWithAndWithoutTheDraftModel) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    auto target = load(q8_target());
    const auto toks = chat_prompt(target, prompts()[0].user);
    kiln::SamplingParams sp;  // temperature 0.8, top-k 40, top-p 0.95, min-p 0.05
    sp.seed = 4321;
    sp.repeat_penalty = 1.05f;
    kiln::Session session(target, ctx(512));
    session.engine().set_draft_model(load(kiln::test::smollm2_path()));
    const auto plain = session.generate(toks, options(SpecMode::Off, 80, sp));
    session.reset();
    const auto spec = session.generate(toks, options(SpecMode::Draft, 80, sp));
    expect_same(plain, spec, "seeded draft");
    EXPECT_GT(spec.spec.accepted, 0);
    EXPECT_LT(spec.spec.accepted, spec.spec.drafted);  // sampling disagrees with a greedy draft sometimes
}

// Three sequences drafting together share the draft model's passes; each
// equals its reply alone. The second and third prompts share the first's
// chat-template prefix, which the draft cells copy rather than evaluate.
TEST(DraftModel, SequencesDraftingInOneBatchEqualEachAlone) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    auto target = load(q8_target());
    auto draft = load(kiln::test::smollm2_path());
    const auto all = prompts();
    std::vector<std::vector<TokenId>> toks;
    std::vector<kiln::GenerationResult> alone;
    for (int i = 0; i < 3; ++i) {
        toks.push_back(chat_prompt(target, all[static_cast<size_t>(i)].user));
        kiln::Session s(target, ctx(512));
        alone.push_back(s.generate(toks.back(), options(SpecMode::Off, 40, kiln::SamplingParams::greedy())));
    }
    kiln::Engine engine(target, ctx(512, 3));
    engine.set_draft_model(draft);
    std::vector<kiln::SeqId> seqs;
    for (int i = 0; i < 3; ++i)
        seqs.push_back(engine.submit(toks[static_cast<size_t>(i)], options(SpecMode::Draft, 40, kiln::SamplingParams::greedy())));
    while (engine.busy()) engine.step();
    for (int i = 0; i < 3; ++i) {
        const auto& r = engine.result(seqs[static_cast<size_t>(i)]);
        expect_same(alone[static_cast<size_t>(i)], r, "seq " + std::to_string(i));
        EXPECT_GT(r.spec.drafted, 0);
    }
    // A second round in the same slots: the draft cells follow the new prompts.
    seqs.clear();
    for (int i = 2; i >= 0; --i)
        seqs.push_back(engine.submit(toks[static_cast<size_t>(i)], options(SpecMode::Draft, 40, kiln::SamplingParams::greedy())));
    while (engine.busy()) engine.step();
    for (int i = 0; i < 3; ++i) expect_same(alone[static_cast<size_t>(2 - i)], engine.result(seqs[static_cast<size_t>(i)]), "again " + std::to_string(i));
}

// A hybrid draft model (its recurrent state rolls back only to checkpoints):
// the checkpoint taken after catching up keeps each rejection cheap, and the
// output is the target's.
TEST(DraftModel, HybridDraftModelIsLossless) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    auto target = load(kiln::test::smollm2_path());
    const auto toks = chat_prompt(target, prompts()[1].user);
    kiln::Session session(target, ctx(512));
    session.engine().set_draft_model(load(tiny("qwen35")));
    const auto plain = session.generate(toks, options(SpecMode::Off, 40, kiln::SamplingParams::greedy()));
    session.reset();
    const auto spec = session.generate(toks, options(SpecMode::Draft, 40, kiln::SamplingParams::greedy()));
    expect_same(plain, spec, "hybrid draft");
    EXPECT_GT(spec.spec.drafted, 0);
}

// A draft model trained on a shorter context (the tiny llama: 512) than the
// target's context drafts while the sequence fits it, then the target goes on
// alone; the text is the same as without it.
TEST(DraftModel, ShorterDraftContextDraftsWhileTheSequenceFits) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    auto target = load(kiln::test::smollm2_path());
    std::vector<TokenId> toks;
    for (int i = 0; i < 500; ++i) toks.push_back(static_cast<TokenId>(1000 + (i * 37) % 400));
    kiln::GenerateOptions o = options(SpecMode::Off, 20, kiln::SamplingParams::greedy());
    o.ignore_eos = true;
    kiln::Session session(target, ctx(1024));
    session.engine().set_draft_model(load(tiny("llama")));
    const auto plain = session.generate(toks, o);
    session.reset();
    o.spec.mode = SpecMode::Draft;
    const auto spec = session.generate(toks, o);
    expect_same(plain, spec, "draft context 512 under a target context of 1024");
    EXPECT_GT(spec.spec.drafted, 0);
    EXPECT_LT(spec.spec.draft_steps + 2, spec.spec.steps) << "past position 512 the steps draft nothing";
}

TEST(DraftVocabulary, CheckIsSymmetricInWhatItNames) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    KILN_REQUIRE_MODEL(kiln::test::gemma3_path());
    // SmolLM2 as a draft for gemma: the counts the other way round.
    try {
        kiln::check_draft_vocabulary(*load(kiln::test::gemma3_path()), *load(kiln::test::smollm2_path()));
        ADD_FAILURE() << "no error";
    } catch (const kiln::Error& e) {
        EXPECT_NE(std::string(e.what()).find("49152 tokens, the target's 262144"), std::string::npos) << e.what();
    }
}

}  // namespace
