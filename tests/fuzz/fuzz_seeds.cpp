// Seed inputs for the fuzz targets: small valid files of each format (built with saker's own writers or by
// hand), request bodies, chat templates, texts and model outputs, a few near-misses, and libFuzzer
// dictionaries of each input's keywords.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

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

// Chat templates written for the seeds (each construct real templates use), followed by the real ones from
// ../shared/data/chat_templates when present (read in place, never copied). Some carry extra variables: the
// bytes after a NUL are a JSON object merged into the target's context.
std::vector<Seed> jinja_seeds() {
  std::vector<Seed> seeds = {
      {"chatml", text_bytes("{% for message in messages %}<|im_start|>{{ message.role }}\n{{ message.content }}"
                            "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")},
      {"tools", text_bytes("{%- if tools %}{% for t in tools %}{{ t.function | tojson(indent=2) }}\n{% endfor %}"
                           "{% endif %}{% for m in messages %}{% for c in m.tool_calls | default([]) %}"
                           "<tool_call>{{ {'name': c.function.name, 'arguments': c.function.arguments} | tojson }}"
                           "</tool_call>{% endfor %}{% endfor %}")},
      {"namespace", text_bytes("{%- set ns = namespace(last=-1, sys='') %}{% for m in messages %}{% if m.role == "
                               "'user' %}{% set ns.last = loop.index0 %}{% endif %}{% endfor %}{{ ns.last }}"
                               "{{ messages[ns.last].content[:5] }}")},
      {"macro", text_bytes("{% macro render(m, depth=0) -%}{{ '  ' * depth }}{{ m.role | upper }}: "
                           "{{ m.content | trim }}{% if depth < 3 %}{{ render(m, depth + 1) }}{% endif %}"
                           "{%- endmacro %}{% for m in messages %}{{ render(m) }}\n{% endfor %}")},
      {"strings", text_bytes("{{ messages[2].content.split('</think>')[-1].lstrip('\\n') }}|{{ 'a,b'.split(',') "
                             "| join('-') }}|{{ '%s=%d' | format('x', 3) }}|{{ s | replace('\\n', ' ') | "
                             "center(20) }}|{{ 'x' ~ n ~ big }}|{{ f | round(2) }}|{{ d | dictsort | list }}")},
      {"loops", text_bytes("{% for k, v in d.items() %}{{ k }}={{ v }}{% if not loop.last %},{% endif %}"
                           "{% else %}empty{% endfor %}{% for i in range(3) if i != 1 %}{% if i > 1 %}{% break "
                           "%}{% endif %}{{ loop.index }}{{ loop.revindex }}{% endfor %}")},
      {"filters", text_bytes("{{ messages | selectattr('role', 'equalto', 'user') | map(attribute='content') | "
                             "list | length }}{{ messages | rejectattr('content') | first }}{{ [3, 1, 2] | sort | "
                             "reverse | join }}{{ ['a', 'a', 'b'] | unique | list }}{{ -3 | abs }}{{ x is none }}")},
      {"raise", text_bytes("{% if messages[0].role != 'system' %}{{ raise_exception('no system') }}{% endif %}"
                           "{{ strftime_now('%Y-%m-%d') }}{# comment #}{% raw %}{{ raw }}{% endraw %}")},
      {"whitespace", text_bytes("  {%- if true -%}  a  {%- endif -%}  \n  {%+ if true +%}b{% endif %}\n"
                                "{%- set x -%} captured {%- endset %}[{{ x }}]\n")},
      {"filter_block", text_bytes("{% filter upper %}{{ messages[1].content }}{% endfilter %}{% call(a) "
                                  "wrap() %}{{ a }}{% endcall %}{% macro wrap() %}<{{ caller(1) }}>{% endmacro %}")},
      {"context", text_bytes(std::string("{{ extra.list | length }}{{ extra.text | title }}{% for m in messages "
                                         "%}{{ m.content }}{% endfor %}") +
                             '\0' + R"({"extra": {"list": [1, [2, {"x": null}]], "text": "hello world"},
"messages": [{"role": "user", "content": "\u00e9\ud83d\ude00"}]})")},
      // Findings: each string or list within the size limit, but copied until memory ran out (now refused by
      // the render's memory budget).
      {"memory_repeat", text_bytes("{{ (['x' * 1000000] * 1000000) | length }}")},
      // Finding: an attribute path with an index past int64 threw std::out_of_range (kInternal).
      {"huge_index", text_bytes("{{ messages | selectattr('99999999999999999999', 'equalto', 'user') | list }}"
                                "{{ messages | map(attribute='0.99999999999999999999') | list | length }}")},
      {"memory_appends", text_bytes("{% set s = 'x' * 1000000 %}{% set l = [] %}{% for i in range(100000) %}"
                                    "{% set _ = l.append(s) %}{% endfor %}{{ l | length }}")},
  };
  const std::filesystem::path dir =
      std::filesystem::path(source_dir()).parent_path() / "shared" / "data" / "chat_templates" / "templates";
  if (std::filesystem::is_directory(dir)) {
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(dir)) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& path : files) {
      std::ifstream f(path, std::ios::binary);
      std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      if (!text.empty()) seeds.push_back({"real_" + path.stem().string(), text_bytes(text)});
    }
  }
  return seeds;
}

// Flags byte (see fuzz_tokenizer.cpp: bits 0-2 the tokenizer, 0x08 add_special, 0x10 parse_special, 0x20
// also decode the bytes as ids, 0x40 skip specials then) followed by the text.
std::vector<Seed> tokenizer_seeds() {
  const std::vector<std::pair<std::string, std::string>> texts = {
      {"prose", "Hello world, it's a test. Don't   stop\tnow!\n"},
      {"code", "def fibonacci(n):\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)\n"},
      {"unicode", "caf\xC3\xA9 \xF0\x9F\x98\x80 \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xE2\x96\x81x 123456789"},
      {"specials", "<|endoftext|>a<|im_start|>user\n<s>b</s><unk><tool>c<|mask|>"},
      {"invalid_utf8", "a\xFF\xFE\xC3(\xE2\x82 \xF0\x9F\x98 \xED\xA0\x80z"},
      {"spaces", "   leading and trailing   \n\n\r\n  "},
  };
  std::vector<Seed> seeds;
  for (uint8_t tokenizer = 0; tokenizer < 5; ++tokenizer) {
    for (size_t k = 0; k < texts.size(); ++k) {
      // Vary the flags with the text so every tokenizer sees each of them.
      const uint8_t flags = static_cast<uint8_t>(tokenizer | ((k & 1) ? 0x08 : 0) | ((k & 2) ? 0x10 : 0) |
                                                 ((k % 3 == 0) ? 0x20 : 0) | ((k == 3) ? 0x40 : 0));
      std::vector<uint8_t> bytes = {flags};
      bytes.insert(bytes.end(), texts[k].second.begin(), texts[k].second.end());
      std::string name = "t";  // built by appends: gcc 12's -Wrestrict misfires on "t" + std::to_string(...)
      name += std::to_string(tokenizer);
      name += '_';
      name += texts[k].first;
      seeds.push_back({std::move(name), std::move(bytes)});
    }
  }
  return seeds;
}

std::vector<Seed> openai_request_seeds() {
  return {
      {"chat", text_bytes(R"({"model": "m", "messages": [{"role": "system", "content": "Be brief."},
{"role": "user", "content": "Hi"}], "temperature": 0.7, "top_p": 0.9, "max_tokens": 64, "stream": false})")},
      {"tools", text_bytes(R"({"messages": [{"role": "developer", "content": [{"type": "text", "text": "sys"}]},
{"role": "user", "content": "Weather in Paris?"},
{"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
 "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
{"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "{\"c\": 21}"}],
"tools": [{"type": "function", "function": {"name": "get_weather", "description": "d",
 "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}],
"tool_choice": "auto", "chat_template_kwargs": {"enable_thinking": false}})")},
      {"sampling", text_bytes(R"({"messages": [{"role": "user", "content": "x"}], "top_k": 40, "min_p": 0.05,
"presence_penalty": -1.5, "frequency_penalty": 2, "repetition_penalty": 1.1, "seed": -7, "n": 3,
"logit_bias": {"15": -100, "0": 5.5}, "stop": ["\n\n", "END"], "max_completion_tokens": 9, "ignore_eos": true,
"stream": true, "stream_options": {"include_usage": true}, "logprobs": true, "top_logprobs": 5,
"response_format": {"type": "text"}})")},
      {"completions", text_bytes(R"({"prompt": ["a", [1, 2, 3]], "logprobs": 2, "echo": false, "suffix": "",
"stop": "x", "max_tokens": 1.0})")},
      {"refused", text_bytes(R"({"messages": [{"role": "robot", "content": 5}], "temperature": 3, "n": 0,
"response_format": {"type": "json_object"}, "logit_bias": {"x": 1}})")},
      // Findings: a tool call id or a tool type of the wrong type escaped as a library type error; arguments
      // written as a string of 200000 nested arrays overflowed the stack when parsed.
      {"wrong_types", text_bytes(R"({"messages": [{"role": "assistant", "tool_calls": [{"id": 5,
"function": {"name": "f"}}]}], "tools": [{"type": 1, "function": {"name": "f"}}]})")},
      {"deep_arguments", text_bytes(R"({"messages": [{"role": "assistant", "tool_calls": [{"id": "c",
"function": {"name": "f", "arguments": ")" + std::string(200000, '[') + std::string(200000, ']') + R"("}}]}]})")},
  };
}

std::vector<Seed> anthropic_request_seeds() {
  return {
      {"message", text_bytes(R"({"model": "m", "max_tokens": 128, "system": "Be brief.",
"messages": [{"role": "user", "content": "Hi"}], "temperature": 0.5, "top_p": 0.9, "top_k": 20,
"stop_sequences": ["\n\nHuman:"], "stream": true})")},
      {"tools", text_bytes(R"({"max_tokens": 64, "system": [{"type": "text", "text": "sys"}],
"messages": [{"role": "user", "content": [{"type": "text", "text": "Weather?"}]},
{"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm", "signature": ""},
 {"type": "text", "text": "Checking."}, {"type": "tool_use", "id": "toolu_1", "name": "get_weather",
 "input": {"city": "Paris"}}]},
{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
 "content": [{"type": "text", "text": "21C"}]}, {"type": "text", "text": "Thanks"}]}],
"tools": [{"name": "get_weather", "description": "d", "input_schema": {"type": "object"}}],
"tool_choice": {"type": "auto"}, "thinking": {"type": "enabled", "budget_tokens": 1024}})")},
      {"empty_blocks", text_bytes(R"({"max_tokens": 1, "messages": [{"role": "assistant", "content": []},
{"role": "user", "content": [{"type": "redacted_thinking", "data": "x"}]}], "tool_choice": {"type": "none"}})")},
      {"refused", text_bytes(R"({"max_tokens": 0, "messages": [{"role": "system", "content": [{"type": "image"}]}],
"temperature": 1.5})")},
      // Finding: ids and block types of the wrong type escaped as library type errors.
      {"wrong_types", text_bytes(R"({"max_tokens": 8, "system": [{"type": 3, "text": "s"}],
"messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": 5, "name": "f", "input": {}}]},
{"role": "user", "content": [{"type": "tool_result", "tool_use_id": 7, "content": "r"}]}]})")},
  };
}

// Mode byte (see fuzz_tool_call_parser.cpp: bits 0-2 the format none/hermes/qwen3_coder/llama3/mistral, 0x08
// reasoning, 0x10 starts in reasoning, 0x20 calls sent whole, 0x40 no tools), a chunking byte, the output.
std::vector<Seed> tool_call_parser_seeds() {
  const auto seed = [](const char* name, uint8_t mode, uint8_t cut, const std::string& text) {
    std::vector<uint8_t> bytes = {mode, cut};
    bytes.insert(bytes.end(), text.begin(), text.end());
    return Seed{name, std::move(bytes)};
  };
  return {
      seed("plain", 0x08, 3, "<think>\nLet me think.\n</think>\n\nThe answer is 42. caf\xC3\xA9"),
      seed("hermes", 0x09, 5, "<think>r</think>Sure.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                              "{\"city\": \"Paris\", \"days\": 3}}\n</tool_call>\n<tool_call>{\"name\": \"run\", "
                              "\"arguments\": \"{\\\"code\\\": \\\"x\\\"}\"}</tool_call>"),
      seed("hermes_whole", 0x21, 0, "<tool_call>{\"name\": \"run\", \"arguments\": {\"code\": \"print(1)\"}}"
                                    "</tool_call> trailing"),
      seed("hermes_broken", 0x01, 7, "<tool_call>{\"name\": \"run\", \"arguments\": {\"code\": </tool_call>after"),
      seed("qwen3_coder", 0x0A, 9, "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
                                   "<parameter=days>\n3\n</parameter>\n<parameter=metric>\ntrue\n</parameter>\n"
                                   "<parameter=where>\n{\"lat\": 1.5}\n</parameter>\n</function>\n</tool_call>"),
      seed("qwen3_coder_untyped", 0x42, 2, "<tool_call><function=f><parameter=x>[1, 2]</parameter>"
                                           "<parameter=y>not json</parameter></function></tool_call>"),
      seed("llama3", 0x03, 4, "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}; "
                              "{\"name\": \"run\", \"parameters\": {}}"),
      seed("llama3_bare", 0x23, 1, "{\"name\": \"run\", \"parameters\": {\"code\": \"1 + 1\"}}"),
      seed("mistral_array", 0x04, 6, "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}},"
                                     " {\"name\": \"run\", \"arguments\": {}}]"),
      seed("mistral_named", 0x0C, 8, "Text first. [TOOL_CALLS]get_weather[ARGS]{\"city\": \"Rome\"}"),
      seed("in_reasoning", 0x19, 11, "still thinking</think>Done <tool_call>{\"name\": \"run\"}</tool_call>"),
      // Findings: a lone surrogate escape passed the scanner but not nlohmann::json (a call "sent whole" with
      // arguments that do not parse), and nesting was unbounded (200000 levels overflow the stack of the
      // recursive parse and dump that follow).
      seed("lone_surrogate", 0x23, 0, "{\"name\": \"run\", \"parameters\": {\"\\ud800code\": \"1 + 1\"}}"),
      seed("deep_hermes", 0x01, 31, "<tool_call>{\"name\": \"run\", \"arguments\": {\"a\": " +
                                        std::string(300, '[') + std::string(300, ']') + "}}</tool_call>"),
      seed("deep_xml_value", 0x02, 30, "<tool_call><function=run><parameter=code>" + std::string(300, '[') +
                                           std::string(300, ']') + "</parameter></function></tool_call>"),
  };
}

}  // namespace

std::vector<std::string> target_names() {
  return {"gguf", "safetensors", "hf_config", "jinja", "tokenizer", "openai_request", "anthropic_request",
          "tool_call_parser"};
}

std::vector<Seed> seeds_for(const std::string& target) {
  if (target == "gguf") return gguf_seeds();
  if (target == "safetensors") return safetensors_seeds();
  if (target == "hf_config") return hf_config_seeds();
  if (target == "jinja") return jinja_seeds();
  if (target == "tokenizer") return tokenizer_seeds();
  if (target == "openai_request") return openai_request_seeds();
  if (target == "anthropic_request") return anthropic_request_seeds();
  if (target == "tool_call_parser") return tool_call_parser_seeds();
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
  } else if (target == "jinja") {
    d = {"{{", "}}", "{%", "%}", "{#", "#}", "{%-", "-%}", "{{-", "-}}", "{%+", "+%}", "\n"};
    for (const char* w : {"for", "endfor", "if", "elif", "else", "endif", "set", "endset", "macro", "endmacro",
                          "call", "endcall", "filter", "endfilter", "raw", "endraw", "generation", "endgeneration",
                          "break", "continue", "recursive", "in", "is", "not", "and", "or", "true", "false", "none",
                          "True", "None", "loop", "loop.index0", "loop.last", "loop.cycle(", "caller(", "namespace(",
                          "range(", "dict(", "raise_exception(", "strftime_now(", "messages", "tools", "message",
                          "content", "role", "tool_calls", "add_generation_prompt", "bos_token", "defined",
                          "string", "mapping", "iterable", "divisibleby", "equalto", "tojson", "trim", "join",
                          "length", "map", "select", "selectattr", "rejectattr", "attribute=", "list", "items",
                          "dictsort", "default", "upper", "replace", "split", "rsplit", "startswith", "strip",
                          "format", "int", "float", "first", "last", "batch", "unique", "sort", "reverse",
                          "indent", "center", "wordcount", "truncate", "sum", "min", "max", "append", "extend",
                          "pop", "insert", "update", "setdefault", "zfill", "ljust", "partition", "splitlines",
                          "1e308", "-1", "9223372036854775807", "999999", "::", "**", "//", "~", "|", "%s"}) {
      d.emplace_back(w);
    }
  } else if (target == "tokenizer") {
    d = {"<|endoftext|>", "<|mask|>", "<|im_start|>", "<s>", "</s>", "<unk>", "<tool>", "<0x41>",
         "\xE2\x96\x81", "\xEF\xBF\xBD", "\xF0\x9F\x98\x80", "\xC3", "\xFF", "\r\n", "'s", "'ll",
         "    ", "\t", "def ", "return ", "0123456789", "\xE6\x97\xA5"};
  } else if (target == "openai_request" || target == "anthropic_request") {
    d = json_tokens;
    for (const char* key : {"messages", "role", "content", "system", "user", "assistant", "tool", "developer",
                            "tool_calls", "tool_call_id", "function", "name", "arguments", "id", "type", "text",
                            "tools", "tool_choice", "none", "auto", "parameters", "description", "model",
                            "temperature", "top_p", "top_k", "min_p", "presence_penalty", "frequency_penalty",
                            "repetition_penalty", "seed", "logit_bias", "stop", "max_tokens", "max_completion_tokens",
                            "n", "ignore_eos", "stream", "stream_options", "include_usage", "logprobs",
                            "top_logprobs", "response_format", "chat_template_kwargs", "enable_thinking", "prompt",
                            "echo", "suffix", "tool_use", "tool_result", "tool_use_id", "input", "input_schema",
                            "thinking", "redacted_thinking", "enabled", "stop_sequences", "image", "image_url"}) {
      d.push_back(std::string("\"") + key + "\"");
    }
  } else if (target == "tool_call_parser") {
    d = {"<think>", "</think>", "<tool_call>", "</tool_call>", "<function=", "</function>", "<parameter=",
         "</parameter>", "[TOOL_CALLS]", "[ARGS]", "<|python_tag|>", "{\"name\": ", "\"arguments\": ",
         "\"parameters\": ", "get_weather", "city", "days", "metric", "\\u00e9", "\\\"", "\xC3\xA9"};
    d.insert(d.end(), json_tokens.begin(), json_tokens.end());
  }
  return d;
}

}  // namespace saker::fuzz
