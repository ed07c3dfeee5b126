// ModelHParams for qwen2 (Qwen2 / Qwen2.5 / Qwen2.5-Coder): from GGUF metadata as llama.cpp writes it and from
// an HF config.json; the HF -> GGUF names of its q/k/v biases; a synthetic qwen2 model that binds.
#include <gtest/gtest.h>

#include <filesystem>

#include "formats/gguf.h"
#include "formats/hf_config.h"
#include "models/hparams.h"
#include "models/model.h"
#include "models/model_weights.h"
#include "models/synth.h"
#include "test_paths.h"

namespace saker {
namespace {

// The geometry of Qwen2.5-Coder-0.5B-Instruct's config.json.
constexpr const char* kQwen2Config = R"({
  "architectures": ["Qwen2ForCausalLM"],
  "model_type": "qwen2",
  "hidden_size": 896,
  "intermediate_size": 4864,
  "num_hidden_layers": 24,
  "num_attention_heads": 14,
  "num_key_value_heads": 2,
  "max_position_embeddings": 32768,
  "max_window_layers": 24,
  "rms_norm_eps": 1e-06,
  "rope_theta": 1000000.0,
  "sliding_window": 32768,
  "use_sliding_window": false,
  "tie_word_embeddings": true,
  "torch_dtype": "bfloat16",
  "vocab_size": 151936
})";

// Metadata keys of a llama.cpp qwen2 GGUF (no attention.key_length: head_dim is hidden / heads).
GgufWriter qwen2_gguf(int64_t n_vocab, bool with_output) {
  GgufWriter w;
  auto u32 = [](uint32_t v) { return GgufValue::from_u32(v); };
  w.set("general.architecture", GgufValue::from_string("qwen2"));
  w.set("qwen2.block_count", u32(24));
  w.set("qwen2.context_length", u32(32768));
  w.set("qwen2.embedding_length", u32(896));
  w.set("qwen2.feed_forward_length", u32(4864));
  w.set("qwen2.attention.head_count", u32(14));
  w.set("qwen2.attention.head_count_kv", u32(2));
  w.set("qwen2.rope.freq_base", GgufValue::from_f32(1000000.0f));
  w.set("qwen2.attention.layer_norm_rms_epsilon", GgufValue::from_f32(1e-6f));
  auto zeros = [](uint8_t*) {};
  EXPECT_TRUE(w.add_tensor_generated("token_embd.weight", DType::kF32, {n_vocab, 896}, zeros).ok());
  if (with_output) {
    EXPECT_TRUE(w.add_tensor_generated("output.weight", DType::kF32, {n_vocab, 896}, zeros).ok());
  }
  return w;
}

TEST(Qwen2HParams, FromGgufMetadata) {
  for (bool with_output : {true, false}) {
    const std::vector<uint8_t> bytes = qwen2_gguf(64, with_output).to_bytes();
    auto f = GgufFile::parse({bytes.data(), bytes.size()});
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    auto h = hparams_from_gguf(*f);
    ASSERT_TRUE(h.ok()) << h.status().to_string();
    EXPECT_EQ(h->arch, "qwen2");
    EXPECT_EQ(h->n_layer, 24);
    EXPECT_EQ(h->n_embd, 896);
    EXPECT_EQ(h->n_ff, 4864);
    EXPECT_EQ(h->n_head, 14);
    EXPECT_EQ(h->n_head_kv, 2);
    EXPECT_EQ(h->head_dim, 64);
    EXPECT_EQ(h->n_rot, 64);
    EXPECT_EQ(h->n_vocab, 64);
    EXPECT_EQ(h->n_ctx_train, 32768);
    EXPECT_DOUBLE_EQ(h->rope_theta, 1e6);
    EXPECT_FLOAT_EQ(h->rms_eps, 1e-6f);
    EXPECT_EQ(h->rope_style, ref::RopeStyle::kNeox);  // llama.cpp: LLAMA_ROPE_TYPE_NEOX, rows unpermuted
    EXPECT_TRUE(h->qkv_bias);
    EXPECT_FALSE(h->qk_norm);
    EXPECT_EQ(h->tied_embeddings, !with_output);
    EXPECT_NE(h->summary().find("q/k/v biases"), std::string::npos) << h->summary();
  }
  EXPECT_TRUE(is_supported_architecture("qwen2"));
}

TEST(Qwen2HParams, FromHfConfig) {
  auto c = HfConfig::parse(kQwen2Config, "qwen2/config.json");
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  auto h = hparams_from_hf(*c);
  ASSERT_TRUE(h.ok()) << h.status().to_string();
  EXPECT_EQ(h->arch, "qwen2");
  EXPECT_EQ(h->n_vocab, 151936);
  EXPECT_EQ(h->n_layer, 24);
  EXPECT_EQ(h->head_dim, 64);  // no head_dim key: hidden / heads
  EXPECT_EQ(h->n_head_kv, 2);
  EXPECT_EQ(h->n_ctx_train, 32768);
  EXPECT_DOUBLE_EQ(h->rope_theta, 1e6);
  EXPECT_EQ(h->rope_style, ref::RopeStyle::kNeox);
  EXPECT_TRUE(h->qkv_bias);
  EXPECT_FALSE(h->qk_norm);
  EXPECT_TRUE(h->tied_embeddings);
  EXPECT_EQ(h->sliding_window, 0);  // use_sliding_window is false: every layer attends to everything

  // Qwen3 has q/k norms and no biases: the switches stay apart.
  std::string qwen3 = kQwen2Config;
  qwen3.replace(qwen3.find("Qwen2ForCausalLM"), 16, "Qwen3ForCausalLM");
  auto c3 = HfConfig::parse(qwen3);
  ASSERT_TRUE(c3.ok()) << c3.status().to_string();
  auto h3 = hparams_from_hf(*c3);
  ASSERT_TRUE(h3.ok()) << h3.status().to_string();
  EXPECT_EQ(h3->arch, "qwen3");
  EXPECT_FALSE(h3->qkv_bias);
  EXPECT_TRUE(h3->qk_norm);
}

TEST(Qwen2HParams, SlidingWindowConfigIsRefused) {
  std::string text = kQwen2Config;
  text.replace(text.find("\"use_sliding_window\": false"), 27, "\"use_sliding_window\": true");
  auto c = HfConfig::parse(text, "qwen2/config.json");
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  auto h = hparams_from_hf(*c);
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(h.status().message().find("use_sliding_window"), std::string::npos) << h.status().to_string();
  EXPECT_NE(h.status().message().find("qwen2/config.json"), std::string::npos);
}

TEST(Qwen2HParams, HfBiasNamesMapToGguf) {
  EXPECT_EQ(ModelWeights::gguf_name_for_hf("model.layers.3.self_attn.q_proj.bias"), "blk.3.attn_q.bias");
  EXPECT_EQ(ModelWeights::gguf_name_for_hf("model.layers.3.self_attn.k_proj.bias"), "blk.3.attn_k.bias");
  EXPECT_EQ(ModelWeights::gguf_name_for_hf("model.layers.12.self_attn.v_proj.bias"), "blk.12.attn_v.bias");
  EXPECT_EQ(ModelWeights::gguf_name_for_hf("model.layers.3.self_attn.o_proj.bias"), "");  // Qwen2 has none
}

TEST(Qwen2HParams, SynthTinyCarriesF32BiasesAndBinds) {
  const auto path = testing::temp_dir() / "synth-qwen2-tiny.gguf";
  SynthOptions o;
  o.arch = "qwen2";
  o.type = "q8_0";
  ASSERT_TRUE(write_synthetic_model(o, path.string()).ok());
  auto w = ModelWeights::open(path.string());
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  const ModelHParams& h = (*w)->hparams();
  EXPECT_EQ(h.arch, "qwen2");
  EXPECT_TRUE(h.qkv_bias);
  for (const char* name : {"blk.0.attn_q.bias", "blk.1.attn_k.bias", "blk.1.attn_v.bias"}) {
    const TensorView* t = (*w)->find(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(t->dtype, DType::kF32) << name;
  }
  EXPECT_EQ((*w)->find("blk.0.attn_q_norm.weight"), nullptr);
  EXPECT_EQ((*w)->find("blk.0.attn_q.bias")->n_elements(), h.q_dim());
  EXPECT_EQ((*w)->find("blk.0.attn_k.bias")->n_elements(), h.kv_dim());

  std::shared_ptr<const ModelWeights> weights = std::move(w).value();
  auto m = create_model(weights, OpsOptions{});
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  auto unknown = synth_hparams("qwen2", "0.6b");  // a qwen3 preset
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("tiny, 1.5b, 7b"), std::string::npos) << unknown.status().to_string();
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace saker
