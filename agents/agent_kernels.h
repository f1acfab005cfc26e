// The per-element work of the DQN loop that is not the network's: replay insertion and sampling,
// epsilon-greedy action mixing, TD targets, episode bookkeeping. Written once as CUGYM_HD
// functions; agent_ops_cpu.cpp and agent_ops_cuda.cu run them over their ranges.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/fastmath.h"
#include "core/macros.h"
#include "core/rng.h"

namespace cugym::agent {

struct ReplayArrays {
  float* obs;        // [capacity, obs_dim]
  float* next_obs;   // [capacity, obs_dim]
  int32_t* actions;  // [capacity]
  float* rewards;    // [capacity]
  float* dones;      // [capacity] 1 for a terminal transition (no bootstrap), else 0
  int64_t* size;     // [1] transitions stored so far (at most capacity)
  uint32_t* draws;   // [1] minibatches sampled so far: keys the sampling RNG
  int64_t capacity;
  int obs_dim;
};

// Transition i of a vector step goes to row (position + i) % capacity. next_obs is the true last
// observation (final_obs) when the env ended in this step, so truncated episodes bootstrap from
// their real final state; only termination stops the bootstrap.
// Transition 0 also grows the stored size (kept on the device, so sampling can run inside a CUDA
// graph without the host passing it).
CUGYM_HD inline void AddTransition(const ReplayArrays& r, int64_t position, int64_t i, int64_t n, const float* obs,
                                   const int32_t* actions, const float* rewards, const float* next_obs,
                                   const float* final_obs, const uint8_t* terminated, const uint8_t* truncated) {
  if (i == 0) *r.size = *r.size + n < r.capacity ? *r.size + n : r.capacity;
  const int64_t row = (position + i) % r.capacity;
  const bool ended = (terminated[i] | truncated[i]) != 0;
  const float* next = ended ? final_obs : next_obs;
  for (int k = 0; k < r.obs_dim; ++k) {
    r.obs[row * r.obs_dim + k] = obs[i * r.obs_dim + k];
    r.next_obs[row * r.obs_dim + k] = next[i * r.obs_dim + k];
  }
  r.actions[row] = actions[i];
  r.rewards[row] = rewards[i];
  r.dones[row] = terminated[i] ? 1.0f : 0.0f;
}

struct Minibatch {
  float* obs;
  float* next_obs;
  int32_t* actions;
  float* rewards;
  float* dones;
};

// Row j of the next minibatch: a uniform index in [0, size) from Philox keyed by the seed,
// (stream kReplay, j) and the draw counter, then a gather. Size and counter are read on the
// device (AdvanceDraw increments the counter afterwards, in a launch of its own).
CUGYM_HD inline void SampleTransition(const ReplayArrays& r, const Minibatch& b, uint64_t seed, int64_t j) {
  const int64_t size = *r.size;
  Rng rng(seed, static_cast<uint64_t>(j), *r.draws, RngStream::kReplay);
  const uint64_t wide = (static_cast<uint64_t>(rng.NextU32()) << 32) | rng.NextU32();
  const int64_t row = static_cast<int64_t>(wide % static_cast<uint64_t>(size));
  for (int k = 0; k < r.obs_dim; ++k) {
    b.obs[j * r.obs_dim + k] = r.obs[row * r.obs_dim + k];
    b.next_obs[j * r.obs_dim + k] = r.next_obs[row * r.obs_dim + k];
  }
  b.actions[j] = r.actions[row];
  b.rewards[j] = r.rewards[row];
  b.dones[j] = r.dones[row];
}

// Temporally extended exploration (ez-greedy, Dabney, Ostrovski and Barreto, ICLR 2021): an
// exploratory action is held for n steps with P(n >= k) = k^(1 - mu), n <= max_hold, instead of
// one. Per-env state lives on the device; held == nullptr means plain epsilon-greedy.
struct ExploreHold {
  int32_t* held = nullptr;  // [n] action being repeated
  int32_t* left = nullptr;  // [n] further steps to repeat it
  float mu = 0.0f;          // tail exponent of the duration, > 1
  int32_t max_hold = 1;
};

// Heavy-tailed duration from a uniform u in (0, 1]: floor(u^(-1 / (mu - 1))), in [1, max_hold].
// The power goes through Log2/Exp2 (core/fastmath.h), not pow: the same bits on CPU and GPU, so
// both back ends floor it to the same hold.
CUGYM_HD inline int32_t HoldDuration(float u, float mu, int32_t max_hold) {
  const double y = -Log2(static_cast<double>(u)) / (static_cast<double>(mu) - 1.0);  // log2 of the duration, >= 0
  if (y >= 31.0) return max_hold;  // 2^31 exceeds any max_hold
  const double n = Exp2(y);
  return n >= static_cast<double>(max_hold) ? max_hold : static_cast<int32_t>(n);
}

// Env i's action: with probability epsilon a uniform random one in place of the greedy action
// already in actions[i]; with a hold, a held action is repeated first and epsilon is only tested
// when no hold is running.
CUGYM_HD inline void EpsilonGreedy(int32_t* actions, float epsilon, int num_actions, uint32_t step_key,
                                   const ExploreHold& hold, int64_t i) {
  if (hold.held && hold.left[i] > 0) {
    --hold.left[i];
    actions[i] = hold.held[i];
    return;
  }
  const uint32_t coin = HashDraw(step_key, static_cast<uint32_t>(i));
  if (U32ToUnitFloat(coin) >= epsilon) return;
  const uint32_t pick = HashDraw(step_key ^ 0x5bd1e995u, static_cast<uint32_t>(i));
  actions[i] = static_cast<int32_t>((static_cast<uint64_t>(pick) * static_cast<uint32_t>(num_actions)) >> 32);
  if (hold.held) {
    const uint32_t draw = HashDraw(step_key ^ 0x27d4eb2fu, static_cast<uint32_t>(i));
    const float u = 1.0f - U32ToUnitFloat(draw);  // (0, 1]
    hold.held[i] = actions[i];
    hold.left[i] = HoldDuration(u, hold.mu, hold.max_hold) - 1;
  }
}

// y = r + gamma * (1 - done) * next_q.
CUGYM_HD inline void TdTarget(const float* rewards, const float* dones, const float* next_q, float gamma, float* targets,
                              int64_t j) {
  targets[j] = rewards[j] + gamma * (1.0f - dones[j]) * next_q[j];
}

// Finished episodes, appended on the device: slot (count + k) % capacity of the ring holds the
// k-th episode that ended in a step; the host reads the ring and the count every few thousand
// steps.
struct EpisodeRing {
  float* returns;
  int32_t* lengths;
  unsigned long long* count;  // episodes appended so far (one value)
  int64_t capacity;
};

// The k-th of `total` episodes that ended in one step (k counts the ended envs in env order),
// stored at slot (count + k) % capacity, `count` as before the step. When more than `capacity`
// end at once only the last `capacity` are stored, so no two writers share a slot and the ring
// is the same whatever order the writers run in.
CUGYM_HD inline void StoreEpisode(const EpisodeRing& ring, unsigned long long count, int64_t k, int64_t total,
                                  float episode_return, int32_t episode_length) {
  if (k < total - ring.capacity) return;
  const int64_t slot = static_cast<int64_t>((count + static_cast<unsigned long long>(k)) %
                                            static_cast<unsigned long long>(ring.capacity));
  ring.returns[slot] = episode_return;
  ring.lengths[slot] = episode_length;
}

}  // namespace cugym::agent
