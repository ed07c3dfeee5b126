// Streaming answers and the client-gone signal over real sockets: chunks reach the client while hundreds of
// idle and slow-header connections are open (and a probe answers quickly meanwhile), a client that closes or
// resets during a blocking handler is noticed within ~100 ms, a stream's write() fails once its client is
// gone, and a client that does not read holds back only its own handler (bounded queue, write deadline).
#include <atomic>
#include <vector>

#include "unit/http_test_util.h"

namespace saker::http::test {
namespace {

TEST(HttpStreamingTest, StreamFlowsWhileIdleAndSlowConnectionsAreOpen) {
  raise_open_file_limit(4096);
  ServerOptions o = test_options();
  o.header_timeout = milliseconds(30'000);  // the slow-header clients stay for the whole test
  o.max_connections_per_client = 1000;
  Router router;
  router.get("/health", [](const Request&, Response& r) { r.set_content("ok", "text/plain"); });
  router.get("/stream", [](const Request&, Response& r) {
    if (!r.start_stream(200, "text/event-stream")) return;
    for (int i = 0; i < 20; ++i) {
      if (!r.write("data: " + std::to_string(i) + "\n\n")) return;
      std::this_thread::sleep_for(milliseconds(50));
    }
  });
  TestServer server(o, router);

  std::vector<std::unique_ptr<RawClient>> idle, slow;
  for (int i = 0; i < 300; ++i) idle.push_back(std::make_unique<RawClient>(server.port()));
  for (int i = 0; i < 100; ++i) {
    slow.push_back(std::make_unique<RawClient>(server.port()));
    slow.back()->send("GET /health HTTP/1.1\r\nHo");
  }
  const auto wait_start = Clock::now();
  while (server.server().open_connections() < 400 && seconds_since(wait_start) < 5) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  ASSERT_EQ(server.server().open_connections(), 400u);

  RawClient streamer(server.port());
  ASSERT_TRUE(streamer.send(get("/stream")));
  const auto start = Clock::now();
  double worst_probe = 0;
  size_t slow_byte = 0;
  std::string received;
  while (seconds_since(start) < 5) {
    streamer.read_some(milliseconds(20));
    if (streamer.buffer().find("data: 19") != std::string::npos && streamer.buffer().find("0\r\n\r\n") != std::string::npos) {
      break;
    }
    // Meanwhile: a probe on a fresh connection, and the slow clients trickle one more header byte.
    const auto probe_start = Clock::now();
    auto probe = exchange(server.port(), get("/health"), milliseconds(2000));
    worst_probe = std::max(worst_probe, seconds_since(probe_start));
    ASSERT_TRUE(probe);
    EXPECT_EQ(probe->body, "ok");
    slow[slow_byte++ % slow.size()]->send("s");
  }
  auto r = streamer.read_response(milliseconds(100));
  ASSERT_TRUE(r) << streamer.buffer();
  EXPECT_TRUE(r->chunked);
  EXPECT_EQ(r->headers["content-type"], "text/event-stream");
  for (int i = 0; i < 20; ++i) EXPECT_NE(r->body.find("data: " + std::to_string(i) + "\n\n"), std::string::npos) << i;
  EXPECT_LT(seconds_since(start), 4.0);
  EXPECT_LT(worst_probe, 1.0);
}

// A handler that waits for its client to leave; `gone_at` is when it noticed.
struct GoneWatcher {
  std::atomic<bool> started{false};
  std::atomic<bool> callback_ran{false};
  std::atomic<int64_t> noticed_ns{0};

  void handle(Response& r) {
    r.on_client_gone([this] { callback_ran = true; });
    started = true;
    const auto start = Clock::now();
    while (!r.client_is_gone() && seconds_since(start) < 5) std::this_thread::sleep_for(milliseconds(1));
    if (r.client_is_gone()) noticed_ns = Clock::now().time_since_epoch().count();
  }
};

void expect_gone_noticed_quickly(bool reset) {
  GoneWatcher watcher;
  Router router;
  router.post("/block", [&](const Request&, Response& r) { watcher.handle(r); });
  TestServer server(test_options(), router);
  RawClient c(server.port());
  ASSERT_TRUE(c.send(post("/block", "{}")));
  const auto wait_start = Clock::now();
  while (!watcher.started && seconds_since(wait_start) < 3) std::this_thread::sleep_for(milliseconds(1));
  ASSERT_TRUE(watcher.started);
  std::this_thread::sleep_for(milliseconds(100));
  const auto closed_at = Clock::now();
  if (reset) {
    c.reset();
  } else {
    c.close();
  }
  while (watcher.noticed_ns == 0 && seconds_since(closed_at) < 3) std::this_thread::sleep_for(milliseconds(1));
  ASSERT_NE(watcher.noticed_ns.load(), 0);
  const double delay =
      std::chrono::duration<double>(Clock::time_point(Clock::duration(watcher.noticed_ns.load())) - closed_at).count();
  EXPECT_LT(delay, 0.1);
  EXPECT_TRUE(watcher.callback_ran);
}

TEST(HttpStreamingTest, ClientGoneIsSetWithin100msOfAClose) { expect_gone_noticed_quickly(false); }

TEST(HttpStreamingTest, ClientGoneIsSetWithin100msOfAReset) { expect_gone_noticed_quickly(true); }

TEST(HttpStreamingTest, StreamWriteFailsOnceTheClientIsGone) {
  std::atomic<bool> write_failed{false};
  std::atomic<int> writes{0};
  Router router;
  router.get("/stream", [&](const Request&, Response& r) {
    if (!r.start_stream(200, "text/event-stream")) return;
    const auto start = Clock::now();
    while (seconds_since(start) < 5) {
      if (!r.write("data: x\n\n")) {
        write_failed = true;
        return;
      }
      ++writes;
      std::this_thread::sleep_for(milliseconds(5));
    }
  });
  TestServer server(test_options(), router);
  RawClient c(server.port());
  ASSERT_TRUE(c.send(get("/stream")));
  while (c.buffer().find("data: x") == std::string::npos) ASSERT_TRUE(c.read_some(milliseconds(100)));
  const auto closed_at = Clock::now();
  c.close();
  while (!write_failed && seconds_since(closed_at) < 3) std::this_thread::sleep_for(milliseconds(2));
  EXPECT_TRUE(write_failed);
  EXPECT_LT(seconds_since(closed_at), 0.5);
}

TEST(HttpStreamingTest, AClientThatDoesNotReadHoldsBackOnlyItsOwnHandler) {
  ServerOptions o = test_options();
  o.stream_queue_bytes = 256 << 10;
  o.write_timeout = milliseconds(800);
  std::atomic<bool> gave_up{false};
  std::atomic<int64_t> written{0};
  Router router;
  router.get("/health", [](const Request&, Response& r) { r.set_content("ok", "text/plain"); });
  router.get("/flood", [&](const Request&, Response& r) {
    if (!r.start_stream(200, "application/octet-stream")) return;
    const std::string block(64 << 10, 'z');
    const auto start = Clock::now();
    while (seconds_since(start) < 20) {
      if (!r.write(block)) {
        gave_up = true;
        return;
      }
      written += static_cast<int64_t>(block.size());
    }
  });
  TestServer server(o, router);
  RawClient reader_that_sleeps(server.port());
  const int small_buffer = 64 << 10;
  setsockopt(reader_that_sleeps.fd(), SOL_SOCKET, SO_RCVBUF, &small_buffer, sizeof small_buffer);
  ASSERT_TRUE(reader_that_sleeps.send(get("/flood")));
  const auto start = Clock::now();
  // Meanwhile other clients are served at once.
  for (int i = 0; i < 5; ++i) {
    const auto probe_start = Clock::now();
    auto probe = exchange(server.port(), get("/health"));
    ASSERT_TRUE(probe);
    EXPECT_LT(seconds_since(probe_start), 0.5);
    std::this_thread::sleep_for(milliseconds(50));
  }
  while (!gave_up && seconds_since(start) < 10) std::this_thread::sleep_for(milliseconds(10));
  EXPECT_TRUE(gave_up);  // the write deadline passed: the handler was told to stop
  EXPECT_LT(seconds_since(start), 5.0);
  // What the handler could queue is bounded by the socket buffers plus the stream queue, not by its loop.
  EXPECT_LT(written.load(), int64_t{32} << 20);
}

}  // namespace
}  // namespace saker::http::test
