// One DFlash drafter for many sequences (saker-mini's, CPU backend): slots drafted together in one forward
// draft exactly what each drafts alone, argmax and top-k rows mixed in one forward; context queued over
// several calls equals context given at once; slots run out with a clear error and come back empty; context
// pages committed under a prompt's tokens are adopted by a later slot with that prefix, which then drafts
// what full context gives, and a slot replacing adopted context copies the page instead of changing it.
#include <gtest/gtest.h>

#include "engine_test_util.h"
#include "forward_with_taps.h"
#include "models/kv_cache.h"
#include "saker_mini.h"
#include "spec/dflash_drafter.h"

namespace saker {
namespace {

using testing::heldout_prompts;
using testing::load_mini_weights;
using testing::mini_dir;

struct Context {
  std::vector<int32_t> tokens;  // [n] the prompt
  std::vector<float> taps;  // [n, n_taps * n_embd]
  int32_t pending = -1;     // the target's greedy token after the prompt
  int64_t n = 0;
};

class DFlashSlots : public ::testing::Test {
 protected:
  void SetUp() override {
    SAKER_REQUIRE_MINI();
    weights_ = load_mini_weights();
    ASSERT_TRUE(weights_);
    auto dw = spec::DFlashWeights::load((mini_dir() / "drafter").string(), weights_);
    ASSERT_TRUE(dw.ok()) << dw.status().to_string();
    dw_ = std::move(dw).value();
    auto target = create_model(weights_, OpsOptions{});
    ASSERT_TRUE(target.ok()) << target.status().to_string();
    const spec::DFlashConfig& c = dw_->config;
    const int64_t stride = static_cast<int64_t>(c.target_layers.size()) * c.n_embd;
    auto prompts = heldout_prompts();
    ASSERT_GE(prompts.size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
      auto kv = (*target)->allocate_kv(kv_cache_config_for(**target, 256));
      ASSERT_TRUE(kv.ok()) << kv.status().to_string();
      Context ctx;
      std::vector<int32_t> p = prompts[i];
      p.resize(std::min<size_t>(p.size(), 40 + 7 * i));  // different lengths
      ctx.n = static_cast<int64_t>(p.size());
      ctx.taps.resize(static_cast<size_t>(ctx.n * stride));
      ASSERT_TRUE(testing::forward_with_taps(**target, **kv, p, 0, c.target_layers, ctx.taps.data(), &ctx.pending).ok());
      ctx.tokens = p;
      contexts_.push_back(std::move(ctx));
    }
  }

  std::unique_ptr<spec::DFlashDrafter> drafter(int32_t n_slots, int64_t batch_tokens = 2048) {
    OpsOptions ops;
    ops.max_batch_tokens = batch_tokens;
    auto d = spec::DFlashDrafter::create(dw_, 256, ops, n_slots);
    EXPECT_TRUE(d.ok()) << d.status().to_string();
    return d.ok() ? std::move(d).value() : nullptr;
  }

  std::shared_ptr<const ModelWeights> weights_;
  std::shared_ptr<const spec::DFlashWeights> dw_;
  std::vector<Context> contexts_;
};

TEST_F(DFlashSlots, SlotsDraftedTogetherDraftWhatEachDraftsAlone) {
  // Alone: a one-slot drafter per context, argmax ids and top-4 rows.
  std::vector<std::vector<int32_t>> alone_ids(3);
  std::vector<std::vector<spec::DFlashDrafter::TopTokens>> alone_top(3);
  for (size_t i = 0; i < 3; ++i) {
    auto d = drafter(1);
    ASSERT_TRUE(d);
    ASSERT_TRUE(d->add_context(0, 0, contexts_[i].n, contexts_[i].taps.data()).ok());
    ASSERT_TRUE(d->propose(0, contexts_[i].pending, &alone_ids[i]).ok());
    ASSERT_TRUE(d->propose_top(0, contexts_[i].pending, 4, &alone_top[i]).ok());
  }
  // Together: three slots fused in one forward and drafted in one forward, slot 1 asking for top-4 rows.
  auto d = drafter(3);
  ASSERT_TRUE(d);
  for (int32_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(d->add_context(i, 0, contexts_[i].n, contexts_[i].taps.data()).ok());
    ASSERT_TRUE(d->request(i, contexts_[i].pending, i == 1 ? 4 : 0).ok());
  }
  ASSERT_TRUE(d->run().ok());
  EXPECT_EQ(d->stats().context_forwards, 1);
  EXPECT_EQ(d->stats().block_forwards, 1);
  EXPECT_EQ(d->stats().blocks, 3);
  for (int32_t i = 0; i < 3; ++i) {
    if (i == 1) {
      const auto top = d->top(i);
      ASSERT_EQ(top.size(), alone_top[i].size());
      for (size_t r = 0; r < top.size(); ++r) {
        EXPECT_EQ(top[r].ids, alone_top[i][r].ids) << "row " << r;
        EXPECT_EQ(top[r].logprobs, alone_top[i][r].logprobs) << "row " << r;
      }
      continue;
    }
    const auto ids = d->drafts(i);
    EXPECT_EQ(std::vector<int32_t>(ids.begin(), ids.end()), alone_ids[i]) << "slot " << i;
  }
  // The chain is the top-1 of the rows (the drafter is confident enough on these to be worth testing).
  for (size_t r = 0; r < alone_ids[1].size(); ++r) EXPECT_EQ(alone_ids[1][r], alone_top[1][r].ids[0]) << "row " << r;
}

// A forward carries at most the backend's batch (64 rows here: four blocks of 16): five requested blocks run
// in two forwards and draft what they draft alone; queued context is fused as soon as it fills a forward.
TEST_F(DFlashSlots, BlocksAndContextBeyondOneForwardAreSplitByWholeBlocks) {
  std::vector<std::vector<int32_t>> alone(5);
  for (int32_t i = 0; i < 5; ++i) {
    auto d = drafter(1, 64);
    ASSERT_TRUE(d);
    const Context& ctx = contexts_[i % 3];
    ASSERT_TRUE(d->add_context(0, 0, ctx.n, ctx.taps.data()).ok());
    ASSERT_TRUE(d->propose(0, ctx.pending + i / 3, &alone[i]).ok());
  }
  auto d = drafter(5, 64);
  ASSERT_TRUE(d);
  for (int32_t i = 0; i < 5; ++i) {
    const Context& ctx = contexts_[i % 3];
    ASSERT_TRUE(d->add_context(i, 0, ctx.n, ctx.taps.data()).ok());
    ASSERT_TRUE(d->request(i, ctx.pending + i / 3, 0).ok());
  }
  // 40 + 47 + 54 + 40 + 47 rows queued: each time the queues reached 64 they were fused.
  EXPECT_GE(d->stats().context_forwards, 2);
  ASSERT_TRUE(d->run().ok());
  EXPECT_EQ(d->stats().block_forwards, 2);
  EXPECT_EQ(d->stats().blocks, 5);
  for (int32_t i = 0; i < 5; ++i) {
    const auto ids = d->drafts(i);
    EXPECT_EQ(std::vector<int32_t>(ids.begin(), ids.end()), alone[i]) << "slot " << i;
  }
}

TEST_F(DFlashSlots, ContextQueuedInPiecesEqualsContextAtOnce) {
  const Context& ctx = contexts_[2];
  const int64_t stride = static_cast<int64_t>(ctx.taps.size()) / ctx.n;
  std::vector<int32_t> whole, pieces, replaced;
  auto a = drafter(1);
  ASSERT_TRUE(a);
  ASSERT_TRUE(a->add_context(0, 0, ctx.n, ctx.taps.data()).ok());
  ASSERT_TRUE(a->propose(0, ctx.pending, &whole).ok());
  // Three pieces, the second fused by a run of its own before the third is queued.
  auto b = drafter(1);
  ASSERT_TRUE(b);
  ASSERT_TRUE(b->add_context(0, 0, 10, ctx.taps.data()).ok());
  ASSERT_TRUE(b->add_context(0, 10, 20, ctx.taps.data() + 10 * stride).ok());
  ASSERT_TRUE(b->run().ok());
  EXPECT_EQ(b->n_context(0), 30);
  ASSERT_TRUE(b->add_context(0, 30, ctx.n - 30, ctx.taps.data() + 30 * stride).ok());
  EXPECT_EQ(b->n_context(0), ctx.n);
  ASSERT_TRUE(b->propose(0, ctx.pending, &pieces).ok());
  EXPECT_EQ(pieces, whole);
  // Positions replaced from the middle (a fused one and the queued rest) give the same as before.
  ASSERT_TRUE(b->add_context(0, 25, ctx.n - 25, ctx.taps.data() + 25 * stride).ok());
  ASSERT_TRUE(b->propose(0, ctx.pending, &replaced).ok());
  EXPECT_EQ(replaced, whole);
  // Positions past what is held are refused.
  EXPECT_FALSE(b->add_context(0, ctx.n + 1, 1, ctx.taps.data()).ok());
}

TEST_F(DFlashSlots, SlotsRunOutClearlyAndComeBackEmpty) {
  auto d = drafter(2);
  ASSERT_TRUE(d);
  auto s0 = d->acquire();
  auto s1 = d->acquire();
  ASSERT_TRUE(s0.ok() && s1.ok());
  EXPECT_NE(*s0, *s1);
  auto none = d->acquire();
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("all 2 slots"), std::string::npos) << none.status().to_string();
  ASSERT_TRUE(d->add_context(*s1, 0, contexts_[0].n, contexts_[0].taps.data()).ok());
  d->release(*s1);
  auto again = d->acquire();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *s1);
  EXPECT_EQ(d->n_context(*again), 0) << "a released slot keeps no context";
  EXPECT_FALSE(d->request(7, 1, 0).ok()) << "no slot 7";
  EXPECT_FALSE(d->request(*again, -1, 0).ok()) << "a pending token outside the vocabulary";
}

TEST_F(DFlashSlots, CommittedContextPagesAreAdoptedByTheSamePrefix) {
  const Context& ctx = contexts_[2];
  const int64_t full = ctx.n / 16 * 16;  // positions in whole pages of 16
  ASSERT_GE(full, 32) << "a context of two full pages at least";
  const int64_t stride = static_cast<int64_t>(ctx.taps.size()) / ctx.n;
  std::vector<int32_t> whole;
  auto d = drafter(2);
  ASSERT_TRUE(d);
  ASSERT_TRUE(d->add_context(0, 0, ctx.n, ctx.taps.data()).ok());
  ASSERT_TRUE(d->propose(0, ctx.pending, &whole).ok());
  d->commit(0, ctx.tokens);
  d->release(0);
  EXPECT_EQ(d->pool_stats().pages_cached, full / 16) << "the full pages stay cached under their prefix";

  // Another slot with the same prompt adopts the positions of full pages and needs only the rest.
  auto slot = d->acquire();
  ASSERT_TRUE(slot.ok());
  auto got = d->match_prefix(*slot, ctx.tokens, ctx.n - 1);
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ(*got, full);
  EXPECT_EQ(d->n_context(*slot), full);
  EXPECT_EQ(d->stats().cached_positions, full);
  EXPECT_FALSE(d->match_prefix(*slot, ctx.tokens, ctx.n - 1).ok()) << "a slot with context matches nothing more";
  ASSERT_TRUE(d->add_context(*slot, full, ctx.n - full, ctx.taps.data() + full * stride).ok());
  std::vector<int32_t> adopted;
  ASSERT_TRUE(d->propose(*slot, ctx.pending, &adopted).ok());
  EXPECT_EQ(adopted, whole);

  // Replacing positions inside an adopted page copies it: a third slot still adopts the original pages and
  // drafts the same.
  std::vector<float> other(ctx.taps.begin() + 20 * stride, ctx.taps.end());
  for (float& v : other) v = -v;
  ASSERT_TRUE(d->add_context(*slot, 20, ctx.n - 20, other.data()).ok());
  std::vector<int32_t> changed;
  ASSERT_TRUE(d->propose(*slot, ctx.pending, &changed).ok());
  d->release(*slot);
  auto third = d->acquire();
  ASSERT_TRUE(third.ok());
  got = d->match_prefix(*third, ctx.tokens, ctx.n - 1);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, full);
  ASSERT_TRUE(d->add_context(*third, full, ctx.n - full, ctx.taps.data() + full * stride).ok());
  std::vector<int32_t> again;
  ASSERT_TRUE(d->propose(*third, ctx.pending, &again).ok());
  EXPECT_EQ(again, whole) << "an adopted page was written by the slot that replaced its context";
  // Another prompt shares no page with it.
  d->release(*third);
  auto fourth = d->acquire();
  ASSERT_TRUE(fourth.ok());
  got = d->match_prefix(*fourth, contexts_[0].tokens, contexts_[0].n - 1);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, 0);
}

}  // namespace
}  // namespace saker
