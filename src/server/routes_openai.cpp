// OpenAI routes: POST /v1/chat/completions and POST /v1/completions, streamed (SSE) or not.
#include <fmt/format.h>

#include <optional>

#include "server/messages.h"
#include "server/output_adapter.h"
#include "server/request_params.h"
#include "server/server_state.h"
#include "server/tool_choice.h"

namespace saker::server {

namespace {

std::vector<int> bytes_of(const std::string& s) {
  std::vector<int> b;
  for (unsigned char c : s) b.push_back(c);
  return b;
}

// Chat logprobs entries: {token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}.
json chat_logprobs(const text::Tokenizer& tok, const std::vector<GeneratedToken>& tokens) {
  json out = json::array();
  for (const auto& t : tokens) {
    const std::string piece = tok.token_to_piece(t.id, true);
    json top = json::array();
    for (const auto& alt : t.top) {
      const std::string p = tok.token_to_piece(alt.id, true);
      top.push_back({{"token", p}, {"logprob", alt.logprob}, {"bytes", bytes_of(p)}});
    }
    out.push_back({{"token", piece}, {"logprob", t.logprob}, {"bytes", bytes_of(piece)}, {"top_logprobs", top}});
  }
  return out;
}

// Legacy completions logprobs: parallel arrays.
void completion_logprobs(const text::Tokenizer& tok, const std::vector<GeneratedToken>& tokens, size_t text_offset,
                         json* acc) {
  if (acc->is_null()) *acc = {{"tokens", json::array()}, {"token_logprobs", json::array()},
                              {"top_logprobs", json::array()}, {"text_offset", json::array()}};
  for (const auto& t : tokens) {
    const std::string piece = tok.token_to_piece(t.id, true);
    (*acc)["tokens"].push_back(piece);
    (*acc)["token_logprobs"].push_back(t.logprob);
    json top = json::object();
    for (const auto& alt : t.top) top[tok.token_to_piece(alt.id, true)] = alt.logprob;
    (*acc)["top_logprobs"].push_back(top);
    (*acc)["text_offset"].push_back(text_offset);
    text_offset += piece.size();
  }
}

// Only for a generation that finished (a shutdown arrives as an error event, see generation_error).
std::string finish_reason(const GenerateResult& r, bool tool_calls) {
  if (tool_calls) return "tool_calls";
  return r.finish == FinishReason::kLength ? "length" : "stop";
}

json tool_call_json(const ToolCallDelta& d, bool streaming) {
  json f = json::object();
  if (!d.name.empty() || !streaming) f["name"] = d.name;
  f["arguments"] = d.arguments;
  json c = {{"index", d.index}, {"function", f}};
  if (!d.id.empty() || !streaming) {
    c["id"] = d.id;
    c["type"] = "function";
  }
  if (!streaming) c.erase("index");
  return c;
}

// One choice being generated.
struct ChoiceRun {
  std::shared_ptr<GenerationStream> stream;
  std::unique_ptr<OutputAdapter> adapter;
  int index = 0;
  int64_t n_prompt = 0;
};

struct Usage {
  int64_t prompt = 0;
  int64_t completion = 0;
  std::optional<DraftStats> draft;  // summed over the choices that speculated
  void add(const GenerateResult& r) {
    completion += static_cast<int64_t>(r.tokens.size());
    if (!r.draft) return;
    if (!draft) draft.emplace();
    draft->merge(*r.draft);
  }
  // With speculation: OpenAI's prediction-token counts (drafts accepted and rejected) and saker's own figures.
  json to_json() const {
    json u = {{"prompt_tokens", prompt}, {"completion_tokens", completion}, {"total_tokens", prompt + completion}};
    if (draft) {
      u["completion_tokens_details"] = {{"accepted_prediction_tokens", draft->accepted_tokens()},
                                        {"rejected_prediction_tokens", draft->drafted_tokens - draft->accepted_tokens()}};
      u["speculative"] = speculation_usage(*draft);
    }
    return u;
  }
};

std::vector<ChoiceRun> submit_choices(ServerState& s, const std::vector<int32_t>& prompt, const OpenAiParams& p,
                                      const json& tools, const std::string& prompt_text, int first_index) {
  std::vector<ChoiceRun> runs;
  for (int32_t i = 0; i < p.n; ++i) {
    GenerationRequest r;
    r.prompt = prompt;
    r.options = p.options;
    if (i > 0) r.options.sampling.seed = p.seeded ? p.options.sampling.seed + i : random_seed();
    ChoiceRun run;
    run.stream = s.executor->submit(std::move(r));
    run.adapter = std::make_unique<OutputAdapter>(tools, s.prompt->source(), prompt_text);
    run.index = first_index + i;
    run.n_prompt = static_cast<int64_t>(prompt.size());
    runs.push_back(std::move(run));
  }
  return runs;
}

void cancel_all(const std::vector<ChoiceRun>& runs) {
  for (const ChoiceRun& r : runs) r.stream->cancel();
}

// Cancels the generations of a client that leaves while they run or wait (streaming or not: the HTTP layer
// notices the closed connection while the handler waits on them).
void cancel_when_client_leaves(http::Response& res, const std::shared_ptr<std::vector<ChoiceRun>>& runs) {
  res.on_client_gone([runs] { cancel_all(*runs); });
}

// Cancels generations a handler leaves behind (an error in one choice, an exception, a stream cut short).
struct CancelOnExit {
  std::shared_ptr<std::vector<ChoiceRun>> runs;
  ~CancelOnExit() { cancel_all(*runs); }
};

// Streams every choice in turn with `on_event(run, event, res)` writing the SSE payloads, then `on_end`.
// Stops (and cancels the generations) when a write fails: the client is gone. An error event (a failed
// generation, the server shutting down) ends the stream after on_event wrote it: no [DONE] follows, so a
// client cannot take the answer for complete.
void stream_choices(http::Response& res, const std::shared_ptr<std::vector<ChoiceRun>>& runs,
                    const std::function<bool(ChoiceRun&, const GenerationEvent&, http::Response&)>& on_event,
                    const std::function<bool(http::Response&)>& on_end) {
  CancelOnExit guard{runs};
  cancel_when_client_leaves(res, runs);
  res.set_header("Cache-Control", "no-cache");
  if (!res.start_stream(200, "text/event-stream")) return;
  for (ChoiceRun& run : *runs) {
    for (;;) {
      GenerationEvent e = run.stream->next();
      const bool last = e.kind != GenerationEvent::Kind::kText;
      if (!on_event(run, e, res) || e.kind == GenerationEvent::Kind::kError) return;
      if (last) break;
    }
  }
  on_end(res);
}

bool write(http::Response& sink, const std::string& s) { return sink.write(s); }

// ---- /v1/chat/completions ----

void chat_completions(ServerState& s, const json& body, http::Response& res) {
  s.check_model(body);
  json messages = normalize_openai_messages(body);
  const json tools = apply_openai_tool_choice(body, read_openai_tools(body));
  json kwargs = body.value("chat_template_kwargs", json::object());
  if (!kwargs.is_object()) throw invalid_request("'chat_template_kwargs' must be an object", "chat_template_kwargs");
  OpenAiParams p = read_openai_params(body, true, s.served.tokenizer.get());
  s.check_generations(p.n, "n", fmt::format("'n' is {}", p.n));
  // The turn boundary: message text is text, only the template's markup becomes control tokens.
  const ServerState::ChatTokens prompt = s.render_chat(messages, tools, true, kwargs);
  const std::string& text = prompt.text;
  const std::vector<int32_t>& ids = prompt.ids;
  fit_to_context(&p.options, p.max_tokens, static_cast<int64_t>(ids.size()), s.executor->n_ctx(), "messages");

  const std::string id = random_id("chatcmpl-");
  const int64_t created = unix_time();
  const std::string model = s.options.model_id;
  const text::Tokenizer& tok = *s.served.tokenizer;
  auto runs = std::make_shared<std::vector<ChoiceRun>>(submit_choices(s, ids, p, tools, text, 0));

  if (!p.stream) {
    CancelOnExit guard{runs};
    cancel_when_client_leaves(res, runs);
    json choices = json::array();
    Usage usage;
    for (ChoiceRun& run : *runs) {
      std::string content, reasoning;
      std::vector<ToolCallDelta> calls;
      json logprobs = json::array();
      auto absorb = [&](const OutputDelta& d) {
        content += d.content;
        reasoning += d.reasoning;
        for (const auto& c : d.tool_calls) {
          if (c.index >= static_cast<int>(calls.size())) calls.resize(c.index + 1);
          ToolCallDelta& t = calls[c.index];
          t.index = c.index;
          if (!c.id.empty()) t.id = c.id;
          if (!c.name.empty()) t.name = c.name;
          t.arguments += c.arguments;
        }
      };
      for (;;) {
        GenerationEvent e = run.stream->next();
        if (p.logprobs) for (const auto& t : chat_logprobs(tok, e.tokens)) logprobs.push_back(t);
        if (e.kind == GenerationEvent::Kind::kError) throw generation_error(e);
        if (e.kind == GenerationEvent::Kind::kText) {
          absorb(run.adapter->push(e.text));
          continue;
        }
        absorb(run.adapter->finish());
        usage.prompt = run.n_prompt;
        usage.add(e.result);
        json msg = {{"role", "assistant"}};
        msg["content"] = content.empty() && !calls.empty() ? json(nullptr) : json(content);
        if (!reasoning.empty()) msg["reasoning_content"] = reasoning;
        if (!calls.empty()) {
          msg["tool_calls"] = json::array();
          for (const auto& c : calls) msg["tool_calls"].push_back(tool_call_json(c, false));
        }
        choices.push_back({{"index", run.index},
                           {"message", msg},
                           {"logprobs", p.logprobs ? json{{"content", logprobs}} : json(nullptr)},
                           {"finish_reason", finish_reason(e.result, run.adapter->has_tool_calls())}});
        break;
      }
    }
    send_json(res, {{"id", id}, {"object", "chat.completion"}, {"created", created}, {"model", model},
                    {"choices", choices}, {"usage", usage.to_json()}});
    return;
  }

  auto usage = std::make_shared<Usage>();
  usage->prompt = static_cast<int64_t>(ids.size());
  const bool include_usage = p.include_usage;
  const bool want_logprobs = p.logprobs;
  auto chunk = [=](int index, const json& delta, const json& logprobs, const json& finish) {
    json c = {{"id", id}, {"object", "chat.completion.chunk"}, {"created", created}, {"model", model},
              {"choices", json::array({{{"index", index}, {"delta", delta}, {"logprobs", logprobs},
                                        {"finish_reason", finish}}})}};
    if (include_usage) c["usage"] = nullptr;
    return sse_data(c);
  };
  auto started = std::make_shared<std::vector<bool>>(runs->size(), false);
  stream_choices(
      res, runs,
      [=, &tok](ChoiceRun& run, const GenerationEvent& e, http::Response& sink) {
        std::string out;
        const size_t k = static_cast<size_t>(run.index);
        if (!(*started)[k]) {
          (*started)[k] = true;
          out += chunk(run.index, {{"role", "assistant"}, {"content", ""}}, nullptr, nullptr);
        }
        if (e.kind == GenerationEvent::Kind::kError) {
          out += sse_data(openai_error_body(generation_error(e)));
          return write(sink, out);
        }
        json lp = want_logprobs && !e.tokens.empty() ? json{{"content", chat_logprobs(tok, e.tokens)}} : json(nullptr);
        OutputDelta d = e.kind == GenerationEvent::Kind::kText ? run.adapter->push(e.text) : run.adapter->finish();
        json delta = json::object();
        if (!d.content.empty()) delta["content"] = d.content;
        if (!d.reasoning.empty()) delta["reasoning_content"] = d.reasoning;
        if (!d.tool_calls.empty()) {
          delta["tool_calls"] = json::array();
          for (const auto& c : d.tool_calls) delta["tool_calls"].push_back(tool_call_json(c, true));
        }
        if (!delta.empty() || !lp.is_null()) out += chunk(run.index, delta, lp, nullptr);
        if (e.kind == GenerationEvent::Kind::kDone) {
          usage->add(e.result);
          out += chunk(run.index, json::object(), nullptr, finish_reason(e.result, run.adapter->has_tool_calls()));
        }
        return out.empty() || write(sink, out);
      },
      [=](http::Response& sink) {
        std::string out;
        if (include_usage) {
          out += sse_data({{"id", id}, {"object", "chat.completion.chunk"}, {"created", created}, {"model", model},
                           {"choices", json::array()}, {"usage", usage->to_json()}});
        }
        out += "data: [DONE]\n\n";
        return write(sink, out);
      });
}

// ---- /v1/completions ----

// `prompt`: a string, an array of strings, an array of token ids, or an array of such arrays. The prompts are
// counted (against the 16 allowed and --max-generations with n) before any is tokenized. A string is all the
// request's text: control-token text in it is text unless --allow-special-in-content.
std::vector<std::vector<int32_t>> read_completion_prompts(const ServerState& s, const json& body, int32_t n) {
  auto it = body.find("prompt");
  if (it == body.end() || it->is_null()) throw invalid_request("'prompt' is required", "prompt");
  const bool one = it->is_string() || (it->is_array() && !it->empty() && (*it)[0].is_number());
  const int64_t n_prompts = one ? 1 : (it->is_array() ? static_cast<int64_t>(it->size()) : 1);
  if (n_prompts > 16) {
    throw invalid_request(fmt::format("'prompt' holds {} prompts; at most 16 are allowed", n_prompts), "prompt");
  }
  s.check_generations(n_prompts * n, n > s.options.max_generations ? "n" : "prompt",
                      fmt::format("'prompt' holds {} prompt(s) and 'n' is {}", n_prompts, n));
  const text::Tokenizer& tok = *s.served.tokenizer;
  auto ids_of = [&](const json& arr, const std::string& param) {
    std::vector<int32_t> ids;
    for (size_t i = 0; i < arr.size(); ++i) {
      const json& v = arr[i];
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= tok.n_vocab()) {
        throw invalid_request(fmt::format("'{}[{}]' must be a token id in 0..{}", param, i, tok.n_vocab() - 1),
                              fmt::format("{}[{}]", param, i));
      }
      ids.push_back(v.get<int32_t>());
    }
    return ids;
  };
  std::vector<std::vector<int32_t>> out;
  if (it->is_string()) {
    out.push_back(s.tokenize_completion(it->get<std::string>()));
  } else if (it->is_array() && !it->empty() && (*it)[0].is_number()) {
    out.push_back(ids_of(*it, "prompt"));
  } else if (it->is_array() && !it->empty()) {
    for (size_t i = 0; i < it->size(); ++i) {
      const json& v = (*it)[i];
      const std::string param = fmt::format("prompt[{}]", i);
      if (v.is_string()) {
        out.push_back(s.tokenize_completion(v.get<std::string>()));
      } else if (v.is_array()) {
        out.push_back(ids_of(v, param));
      } else {
        throw invalid_request(fmt::format("'{}' must be a string or an array of token ids", param), param);
      }
    }
  } else {
    throw invalid_request("'prompt' must be a non-empty string, array of strings or array of token ids", "prompt");
  }
  return out;
}

void completions(ServerState& s, const json& body, http::Response& res) {
  s.check_model(body);
  OpenAiParams p = read_openai_params(body, false, s.served.tokenizer.get());
  if (read_bool(body, "echo").value_or(false)) throw invalid_request("'echo' is not supported", "echo", "unsupported_parameter");
  if (auto suffix = read_string(body, "suffix"); suffix && !suffix->empty()) {
    throw invalid_request("'suffix' is not supported", "suffix", "unsupported_parameter");
  }
  const auto prompts = read_completion_prompts(s, body, p.n);
  // Every prompt is checked before any is submitted.
  std::vector<OpenAiParams> per_prompt(prompts.size(), p);
  for (size_t i = 0; i < prompts.size(); ++i) {
    fit_to_context(&per_prompt[i].options, p.max_tokens, static_cast<int64_t>(prompts[i].size()), s.executor->n_ctx(),
                   prompts.size() == 1 ? "prompt" : fmt::format("prompt[{}]", i));
  }
  auto runs = std::make_shared<std::vector<ChoiceRun>>();
  int64_t prompt_total = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    for (auto& r : submit_choices(s, prompts[i], per_prompt[i], nullptr, "", static_cast<int>(i) * p.n)) {
      runs->push_back(std::move(r));
    }
    prompt_total += static_cast<int64_t>(prompts[i].size());  // once per prompt, as OpenAI counts
  }
  const std::string id = random_id("cmpl-");
  const int64_t created = unix_time();
  const std::string model = s.options.model_id;
  const text::Tokenizer& tok = *s.served.tokenizer;

  if (!p.stream) {
    CancelOnExit guard{runs};
    cancel_when_client_leaves(res, runs);
    json choices = json::array();
    Usage usage;
    usage.prompt = prompt_total;
    for (ChoiceRun& run : *runs) {
      std::string text;
      json logprobs = nullptr;
      for (;;) {
        GenerationEvent e = run.stream->next();
        if (p.logprobs) completion_logprobs(tok, e.tokens, text.size(), &logprobs);
        if (e.kind == GenerationEvent::Kind::kError) throw generation_error(e);
        if (e.kind == GenerationEvent::Kind::kText) {
          text += e.text;
          continue;
        }
        usage.add(e.result);
        choices.push_back({{"index", run.index}, {"text", text}, {"logprobs", logprobs},
                           {"finish_reason", finish_reason(e.result, false)}});
        break;
      }
    }
    send_json(res, {{"id", id}, {"object", "text_completion"}, {"created", created}, {"model", model},
                    {"choices", choices}, {"usage", usage.to_json()}});
    return;
  }
  auto usage = std::make_shared<Usage>();
  usage->prompt = prompt_total;
  const bool include_usage = p.include_usage;
  const bool want_logprobs = p.logprobs;
  auto offsets = std::make_shared<std::vector<size_t>>(runs->size(), 0);
  auto chunk = [=](int index, const std::string& text, const json& logprobs, const json& finish) {
    json c = {{"id", id}, {"object", "text_completion"}, {"created", created}, {"model", model},
              {"choices", json::array({{{"index", index}, {"text", text}, {"logprobs", logprobs},
                                        {"finish_reason", finish}}})}};
    if (include_usage) c["usage"] = nullptr;
    return sse_data(c);
  };
  stream_choices(
      res, runs,
      [=, &tok](ChoiceRun& run, const GenerationEvent& e, http::Response& sink) {
        if (e.kind == GenerationEvent::Kind::kError) {
          return write(sink, sse_data(openai_error_body(generation_error(e))));
        }
        json lp = nullptr;
        size_t& off = (*offsets)[static_cast<size_t>(run.index)];
        if (want_logprobs && !e.tokens.empty()) completion_logprobs(tok, e.tokens, off, &lp);
        std::string out;
        if (e.kind == GenerationEvent::Kind::kText) {
          off += e.text.size();
          out = chunk(run.index, e.text, lp, nullptr);
        } else {
          usage->add(e.result);
          out = chunk(run.index, "", lp, finish_reason(e.result, false));
        }
        return write(sink, out);
      },
      [=](http::Response& sink) {
        std::string out;
        if (include_usage) {
          out += sse_data({{"id", id}, {"object", "text_completion"}, {"created", created}, {"model", model},
                           {"choices", json::array()}, {"usage", usage->to_json()}});
        }
        out += "data: [DONE]\n\n";
        return write(sink, out);
      });
}

}  // namespace

void register_openai_routes(http::Router& router, ServerState& s) {
  post_json(router, s, "/v1/chat/completions", Dialect::kOpenAi,
            [&s](const json& body, http::Response& res) { chat_completions(s, body, res); });
  post_json(router, s, "/v1/completions", Dialect::kOpenAi,
            [&s](const json& body, http::Response& res) { completions(s, body, res); });
}

}  // namespace saker::server
