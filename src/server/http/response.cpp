#include "server/http/response.h"

#include <cstdio>

#include "server/http/request.h"

namespace saker::http {

namespace {

std::string without_line_breaks(std::string s) {
  for (char& c : s) {
    if (c == '\r' || c == '\n') c = ' ';
  }
  return s;
}

bool has_no_body(int status) { return status == 204 || status == 304 || (status >= 100 && status < 200); }

}  // namespace

const char* reason_phrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    default: return "";
  }
}

Response::Response() : gone_(std::make_shared<ClientGone>()) {}

Response::Response(std::shared_ptr<ClientGone> gone, std::shared_ptr<StreamChannel> channel, Framing framing)
    : gone_(std::move(gone)), channel_(std::move(channel)), framing_(framing) {}

void Response::set_header(std::string name, std::string value) {
  name = without_line_breaks(std::move(name));
  value = without_line_breaks(std::move(value));
  for (auto& h : headers) {
    if (iequals(h.first, name)) {
      h.second = std::move(value);
      return;
    }
  }
  headers.emplace_back(std::move(name), std::move(value));
}

void Response::set_content(std::string content, std::string content_type) {
  body = std::move(content);
  set_header("Content-Type", std::move(content_type));
}

std::string Response::head(bool chunked, size_t content_length) const {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) + "\r\n";
  for (const auto& [name, value] : headers) {
    // Framing is the server's: a handler cannot set a second length or encoding.
    if (iequals(name, "Content-Length") || iequals(name, "Transfer-Encoding") || iequals(name, "Connection")) continue;
    out += name + ": " + value + "\r\n";
  }
  if (chunked) {
    out += "Transfer-Encoding: chunked\r\n";
  } else if (!has_no_body(status) && !(streaming_ && framing_.http10)) {
    out += "Content-Length: " + std::to_string(content_length) + "\r\n";
  }
  const bool keep_alive = framing_.keep_alive && !(streaming_ && framing_.http10);
  if (!keep_alive) {
    out += "Connection: close\r\n";
  } else if (framing_.http10) {
    out += "Connection: keep-alive\r\n";
  }
  out += "\r\n";
  return out;
}

std::string Response::serialize_whole() const {
  std::string out = head(false, body.size());
  if (!has_no_body(status)) out += body;
  return out;
}

std::string Response::stream_trailer() const { return framing_.http10 ? std::string() : std::string("0\r\n\r\n"); }

bool Response::start_stream(int status_code, std::string content_type) {
  if (streaming_) return !gone_->is_set();
  status = status_code;
  set_header("Content-Type", std::move(content_type));
  streaming_ = true;
  body.clear();
  if (!channel_) return true;
  return channel_->write(head(!framing_.http10, 0));
}

bool Response::write(std::string_view data) {
  if (!streaming_) return false;
  if (!channel_) {
    body.append(data);
    return true;
  }
  if (data.empty()) return !gone_->is_set() && !channel_->closed();  // an empty chunk would end the stream
  if (framing_.http10) return channel_->write(std::string(data));
  char size_line[32];
  const int n = std::snprintf(size_line, sizeof size_line, "%zx\r\n", data.size());
  std::string chunk;
  chunk.reserve(static_cast<size_t>(n) + data.size() + 2);
  chunk.append(size_line, static_cast<size_t>(n));
  chunk.append(data);
  chunk.append("\r\n");
  return channel_->write(std::move(chunk));
}

}  // namespace saker::http
