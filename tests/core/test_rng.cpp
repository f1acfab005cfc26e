// Counter-based RNG: Philox known-answer vectors, stream independence, uniformity.
#include "core/rng.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

namespace cugym {
namespace {

// Known-answer vectors of Philox4x32-10 from the Random123 distribution (kat_vectors).
TEST(Philox, MatchesRandom123KnownAnswers) {
  U32x4 zero = Philox4x32(U32x4{{0, 0, 0, 0}}, 0, 0);
  EXPECT_EQ(zero.v[0], 0x6627e8d5u);
  EXPECT_EQ(zero.v[1], 0xe169c58du);
  EXPECT_EQ(zero.v[2], 0xbc57ac4cu);
  EXPECT_EQ(zero.v[3], 0x9b00dbd8u);
  U32x4 ones = Philox4x32(U32x4{{~0u, ~0u, ~0u, ~0u}}, ~0u, ~0u);
  EXPECT_EQ(ones.v[0], 0x408f276du);
  EXPECT_EQ(ones.v[1], 0x41c83b0eu);
  EXPECT_EQ(ones.v[2], 0xa20bc7c6u);
  EXPECT_EQ(ones.v[3], 0x6d5451fdu);
  U32x4 pi = Philox4x32(U32x4{{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}}, 0xa4093822u, 0x299f31d0u);
  EXPECT_EQ(pi.v[0], 0xd16cfe09u);
  EXPECT_EQ(pi.v[1], 0x94fdccebu);
  EXPECT_EQ(pi.v[2], 0x5001e420u);
  EXPECT_EQ(pi.v[3], 0x24126ea1u);
}

TEST(Rng, CounterAdvancesOncePerFourDraws) {
  Rng rng(42, 3, 10);
  EXPECT_EQ(rng.counter(), 10u);
  rng.NextU32();
  EXPECT_EQ(rng.counter(), 11u);
  for (int i = 0; i < 3; ++i) rng.NextU32();
  EXPECT_EQ(rng.counter(), 11u);
  rng.NextU32();
  EXPECT_EQ(rng.counter(), 12u);
}

TEST(Rng, SameKeySameDrawsDifferentKeysDiffer) {
  auto draws = [](uint64_t seed, uint64_t env, uint32_t counter, RngStream stream) {
    Rng rng(seed, env, counter, stream);
    std::vector<uint32_t> out;
    for (int i = 0; i < 8; ++i) out.push_back(rng.NextU32());
    return out;
  };
  EXPECT_EQ(draws(1, 2, 3, RngStream::kEnv), draws(1, 2, 3, RngStream::kEnv));
  EXPECT_NE(draws(1, 2, 3, RngStream::kEnv), draws(2, 2, 3, RngStream::kEnv));
  EXPECT_NE(draws(1, 2, 3, RngStream::kEnv), draws(1, 3, 3, RngStream::kEnv));
  EXPECT_NE(draws(1, 2, 3, RngStream::kEnv), draws(1, 2, 4, RngStream::kEnv));
  EXPECT_NE(draws(1, 2, 3, RngStream::kEnv), draws(1, 2, 3, RngStream::kActions));
  EXPECT_NE(draws(1ull << 40, 2, 3, RngStream::kEnv), draws(0, 2, 3, RngStream::kEnv));
  EXPECT_NE(draws(1, 2ull << 33, 3, RngStream::kEnv), draws(1, 2, 3, RngStream::kEnv));
}

TEST(Rng, UniformIsInRangeWithTheRightMoments) {
  Rng rng(7, 0, 0);
  const int n = 200000;
  double sum = 0, sum_sq = 0;
  for (int i = 0; i < n; ++i) {
    float u = rng.Uniform(-0.05f, 0.05f);
    ASSERT_GE(u, -0.05f);
    ASSERT_LT(u, 0.05f);
    sum += u;
    sum_sq += double(u) * u;
  }
  EXPECT_NEAR(sum / n, 0.0, 5 * 0.0289 / std::sqrt(n));
  EXPECT_NEAR(sum_sq / n, 0.01 / 12, 2e-5);  // variance of U(-0.05, 0.05)
}

TEST(Rng, UniformIntCoversTheRangeEvenly) {
  Rng rng(9, 1, 0);
  int counts[3] = {0, 0, 0};
  for (int i = 0; i < 30000; ++i) counts[rng.UniformInt(3)]++;
  for (int c : counts) EXPECT_NEAR(c, 10000, 400);
}

TEST(HashDraw, StepKeysAndEnvsGiveBalancedDistinctBits) {
  std::set<uint32_t> keys;
  for (uint64_t step = 0; step < 1000; ++step) keys.insert(StepKey(5, RngStream::kActions, step));
  EXPECT_EQ(keys.size(), 1000u);
  EXPECT_NE(StepKey(5, RngStream::kActions, 0), StepKey(6, RngStream::kActions, 0));
  EXPECT_NE(StepKey(5, RngStream::kActions, 0), StepKey(5, RngStream::kExploration, 0));
  // Each of the 32 bits is set about half the time over (step, env) pairs.
  int ones[32] = {};
  const int steps = 200, envs = 200;
  for (int s = 0; s < steps; ++s) {
    uint32_t key = StepKey(1, RngStream::kActions, s);
    for (uint32_t e = 0; e < envs; ++e) {
      uint32_t bits = HashDraw(key, e);
      for (int b = 0; b < 32; ++b) ones[b] += (bits >> b) & 1;
    }
  }
  for (int b = 0; b < 32; ++b) EXPECT_NEAR(ones[b], steps * envs / 2, 600) << "bit " << b;
}

}  // namespace
}  // namespace cugym
