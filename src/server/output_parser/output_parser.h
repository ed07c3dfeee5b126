#pragma once
// OutputParser: turns a model's output text, fed in chunks as it is generated, into OpenAI-style pieces:
// content, reasoning (<think>...</think>) and tool calls (Hermes/Qwen, Qwen3-Coder XML, Llama 3 JSON,
// Mistral). Content deltas never hold a partial tag or tool-call markup; chunk boundaries may fall anywhere,
// inside a tag or a UTF-8 character. However the text is cut into chunks, the concatenated pieces (and
// finish()'s aggregate) are the same.
//
//   OutputParser parser(options);
//   for (chunk : generated) for (const OutputEvent& e : parser.feed(chunk)) send(e);
//   std::vector<OutputEvent> tail;
//   ParsedOutput result = parser.finish(&tail);   // send(tail) too
//
// Whitespace: reasoning is trimmed; content loses its leading whitespace after </think>, and whitespace
// around tool calls unless text follows (content is not trimmed at the end when no call was made).
//
// A tool call that turns out malformed before its start event was sent (bad JSON, no name, cut off) comes
// back as content text, markup included. With stream_tool_arguments, a call whose arguments break after its
// start was sent is closed with what was streamed (like an OpenAI call cut by max_tokens) and an error noted.
// Stop strings are the caller's job: feed only text that is part of the answer.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/output_parser/call_body_parser.h"
#include "server/output_parser/tool_call_format.h"

namespace saker::server {

struct OutputParserOptions {
  ToolCallFormat tool_call_format = ToolCallFormat::kNone;  // kNone: no tool-call parsing
  bool parse_reasoning = true;       // split <think>...</think> into reasoning
  bool starts_in_reasoning = false;  // the prompt ended inside <think> (Qwen3): output is reasoning until </think>
  // true: a call's start is sent as soon as its name is known and its arguments stream as written.
  // false: a call is sent whole once it is complete and valid (malformed calls always become content).
  bool stream_tool_arguments = true;
  uint64_t tool_call_id_seed = 0;  // 0: random ids
  nlohmann::json tools;            // the request's tools (OpenAI or Anthropic); types Qwen3-Coder parameters
};

enum class OutputEventType { kContent, kReasoning, kToolCallStart, kToolCallArguments, kToolCallEnd };

struct OutputEvent {
  OutputEventType type = OutputEventType::kContent;
  std::string text;          // kContent, kReasoning, kToolCallArguments: the delta (whole UTF-8 characters)
  int tool_call_index = -1;  // tool-call events: 0, 1, ... in order of the calls
  std::string tool_call_id;  // kToolCallStart
  std::string tool_call_name;  // kToolCallStart
};

struct ParsedToolCall {
  std::string id;         // "call_" + 24 alphanumerics
  std::string name;
  std::string arguments;  // JSON text: the concatenated argument deltas
};

struct ParsedOutput {
  std::string content;
  std::string reasoning_content;
  std::vector<ParsedToolCall> tool_calls;
  std::vector<std::string> errors;  // malformed calls that fell back to content or were cut, for logs
};

const char* output_event_type_name(OutputEventType type);

// True when a rendered prompt ends inside an open <think> (DeepSeek-R1, Qwen3 thinking templates): set
// OutputParserOptions::starts_in_reasoning then.
bool prompt_ends_in_reasoning(std::string_view prompt);

class OutputParser {
 public:
  explicit OutputParser(OutputParserOptions options);
  ~OutputParser();
  OutputParser(const OutputParser&) = delete;
  OutputParser& operator=(const OutputParser&) = delete;

  // Feeds the next piece of generated text; returns the events it completes (possibly none).
  std::vector<OutputEvent> feed(std::string_view chunk);
  // Ends the output: flushes held-back text and closes an unfinished call; the last events go to *events
  // (append). Returns the aggregate of every event sent. Calling feed() after finish() is an error (ignored).
  ParsedOutput finish(std::vector<OutputEvent>* events = nullptr);
  // The aggregate of the events sent so far.
  const ParsedOutput& result() const { return result_; }

  // Parses a whole output at once.
  static ParsedOutput parse(std::string_view text, const OutputParserOptions& options);

 private:
  enum class Mode {
    kContent, kReasoning,
    kBodyStart,      // after <tool_call>: '{' (JSON) or '<function=' (XML)
    kCall,           // a CallBodyParser is reading a call
    kAfterHermes,    // after a <tool_call> body: </tool_call>
    kSkipToClose,    // after a broken <tool_call> body: drop text until </tool_call>
    kMistralStart,   // after [TOOL_CALLS]: '[' (array) or a name
    kArrayNext,      // in Mistral's array: '{' for the next call
    kArrayAfter,     // in Mistral's array after a call: ',' or ']'
    kJsonStart,      // Llama 3: '{' after <|python_tag|>
    kJsonAfter,      // Llama 3 after a call: ';' or another '{'
  };
  enum class Region { kHermes, kArray, kMistralNamed, kJson };

  void process(bool eof);
  bool step_text(bool eof);
  bool step_call_mode(bool eof);
  void start_call(std::unique_ptr<CallBodyParser> parser, Mode after);
  void sync_call();
  void make_start();
  void end_call();
  void call_failed(std::string why);
  void fall_back(size_t end);
  void finish_modes();
  void emit(OutputEvent event);
  void emit_content(std::string_view text);
  void emit_reasoning(std::string_view text);
  void enter_content(bool strip_leading);

  OutputParserOptions options_;
  ToolCallIdGenerator ids_;
  std::vector<OutputEvent>* out_ = nullptr;
  size_t out_floor_ = 0;  // events of *out_ before this index belong to the caller
  ParsedOutput result_;
  bool finished_ = false;

  std::string utf8_tail_;  // an unfinished UTF-8 character at the end of the last chunk
  std::string buf_;        // text not yet consumed, from pos_
  size_t pos_ = 0;
  Mode mode_ = Mode::kContent;
  Region region_ = Region::kHermes;
  bool content_start_ = true;  // no content yet since the output start or </think> (Llama 3 detection)
  bool strip_content_ = false;
  bool strip_reasoning_ = false;
  std::string content_ws_;    // trailing content whitespace held back
  std::string reasoning_ws_;  // trailing reasoning whitespace held back

  // The call being read.
  std::unique_ptr<CallBodyParser> call_;
  Mode after_call_ = Mode::kContent;
  bool bare_json_ = false;     // Llama 3 JSON without <|python_tag|>
  size_t raw_start_ = 0;       // buf_ index where the uncommitted raw text starts (for the fallback)
  bool uncommitted_ = false;   // raw_start_ is live: text since it may still turn into content
  bool call_started_ = false;  // the start event was made
  size_t args_sent_ = 0;
};

}  // namespace saker::server
