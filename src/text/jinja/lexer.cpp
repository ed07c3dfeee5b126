#include "text/jinja/lexer.h"

#include <algorithm>
#include <cctype>

#include "text/jinja/value.h"

namespace saker::text::jinja {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

class Lexer {
 public:
  Lexer(std::string_view src, const LexOptions& o) : src_(src), o_(o) {
    line_starts_.push_back(0);
    for (size_t k = 0; k < src.size(); ++k)
      if (src[k] == '\n') line_starts_.push_back(k + 1);
  }

  std::vector<Token> run() {
    while (pos_ < src_.size()) {
      const size_t text_begin = pos_;
      size_t start = find_tag(pos_);
      std::string text(src_.substr(pos_, start - pos_));
      if (strip_next_) {
        size_t k = 0;
        while (k < text.size() && is_space(text[k])) ++k;
        text.erase(0, k);
        strip_next_ = false;
      }
      if (start >= src_.size()) {
        emit_text(std::move(text), text_begin);
        break;
      }
      const char kind = src_[start + 1];
      const char mod = start + 2 < src_.size() ? src_[start + 2] : '\0';
      if (mod == '-') {
        while (!text.empty() && is_space(text.back())) text.pop_back();
      } else if (mod != '+' && kind != '{' && o_.lstrip_blocks) {
        lstrip_tail(text, text_begin);
      }
      emit_text(std::move(text), text_begin);
      if (kind == '#') {
        lex_comment(start);
        continue;
      }
      pos_ = start + 2 + ((mod == '-' || mod == '+') ? 1 : 0);
      push(kind == '{' ? Tok::kVarBegin : Tok::kBlockBegin, start);
      lex_tag(kind == '{');
      if (kind == '%') maybe_raw();
    }
    Token eof;
    eof.type = Tok::kEof;
    locate(src_.size(), eof);
    out_.push_back(eof);
    return std::move(out_);
  }

 private:
  [[noreturn]] void fail(const std::string& message, size_t offset) {
    Token t;
    locate(offset, t);
    throw Error(message, t.line, t.column);
  }

  void locate(size_t offset, Token& t) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    const size_t line = size_t(it - line_starts_.begin());
    t.line = int(line);
    t.column = int(offset - line_starts_[line - 1] + 1);
  }

  Token& push(Tok type, size_t offset, std::string text = {}) {
    Token t;
    t.type = type;
    t.text = std::move(text);
    locate(offset, t);
    out_.push_back(std::move(t));
    return out_.back();
  }

  void emit_text(std::string text, size_t offset) {
    if (!text.empty()) push(Tok::kText, offset, std::move(text));
  }

  size_t find_tag(size_t from) const {
    for (size_t k = from; k + 1 < src_.size(); ++k) {
      if (src_[k] == '{' && (src_[k + 1] == '{' || src_[k + 1] == '%' || src_[k + 1] == '#')) return k;
    }
    return src_.size();
  }

  // lstrip_blocks: spaces and tabs between the start of a line and a block or comment tag go away.
  void lstrip_tail(std::string& text, size_t text_begin) const {
    const size_t nl = text.rfind('\n');
    const size_t tail = nl == std::string::npos ? 0 : nl + 1;
    const bool line_start = nl != std::string::npos || text_begin == 0 || src_[text_begin - 1] == '\n';
    if (!line_start) return;
    for (size_t k = tail; k < text.size(); ++k)
      if (text[k] != ' ' && text[k] != '\t') return;
    text.resize(tail);
  }

  // After a block or comment tag: `-` strips the whitespace that follows, trim_blocks one newline.
  void after_tag_end(char left_of_end, bool block) {
    if (left_of_end == '-') {
      strip_next_ = true;
    } else if (block && o_.trim_blocks && left_of_end != '+') {
      if (pos_ < src_.size() && src_[pos_] == '\n') ++pos_;
      else if (pos_ + 1 < src_.size() && src_[pos_] == '\r' && src_[pos_ + 1] == '\n') pos_ += 2;
    }
  }

  void lex_comment(size_t start) {
    const size_t end = src_.find("#}", start + 2);
    if (end == std::string_view::npos) fail("unterminated comment", start);
    const char left = end > start + 2 ? src_[end - 1] : '\0';
    pos_ = end + 2;
    after_tag_end(left, true);
  }

  void lex_tag(bool var) {
    std::vector<size_t> open;  // offsets of unclosed ( [ {
    const size_t tag_start = pos_;
    while (true) {
      while (pos_ < src_.size() && is_space(src_[pos_])) ++pos_;
      if (pos_ >= src_.size()) {
        if (!open.empty()) fail(std::string("unclosed '") + src_[open.back()] + "'", open.back());
        fail(var ? "unterminated '{{'" : "unterminated '{%'", tag_start - 2);
      }
      const int depth = int(open.size());
      const char c = src_[pos_];
      const std::string_view close = var ? "}}" : "%}";
      if (depth == 0) {
        if (src_.substr(pos_, 2) == close) {
          push(var ? Tok::kVarEnd : Tok::kBlockEnd, pos_);
          pos_ += 2;
          after_tag_end('\0', !var);
          return;
        }
        if ((c == '-' || c == '+') && src_.substr(pos_ + 1, 2) == close) {
          push(var ? Tok::kVarEnd : Tok::kBlockEnd, pos_);
          pos_ += 3;
          after_tag_end(c, !var);
          return;
        }
      }
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        const size_t b = pos_;
        while (pos_ < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[pos_])) || src_[pos_] == '_')) ++pos_;
        push(Tok::kName, b, std::string(src_.substr(b, pos_ - b)));
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        lex_number();
      } else if (c == '\'' || c == '"') {
        lex_string(c);
      } else {
        lex_operator(open);
      }
    }
  }

  void lex_number() {
    const size_t b = pos_;
    std::string digits;
    bool is_float = false;
    auto take_digits = [&] {
      while (pos_ < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[pos_])) || src_[pos_] == '_')) {
        if (src_[pos_] != '_') digits += src_[pos_];
        ++pos_;
      }
    };
    take_digits();
    if (pos_ + 1 < src_.size() && src_[pos_] == '.' && std::isdigit(static_cast<unsigned char>(src_[pos_ + 1]))) {
      is_float = true;
      digits += src_[pos_++];
      take_digits();
    }
    if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
      size_t k = pos_ + 1;
      if (k < src_.size() && (src_[k] == '+' || src_[k] == '-')) ++k;
      if (k < src_.size() && std::isdigit(static_cast<unsigned char>(src_[k]))) {
        is_float = true;
        digits += 'e';
        digits.append(src_.substr(pos_ + 1, k - pos_ - 1));
        pos_ = k;
        take_digits();
      }
    }
    Token& t = push(is_float ? Tok::kFloat : Tok::kInt, b, digits);
    try {
      if (is_float) t.float_value = std::stod(digits);
      else t.int_value = std::stoll(digits);
    } catch (const std::exception&) {
      fail("number out of range: " + digits, b);
    }
  }

  void lex_string(char quote) {
    const size_t b = pos_++;
    std::string value;
    while (true) {
      if (pos_ >= src_.size()) fail("unterminated string", b);
      const char c = src_[pos_++];
      if (c == quote) break;
      if (c != '\\') {
        value += c;
        continue;
      }
      if (pos_ >= src_.size()) fail("unterminated string", b);
      const char e = src_[pos_++];
      switch (e) {
        case 'n': value += '\n'; break;
        case 't': value += '\t'; break;
        case 'r': value += '\r'; break;
        case '0': value += '\0'; break;
        case 'a': value += '\a'; break;
        case 'b': value += '\b'; break;
        case 'f': value += '\f'; break;
        case 'v': value += '\v'; break;
        case '\\': value += '\\'; break;
        case '\'': value += '\''; break;
        case '"': value += '"'; break;
        case '\n': break;
        case 'x':
        case 'u':
        case 'U': {
          const size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          if (pos_ + n > src_.size()) fail("truncated escape in string", pos_);
          uint32_t cp = 0;
          for (size_t k = 0; k < n; ++k) {
            const char h = src_[pos_ + k];
            if (!std::isxdigit(static_cast<unsigned char>(h))) fail("bad escape in string", pos_);
            cp = cp * 16 + uint32_t(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
          }
          if (cp > 0x10FFFF) fail("escape out of range in string", pos_);
          pos_ += n;
          append_utf8(value, cp);
          break;
        }
        default:
          value += '\\';
          value += e;
      }
    }
    push(Tok::kString, b, std::move(value));
  }

  void lex_operator(std::vector<size_t>& open) {
    static const char* kTwo[] = {"**", "//", "==", "!=", "<=", ">="};
    for (const char* op : kTwo) {
      if (src_.substr(pos_, 2) == op) {
        push(Tok::kOp, pos_, op);
        pos_ += 2;
        return;
      }
    }
    const char c = src_[pos_];
    static const std::string_view kOne = "+-*/%~()[]{}.,:|=<>";
    if (kOne.find(c) == std::string_view::npos) fail(std::string("unexpected character '") + c + "'", pos_);
    if (c == '(' || c == '[' || c == '{') open.push_back(pos_);
    if ((c == ')' || c == ']' || c == '}') && !open.empty()) {
      const char o = src_[open.back()];
      const char want = o == '(' ? ')' : o == '[' ? ']' : '}';
      if (c != want) fail(std::string("unexpected '") + c + "', expected '" + want + "'", pos_);
      open.pop_back();
    }
    push(Tok::kOp, pos_, std::string(1, c));
    ++pos_;
  }

  // `{% raw %}...{% endraw %}`: everything between is text.
  void maybe_raw() {
    const size_t n = out_.size();
    if (n < 3 || out_[n - 3].type != Tok::kBlockBegin || out_[n - 2].type != Tok::kName || out_[n - 2].text != "raw" ||
        out_[n - 1].type != Tok::kBlockEnd)
      return;
    const size_t body = pos_;
    size_t k = body;
    while (true) {
      k = src_.find("{%", k);
      if (k == std::string_view::npos) fail("missing endraw", body);
      size_t m = k + 2;
      const char left = m < src_.size() ? src_[m] : '\0';
      if (left == '-' || left == '+') ++m;
      while (m < src_.size() && is_space(src_[m])) ++m;
      if (src_.substr(m, 6) != "endraw") {
        k += 2;
        continue;
      }
      m += 6;
      while (m < src_.size() && is_space(src_[m])) ++m;
      char right = '\0';
      if (m < src_.size() && (src_[m] == '-' || src_[m] == '+')) right = src_[m++];
      if (src_.substr(m, 2) != "%}") {
        k += 2;
        continue;
      }
      std::string text(src_.substr(body, k - body));
      if (strip_next_) {
        size_t s = 0;
        while (s < text.size() && is_space(text[s])) ++s;
        text.erase(0, s);
        strip_next_ = false;
      }
      if (left == '-') {
        while (!text.empty() && is_space(text.back())) text.pop_back();
      } else if (left != '+' && o_.lstrip_blocks) {
        lstrip_tail(text, body);
      }
      out_.resize(n - 3);
      emit_text(std::move(text), body);
      pos_ = m + 2;
      after_tag_end(right, true);
      return;
    }
  }

  std::string_view src_;
  LexOptions o_;
  std::vector<size_t> line_starts_;
  std::vector<Token> out_;
  size_t pos_ = 0;
  bool strip_next_ = false;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source, const LexOptions& options) {
  // Like jinja2: every newline sequence becomes "\n", and one trailing newline is dropped
  // (keep_trailing_newline=False).
  std::string text;
  text.reserve(source.size());
  for (size_t k = 0; k < source.size(); ++k) {
    if (source[k] == '\r') {
      text += '\n';
      if (k + 1 < source.size() && source[k + 1] == '\n') ++k;
    } else {
      text += source[k];
    }
  }
  if (!options.keep_trailing_newline && !text.empty() && text.back() == '\n') text.pop_back();
  return Lexer(text, options).run();
}

}  // namespace saker::text::jinja
