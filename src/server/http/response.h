#pragma once
// http::Response: what a handler answers. Either a whole answer (status, headers, body; the server sends it
// with a Content-Length when the handler returns) or a stream: start_stream() sends the status line and
// headers at once (chunked), then each write() sends one chunk from the handler's thread, and the stream ends
// when the handler returns. write() returns false once the client is gone: the handler should stop then.
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/http/client_gone.h"
#include "server/http/stream_channel.h"

namespace saker::http {

class Response {
 public:
  // How the connection frames this answer (decided from the request and the server's state).
  struct Framing {
    bool keep_alive = true;
    bool http10 = false;  // HTTP/1.0 peers get no chunked framing: a stream ends with the connection
  };

  // A response that belongs to no connection (handler tests): a stream's writes are appended to `body`.
  Response();
  // The server's constructor: the connection's client-gone signal and the channel a stream writes through.
  Response(std::shared_ptr<ClientGone> gone, std::shared_ptr<StreamChannel> channel, Framing framing);

  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;

  // Replaces a header of the same name (CR and LF in names or values become spaces: no header injection).
  void set_header(std::string name, std::string value);
  void set_content(std::string content, std::string content_type);

  // Streaming. start_stream() sends status + headers (with `content_type`) now; false when the client is gone.
  bool start_stream(int status_code, std::string content_type);
  // Sends one chunk; blocks while the client reads slower than the handler writes. False when the client is
  // gone or the write deadline passed: the handler should return.
  bool write(std::string_view data);
  bool streaming() const { return streaming_; }

  bool client_is_gone() const { return gone_->is_set(); }
  const ClientGone& client_gone() const { return *gone_; }
  // Runs `callback` (short, non-blocking: it runs on the server's I/O thread) once the client is gone.
  void on_client_gone(std::function<void()> callback) { gone_->on_set(std::move(callback)); }

  // The server's side: the bytes of a whole answer, of a stream's end.
  std::string serialize_whole() const;
  std::string stream_trailer() const;  // "0\r\n\r\n" (chunked) or nothing (HTTP/1.0)
  const Framing& framing() const { return framing_; }

 private:
  std::string head(bool chunked, size_t content_length) const;

  std::shared_ptr<ClientGone> gone_;
  std::shared_ptr<StreamChannel> channel_;
  Framing framing_;
  bool streaming_ = false;
};

// "OK", "Not Found", ...; "" for codes it does not know.
const char* reason_phrase(int status);

}  // namespace saker::http
