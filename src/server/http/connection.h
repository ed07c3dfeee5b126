#pragma once
// Connection: one client socket, driven by the I/O threads on its own strand. It reads requests through
// Beast's parser within the header and body deadlines and limits, hands each complete request to a worker
// thread, keeps a read pending while the handler runs (so a peer that closes or resets is noticed at once and
// its ClientGone set), writes answers in request order (pipelined requests included) under a write deadline,
// and keeps the connection alive between requests for the idle timeout. A final answer (a refusal,
// Connection: close, stop) is followed by a lingering close: the write side is shut and unread input
// drained for a short bounded time, so that the client reads the answer instead of a reset.
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>

#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <string>

#include "server/http/connection_host.h"
#include "server/http/request_body.h"

namespace saker::http {

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  // `counted`: whether the connection holds one of the server's connection slots (refused ones do not).
  Connection(boost::asio::ip::tcp::socket socket, ConnectionHost& host, std::string remote_address, bool counted);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  const std::string& remote_address() const { return remote_; }
  boost::asio::ip::tcp::socket::executor_type executor() { return socket_.get_executor(); }
  bool counted() const { return counted_; }

  // On the strand (right after accept): serve requests, or answer one refusal and close.
  void start();
  void start_refused(int status, std::string message);

  // Thread-safe (they post to the strand). The server stops: close now unless a handler runs, else close
  // after its answer.
  void shut_down_when_idle();
  // The server's stop deadline: the client counts as gone and the socket closes now.
  void abort();

 private:
  enum class State {
    kAwaiting,   // between requests: no byte of the next one yet
    kHeader,     // reading a request header
    kBody,       // reading a request body
    kHandling,   // a handler runs or its answer is being written
    kLingering,  // a final answer is written or being written; input is discarded
    kClosed,
  };
  struct Exchange;
  struct Outgoing {
    std::string bytes;
    bool counted_by_stream = false;  // bytes a StreamChannel waits on
  };

  void start_read();
  void on_readable(const boost::beast::error_code& wait_error);
  void advance();        // parse what is buffered, in the current state
  bool parse_buffered(); // kHeader / kBody: false when the request is complete or refused
  void dispatch();
  void on_handler_done(const std::shared_ptr<Exchange>& exchange);
  void next_request();
  void refuse(int status, const std::string& message);

  void queue_write(std::string bytes, bool counted_by_stream);
  void start_write();
  void on_write(const boost::beast::error_code& ec);
  void on_drained();
  void begin_linger();

  void arm_read_deadline(std::chrono::milliseconds d);
  void cancel_read_deadline();
  void close();

  Request partial_request() const;  // what the parser knows of the current request (for refusals)

  boost::asio::ip::tcp::socket socket_;
  boost::asio::steady_timer read_deadline_;
  boost::asio::steady_timer write_deadline_;
  ConnectionHost& host_;
  const ServerOptions& options_;
  const std::string remote_;
  const bool counted_;

  State state_ = State::kAwaiting;
  boost::beast::flat_buffer in_;
  std::optional<boost::beast::http::request_parser<RequestBody>> parser_;
  bool reading_ = false;
  uint64_t read_deadline_generation_ = 0;
  uint64_t write_deadline_generation_ = 0;

  std::deque<Outgoing> out_;       // queued, not yet handed to the socket
  std::deque<Outgoing> in_flight_; // handed to the socket by the write in progress
  bool writing_ = false;
  bool close_after_write_ = false;
  bool stop_requested_ = false;

  // The request being handled.
  std::shared_ptr<ClientGone> gone_;
  std::shared_ptr<StreamChannel> channel_;
  bool answer_queued_ = false;  // the handler returned and its answer (or a stream's end) is queued
};

}  // namespace saker::http
