#include "text/jinja/parser.h"

#include <algorithm>

namespace saker::text::jinja {
namespace {

class Parser {
 public:
  explicit Parser(const std::vector<Token>& t) : t_(t) {}

  Body parse_template() {
    std::string end;
    Body body = parse_body({}, &end);
    return body;
  }

 private:
  // ---- token helpers
  const Token& cur() const { return t_[std::min(pos_, t_.size() - 1)]; }
  const Token& peek(size_t k = 1) const { return t_[std::min(pos_ + k, t_.size() - 1)]; }
  void advance() {
    if (pos_ < t_.size() - 1) ++pos_;
  }
  bool is_op(const char* op) const { return cur().type == Tok::kOp && cur().text == op; }
  bool is_name(const char* name) const { return cur().type == Tok::kName && cur().text == name; }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    advance();
    return true;
  }
  bool skip_name(const char* name) {
    if (!is_name(name)) return false;
    advance();
    return true;
  }
  [[noreturn]] void fail(const std::string& message) const { throw Error(message, cur().line, cur().column); }
  std::string describe(const Token& t) const {
    switch (t.type) {
      case Tok::kEof: return "end of template";
      case Tok::kBlockEnd: return "'%}'";
      case Tok::kVarEnd: return "'}}'";
      case Tok::kText: return "template text";
      case Tok::kString: return "string";
      default: return "'" + t.text + "'";
    }
  }
  void expect_op(const char* op) {
    if (!skip_op(op)) fail(std::string("expected '") + op + "', got " + describe(cur()));
  }
  std::string expect_name() {
    if (cur().type != Tok::kName) fail("expected a name, got " + describe(cur()));
    std::string n = cur().text;
    advance();
    return n;
  }
  void expect_block_end() {
    if (cur().type != Tok::kBlockEnd) fail("expected '%}', got " + describe(cur()));
    advance();
  }

  struct DepthGuard {
    explicit DepthGuard(Parser& p) : p(p) {
      if (++p.depth_ > kMaxParseDepth) p.fail("template nested too deeply");
    }
    ~DepthGuard() { --p.depth_; }
    Parser& p;
  };

  template <typename Node>
  std::unique_ptr<Node> node_at(const Token& t) {
    auto n = std::make_unique<Node>();
    n->line = t.line;
    n->column = t.column;
    return n;
  }

  ExprPtr make_expr(ExprKind kind, const Token& at) {
    auto e = node_at<Expr>(at);
    e->kind = kind;
    return e;
  }

  // ---- statements
  Body parse_body(const std::vector<std::string>& end_tags, std::string* found) {
    DepthGuard guard(*this);
    Body body;
    while (true) {
      const Token& t = cur();
      if (t.type == Tok::kEof) {
        if (!end_tags.empty()) {
          std::string want = end_tags.back();
          for (const auto& tag : end_tags)
            if (tag.rfind("end", 0) == 0) want = tag;
          fail("unexpected end of template, expected '" + want + "'");
        }
        return body;
      }
      if (t.type == Tok::kText) {
        auto s = node_at<Stmt>(t);
        s->kind = StmtKind::kText;
        s->text = t.text;
        body.push_back(std::move(s));
        advance();
      } else if (t.type == Tok::kVarBegin) {
        auto s = node_at<Stmt>(t);
        s->kind = StmtKind::kOutput;
        advance();
        s->expr = parse_tuple();
        if (cur().type != Tok::kVarEnd) fail("expected '}}', got " + describe(cur()));
        advance();
        body.push_back(std::move(s));
      } else if (t.type == Tok::kBlockBegin) {
        const Token& name = peek();
        if (name.type == Tok::kName && std::find(end_tags.begin(), end_tags.end(), name.text) != end_tags.end()) {
          advance();
          advance();
          *found = name.text;
          return body;
        }
        advance();
        body.push_back(parse_statement());
      } else {
        fail("unexpected " + describe(t));
      }
    }
  }

  StmtPtr parse_statement() {
    const Token& t = cur();
    if (t.type != Tok::kName) fail("expected a tag name, got " + describe(t));
    const std::string tag = t.text;
    auto s = node_at<Stmt>(t);
    advance();
    if (tag == "if") {
      s->kind = StmtKind::kIf;
      s->conditions.push_back(parse_tuple());
      expect_block_end();
      std::string found;
      s->bodies.push_back(parse_body({"elif", "else", "endif"}, &found));
      while (found == "elif") {
        s->conditions.push_back(parse_tuple());
        expect_block_end();
        s->bodies.push_back(parse_body({"elif", "else", "endif"}, &found));
      }
      if (found == "else") {
        expect_block_end();
        s->else_body = parse_body({"endif"}, &found);
      }
      expect_block_end();
    } else if (tag == "for") {
      s->kind = StmtKind::kFor;
      s->targets = parse_targets();
      if (!skip_name("in")) fail("expected 'in' in for loop, got " + describe(cur()));
      s->expr = parse_tuple(/*with_condexpr=*/false);
      if (skip_name("if")) s->condition = parse_expression();
      if (skip_name("recursive")) s->recursive = true;
      expect_block_end();
      ++loop_depth_;
      std::string found;
      s->body = parse_body({"endfor", "else"}, &found);
      --loop_depth_;
      if (found == "else") {
        expect_block_end();
        s->else_body = parse_body({"endfor"}, &found);
      }
      expect_block_end();
    } else if (tag == "set") {
      const Token& first = cur();
      if (first.type == Tok::kName && peek().type == Tok::kOp && peek().text == ".") {
        s->text = expect_name();
        advance();
        s->attr = expect_name();
      } else {
        s->targets = parse_targets();
      }
      if (skip_op("=")) {
        s->kind = StmtKind::kSet;
        s->expr = parse_tuple();
        expect_block_end();
      } else {
        if (!s->attr.empty() || s->targets.size() != 1) fail("expected '=' in set");
        s->kind = StmtKind::kSetBlock;
        s->text = s->targets[0];
        if (is_op("|")) s->expr = parse_filter_chain();
        expect_block_end();
        std::string found;
        s->body = parse_body({"endset"}, &found);
        expect_block_end();
      }
    } else if (tag == "macro") {
      s->kind = StmtKind::kMacro;
      s->text = expect_name();
      s->params = parse_params();
      expect_block_end();
      const int saved = loop_depth_;
      loop_depth_ = 0;
      std::string found;
      s->body = parse_body({"endmacro"}, &found);
      loop_depth_ = saved;
      skip_name(s->text.c_str());
      expect_block_end();
    } else if (tag == "call") {
      s->kind = StmtKind::kCallBlock;
      if (is_op("(")) s->params = parse_params();
      s->expr = parse_expression();
      if (s->expr->kind != ExprKind::kCall) fail("expected a call in call block");
      expect_block_end();
      std::string found;
      s->body = parse_body({"endcall"}, &found);
      expect_block_end();
    } else if (tag == "filter") {
      s->kind = StmtKind::kFilterBlock;
      s->expr = parse_filter_chain(/*leading_pipe=*/false);
      expect_block_end();
      std::string found;
      s->body = parse_body({"endfilter"}, &found);
      expect_block_end();
    } else if (tag == "with") {
      s->kind = StmtKind::kWith;
      while (cur().type != Tok::kBlockEnd) {
        std::string name = expect_name();
        expect_op("=");
        s->assignments.emplace_back(name, parse_expression());
        if (!skip_op(",")) break;
      }
      expect_block_end();
      std::string found;
      s->body = parse_body({"endwith"}, &found);
      expect_block_end();
    } else if (tag == "break" || tag == "continue") {
      if (loop_depth_ == 0) fail("'" + tag + "' outside a loop");
      s->kind = tag == "break" ? StmtKind::kBreak : StmtKind::kContinue;
      expect_block_end();
    } else if (tag == "generation" || tag == "block") {
      // transformers' {% generation %} marks assistant text for training masks; a lone {% block %} renders
      // in place. Both just render their body here.
      s->kind = StmtKind::kScope;
      if (tag == "block") {
        expect_name();
        skip_name("scoped");
      }
      expect_block_end();
      std::string found;
      s->body = parse_body({"end" + tag}, &found);
      if (cur().type == Tok::kName) advance();
      expect_block_end();
    } else if (tag == "include" || tag == "import" || tag == "from" || tag == "extends") {
      fail("unsupported tag '" + tag + "' (templates are rendered standalone)");
    } else {
      fail("unknown tag '" + tag + "'");
    }
    return s;
  }

  std::vector<std::string> parse_targets() {
    std::vector<std::string> names;
    const bool paren = skip_op("(");
    names.push_back(expect_name());
    while (skip_op(",")) {
      if (cur().type != Tok::kName) break;
      names.push_back(expect_name());
    }
    if (paren) expect_op(")");
    return names;
  }

  std::vector<MacroParam> parse_params() {
    std::vector<MacroParam> params;
    expect_op("(");
    while (!is_op(")")) {
      MacroParam p;
      p.name = expect_name();
      if (skip_op("=")) p.default_value = parse_expression();
      params.push_back(std::move(p));
      if (!skip_op(",")) break;
    }
    expect_op(")");
    return params;
  }

  // `| f(x) | g` with a null innermost target (for {% filter %} and {% set x | f %}).
  ExprPtr parse_filter_chain(bool leading_pipe = true) {
    ExprPtr e;
    bool first = true;
    while (first ? (!leading_pipe || is_op("|")) : is_op("|")) {
      if (!first || leading_pipe) expect_op("|");
      first = false;
      e = parse_filter(std::move(e));
    }
    return e;
  }

  // ---- expressions
  ExprPtr parse_tuple(bool with_condexpr = true) {
    const Token& at = cur();
    ExprPtr first = parse_expression(with_condexpr);
    if (!is_op(",")) return first;
    auto tuple = make_expr(ExprKind::kTuple, at);
    tuple->args.push_back(std::move(first));
    while (skip_op(",")) {
      if (cur().type == Tok::kBlockEnd || cur().type == Tok::kVarEnd || is_op(")")) break;
      tuple->args.push_back(parse_expression(with_condexpr));
    }
    return tuple;
  }

  ExprPtr parse_expression(bool with_condexpr = true) {
    DepthGuard guard(*this);
    if (!with_condexpr) return parse_or();
    const Token& at = cur();
    ExprPtr e = parse_or();
    while (skip_name("if")) {
      auto c = make_expr(ExprKind::kCondition, at);
      c->args.push_back(std::move(e));
      c->args.push_back(parse_or());
      c->args.push_back(skip_name("else") ? parse_expression() : nullptr);
      e = std::move(c);
    }
    return e;
  }

  ExprPtr binary(const std::string& op, ExprPtr a, ExprPtr b, const Token& at) {
    auto e = make_expr(ExprKind::kBinary, at);
    e->name = op;
    e->args.push_back(std::move(a));
    e->args.push_back(std::move(b));
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr e = parse_and();
    while (is_name("or")) {
      const Token& at = cur();
      advance();
      e = binary("or", std::move(e), parse_and(), at);
    }
    return e;
  }

  ExprPtr parse_and() {
    ExprPtr e = parse_not();
    while (is_name("and")) {
      const Token& at = cur();
      advance();
      e = binary("and", std::move(e), parse_not(), at);
    }
    return e;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      DepthGuard guard(*this);
      auto e = make_expr(ExprKind::kUnary, cur());
      advance();
      e->name = "not";
      e->target = parse_not();
      return e;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    ExprPtr e = parse_math1();
    while (true) {
      const Token& at = cur();
      std::string op;
      if (at.type == Tok::kOp && (at.text == "==" || at.text == "!=" || at.text == "<" || at.text == ">" ||
                                  at.text == "<=" || at.text == ">=")) {
        op = at.text;
        advance();
      } else if (is_name("in")) {
        op = "in";
        advance();
      } else if (is_name("not") && peek().type == Tok::kName && peek().text == "in") {
        op = "not in";
        advance();
        advance();
      } else {
        return e;
      }
      e = binary(op, std::move(e), parse_math1(), at);
    }
  }

  ExprPtr parse_math1() {
    ExprPtr e = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Token& at = cur();
      advance();
      e = binary(at.text, std::move(e), parse_concat(), at);
    }
    return e;
  }

  ExprPtr parse_concat() {
    ExprPtr e = parse_math2();
    while (is_op("~")) {
      const Token& at = cur();
      advance();
      e = binary("~", std::move(e), parse_math2(), at);
    }
    return e;
  }

  ExprPtr parse_math2() {
    ExprPtr e = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token& at = cur();
      advance();
      e = binary(at.text, std::move(e), parse_pow(), at);
    }
    return e;
  }

  ExprPtr parse_pow() {
    ExprPtr e = parse_unary();
    while (is_op("**")) {
      const Token& at = cur();
      advance();
      e = binary("**", std::move(e), parse_unary(), at);
    }
    return e;
  }

  ExprPtr parse_unary(bool with_filter = true) {
    DepthGuard guard(*this);
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      e = make_expr(ExprKind::kUnary, cur());
      e->name = cur().text;
      advance();
      e->target = parse_unary(false);
    } else {
      e = parse_primary();
    }
    e = parse_postfix(std::move(e));
    if (with_filter) e = parse_filter_expr(std::move(e));
    return e;
  }

  ExprPtr parse_primary() {
    DepthGuard guard(*this);
    const Token& t = cur();
    switch (t.type) {
      case Tok::kName: {
        advance();
        if (t.text == "true" || t.text == "True") return literal(Value::boolean(true), t);
        if (t.text == "false" || t.text == "False") return literal(Value::boolean(false), t);
        if (t.text == "none" || t.text == "None") return literal(Value::none(), t);
        auto e = make_expr(ExprKind::kName, t);
        e->name = t.text;
        return e;
      }
      case Tok::kString: {
        std::string s;
        while (cur().type == Tok::kString) {
          s += cur().text;
          advance();
        }
        return literal(Value::string(std::move(s)), t);
      }
      case Tok::kInt: advance(); return literal(Value::integer(t.int_value), t);
      case Tok::kFloat: advance(); return literal(Value::floating(t.float_value), t);
      case Tok::kOp: {
        if (t.text == "(") {
          advance();
          if (skip_op(")")) return make_expr(ExprKind::kTuple, t);
          ExprPtr first = parse_expression();
          if (skip_op(")")) return first;
          auto tuple = make_expr(ExprKind::kTuple, t);
          tuple->args.push_back(std::move(first));
          while (skip_op(",")) {
            if (is_op(")")) break;
            tuple->args.push_back(parse_expression());
          }
          expect_op(")");
          return tuple;
        }
        if (t.text == "[") {
          advance();
          auto list = make_expr(ExprKind::kList, t);
          while (!is_op("]")) {
            list->args.push_back(parse_expression());
            if (!skip_op(",")) break;
          }
          expect_op("]");
          return list;
        }
        if (t.text == "{") {
          advance();
          auto dict = make_expr(ExprKind::kDict, t);
          while (!is_op("}")) {
            dict->args.push_back(parse_expression());
            expect_op(":");
            dict->args.push_back(parse_expression());
            if (!skip_op(",")) break;
          }
          expect_op("}");
          return dict;
        }
        break;
      }
      default: break;
    }
    fail("unexpected " + describe(t));
  }

  ExprPtr literal(Value v, const Token& at) {
    auto e = make_expr(ExprKind::kLiteral, at);
    e->value = std::move(v);
    return e;
  }

  ExprPtr parse_postfix(ExprPtr e) {
    while (true) {
      const Token& at = cur();
      if (is_op(".")) {
        advance();
        if (cur().type == Tok::kInt) {
          auto item = make_expr(ExprKind::kItem, at);
          item->target = std::move(e);
          item->args.push_back(literal(Value::integer(cur().int_value), cur()));
          advance();
          e = std::move(item);
          continue;
        }
        auto attr = make_expr(ExprKind::kAttr, at);
        attr->target = std::move(e);
        attr->name = expect_name();
        e = std::move(attr);
      } else if (is_op("[")) {
        advance();
        e = parse_subscript(std::move(e), at);
      } else if (is_op("(")) {
        e = parse_call(std::move(e), at);
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr target, const Token& at) {
    DepthGuard guard(*this);
    ExprPtr parts[3];
    bool is_slice = false;
    int part = 0;
    while (!is_op("]")) {
      if (is_op(":")) {
        is_slice = true;
        advance();
        if (++part > 2) fail("too many ':' in slice");
        continue;
      }
      if (parts[part]) fail("expected ']' or ':' in subscript, got " + describe(cur()));
      parts[part] = parse_tuple();
    }
    expect_op("]");
    if (!is_slice) {
      if (!parts[0]) fail("empty subscript");
      auto item = make_expr(ExprKind::kItem, at);
      item->target = std::move(target);
      item->args.push_back(std::move(parts[0]));
      return item;
    }
    auto slice = make_expr(ExprKind::kSlice, at);
    slice->target = std::move(target);
    for (auto& p : parts) slice->args.push_back(std::move(p));
    return slice;
  }

  void parse_call_args(Expr& call) {
    expect_op("(");
    while (!is_op(")")) {
      if (cur().type == Tok::kName && peek().type == Tok::kOp && peek().text == "=") {
        std::string name = cur().text;
        advance();
        advance();
        call.kwargs.emplace_back(std::move(name), parse_expression());
      } else {
        if (!call.kwargs.empty()) fail("positional argument after keyword argument");
        call.args.push_back(parse_expression());
      }
      if (!skip_op(",")) break;
    }
    expect_op(")");
  }

  ExprPtr parse_call(ExprPtr target, const Token& at) {
    DepthGuard guard(*this);
    auto call = make_expr(ExprKind::kCall, at);
    call->target = std::move(target);
    parse_call_args(*call);
    return call;
  }

  ExprPtr parse_filter(ExprPtr target) {
    DepthGuard guard(*this);
    auto f = make_expr(ExprKind::kFilter, cur());
    f->name = expect_name();
    while (is_op(".") && peek().type == Tok::kName) {
      advance();
      f->name += "." + expect_name();
    }
    f->target = std::move(target);
    if (is_op("(")) parse_call_args(*f);
    return f;
  }

  ExprPtr parse_filter_expr(ExprPtr e) {
    while (true) {
      if (skip_op("|")) {
        e = parse_filter(std::move(e));
      } else if (is_name("is")) {
        DepthGuard guard(*this);
        auto test = make_expr(ExprKind::kTest, cur());
        advance();
        if (skip_name("not")) test->negated = true;
        test->name = expect_name();
        test->target = std::move(e);
        const Token& n = cur();
        if (is_op("(")) {
          parse_call_args(*test);
        } else if ((n.type == Tok::kName || n.type == Tok::kString || n.type == Tok::kInt || n.type == Tok::kFloat ||
                    (n.type == Tok::kOp && (n.text == "(" || n.text == "[" || n.text == "{"))) &&
                   !(n.type == Tok::kName && (n.text == "else" || n.text == "or" || n.text == "and" ||
                                              n.text == "if" || n.text == "is" || n.text == "not" || n.text == "in"))) {
          test->args.push_back(parse_postfix(parse_primary()));
        }
        e = std::move(test);
      } else if (is_op("(")) {
        e = parse_call(std::move(e), cur());
      } else {
        return e;
      }
    }
  }

  const std::vector<Token>& t_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

Body parse(const std::vector<Token>& tokens) { return Parser(tokens).parse_template(); }

}  // namespace saker::text::jinja
