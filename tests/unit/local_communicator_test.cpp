// LocalGroup (in-process tensor-parallel ranks on threads) and RankThreads: all_reduce_sum leaves identical
// bits on every rank, equal to the rank-order sum, for sizes that divide by nothing and over many rounds in a
// row; all_gather concatenates in rank order; an aborted group releases every waiting rank; each rank's ops
// run on its own thread pool.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <vector>

#include "core/thread_pool.h"
#include "parallel/local_communicator.h"
#include "parallel/rank_threads.h"

namespace saker {
namespace {

// Values whose sums round differently in different orders (mixed magnitudes and signs).
float value(int rank, int round, int64_t i) {
  const uint32_t h = static_cast<uint32_t>((i + 1) * 2654435761u ^ (rank + 1) * 40503u ^ (round + 1) * 9973u);
  const float mag = (h & 7) == 0 ? 1e6f : (h & 7) == 1 ? 1e-6f : 1.0f;
  return mag * (static_cast<float>(h % 20011) / 10005.0f - 1.0f);
}

TEST(LocalCommunicator, AllReduceIsTheRankOrderSumWithIdenticalBitsOnEveryRank) {
  for (int N : {1, 2, 3, 4, 7}) {
    LocalGroup group(N);
    RankThreads threads(N, 1);
    const std::vector<int64_t> sizes = {1, 2, 5, 7, 13, 97, 1000, 4099};
    constexpr int kRounds = 50;
    // results[rank][round][size index]: every rank's buffer after each all_reduce.
    std::vector<std::vector<std::vector<float>>> results(N, std::vector<std::vector<float>>(kRounds * sizes.size()));
    std::atomic<int> failures{0};
    threads.run([&](int r) {
      Communicator& c = group.rank(r);
      EXPECT_EQ(c.rank(), r);
      EXPECT_EQ(c.size(), N);
      for (int round = 0; round < kRounds; ++round) {
        for (size_t s = 0; s < sizes.size(); ++s) {
          std::vector<float> buf(sizes[s]);
          for (int64_t i = 0; i < sizes[s]; ++i) buf[i] = value(r, round, i);
          if (!c.all_reduce_sum(buf.data(), sizes[s]).ok()) ++failures;
          results[r][round * sizes.size() + s] = std::move(buf);
        }
      }
    });
    ASSERT_EQ(failures.load(), 0);
    for (int round = 0; round < kRounds; ++round) {
      for (size_t s = 0; s < sizes.size(); ++s) {
        const std::vector<float>& r0 = results[0][round * sizes.size() + s];
        for (int64_t i = 0; i < sizes[s]; ++i) {
          float expect = value(0, round, i);
          for (int k = 1; k < N; ++k) expect += value(k, round, i);
          ASSERT_EQ(std::memcmp(&r0[i], &expect, sizeof(float)), 0) << "N " << N << " round " << round << " i " << i;
        }
        for (int r = 1; r < N; ++r) {
          ASSERT_EQ(std::memcmp(results[r][round * sizes.size() + s].data(), r0.data(), sizes[s] * sizeof(float)), 0)
              << "rank " << r << " of " << N << " differs in round " << round;
        }
      }
    }
  }
}

TEST(LocalCommunicator, AllGatherConcatenatesInRankOrder) {
  constexpr int N = 3;
  constexpr int64_t n = 11;
  LocalGroup group(N);
  RankThreads threads(N, 1);
  std::vector<std::vector<float>> recv(N, std::vector<float>(N * n, -1.0f));
  threads.run([&](int r) {
    for (int round = 0; round < 20; ++round) {
      std::vector<float> send(n);
      for (int64_t i = 0; i < n; ++i) send[i] = static_cast<float>(1000 * round + 100 * r + i);
      ASSERT_TRUE(group.rank(r).all_gather(send.data(), n, recv[r].data()).ok());
      for (int k = 0; k < N; ++k) {
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(recv[r][k * n + i], static_cast<float>(1000 * round + 100 * k + i));
      }
      ASSERT_TRUE(group.rank(r).barrier().ok());
    }
  });
}

TEST(LocalCommunicator, AbortReleasesTheRanksWaitingInACollective) {
  constexpr int N = 4;
  LocalGroup group(N);
  RankThreads threads(N, 1);
  std::vector<int> ok(N, -1);
  threads.run([&](int r) {
    if (r == 2) {  // fails before its collective
      group.abort();
      return;
    }
    float x = 1.0f;
    ok[r] = group.rank(r).all_reduce_sum(&x, 1).ok() ? 1 : 0;
  });
  EXPECT_EQ(ok[0], 0);
  EXPECT_EQ(ok[1], 0);
  EXPECT_EQ(ok[3], 0);
  group.reset();  // the next forward works again
  std::vector<float> sums(N, 0.0f);
  threads.run([&](int r) {
    float x = static_cast<float>(r + 1);
    EXPECT_TRUE(group.rank(r).all_reduce_sum(&x, 1).ok());
    sums[r] = x;
  });
  for (int r = 0; r < N; ++r) EXPECT_EQ(sums[r], 10.0f);
}

TEST(RankThreads, EachRankRunsOnItsOwnPool) {
  RankThreads threads(3, 2);
  EXPECT_EQ(threads.size(), 3);
  EXPECT_EQ(threads.threads_per_rank(), 2);
  std::vector<ThreadPool*> pools(3, nullptr);
  threads.run([&](int r) { pools[r] = &ThreadPool::current(); });
  EXPECT_NE(pools[0], &ThreadPool::global());
  EXPECT_NE(pools[0], pools[1]);
  EXPECT_NE(pools[1], pools[2]);
  EXPECT_EQ(pools[0]->size(), 2);
  EXPECT_EQ(&ThreadPool::current(), &ThreadPool::global());  // the caller's scope ended with run()
}

}  // namespace
}  // namespace saker
