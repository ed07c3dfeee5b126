#include "server/http/connection.h"

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include <exception>
#include <vector>

#include "core/log.h"
#include "server/http/framing.h"

namespace saker::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;

namespace {

constexpr size_t kReadChunk = 64 << 10;

}  // namespace

struct Connection::Exchange {
  Request request;
  Response response;
  bool failed_mid_stream = false;  // the handler threw after its stream started: the answer cannot be completed
};

Connection::Connection(asio::ip::tcp::socket socket, ConnectionHost& host, std::string remote_address, bool counted)
    : socket_(std::move(socket)),
      read_deadline_(socket_.get_executor()),
      write_deadline_(socket_.get_executor()),
      host_(host),
      options_(host.options()),
      remote_(std::move(remote_address)),
      counted_(counted) {}

Connection::~Connection() {
  // Reached without close() only when the I/O threads stopped with work pending: the slot is still freed.
  if (state_ != State::kClosed) {
    beast::error_code ignored;
    socket_.close(ignored);
    if (gone_) gone_->set();
    if (channel_) channel_->close();
    host_.connection_closed(this);
  }
}

void Connection::start() {
  if (host_.stopping()) {  // accepted while the server began to stop
    close();
    return;
  }
  beast::error_code ignored;
  socket_.non_blocking(true, ignored);  // reads happen on the strand once the socket is readable
  // A fresh connection must send its whole header within the header deadline, counted from accept.
  arm_read_deadline(options_.header_timeout);
  start_read();
}

void Connection::start_refused(int status, std::string message) {
  Response r(std::make_shared<ClientGone>(), nullptr, Response::Framing{.keep_alive = false, .http10 = false});
  Request request;
  request.remote_address = remote_;
  host_.refuse(request, status, message, r);
  beast::error_code ignored;
  socket_.non_blocking(true, ignored);
  state_ = State::kLingering;
  close_after_write_ = true;
  queue_write(r.serialize_whole(), false);
  start_read();  // discards whatever the client sends meanwhile
}

void Connection::shut_down_when_idle() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    self->stop_requested_ = true;
    self->close_after_write_ = true;
    if (self->state_ != State::kHandling) self->close();
  });
}

void Connection::abort() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] { self->close(); });
}

// ---- reading ----

void Connection::start_read() {
  if (reading_ || state_ == State::kClosed) return;
  // Bytes that wait (a pipelined request while a handler runs) are bounded: past the cap reading stops until
  // they are parsed.
  if (in_.size() >= options_.max_header_bytes + kReadChunk) return;
  reading_ = true;
  // Wait for readability, then read on the strand: no operation holds a part of in_ while it waits, so in_
  // can be parsed, consumed and shrunk at any time, and an idle connection holds no read buffer.
  socket_.async_wait(asio::ip::tcp::socket::wait_read,
                     [self = shared_from_this()](const beast::error_code& ec) { self->on_readable(ec); });
}

void Connection::on_readable(const beast::error_code& wait_error) {
  reading_ = false;
  if (state_ == State::kClosed) return;
  beast::error_code ec = wait_error;
  size_t n = 0;
  if (!ec) n = socket_.read_some(in_.prepare(kReadChunk), ec);
  if (ec == asio::error::would_block || ec == asio::error::try_again) {
    start_read();
    return;
  }
  if (ec) {
    // End of stream or reset. While a handler runs this is the signal that its client left; otherwise there
    // is nobody to answer.
    close();
    return;
  }
  in_.commit(n);
  if (state_ == State::kLingering) {
    in_.consume(in_.size());
    start_read();
    return;
  }
  advance();
}

void Connection::advance() {
  if (state_ == State::kAwaiting) {
    if (in_.size() == 0) {
      start_read();
      return;
    }
    state_ = State::kHeader;
    arm_read_deadline(options_.header_timeout);  // the whole header, from its first byte
  }
  if (state_ == State::kHeader || state_ == State::kBody) {
    if (!parser_) {
      parser_.emplace();
      parser_->header_limit(static_cast<std::uint32_t>(options_.max_header_bytes));
      parser_->body_limit(options_.max_body_bytes);
    }
    if (!parse_buffered()) return;
  }
  start_read();
}

bool Connection::parse_buffered() {
  while (in_.size() > 0) {
    beast::error_code ec;
    const auto data = in_.data();
    const size_t used = parser_->put(asio::const_buffer(data.data(), data.size()), ec);
    const bool need_more = ec == bhttp::error::need_more;
    if (ec && !need_more) {
      const Refusal r = refusal_for(ec, std::string_view(static_cast<const char*>(data.data()), data.size()),
                                    options_.max_header_bytes, options_.max_body_bytes);
      refuse(r.status, r.message);
      return false;
    }
    if (state_ == State::kHeader && parser_->is_header_done()) {
      // Beast accepts some framings that let two parties disagree on where the body ends; refuse them.
      if (auto problem = framing_problem(std::string_view(static_cast<const char*>(data.data()), used))) {
        refuse(400, *problem);
        return false;
      }
      in_.consume(used);
      state_ = State::kBody;
      arm_read_deadline(options_.body_timeout);
      const auto& header = parser_->get();
      if (!parser_->is_done() && header.version() >= 11 && iequals(header[bhttp::field::expect], "100-continue")) {
        queue_write("HTTP/1.1 100 Continue\r\n\r\n", false);
      }
    } else {
      in_.consume(used);
    }
    if (parser_->is_done()) {
      dispatch();
      return false;
    }
    if (need_more || used == 0) break;
  }
  return true;
}

Request Connection::partial_request() const {
  Request r;
  r.remote_address = remote_;
  if (parser_ && parser_->is_header_done()) {
    const auto& h = parser_->get();
    r.method = std::string(h.method_string());
    if (!r.set_target(std::string(h.target()))) r.path.clear();
    r.version = static_cast<int>(h.version());
  }
  return r;
}

void Connection::refuse(int status, const std::string& message) {
  Request request = partial_request();
  Response r(std::make_shared<ClientGone>(), nullptr, Response::Framing{.keep_alive = false, .http10 = false});
  host_.refuse(request, status, message, r);
  parser_.reset();
  in_.consume(in_.size());
  cancel_read_deadline();  // the write deadline covers the answer; the linger deadline follows it
  state_ = State::kLingering;
  close_after_write_ = true;
  queue_write(r.serialize_whole(), false);
  start_read();
}

// ---- handling ----

void Connection::dispatch() {
  auto message = parser_->release();
  parser_.reset();
  auto exchange = std::make_shared<Exchange>();
  Request& request = exchange->request;
  request.method = std::string(message.method_string());
  request.version = static_cast<int>(message.version());
  request.remote_address = remote_;
  if (!request.set_target(std::string(message.target()))) {
    refuse(400, "the request target '" + std::string(message.target().substr(0, 64)) + "' is not a path");
    return;
  }
  request.headers.reserve(static_cast<size_t>(std::distance(message.begin(), message.end())));
  for (const auto& field : message) request.headers.emplace_back(field.name_string(), field.value());
  request.body = std::move(message.body());

  state_ = State::kHandling;
  cancel_read_deadline();  // a handler may run for minutes; the pending read only watches for the client leaving
  answer_queued_ = false;
  gone_ = std::make_shared<ClientGone>();
  auto self = shared_from_this();
  const auto executor = socket_.get_executor();
  channel_ = std::make_shared<StreamChannel>(
      options_.stream_queue_bytes, options_.write_timeout,
      StreamChannel::Sink{
          .send = [self, executor](std::string bytes) {
            asio::post(executor, [self, bytes = std::move(bytes)]() mutable {
              if (self->state_ == State::kHandling) self->queue_write(std::move(bytes), true);
            });
          },
          .abort = [self, executor] { asio::post(executor, [self] { self->close(); }); },
      });
  const Response::Framing framing{.keep_alive = message.keep_alive() && !stop_requested_ && !host_.stopping(),
                                  .http10 = request.version < 11};
  exchange->response = Response(gone_, channel_, framing);

  host_.run_handler([self, exchange, executor] {
    Response& response = exchange->response;
    if (!response.client_is_gone()) {  // a client that left while the request waited for a worker is not served
      try {
        self->host_.handle(exchange->request, response);
      } catch (const std::exception& e) {
        SAKER_LOG_ERROR("{} {}: {}", exchange->request.method, exchange->request.path, e.what());
        if (response.streaming()) {
          exchange->failed_mid_stream = true;
        } else {
          response.status = 500;
          response.headers.clear();
          response.body.clear();
          self->host_.refuse(exchange->request, 500, std::string("internal error: ") + e.what(), response);
        }
      } catch (...) {
        exchange->failed_mid_stream = response.streaming();
        if (!response.streaming()) self->host_.refuse(exchange->request, 500, "internal error", response);
      }
    }
    asio::post(executor, [self, exchange] { self->on_handler_done(exchange); });
  });
  start_read();
}

void Connection::on_handler_done(const std::shared_ptr<Exchange>& exchange) {
  if (state_ == State::kClosed) return;
  if (gone_->is_set() || exchange->failed_mid_stream) {
    close();  // no answer to give, or one that cannot be ended correctly (the client sees a cut stream)
    return;
  }
  const Response& response = exchange->response;
  if (!response.framing().keep_alive || (response.streaming() && response.framing().http10)) {
    close_after_write_ = true;
  }
  if (response.streaming()) {
    if (const std::string trailer = response.stream_trailer(); !trailer.empty()) queue_write(trailer, false);
  } else {
    queue_write(response.serialize_whole(), false);
  }
  channel_->close();
  answer_queued_ = true;
  if (!writing_ && out_.empty()) on_drained();
}

void Connection::next_request() {
  state_ = State::kAwaiting;
  answer_queued_ = false;
  gone_.reset();
  channel_.reset();
  if (in_.size() == 0) {
    in_.shrink_to_fit();  // an idle connection keeps no read buffer of the size its last request needed
    arm_read_deadline(options_.idle_timeout);
  }
  advance();  // a pipelined request may be buffered already
}

// ---- writing ----

void Connection::queue_write(std::string bytes, bool counted_by_stream) {
  if (state_ == State::kClosed) return;
  out_.push_back({std::move(bytes), counted_by_stream});
  if (!writing_) start_write();
}

void Connection::start_write() {
  writing_ = true;
  // Everything queued goes out in one write (many small SSE chunks become one send).
  in_flight_.swap(out_);
  std::vector<asio::const_buffer> buffers;
  buffers.reserve(in_flight_.size());
  for (const Outgoing& o : in_flight_) buffers.emplace_back(o.bytes.data(), o.bytes.size());
  const uint64_t generation = ++write_deadline_generation_;
  write_deadline_.expires_after(options_.write_timeout);
  write_deadline_.async_wait([self = shared_from_this(), generation](const beast::error_code& ec) {
    // The reader took longer than the write deadline.
    if (!ec && generation == self->write_deadline_generation_ && self->writing_) self->close();
  });
  asio::async_write(socket_, buffers,
                    [self = shared_from_this()](const beast::error_code& ec, size_t) { self->on_write(ec); });
}

void Connection::on_write(const beast::error_code& ec) {
  writing_ = false;
  ++write_deadline_generation_;
  write_deadline_.cancel();
  if (state_ == State::kClosed) return;
  if (ec) {
    close();
    return;
  }
  size_t stream_bytes = 0;
  for (const Outgoing& o : in_flight_) {
    if (o.counted_by_stream) stream_bytes += o.bytes.size();
  }
  in_flight_.clear();
  if (stream_bytes > 0 && channel_) channel_->sent(stream_bytes);
  if (!out_.empty()) {
    start_write();
    return;
  }
  on_drained();
}

void Connection::on_drained() {
  if (state_ == State::kLingering) {
    if (close_after_write_) begin_linger();
    return;
  }
  if (state_ != State::kHandling || !answer_queued_) return;
  if (close_after_write_ || stop_requested_ || host_.stopping()) {
    begin_linger();
    return;
  }
  next_request();
}

void Connection::begin_linger() {
  state_ = State::kLingering;
  close_after_write_ = false;
  if (gone_) gone_->set();
  if (channel_) channel_->close();
  beast::error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
  in_.consume(in_.size());
  arm_read_deadline(options_.linger_timeout);
  start_read();
}

// ---- deadlines and closing ----

void Connection::arm_read_deadline(std::chrono::milliseconds d) {
  const uint64_t generation = ++read_deadline_generation_;
  read_deadline_.expires_after(d);
  read_deadline_.async_wait([self = shared_from_this(), generation](const beast::error_code& ec) {
    if (ec || generation != self->read_deadline_generation_) return;
    self->close();  // header, body, idle or linger deadline
  });
}

void Connection::cancel_read_deadline() {
  ++read_deadline_generation_;
  read_deadline_.cancel();
}

void Connection::close() {
  if (state_ == State::kClosed) return;
  state_ = State::kClosed;
  beast::error_code ignored;
  socket_.close(ignored);
  ++read_deadline_generation_;
  read_deadline_.cancel();
  write_deadline_.cancel();
  out_.clear();
  if (gone_) gone_->set();
  if (channel_) channel_->close();
  host_.connection_closed(this);
}

}  // namespace saker::http
