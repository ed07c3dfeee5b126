#include "server/http/request.h"

namespace saker::http {

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

}  // namespace

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

std::string percent_decode(std::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '%' && i + 2 < text.size()) {
      const int hi = hex_value(text[i + 1]);
      const int lo = hex_value(text[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(plus_is_space && c == '+' ? ' ' : c);
  }
  return out;
}

std::string Request::header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (iequals(k, name)) return v;
  }
  return {};
}

bool Request::has_header(std::string_view name) const {
  for (const auto& h : headers) {
    if (iequals(h.first, name)) return true;
  }
  return false;
}

std::string Request::query_param(const std::string& name) const {
  auto it = query.find(name);
  return it == query.end() ? std::string() : it->second;
}

bool Request::set_target(std::string raw_target) {
  target = std::move(raw_target);
  path.clear();
  query.clear();
  std::string_view t = target;
  if (t == "*") {
    path.assign(1, '*');  // (not = "*": gcc 12 warns falsely on that assignment)
    return true;
  }
  // Absolute form ("http://host/path"), which HTTP/1.1 servers must accept: the authority is dropped.
  if (!t.starts_with('/')) {
    const size_t scheme_end = t.find("://");
    if (scheme_end == std::string_view::npos) return false;
    const size_t path_start = t.find('/', scheme_end + 3);
    t = path_start == std::string_view::npos ? std::string_view("/") : t.substr(path_start);
  }
  const size_t q = t.find('?');
  path = percent_decode(t.substr(0, q), false);
  if (q == std::string_view::npos) return true;
  std::string_view rest = t.substr(q + 1);
  const size_t hash = rest.find('#');
  if (hash != std::string_view::npos) rest = rest.substr(0, hash);
  while (!rest.empty()) {
    const size_t amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    if (!pair.empty()) {
      const size_t eq = pair.find('=');
      std::string key = percent_decode(pair.substr(0, eq), true);
      std::string value = eq == std::string_view::npos ? std::string() : percent_decode(pair.substr(eq + 1), true);
      query.emplace(std::move(key), std::move(value));
    }
    if (amp == std::string_view::npos) break;
    rest = rest.substr(amp + 1);
  }
  return true;
}

}  // namespace saker::http
