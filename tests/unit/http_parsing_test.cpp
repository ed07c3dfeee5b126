// Strict request parsing over real sockets: pipelined requests answered in order, framing faults refused
// with 400 before any handler runs, chunked bodies assembled and refused past the limit while they are read,
// Range ignored, Expect: 100-continue, header size limit, HTTP/1.0.
#include <atomic>

#include "unit/http_test_util.h"

namespace saker::http::test {
namespace {

class HttpParsingTest : public ::testing::Test {
 protected:
  explicit HttpParsingTest(ServerOptions options = small_limits()) {
    router_.get("/slow", [](const Request&, Response& r) {
      std::this_thread::sleep_for(milliseconds(200));
      r.set_content("slow", "text/plain");
    });
    router_.get("/fast", [](const Request&, Response& r) { r.set_content("fast", "text/plain"); });
    router_.get("/text", [](const Request&, Response& r) { r.set_content("0123456789", "text/plain"); });
    router_.post("/echo", [this](const Request& q, Response& r) {
      ++handled_;
      r.set_content(std::to_string(q.body.size()) + ":" + q.body.substr(0, 32), "text/plain");
    });
    server_ = std::make_unique<TestServer>(std::move(options), [this](Request& q, Response& r) { router_.dispatch(q, r); });
  }
  static ServerOptions small_limits() {
    ServerOptions o = test_options();
    o.max_body_bytes = 1 << 20;
    o.max_header_bytes = 4096;
    return o;
  }
  int port() const { return server_->port(); }

  Router router_;
  std::atomic<int> handled_{0};
  std::unique_ptr<TestServer> server_;
};

TEST_F(HttpParsingTest, PipelinedRequestsAreAnsweredInOrder) {
  RawClient c(port());
  ASSERT_TRUE(c.send(get("/slow") + get("/fast") + post("/echo", "abc")));
  auto first = c.read_response();
  auto second = c.read_response();
  auto third = c.read_response();
  ASSERT_TRUE(first && second && third);
  EXPECT_EQ(first->body, "slow");
  EXPECT_EQ(second->body, "fast");
  EXPECT_EQ(third->body, "3:abc");
}

TEST_F(HttpParsingTest, DuplicateContentLengthIs400) {
  auto r = exchange(port(), "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("2 Content-Length headers"), std::string::npos) << r->body;
  r = exchange(port(), "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(handled_.load(), 0);
}

TEST_F(HttpParsingTest, NegativeOrInvalidContentLengthIs400) {
  for (const char* value : {"-5", "abc", "1.5", "", "99999999999999999999999"}) {
    auto r = exchange(port(), std::string("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: ") + value + "\r\n\r\nab");
    ASSERT_TRUE(r) << value;
    EXPECT_EQ(r->status, 400) << value;
    EXPECT_NE(r->body.find("Content-Length"), std::string::npos) << r->body;
  }
  EXPECT_EQ(handled_.load(), 0);
}

TEST_F(HttpParsingTest, TransferEncodingWithContentLengthIs400InEitherOrder) {
  auto r = exchange(port(), "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
                            "0\r\n\r\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("both Transfer-Encoding and Content-Length"), std::string::npos) << r->body;
  r = exchange(port(), "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n"
                       "0\r\n\r\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  r = exchange(port(), "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\nxx");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("only 'chunked'"), std::string::npos) << r->body;
  EXPECT_EQ(handled_.load(), 0);
}

TEST_F(HttpParsingTest, ChunkedBodyIsAssembled) {
  auto r = exchange(port(), "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                            "3\r\nabc\r\n4;ext=1\r\ndefg\r\n0\r\n\r\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "7:abcdefg");
}

TEST_F(HttpParsingTest, ChunkedBodyOverTheLimitIs413WithoutReachingTheHandler) {
  RawClient c(port());
  ASSERT_TRUE(c.send("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"));
  const std::string chunk = "10000\r\n" + std::string(0x10000, 'x') + "\r\n";  // 64 KiB chunks, 4 MiB in all
  for (int i = 0; i < 64; ++i) {
    if (!c.send(chunk)) break;  // the server stopped reading: fine, its answer is already on its way
    c.read_some(milliseconds(0));
    if (c.buffer().find("\r\n\r\n") != std::string::npos) break;
  }
  auto r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  EXPECT_NE(r->body.find("1048576 bytes"), std::string::npos) << r->body;
  EXPECT_EQ(r->headers["connection"], "close");
  EXPECT_EQ(handled_.load(), 0);
  // A single chunk that announces more than the limit is refused from its size line alone.
  r = exchange(port(), "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n10000000\r\nxx");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  EXPECT_EQ(handled_.load(), 0);
}

TEST_F(HttpParsingTest, ContentLengthOverTheLimitIs413BeforeTheBody) {
  auto r = exchange(port(), "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 2000000\r\n\r\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  EXPECT_EQ(handled_.load(), 0);
}

TEST_F(HttpParsingTest, RangeIsIgnored) {
  auto r = exchange(port(), get("/text", "Range: bytes=2-4\r\n"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "0123456789");
  EXPECT_EQ(r->headers.count("content-range"), 0u);
}

TEST_F(HttpParsingTest, ExpectContinueIsAnsweredBeforeTheBody) {
  RawClient c(port());
  ASSERT_TRUE(c.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"));
  const auto start = Clock::now();
  while (c.buffer().find("\r\n\r\n") == std::string::npos && seconds_since(start) < 3) c.read_some(milliseconds(20));
  EXPECT_EQ(c.buffer().rfind("HTTP/1.1 100 Continue\r\n\r\n", 0), 0u) << c.buffer();
  ASSERT_TRUE(c.send("hello"));
  auto r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "5:hello");
}

TEST_F(HttpParsingTest, HeaderOverTheLimitIs431) {
  auto r = exchange(port(), get("/fast", "X-Big: " + std::string(8000, 'a') + "\r\n"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 431);
}

TEST_F(HttpParsingTest, MalformedRequestLineIs400) {
  auto r = exchange(port(), "GARBAGE\r\n\r\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("malformed"), std::string::npos) << r->body;
}

TEST_F(HttpParsingTest, Http10GetsAnAnswerAndAClose) {
  RawClient c(port());
  ASSERT_TRUE(c.send("GET /fast HTTP/1.0\r\n\r\n"));
  auto r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "fast");
  EXPECT_TRUE(c.closed_within(milliseconds(2000)));
}

TEST_F(HttpParsingTest, KeepAliveServesManyRequestsOnOneConnection) {
  RawClient c(port());
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(c.send(post("/echo", std::to_string(i))));
    auto r = c.read_response();
    ASSERT_TRUE(r) << i;
    EXPECT_EQ(r->body, std::to_string(std::to_string(i).size()) + ":" + std::to_string(i));
  }
}

}  // namespace
}  // namespace saker::http::test
