#pragma once
// RequestBody: the Beast body type requests are read into. A body of known length is reserved once; a
// chunked one is collected in blocks of at most kBlockBytes and joined when complete, so a body that grows
// towards the limit costs its own size in memory and no more (a std::string grown by doubling can hold twice
// that, and copies it on each growth). The parser's body limit refuses a body past the limit as its bytes
// arrive, chunked or not.
#include <boost/beast/core/buffers_range.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/optional.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace saker::http {

struct RequestBody {
  using value_type = std::string;
  static constexpr size_t kBlockBytes = 1 << 20;

  class reader {
   public:
    template <bool isRequest, class Fields>
    reader(boost::beast::http::header<isRequest, Fields>&, value_type& body) : body_(body) {}

    void init(const boost::optional<std::uint64_t>& length, boost::beast::error_code& ec) {
      ec = {};
      body_.clear();
      if (length) {
        known_length_ = true;
        body_.reserve(static_cast<size_t>(*length));  // the parser has checked it against the limit
      }
    }

    template <class ConstBufferSequence>
    std::size_t put(const ConstBufferSequence& buffers, boost::beast::error_code& ec) {
      ec = {};
      size_t total = 0;
      for (const auto b : boost::beast::buffers_range_ref(buffers)) {
        const char* data = static_cast<const char*>(b.data());
        const size_t n = b.size();
        total += n;
        if (known_length_) {
          body_.append(data, n);
          continue;
        }
        size_t done = 0;
        while (done < n) {
          if (blocks_.empty() || blocks_.back().size() == kBlockBytes) {
            blocks_.emplace_back();
            blocks_.back().reserve(kBlockBytes);
          }
          std::string& block = blocks_.back();
          const size_t take = std::min(n - done, kBlockBytes - block.size());
          block.append(data + done, take);
          done += take;
        }
      }
      return total;
    }

    void finish(boost::beast::error_code& ec) {
      ec = {};
      if (known_length_) return;
      size_t total = 0;
      for (const auto& b : blocks_) total += b.size();
      body_.reserve(total);
      for (auto& b : blocks_) {
        body_ += b;
        std::string().swap(b);
      }
      blocks_.clear();
    }

   private:
    value_type& body_;
    bool known_length_ = false;
    std::vector<std::string> blocks_;
  };
};

}  // namespace saker::http
