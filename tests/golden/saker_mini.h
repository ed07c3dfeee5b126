#pragma once
// Shared by the saker-mini golden tests: where the model lives, loading it, plain greedy decoding.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "engine/generator.h"
#include "models/model.h"
#include "test_paths.h"

namespace saker::testing {

inline std::filesystem::path mini_dir() { return source_dir() / "models" / "saker-mini"; }

inline nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return nlohmann::json::parse(ss.str());
}

inline std::shared_ptr<const ModelWeights> load_mini_weights() {
  auto w = ModelWeights::open((mini_dir() / "saker-mini-q8_0.gguf").string());
  EXPECT_TRUE(w.ok()) << w.status().to_string();
  if (!w.ok()) return nullptr;
  return std::shared_ptr<const ModelWeights>(std::move(w).value());
}

inline std::unique_ptr<Model> load_mini(const OpsOptions& ops, std::shared_ptr<const ModelWeights> weights = nullptr) {
  if (!weights) weights = load_mini_weights();
  if (!weights) return nullptr;
  auto m = create_model(weights, ops);
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return m.ok() ? std::move(m).value() : nullptr;
}

// Plain greedy decoding, n tokens, end-of-generation tokens ignored.
inline std::vector<int32_t> greedy(Generator& g, const std::vector<int32_t>& prompt, int32_t n) {
  GenerateOptions opt;
  opt.max_tokens = n;
  opt.ignore_eos = true;
  opt.sampling.temperature = 0.0f;
  auto r = g.generate(prompt, opt);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? r->tokens : std::vector<int32_t>{};
}

}  // namespace saker::testing

#define SAKER_REQUIRE_MINI()                                                                           \
  if (!std::filesystem::exists(saker::testing::mini_dir() / "saker-mini-q8_0.gguf") ||                 \
      !std::filesystem::exists(saker::testing::mini_dir() / "reference.json"))                         \
  GTEST_SKIP() << "models/saker-mini is absent (package it with tools/train/package.py): test skipped"
