// Deadlines and limits over real sockets: the header deadline covers the whole header (a client that sends a
// byte a second is closed at the deadline, not kept alive by its reads), the keep-alive idle timeout, the
// per-address and total connection limits (503), and stop() bounded by its grace period whatever clients do.
#include <atomic>
#include <vector>

#include "unit/http_test_util.h"

namespace saker::http::test {
namespace {

Router& hello_router() {
  static Router* r = [] {
    auto* router = new Router;
    router->get("/hello", [](const Request&, Response& res) { res.set_content("hello", "text/plain"); });
    return router;
  }();
  return *r;
}

// Waits (bounded) until the server holds `n` counted connections.
bool wait_for_connections(Server& s, size_t n) {
  const auto start = Clock::now();
  while (s.open_connections() != n && seconds_since(start) < 3) std::this_thread::sleep_for(milliseconds(5));
  return s.open_connections() == n;
}

TEST(HttpDeadlineTest, HeaderDeadlineCoversTheWholeHeader) {
  ServerOptions o = test_options();
  o.header_timeout = milliseconds(2000);
  TestServer server(o, hello_router());
  RawClient c(server.port());
  const std::string request = get("/hello");
  const auto start = Clock::now();
  bool closed = false;
  for (size_t i = 0; i < request.size() && !closed; ++i) {
    c.send(request.substr(i, 1));  // one byte a second: each read is quick, the header never completes in time
    closed = c.closed_within(milliseconds(1000));
  }
  const double took = seconds_since(start);
  EXPECT_TRUE(closed);
  EXPECT_GT(took, 1.8);
  EXPECT_LT(took, 3.5);
  EXPECT_EQ(c.buffer(), "");  // closed without an answer
}

TEST(HttpDeadlineTest, SilentFreshConnectionIsClosedAtTheHeaderDeadline) {
  ServerOptions o = test_options();
  o.header_timeout = milliseconds(500);
  TestServer server(o, hello_router());
  RawClient c(server.port());
  const auto start = Clock::now();
  EXPECT_TRUE(c.closed_within(milliseconds(3000)));
  EXPECT_GT(seconds_since(start), 0.4);
  EXPECT_LT(seconds_since(start), 1.5);
}

TEST(HttpDeadlineTest, IdleKeepAliveConnectionIsClosedAfterTheIdleTimeout) {
  ServerOptions o = test_options();
  o.idle_timeout = milliseconds(600);
  TestServer server(o, hello_router());
  RawClient c(server.port());
  ASSERT_TRUE(c.send(get("/hello")));
  ASSERT_TRUE(c.read_response());
  const auto start = Clock::now();
  EXPECT_TRUE(c.closed_within(milliseconds(3000)));
  EXPECT_GT(seconds_since(start), 0.5);
  EXPECT_LT(seconds_since(start), 1.6);
  EXPECT_TRUE(wait_for_connections(server.server(), 0));
}

TEST(HttpDeadlineTest, BodyDeadlineClosesASlowBody) {
  ServerOptions o = test_options();
  o.body_timeout = milliseconds(500);
  TestServer server(o, hello_router());
  RawClient c(server.port());
  ASSERT_TRUE(c.send("POST /hello HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\nabc"));
  const auto start = Clock::now();
  EXPECT_TRUE(c.closed_within(milliseconds(3000)));
  EXPECT_LT(seconds_since(start), 1.5);
}

TEST(HttpDeadlineTest, PerAddressLimitAnswers503) {
  ServerOptions o = test_options();
  o.max_connections_per_client = 3;
  TestServer server(o, hello_router());
  std::vector<std::unique_ptr<RawClient>> held;
  for (int i = 0; i < 3; ++i) held.push_back(std::make_unique<RawClient>(server.port()));
  ASSERT_TRUE(wait_for_connections(server.server(), 3));
  RawClient extra(server.port());
  auto r = extra.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_NE(r->body.find("127.0.0.1 holds its limit of 3"), std::string::npos) << r->body;
  EXPECT_TRUE(extra.closed_within(milliseconds(2000)));
  // The held connections still work, and a freed slot is usable again.
  ASSERT_TRUE(held[0]->send(get("/hello")));
  ASSERT_TRUE(held[0]->read_response());
  held[1].reset();
  ASSERT_TRUE(wait_for_connections(server.server(), 2));
  auto again = exchange(server.port(), get("/hello"));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 200);
}

TEST(HttpDeadlineTest, TotalLimitAnswers503) {
  ServerOptions o = test_options();
  o.max_connections = 2;
  TestServer server(o, hello_router());
  RawClient a(server.port()), b(server.port());
  ASSERT_TRUE(wait_for_connections(server.server(), 2));
  auto r = exchange(server.port(), get("/hello"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_NE(r->body.find("limit of 2 open connections"), std::string::npos) << r->body;
}

TEST(HttpDeadlineTest, StopWithATricklingClientReturnsWithinItsGrace) {
  ServerOptions o = test_options();
  o.header_timeout = milliseconds(60'000);  // the trickler would be served for a minute
  std::atomic<bool> handler_finished{false};
  Router router;
  router.get("/work", [&](const Request&, Response& r) {
    std::this_thread::sleep_for(milliseconds(300));
    r.set_content("done", "text/plain");
    handler_finished = true;
  });
  auto server = std::make_unique<Server>(o, [&router](Request& q, Response& r) { router.dispatch(q, r); });
  ASSERT_TRUE(server->start().ok());
  std::atomic<bool> trickling{true};
  std::thread trickler([&] {
    RawClient c(server->port());
    c.send("GET /work HTTP/1.1\r\n");
    while (trickling && c.send("X")) std::this_thread::sleep_for(milliseconds(50));
  });
  RawClient worker(server->port());
  ASSERT_TRUE(worker.send(get("/work")));
  std::this_thread::sleep_for(milliseconds(100));  // the handler is running
  const auto start = Clock::now();
  server->stop(milliseconds(1000));
  const double took = seconds_since(start);
  trickling = false;
  trickler.join();
  EXPECT_LT(took, 1.5);
  EXPECT_TRUE(handler_finished.load());
  auto r = worker.read_response(milliseconds(500));  // the running request finished within the grace
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "done");
}

TEST(HttpDeadlineTest, StopCutsAHandlerPastTheGraceAndSignalsItsClientGone) {
  ServerOptions o = test_options();
  std::atomic<bool> saw_gone{false};
  Router router;
  router.get("/forever", [&](const Request&, Response& r) {
    const auto start = Clock::now();
    while (!r.client_is_gone() && seconds_since(start) < 10) std::this_thread::sleep_for(milliseconds(2));
    saw_gone = r.client_is_gone();
  });
  auto server = std::make_unique<Server>(o, [&router](Request& q, Response& r) { router.dispatch(q, r); });
  ASSERT_TRUE(server->start().ok());
  RawClient c(server->port());
  ASSERT_TRUE(c.send(get("/forever")));
  std::this_thread::sleep_for(milliseconds(100));
  const auto start = Clock::now();
  bool deadline_hook_ran = false;
  server->stop(milliseconds(500), [&] { deadline_hook_ran = true; });
  const double took = seconds_since(start);
  EXPECT_GT(took, 0.45);
  EXPECT_LT(took, 1.5);
  EXPECT_TRUE(deadline_hook_ran);
  EXPECT_TRUE(saw_gone.load());
  EXPECT_TRUE(c.closed_within(milliseconds(500)));
}

}  // namespace
}  // namespace saker::http::test
