// Seed inputs for the fuzz targets: small valid files of each format (built with saker's own writers or by
// hand), a few near-misses, and libFuzzer dictionaries of the formats' keywords.
#include <cstring>

#include <nlohmann/json.hpp>

#include "formats/gguf.h"
#include "fuzz_target.h"

namespace saker::fuzz {
namespace {

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + 13 * i);
  return v;
}

GgufValue typed(GgufType type, uint64_t u, int64_t i, double f) {
  GgufValue v;
  v.type = type;
  v.u = u;
  v.i = i;
  v.f = f;
  return v;
}

GgufValue array_of(GgufType elem_type) {
  GgufValue v;
  v.type = GgufType::kArray;
  v.array = std::make_shared<GgufArray>();
  v.array->elem_type = elem_type;
  return v;
}

std::vector<Seed> gguf_seeds() {
  std::vector<Seed> seeds;

  {  // Every scalar type, arrays of several types and a nested array; tensors of plain and block types.
    GgufWriter w;
    w.set("general.architecture", GgufValue::from_string("qwen3"));
    w.set("qwen3.block_count", GgufValue::from_u32(2));
    w.set("u8", typed(GgufType::kU8, 7, 0, 0));
    w.set("i8", typed(GgufType::kI8, 0, -7, 0));
    w.set("u16", typed(GgufType::kU16, 700, 0, 0));
    w.set("i16", typed(GgufType::kI16, 0, -700, 0));
    w.set("i32", GgufValue::from_i32(-70000));
    w.set("f32", GgufValue::from_f32(0.25f));
    w.set("bool", GgufValue::from_bool(true));
    w.set("u64", GgufValue::from_u64(1ull << 40));
    w.set("i64", typed(GgufType::kI64, 0, -(1ll << 40), 0));
    w.set("f64", typed(GgufType::kF64, 0, 0, 1e-300));
    w.set("tokenizer.ggml.tokens", GgufValue::from_strings({"<s>", "a", "bc", ""}));
    w.set("tokenizer.ggml.scores", GgufValue::from_f32s({0, -1, -2, -3}));
    w.set("tokenizer.ggml.token_type", GgufValue::from_i32s({3, 1, 1, 1}));
    GgufValue nested = array_of(GgufType::kArray);
    nested.array->arrays.push_back(GgufValue::from_i32s({1, 2}));
    nested.array->arrays.push_back(GgufValue::from_strings({"x"}));
    w.set("nested", nested);
    (void)w.add_tensor_owned("token_embd.weight", DType::kF16, {4, 8}, pattern(4 * 8 * 2, 1));
    (void)w.add_tensor_owned("blk.0.attn_q.weight", DType::kQ8_0, {2, 32}, pattern(2 * 34, 2));
    (void)w.add_tensor_owned("blk.0.attn_norm.weight", DType::kF32, {8}, pattern(32, 3));
    (void)w.add_tensor_owned("blk.0.ffn_down.weight", DType::kQ4_K, {1, 256}, pattern(144, 4));
    (void)w.add_tensor_owned("empty", DType::kI8, {0, 3}, {});
    seeds.push_back({"model", w.to_bytes()});
  }
  {  // Custom alignment, 3-D and 4-D tensors.
    GgufWriter w;
    w.set("general.alignment", GgufValue::from_u32(64));
    (void)w.add_tensor_owned("a", DType::kBF16, {2, 2, 3}, pattern(24, 5));
    (void)w.add_tensor_owned("b", DType::kI32, {1, 2, 1, 2}, pattern(16, 6));
    (void)w.add_tensor_owned("c", DType::kQ6_K, {1, 256}, pattern(210, 7));
    seeds.push_back({"aligned64", w.to_bytes()});
  }
  {  // Metadata only, one string.
    GgufWriter w;
    w.set("tokenizer.chat_template", GgufValue::from_string("{% for m in messages %}{{ m.content }}{% endfor %}"));
    seeds.push_back({"metadata_only", w.to_bytes()});
  }
  {  // Header only.
    GgufWriter w;
    seeds.push_back({"empty", w.to_bytes()});
  }
  {  // Deeply nested arrays (at the limit).
    GgufWriter w;
    GgufValue v = GgufValue::from_i32s({1});
    for (int k = 0; k < 3; ++k) {
      GgufValue outer = array_of(GgufType::kArray);
      outer.array->arrays.push_back(v);
      v = outer;
    }
    w.set("deep", v);
    seeds.push_back({"deep_arrays", w.to_bytes()});
  }
  {  // A near miss: the model with its last byte cut.
    Seed s = seeds.front();
    s.name = "truncated";
    s.bytes.resize(s.bytes.size() - 40);
    seeds.push_back(s);
  }
  return seeds;
}

std::vector<uint8_t> safetensors_file(const nlohmann::json& header, const std::vector<uint8_t>& data, bool pad = true) {
  std::string text = header.dump();
  if (pad) text.append((8 - text.size() % 8) % 8, ' ');
  std::vector<uint8_t> out(8 + text.size() + data.size());
  const uint64_t n = text.size();
  std::memcpy(out.data(), &n, 8);
  std::memcpy(out.data() + 8, text.data(), text.size());
  if (!data.empty()) std::memcpy(out.data() + 8 + text.size(), data.data(), data.size());
  return out;
}

nlohmann::json st_entry(const char* dtype, std::vector<int64_t> shape, uint64_t begin, uint64_t end) {
  return {{"dtype", dtype}, {"shape", shape}, {"data_offsets", {begin, end}}};
}

std::vector<Seed> safetensors_seeds() {
  std::vector<Seed> seeds;
  {
    nlohmann::json h;
    h["__metadata__"] = {{"format", "pt"}};
    h["model.embed_tokens.weight"] = st_entry("BF16", {4, 4}, 0, 32);
    h["model.norm.weight"] = st_entry("F32", {4}, 32, 48);
    h["lm_head.weight"] = st_entry("F16", {2, 4}, 48, 64);
    h["ids"] = st_entry("I64", {2}, 64, 80);
    h["mask"] = st_entry("BOOL", {3}, 80, 83);
    h["fp8"] = st_entry("F8_E4M3", {1, 5}, 83, 88);
    h["scalar"] = st_entry("I8", {}, 88, 89);
    h["empty"] = st_entry("F64", {0}, 89, 89);
    seeds.push_back({"model", safetensors_file(h, pattern(89, 1))});
  }
  {
    nlohmann::json h;
    h["w"] = st_entry("F32", {1, 2, 1, 2, 1}, 0, 16);
    h["u"] = st_entry("U16", {3}, 16, 22);
    h["x"] = st_entry("I32", {2}, 24, 32);
    seeds.push_back({"five_dims", safetensors_file(h, pattern(32, 2), /*pad=*/false)});
  }
  seeds.push_back({"empty_header", safetensors_file(nlohmann::json::object(), {})});
  seeds.push_back({"metadata_only", safetensors_file({{"__metadata__", {{"a", "b"}, {"total", "7"}}}}, {})});
  {  // Near misses: overlapping tensors, and a size that does not match the shape.
    nlohmann::json h;
    h["a"] = st_entry("F32", {4}, 0, 16);
    h["b"] = st_entry("F32", {4}, 8, 24);
    seeds.push_back({"overlap", safetensors_file(h, pattern(24, 3))});
    nlohmann::json s;
    s["a"] = st_entry("F16", {3}, 0, 8);
    seeds.push_back({"size_mismatch", safetensors_file(s, pattern(8, 4))});
  }
  return seeds;
}

std::vector<uint8_t> text_bytes(const std::string& s) { return {s.begin(), s.end()}; }

std::vector<Seed> hf_config_seeds() {
  return {
      {"qwen3", text_bytes(R"({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 1024,
"num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128,
"rms_norm_eps": 1e-06, "rope_theta": 1000000, "rope_scaling": null, "tie_word_embeddings": true,
"eos_token_id": [151645, 151643], "torch_dtype": "bfloat16", "max_position_embeddings": 40960.0})")},
      {"gemma3", text_bytes(R"({"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
"text_config": {"model_type": "gemma3_text", "hidden_size": 2560, "num_hidden_layers": 34,
"rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024},
"vision_config": {"hidden_size": 1152}, "dtype": "bfloat16", "image_token_index": 262144})")},
      {"moe", text_bytes(R"({"model_type": "qwen3_moe", "num_experts": 128, "num_experts_per_tok": 8,
"moe_intermediate_size": 768, "mlp_only_layers": [], "decoder_sparse_step": 1, "norm_topk_prob": true,
"layer_types": ["sliding_attention", "full_attention"], "quantization_config": {"bits": 4, "group_size": 128}})")},
      {"escapes", text_bytes("{\"name\": \"a\\u00e9\\n\\\"b\\\"\", \"x\": -0.0, \"y\": 1E+2, \"z\": [true, false, null]}")},
      {"empty", text_bytes("{}")},
  };
}

}  // namespace

std::vector<std::string> target_names() { return {"gguf", "safetensors", "hf_config"}; }

std::vector<Seed> seeds_for(const std::string& target) {
  if (target == "gguf") return gguf_seeds();
  if (target == "safetensors") return safetensors_seeds();
  if (target == "hf_config") return hf_config_seeds();
  return {};
}

std::vector<std::string> dictionary_for(const std::string& target) {
  const std::vector<std::string> json_tokens = {"{", "}", "[", "]", ":", ",", "\"", "null", "true", "false", "-0",
                                                "1e308", "-1", "18446744073709551615", "9223372036854775807",
                                                "\\u0000", "\\ud800", "0.5"};
  std::vector<std::string> d;
  if (target == "gguf") {
    d = {"GGUF", "general.alignment", "general.architecture", "tokenizer.ggml.tokens", ".block_count"};
    // Little-endian u32 value/tensor type ids and u64 counts.
    for (uint32_t v : {0u, 1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u, 9u, 10u, 11u, 12u, 13u, 14u, 23u, 30u, 39u}) {
      d.emplace_back(reinterpret_cast<const char*>(&v), 4);
    }
    for (uint64_t v : {0ull, 1ull, 32ull, 1ull << 32, 1ull << 63, ~0ull}) d.emplace_back(reinterpret_cast<const char*>(&v), 8);
  } else if (target == "safetensors") {
    d = {"\"dtype\"", "\"shape\"", "\"data_offsets\"", "\"__metadata__\"", "\"F32\"", "\"F16\"", "\"BF16\"",
         "\"F64\"", "\"I64\"", "\"I32\"", "\"I16\"", "\"I8\"", "\"U8\"", "\"BOOL\"", "\"F8_E4M3\"", "\"F8_E5M2\"",
         "\"U64\"", "\"C64\""};
    d.insert(d.end(), json_tokens.begin(), json_tokens.end());
  } else if (target == "hf_config") {
    d = {"\"text_config\"", "\"architectures\"", "\"model_type\"", "\"torch_dtype\"", "\"dtype\"", "\"bfloat16\"",
         "\"float16\"", "\"num_hidden_layers\"", "\"hidden_size\"", "\"rope_scaling\"", "\"factor\"",
         "\"eos_token_id\"", "\"torch.float32\""};
    d.insert(d.end(), json_tokens.begin(), json_tokens.end());
  }
  return d;
}

}  // namespace saker::fuzz
