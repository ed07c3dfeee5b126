// The router over a real server: exact and parameter routes, 404 / 405 through the fallback, query and
// header access, a handler's exception answered with a 500.
#include <stdexcept>

#include "unit/http_test_util.h"

namespace saker::http::test {
namespace {

void json_error(const Request&, int status, const std::string& message, Response& res) {
  res.status = status;
  res.set_content("{\"error\":\"" + message + "\"}", "application/json");
}

class HttpRouterTest : public ::testing::Test {
 protected:
  HttpRouterTest() : router_(json_error) {
    router_.get("/a", [](const Request&, Response& r) { r.set_content("got a", "text/plain"); });
    router_.post("/a", [](const Request& q, Response& r) { r.set_content("posted " + q.body, "text/plain"); });
    router_.get("/v1/models/{id}", [](const Request& q, Response& r) { r.set_content("id=" + q.path_param, "text/plain"); });
    router_.get("/v1/models", [](const Request&, Response& r) { r.set_content("list", "text/plain"); });
    router_.get("/q", [](const Request& q, Response& r) {
      r.set_content(q.query_param("x") + "|" + q.query_param("y") + "|" + q.header("x-test-header"), "text/plain");
    });
    router_.get("/throws", [](const Request&, Response&) -> void { throw std::runtime_error("boom"); });
    server_ = std::make_unique<TestServer>(test_options(),
                                           [this](Request& q, Response& r) { router_.dispatch(q, r); });
  }
  int port() const { return server_->port(); }

  Router router_;
  std::unique_ptr<TestServer> server_;
};

TEST_F(HttpRouterTest, ExactRoutesByMethod) {
  auto r = exchange(port(), get("/a"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "got a");
  r = exchange(port(), post("/a", "xyz"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "posted xyz");
  r = exchange(port(), get("/v1/models"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "list");
}

TEST_F(HttpRouterTest, PathParameterTakesTheRestDecoded) {
  auto r = exchange(port(), get("/v1/models/org/name%20x"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "id=org/name x");
  r = exchange(port(), get("/v1/models/"));  // an empty parameter is no match
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
}

TEST_F(HttpRouterTest, UnknownPathIs404AndWrongMethod405ThroughTheFallback) {
  auto r = exchange(port(), get("/nothing"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(r->headers["content-type"], "application/json");
  EXPECT_NE(r->body.find("no route GET /nothing"), std::string::npos) << r->body;
  r = exchange(port(), "DELETE /a HTTP/1.1\r\nHost: t\r\n\r\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(r->headers["allow"], "GET, POST");
  EXPECT_NE(r->body.find("DELETE is not allowed on /a"), std::string::npos) << r->body;
  r = exchange(port(), post("/v1/models/x", "{}"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(r->headers["allow"], "GET");
}

TEST_F(HttpRouterTest, QueryParametersAndCaseInsensitiveHeaders) {
  auto r = exchange(port(), get("/q?x=1%2F2&y=a+b", "X-TEST-Header: hello\r\n"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "1/2|a b|hello");
}

TEST_F(HttpRouterTest, HandlerExceptionIs500AndTheConnectionStaysUsable) {
  RawClient c(port());
  ASSERT_TRUE(c.send(get("/throws")));
  auto r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 500);
  EXPECT_NE(r->body.find("internal error: boom"), std::string::npos) << r->body;
  ASSERT_TRUE(c.send(get("/a")));
  r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "got a");
}

}  // namespace
}  // namespace saker::http::test
