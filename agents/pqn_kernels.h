// The per-element work of the PQN loop that is not the network's: storing a rollout step, the
// Q(lambda) targets computed backwards over each env's column, and the shuffled minibatches.
// Written once as CUGYM_HD functions; agent_ops_cpu.cpp and agent_ops_cuda.cu run them.
#pragma once

#include <cstdint>

#include "agents/exploration_kernels.h"
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

// One minibatch of rollout rows, gathered contiguous for the network.
struct RolloutBatch {
  float* obs = nullptr;        // [size][obs_dim]
  int32_t* actions = nullptr;  // [size]
  float* targets = nullptr;    // [size]
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

// Env i's Q(lambda) targets (Peng's Q(lambda), as CleanRL's pqn.py), backwards from the last step:
//   G_t = r_t                                           where the episode terminated at t,
//   G_t = r_t + gamma * V_t                             where it was truncated, and at t = T - 1,
//   G_t = r_t + gamma * (lambda * G_{t+1} + (1 - lambda) * V_t)  otherwise,
// with r_t the reward times reward_scale and V_t = max_a Q(next_obs_t, a). Truncation bootstraps
// from the final observation's value (the reference implementations treat it as termination).
// In double, with FMA contraction off (cugym_strict_fp): the same bits on every back end.
CUGYM_HD inline void QLambdaColumn(const RolloutArrays& r, double gamma, double lambda, double reward_scale,
                                   int64_t i) {
  double g = 0.0;
  for (int64_t t = r.steps - 1; t >= 0; --t) {
    const int64_t at = t * r.envs + i;
    const double reward = static_cast<double>(r.rewards[at]) * reward_scale;
    const double value = r.next_values[at];
    if (r.terminated[at]) {
      g = reward;
    } else if (r.truncated[at] || t == r.steps - 1) {
      g = reward + gamma * value;
    } else {
      g = reward + gamma * (lambda * g + (1.0 - lambda) * value);
    }
    r.targets[at] = static_cast<float>(g);
  }
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

// Element e of the lanes' minibatches, `size` rows per lane (lane l's after lane l - 1's): row
// e % size of lane l's minibatch that starts at position `first` of its epoch's permutation of
// its own rollout, keyed by its seed (seeds[l]), as its solo run's.
CUGYM_HD inline void GatherRolloutRow(const RolloutArrays& r, const RolloutBatch& b, int64_t first, int64_t size,
                                      const StepCounters* counters, const uint64_t* seeds, int64_t epoch, int64_t e) {
  const int64_t lane = e / size, j = e % size;
  const uint32_t rows = static_cast<uint32_t>(r.steps * (r.envs / r.lanes));
  const uint32_t key = EpochKey(seeds[lane], counters, epoch);
  const int64_t row = LaneRolloutRow(r, lane, ShuffledIndex(static_cast<uint32_t>(first + j), rows, key));
  const float* src = r.obs + row * r.obs_dim;
  float* dst = b.obs + e * r.obs_dim;
  for (int64_t k = 0; k < r.obs_dim; ++k) dst[k] = src[k];
  b.actions[e] = r.actions[row];
  b.targets[e] = r.targets[row];
}

// Element e of the lanes' next observations staged for valuing: rows first.. first + count - 1
// of each lane's own rollout, lane l's at l count.. (the replicated network's layout).
CUGYM_HD inline void StageNextObsRow(const RolloutArrays& r, int64_t first, int64_t count, float* staged, int64_t e) {
  const int64_t row = LaneRolloutRow(r, e / count, first + e % count);
  const float* src = r.next_obs + row * r.obs_dim;
  float* dst = staged + e * r.obs_dim;
  for (int64_t k = 0; k < r.obs_dim; ++k) dst[k] = src[k];
}

// The value of staged row e back to its rollout row.
CUGYM_HD inline void UnstageValue(const RolloutArrays& r, int64_t first, int64_t count, const float* values,
                                  int64_t e) {
  r.next_values[LaneRolloutRow(r, e / count, first + e % count)] = values[e];
}

}  // namespace cugym::agent
