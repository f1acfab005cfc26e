// The on-policy family's per-element work on a rollout (on_policy_agent.h: PQN and PPO): storing a
// rollout step, the shuffle of each epoch, and the one gather of minibatch rows from each lane's
// own rollout. Written once as CUGYM_HD functions; agent_ops_cpu.cpp and agent_ops_cuda.cu run
// them.
#pragma once

#include <cstdint>
#include <cstring>

#include "agents/common/exploration_kernels.h"
#include "core/macros.h"
#include "core/rng.h"

namespace cugym::agent {

// A rollout of `steps` vector steps of `envs` envs, step-major: element (t, i) at t * envs + i,
// observation rows of obs_dim floats. The envs are `lanes` lanes of envs / lanes each (agent.h):
// lane l's own rollout, as its solo run lays it out (steps x n), is the n columns from l n on.
struct RolloutArrays {
  float* obs = nullptr;           // [steps][envs][obs_dim] the observations the actions were taken at
  float* next_obs = nullptr;      // [steps][envs][obs_dim] the step's next observation: the final one where done
  int32_t* actions = nullptr;     // [steps][envs]
  float* rewards = nullptr;       // [steps][envs]
  uint8_t* terminated = nullptr;  // [steps][envs]
  uint8_t* truncated = nullptr;   // [steps][envs]
  float* next_values = nullptr;   // [steps][envs] max_a Q(next_obs, a), from the network before its updates
  float* targets = nullptr;       // [steps][envs] the Q(lambda) targets
  int64_t steps = 0, envs = 0, obs_dim = 0, lanes = 1;
};

// Env i's part of rollout step t after the env stepped: its reward and flags, and its next
// observation (the episode's final one where it ended, the env's new one otherwise). The
// observation it acted on was copied before the step.
CUGYM_HD inline void StoreRolloutStep(const RolloutArrays& r, int64_t t, const float* obs, const float* final_obs,
                                      const float* rewards, const uint8_t* terminated, const uint8_t* truncated,
                                      int64_t i) {
  const int64_t at = t * r.envs + i;
  const bool done = (terminated[i] | truncated[i]) != 0;
  const float* next = (done ? final_obs : obs) + i * r.obs_dim;
  float* out = r.next_obs + at * r.obs_dim;
  for (int64_t k = 0; k < r.obs_dim; ++k) out[k] = next[k];
  r.rewards[at] = rewards[i];
  r.terminated[at] = terminated[i];
  r.truncated[at] = truncated[i];
}

// A pseudo-random permutation of [0, size), size <= 2^30: a 4-round Feistel network over the
// smallest even number of bits that covers size, applied again while the value falls outside
// (cycle walking keeps it a bijection). Keyed by `key`; the same on every back end.
CUGYM_HD inline uint32_t ShuffledIndex(uint32_t j, uint32_t size, uint32_t key) {
  int half = 1;
  while ((uint64_t{1} << (2 * half)) < size) ++half;
  const uint32_t mask = (1u << half) - 1u;
  uint32_t x = j;
  do {
    uint32_t left = x >> half, right = x & mask;
    for (uint32_t round = 0; round < 4; ++round) {
      const uint32_t next = left ^ (Mix32(right ^ key ^ (round * 0x9E3779B9u)) & mask);
      left = right;
      right = next;
    }
    x = (left << half) | right;
  } while (x >= size);
  return x;
}

// The permutation key of epoch `epoch` of the rollout the device's counters have just finished
// (vector_steps counts rollout steps, so each rollout gets its own keys).
CUGYM_HD inline uint32_t EpochKey(uint64_t seed, const StepCounters* counters, int64_t epoch) {
  return StepKey(seed, RngStream::kShuffle,
                 static_cast<uint64_t>(counters->vector_steps) * 1024u + static_cast<uint64_t>(epoch));
}

// Row q of lane l's own rollout (t n + i, the solo run's) in the lanes' rollout.
CUGYM_HD inline int64_t LaneRolloutRow(const RolloutArrays& r, int64_t lane, int64_t q) {
  const int64_t n = r.envs / r.lanes;
  return (q / n) * r.envs + lane * n + q % n;
}

// The columns one minibatch gathers from a rollout (RolloutOps::GatherMinibatch): each a [steps][envs]
// array of rows of `width` 4-byte elements (floats or int32s, copied as bits) and its destination,
// [lanes size][width] (lane l's rows after lane l - 1's).
struct GatherColumns {
  static constexpr int kMax = 8;
  const void* src[kMax] = {};
  void* dst[kMax] = {};
  int64_t width[kMax] = {};
  int num = 0;

  void Add(const void* from, void* to, int64_t elements_per_row) {
    src[num] = from;
    dst[num] = to;
    width[num] = elements_per_row;
    ++num;
  }
};

// Element e of the lanes' minibatches, `size` rows per lane: row e % size of lane l's minibatch
// that starts at position `first` of its epoch's permutation of its own rollout, keyed by its seed
// (seeds[l]), as its solo run's; every column's row copied.
CUGYM_HD inline void GatherRow(const RolloutArrays& r, const GatherColumns& c, int64_t first, int64_t size,
                               const StepCounters* counters, const uint64_t* seeds, int64_t epoch, int64_t e) {
  const int64_t lane = e / size, j = e % size;
  const uint32_t rows = static_cast<uint32_t>(r.steps * (r.envs / r.lanes));
  const uint32_t key = EpochKey(seeds[lane], counters, epoch);
  const int64_t row = LaneRolloutRow(r, lane, ShuffledIndex(static_cast<uint32_t>(first + j), rows, key));
  for (int k = 0; k < c.num; ++k) {
    const int64_t bytes = c.width[k] * 4;
    memcpy(static_cast<char*>(c.dst[k]) + e * bytes, static_cast<const char*>(c.src[k]) + row * bytes, bytes);
  }
}

}  // namespace cugym::agent
