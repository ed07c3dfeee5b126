#pragma once
// How a request's framing is checked and how parse failures are answered. Beast parses the message; these
// add the checks it leaves out (two Content-Length fields that agree, a Transfer-Encoding other than
// chunked, both Transfer-Encoding and Content-Length in one order) and turn every failure into a status with
// a message that names what was wrong.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <boost/beast/core/error.hpp>

namespace saker::http {

struct Refusal {
  int status = 400;
  std::string message;
};

// The framing fault of a raw request header (request line + fields, up to the blank line), if any:
// duplicate, negative or non-numeric Content-Length, Transfer-Encoding with Content-Length, a
// Transfer-Encoding other than chunked.
std::optional<std::string> framing_problem(std::string_view raw_header);

// The answer to a parse error. `raw` is the unparsed input (for the framing message); the limits name the
// server's bounds in the message.
Refusal refusal_for(const boost::beast::error_code& ec, std::string_view raw, size_t max_header_bytes,
                    uint64_t max_body_bytes);

}  // namespace saker::http
