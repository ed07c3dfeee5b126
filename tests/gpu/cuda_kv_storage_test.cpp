// KV memory on the GPU: CudaKvStorage's pages and slot moves against the host KvCache, the CUDA decoder's
// views-only KV (refusing host views), argmax ids instead of logits, several sequences in one storage, and
// graphs staying correct when a storage is replaced by another one at the same address.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <random>

#include "models/cuda/cuda_kv_storage.h"
#include "models/kv_cache.h"
#include "models/model.h"
#include "ops/cuda_test_util.h"
#include "ops/ref/argmax.h"
#include "test_paths.h"

namespace saker {
namespace {

// Every page of `kv` from seeded random bytes (f16 bit patterns of every kind: NaN, inf, denormals).
std::vector<std::vector<uint8_t>> fill_random(KvStorage& kv, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::vector<uint8_t>> pages(kv.config().n_blocks, std::vector<uint8_t>(kv.page_bytes()));
  for (int32_t p = 0; p < static_cast<int32_t>(pages.size()); ++p) {
    for (auto& b : pages[p]) b = static_cast<uint8_t>(rng());
    EXPECT_TRUE(kv.write_page(p, pages[p].data()).ok());
  }
  return pages;
}

std::vector<std::vector<uint8_t>> read_all(const KvStorage& kv) {
  std::vector<std::vector<uint8_t>> pages(kv.config().n_blocks, std::vector<uint8_t>(kv.page_bytes()));
  for (int32_t p = 0; p < static_cast<int32_t>(pages.size()); ++p) EXPECT_TRUE(kv.read_page(p, pages[p].data()).ok());
  return pages;
}

TEST(CudaKvStorage, PagesRoundTripBitExact) {
  SAKER_REQUIRE_GPU();
  const KvCacheConfig c = kv_cache_config(3, 2, 64, 5 * 16, DType::kF16);
  auto kv = CudaKvStorage::create(c);
  ASSERT_TRUE(kv.ok()) << kv.status().to_string();
  EXPECT_EQ((*kv)->device(), Device::kCuda);
  ASSERT_EQ((*kv)->layers().size(), 3u);
  for (const LayerKv& l : (*kv)->layers()) {
    EXPECT_EQ(l.k.device, Device::kCuda);
    EXPECT_EQ(l.v.shape_string(), "[5, 16, 2, 64] f16");
  }
  EXPECT_EQ((*kv)->page_bytes(), 2u * 3 * 16 * 2 * 64 * 2);
  const auto written = fill_random(**kv, 7);
  EXPECT_EQ(read_all(**kv), written);
  // The views point at the same bytes: page 3 of layer 2's V is the page's last slice.
  const uint64_t slice = (*kv)->page_bytes() / 6;
  std::vector<uint8_t> direct(slice);
  const auto* v2 = static_cast<const uint8_t*>((*kv)->layers()[2].v.data);
  ASSERT_EQ(cudaMemcpy(direct.data(), v2 + 3 * slice, slice, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(std::memcmp(direct.data(), written[3].data() + 5 * slice, slice), 0);
  std::vector<uint8_t> buf((*kv)->page_bytes());
  EXPECT_EQ((*kv)->read_page(5, buf.data()).code(), StatusCode::kOutOfRange);
  EXPECT_EQ((*kv)->write_page(-1, buf.data()).code(), StatusCode::kOutOfRange);
}

TEST(CudaKvStorage, CopySlotsMatchesTheHostCache) {
  SAKER_REQUIRE_GPU();
  const KvCacheConfig c = kv_cache_config(2, 2, 32, 6 * 16, DType::kF16);
  auto dev = CudaKvStorage::create(c);
  auto host = KvCache::create(c);
  ASSERT_TRUE(dev.ok() && host.ok());
  const auto pages = fill_random(**dev, 11);
  for (int32_t p = 0; p < c.n_blocks; ++p) ASSERT_TRUE((*host)->write_page(p, pages[p].data()).ok());
  const std::vector<int32_t> table = {4, 1, 5, 0};
  // A tree's accepted nodes to consecutive slots, then a chain of moves where a later one reads an earlier
  // one's destination (in order: 20 -> 21, then 21 -> 40 carries what came from 20).
  const std::vector<int32_t> from = {14, 17, 33, 29, 20, 21}, to = {14, 15, 16, 17, 21, 40};
  ASSERT_TRUE((*dev)->copy_slots(table, from, to).ok());
  ASSERT_TRUE((*host)->copy_slots(table, from, to).ok());
  EXPECT_EQ(read_all(**dev), read_all(**host));
  EXPECT_NE(read_all(**dev), pages) << "something moved";
  const std::vector<int32_t> bad = {70}, one = {1};
  EXPECT_EQ((*dev)->copy_slots(table, bad, one).code(), StatusCode::kOutOfRange);
  EXPECT_EQ((*dev)->copy_slots(table, from, one).code(), StatusCode::kInvalidArgument);
}

// An engine step's moves: several sequences in one call, one launch. Each sequence's moves run in order on the
// GPU too (sequence a reads slot 14 before writing it, b chains 20 -> 21 -> 40); rows whose size is not a
// multiple of 16 bytes take narrower words: 128-byte rows 16-byte words, 24-byte rows 4-byte, 6-byte rows bytes.
TEST(CudaKvStorage, CopySlotsOfSeveralSequencesInOneLaunch) {
  SAKER_REQUIRE_GPU();
  for (const int64_t head_dim : {32, 6, 3}) {
    const KvCacheConfig c = kv_cache_config(3, head_dim == 3 ? 1 : 2, head_dim, 12 * 16, DType::kF16);
    auto dev = CudaKvStorage::create(c);
    auto host = KvCache::create(c);
    ASSERT_TRUE(dev.ok() && host.ok());
    const auto pages = fill_random(**dev, 13);
    for (int32_t p = 0; p < c.n_blocks; ++p) ASSERT_TRUE((*host)->write_page(p, pages[p].data()).ok());
    const std::vector<int32_t> ta = {4, 1}, tb = {5, 0, 7}, tc = {9, 11}, td = {2};
    const std::vector<int32_t> fa = {14, 15, 20}, da = {13, 14, 15};
    const std::vector<int32_t> fb = {20, 21, 33}, db = {21, 40, 34};
    const std::vector<int32_t> fc = {3, 3}, dc = {3, 4};  // an in-place move, then a copy
    const std::vector<int32_t> none;
    const std::vector<SlotMoves> seqs = {{ta, fa, da}, {tb, fb, db}, {td, none, none}, {tc, fc, dc}};
    ASSERT_TRUE((*dev)->copy_slots(seqs).ok());
    ASSERT_TRUE((*host)->copy_slots(seqs).ok());
    EXPECT_EQ(read_all(**dev), read_all(**host)) << "head_dim " << head_dim;
    EXPECT_NE(read_all(**dev), pages);
    const std::vector<int32_t> far = {60};
    const std::vector<SlotMoves> bad = {{ta, da, fa}, {tb, far, {db.data(), 1}}};
    EXPECT_EQ((*dev)->copy_slots(bad).code(), StatusCode::kOutOfRange);
    EXPECT_EQ(read_all(**dev), read_all(**host)) << "the refused call moved nothing";
  }
}

TEST(CudaKvStorage, RefusesNonF16) {
  SAKER_REQUIRE_GPU();
  EXPECT_EQ(CudaKvStorage::create(kv_cache_config(2, 2, 64, 64, DType::kF32)).status().code(),
            StatusCode::kUnsupported);
  EXPECT_FALSE(CudaKvStorage::create(kv_cache_config(2, 2, 64, 0, DType::kF16)).ok());
}

// A sequence of a test: its block table in the shared storage and its tokens so far.
struct Seq {
  std::vector<int32_t> table;
  std::vector<int32_t> tokens;
  int32_t cached = 0;  // tokens already in the cache
};

// One forward of every sequence's uncached tokens, interleaved, each sequence's last row an output; returns
// the argmax ids (and the logits when asked) and marks the tokens cached.
Status step(Model& m, const KvStorage& kv, std::vector<Seq*> seqs, std::vector<int32_t>* ids,
            std::vector<float>* logits = nullptr) {
  std::vector<AttentionSequence> as(seqs.size());
  std::vector<int32_t> tokens, seq, slot, rows(seqs.size());
  int32_t longest = 0;
  for (const Seq* s : seqs) longest = std::max<int32_t>(longest, static_cast<int32_t>(s->tokens.size()) - s->cached);
  for (int32_t i = 0; i < longest; ++i) {
    for (size_t j = 0; j < seqs.size(); ++j) {
      const Seq& s = *seqs[j];
      const int32_t at = s.cached + i;
      if (at >= static_cast<int32_t>(s.tokens.size())) continue;
      if (at == static_cast<int32_t>(s.tokens.size()) - 1) rows[j] = static_cast<int32_t>(tokens.size());
      tokens.push_back(s.tokens[at]);
      seq.push_back(static_cast<int32_t>(j));
      slot.push_back(at);
    }
  }
  for (size_t j = 0; j < seqs.size(); ++j) {
    as[j].block_table = seqs[j]->table;
    as[j].n_ctx = static_cast<int32_t>(seqs[j]->tokens.size());
  }
  ForwardBatch b;
  b.tokens = tokens;
  b.attn.sequences = as;
  b.attn.token_seq = seq;
  b.attn.token_slot = slot;
  b.attn.token_pos = slot;
  b.output_rows = rows;
  ids->assign(seqs.size(), -1);
  b.argmax = ids->data();
  if (logits) logits->resize(seqs.size() * m.hparams().n_vocab);
  SAKER_RETURN_IF_ERROR(m.forward(b, kv.layers(), logits ? logits->data() : nullptr));
  for (Seq* s : seqs) s->cached = static_cast<int32_t>(s->tokens.size());
  return {};
}

// Greedy continuation of every sequence together: n steps, one token each per forward.
std::vector<std::vector<int32_t>> greedy(Model& m, const KvStorage& kv, std::vector<Seq*> seqs, int n) {
  std::vector<std::vector<int32_t>> out(seqs.size());
  std::vector<int32_t> ids;
  for (int i = 0; i < n; ++i) {
    const Status st = step(m, kv, seqs, &ids);
    EXPECT_TRUE(st.ok()) << st.to_string();
    if (!st.ok()) break;
    for (size_t j = 0; j < seqs.size(); ++j) {
      out[j].push_back(ids[j]);
      seqs[j]->tokens.push_back(ids[j]);
    }
  }
  return out;
}

class CudaKvModel : public ::testing::Test {
 protected:
  void SetUp() override {
    SAKER_REQUIRE_GPU();
    auto w = ModelWeights::open((testing::project_data_dir() / "golden" / "qwen3-tied").string());
    ASSERT_TRUE(w.ok()) << w.status().to_string();
    weights_ = std::move(w).value();
    model_ = make(true);
    ASSERT_TRUE(model_);
  }
  std::unique_ptr<Model> make(bool graphs) {
    OpsOptions ops;
    ops.device = Device::kCuda;
    ops.cuda_graphs = graphs;
    auto m = create_model(weights_, ops);
    EXPECT_TRUE(m.ok()) << m.status().to_string();
    return m.ok() ? std::move(m).value() : nullptr;
  }
  std::unique_ptr<KvStorage> storage(int64_t n_tokens) {
    auto kv = model_->allocate_kv(kv_cache_config_for(*model_, n_tokens));
    EXPECT_TRUE(kv.ok()) << kv.status().to_string();
    return kv.ok() ? std::move(kv).value() : nullptr;
  }
  std::vector<int32_t> prompt(int n, int salt) const {
    std::vector<int32_t> t(n);
    for (int i = 0; i < n; ++i) t[i] = (i * 37 + salt * 101 + 5) % static_cast<int>(weights_->hparams().n_vocab);
    return t;
  }
  std::shared_ptr<const ModelWeights> weights_;
  std::unique_ptr<Model> model_;
};

TEST_F(CudaKvModel, AllocatesF16DeviceStorageAndRefusesOthers) {
  EXPECT_EQ(model_->kv_dtype(), DType::kF16);
  auto kv = storage(64);
  ASSERT_TRUE(kv);
  EXPECT_EQ(kv->device(), Device::kCuda);
  KvCacheConfig f32 = kv_cache_config_for(*model_, 64);
  f32.dtype = DType::kF32;
  EXPECT_EQ(model_->allocate_kv(f32).status().code(), StatusCode::kUnsupported);
  // Host views (what the CPU backend allocates) are refused, not dereferenced.
  auto host = KvCache::create(kv_cache_config_for(*model_, 64));
  ASSERT_TRUE(host.ok());
  Seq s{{0, 1, 2, 3}, prompt(5, 0)};
  std::vector<int32_t> ids;
  EXPECT_EQ(step(*model_, **host, {&s}, &ids).code(), StatusCode::kInvalidArgument);
}

// Ids with no logits equal the argmax of the logits, on the eager path (prefill) and on replayed graphs
// (one-token steps run eagerly once, are captured the second time and replayed after).
TEST_F(CudaKvModel, ArgmaxIdsEqualTheArgmaxOfTheLogits) {
  const int64_t n_vocab = model_->hparams().n_vocab;
  auto kv_ids = storage(256), kv_logits = storage(256);
  ASSERT_TRUE(kv_ids && kv_logits);
  Seq a{{0, 1, 2, 3, 4, 5, 6, 7}, prompt(30, 1)}, b = a;
  std::vector<int32_t> ids, ids_b, expected(1);
  std::vector<float> logits;
  for (int i = 0; i < 12; ++i) {
    ASSERT_TRUE(step(*model_, *kv_ids, {&a}, &ids).ok());
    ASSERT_TRUE(step(*model_, *kv_logits, {&b}, &ids_b, &logits).ok());
    ASSERT_TRUE(ref::argmax(TensorView::contiguous(logits.data(), DType::kF32, {1, n_vocab}), expected).ok());
    EXPECT_EQ(ids_b, expected) << "step " << i << ": ids beside logits";
    EXPECT_EQ(ids, expected) << "step " << i << ": ids alone";
    a.tokens.push_back(ids[0]);
    b.tokens.push_back(ids[0]);
  }
}

// Two sequences with their own block tables in one storage, run in the same forwards, continue exactly as
// each does alone in a storage of its own.
TEST_F(CudaKvModel, TwoSequencesInOneStorageEqualEachAlone) {
  const std::vector<int32_t> table_a = {7, 2, 9, 0}, table_b = {5, 11, 3, 12};
  std::vector<std::vector<int32_t>> alone(2);
  for (int j = 0; j < 2; ++j) {
    auto kv = storage(16 * 16);
    ASSERT_TRUE(kv);
    Seq s{j == 0 ? table_a : table_b, prompt(j == 0 ? 40 : 23, j)};
    std::vector<int32_t> ids;
    ASSERT_TRUE(step(*model_, *kv, {&s}, &ids).ok());
    s.tokens.push_back(ids[0]);
    alone[j] = {ids[0]};
    const auto more = greedy(*model_, *kv, {&s}, 10);
    alone[j].insert(alone[j].end(), more[0].begin(), more[0].end());
  }
  auto shared = storage(16 * 16);
  ASSERT_TRUE(shared);
  Seq a{table_a, prompt(40, 0)}, b{table_b, prompt(23, 1)};
  std::vector<int32_t> ids;
  ASSERT_TRUE(step(*model_, *shared, {&a, &b}, &ids).ok());
  a.tokens.push_back(ids[0]);
  b.tokens.push_back(ids[1]);
  std::vector<std::vector<int32_t>> together = {{ids[0]}, {ids[1]}};
  const auto more = greedy(*model_, *shared, {&a, &b}, 10);
  for (int j = 0; j < 2; ++j) together[j].insert(together[j].end(), more[j].begin(), more[j].end());
  EXPECT_EQ(together[0], alone[0]);
  EXPECT_EQ(together[1], alone[1]);
}

// Graphs bake in KV pointers. A storage freed and replaced by one of another size usually lands at the same
// address with the same layer-0 K pointer but other pointers for the other layers: steps must still match an
// eager decoder's, so no graph of the old storage may be replayed on the new one.
TEST_F(CudaKvModel, GraphsFollowAStorageReplacedAtTheSameAddress) {
  std::unique_ptr<Model> eager = make(false);
  ASSERT_TRUE(eager);
  auto reference = [&](int64_t n_tokens) {
    auto kv = eager->allocate_kv(kv_cache_config_for(*eager, n_tokens));
    EXPECT_TRUE(kv.ok());
    Seq s{std::vector<int32_t>((n_tokens + 15) / 16), prompt(20, 3)};
    for (size_t i = 0; i < s.table.size(); ++i) s.table[i] = static_cast<int32_t>(s.table.size() - 1 - i);
    return greedy(*eager, **kv, {&s}, 8)[0];
  };
  const void* last_k0 = nullptr;
  for (int64_t n_tokens : {256, 512, 512, 384}) {
    auto kv = storage(n_tokens);
    ASSERT_TRUE(kv);
    const void* k0 = kv->layers()[0].k.data;
    std::printf("%lld tokens: layer-0 K %s the previous storage's\n", static_cast<long long>(n_tokens),
                k0 == last_k0 ? "at" : "not at");
    last_k0 = k0;
    Seq s{std::vector<int32_t>((n_tokens + 15) / 16), prompt(20, 3)};
    for (size_t i = 0; i < s.table.size(); ++i) s.table[i] = static_cast<int32_t>(s.table.size() - 1 - i);
    EXPECT_EQ(greedy(*model_, *kv, {&s}, 8)[0], reference(n_tokens)) << n_tokens << " tokens";
  }
}

}  // namespace
}  // namespace saker
