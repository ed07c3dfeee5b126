#include "server/http/server.h"

#include <sys/resource.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/log.h"
#include "server/http/connection.h"
#include "server/http/worker_pool.h"

namespace saker::http {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

class Server::Impl : public ConnectionHost {
 public:
  Impl(ServerOptions options, RequestHandler handler, ErrorResponder refuse)
      : options_(std::move(options)),
        handler_(std::move(handler)),
        refuse_(refuse ? std::move(refuse) : ErrorResponder(plain_error)),
        acceptor_(asio::make_strand(io_)),
        accept_retry_(acceptor_.get_executor()) {}

  ~Impl() override { stop(std::chrono::milliseconds(0), {}); }

  Status start();
  void stop(std::chrono::milliseconds grace, const std::function<void()>& at_deadline);
  int port() const { return port_; }
  size_t open_connections() const {
    std::lock_guard lock(mutex_);
    return static_cast<size_t>(counted_);
  }

  // ConnectionHost
  const ServerOptions& options() const override { return options_; }
  void run_handler(std::function<void()> job) override;
  void handle(Request& request, Response& response) override { handler_(request, response); }
  void refuse(const Request& request, int status, const std::string& message, Response& response) override {
    refuse_(request, status, message, response);
  }
  bool stopping() const override { return stopping_.load(); }
  void connection_closed(Connection* connection) override;

 private:
  void raise_file_limit() const;
  void accept_next();
  void on_accepted(tcp::socket socket);
  std::vector<std::shared_ptr<Connection>> snapshot() const;
  // Waits until `done` holds or `deadline` passes; true when it holds.
  bool wait_until(std::chrono::steady_clock::time_point deadline, const std::function<bool()>& done);

  ServerOptions options_;
  RequestHandler handler_;
  ErrorResponder refuse_;

  // The registry outlives the I/O context (declared first, destroyed last): connections that the context
  // destroys free their slots here.
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::unordered_map<Connection*, std::weak_ptr<Connection>> connections_;
  std::unordered_map<std::string, int> per_address_;
  int counted_ = 0;
  int refusing_ = 0;
  int running_handlers_ = 0;
  std::atomic<bool> stopping_{false};
  bool started_ = false;
  bool stopped_ = false;

  asio::io_context io_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  tcp::acceptor acceptor_;
  asio::steady_timer accept_retry_;
  std::unique_ptr<WorkerPool> workers_;
  std::vector<std::thread> io_threads_;
  int port_ = 0;
};

void Server::Impl::raise_file_limit() const {
  // Each connection is a descriptor; a soft limit of 1024 (the usual default) would refuse accepts long before
  // max_connections. The hard limit is the most a process may take without privileges.
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return;
  const rlim_t wanted = static_cast<rlim_t>(options_.max_connections) * 2 + 256;
  if (lim.rlim_cur >= wanted) return;
  rlimit raised = lim;
  raised.rlim_cur = lim.rlim_max == RLIM_INFINITY ? wanted : std::min<rlim_t>(wanted, lim.rlim_max);
  if (setrlimit(RLIMIT_NOFILE, &raised) != 0 || raised.rlim_cur < wanted) {
    SAKER_LOG_WARN("open-file limit {} is below the {} that {} connections may need; past it new connections wait",
                   static_cast<uint64_t>(raised.rlim_cur), static_cast<uint64_t>(wanted), options_.max_connections);
  }
}

Status Server::Impl::start() {
  if (started_) return make_error(StatusCode::kInternal, "the HTTP server is already started");
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(options_.host, ec);
  if (ec) {
    return make_error(StatusCode::kInvalidArgument, "cannot listen on {}:{}: '{}' is not an IP address",
                      options_.host, options_.port, options_.host);
  }
  const tcp::endpoint endpoint(address, static_cast<unsigned short>(options_.port));
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(std::max(1, options_.listen_backlog), ec);
  if (ec) {
    return make_error(StatusCode::kIoError, "cannot listen on {}:{}: {} (in use, or not an address of this machine)",
                      options_.host, options_.port, ec.message());
  }
  port_ = acceptor_.local_endpoint().port();
  raise_file_limit();
  started_ = true;
  workers_ = std::make_unique<WorkerPool>(std::max(1, options_.worker_threads));
  work_.emplace(io_.get_executor());
  asio::post(acceptor_.get_executor(), [this] { accept_next(); });
  int io_threads = options_.io_threads;
  if (io_threads <= 0) io_threads = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 4u));
  for (int i = 0; i < io_threads; ++i) {
    io_threads_.emplace_back([this] {
      // A throwing completion handler (an allocation failure, a client-gone callback) costs that one step,
      // not the process.
      for (;;) {
        try {
          io_.run();
          return;
        } catch (const std::exception& e) {
          SAKER_LOG_ERROR("HTTP I/O thread: {}", e.what());
        }
      }
    });
  }
  return Status::ok_status();
}

void Server::Impl::accept_next() {
  acceptor_.async_accept(asio::make_strand(io_), [this](const boost::system::error_code& ec, tcp::socket socket) {
    if (stopping_.load() || !acceptor_.is_open()) return;
    if (ec) {
      // Out of descriptors (or another transient failure): retry shortly instead of spinning; the backlog
      // holds the waiting clients meanwhile.
      SAKER_LOG_WARN("accept failed: {}; retrying", ec.message());
      accept_retry_.expires_after(std::chrono::milliseconds(50));
      accept_retry_.async_wait([this](const boost::system::error_code& wait_ec) {
        if (!wait_ec && !stopping_.load()) accept_next();
      });
      return;
    }
    on_accepted(std::move(socket));
    accept_next();
  });
}

void Server::Impl::on_accepted(tcp::socket socket) {
  boost::system::error_code ec;
  const auto peer = socket.remote_endpoint(ec);
  if (ec) return;  // reset before it was accepted
  socket.set_option(tcp::no_delay(true), ec);  // SSE chunks go out as they are written
  std::string address = peer.address().to_string();
  std::string refusal;
  bool counted = true;
  {
    std::lock_guard lock(mutex_);
    int& from_address = per_address_[address];
    if (counted_ >= options_.max_connections) {
      refusal = "the server holds its limit of " + std::to_string(options_.max_connections) +
                " open connections; retry later";
    } else if (from_address >= options_.max_connections_per_client) {
      refusal = address + " holds its limit of " + std::to_string(options_.max_connections_per_client) +
                " open connections to this server; close some or retry later";
    }
    if (refusal.empty()) {
      ++counted_;
      ++from_address;
    } else {
      if (from_address == 0) per_address_.erase(address);
      // Refusals are answered while they are few; past that the socket is just closed (a flood is not
      // worth a write each).
      if (refusing_ >= options_.max_connections) return;
      ++refusing_;
      counted = false;
    }
  }
  auto connection = std::make_shared<Connection>(std::move(socket), *this, std::move(address), counted);
  {
    std::lock_guard lock(mutex_);
    connections_[connection.get()] = connection;
  }
  // The socket's executor is its own strand: the connection starts there.
  if (counted) {
    asio::dispatch(connection->executor(), [connection] { connection->start(); });
  } else {
    asio::dispatch(connection->executor(), [connection, refusal] { connection->start_refused(503, refusal); });
  }
}

void Server::Impl::connection_closed(Connection* connection) {
  {
    std::lock_guard lock(mutex_);
    if (connections_.erase(connection) == 0) return;
    if (connection->counted()) {
      --counted_;
      auto it = per_address_.find(connection->remote_address());
      if (it != per_address_.end() && --it->second <= 0) per_address_.erase(it);
    } else {
      --refusing_;
    }
  }
  changed_.notify_all();
}

void Server::Impl::run_handler(std::function<void()> job) {
  {
    std::lock_guard lock(mutex_);
    ++running_handlers_;
  }
  workers_->post([this, job = std::move(job)] {
    job();
    {
      std::lock_guard lock(mutex_);
      --running_handlers_;
    }
    changed_.notify_all();
  });
}

std::vector<std::shared_ptr<Connection>> Server::Impl::snapshot() const {
  std::vector<std::shared_ptr<Connection>> out;
  std::lock_guard lock(mutex_);
  out.reserve(connections_.size());
  for (const auto& [raw, weak] : connections_) {
    if (auto c = weak.lock()) out.push_back(std::move(c));
  }
  return out;
}

bool Server::Impl::wait_until(std::chrono::steady_clock::time_point deadline, const std::function<bool()>& done) {
  std::unique_lock lock(mutex_);
  return changed_.wait_until(lock, deadline, done);
}

void Server::Impl::stop(std::chrono::milliseconds grace, const std::function<void()>& at_deadline) {
  if (stopped_) return;
  stopped_ = true;
  if (!started_) {
    if (at_deadline) at_deadline();
    return;
  }
  const auto deadline = std::chrono::steady_clock::now() + grace;
  stopping_.store(true);
  asio::post(acceptor_.get_executor(), [this] {
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    accept_retry_.cancel();
  });
  // Idle, half-read and lingering connections close now; those with a running handler after its answer.
  for (const auto& c : snapshot()) c->shut_down_when_idle();
  auto all_done = [this] { return running_handlers_ == 0 && connections_.empty(); };
  wait_until(deadline, all_done);
  // The deadline. What the handlers still wait on ends first, so that they can say so (a cut stream alone
  // cannot tell a client why); they get a short bound for it, a reader that never reads included. Then
  // whatever is left is cut (its handler sees its client gone).
  bool handlers_left = false;
  {
    std::lock_guard lock(mutex_);
    handlers_left = running_handlers_ > 0;
  }
  if (at_deadline) at_deadline();
  if (handlers_left) wait_until(std::chrono::steady_clock::now() + options_.stop_answer_timeout, all_done);
  for (const auto& c : snapshot()) c->abort();
  workers_->stop();
  // Closing is one step on each strand; the bound only guards against a wedged I/O thread.
  wait_until(std::chrono::steady_clock::now() + std::chrono::seconds(1), [this] { return connections_.empty(); });
  work_.reset();
  io_.stop();
  for (auto& t : io_threads_) t.join();
  io_threads_.clear();
}

Server::Server(ServerOptions options, RequestHandler handler, ErrorResponder refuse)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handler), std::move(refuse))) {}

Server::~Server() = default;

Status Server::start() { return impl_->start(); }

int Server::port() const { return impl_->port(); }

void Server::stop(std::chrono::milliseconds grace, const std::function<void()>& at_deadline) {
  impl_->stop(grace, at_deadline);
}

size_t Server::open_connections() const { return impl_->open_connections(); }

}  // namespace saker::http
