// Counter-based random numbers, identical on the CPU and the GPU.
//
// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11) maps a
// 128-bit counter and a 64-bit key to 128 random bits with no state. cugym keys it by the run's
// seed and builds the counter from (stream, env index, per-env counter), so env i's draws depend
// only on (seed, i, counter): the same on every back end and for any number of envs >= i + 1.
// The only state kept per env is the 32-bit counter.
#pragma once

#include <cstdint>

#include "core/macros.h"

namespace cugym {

struct U32x4 {
  uint32_t v[4];
};

CUGYM_HD CUGYM_FORCEINLINE uint32_t MulHiLo(uint32_t a, uint32_t b, uint32_t* hi) {
  uint64_t product = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(product >> 32);
  return static_cast<uint32_t>(product);
}

// Philox4x32 with 10 rounds.
CUGYM_HD inline U32x4 Philox4x32(U32x4 ctr, uint32_t key0, uint32_t key1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, hi1;
    uint32_t lo0 = MulHiLo(kM0, ctr.v[0], &hi0);
    uint32_t lo1 = MulHiLo(kM1, ctr.v[2], &hi1);
    ctr = U32x4{{hi1 ^ ctr.v[1] ^ key0, lo1, hi0 ^ ctr.v[3] ^ key1, lo0}};
    key0 += kW0;
    key1 += kW1;
  }
  return ctr;
}

// Uniform float in [0, 1) from the top 24 bits: every value is exactly representable.
CUGYM_HD CUGYM_FORCEINLINE float U32ToUnitFloat(uint32_t bits) {
  return static_cast<float>(bits >> 8) * (1.0f / 16777216.0f);
}

// Independent streams drawn from the same (seed, index): env dynamics (reset and step noise), the
// policies that act for the user (random actions, epsilon-greedy), replay sampling and PQN's
// minibatch shuffles.
enum class RngStream : uint32_t { kEnv = 0, kActions = 1, kExploration = 2, kReplay = 3, kShuffle = 4 };

// Draws for one env inside one call of reset or step. Created from the env's stored counter;
// the caller stores counter() back afterwards. Each block of 4 draws uses one counter value.
class Rng {
 public:
  CUGYM_HD Rng(uint64_t seed, uint64_t env_index, uint32_t counter, RngStream stream = RngStream::kEnv)
      : key0_(static_cast<uint32_t>(seed)),
        key1_(static_cast<uint32_t>(seed >> 32)),
        env_lo_(static_cast<uint32_t>(env_index)),
        env_hi_(static_cast<uint32_t>(env_index >> 32) ^ (static_cast<uint32_t>(stream) << 24)),
        counter_(counter) {}

  CUGYM_HD uint32_t NextU32() {
    if (used_ == 4) {
      block_ = Philox4x32(U32x4{{counter_, env_lo_, env_hi_, 0x63756779u /* "cugy" */}}, key0_, key1_);
      ++counter_;
      used_ = 0;
    }
    uint32_t out = used_ == 0 ? block_.v[0] : used_ == 1 ? block_.v[1] : used_ == 2 ? block_.v[2] : block_.v[3];
    ++used_;
    return out;
  }
  // Uniform in [0, 1).
  CUGYM_HD float Uniform() { return U32ToUnitFloat(NextU32()); }
  // Uniform in [low, high).
  CUGYM_HD float Uniform(float low, float high) { return low + (high - low) * Uniform(); }
  // Uniform integer in [0, n), n >= 1 (Lemire's multiply-shift; bias below 2^-32 * n).
  CUGYM_HD uint32_t UniformInt(uint32_t n) {
    return static_cast<uint32_t>((static_cast<uint64_t>(NextU32()) * n) >> 32);
  }
  // The counter to store for the next call: draws never repeat within a run.
  CUGYM_HD uint32_t counter() const { return counter_; }

 private:
  uint32_t key0_, key1_, env_lo_, env_hi_;
  uint32_t counter_;
  U32x4 block_{{0, 0, 0, 0}};
  int used_ = 4;
};

// A cheap counter-based hash for one draw per env per step where speed matters more than
// Philox's quality margin (random-policy actions in benchmarks): a lowbias32-style finaliser
// over (seed, stream, step) folded once on the host, then one finaliser per env. Pure 32-bit
// integer ops, so it vectorizes.
CUGYM_HD CUGYM_FORCEINLINE uint32_t Mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

// Per-step key derived once on the host from (seed, stream, step); combined with the env index.
CUGYM_HD inline uint32_t StepKey(uint64_t seed, RngStream stream, uint64_t step) {
  uint32_t k = Mix32(static_cast<uint32_t>(seed) ^ 0x9E3779B9u);
  k = Mix32(k ^ static_cast<uint32_t>(seed >> 32) ^ (static_cast<uint32_t>(stream) * 0x85ebca6bu));
  k = Mix32(k ^ static_cast<uint32_t>(step));
  return Mix32(k ^ static_cast<uint32_t>(step >> 32) ^ 0xC2B2AE35u);
}

// One draw for env `env_index` (below 2^32) at the step whose StepKey is `step_key`.
CUGYM_HD CUGYM_FORCEINLINE uint32_t HashDraw(uint32_t step_key, uint32_t env_index) {
  return Mix32(env_index * 0x9E3779B9u + step_key);
}

}  // namespace cugym
