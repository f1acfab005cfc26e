// The replay memory's per-element work: inserting a vector step's transitions into the ring,
// sampling a minibatch of n-step transitions (uniformly or by priority) and the importance weights
// of prioritized replay. Written once as CUGYM_HD functions; ReplayOps runs them on each back end,
// agents/off_policy/replay_memory.h owns the buffers they work on.
#pragma once

#include <cstdint>

#include "agents/off_policy/priority_tree.h"
#include "core/fastmath.h"
#include "core/macros.h"
#include "core/rng.h"

namespace cugym::agent {

struct ReplayArrays {
  float* obs;        // [capacity, obs_dim]
  float* next_obs;   // [capacity, obs_dim]
  int32_t* actions;  // [capacity]
  float* rewards;    // [capacity]
  float* terminals;  // [capacity] 1 for a terminal transition (no bootstrap), else 0
  uint8_t* ends;     // [capacity] 1 where the episode ended (terminated or truncated)
  int64_t* size;     // [1] transitions stored so far (at most capacity)
  int64_t* head;     // [1] the row the next vector step writes first
  uint32_t* draws;   // [1] minibatches sampled so far: keys the sampling RNG
  int64_t capacity;
  int obs_dim;
  int64_t stride;  // envs per vector step: env i's next transition is `stride` rows further on
  // Lanes: `lanes` replay memories of `capacity` rows each, one after the other in every array,
  // that share head, size and draw counter (an agent's lanes in lockstep, dqn.h). Lane l holds the
  // transitions of envs [l stride, (l + 1) stride) of a step and draws its minibatches with
  // lane_seeds[l] (a device array; null: every lane the seed Sample is given).
  int64_t lanes = 1;
  const uint64_t* lane_seeds = nullptr;
  // Continuous actions (SAC's): action_dim floats per row here, and actions unused; 0: int32 actions.
  float* action_values = nullptr;  // [capacity, action_dim]
  int action_dim = 0;
};

// Lane l of `r` as a replay memory of its own (its rows; head, size and counter shared).
CUGYM_HD inline ReplayArrays Lane(const ReplayArrays& r, int64_t lane) {
  ReplayArrays l = r;
  const int64_t rows = lane * r.capacity;
  l.obs += rows * r.obs_dim;
  l.next_obs += rows * r.obs_dim;
  l.actions += rows;
  l.rewards += rows;
  l.terminals += rows;
  l.ends += rows;
  if (l.action_values != nullptr) l.action_values += rows * r.action_dim;
  l.lanes = 1;
  l.lane_seeds = nullptr;
  return l;
}

// Transition i of a vector step goes to row (head + i) % capacity, head as the device holds it,
// so an env's consecutive transitions are `stride` (= n) rows apart, which n-step sampling relies
// on. next_obs is the true last observation (final_obs) when the env ended in this step, so
// truncated episodes bootstrap from their real final state; only termination stops the bootstrap.
// Head and size change only in AdvanceReplay, a launch of its own after this one's: no thread
// reads a head another thread has moved, and a CUDA graph replays the insertion without the host
// passing a position.
// With lanes, transition i is env i % stride's of lane i / stride. With continuous actions
// (r.action_dim > 0) the action is action_values' row i, and `actions` is not read.
CUGYM_HD inline void AddTransition(const ReplayArrays& r, int64_t i, const float* obs, const int32_t* actions,
                                   const float* rewards, const float* next_obs, const float* final_obs,
                                   const uint8_t* terminated, const uint8_t* truncated,
                                   const float* action_values = nullptr) {
  const int64_t lane = r.lanes > 1 ? i / r.stride : 0;
  const int64_t row = lane * r.capacity + (*r.head + i - lane * r.stride) % r.capacity;
  const bool ended = (terminated[i] | truncated[i]) != 0;
  const float* next = ended ? final_obs : next_obs;
  for (int k = 0; k < r.obs_dim; ++k) {
    r.obs[row * r.obs_dim + k] = obs[i * r.obs_dim + k];
    r.next_obs[row * r.obs_dim + k] = next[i * r.obs_dim + k];
  }
  if (r.action_dim > 0) {
    for (int k = 0; k < r.action_dim; ++k)
      r.action_values[row * r.action_dim + k] = action_values[i * r.action_dim + k];
  } else {
    r.actions[row] = actions[i];
  }
  r.rewards[row] = rewards[i];
  r.terminals[row] = terminated[i] ? 1.0f : 0.0f;
  r.ends[row] = ended ? 1 : 0;
}

// After the n insertions of a vector step (one thread; n per lane): the stored size grows and the
// head moves on.
CUGYM_HD inline void AdvanceReplay(const ReplayArrays& r, int64_t n) {
  *r.size = *r.size + n < r.capacity ? *r.size + n : r.capacity;
  *r.head = (*r.head + n) % r.capacity;
}

struct Minibatch {
  float* obs;
  float* next_obs;
  int32_t* actions;
  float* rewards;    // the n-step return r_t + gamma r_t+1 + ... (r_t for n_step 1)
  float* bootstrap;  // what multiplies max Q(next_obs): gamma^k after k rewards, 0 after a termination
  // Prioritized replay only (nullptr otherwise): the replay row of each sample, and its draw
  // probability, turned into its importance weight by ImportanceWeight.
  int64_t* rows = nullptr;
  float* weights = nullptr;
  float* action_values = nullptr;  // continuous actions: [batch, action_dim] (actions unused)
};

// Lane l's part of a minibatch of `batch_size` rows per lane.
CUGYM_HD inline Minibatch Lane(const Minibatch& b, int64_t lane, int64_t batch_size, int obs_dim, int action_dim = 0) {
  const int64_t first = lane * batch_size;
  Minibatch l = b;
  l.obs += first * obs_dim;
  l.next_obs += first * obs_dim;
  l.actions += first;
  l.rewards += first;
  l.bootstrap += first;
  if (l.rows != nullptr) l.rows += first;
  if (l.weights != nullptr) l.weights += first;
  if (l.action_values != nullptr) l.action_values += first * action_dim;
  return l;
}

// The importance weight of sample j: (min_k P_k / P_j)^beta, i.e. (N P_j)^-beta normalized by the
// largest weight in the minibatch (as Dopamine's Rainbow does; the paper normalizes by the largest
// over the whole memory). beta goes linearly from beta0 to 1 over beta_updates minibatches,
// counted by the draw counter on the device. weights[j] holds P_j on entry.
CUGYM_HD inline void ImportanceWeight(const PriorityTree& t, const Minibatch& b, uint32_t draws, int64_t j) {
  const double progress = static_cast<double>(draws) / static_cast<double>(t.beta_updates);
  const double beta =
      static_cast<double>(t.beta0) + (1.0 - static_cast<double>(t.beta0)) * (progress < 1.0 ? progress : 1.0);
  const double ratio = static_cast<double>(*t.min_prob) / static_cast<double>(b.weights[j]);
  b.weights[j] = static_cast<float>(Exp2(beta * Log2(ratio)));
}

// The n-step transition that starts at `row`: rewards summed with discounts until n_step rewards,
// the end of the episode (termination: no bootstrap; truncation: bootstrap from the final
// observation) or the newest stored transition, whichever comes first. The env's later
// transitions are `stride` rows on; a row is stored when it is no newer than head - 1.
CUGYM_HD inline void NStepTransition(const ReplayArrays& r, int64_t row, int n_step, float gamma, float* ret,
                                     int64_t* last_row, float* bootstrap) {
  const int64_t age = (*r.head - 1 - row + 2 * r.capacity) % r.capacity;  // rows written after it
  float sum = 0.0f, discount = 1.0f;
  int64_t at = row;
  for (int k = 0;; ++k) {
    sum += discount * r.rewards[at];
    discount *= gamma;
    const bool last = k + 1 >= n_step || r.ends[at] != 0 || (k + 1) * r.stride > age;
    if (last) {
      *ret = sum;
      *last_row = at;
      *bootstrap = r.terminals[at] != 0.0f ? 0.0f : discount;
      return;
    }
    at = (at + r.stride) % r.capacity;
  }
}

// Row j of the next minibatch, from Philox keyed by the seed, (stream kReplay, j) and the draw
// counter: uniform in [0, size), or with a priority tree stratified by priority (sample j's mass
// point lies in the j-th of batch_size equal slices of the total, as in the paper), its row and
// draw probability recorded. Then its n-step transition is gathered. Size, head and counter are
// read on the device (the counter is incremented afterwards, in a launch of its own).
CUGYM_HD inline void SampleLaneTransition(const ReplayArrays& r, const Minibatch& b, const PriorityTree& tree,
                                          int64_t batch_size, uint64_t seed, int n_step, float gamma, int64_t j) {
  const int64_t size = *r.size;
  Rng rng(seed, static_cast<uint64_t>(j), *r.draws, RngStream::kReplay);
  const uint32_t hi = rng.NextU32(), lo = rng.NextU32();
  int64_t row;
  if (tree.nodes == nullptr) {
    const uint64_t wide = (static_cast<uint64_t>(hi) << 32) | lo;
    row = static_cast<int64_t>(wide % static_cast<uint64_t>(size));
  } else {
    const float total = tree.nodes[1];
    const double slice = static_cast<double>(total) / static_cast<double>(batch_size);
    row = FindPrioritized(tree, (static_cast<double>(j) + static_cast<double>(U32ToUnitFloat(hi))) * slice);
    // The descent never enters a child of zero mass, so it ends on a stored row; this only
    // keeps a damaged tree (say, restored from a hand-edited checkpoint) inside the memory.
    if (row >= size) row = size - 1;
    b.rows[j] = row;
    b.weights[j] = tree.nodes[tree.leaves + row] / total;
  }
  int64_t last = row;
  NStepTransition(r, row, n_step, gamma, &b.rewards[j], &last, &b.bootstrap[j]);
  for (int k = 0; k < r.obs_dim; ++k) {
    b.obs[j * r.obs_dim + k] = r.obs[row * r.obs_dim + k];
    b.next_obs[j * r.obs_dim + k] = r.next_obs[last * r.obs_dim + k];
  }
  if (r.action_dim > 0) {
    for (int k = 0; k < r.action_dim; ++k)
      b.action_values[j * r.action_dim + k] = r.action_values[row * r.action_dim + k];
  } else {
    b.actions[j] = r.actions[row];
  }
}

// Sample j of a minibatch of batch_size rows per lane: row j % batch_size of lane j / batch_size,
// drawn as that lane alone would draw it (SampleLaneTransition) with the lane's seed.
CUGYM_HD inline void SampleTransition(const ReplayArrays& r, const Minibatch& b, const PriorityTree& tree,
                                      int64_t batch_size, uint64_t seed, int n_step, float gamma, int64_t j) {
  if (r.lanes <= 1) {
    SampleLaneTransition(r, b, tree, batch_size, seed, n_step, gamma, j);
    return;
  }
  const int64_t lane = j / batch_size;
  SampleLaneTransition(Lane(r, lane), Lane(b, lane, batch_size, r.obs_dim, r.action_dim), Lane(tree, lane), batch_size,
                       r.lane_seeds != nullptr ? r.lane_seeds[lane] : seed, n_step, gamma, j - lane * batch_size);
}

// The draw probability of the least likely sample of the minibatch (ImportanceWeight's norm).
CUGYM_HD inline void MinProbability(const PriorityTree& t, const Minibatch& b, int64_t n) {
  float least = b.weights[0];
  for (int64_t j = 1; j < n; ++j) least = b.weights[j] < least ? b.weights[j] : least;
  *t.min_prob = least;
}

}  // namespace cugym::agent
