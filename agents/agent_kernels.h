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
  uint8_t* ends;     // [capacity] 1 where the episode ended (terminated or truncated)
  int64_t* size;     // [1] transitions stored so far (at most capacity)
  int64_t* head;     // [1] the row the next vector step writes first
  uint32_t* draws;   // [1] minibatches sampled so far: keys the sampling RNG
  int64_t capacity;
  int obs_dim;
  int64_t stride;  // envs per vector step: env i's next transition is `stride` rows further on
};

// Transition i of a vector step goes to row (head + i) % capacity, head as the device holds it,
// so an env's consecutive transitions are `stride` (= n) rows apart, which n-step sampling relies
// on. next_obs is the true last observation (final_obs) when the env ended in this step, so
// truncated episodes bootstrap from their real final state; only termination stops the bootstrap.
// Head and size change only in AdvanceReplay, a launch of its own after this one's: no thread
// reads a head another thread has moved, and a CUDA graph replays the insertion without the host
// passing a position.
CUGYM_HD inline void AddTransition(const ReplayArrays& r, int64_t i, const float* obs, const int32_t* actions,
                                   const float* rewards, const float* next_obs, const float* final_obs,
                                   const uint8_t* terminated, const uint8_t* truncated) {
  const int64_t row = (*r.head + i) % r.capacity;
  const bool ended = (terminated[i] | truncated[i]) != 0;
  const float* next = ended ? final_obs : next_obs;
  for (int k = 0; k < r.obs_dim; ++k) {
    r.obs[row * r.obs_dim + k] = obs[i * r.obs_dim + k];
    r.next_obs[row * r.obs_dim + k] = next[i * r.obs_dim + k];
  }
  r.actions[row] = actions[i];
  r.rewards[row] = rewards[i];
  r.dones[row] = terminated[i] ? 1.0f : 0.0f;
  r.ends[row] = ended ? 1 : 0;
}

// After the n insertions of a vector step (one thread): the stored size grows and the head moves on.
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
};

// Prioritized experience replay (Schaul, Quan, Antonoglou and Silver, ICLR 2016), proportional
// variant: row r is drawn with probability p_r / sum p, p_r = (|delta_r| + eps)^alpha from its
// latest TD error; new rows get the largest priority given so far, so each is seen at least once
// soon. The priorities live in a sum tree on the device: nodes[1] is the total, node i has the
// children 2i and 2i + 1, row r's leaf is nodes[leaves + r] (0 until the row is written). An inner
// node is always recomputed as the float sum of its two children, never adjusted by a difference,
// so the tree is a function of its leaves: the same bits on every back end and in any update order.
struct PriorityTree {
  float* nodes = nullptr;     // [2 * leaves]; nullptr: uniform sampling
  float* max_leaf = nullptr;  // [1] the largest leaf value so far (new rows get it); starts at 1
  float* min_prob = nullptr;  // [1] scratch: the smallest draw probability of the current minibatch
  int64_t leaves = 0;         // a power of two >= the replay capacity
  int depth = 0;              // log2(leaves): levels above the leaves
  float alpha = 0.6f;
  float eps = 1e-6f;
  float beta0 = 0.4f;        // importance-weight exponent at the first minibatch, annealed to 1 ...
  int64_t beta_updates = 1;  // ... linearly over this many minibatches (then 1)
};

// Sizes `t` for a replay of `capacity` rows: leaves the smallest power of two >= capacity, depth
// its log2.
inline void SizePriorityTree(PriorityTree& t, int64_t capacity) {
  t.leaves = 1;
  t.depth = 0;
  while (t.leaves < capacity) {
    t.leaves *= 2;
    ++t.depth;
  }
}

// (|error| + eps)^alpha through core's Log2/Exp2, so CPU and GPU give the same bits.
CUGYM_HD inline float LeafPriority(float error, float alpha, float eps) {
  const double base = static_cast<double>(error < 0.0f ? -error : error) + static_cast<double>(eps);
  return static_cast<float>(Exp2(static_cast<double>(alpha) * Log2(base)));
}

// Recomputes inner node `node` from its children.
CUGYM_HD inline void RefreshNode(const PriorityTree& t, int64_t node) {
  t.nodes[node] = t.nodes[2 * node] + t.nodes[2 * node + 1];
}

// The row whose leaf holds the mass point u in [0, total): descend, subtracting the left mass when
// going right. Float rounding can leave u at or past a subtree's stored sum; a child of zero mass
// is never entered, so the draw always ends on a written row.
CUGYM_HD inline int64_t FindPrioritized(const PriorityTree& t, double u) {
  int64_t node = 1;
  while (node < t.leaves) {
    const float left = t.nodes[2 * node];
    if (static_cast<double>(left) > u || t.nodes[2 * node + 1] <= 0.0f) {
      node = 2 * node;
    } else {
      u -= static_cast<double>(left);
      node = 2 * node + 1;
    }
  }
  return node - t.leaves;
}

// The rows a vector step of n transitions just wrote, ending before `head`, as up to two
// contiguous ranges [lo, hi) of the ring (two when they wrap); returns how many.
CUGYM_HD inline int NewRowRanges(int64_t head, int64_t n, int64_t capacity, int64_t lo[2], int64_t hi[2]) {
  const int64_t start = (head - n % capacity + capacity) % capacity;
  if (start + n <= capacity) {
    lo[0] = start;
    hi[0] = start + n;
    return 1;
  }
  lo[0] = start;
  hi[0] = capacity;
  lo[1] = 0;
  hi[1] = start + n - capacity;
  return 2;
}

// Whether sample j's row comes again later in the minibatch: only the last occurrence of a row
// writes its priority, so duplicates (whose errors can differ in the last bits, as a GEMM may
// round rows differently by position) leave the same leaf on every back end.
CUGYM_HD inline bool LaterDuplicate(const int64_t* rows, int64_t j, int64_t n) {
  for (int64_t k = j + 1; k < n; ++k)
    if (rows[k] == rows[j]) return true;
  return false;
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
      *bootstrap = r.dones[at] != 0.0f ? 0.0f : discount;
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
CUGYM_HD inline void SampleTransition(const ReplayArrays& r, const Minibatch& b, const PriorityTree& tree,
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
  b.actions[j] = r.actions[row];
}

// The draw probability of the least likely sample of the minibatch (ImportanceWeight's norm).
CUGYM_HD inline void MinProbability(const PriorityTree& t, const Minibatch& b, int64_t n) {
  float least = b.weights[0];
  for (int64_t j = 1; j < n; ++j) least = b.weights[j] < least ? b.weights[j] : least;
  *t.min_prob = least;
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
  if (y >= 31.0) return max_hold;                                                    // 2^31 exceeds any max_hold
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

// The training loop's step counters, on the device so a captured iteration advances them itself
// (AdvanceSteps) and its exploration reads them (Explore); the host keeps mirrors.
struct StepCounters {
  int64_t vector_steps;  // vector steps taken: keys the exploration stream
  int64_t global_step;   // env steps taken: drives epsilon
};

// Linear epsilon decay from start to end over `duration` env steps, then flat (CleanRL's
// linear_schedule). In double, with FMA contraction off on both compilers (cugym_strict_fp), so
// the device's value is the host's bit for bit.
struct EpsilonSchedule {
  double start;
  double end;
  double duration;  // env steps: exploration_fraction * total_steps
};

CUGYM_HD inline double ScheduledEpsilon(const EpsilonSchedule& s, int64_t step) {
  const double slope = (s.end - s.start) / s.duration;
  const double value = slope * static_cast<double>(step) + s.start;
  const double floor = s.start < s.end ? s.start : s.end;
  return value < floor ? floor : value;  // std::max(value, floor)
}

// EpsilonGreedy at the vector step the device's counters hold: epsilon from the schedule at the
// env step, the exploration key StepKey(seed, kExploration, vector step), both as the host
// computes them.
CUGYM_HD inline void Explore(int32_t* actions, const StepCounters* counters, const EpsilonSchedule& schedule,
                             uint64_t seed, int num_actions, const ExploreHold& hold, int64_t i) {
  const float epsilon = static_cast<float>(ScheduledEpsilon(schedule, counters->global_step));
  const uint32_t key = StepKey(seed, RngStream::kExploration, static_cast<uint64_t>(counters->vector_steps));
  EpsilonGreedy(actions, epsilon, num_actions, key, hold, i);
}

// After a vector step of n envs (one thread).
CUGYM_HD inline void AdvanceSteps(StepCounters* counters, int64_t n) {
  counters->vector_steps += 1;
  counters->global_step += n;
}

// y = R + bootstrap * next_q: for one step r + gamma * (1 - terminated) * max Q(s'), as the
// minibatch's bootstrap is gamma or 0 then.
CUGYM_HD inline void TdTarget(const float* rewards, const float* bootstrap, const float* next_q, float* targets,
                              int64_t j) {
  targets[j] = rewards[j] + bootstrap[j] * next_q[j];
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
