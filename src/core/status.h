#pragma once
// Status and Result<T>: how saker reports errors. Bad input (a file, a request, a flag) never aborts:
// it comes back as a Status whose message names the thing and what was expected.
#ifndef __CUDACC__
#include <fmt/format.h>
#endif

#include <string>
#include <utility>
#include <variant>

namespace saker {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // a flag, a request field or an API argument is wrong
  kNotFound,         // a file, tensor or key does not exist
  kCorruptFile,      // a file does not follow its format (the message names the byte offset)
  kUnsupported,      // valid input that saker does not handle (yet)
  kOutOfRange,       // sizes or indices beyond a limit
  kIoError,          // the operating system refused (open, read, mmap)
  kInternal,         // a bug in saker
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return {}; }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "corrupt file: gguf: tensor 'x' ..." : code name and message.
  std::string to_string() const;
  // Adds context in front of the message: "while loading F: <message>".
  Status with_context(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status make_error(StatusCode code, std::string message) { return Status(code, std::move(message)); }

#ifndef __CUDACC__
// nvcc's front end cannot compile fmt's compile-time format checks, so .cu files build plain messages.
template <typename... Args>
Status make_error(StatusCode code, fmt::format_string<Args...> format, Args&&... args) {
  return Status(code, fmt::format(format, std::forward<Args>(args)...));
}
#endif

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::move(value)) {}
  Result(Status status) : data_(std::move(status)) {
    if (std::get<Status>(data_).ok()) data_ = Status(StatusCode::kInternal, "Result built from an ok Status");
  }

  bool ok() const { return std::holds_alternative<T>(data_); }
  const Status& status() const {
    static const Status kOkStatus;
    return ok() ? kOkStatus : std::get<Status>(data_);
  }
  T& value() & { return std::get<T>(data_); }
  const T& value() const& { return std::get<T>(data_); }
  T&& value() && { return std::get<T>(std::move(data_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }

 private:
  std::variant<T, Status> data_;
};

}  // namespace saker

// Propagates a failed Status out of the current function.
#define SAKER_RETURN_IF_ERROR(expr)            \
  do {                                         \
    ::saker::Status saker_status_ = (expr);    \
    if (!saker_status_.ok()) return saker_status_; \
  } while (0)

#define SAKER_CONCAT_INNER(a, b) a##b
#define SAKER_CONCAT(a, b) SAKER_CONCAT_INNER(a, b)
// Declares `lhs` from a Result, or returns its Status.
#define SAKER_ASSIGN_OR_RETURN(lhs, expr) SAKER_ASSIGN_OR_RETURN_IMPL(SAKER_CONCAT(saker_result_, __LINE__), lhs, expr)
#define SAKER_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()
