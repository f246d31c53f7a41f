// Architecture resolution (spellings, namespaces, projectors, unknown names) and
// the rule that every tensor of a file is read as llama.cpp's graph reads it:
// an extra tensor, an ignored weight scale or an unknown RoPE scaling is a load
// error naming it; llama.cpp's "unset" values mean what they mean there.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <memory>

#include "kiln/context.h"
#include "kiln/error.h"
#include "kiln/gguf/writer.h"
#include "model/registry.h"
#include "support/test_support.h"
#include "support/tiny_models.h"

namespace {

using kiln::gguf::Metadata;
using kiln::gguf::Value;

Metadata metadata_with(std::initializer_list<std::pair<const char*, Value>> entries) {
    Metadata md;
    for (const auto& [k, v] : entries) md.add(k, v);
    return md;
}

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const kiln::Error& e) {
        return e.what();
    }
    return "";
}

TEST(ArchitectureResolution, ExactNameHasNoNote) {
    auto md = metadata_with({{"general.architecture", Value::string("qwen2")}, {"qwen2.block_count", Value::u32(2)}});
    auto r = kiln::resolve_architecture(md);
    EXPECT_EQ(r.row->name, "qwen2");
    EXPECT_EQ(r.prefix, "qwen2.");
    EXPECT_EQ(r.note, "");
}

TEST(ArchitectureResolution, SpellingVariantsResolveToTheCanonicalRow) {
    const std::pair<const char*, const char*> cases[] = {
        {"Qwen2ForCausalLM", "qwen2"}, {"command_r", "command-r"}, {"gpt_oss", "gpt-oss"},  {"deepseek-v2", "deepseek2"},
        {"LlamaForCausalLM", "llama"}, {"Gemma3ForCausalLM", "gemma3"}, {"GPTNeoXForCausalLM", "gptneox"},
        {"Ernie4_5ForCausalLM", "ernie4_5"}, {"nomic_bert", "nomic-bert"},
    };
    for (const auto& [spelling, canonical] : cases) {
        auto md = metadata_with({{"general.architecture", Value::string(spelling)},
                                 {(std::string(canonical) + ".block_count").c_str(), Value::u32(2)}});
        auto r = kiln::resolve_architecture(md);
        EXPECT_EQ(r.row->name, canonical) << spelling;
        EXPECT_EQ(r.prefix, std::string(canonical) + ".") << spelling;
        EXPECT_NE(r.note.find(canonical), std::string::npos) << spelling << ": " << r.note;
    }
}

TEST(ArchitectureResolution, LlamaSpellingsOverLlamaKeys) {
    for (const char* spelling : {"llama2", "llama3", "mistral", "ministral"}) {
        auto md = metadata_with({{"general.architecture", Value::string(spelling)}, {"llama.block_count", Value::u32(2)}});
        auto r = kiln::resolve_architecture(md);
        EXPECT_EQ(r.row->name, "llama") << spelling;
        EXPECT_EQ(r.prefix, "llama.") << spelling;
    }
    // Keys under the spelling itself are read there.
    auto md = metadata_with({{"general.architecture", Value::string("mistral")}, {"mistral.block_count", Value::u32(2)}});
    auto r = kiln::resolve_architecture(md);
    EXPECT_EQ(r.row->name, "llama");
    EXPECT_EQ(r.prefix, "mistral.");
}

TEST(ArchitectureResolution, DifferentGraphsStayApart) {
    // mistral3 and qwen2moe are graphs of their own, never llama / qwen2.
    for (const char* name : {"mistral3", "qwen2moe", "gemma3n", "phi3", "olmo2"}) {
        auto md = metadata_with({{"general.architecture", Value::string(name)},
                                 {(std::string(name) + ".block_count").c_str(), Value::u32(2)}});
        EXPECT_EQ(kiln::resolve_architecture(md).row->name, name);
    }
}

TEST(ArchitectureResolution, MissingNameFollowsTheNamespace) {
    auto md = metadata_with({{"qwen3.block_count", Value::u32(2)}, {"qwen3.embedding_length", Value::u32(64)}});
    auto r = kiln::resolve_architecture(md);
    EXPECT_EQ(r.row->name, "qwen3");
    EXPECT_EQ(r.prefix, "qwen3.");
    EXPECT_NE(r.note.find("general.architecture is missing"), std::string::npos) << r.note;
}

TEST(ArchitectureResolution, MislabelledFileFollowsTheNamespaceThatExists) {
    auto md = metadata_with({{"general.architecture", Value::string("llama")}, {"qwen2.block_count", Value::u32(2)}});
    auto r = kiln::resolve_architecture(md);
    EXPECT_EQ(r.row->name, "qwen2");
    EXPECT_NE(r.note.find("says 'llama'"), std::string::npos) << r.note;
}

TEST(ArchitectureResolution, VisionProjectorIsNamed) {
    auto md = metadata_with({{"general.architecture", Value::string("clip")}, {"clip.vision.block_count", Value::u32(2)},
                             {"clip.has_vision_encoder", Value::boolean(true)}});
    const std::string e = error_of([&] { kiln::resolve_architecture(md); });
    EXPECT_NE(e.find("vision projector"), std::string::npos) << e;
}

TEST(ArchitectureResolution, UnknownArchitectureListsTheSupportedOnes) {
    auto md = metadata_with({{"general.architecture", Value::string("frobnicator")}, {"frobnicator.block_count", Value::u32(2)}});
    const std::string e = error_of([&] { kiln::resolve_architecture(md); });
    EXPECT_NE(e.find("'frobnicator'"), std::string::npos) << e;
    EXPECT_NE(e.find("supported: "), std::string::npos) << e;
    EXPECT_NE(e.find("qwen3"), std::string::npos) << e;
    auto none = metadata_with({{"general.name", Value::string("x")}});
    EXPECT_NE(error_of([&] { kiln::resolve_architecture(none); }).find("general.architecture"), std::string::npos);
}

// The tiny llama model rewritten: metadata edited, tensors added or dropped.
std::string rewritten(const std::string& name, const std::function<void(Metadata&)>& edit_md,
                      const std::function<void(kiln::gguf::Writer&)>& add = nullptr, const std::string& drop = "") {
    const std::string dir = kiln::test::temp_dir();
    const std::string base = dir + "/arch-base.gguf";
    static bool written = false;
    if (!written) {
        kiln::test::write_tiny_model("llama", kiln::test::smollm2_path(), base);
        written = true;
    }
    static std::vector<std::unique_ptr<kiln::gguf::File>> keep;  // the views' bytes stay mapped
    keep.push_back(std::make_unique<kiln::gguf::File>(kiln::gguf::File::open(base)));
    const kiln::gguf::File& src = *keep.back();
    kiln::gguf::Writer w;
    w.metadata() = kiln::gguf::materialize_metadata(src);
    edit_md(w.metadata());
    for (const auto& t : src.tensors())
        if (t.name != drop) w.add_tensor_view(t.name, t.type, t.shape, src.tensor_data(t), t.bytes);
    if (add) add(w);
    const std::string out = dir + "/arch-" + name + ".gguf";
    w.write(out);
    return out;
}

std::vector<uint8_t> f32_bytes(std::vector<float> v) {
    std::vector<uint8_t> b(v.size() * 4);
    std::memcpy(b.data(), v.data(), b.size());
    return b;
}

TEST(TensorRules, ATensorTheFamilyDoesNotReadIsALoadErrorNamingIt) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    // llama's graph has no Q/K norms (qwen3's has): llama.cpp refuses the file too.
    auto path = rewritten("extra", [](Metadata&) {}, [](kiln::gguf::Writer& w) {
        w.add_tensor("blk.0.attn_q_norm.weight", kiln::GgmlType::F32, {16}, f32_bytes(std::vector<float>(16, 1.0f)));
    });
    const std::string e = error_of([&] { kiln::Model::load(path); });
    EXPECT_NE(e.find("'blk.0.attn_q_norm.weight' is not used by architecture 'llama'"), std::string::npos) << e;
}

TEST(TensorRules, AWeightScaleTheGraphIgnoresIsRefused) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    // qwen2's graph in llama.cpp loads FFN weight scales and never applies them
    // (the tiny llama model has them: llama's graph applies them).
    auto path = rewritten("qwen2-scale", [](Metadata& md) {
        kiln::gguf::Metadata out;
        for (const auto& [k, v] : md.entries()) {
            std::string key = k;
            if (key.rfind("llama.", 0) == 0) key = "qwen2." + key.substr(6);
            out.add(key, key == "general.architecture" ? Value::string("qwen2") : v);
        }
        md = out;
    });
    const std::string e = error_of([&] { kiln::Model::load(path); });
    EXPECT_NE(e.find("'blk.0.ffn_gate.scale'"), std::string::npos) << e;
    EXPECT_NE(e.find("never applies it"), std::string::npos) << e;
}

TEST(TensorRules, RopeScalingAsLlamaCppReadsIt) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    auto logits_of = [](const std::string& path) {
        auto model = kiln::Model::load(path);
        kiln::Context ctx(model, {.n_ctx = 64});
        auto prompt = kiln::test::tiny_model_prompt();
        prompt.resize(8);
        ctx.decode(prompt);
        auto l = ctx.last_logits();
        return std::vector<float>(l.begin(), l.end());
    };
    auto set = [](const char* type, float factor) {
        return [=](Metadata& md) {
            md.add("llama.rope.scaling.type", Value::string(type));
            md.add("llama.rope.scaling.factor", Value::f32(factor));
        };
    };
    const auto base = logits_of(rewritten("rope-base", [](Metadata& md) { md.erase("llama.rope.scaling.type"); md.erase("llama.rope.scaling.factor"); }));
    // A factor of 0 is "unset" (no scaling), as is type none whatever the factor.
    EXPECT_EQ(logits_of(rewritten("rope-lin0", set("linear", 0.0f))), base);
    EXPECT_EQ(logits_of(rewritten("rope-none4", set("none", 4.0f))), base);
    // Linear x4 changes the angles; without a type, llama.cpp's default is linear.
    const auto lin4 = logits_of(rewritten("rope-lin4", set("linear", 4.0f)));
    EXPECT_NE(lin4, base);
    EXPECT_EQ(logits_of(rewritten("rope-untyped4", [](Metadata& md) {
                  md.erase("llama.rope.scaling.type");
                  md.add("llama.rope.scaling.factor", Value::f32(4.0f));
              })),
              lin4);
    const std::string e = error_of([&] { logits_of(rewritten("rope-bad", set("wibble", 2.0f))); });
    EXPECT_NE(e.find("llama.rope.scaling.type"), std::string::npos) << e;
    EXPECT_NE(e.find("wibble"), std::string::npos) << e;
}

TEST(TensorRules, FusedQkvNeedsAllThreeSeparateBiasesOrNone) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    const std::string dir = kiln::test::temp_dir();
    kiln::test::write_tiny_model("qwen2@fused", kiln::test::smollm2_path(), dir + "/fused.gguf");
    kiln::gguf::File src = kiln::gguf::File::open(dir + "/fused.gguf");
    kiln::gguf::Writer w;
    w.metadata() = kiln::gguf::materialize_metadata(src);
    for (const auto& t : src.tensors())
        if (t.name != "blk.1.attn_k.bias") w.add_tensor_view(t.name, t.type, t.shape, src.tensor_data(t), t.bytes);
    w.write(dir + "/fused-partial.gguf");
    const std::string e = error_of([&] { kiln::Model::load(dir + "/fused-partial.gguf"); });
    EXPECT_NE(e.find("blk.1.attn_k.bias"), std::string::npos) << e;
}

// The MoE families' rules (merged with the TensorRules): a router in a dense
// family's file is a named error; a tensor of another MoE family's graph (here
// gpt-oss's attention sinks and router bias in qwen3moe) is not used, and a
// required one missing (gpt-oss without its sinks) is named.
// A family's tiny model rewritten as `name`: the tensors `keep` says, then
// those `add` writes; the metadata edited by `edit_md`.
std::string rewrite(const std::string& family, const std::string& name, const std::function<bool(const std::string&)>& keep,
                    const std::function<void(kiln::gguf::Writer&)>& add, const std::function<void(Metadata&)>& edit_md = nullptr) {
    const std::string dir = kiln::test::temp_dir();
    kiln::test::write_tiny_model(family, kiln::test::smollm2_path(), dir + "/" + name + "-src.gguf");
    kiln::gguf::File src = kiln::gguf::File::open(dir + "/" + name + "-src.gguf");
    kiln::gguf::Writer w;
    w.metadata() = kiln::gguf::materialize_metadata(src);
    if (edit_md) edit_md(w.metadata());
    for (const auto& t : src.tensors())
        if (keep(t.name)) w.add_tensor_view(t.name, t.type, t.shape, src.tensor_data(t), t.bytes);
    add(w);
    w.write(dir + "/" + name + ".gguf");
    return dir + "/" + name + ".gguf";
}

bool all(const std::string&) { return true; }

TEST(TensorRules, ExpertLayersAndTheirPartsPerFamily) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    // qwen2 (dense) with a router: its graph has no expert layers.
    std::string e = error_of([&] {
        kiln::Model::load(rewrite("qwen2", "router", all, [](kiln::gguf::Writer& w) {
            w.add_tensor("blk.0.ffn_gate_inp.weight", kiln::GgmlType::F32, {256, 8}, f32_bytes(std::vector<float>(256 * 8, 0.0f)));
        }));
    });
    EXPECT_NE(e.find("'blk.0.ffn_gate_inp.weight': a mixture-of-experts layer"), std::string::npos) << e;
    EXPECT_NE(e.find("'qwen2'"), std::string::npos) << e;
    // qwen3moe with attention sinks: gpt-oss's, not qwen3moe's.
    e = error_of([&] {
        kiln::Model::load(rewrite("qwen3moe", "sinks", all, [](kiln::gguf::Writer& w) {
            w.add_tensor("blk.0.attn_sinks.weight", kiln::GgmlType::F32, {4}, f32_bytes(std::vector<float>(4, 0.0f)));
        }));
    });
    EXPECT_NE(e.find("'blk.0.attn_sinks.weight' is not used by architecture 'qwen3moe'"), std::string::npos) << e;
    // qwen3moe with a router bias.
    e = error_of([&] {
        kiln::Model::load(rewrite("qwen3moe", "router-bias", all, [](kiln::gguf::Writer& w) {
            w.add_tensor("blk.1.ffn_gate_inp.bias", kiln::GgmlType::F32, {8}, f32_bytes(std::vector<float>(8, 0.0f)));
        }));
    });
    EXPECT_NE(e.find("'blk.1.ffn_gate_inp.bias' is not used by architecture 'qwen3moe'"), std::string::npos) << e;
    // gpt-oss without its sinks: required, as in llama.cpp's loader.
    e = error_of([&] {
        kiln::Model::load(rewrite("gpt-oss", "no-sinks", [](const std::string& n) { return n != "blk.1.attn_sinks.weight"; },
                                  [](kiln::gguf::Writer&) {}));
    });
    EXPECT_NE(e.find("'blk.1.attn_sinks.weight' not found"), std::string::npos) << e;
    // qwen2moe without the shared expert's gate.
    e = error_of([&] {
        kiln::Model::load(rewrite("qwen2moe", "no-shexp-gate", [](const std::string& n) { return n != "blk.0.ffn_gate_inp_shexp.weight"; },
                                  [](kiln::gguf::Writer&) {}));
    });
    EXPECT_NE(e.find("'blk.0.ffn_gate_inp_shexp.weight' not found"), std::string::npos) << e;
}

// The parallel-block families' rules: phi2's output bias is required; command-r
// never reads an output head or norm biases (llama.cpp refuses such files);
// gptneox needs use_parallel_residual; a stablelm layer without ffn_norm is a
// parallel block (it loads, and its logits change), its neighbours stay sequential.
TEST(TensorRules, ParallelBlockFamilies) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    auto none = [](kiln::gguf::Writer&) {};
    std::string e = error_of([&] {
        kiln::Model::load(rewrite("phi2", "phi2-no-output-bias", [](const std::string& n) { return n != "output.bias"; }, none));
    });
    EXPECT_NE(e.find("'output.bias' not found"), std::string::npos) << e;
    e = error_of([&] {
        kiln::Model::load(rewrite("command-r", "command-r-output", all, [](kiln::gguf::Writer& w) {
            w.add_tensor("output.weight", kiln::GgmlType::F32, {64, 4}, f32_bytes(std::vector<float>(64 * 4, 0.0f)));
        }));
    });
    EXPECT_NE(e.find("'output.weight' is not used by architecture 'command-r'"), std::string::npos) << e;
    e = error_of([&] {
        kiln::Model::load(rewrite("command-r", "command-r-norm-bias", all, [](kiln::gguf::Writer& w) {
            w.add_tensor("blk.0.attn_norm.bias", kiln::GgmlType::F32, {64}, f32_bytes(std::vector<float>(64, 0.0f)));
        }));
    });
    EXPECT_NE(e.find("'blk.0.attn_norm.bias' is not used by architecture 'command-r'"), std::string::npos) << e;
    e = error_of([&] {
        kiln::Model::load(rewrite("gptneox", "gptneox-no-flag", all, none, [](Metadata& md) { md.erase("gptneox.use_parallel_residual"); }));
    });
    EXPECT_NE(e.find("gptneox.use_parallel_residual"), std::string::npos) << e;

    auto last_logits = [](const std::string& path) {
        auto model = kiln::Model::load(path);
        kiln::Context ctx(model, {.n_ctx = 64});
        auto prompt = kiln::test::tiny_model_prompt();
        prompt.resize(8);
        ctx.decode(prompt);
        auto l = ctx.last_logits();
        return std::vector<float>(l.begin(), l.end());
    };
    const auto sequential = last_logits(rewrite("stablelm", "stablelm-all", all, none));
    const auto mixed = last_logits(rewrite("stablelm", "stablelm-mixed", [](const std::string& n) {
        return n != "blk.1.ffn_norm.weight" && n != "blk.1.ffn_norm.bias";
    }, none));
    ASSERT_EQ(mixed.size(), sequential.size());
    EXPECT_NE(mixed, sequential);
}

}  // namespace

// The later MoE families' rules: what their llama.cpp loaders require or never
// read is a load error naming the tensor or key.
TEST(TensorRules, GranitePhiDeepseekMoeRefusals) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    const std::string dir = kiln::test::temp_dir();
    // A tiny model rewritten: tensors kept by `keep`, metadata edited.
    auto rewrite = [&](const std::string& family, const std::string& name, const std::function<bool(const std::string&)>& keep,
                       const std::function<void(Metadata&)>& edit) {
        kiln::test::write_tiny_model(family, kiln::test::smollm2_path(), dir + "/" + name + "-src.gguf");
        kiln::gguf::File src = kiln::gguf::File::open(dir + "/" + name + "-src.gguf");
        kiln::gguf::Writer w;
        w.metadata() = kiln::gguf::materialize_metadata(src);
        edit(w.metadata());
        for (const auto& t : src.tensors())
            if (keep(t.name)) w.add_tensor_view(t.name, t.type, t.shape, src.tensor_data(t), t.bytes);
        w.write(dir + "/" + name + ".gguf");
        return dir + "/" + name + ".gguf";
    };
    auto all = [](const std::string&) { return true; };
    auto same = [](Metadata&) {};
    // granitemoe: the shared expert's tensors only with a positive shared width.
    std::string e = error_of([&] {
        kiln::Model::load(rewrite("granitemoe@shared", "gm-noshared", all, [](Metadata& md) { md.erase("granitemoe.expert_shared_feed_forward_length"); }));
    });
    EXPECT_NE(e.find("ffn_gate_shexp.weight' is not used by architecture 'granitemoe'"), std::string::npos) << e;
    // granitemoe: a weight scale contradicts its fixed (unscaled) routing.
    e = error_of([&] {
        kiln::Model::load(rewrite("granitemoe", "gm-scale", all, [](Metadata& md) { md.add("granitemoe.expert_weights_scale", Value::f32(2.0f)); }));
    });
    EXPECT_NE(e.find("'granitemoe.expert_weights_scale'"), std::string::npos) << e;
    // phimoe: its RMS norms' biases are required.
    e = error_of([&] { kiln::Model::load(rewrite("phimoe", "pm-nobias", [](const std::string& n) { return n != "blk.1.ffn_norm.bias"; }, same)); });
    EXPECT_NE(e.find("'blk.1.ffn_norm.bias' not found"), std::string::npos) << e;
    // deepseek2: a file from before attn_kv_b was split, MTP layers, a missing attn_k_b.
    e = error_of([&] {
        kiln::Model::load(rewrite("deepseek2", "ds-legacy", all, [](Metadata& md) { md.erase("deepseek2.attention.key_length_mla"); }));
    });
    EXPECT_NE(e.find("'deepseek2.attention.key_length_mla'"), std::string::npos) << e;
    EXPECT_NE(e.find("attn_kv_b"), std::string::npos) << e;
    {
        // An MTP layer after the trunk is skipped: the last of the 3 layers here, with a load note.
        auto m = kiln::Model::load(rewrite("deepseek2", "ds-mtp", all, [](Metadata& md) { md.add("deepseek2.nextn_predict_layers", Value::u32(1)); }));
        EXPECT_EQ(m->n_layer(), 2);
        bool noted = false;
        for (const std::string& n : m->load_notes()) noted |= n.find("multi-token-prediction layer from blk.2") != std::string::npos;
        EXPECT_TRUE(noted);
    }
    e = error_of([&] { kiln::Model::load(rewrite("deepseek2", "ds-nokb", [](const std::string& n) { return n != "blk.2.attn_k_b.weight"; }, same)); });
    EXPECT_NE(e.find("'blk.2.attn_k_b.weight' not found"), std::string::npos) << e;
    e = error_of([&] {
        kiln::Model::load(rewrite("deepseek2", "ds-kvheads", all, [](Metadata& md) { md.add("deepseek2.attention.head_count_kv", Value::u32(2)); }));
    });
    EXPECT_NE(e.find("1 KV head"), std::string::npos) << e;
}

// gemma4's rules as llama.cpp's loader and graph have them: Q/K/V biases are not
// read (a file with one is refused naming it), the sliding pattern must be a
// per-layer array, the per-layer-embedding width key is required, bidirectional
// sliding layers are refused, and a shared-KV layer must find a source of its own
// kind (here the E2B model's shared layers moved by one).
TEST(TensorRules, Gemma4Refusals) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    auto none = [](kiln::gguf::Writer&) {};
    std::string e = error_of([&] {
        kiln::Model::load(rewrite("gemma4", "gemma4-qbias", all, [](kiln::gguf::Writer& w) {
            w.add_tensor("blk.0.attn_q.bias", kiln::GgmlType::F32, {64}, f32_bytes(std::vector<float>(64, 0.0f)));
        }));
    });
    EXPECT_NE(e.find("'blk.0.attn_q.bias' is not used by architecture 'gemma4'"), std::string::npos) << e;
    e = error_of([&] {
        kiln::Model::load(rewrite("gemma4", "gemma4-pattern", all, none, [](Metadata& md) {
            md.erase("gemma4.attention.sliding_window_pattern");
            md.add("gemma4.attention.sliding_window_pattern", Value::u32(4));
        }));
    });
    EXPECT_NE(e.find("gemma4.attention.sliding_window_pattern"), std::string::npos) << e;
    EXPECT_NE(e.find("array of bools"), std::string::npos) << e;
    e = error_of([&] {
        kiln::Model::load(rewrite("gemma4", "gemma4-no-ple-key", all, none,
                                  [](Metadata& md) { md.erase("gemma4.embedding_length_per_layer_input"); }));
    });
    EXPECT_NE(e.find("'gemma4.embedding_length_per_layer_input' not found"), std::string::npos) << e;
    e = error_of([&] {
        kiln::Model::load(rewrite("gemma4", "gemma4-bidir", all, none,
                                  [](Metadata& md) { md.add("gemma4.attention.causal", Value::boolean(false)); }));
    });
    EXPECT_NE(e.find("gemma4.attention.causal"), std::string::npos) << e;
    e = error_of([&] {
        kiln::Model::load(rewrite("gemma4@e2b", "gemma4-shared", all, none, [](Metadata& md) {
            md.erase("gemma4.attention.shared_kv_layers");
            md.add("gemma4.attention.shared_kv_layers", Value::u32(1));
        }));
    });
    EXPECT_NE(e.find("layer 5 shares layer 4's KV cache"), std::string::npos) << e;
}

// mpt's Q / K norms: llama.cpp 0.3.36 loads them but its graph aborts on them, so
// kiln refuses such a file naming the tensor; baichuan needs its output head.
TEST(TensorRules, MptAndBaichuanRefusals) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    auto none = [](kiln::gguf::Writer&) {};
    std::string e = error_of([&] {
        kiln::Model::load(rewrite("mpt", "mpt-qnorm", all, [](kiln::gguf::Writer& w) {
            w.add_tensor("blk.0.attn_q_norm.weight", kiln::GgmlType::F32, {64}, f32_bytes(std::vector<float>(64, 1.0f)));
        }));
    });
    EXPECT_NE(e.find("'blk.0.attn_q_norm.weight' is not used by architecture 'mpt'"), std::string::npos) << e;
    e = error_of([&] {
        kiln::Model::load(rewrite("baichuan@13b", "baichuan-no-output", [](const std::string& n) { return n != "output.weight"; }, none));
    });
    EXPECT_NE(e.find("'output.weight' not found"), std::string::npos) << e;
}
