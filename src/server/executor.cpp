#include "server/executor.h"

namespace saker::server {

void GenerationStream::push(GenerationEvent e) {
  {
    std::lock_guard lock(mutex_);
    events_.push_back(std::move(e));
  }
  cv_.notify_one();
}

void GenerationStream::add_token(const GeneratedToken& t) {
  std::lock_guard lock(mutex_);
  pending_tokens_.push_back(t);
}

void GenerationStream::push_text(std::string text) {
  GenerationEvent e;
  e.kind = GenerationEvent::Kind::kText;
  e.text = std::move(text);
  {
    std::lock_guard lock(mutex_);
    e.tokens = std::move(pending_tokens_);
    pending_tokens_.clear();
    events_.push_back(std::move(e));
  }
  cv_.notify_one();
}

void GenerationStream::finish(Result<GenerateResult> r) {
  GenerationEvent e;
  if (r.ok() && r->finish == FinishReason::kShutdown) {
    // Cut short by the shutdown: an error event, so that no route can mistake it for a finished answer.
    e.kind = GenerationEvent::Kind::kError;
    e.shutdown = true;
    e.status = make_error(StatusCode::kOutOfRange,
                          "the server is shutting down: the generation was stopped before it finished");
  } else if (r.ok()) {
    e.kind = GenerationEvent::Kind::kDone;
    e.result = std::move(r).value();
  } else {
    e.kind = GenerationEvent::Kind::kError;
    e.status = r.status();
  }
  {
    std::lock_guard lock(mutex_);
    e.tokens = std::move(pending_tokens_);
    pending_tokens_.clear();
    events_.push_back(std::move(e));
  }
  cv_.notify_one();
}

GenerationEvent GenerationStream::next() {
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [&] { return !events_.empty(); });
  GenerationEvent e = std::move(events_.front());
  events_.pop_front();
  return e;
}

}  // namespace saker::server
