#include "cli/model_loading.h"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/log.h"

namespace saker::cli {

namespace {

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return in ? std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()) : "";
}

}  // namespace

// Gemma's turn format for GGUF files that carry no template (the Gemma 3 270M file does not): no system
// role, so a system message is put before the first user turn's text; the assistant's role is "model".
constexpr const char* kGemmaTemplate =
    "{{ bos_token }}"
    "{% set ns = namespace(system='') %}"
    "{% for m in messages %}"
    "{% if m['role'] == 'system' %}{% set ns.system = ns.system + (m['content'] | trim) %}"
    "{% else %}"
    "{% set role = 'model' if m['role'] == 'assistant' else m['role'] %}"
    "<start_of_turn>{{ role }}\n"
    "{% if ns.system and role != 'model' %}{{ ns.system }}\n\n{% set ns.system = '' %}{% endif %}"
    "{{ m['content'] | trim }}<end_of_turn>\n"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}";

std::string read_chat_template(const ModelWeights& w) {
  if (const GgufFile* g = w.gguf()) {
    std::string t = g->get_string("tokenizer.chat_template").value_or("");
    if (t.empty() && w.hparams().arch == "gemma3") t = kGemmaTemplate;
    return t;
  }
  const std::filesystem::path folder(w.path());
  if (std::string t = read_file(folder / "chat_template.jinja"); !t.empty()) return t;
  const nlohmann::json config = nlohmann::json::parse(read_file(folder / "tokenizer_config.json"), nullptr, false);
  if (config.is_object() && config.contains("chat_template") && config["chat_template"].is_string()) {
    return config["chat_template"].get<std::string>();
  }
  return "";
}

Result<LoadedModel> load_model(const std::string& path, const OpsOptions& ops) {
  LoadedModel lm;
  SAKER_ASSIGN_OR_RETURN(std::unique_ptr<ModelWeights> w, ModelWeights::open(path));
  lm.weights = std::move(w);
  SAKER_LOG_INFO("{}: {}", path, lm.weights->hparams().summary());
  auto model = create_model(lm.weights, ops);
  if (!model.ok()) return model.status().with_context(path);
  lm.model = std::move(model).value();
  if (const GgufFile* g = lm.weights->gguf();
      g && g->get_string("tokenizer.ggml.model").value_or("none") != "none") {
    auto tok = text::Tokenizer::from_gguf(*g);
    if (!tok.ok()) return tok.status();  // the message names the file already
    lm.tokenizer = std::move(tok).value();
  } else if (!lm.weights->is_gguf()) {
    auto tok = text::Tokenizer::from_hf_folder(path);
    if (tok.ok()) {
      lm.tokenizer = std::move(tok).value();
    } else if (tok.status().code() != StatusCode::kNotFound) {
      return tok.status().with_context(path);
    }
  }
  lm.chat_template = read_chat_template(*lm.weights);
  return lm;
}

Result<LoadedModel> load_model_on(const std::string& path, OpsOptions ops, const std::string& device) {
  if (ops.tensor_parallel > 1 && device == "cuda") {
    // The CUDA ranks (one per GPU through NCCL) are built and checked on one GPU with ranks sharing it, but
    // have not run over several GPUs: the command line waits for that.
    return make_error(StatusCode::kUnsupported,
                      "--tensor-parallel {} --device cuda: tensor parallelism over {} GPUs (NCCL) has not been run "
                      "on a multi-GPU machine yet, so the command line does not offer it; --device cpu runs {} "
                      "in-process CPU ranks",
                      ops.tensor_parallel, ops.tensor_parallel, ops.tensor_parallel);
  }
  SAKER_ASSIGN_OR_RETURN(ops.device, parse_device(device));
  if (ops.tensor_parallel > 1 && ops.device == Device::kCuda) {  // auto: the CPU ranks are what exists
    SAKER_LOG_WARN("--tensor-parallel {}: tensor parallelism runs on CPU ranks only for now; running on the CPU",
                   ops.tensor_parallel);
    ops.device = Device::kCpu;
  }
  auto lm = load_model(path, ops);
  if (lm.ok() || device != "auto" || ops.device != Device::kCuda || lm.status().code() != StatusCode::kUnsupported) {
    return lm;
  }
  SAKER_LOG_WARN("{}; running on the CPU", lm.status().to_string());
  ops.device = Device::kCpu;
  return load_model(path, ops);
}

}  // namespace saker::cli
