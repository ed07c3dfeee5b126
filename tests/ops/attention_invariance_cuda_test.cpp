// Same numbers at every width, for the CUDA attention: a query row's output bits do not depend on the
// other rows and sequences of the batch, nor on the launch's context capacity. Checked by running one
// mixed batch (decode rows, causal verify chains, a draft tree, interleaved) and then each sequence alone,
// each causal row as a one-row decode, and the whole batch at a larger capacity, all on the same f16
// cache, comparing bits; and every draft-tree node against plain decoding of its chain (its ancestors' K/V
// at consecutive slots), so a verified tree commits the tokens plain decoding would. Accuracy against the ref op is attention_cuda_test's job (kSplitFixed included).
#include <cstring>
#include <random>
#include <string>

#include "core/half.h"
#include "ops/cuda/attention.h"
#include "ops/cuda_test_util.h"
#include "unit/attention_batch_builder.h"

namespace saker {
namespace {

using testing::BuiltBatch;
using testing::DeviceArray;
using testing::SeqSpec;
constexpr AttentionMask kCausal = AttentionMask::kCausal;
constexpr AttentionMask kTree = AttentionMask::kTree;

struct Geometry {
  int32_t n_head = 32, n_head_kv = 8, head_dim = 128;  // Qwen3-8B's
  int32_t window = 0;
  cuda::AttentionKernel kernel = cuda::AttentionKernel::kAuto;
  int64_t q_width() const { return static_cast<int64_t>(n_head) * head_dim; }
};

// An AttentionBatch with its own storage (the view's spans point into it).
struct OwnedBatch {
  std::vector<AttentionSequence> seqs;
  std::vector<int32_t> token_seq, token_slot, token_pos, token_parent;
  std::vector<int64_t> rows;  // batch index of each token in the batch it was taken from
  bool tree = false;
  AttentionBatch view() const {
    return AttentionBatch{seqs, token_seq, token_slot, token_pos,
                          tree ? std::span<const int32_t>(token_parent) : std::span<const int32_t>()};
  }
};

// The tokens of sequences `keep` of b, in b's batch order.
OwnedBatch select_sequences(const BuiltBatch& b, const std::vector<int32_t>& keep) {
  OwnedBatch o;
  std::vector<int32_t> new_seq(b.seqs.size(), -1), new_index(b.token_seq.size(), -1);
  for (int32_t s : keep) {
    new_seq[s] = static_cast<int32_t>(o.seqs.size());
    o.seqs.push_back(b.seqs[s]);
  }
  for (size_t t = 0; t < b.token_seq.size(); ++t) {
    const int32_t s = new_seq[b.token_seq[t]];
    if (s < 0) continue;
    new_index[t] = static_cast<int32_t>(o.token_seq.size());
    o.token_seq.push_back(s);
    o.token_slot.push_back(b.token_slot[t]);
    o.token_pos.push_back(b.token_pos[t]);
    o.token_parent.push_back(b.token_parent[t] < 0 ? -1 : new_index[b.token_parent[t]]);
    o.rows.push_back(static_cast<int64_t>(t));
    o.tree |= b.seqs[b.token_seq[t]].mask == kTree;
  }
  return o;
}

// Token t of b (a causal row) as a one-row decode: its sequence cut to the token's own slot.
OwnedBatch as_decode_row(const BuiltBatch& b, size_t t) {
  OwnedBatch o;
  AttentionSequence s = b.seqs[b.token_seq[t]];
  s.n_ctx = b.token_slot[t] + 1;
  o.seqs.push_back(s);
  o.token_seq = {0};
  o.token_slot = {b.token_slot[t]};
  o.token_pos = {b.token_pos[t]};
  o.token_parent = {-1};
  o.rows = {static_cast<int64_t>(t)};
  return o;
}

struct Cache {
  DeviceArray<uint16_t> k, v;
  Cache(const std::vector<uint16_t>& kh, const std::vector<uint16_t>& vh) : k(kh), v(vh) {}
};

// Tree token t of b as plain decoding runs the same token: a one-row causal decode over a fresh sequence
// whose slots hold the committed prefix and then the token's ancestors in depth order (their K/V rows copied
// into new blocks appended to the cache). row_elems: halves per slot (n_head_kv * head_dim).
struct PlainTreeRow {
  OwnedBatch batch;
  std::vector<int32_t> table;
  std::vector<uint16_t> k, v;
};
void as_plain_decode_of_tree_row(const BuiltBatch& b, size_t t, const std::vector<uint16_t>& kh,
                                 const std::vector<uint16_t>& vh, int64_t row_elems, PlainTreeRow* out) {
  const AttentionSequence& s = b.seqs[b.token_seq[t]];
  const int32_t bs = b.block_size, pos = b.token_pos[t], n_ctx = pos + 1;
  std::vector<int32_t> src(static_cast<size_t>(n_ctx));
  for (int32_t l = 0; l < s.tree_start; ++l) src[l] = l;
  for (int32_t a = static_cast<int32_t>(t); a >= 0; a = b.token_parent[a]) src[b.token_pos[a]] = b.token_slot[a];
  const int32_t n_new_blocks = (n_ctx + bs - 1) / bs;
  out->k = kh;
  out->v = vh;
  out->k.resize(kh.size() + static_cast<size_t>(n_new_blocks) * bs * row_elems);
  out->v.resize(out->k.size());
  out->table.clear();
  for (int32_t i = 0; i < n_new_blocks; ++i) out->table.push_back(b.n_blocks + i);
  for (int32_t l = 0; l < n_ctx; ++l) {
    const int64_t from = (static_cast<int64_t>(s.block_table[src[l] / bs]) * bs + src[l] % bs) * row_elems;
    const int64_t to = (static_cast<int64_t>(b.n_blocks) * bs + l) * row_elems;
    std::copy_n(kh.begin() + from, row_elems, out->k.begin() + to);
    std::copy_n(vh.begin() + from, row_elems, out->v.begin() + to);
  }
  OwnedBatch& o = out->batch;
  o = OwnedBatch{};
  o.seqs.push_back({out->table, n_ctx, kCausal, 0});
  o.token_seq = {0};
  o.token_slot = {pos};
  o.token_pos = {pos};
  o.token_parent = {-1};
  o.rows = {static_cast<int64_t>(t)};
}

// cuda::attention (g.kernel) over `batch` with the q rows of the batch it came from (q_all [T_all,
// q_width]); the output rows [T, q_width], empty on failure (why says what failed).
std::vector<float> run(const OwnedBatch& o, const std::vector<float>& q_all, const Cache& cache, const Geometry& g,
                       int32_t block_size, int32_t max_ctx, std::string* why) {
  const AttentionBatch batch = o.view();
  const int64_t T = batch.n_tokens(), W = g.q_width();
  std::vector<float> q(T * W);
  for (int64_t t = 0; t < T; ++t) std::memcpy(&q[t * W], &q_all[o.rows[t] * W], sizeof(float) * W);
  std::vector<int32_t> packed;
  cuda::DeviceAttentionBatch db;
  db.layout = cuda::pack_attention_batch(batch, &packed);
  db.block_size = block_size;
  DeviceArray<int32_t> dpacked(packed);
  db.data = dpacked.get();
  cuda::AttentionLaunch launch;
  launch.n_head = g.n_head;
  launch.n_head_kv = g.n_head_kv;
  launch.head_dim = g.head_dim;
  launch.sliding_window = g.window;
  launch.kernel = g.kernel;
  launch.max_ctx = max_ctx;
  for (const AttentionSequence& s : o.seqs) launch.max_ctx = std::max(launch.max_ctx, s.n_ctx);
  DeviceArray<float> dq(q), dout(T * W);
  const size_t ws = cuda::attention_workspace_bytes(db, launch);
  DeviceArray<char> dws(std::max<size_t>(ws, 1));
  const Status st = cuda::attention(dq.get(), W, reinterpret_cast<const __half*>(cache.k.get()),
                                    reinterpret_cast<const __half*>(cache.v.get()), db, launch, dout.get(), dws.get(),
                                    ws, nullptr);
  const cudaError_t e = st.ok() ? cudaDeviceSynchronize() : cudaSuccess;
  if (!st.ok() || e != cudaSuccess) {
    *why = st.ok() ? cudaGetErrorString(e) : st.message();
    return {};
  }
  return dout.to_host();
}

// Rows of `got` (taken from batch rows o.rows) whose bits differ from the whole batch's output.
int count_differing_rows(const OwnedBatch& o, const std::vector<float>& got, const std::vector<float>& whole,
                         int64_t W) {
  int n = 0;
  for (size_t r = 0; r < o.rows.size(); ++r) {
    n += std::memcmp(&got[r * W], &whole[o.rows[r] * W], sizeof(float) * W) != 0;
  }
  return n;
}

void expect_invariant(const std::vector<SeqSpec>& specs, const Geometry& g, uint32_t seed, const std::string& what) {
  constexpr int32_t kBlock = 16;
  const BuiltBatch b = testing::build_batch(specs, kBlock, seed, /*interleave=*/true);
  ASSERT_TRUE(b.batch().validate(b.n_blocks, b.block_size).ok()) << what;
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist;
  const int64_t cache_elems = static_cast<int64_t>(b.n_blocks) * kBlock * g.n_head_kv * g.head_dim;
  std::vector<uint16_t> kh(cache_elems), vh(cache_elems);
  for (uint16_t& x : kh) x = fp32_to_fp16(dist(rng));
  for (uint16_t& x : vh) x = fp32_to_fp16(dist(rng));
  const Cache cache(kh, vh);
  const int64_t W = g.q_width();
  std::vector<float> q(b.token_seq.size() * W);
  for (float& x : q) x = dist(rng);

  std::vector<int32_t> all(b.seqs.size());
  for (size_t s = 0; s < all.size(); ++s) all[s] = static_cast<int32_t>(s);
  const OwnedBatch whole_batch = select_sequences(b, all);
  std::string why;
  const std::vector<float> whole = run(whole_batch, q, cache, g, kBlock, 0, &why);
  ASSERT_FALSE(whole.empty()) << what << ": " << why;

  // The whole batch at a larger context capacity (more, empty, key slices).
  const std::vector<float> wide = run(whole_batch, q, cache, g, kBlock, 32768, &why);
  ASSERT_FALSE(wide.empty()) << what << ": " << why;
  EXPECT_EQ(count_differing_rows(whole_batch, wide, whole, W), 0) << what << ": capacity 32768";

  for (int32_t s : all) {
    const OwnedBatch alone = select_sequences(b, {s});
    const std::vector<float> got = run(alone, q, cache, g, kBlock, 0, &why);
    ASSERT_FALSE(got.empty()) << what << ": " << why;
    EXPECT_EQ(count_differing_rows(alone, got, whole, W), 0) << what << ": sequence " << s << " alone";
  }
  int decode_rows = 0, differing = 0;
  for (size_t t = 0; t < b.token_seq.size(); ++t) {
    if (b.seqs[b.token_seq[t]].mask != kCausal) continue;
    const OwnedBatch row = as_decode_row(b, t);
    const std::vector<float> got = run(row, q, cache, g, kBlock, 0, &why);
    ASSERT_FALSE(got.empty()) << what << ": " << why;
    differing += count_differing_rows(row, got, whole, W);
    ++decode_rows;
  }
  EXPECT_EQ(differing, 0) << what << ": of " << decode_rows << " causal rows run as one-row decodes";

  // Every draft-tree node gives the bits plain decoding gives the same token at the same position.
  int tree_rows = 0, tree_differing = 0;
  for (size_t t = 0; t < b.token_seq.size(); ++t) {
    if (b.seqs[b.token_seq[t]].mask != kTree) continue;
    PlainTreeRow plain;
    as_plain_decode_of_tree_row(b, t, kh, vh, static_cast<int64_t>(g.n_head_kv) * g.head_dim, &plain);
    const Cache plain_cache(plain.k, plain.v);
    const std::vector<float> got = run(plain.batch, q, plain_cache, g, kBlock, 0, &why);
    ASSERT_FALSE(got.empty()) << what << ": " << why;
    tree_differing += count_differing_rows(plain.batch, got, whole, W);
    ++tree_rows;
  }
  EXPECT_EQ(tree_differing, 0) << what << ": of " << tree_rows << " tree rows against plain decoding of their chain";
}

// The automatic choice (the tensor-core kernel on fixed slices) and the f32 split-K kernel on the same slices.
constexpr cuda::AttentionKernel kFixedKernels[] = {cuda::AttentionKernel::kAuto, cuda::AttentionKernel::kSplitFixed};

TEST(CudaAttentionInvariance, RowsGiveTheSameBitsAloneOrBatched) {
  SAKER_REQUIRE_GPU();
  // Decode rows at contexts on and off slice boundaries, verify chains of 16 and 64 rows, a draft tree.
  const std::vector<SeqSpec> mixed = {{1000, 1, kCausal}, {300, 16, kCausal}, {5000, 1, kCausal},
                                      {40, 64, kCausal},  {700, 12, kTree},   {255, 5, kCausal},
                                      {127, 20, kTree}};  // a tree across a slice boundary
  for (cuda::AttentionKernel k : kFixedKernels) {
    const std::string name = k == cuda::AttentionKernel::kAuto ? "auto" : "f32";
    Geometry g;
    g.kernel = k;
    expect_invariant(mixed, g, 1, "8B geometry " + name);
    Geometry wide_heads = g;  // head_dim 256, GQA group 2 (Gemma-like)
    wide_heads.n_head = 8;
    wide_heads.n_head_kv = 4;
    wide_heads.head_dim = 256;
    expect_invariant(mixed, wide_heads, 2, "head_dim 256 " + name);
    Geometry small = g;  // head_dim 64, no GQA: more rows per block
    small.n_head = 4;
    small.n_head_kv = 4;
    small.head_dim = 64;
    expect_invariant(mixed, small, 3, "head_dim 64 " + name);
  }
}

TEST(CudaAttentionInvariance, SlidingWindowRowsGiveTheSameBitsAloneOrBatched) {
  SAKER_REQUIRE_GPU();
  // The window's first key falls inside a tile: keys below it load as zeros and tiles stay where they are.
  for (cuda::AttentionKernel k : kFixedKernels) {
    Geometry g;
    g.window = 100;
    g.kernel = k;
    expect_invariant({{1000, 1, kCausal}, {300, 16, kCausal}, {37, 40, kCausal}, {700, 8, kTree}}, g, 4,
                     std::string("window 100 ") + (k == cuda::AttentionKernel::kAuto ? "auto" : "f32"));
  }
}

}  // namespace
}  // namespace saker
