// A DQN run's replay memory on one device: the ring of transitions (replay_kernels.h) with its
// head, size and draw counter on the device, so a captured iteration inserts and samples without
// host input, and host mirrors of head and size for the loop's schedule; the minibatch it samples
// into; with prioritized replay the sum tree (priority_tree.h) and each sample's row, importance
// weight and TD error; and its own part of a checkpoint (replay.*, cugym.replay.*).
#pragma once

#include <cstdint>
#include <vector>

#include "agents/common/checkpoint.h"
#include "agents/off_policy/replay_ops.h"
#include "core/memory.h"

namespace cugym::agent {

// Prioritized replay's settings (as PriorityTree, which holds them as float).
struct PriorityOptions {
  double alpha = 0.6;        // priority exponent
  double eps = 1e-6;         // added to |TD error|
  double beta0 = 0.4;        // importance-weight exponent at the first minibatch, annealed to 1 ...
  int64_t beta_updates = 1;  // ... over this many minibatches
};

struct ReplayOptions {
  int64_t capacity = 0;    // rows
  int obs_dim = 0;         // floats per observation
  int64_t num_envs = 0;    // rows per vector step
  int64_t batch_size = 0;  // rows per minibatch
  bool prioritized = false;
  PriorityOptions priorities;  // with prioritized
  // Lanes: this many replay memories of `capacity` rows in one, sharing head, size and draw
  // counter (K lanes of an agent in lockstep, dqn.h): one launch inserts, samples or updates priorities
  // for all, and lane l holds, samples and checkpoints as a memory of its own would.
  int64_t lanes = 1;
  // Continuous actions (SAC's): this many floats per action instead of an int32 (0).
  int64_t action_dim = 0;
};

// The bytes a ReplayMemory of `options` allocates: per transition two observations, the reward,
// terminal flag, action and end flag (8 obs_dim + 13 bytes, and 4 action_dim for continuous actions), the priority tree
// (8 bytes per leaf, leaves the capacity rounded up to a power of two), and the minibatch buffers; all per lane.
int64_t ReplayBytes(const ReplayOptions& options);

class ReplayMemory {
 public:
  // Every array zeroed (checkpoints save whole arrays, rows never written included, so identical
  // runs write identical files); every leaf of the tree 0 and the largest priority 1. Throws
  // std::invalid_argument, before allocating, when ReplayBytes is above 90% of the device's free
  // memory (the message names the buffer size, the observation size and both amounts).
  ReplayMemory(Device device, const ReplayOptions& options);

  bool prioritized() const { return tree_.nodes != nullptr; }
  int64_t capacity() const { return options_.capacity; }
  int64_t size() const { return size_; }  // the host's mirror of the transitions stored

  int64_t lanes() const { return options_.lanes; }

  // Queues the insertion of a vector step's n transitions per lane (ReplayOps::AddTransitions; the
  // arrays hold lanes x n) and, with prioritized replay, gives the new rows the largest priority.
  // The host mirrors do not move: the loop calls Stored(n) once the step has been queued (a
  // captured insertion replays without the host).
  // With continuous actions, they come from action_values [lanes n][action_dim] (actions unread).
  void Insert(ReplayOps& ops, int64_t n, const float* obs, const int32_t* actions, const float* rewards,
              const float* next_obs, const float* final_obs, const uint8_t* terminated, const uint8_t* truncated,
              const float* action_values = nullptr);
  // Insert in parts, for lanes whose transitions come from separate arrays: each lane's n with
  // InsertLane, then Inserted(n) once (the head moves, the new rows get their priorities).
  void InsertLane(ReplayOps& ops, int64_t lane, int64_t n, const float* obs, const int32_t* actions,
                  const float* rewards, const float* next_obs, const float* final_obs, const uint8_t* terminated,
                  const uint8_t* truncated);
  void Inserted(ReplayOps& ops, int64_t n);
  void Stored(int64_t n);  // the host mirrors after a vector step of n transitions per lane
  // Each lane's seed (lane l samples with seeds[l]; throws std::invalid_argument unless there is
  // one per lane). Without them every lane samples with the seed Sample is given.
  void SetLaneSeeds(const std::vector<uint64_t>& seeds);
  // Queues the sampling of one minibatch of n-step transitions per lane into the batch buffers.
  void Sample(ReplayOps& ops, uint64_t seed, int n_step, float gamma);
  // Prioritized replay: queues the update of the sampled rows' priorities from td_errors().
  void UpdatePriorities(ReplayOps& ops);

  // The last minibatch, [lanes x batch_size] rows each (lane l's batch_size rows after lane l-1's).
  const float* batch_obs() const { return batch_obs_.data(); }
  const float* batch_next_obs() const { return batch_next_obs_.data(); }
  const int32_t* batch_actions() const { return batch_actions_.data(); }
  const float* batch_action_values() const { return batch_action_values_.data(); }  // continuous actions
  const float* batch_rewards() const { return batch_rewards_.data(); }              // n-step returns
  const float* batch_bootstrap() const { return batch_bootstrap_.data(); }          // gamma^k or 0
  const float* batch_weights() const { return batch_weights_.data(); }              // prioritized: importance weights
  float* td_errors() { return td_errors_.data(); }  // prioritized: the learner writes them

  // The draw counter (minibatches sampled so far, keying the sampling RNG); a checkpoint holds it
  // with the loop's counters, replay memory or not.
  uint32_t draws() const;
  const uint32_t* draws_dev() const { return draws_.data(); }  // [1], read by kernels keyed by it
  void set_draws(uint32_t draws);

  // Empties the memory: nothing stored, every priority as new.
  void Clear();
  // Lane l's rows, head, size and priorities (not the draw counter), as a memory of one lane
  // writes them, and back. Load checks the sizes against this memory's and throws
  // std::invalid_argument naming the file; loading lanes of a memory of several, a head or size
  // other than the one already loaded is refused (the lanes share them).
  void Save(CheckpointWriter& out, int64_t lane = 0) const;
  void Load(const CheckpointReader& in, int64_t lane = 0);
  // Lane lanes[l] of `from` (a memory of the same capacity, observation size and priorities on the
  // same device) into each lane l of this one, copied on the device: their rows and priority trees
  // as they are, and from's head, size and draw counter (the lanes share them). Throws
  // std::invalid_argument for a memory of another shape or a list of another length than this
  // memory's lanes, and std::out_of_range for a lane outside `from`.
  void TakeLanes(const ReplayMemory& from, const std::vector<int64_t>& lanes);

 private:
  ReplayArrays arrays();
  void ResetPriorities();  // every leaf 0, the largest priority 1

  Device device_;
  ReplayOptions options_;
  Buffer<float> obs_, next_obs_, rewards_, terminals_;
  Buffer<uint8_t> ends_;
  Buffer<int32_t> actions_;
  Buffer<float> action_values_, batch_action_values_;  // continuous actions
  Buffer<int64_t> size_dev_;                           // [1] transitions stored, kept by the insertion kernel
  Buffer<int64_t> head_dev_;                           // [1] next row to write, kept by the insertion kernel
  Buffer<uint32_t> draws_;                             // [1] minibatches sampled (keys the sampling RNG)
  Buffer<uint64_t> lane_seeds_;                        // [lanes] after SetLaneSeeds
  int64_t head_ = 0;                                   // host mirror of head_dev_
  int64_t size_ = 0;                                   // host mirror of size_dev_
  Buffer<float> batch_obs_, batch_next_obs_, batch_rewards_, batch_bootstrap_;
  Buffer<int32_t> batch_actions_;
  // Prioritized replay: the sum tree (2 x tree_.leaves per lane), its largest leaf and the
  // minibatch's least draw probability (one per lane); each sample's row, importance weight and
  // TD error.
  Buffer<float> priority_nodes_, max_priority_, min_prob_, batch_weights_, td_errors_;
  Buffer<int64_t> batch_rows_;
  PriorityTree tree_;  // views of the buffers above, set once; nodes == nullptr without PER
};

}  // namespace cugym::agent
