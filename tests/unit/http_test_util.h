#pragma once
// Helpers for the HTTP layer's tests: a server on 127.0.0.1 (any free port) and a raw blocking client whose
// every read is bounded in time, so a test that goes wrong fails instead of hanging.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "server/http/router.h"
#include "server/http/server.h"

namespace saker::http::test {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

inline double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Options for tests: short deadlines, few threads.
inline ServerOptions test_options() {
  ServerOptions o;
  o.host = "127.0.0.1";
  o.port = 0;
  o.io_threads = 2;
  o.worker_threads = 4;
  o.header_timeout = milliseconds(2000);
  o.body_timeout = milliseconds(5000);
  o.idle_timeout = milliseconds(2000);
  o.write_timeout = milliseconds(3000);
  o.linger_timeout = milliseconds(300);
  return o;
}

// The test process holds both ends of every connection.
inline void raise_open_file_limit(rlim_t wanted) {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur >= wanted) return;
  lim.rlim_cur = lim.rlim_max == RLIM_INFINITY ? wanted : std::min(wanted, lim.rlim_max);
  setrlimit(RLIMIT_NOFILE, &lim);
}

class TestServer {
 public:
  TestServer(ServerOptions options, RequestHandler handler) : server_(std::move(options), std::move(handler)) {
    const Status st = server_.start();
    EXPECT_TRUE(st.ok()) << st.message();
  }
  TestServer(ServerOptions options, const Router& router)
      : TestServer(std::move(options), [&router](Request& q, Response& r) { router.dispatch(q, r); }) {}
  ~TestServer() { server_.stop(milliseconds(500)); }

  int port() const { return server_.port(); }
  Server& server() { return server_; }

 private:
  Server server_;
};

struct ParsedResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  bool chunked = false;
};

class RawClient {
 public:
  explicit RawClient(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  ~RawClient() { close(); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool connected() const { return connected_; }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // Close with a reset (SO_LINGER 0): the abrupt way a client vanishes.
  void reset() {
    linger l{1, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    close();
  }

  bool send(const std::string& data) {
    size_t done = 0;
    while (done < data.size()) {
      const ssize_t n = ::send(fd_, data.data() + done, data.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }

  // Reads what arrives within `timeout` into the buffer; false at end of stream or error (closed by the peer).
  bool read_some(milliseconds timeout) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return true;  // nothing yet, still open
    char buf[65536];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) {
      eof_ = true;
      return false;
    }
    buffer_.append(buf, static_cast<size_t>(n));
    return true;
  }

  // True when the peer closes the connection within `timeout` (data that arrives meanwhile is kept).
  bool closed_within(milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (!eof_ && Clock::now() < deadline) {
      const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
      if (!read_some(std::max(milliseconds(1), left))) break;
    }
    return eof_;
  }

  // One whole response (Content-Length or chunked body) within `timeout`, or nullopt.
  std::optional<ParsedResponse> read_response(milliseconds timeout = milliseconds(3000)) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      if (auto r = take_response()) return r;
      if (eof_ || Clock::now() >= deadline) return std::nullopt;
      read_some(milliseconds(20));
    }
  }

  std::string& buffer() { return buffer_; }
  int fd() const { return fd_; }

 private:
  // Removes one complete response from the front of buffer_ (skipping 100 Continue), if it is all there.
  std::optional<ParsedResponse> take_response() {
    for (;;) {
      const size_t head_end = buffer_.find("\r\n\r\n");
      if (head_end == std::string::npos) return std::nullopt;
      ParsedResponse r;
      r.status = std::atoi(buffer_.c_str() + 9);
      size_t line = buffer_.find("\r\n") + 2;
      while (line < head_end) {
        const size_t eol = buffer_.find("\r\n", line);
        const std::string field = buffer_.substr(line, eol - line);
        const size_t colon = field.find(':');
        std::string name = field.substr(0, colon);
        for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        r.headers[name] = field.substr(field.find_first_not_of(' ', colon + 1));
        line = eol + 2;
      }
      size_t pos = head_end + 4;
      if (r.status == 100) {
        buffer_.erase(0, pos);
        continue;
      }
      if (r.headers.count("transfer-encoding")) {
        r.chunked = true;
        for (;;) {
          const size_t eol = buffer_.find("\r\n", pos);
          if (eol == std::string::npos) return std::nullopt;
          const size_t size = std::stoul(buffer_.substr(pos, eol - pos), nullptr, 16);
          if (buffer_.size() < eol + 2 + size + 2) return std::nullopt;
          r.body += buffer_.substr(eol + 2, size);
          pos = eol + 2 + size + 2;
          if (size == 0) break;
        }
      } else {
        const size_t length = r.headers.count("content-length") ? std::stoul(r.headers["content-length"]) : 0;
        if (buffer_.size() < pos + length) return std::nullopt;
        r.body = buffer_.substr(pos, length);
        pos += length;
      }
      buffer_.erase(0, pos);
      return r;
    }
  }

  int fd_ = -1;
  bool connected_ = false;
  bool eof_ = false;
  std::string buffer_;
};

inline std::string get(const std::string& path, const std::string& extra_headers = "") {
  return "GET " + path + " HTTP/1.1\r\nHost: t\r\n" + extra_headers + "\r\n";
}

inline std::string post(const std::string& path, const std::string& body, const std::string& extra_headers = "") {
  return "POST " + path + " HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" +
         extra_headers + "\r\n" + body;
}

// One request on a fresh connection.
inline std::optional<ParsedResponse> exchange(int port, const std::string& request,
                                              milliseconds timeout = milliseconds(3000)) {
  RawClient c(port);
  if (!c.connected() || !c.send(request)) return std::nullopt;
  return c.read_response(timeout);
}

}  // namespace saker::http::test
