#include "models/convert.h"

#include <fmt/format.h>

#include <filesystem>
#include <regex>

#include "core/thread_pool.h"
#include "formats/gguf.h"
#include "formats/quant/codec.h"
#include "models/synth.h"
#include "text/gguf_vocab_export.h"

namespace saker {
namespace {

// "blk.12.attn_v.weight" -> ("attn_v", 12); "blk.3.attn_q.bias" -> ("attn_q", 3); "output.weight" -> ("output", -1).
std::pair<std::string, int64_t> split_name(const std::string& name) {
  static const std::regex kRe(R"(blk\.(\d+)\.([a-z_]+)\.(weight|bias))");
  std::smatch m;
  if (std::regex_match(name, m, kRe)) return {m[2].str(), std::stoll(m[1].str())};
  return {name.substr(0, name.find('.')), -1};
}

DType fallback(DType t, int64_t n_cols) {
  if (n_cols % 256 == 0 || !traits(t).quantized || traits(t).block_elements != 256) return t;
  DType f = DType::kQ8_0;
  if (t == DType::kQ4_K) f = DType::kQ5_0;
  if (t == DType::kQ5_K) f = DType::kQ5_1;
  return n_cols % 32 == 0 ? f : DType::kF16;
}

}  // namespace

Result<DType> convert_tensor_type(const std::string& scheme, const std::string& gguf_name, int64_t n_cols,
                                  int64_t n_layer) {
  const auto [kind, layer] = split_name(gguf_name);
  SAKER_ASSIGN_OR_RETURN(DType t, synth_tensor_type(scheme, kind, layer, n_layer));
  if (traits(t).quantized && !can_quantize(t)) {
    return make_error(StatusCode::kUnsupported, "convert: saker cannot quantise to {} yet", dtype_name(t));
  }
  if (traits(t).block_elements > 1 && n_cols % 32 != 0) return DType::kF16;
  return fallback(t, n_cols);
}

Status convert_to_gguf(const ModelWeights& weights, const ConvertOptions& o, const std::string& out_path) {
  const ModelHParams& h = weights.hparams();
  GgufWriter w;
  write_gguf_hparams(h, std::filesystem::path(weights.path()).filename().string(), o.type, &w);

  if (weights.is_gguf()) {
    // Re-quantising a GGUF: carry its tokenizer keys over unchanged.
    for (const auto& [key, value] : weights.gguf()->metadata()) {
      if (key.rfind("tokenizer.", 0) == 0) w.set(key, value);
    }
  } else {
    SAKER_RETURN_IF_ERROR(text::export_hf_tokenizer_to_gguf(weights.path(), &w, h.n_vocab));
  }

  for (const std::string& name : weights.names()) {
    const TensorView src = *weights.find(name);
    if (!can_dequantize(src.dtype)) {
      return make_error(StatusCode::kUnsupported, "convert: tensor '{}' has type {} that saker cannot read", name,
                        dtype_name(src.dtype));
    }
    const int64_t n_cols = src.dim(-1);
    const int64_t n_rows = src.n_rows();
    SAKER_ASSIGN_OR_RETURN(DType dst_type, convert_tensor_type(o.type, name, n_cols, h.n_layer));
    // Norms, qwen2's q/k/v biases and other vectors stay F32, as llama.cpp keeps them.
    if (src.n_dims == 1) dst_type = DType::kF32;
    std::vector<int64_t> shape(src.shape.begin(), src.shape.begin() + src.n_dims);
    // GGUF llama keeps Q/K rows in the interleaved RoPE order (llama.cpp permutes them when converting): within
    // each head, output row 2i + j comes from HF row j * head_dim / 2 + i.
    const bool permute = !weights.is_gguf() && h.arch == "llama" && src.n_dims == 2 &&
                         (name.ends_with("attn_q.weight") || name.ends_with("attn_k.weight"));
    const int64_t hd = h.head_dim;
    auto src_row = [=](int64_t r) {
      if (!permute) return r;
      const int64_t rem = r % hd;
      return r - rem + (rem % 2) * (hd / 2) + rem / 2;
    };
    SAKER_RETURN_IF_ERROR(w.add_tensor_generated(name, dst_type, shape, [=](uint8_t* dst) {
      const uint64_t dst_rb = row_bytes(dst_type, n_cols).value_or(0);
      ThreadPool::global().parallel_for(n_rows, [&](int64_t r0, int64_t r1) {
        std::vector<float> row(n_cols);
        for (int64_t r = r0; r < r1; ++r) {
          // Both calls validated above: the types have codecs and n_cols fits their blocks.
          (void)dequantize_row(src.dtype, src.row(src_row(r)), row.data(), n_cols);
          (void)quantize_row(dst_type, row.data(), dst + r * dst_rb, n_cols);
        }
      }, 4);
    }));
  }
  if (o.progress) w.set_progress(o.progress);
  return w.write(out_path);
}

}  // namespace saker
