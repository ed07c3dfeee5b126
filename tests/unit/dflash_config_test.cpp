// DFlash drafter config.json: the z-lab fields are read, and every malformed or mismatched file is refused
// with an error naming the field.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "spec/dflash_config.h"

namespace saker::spec {
namespace {

using nlohmann::json;

json valid() {
  return json{{"architectures", {"DFlashDraftModel"}},
              {"block_size", 16},
              {"num_target_layers", 8},
              {"dflash_config", {{"mask_token_id", 1}, {"target_layer_ids", {1, 4, 6}}}},
              {"hidden_size", 384},
              {"intermediate_size", 1024},
              {"num_hidden_layers", 2},
              {"num_attention_heads", 6},
              {"num_key_value_heads", 2},
              {"head_dim", 64},
              {"rms_norm_eps", 1e-6},
              {"rope_theta", 10000.0},
              {"vocab_size", 16384},
              {"layer_types", {"full_attention", "full_attention"}}};
}

ModelHParams target() {
  ModelHParams h;
  h.n_embd = 384;
  h.n_vocab = 16384;
  h.n_layer = 8;
  return h;
}

void expect_error(const json& j, const std::string& fragment) {
  const auto r = DFlashConfig::parse(j.dump(), "drafter/config.json");
  ASSERT_FALSE(r.ok()) << "parsed: " << j.dump();
  EXPECT_NE(r.status().message().find(fragment), std::string::npos) << r.status().to_string();
  EXPECT_NE(r.status().message().find("drafter/config.json"), std::string::npos) << r.status().to_string();
}

TEST(DFlashConfig, ReadsTheZLabFields) {
  auto c = DFlashConfig::parse(valid().dump(), "config.json");
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->n_layer, 2);
  EXPECT_EQ(c->n_embd, 384);
  EXPECT_EQ(c->q_dim(), 384);
  EXPECT_EQ(c->kv_dim(), 128);
  EXPECT_EQ(c->n_ff, 1024);
  EXPECT_EQ(c->block_size, 16);
  EXPECT_EQ(c->mask_token, 1);
  EXPECT_EQ(c->target_layers, (std::vector<int32_t>{1, 4, 6}));
  EXPECT_DOUBLE_EQ(c->rope_theta, 10000.0);
  EXPECT_TRUE(c->check_target(target()).ok());
}

TEST(DFlashConfig, RefusesMalformedFiles) {
  auto j = valid();
  j["architectures"] = {"Qwen3ForCausalLM"};
  expect_error(j, "not a DFlash drafter");
  j = valid();
  j.erase("block_size");
  expect_error(j, "\"block_size\"");
  j = valid();
  j["block_size"] = 1;
  expect_error(j, "at least 2");
  j = valid();
  j["hidden_size"] = "384";
  expect_error(j, "\"hidden_size\" must be a positive integer");
  j = valid();
  j["num_key_value_heads"] = 4;
  expect_error(j, "not a multiple");
  j = valid();
  j.erase("dflash_config");
  expect_error(j, "dflash_config");
  j = valid();
  j["dflash_config"]["target_layer_ids"] = {4, 1};
  expect_error(j, "strictly ascending");
  j = valid();
  j["dflash_config"]["target_layer_ids"] = json::array();
  expect_error(j, "target_layer_ids");
  j = valid();
  j["dflash_config"]["mask_token_id"] = -1;
  expect_error(j, "mask_token_id");
  j = valid();
  j["layer_types"] = {"sliding_attention", "full_attention"};
  expect_error(j, "sliding_attention");
  const auto bad = DFlashConfig::parse("{\"architectures\": [", "drafter/config.json");
  EXPECT_FALSE(bad.ok());
}

TEST(DFlashConfig, RefusesATargetItWasNotTrainedFor) {
  auto c = DFlashConfig::parse(valid().dump(), "config.json");
  ASSERT_TRUE(c.ok());
  ModelHParams t = target();
  t.n_embd = 512;
  EXPECT_NE(c->check_target(t).message().find("hidden size 384"), std::string::npos);
  t = target();
  t.n_vocab = 32000;
  EXPECT_NE(c->check_target(t).message().find("vocabulary"), std::string::npos);
  t = target();
  t.n_layer = 6;
  EXPECT_NE(c->check_target(t).message().find("taps target layer 6"), std::string::npos);
}

TEST(DFlashConfig, MissingFolderSaysWhatADrafterHolds) {
  const auto r = DFlashConfig::load("/nonexistent-drafter");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("config.json and model.safetensors"), std::string::npos);
}

}  // namespace
}  // namespace saker::spec
