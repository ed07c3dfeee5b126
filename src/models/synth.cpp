#include "models/synth.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <span>

#include "core/half.h"
#include "core/splitmix.h"
#include "core/thread_pool.h"
#include "formats/gguf.h"
#include "text/byte_level.h"

namespace saker {
namespace {

// Random values from splitmix64 streams (core/splitmix.h): each row gets its own so threads never share state.
// Uniform in [-1, 1).
float unit(uint64_t& s) { return static_cast<float>(static_cast<int64_t>(splitmix64(s) >> 11) * 0x1.0p-52 * 2.0 - 1.0); }

constexpr float kWeightStd = 0.02f;
constexpr float kUniformScale = kWeightStd * 1.7320508f;  // uniform on [-a, a] has std a / sqrt(3)

void write_f16(uint8_t* p, float v) {
  const uint16_t h = fp32_to_fp16(v);
  std::memcpy(p, &h, 2);
}

// Fills one row of `type` with random values of std ~kWeightStd: plain types directly, block types as random
// code bytes with their scale fields overwritten so that decoded values have about that spread.
void fill_row(DType type, uint8_t* dst, int64_t n, uint64_t seed) {
  uint64_t s = seed;
  const DTypeTraits& t = traits(type);
  switch (type) {
    case DType::kF32:
      for (int64_t i = 0; i < n; ++i) reinterpret_cast<float*>(dst)[i] = kUniformScale * unit(s);
      return;
    case DType::kF16:
      for (int64_t i = 0; i < n; ++i) reinterpret_cast<uint16_t*>(dst)[i] = fp32_to_fp16(kUniformScale * unit(s));
      return;
    case DType::kBF16:
      for (int64_t i = 0; i < n; ++i) reinterpret_cast<uint16_t*>(dst)[i] = fp32_to_bf16(kUniformScale * unit(s));
      return;
    default: break;
  }
  const int64_t n_blocks = n / t.block_elements;
  uint8_t* b = dst;
  for (int64_t k = 0; k < n_blocks; ++k, b += t.block_bytes) {
    for (int64_t j = 0; j < t.block_bytes; j += 8) {
      const uint64_t r = splitmix64(s);
      std::memcpy(b + j, &r, std::min<int64_t>(8, t.block_bytes - j));
    }
    // Scale fields: the uniform code range times d should give about kWeightStd.
    switch (type) {
      case DType::kQ8_0: write_f16(b, kWeightStd / 74.0f); break;             // q uniform in [-128, 127]
      case DType::kQ4_0: case DType::kIQ4_NL: write_f16(b, kWeightStd / 4.6f); break;
      case DType::kQ4_1: write_f16(b, kWeightStd / 4.6f); write_f16(b + 2, -7.5f * kWeightStd / 4.6f); break;
      case DType::kQ5_0: write_f16(b, kWeightStd / 9.2f); break;
      case DType::kQ5_1: write_f16(b, kWeightStd / 9.2f); write_f16(b + 2, -15.5f * kWeightStd / 9.2f); break;
      case DType::kQ4_K: case DType::kQ5_K:
        // Sub-block scales and mins are random 6-bit values (mean ~32): x = d*sc*q - dmin*m.
        write_f16(b, kWeightStd / (32.0f * (type == DType::kQ4_K ? 4.6f : 9.2f)));
        write_f16(b + 2, kWeightStd * (type == DType::kQ4_K ? 7.5f : 15.5f) / (32.0f * (type == DType::kQ4_K ? 4.6f : 9.2f)));
        break;
      case DType::kQ6_K: write_f16(b + 208, kWeightStd / (64.0f * 18.5f)); break;  // int8 scales ~ |64|, q in [-32, 31]
      case DType::kIQ4_XS: write_f16(b, kWeightStd / (16.0f * 60.0f)); break;     // (ls - 32) ~ 16, kvalues ~ 60
      default: break;
    }
  }
}

bool use_more_bits(int64_t i, int64_t n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

struct Preset {
  const char* name;
  int64_t n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, n_vocab, n_ctx;
  bool tied;
};
constexpr Preset kQwen3Presets[] = {
    {"tiny", 256, 2, 4, 2, 64, 512, 1024, 4096, true},
    {"0.6b", 1024, 28, 16, 8, 128, 3072, 151936, 40960, true},
    {"8b", 4096, 36, 32, 8, 128, 12288, 151936, 40960, false},
    {"32b", 5120, 64, 64, 8, 128, 25600, 151936, 40960, false},
};
// Qwen2.5 geometries whose rows are whole 256-element super-blocks (0.5B's hidden size 896 is not).
constexpr Preset kQwen2Presets[] = {
    {"tiny", 256, 2, 4, 2, 64, 512, 1024, 4096, true},
    {"1.5b", 1536, 28, 12, 2, 128, 8960, 151936, 32768, true},
    {"7b", 3584, 28, 28, 4, 128, 18944, 152064, 32768, false},
};
// llama and gemma3: tiny geometries for tests only.
constexpr Preset kTinyPresets[] = {
    {"tiny", 256, 2, 4, 2, 64, 512, 1024, 4096, true},
};
// Every architecture: 8 query heads over 4 kv heads, so that the model splits over 2 and 4 tensor-parallel
// ranks; a vocabulary of 1030 rows, which does not divide by 4; 3 layers (gemma3: local, global, local).
constexpr Preset kGqaPreset = {"tiny-gqa", 256, 3, 8, 4, 64, 1024, 1030, 4096, false};

}  // namespace

Result<ModelHParams> synth_hparams(const std::string& arch, const std::string& preset) {
  if (arch != "qwen3" && arch != "qwen2" && arch != "llama" && arch != "gemma3") {
    return make_error(StatusCode::kUnsupported,
                      "synth: architecture '{}' is not supported (supported: qwen3, qwen2, llama, gemma3)", arch);
  }
  const std::span<const Preset> presets = arch == "qwen2"   ? std::span<const Preset>(kQwen2Presets)
                                          : arch == "qwen3" ? std::span<const Preset>(kQwen3Presets)
                                                            : std::span<const Preset>(kTinyPresets);
  const Preset* found = preset == kGqaPreset.name ? &kGqaPreset : nullptr;
  for (const Preset& p : presets) {
    if (preset == p.name) found = &p;
  }
  if (found) {
    const Preset& p = *found;
    ModelHParams h;
    h.arch = arch;
    h.n_embd = p.n_embd;
    h.n_layer = p.n_layer;
    h.n_head = p.n_head;
    h.n_head_kv = p.n_head_kv;
    h.head_dim = p.head_dim;
    h.n_ff = p.n_ff;
    h.n_vocab = p.n_vocab;
    h.n_ctx_train = p.n_ctx;
    h.rms_eps = 1e-6f;
    h.rope_theta = 1e6;
    h.tied_embeddings = p.tied || (arch == "gemma3" && p.name == kGqaPreset.name);  // Gemma ties its head
    h.qk_norm = arch == "qwen3" || arch == "gemma3";
    h.qkv_bias = arch == "qwen2";
    h.rope_style = arch == "llama" ? ref::RopeStyle::kInterleaved : ref::RopeStyle::kNeox;
    if (arch == "gemma3") {  // local layers of an 8-token window between global ones; both soft caps
      h.sliding_window = 8;
      h.swa_period = 2;
      h.rope_theta_swa = 10000.0;
      h.embed_scale = std::sqrt(static_cast<float>(h.n_embd));
      h.attn_soft_cap = 50.0f;
      h.final_soft_cap = 30.0f;
    }
    return h;
  }
  std::string names;
  for (const Preset& p : presets) names += fmt::format("{}{}", names.empty() ? "" : ", ", p.name);
  names += fmt::format(", {}", kGqaPreset.name);
  return make_error(StatusCode::kInvalidArgument, "synth: unknown preset '{}' for {} ({})", preset, arch, names);
}

Result<DType> synth_tensor_type(const std::string& scheme, const std::string& name, int64_t layer, int64_t n_layer) {
  const bool is_norm = name.find("norm") != std::string::npos;
  if (is_norm) return DType::kF32;
  if (scheme == "q4_k_m" || scheme == "q5_k_m") {
    const DType base = scheme == "q4_k_m" ? DType::kQ4_K : DType::kQ5_K;
    if (name == "output") return DType::kQ6_K;
    if ((name == "attn_v" || name == "ffn_down") && layer >= 0 && use_more_bits(layer, n_layer)) return DType::kQ6_K;
    return base;
  }
  auto t = dtype_from_name(scheme);
  if (!t) {
    return make_error(StatusCode::kInvalidArgument,
                      "synth: unknown type '{}' (f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q5_k, q6_k, "
                      "iq4_nl, iq4_xs, q4_k_m, q5_k_m)", scheme);
  }
  return *t;
}

Status write_synthetic_model(const SynthOptions& o, const std::string& path) {
  SAKER_ASSIGN_OR_RETURN(ModelHParams h, synth_hparams(o.arch, o.preset));
  GgufWriter w;
  write_gguf_hparams(h, fmt::format("saker-synth-{}-{}-{}", h.arch, o.preset, o.type), o.type, &w);

  // A byte-level vocabulary: the 256 byte symbols, chat markers, and unused fillers up to n_vocab, so any
  // text tokenizes (byte by byte) and any sampled id decodes.
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  for (int b = 0; b < 256; ++b) {
    tokens.push_back(text::byte_to_unicode(static_cast<uint8_t>(b)));
    types.push_back(1);
  }
  // A few merges (space + letter, common English pairs) so the BPE path has work to do.
  std::vector<std::string> merges;
  const std::string space = text::byte_to_unicode(' ');
  for (char c = 'a'; c <= 'z'; ++c) merges.push_back(space + " " + std::string(1, c));
  for (const char* pair : {"th", "he", "in", "er", "an", "re", "on", "at", "en", "nd", "ti", "es", "or", "te",
                           "of", "ed", "is", "it", "al", "ar", "st", "to", "nt", "ng", "se", "ha", "as", "ou"}) {
    merges.push_back(std::string(1, pair[0]) + " " + std::string(1, pair[1]));
  }
  for (const auto& m : merges) {
    tokens.push_back(m.substr(0, m.find(' ')) + m.substr(m.find(' ') + 1));
    types.push_back(1);
  }
  const auto eos_id = static_cast<uint32_t>(tokens.size());
  for (const char* s : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}) {
    tokens.push_back(s);
    types.push_back(3);
  }
  // Fillers are pseudo-words (" ka", " kab", ...), unique by construction, so sampled ids decode to text.
  for (int64_t i = 0; static_cast<int64_t>(tokens.size()) < h.n_vocab; ++i) {
    std::string word = " ";
    for (int64_t v = i; ; v = v / 26 - 1) {
      word.insert(1, 1, static_cast<char>('a' + v % 26));
      if (v < 26) break;
    }
    tokens.push_back(text::bytes_to_byte_level(word + "q"));  // the trailing q keeps them apart from merges
    types.push_back(1);
  }
  w.set("tokenizer.ggml.model", GgufValue::from_string("gpt2"));
  w.set("tokenizer.ggml.pre", GgufValue::from_string("qwen2"));
  w.set("tokenizer.ggml.tokens", GgufValue::from_strings(tokens));
  w.set("tokenizer.ggml.token_type", GgufValue::from_i32s(types));
  w.set("tokenizer.ggml.merges", GgufValue::from_strings(merges));
  w.set("tokenizer.ggml.eos_token_id", GgufValue::from_u32(eos_id));
  w.set("tokenizer.ggml.bos_token_id", GgufValue::from_u32(eos_id));
  w.set("tokenizer.ggml.add_bos_token", GgufValue::from_bool(false));

  uint64_t tensor_seed = o.seed * 1000003ull;
  auto add = [&](const std::string& name, const std::string& kind, int64_t layer,
                 std::vector<int64_t> shape) -> Status {
    SAKER_ASSIGN_OR_RETURN(DType type, synth_tensor_type(o.type, kind, layer, h.n_layer));
    if (shape.size() == 1) type = DType::kF32;  // vectors (norms, biases) stay F32, as in llama.cpp's files
    const uint64_t seed = ++tensor_seed;
    const bool is_norm = kind.find("norm") != std::string::npos;
    const int64_t n_cols = shape.back();
    int64_t n_rows = 1;
    for (size_t i = 0; i + 1 < shape.size(); ++i) n_rows *= shape[i];
    return w.add_tensor_generated(name, type, shape, [=](uint8_t* dst) {
      const uint64_t rb = row_bytes(type, n_cols).value_or(0);
      if (is_norm) {  // RMSNorm weights near 1, as trained models have them
        float* f = reinterpret_cast<float*>(dst);
        uint64_t s = seed;
        for (int64_t i = 0; i < n_rows * n_cols; ++i) f[i] = 1.0f + 0.1f * unit(s);
        return;
      }
      ThreadPool::global().parallel_for(n_rows, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) fill_row(type, dst + r * rb, n_cols, seed * 0x100000001B3ull + r);
      }, 16);
    });
  };
  SAKER_RETURN_IF_ERROR(add("token_embd.weight", "token_embd", -1, {h.n_vocab, h.n_embd}));
  for (int64_t l = 0; l < h.n_layer; ++l) {
    const std::string p = fmt::format("blk.{}.", l);
    SAKER_RETURN_IF_ERROR(add(p + "attn_norm.weight", "attn_norm", l, {h.n_embd}));
    SAKER_RETURN_IF_ERROR(add(p + "attn_q.weight", "attn_q", l, {h.q_dim(), h.n_embd}));
    SAKER_RETURN_IF_ERROR(add(p + "attn_k.weight", "attn_k", l, {h.kv_dim(), h.n_embd}));
    SAKER_RETURN_IF_ERROR(add(p + "attn_v.weight", "attn_v", l, {h.kv_dim(), h.n_embd}));
    SAKER_RETURN_IF_ERROR(add(p + "attn_output.weight", "attn_output", l, {h.n_embd, h.q_dim()}));
    if (h.qk_norm) {
      SAKER_RETURN_IF_ERROR(add(p + "attn_q_norm.weight", "attn_q_norm", l, {h.head_dim}));
      SAKER_RETURN_IF_ERROR(add(p + "attn_k_norm.weight", "attn_k_norm", l, {h.head_dim}));
    }
    if (h.qkv_bias) {  // random biases of the weights' spread
      SAKER_RETURN_IF_ERROR(add(p + "attn_q.bias", "attn_q_bias", l, {h.q_dim()}));
      SAKER_RETURN_IF_ERROR(add(p + "attn_k.bias", "attn_k_bias", l, {h.kv_dim()}));
      SAKER_RETURN_IF_ERROR(add(p + "attn_v.bias", "attn_v_bias", l, {h.kv_dim()}));
    }
    if (h.arch == "gemma3") {  // norms of the attention and MLP outputs before the residual adds
      SAKER_RETURN_IF_ERROR(add(p + "post_attention_norm.weight", "post_attention_norm", l, {h.n_embd}));
      SAKER_RETURN_IF_ERROR(add(p + "post_ffw_norm.weight", "post_ffw_norm", l, {h.n_embd}));
    }
    SAKER_RETURN_IF_ERROR(add(p + "ffn_norm.weight", "ffn_norm", l, {h.n_embd}));
    SAKER_RETURN_IF_ERROR(add(p + "ffn_gate.weight", "ffn_gate", l, {h.n_ff, h.n_embd}));
    SAKER_RETURN_IF_ERROR(add(p + "ffn_up.weight", "ffn_up", l, {h.n_ff, h.n_embd}));
    SAKER_RETURN_IF_ERROR(add(p + "ffn_down.weight", "ffn_down", l, {h.n_embd, h.n_ff}));
  }
  SAKER_RETURN_IF_ERROR(add("output_norm.weight", "output_norm", -1, {h.n_embd}));
  if (!h.tied_embeddings) SAKER_RETURN_IF_ERROR(add("output.weight", "output", -1, {h.n_vocab, h.n_embd}));
  if (o.progress) w.set_progress(o.progress);
  return w.write(path);
}

}  // namespace saker
