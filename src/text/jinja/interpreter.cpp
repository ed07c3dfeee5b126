// Statements: text, output, if, for, set, macro, call, filter, with, break/continue.
#include "text/jinja/interpreter.h"

namespace saker::text::jinja {

Interpreter::Interpreter(RenderLimits limits, std::function<std::string(const std::string&)> strftime)
    : limits_(limits), strftime_(std::move(strftime)) {}

void Interpreter::step() {
  if (++steps_ > limits_.max_steps) throw Error("template exceeded its step budget (infinite or runaway loop?)");
}

void Interpreter::check_size(size_t bytes) const {
  if (bytes > limits_.max_output_bytes)
    throw Error("template output exceeds " + std::to_string(limits_.max_output_bytes) + " bytes");
}

void Interpreter::write(const std::string& text) {
  check_size(out_->size() + text.size());
  out_->append(text);
}

void Interpreter::write_value(const Value& v) {
  if (v.is_string()) check_size(out_->size() + v.s.size());
  append_marked(*out_, *out_untrusted_, v);
  check_size(out_->size());
}

MarkedText Interpreter::render_marked(const Body& body, const Value& context) {
  MemoryBudget budget(limits_.max_memory_bytes);
  auto globals = std::make_shared<Scope>();
  add_globals(*globals);
  auto root = std::make_shared<Scope>();
  root->parent = globals;
  if (context.is_dict()) {
    for (auto& [k, v] : context.dict->entries) root->vars[to_str(k)] = v;
  }
  MarkedText out;
  out_ = &out.text;
  out_untrusted_ = &out.untrusted;
  exec_body(body, root);
  out_ = nullptr;
  out_untrusted_ = nullptr;
  return out;
}

std::string Interpreter::render(const Body& body, const Value& context) {
  return render_marked(body, context).text;
}

Value Interpreter::capture(const Body& body, const std::shared_ptr<Scope>& scope) {
  std::string buffer;
  ByteRanges ranges;
  std::string* saved = out_;
  ByteRanges* saved_ranges = out_untrusted_;
  out_ = &buffer;
  out_untrusted_ = &ranges;
  try {
    exec_body(body, scope);
  } catch (...) {
    out_ = saved;
    out_untrusted_ = saved_ranges;
    throw;
  }
  out_ = saved;
  out_untrusted_ = saved_ranges;
  return Value::string(std::move(buffer), std::move(ranges));
}

Interpreter::Flow Interpreter::exec_body(const Body& body, const std::shared_ptr<Scope>& scope) {
  for (const auto& s : body) {
    const Flow f = exec(*s, scope);
    if (f != Flow::kNormal) return f;
  }
  return Flow::kNormal;
}

Interpreter::Flow Interpreter::exec(const Stmt& s, const std::shared_ptr<Scope>& scope) {
  try {
    switch (s.kind) {
      case StmtKind::kText: write(s.text); break;
      case StmtKind::kOutput: {
        step();
        write_value(eval(*s.expr, scope));
        break;
      }
      case StmtKind::kIf: {
        for (size_t k = 0; k < s.conditions.size(); ++k) {
          if (truthy(eval(*s.conditions[k], scope))) return exec_body(s.bodies[k], scope);
        }
        return exec_body(s.else_body, scope);
      }
      case StmtKind::kFor: exec_for(s, scope); break;
      case StmtKind::kSet: exec_set(s, scope); break;
      case StmtKind::kSetBlock: {
        Value v = capture(s.body, scope);
        if (s.expr) {
          // The filter chain's innermost target is null: feed the captured text through it.
          std::vector<const Expr*> chain;
          for (const Expr* e = s.expr.get(); e; e = e->target.get()) chain.push_back(e);
          for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
            CallArgs args = eval_args(**it, scope);
            v = apply_filter((*it)->name, v, args);
          }
        }
        scope->vars[s.text] = v;
        break;
      }
      case StmtKind::kMacro: scope->vars[s.text] = make_macro(s, scope); break;
      case StmtKind::kCallBlock: {
        // caller() renders the block body with the caller's parameters bound.
        const Stmt* stmt = &s;
        std::weak_ptr<Scope> defining = scope;
        Value caller = Value::callable("caller", [this, stmt, defining](Interpreter&, CallArgs& args) {
          auto local = std::make_shared<Scope>();
          local->parent = defining.lock();
          if (!local->parent) throw Error("caller() used outside its call block");
          for (size_t k = 0; k < stmt->params.size(); ++k) {
            const Value* a = arg(args, k, stmt->params[k].name.c_str());
            local->vars[stmt->params[k].name] =
                a ? *a : stmt->params[k].default_value ? eval(*stmt->params[k].default_value, local) : Value::undefined();
          }
          return capture(stmt->body, local);
        });
        const Expr& call = *s.expr;
        Value callee = eval(*call.target, scope);
        CallArgs args = eval_args(call, scope);
        args.keyword.emplace_back("caller", caller);
        write_value(this->call(callee, args));
        break;
      }
      case StmtKind::kFilterBlock: {
        Value v = capture(s.body, scope);
        std::vector<const Expr*> chain;
        for (const Expr* e = s.expr.get(); e; e = e->target.get()) chain.push_back(e);
        for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
          CallArgs args = eval_args(**it, scope);
          v = apply_filter((*it)->name, v, args);
        }
        write_value(v);
        break;
      }
      case StmtKind::kWith: {
        auto local = std::make_shared<Scope>();
        local->parent = scope;
        for (auto& [name, e] : s.assignments) local->vars[name] = eval(*e, scope);
        return exec_body(s.body, local);
      }
      case StmtKind::kScope: return exec_body(s.body, scope);
      case StmtKind::kBreak: return Flow::kBreak;
      case StmtKind::kContinue: return Flow::kContinue;
    }
  } catch (Error& e) {
    if (e.line == 0) {
      e.line = s.line;
      e.column = s.column;
    }
    throw;
  }
  return Flow::kNormal;
}

static void bind_targets(Scope& scope, const std::vector<std::string>& targets, const Value& v) {
  if (targets.size() == 1) {
    scope.vars[targets[0]] = v;
    return;
  }
  std::vector<Value> parts = iterate(v);
  if (parts.size() != targets.size())
    throw Error("cannot unpack " + std::to_string(parts.size()) + " values into " + std::to_string(targets.size()) +
                " names");
  for (size_t k = 0; k < targets.size(); ++k) scope.vars[targets[k]] = parts[k];
}

void Interpreter::exec_for(const Stmt& s, const std::shared_ptr<Scope>& scope) {
  if (s.recursive) throw Error("recursive for loops are not supported");
  Value iterable = eval(*s.expr, scope);
  std::vector<Value> items = iterate(iterable);
  if (s.condition) {
    std::vector<Value> kept;
    for (auto& item : items) {
      step();
      auto probe = std::make_shared<Scope>();
      probe->parent = scope;
      bind_targets(*probe, s.targets, item);
      if (truthy(eval(*s.condition, probe))) kept.push_back(item);
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    exec_body(s.else_body, scope);
    return;
  }
  const int64_t n = int64_t(items.size());
  for (int64_t k = 0; k < n; ++k) {
    step();
    auto local = std::make_shared<Scope>();
    local->parent = scope;
    bind_targets(*local, s.targets, items[size_t(k)]);
    Value loop = Value::make_dict();
    auto& d = *loop.dict;
    d.set(Value::string("index"), Value::integer(k + 1));
    d.set(Value::string("index0"), Value::integer(k));
    d.set(Value::string("revindex"), Value::integer(n - k));
    d.set(Value::string("revindex0"), Value::integer(n - k - 1));
    d.set(Value::string("first"), Value::boolean(k == 0));
    d.set(Value::string("last"), Value::boolean(k == n - 1));
    d.set(Value::string("length"), Value::integer(n));
    d.set(Value::string("depth"), Value::integer(1));
    d.set(Value::string("depth0"), Value::integer(0));
    if (k > 0) d.set(Value::string("previtem"), items[size_t(k - 1)]);
    if (k + 1 < n) d.set(Value::string("nextitem"), items[size_t(k + 1)]);
    d.set(Value::string("cycle"), Value::callable("cycle", [k](Interpreter&, CallArgs& args) {
      if (args.positional.empty()) throw Error("loop.cycle() needs at least one argument");
      return args.positional[size_t(k) % args.positional.size()];
    }));
    local->vars["loop"] = loop;
    if (exec_body(s.body, local) == Flow::kBreak) break;
  }
}

void Interpreter::exec_set(const Stmt& s, const std::shared_ptr<Scope>& scope) {
  Value v = eval(*s.expr, scope);
  if (!s.attr.empty()) {
    Value target = lookup(s.text, *scope);
    if (target.kind != Kind::kNamespace) throw Error("cannot assign attribute on non-namespace object '" + s.text + "'");
    check_no_cycle(target, v);
    target.dict->set(Value::string(s.attr), std::move(v));
    return;
  }
  bind_targets(*scope, s.targets, v);
}

Value Interpreter::make_macro(const Stmt& s, const std::shared_ptr<Scope>& scope) {
  const Stmt* stmt = &s;
  std::weak_ptr<Scope> defining = scope;
  return Value::callable(s.text, [stmt, defining](Interpreter& in, CallArgs& args) -> Value {
    auto parent = defining.lock();
    if (!parent) throw Error("macro '" + stmt->text + "' called outside its scope");
    if (in.call_depth_ >= in.limits_.max_call_depth)
      throw Error("macro recursion deeper than " + std::to_string(in.limits_.max_call_depth));
    ++in.call_depth_;
    struct Leave {
      int& depth;
      ~Leave() { --depth; }
    } leave{in.call_depth_};
    auto local = std::make_shared<Scope>();
    local->parent = parent;
    const auto& params = stmt->params;
    std::vector<Value> varargs;
    for (size_t k = 0; k < args.positional.size(); ++k) {
      if (k < params.size()) local->vars[params[k].name] = args.positional[k];
      else varargs.push_back(args.positional[k]);
    }
    Value kwargs = Value::make_dict();
    for (auto& [name, v] : args.keyword) {
      bool is_param = false;
      for (size_t k = 0; k < params.size(); ++k) {
        if (params[k].name != name) continue;
        if (k < args.positional.size()) throw Error("macro '" + stmt->text + "' got multiple values for '" + name + "'");
        is_param = true;
      }
      if (is_param || name == "caller") local->vars[name] = v;
      else kwargs.dict->set(Value::string(name), v);
    }
    for (const auto& p : params) {
      if (local->vars.count(p.name)) continue;
      local->vars[p.name] = p.default_value ? in.eval(*p.default_value, local) : Value::undefined(p.name);
    }
    local->vars["varargs"] = Value::make_tuple(std::move(varargs));
    local->vars["kwargs"] = kwargs;
    return in.capture(stmt->body, local);
  });
}

}  // namespace saker::text::jinja
