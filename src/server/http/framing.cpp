#include "server/http/framing.h"

#include <boost/beast/http/error.hpp>

#include <vector>

#include "server/http/request.h"

namespace saker::http {

namespace {

namespace bhttp = boost::beast::http;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// A value echoed in a message: bounded, printable.
std::string shown(std::string_view v) {
  std::string out;
  for (char c : v.substr(0, 64)) out.push_back(c >= 0x20 && c < 0x7f ? c : '?');
  if (v.size() > 64) out += "...";
  return "'" + out + "'";
}

bool is_decimal(std::string_view v) {
  if (v.empty() || v.size() > 19) return false;  // 19 digits always fit in 64 bits
  for (char c : v) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace

std::optional<std::string> framing_problem(std::string_view raw) {
  std::vector<std::string_view> lengths, encodings;
  size_t pos = raw.find('\n');  // the request line ends here
  while (pos != std::string_view::npos && pos + 1 < raw.size()) {
    const size_t start = pos + 1;
    const size_t end = raw.find('\n', start);
    const std::string_view line = raw.substr(start, end == std::string_view::npos ? raw.size() - start : end - start);
    pos = end;
    if (trim(line).empty()) break;  // the blank line ends the header
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view name = trim(line.substr(0, colon));
    const std::string_view value = trim(line.substr(colon + 1));
    if (iequals(name, "Content-Length")) lengths.push_back(value);
    if (iequals(name, "Transfer-Encoding")) encodings.push_back(value);
  }
  if (!lengths.empty() && !encodings.empty()) {
    return "the request has both Transfer-Encoding and Content-Length headers: its length is ambiguous";
  }
  if (lengths.size() > 1) {
    return "the request has " + std::to_string(lengths.size()) + " Content-Length headers; one is allowed";
  }
  if (lengths.size() == 1 && !is_decimal(lengths[0])) {
    return "Content-Length " + shown(lengths[0]) + " is not a non-negative decimal integer";
  }
  if (encodings.size() > 1) {
    return "the request has " + std::to_string(encodings.size()) + " Transfer-Encoding headers; one is allowed";
  }
  if (encodings.size() == 1 && !iequals(encodings[0], "chunked")) {
    return "Transfer-Encoding " + shown(encodings[0]) + " is not supported; only 'chunked' is";
  }
  return std::nullopt;
}

Refusal refusal_for(const boost::beast::error_code& ec, std::string_view raw, size_t max_header_bytes,
                    uint64_t max_body_bytes) {
  if (ec == bhttp::error::body_limit) {
    return {413, "the request body is larger than the server's limit of " + std::to_string(max_body_bytes) + " bytes"};
  }
  if (ec == bhttp::error::header_limit) {
    return {431, "the request header is larger than the server's limit of " + std::to_string(max_header_bytes) +
                     " bytes"};
  }
  if (ec == bhttp::error::bad_content_length || ec == bhttp::error::bad_transfer_encoding) {
    if (auto problem = framing_problem(raw)) return {400, *problem};
    return {400, ec == bhttp::error::bad_content_length ? "invalid Content-Length header"
                                                        : "invalid Transfer-Encoding header"};
  }
  if (ec == bhttp::error::bad_chunk || ec == bhttp::error::bad_chunk_extension) {
    return {400, "malformed chunked body: a chunk size line is not a hexadecimal size followed by CRLF"};
  }
  if (ec == bhttp::error::bad_method) return {400, "malformed request line: invalid method"};
  if (ec == bhttp::error::bad_target) return {400, "malformed request line: invalid request target"};
  if (ec == bhttp::error::bad_version) return {400, "malformed request line: invalid HTTP version"};
  if (ec == bhttp::error::bad_field || ec == bhttp::error::bad_value || ec == bhttp::error::bad_obs_fold) {
    return {400, "malformed header field (invalid name, value or line folding)"};
  }
  if (ec == bhttp::error::bad_line_ending) return {400, "malformed request: lines must end with CRLF"};
  return {400, "malformed request: " + ec.message()};
}

}  // namespace saker::http
