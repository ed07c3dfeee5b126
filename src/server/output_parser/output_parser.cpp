#include "server/output_parser/output_parser.h"

#include <algorithm>

#include "server/output_parser/mistral_call_parser.h"
#include "server/output_parser/tool_object_parser.h"
#include "server/output_parser/xml_call_parser.h"

namespace saker::server {
namespace {

constexpr std::string_view kThinkOpen = "<think>";
constexpr std::string_view kThinkClose = "</think>";
constexpr std::string_view kToolCallOpen = "<tool_call>";
constexpr std::string_view kToolCallClose = "</tool_call>";
constexpr std::string_view kMistralCalls = "[TOOL_CALLS]";
constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr std::string_view kWhitespace = " \t\n\r";

OutputEvent make_event(OutputEventType type, std::string text, int tool_call_index = -1) {
  OutputEvent event;
  event.type = type;
  event.text = std::move(text);
  event.tool_call_index = tool_call_index;
  return event;
}

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Length of the longest whole-UTF-8 prefix: an unfinished character at the end is held back.
size_t utf8_whole_prefix(std::string_view s) {
  size_t n = s.size();
  for (size_t back = 1; back <= 4 && back <= n; ++back) {
    unsigned char c = static_cast<unsigned char>(s[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: keep looking for the lead
    size_t need = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
    return need > back ? n - back : n;
  }
  return n;
}

// Longest suffix of `text` that is a proper prefix of one of `markers`.
size_t partial_marker_suffix(std::string_view text, const std::vector<std::string_view>& markers) {
  size_t best = 0;
  for (std::string_view m : markers) {
    for (size_t k = std::min(m.size() - 1, text.size()); k > best; --k) {
      if (text.substr(text.size() - k) == m.substr(0, k)) {
        best = k;
        break;
      }
    }
  }
  return best;
}

}  // namespace

const char* output_event_type_name(OutputEventType type) {
  switch (type) {
    case OutputEventType::kContent: return "content";
    case OutputEventType::kReasoning: return "reasoning";
    case OutputEventType::kToolCallStart: return "tool_call_start";
    case OutputEventType::kToolCallArguments: return "tool_call_arguments";
    case OutputEventType::kToolCallEnd: return "tool_call_end";
  }
  return "content";
}

bool prompt_ends_in_reasoning(std::string_view prompt) {
  size_t end = prompt.find_last_not_of(kWhitespace);
  if (end == std::string_view::npos) return false;
  prompt = prompt.substr(0, end + 1);
  return prompt.size() >= kThinkOpen.size() && prompt.substr(prompt.size() - kThinkOpen.size()) == kThinkOpen;
}

OutputParser::OutputParser(OutputParserOptions options)
    : options_(std::move(options)), ids_(options_.tool_call_id_seed) {
  if (options_.parse_reasoning && options_.starts_in_reasoning) {
    mode_ = Mode::kReasoning;
    strip_reasoning_ = true;
  }
}

OutputParser::~OutputParser() = default;

ParsedOutput OutputParser::parse(std::string_view text, const OutputParserOptions& options) {
  OutputParser parser(options);
  parser.feed(text);
  return parser.finish();
}

std::vector<OutputEvent> OutputParser::feed(std::string_view chunk) {
  std::vector<OutputEvent> events;
  if (finished_) return events;
  out_ = &events;
  out_floor_ = 0;
  std::string data = utf8_tail_;
  data.append(chunk);
  size_t whole = utf8_whole_prefix(data);
  utf8_tail_ = data.substr(whole);
  buf_.append(data, 0, whole);
  process(false);
  out_ = nullptr;
  return events;
}

ParsedOutput OutputParser::finish(std::vector<OutputEvent>* events) {
  std::vector<OutputEvent> local;
  if (!finished_) {
    finished_ = true;
    out_ = events != nullptr ? events : &local;
    out_floor_ = out_->size();  // events already in *events were sent: never merge into them
    buf_ += utf8_tail_;
    utf8_tail_.clear();
    process(true);
    reasoning_ws_.clear();
    if (result_.tool_calls.empty() && !content_ws_.empty()) {
      emit(make_event(OutputEventType::kContent, content_ws_));
    }
    content_ws_.clear();
    out_ = nullptr;
  }
  return result_;
}

void OutputParser::emit(OutputEvent event) {
  switch (event.type) {
    case OutputEventType::kContent: result_.content += event.text; break;
    case OutputEventType::kReasoning: result_.reasoning_content += event.text; break;
    case OutputEventType::kToolCallStart:
      result_.tool_calls.push_back({event.tool_call_id, event.tool_call_name, ""});
      break;
    case OutputEventType::kToolCallArguments: result_.tool_calls.back().arguments += event.text; break;
    case OutputEventType::kToolCallEnd: break;
  }
  bool text = event.type == OutputEventType::kContent || event.type == OutputEventType::kReasoning ||
              event.type == OutputEventType::kToolCallArguments;
  if (text && out_->size() > out_floor_ && out_->back().type == event.type &&
      out_->back().tool_call_index == event.tool_call_index) {
    out_->back().text += event.text;
    return;
  }
  out_->push_back(std::move(event));
}

void OutputParser::emit_content(std::string_view text) {
  if (strip_content_) {
    size_t first = text.find_first_not_of(kWhitespace);
    if (first == std::string_view::npos) return;
    text.remove_prefix(first);
    strip_content_ = false;
  }
  size_t last = text.find_last_not_of(kWhitespace);
  if (last == std::string_view::npos) {
    content_ws_.append(text);
    return;
  }
  emit(make_event(OutputEventType::kContent, content_ws_ + std::string(text.substr(0, last + 1))));
  content_ws_ = std::string(text.substr(last + 1));
  content_start_ = false;
}

void OutputParser::emit_reasoning(std::string_view text) {
  if (strip_reasoning_) {
    size_t first = text.find_first_not_of(kWhitespace);
    if (first == std::string_view::npos) return;
    text.remove_prefix(first);
    strip_reasoning_ = false;
  }
  size_t last = text.find_last_not_of(kWhitespace);
  if (last == std::string_view::npos) {
    reasoning_ws_.append(text);
    return;
  }
  emit(make_event(OutputEventType::kReasoning, reasoning_ws_ + std::string(text.substr(0, last + 1))));
  reasoning_ws_ = std::string(text.substr(last + 1));
}

// Back to content after tool-call markup. Leading whitespace is stripped while there is no content yet;
// otherwise it is held like trailing whitespace, so text before and after a call stays apart.
void OutputParser::enter_content(bool strip_leading) {
  mode_ = Mode::kContent;
  if (strip_leading && result_.content.empty()) strip_content_ = true;
}

void OutputParser::process(bool eof) {
  for (;;) {
    bool progressed = mode_ == Mode::kContent || mode_ == Mode::kReasoning ? step_text(eof) : step_call_mode(eof);
    if (!progressed) break;
  }
  size_t keep_from = uncommitted_ ? std::min(raw_start_, pos_) : pos_;
  buf_.erase(0, keep_from);
  pos_ -= keep_from;
  if (uncommitted_) raw_start_ -= keep_from;
}

// Content and reasoning: pass text on up to the next marker, holding back what could be the start of one.
bool OutputParser::step_text(bool eof) {
  const ToolCallFormat format = options_.tool_call_format;
  std::string_view rest = std::string_view(buf_).substr(pos_);
  if (mode_ == Mode::kContent && content_start_ && format == ToolCallFormat::kLlama3) {
    size_t first = rest.find_first_not_of(kWhitespace);
    if (first == std::string_view::npos && !eof) return false;  // only whitespace so far: wait
    content_start_ = false;
    if (first != std::string_view::npos && rest[first] == '{') {
      // Llama 3 writes a call as the whole output: a bare JSON object, only a call if it looks like one.
      raw_start_ = pos_;
      uncommitted_ = true;
      pos_ += first;
      region_ = Region::kJson;
      bare_json_ = true;
      start_call(std::make_unique<ToolObjectParser>(/*strict_keys=*/true), Mode::kJsonAfter);
      return true;
    }
  }

  std::vector<std::string_view> markers;
  if (mode_ == Mode::kReasoning) {
    markers = {kThinkClose, kThinkOpen};
  } else {
    if (options_.parse_reasoning) markers = {kThinkOpen, kThinkClose};
    if (format == ToolCallFormat::kHermes || format == ToolCallFormat::kQwen3Coder) markers.push_back(kToolCallOpen);
    if (format == ToolCallFormat::kMistral) markers.push_back(kMistralCalls);
    if (format == ToolCallFormat::kLlama3) markers.push_back(kPythonTag);
  }
  size_t found = std::string_view::npos;
  std::string_view marker;
  for (std::string_view m : markers) {
    size_t at = rest.find(m);
    if (at < found) {
      found = at;
      marker = m;
    }
  }
  if (found == std::string_view::npos) {
    size_t hold = eof ? 0 : partial_marker_suffix(rest, markers);
    std::string_view text = rest.substr(0, rest.size() - hold);
    if (mode_ == Mode::kReasoning) emit_reasoning(text);
    else emit_content(text);
    pos_ += text.size();
    return false;
  }

  std::string_view before = rest.substr(0, found);
  size_t marker_at = pos_ + found;
  if (mode_ == Mode::kReasoning) emit_reasoning(before);
  else emit_content(before);
  pos_ = marker_at + marker.size();
  if (marker == kThinkOpen) {
    if (mode_ == Mode::kContent) {
      mode_ = Mode::kReasoning;
      strip_reasoning_ = true;
    }
  } else if (marker == kThinkClose) {
    if (mode_ == Mode::kReasoning) {
      reasoning_ws_.clear();
      mode_ = Mode::kContent;
      content_start_ = true;
    }
    strip_content_ = true;
  } else {
    raw_start_ = marker_at;
    uncommitted_ = true;
    if (marker == kToolCallOpen) {
      region_ = Region::kHermes;
      mode_ = Mode::kBodyStart;
    } else if (marker == kMistralCalls) {
      mode_ = Mode::kMistralStart;
    } else {
      region_ = Region::kJson;
      bare_json_ = false;
      mode_ = Mode::kJsonStart;
    }
  }
  return true;
}

void OutputParser::start_call(std::unique_ptr<CallBodyParser> parser, Mode after) {
  call_ = std::move(parser);
  after_call_ = after;
  call_started_ = false;
  args_sent_ = 0;
  mode_ = Mode::kCall;
}

// Sends the start event once the name is known and the arguments stream, then any new argument text.
void OutputParser::sync_call() {
  if (!options_.stream_tool_arguments) return;
  if (!call_started_) {
    if (!call_->has_name() || !call_->arguments_streaming()) return;
    make_start();
  }
  const std::string& args = call_->arguments_text();
  if (args.size() > args_sent_) {
    emit(make_event(OutputEventType::kToolCallArguments, args.substr(args_sent_),
          static_cast<int>(result_.tool_calls.size()) - 1));
    args_sent_ = args.size();
  }
}

void OutputParser::make_start() {
  uncommitted_ = false;
  call_started_ = true;
  args_sent_ = 0;
  OutputEvent start = make_event(OutputEventType::kToolCallStart, "", static_cast<int>(result_.tool_calls.size()));
  start.tool_call_id = ids_.next();
  start.tool_call_name = call_->name();
  emit(std::move(start));
}

void OutputParser::end_call() {
  if (!call_started_) make_start();
  int index = static_cast<int>(result_.tool_calls.size()) - 1;
  std::string args = call_->final_arguments();
  if (args.size() > args_sent_) emit(make_event(OutputEventType::kToolCallArguments, args.substr(args_sent_), index));
  emit(make_event(OutputEventType::kToolCallEnd, "", index));
  call_.reset();
  call_started_ = false;
  mode_ = after_call_;
  if (mode_ == Mode::kContent) enter_content(true);
}

void OutputParser::call_failed(std::string why) {
  if (mode_ == Mode::kCall && call_started_) {
    // Its start was sent: close it with the arguments streamed so far.
    int index = static_cast<int>(result_.tool_calls.size()) - 1;
    emit(make_event(OutputEventType::kToolCallEnd, "", index));
    result_.errors.push_back("tool call " + std::to_string(index) + " (" + call_->name() + ") was cut: " + why);
    call_.reset();
    call_started_ = false;
    if (region_ == Region::kHermes) mode_ = Mode::kSkipToClose;
    else enter_content(true);
    return;
  }
  call_.reset();
  call_started_ = false;
  if (uncommitted_) {
    result_.errors.push_back("malformed tool call returned as content: " + why);
    fall_back(pos_);
    return;
  }
  enter_content(true);
}

// The raw text since raw_start_ was not a tool call after all: it is content.
void OutputParser::fall_back(size_t end) {
  uncommitted_ = false;
  mode_ = Mode::kContent;
  content_start_ = false;
  emit_content(std::string_view(buf_).substr(raw_start_, end - raw_start_));
  pos_ = end;
}

// The output ended in a tool-call mode.
void OutputParser::finish_modes() {
  if (mode_ == Mode::kCall || uncommitted_) call_failed("the output ended inside the tool call");
  else enter_content(true);
}

bool OutputParser::step_call_mode(bool eof) {
  if (mode_ == Mode::kCall) {
    while (pos_ < buf_.size()) {
      CallBodyParser::Status status = call_->push(buf_[pos_]);
      if (status == CallBodyParser::Status::kError) {
        sync_call();
        call_failed(call_->error());
        return true;
      }
      ++pos_;
      if (status == CallBodyParser::Status::kDone) {
        sync_call();
        end_call();
        return true;
      }
    }
    sync_call();
    if (!eof) return false;
    finish_modes();
    return true;
  }

  std::string_view rest = std::string_view(buf_).substr(pos_);
  if (mode_ == Mode::kAfterHermes) {
    size_t at = rest.find_first_not_of(kWhitespace);  // whitespace after the body is dropped
    pos_ += at == std::string_view::npos ? rest.size() : at;
    rest = std::string_view(buf_).substr(pos_);
    if (rest.empty() && !eof) return false;
    if (rest.substr(0, kToolCallClose.size()) == kToolCallClose) {
      pos_ += kToolCallClose.size();
    } else if (rest.size() < kToolCallClose.size() && kToolCallClose.substr(0, rest.size()) == rest) {
      if (!eof) return false;
      pos_ = buf_.size();  // a closing tag cut by the end of the output
    }  // else the closing tag is missing: what follows is content
    enter_content(true);
    return true;
  }
  if (mode_ == Mode::kSkipToClose) {
    size_t at = rest.find(kToolCallClose);
    if (at != std::string_view::npos) {
      pos_ += at + kToolCallClose.size();
      enter_content(true);
      return true;
    }
    pos_ = buf_.size() - (eof ? 0 : partial_marker_suffix(rest, {kToolCallClose}));
    if (!eof) return false;
    enter_content(true);
    return true;
  }

  // The remaining modes look at one non-whitespace byte.
  while (pos_ < buf_.size() && is_ws(buf_[pos_])) ++pos_;
  if (pos_ == buf_.size()) {
    if (!eof) return false;
    finish_modes();
    return true;
  }
  char c = buf_[pos_];
  switch (mode_) {
    case Mode::kBodyStart:
      if (c == '{') start_call(std::make_unique<ToolObjectParser>(), Mode::kAfterHermes);
      else if (c == '<') start_call(std::make_unique<XmlCallParser>(&options_.tools), Mode::kAfterHermes);
      else call_failed("expected a JSON object or <function=...> after <tool_call>");
      return true;
    case Mode::kMistralStart:
      if (c == '[') {
        ++pos_;
        region_ = Region::kArray;
        mode_ = Mode::kArrayNext;
      } else {
        region_ = Region::kMistralNamed;
        start_call(std::make_unique<MistralNamedCallParser>(), Mode::kContent);
      }
      return true;
    case Mode::kArrayNext:
    case Mode::kJsonStart:
    case Mode::kJsonAfter:
      if (c == '{') {
        if (!uncommitted_) {
          raw_start_ = pos_;
          uncommitted_ = true;
        }
        bool strict = mode_ != Mode::kArrayNext && bare_json_;
        start_call(std::make_unique<ToolObjectParser>(strict),
                   mode_ == Mode::kArrayNext ? Mode::kArrayAfter : Mode::kJsonAfter);
      } else if (mode_ == Mode::kArrayNext && c == ']') {
        ++pos_;
        uncommitted_ = false;
        enter_content(true);
      } else if (mode_ == Mode::kJsonAfter && c == ';') {
        ++pos_;
      } else {
        call_failed(mode_ == Mode::kJsonStart ? "expected a JSON object after <|python_tag|>"
                                              : "expected a JSON object for the tool call");
      }
      return true;
    case Mode::kArrayAfter:
      if (c == ',') {
        ++pos_;
        mode_ = Mode::kArrayNext;
      } else {
        if (c == ']') ++pos_;
        enter_content(true);
      }
      return true;
    default:
      enter_content(true);
      return true;
  }
}

}  // namespace saker::server
