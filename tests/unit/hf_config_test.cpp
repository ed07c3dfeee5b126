// HfConfig: config.json lookups, text_config nesting (multimodal configs), typed getters and their errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "formats/hf_config.h"
#include "test_paths.h"

namespace saker {
namespace {

namespace fs = std::filesystem;

// Shaped like a Qwen3 config.json.
constexpr const char* kQwen3 = R"({
  "architectures": ["Qwen3ForCausalLM"],
  "model_type": "qwen3",
  "hidden_size": 1024,
  "intermediate_size": 3072,
  "num_hidden_layers": 28,
  "num_attention_heads": 16,
  "num_key_value_heads": 8,
  "head_dim": 128,
  "max_position_embeddings": 40960.0,
  "rms_norm_eps": 1e-06,
  "rope_theta": 1000000,
  "rope_scaling": null,
  "sliding_window": null,
  "tie_word_embeddings": true,
  "eos_token_id": 151645,
  "bos_token_id": [151643, 151644],
  "torch_dtype": "bfloat16",
  "vocab_size": 151936
})";

// Shaped like a Gemma 3 multimodal config: the LLM's parameters live under text_config.
constexpr const char* kGemma3 = R"({
  "architectures": ["Gemma3ForConditionalGeneration"],
  "model_type": "gemma3",
  "image_token_index": 262144,
  "mm_tokens_per_image": 256,
  "text_config": {
    "model_type": "gemma3_text",
    "hidden_size": 2560,
    "num_hidden_layers": 34,
    "sliding_window": 1024,
    "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
    "rope_theta": 1000000.0,
    "query_pre_attn_scalar": 256
  },
  "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 1152, "num_hidden_layers": 27},
  "torch_dtype": "bfloat16",
  "num_hidden_layers": 999
})";

Result<HfConfig> parse(const std::string& text) { return HfConfig::parse(text, "test/config.json"); }

void expect_status(const Status& s, StatusCode code, std::initializer_list<std::string> fragments) {
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), code) << s.to_string();
  for (const auto& f : fragments) {
    EXPECT_NE(s.message().find(f), std::string::npos) << "message \"" << s.message() << "\" lacks \"" << f << "\"";
  }
}

TEST(HfConfig, PlainConfig) {
  auto r = parse(kQwen3);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const HfConfig& c = *r;
  EXPECT_EQ(c.origin(), "test/config.json");
  EXPECT_EQ(c.architecture(), "Qwen3ForCausalLM");
  EXPECT_EQ(c.model_type(), "qwen3");
  EXPECT_EQ(c.text_model_type(), "qwen3");
  EXPECT_FALSE(c.has_text_config());
  EXPECT_EQ(&c.text_json(), &c.json());

  EXPECT_EQ(c.get_int("num_hidden_layers").value(), 28);
  EXPECT_EQ(c.get_int("max_position_embeddings").value(), 40960);  // an integral float is an integer
  EXPECT_EQ(c.get_float("rms_norm_eps").value(), 1e-6);
  EXPECT_EQ(c.get_float("rope_theta").value(), 1e6);  // an integer is a float
  EXPECT_EQ(c.get_bool("tie_word_embeddings").value(), true);
  EXPECT_EQ(c.get_string("model_type").value(), "qwen3");
  EXPECT_EQ(c.get_int_list("eos_token_id").value(), (std::vector<int64_t>{151645}));
  EXPECT_EQ(c.get_int_list("bos_token_id").value(), (std::vector<int64_t>{151643, 151644}));
  EXPECT_EQ(c.dtype_name(), "bfloat16");
  EXPECT_EQ(c.dtype().value(), DType::kBF16);

  // Defaults apply when a key is absent or null, not when it has the wrong type.
  EXPECT_EQ(c.get_int("sliding_window", 4096).value(), 4096);
  EXPECT_EQ(c.get_int("absent", -1).value(), -1);
  EXPECT_EQ(c.get_int("num_hidden_layers", 5).value(), 28);
  EXPECT_EQ(c.get_float("partial_rotary_factor", 1.0).value(), 1.0);
  EXPECT_EQ(c.get_bool("attention_bias", false).value(), false);
  EXPECT_EQ(c.get_string("hidden_act", "silu").value(), "silu");
  EXPECT_FALSE(c.has("rope_scaling"));
  EXPECT_FALSE(c.has("absent"));
  EXPECT_TRUE(c.has("head_dim"));
  EXPECT_EQ(c.find("absent"), nullptr);
  ASSERT_NE(c.find("rope_scaling"), nullptr);
  EXPECT_TRUE(c.find("rope_scaling")->is_null());
}

TEST(HfConfig, GetterErrorsNameTheKey) {
  auto r = parse(kQwen3);
  ASSERT_TRUE(r.ok());
  const HfConfig& c = *r;
  expect_status(c.get_int("num_experts").status(), StatusCode::kNotFound, {"test/config.json", "\"num_experts\"", "missing"});
  expect_status(c.get_int("sliding_window").status(), StatusCode::kNotFound, {"\"sliding_window\""});
  expect_status(c.get_int("rms_norm_eps").status(), StatusCode::kCorruptFile, {"\"rms_norm_eps\"", "number", "an integer"});
  expect_status(c.get_int("model_type").status(), StatusCode::kCorruptFile, {"\"model_type\"", "string \"qwen3\""});
  expect_status(c.get_int("tie_word_embeddings").status(), StatusCode::kCorruptFile, {"boolean"});
  expect_status(c.get_int("architectures", 3).status(), StatusCode::kCorruptFile, {"\"architectures\"", "array"});
  expect_status(c.get_float("torch_dtype").status(), StatusCode::kCorruptFile, {"\"torch_dtype\"", "a number"});
  expect_status(c.get_float("tie_word_embeddings").status(), StatusCode::kCorruptFile, {"a number"});
  expect_status(c.get_bool("head_dim").status(), StatusCode::kCorruptFile, {"\"head_dim\"", "true or false"});
  expect_status(c.get_string("head_dim", "x").status(), StatusCode::kCorruptFile, {"\"head_dim\"", "a string"});
  expect_status(c.get_int_list("torch_dtype").status(), StatusCode::kCorruptFile, {"array of integers"});
  expect_status(c.get_int_list("architectures").status(), StatusCode::kCorruptFile, {"array of integers"});

  auto big = parse(R"({"a": 18446744073709551615, "b": 1e300, "c": 4.5, "d": -3, "e": -2.0})");
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->get_int("a").status().code(), StatusCode::kCorruptFile);  // does not fit int64
  EXPECT_EQ(big->get_int("b").status().code(), StatusCode::kCorruptFile);
  EXPECT_EQ(big->get_int("c").status().code(), StatusCode::kCorruptFile);
  EXPECT_EQ(big->get_int("d").value(), -3);
  EXPECT_EQ(big->get_int("e").value(), -2);
  EXPECT_EQ(big->get_float("a").value(), 18446744073709551615.0);
}

TEST(HfConfig, TextConfigNesting) {
  auto r = parse(kGemma3);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const HfConfig& c = *r;
  EXPECT_TRUE(c.has_text_config());
  EXPECT_EQ(c.architecture(), "Gemma3ForConditionalGeneration");
  EXPECT_EQ(c.model_type(), "gemma3");
  EXPECT_EQ(c.text_model_type(), "gemma3_text");
  EXPECT_EQ(c.text_json()["hidden_size"], 2560);
  // text_config wins over the top level; keys only at the top level are still found.
  EXPECT_EQ(c.get_int("num_hidden_layers").value(), 34);
  EXPECT_EQ(c.get_int("hidden_size").value(), 2560);
  EXPECT_EQ(c.get_int("image_token_index").value(), 262144);
  EXPECT_EQ(c.get_int("sliding_window", 0).value(), 1024);
  EXPECT_EQ(c.dtype().value(), DType::kBF16);
  // Dotted paths reach into nested objects.
  EXPECT_EQ(c.get_float("rope_scaling.factor").value(), 8.0);
  EXPECT_EQ(c.get_string("rope_scaling.rope_type").value(), "linear");
  EXPECT_EQ(c.get_int("vision_config.hidden_size").value(), 1152);
  EXPECT_EQ(c.get_float("rope_scaling.absent", 1.0).value(), 1.0);
  EXPECT_EQ(c.get_int("hidden_size.deeper", 7).value(), 7);  // walking through a number finds nothing
  expect_status(c.get_int("num_experts").status(), StatusCode::kNotFound, {"text_config and at the top level"});
  // Copies are independent values.
  HfConfig copy = c;
  EXPECT_EQ(copy.get_int("num_hidden_layers").value(), 34);

  expect_status(parse(R"({"text_config": [1]})").status(), StatusCode::kCorruptFile, {"\"text_config\"", "array"});
  auto null_text = parse(R"({"text_config": null, "hidden_size": 8})");
  ASSERT_TRUE(null_text.ok());
  EXPECT_FALSE(null_text->has_text_config());
  EXPECT_EQ(null_text->get_int("hidden_size").value(), 8);
}

TEST(HfConfig, DTypes) {
  const std::vector<std::pair<std::string, DType>> ok = {
      {R"({"torch_dtype": "float32"})", DType::kF32},   {R"({"torch_dtype": "float16"})", DType::kF16},
      {R"({"dtype": "bfloat16"})", DType::kBF16},       {R"({"torch_dtype": "torch.float16"})", DType::kF16},
      {R"({"torch_dtype": "float64"})", DType::kF64},
  };
  for (const auto& [text, dtype] : ok) {
    auto c = parse(text);
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->dtype().value(), dtype) << text;
  }
  expect_status(parse(R"({"torch_dtype": "int8"})")->dtype().status(), StatusCode::kUnsupported, {"\"int8\""});
  expect_status(parse(R"({"a": 1})")->dtype().status(), StatusCode::kNotFound, {"torch_dtype"});
  EXPECT_EQ(parse(R"({"torch_dtype": 3})")->dtype_name(), "");
  EXPECT_EQ(parse(R"({"dtype": "float16", "torch_dtype": "bfloat16"})")->dtype().value(), DType::kBF16);
}

TEST(HfConfig, MissingArchitectureFields) {
  auto r = parse(R"({"architectures": [], "model_type": 3})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->architecture(), "");
  EXPECT_EQ(r->model_type(), "");
  auto none = parse("{}");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->architecture(), "");
  EXPECT_EQ(none->text_model_type(), "");
}

TEST(HfConfig, MalformedDocuments) {
  expect_status(parse("").status(), StatusCode::kCorruptFile, {"test/config.json", "invalid JSON at byte 0"});
  expect_status(parse("{\"a\": }").status(), StatusCode::kCorruptFile, {"invalid JSON at byte 6"});
  expect_status(parse("{\"a\": 1,\n \"b\": tru}").status(), StatusCode::kCorruptFile, {"invalid JSON at byte", "line 2"});
  expect_status(parse("[1, 2]").status(), StatusCode::kCorruptFile, {"expected a JSON object", "array"});
  expect_status(parse("\"text\"").status(), StatusCode::kCorruptFile, {"expected a JSON object"});
  expect_status(parse(std::string(1 << 20, '[')).status(), StatusCode::kCorruptFile, {"nested deeper than 64", "byte 64"});
  const std::string deep_ok = "{\"a\": " + std::string(63, '[') + std::string(63, ']') + "}";
  EXPECT_TRUE(parse(deep_ok).ok()) << parse(deep_ok).status().to_string();
  expect_status(parse("{\"a\": \"\xC3\x28\"}").status(), StatusCode::kCorruptFile, {"invalid JSON"});
  // Duplicate keys follow Python's json: the last one wins.
  EXPECT_EQ(parse(R"({"a": 1, "a": 2})")->get_int("a").value(), 2);
}

TEST(HfConfig, LoadFromFolderOrFile) {
  const fs::path dir = testing::temp_dir() / "hf_config_load";
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    std::ofstream f(dir / "config.json");
    f << kGemma3;
  }
  auto from_dir = HfConfig::load(dir.string());
  ASSERT_TRUE(from_dir.ok()) << from_dir.status().to_string();
  EXPECT_EQ(from_dir->origin(), (dir / "config.json").string());
  EXPECT_EQ(from_dir->get_int("num_hidden_layers").value(), 34);
  auto from_file = HfConfig::load((dir / "config.json").string());
  ASSERT_TRUE(from_file.ok());
  EXPECT_EQ(from_file->text_model_type(), "gemma3_text");
  // Errors name the file.
  expect_status(from_file->get_int("nope").status(), StatusCode::kNotFound, {(dir / "config.json").string()});
  {
    std::ofstream f(dir / "config.json");
    f << "{\"a\": 1,";
  }
  expect_status(HfConfig::load(dir.string()).status(), StatusCode::kCorruptFile,
                {(dir / "config.json").string(), "invalid JSON"});
  {
    std::ofstream f(dir / "config.json");  // empty file
  }
  expect_status(HfConfig::load(dir.string()).status(), StatusCode::kCorruptFile, {"invalid JSON"});
  fs::remove(dir / "config.json");
  expect_status(HfConfig::load(dir.string()).status(), StatusCode::kNotFound, {"config.json"});
}

}  // namespace
}  // namespace saker
