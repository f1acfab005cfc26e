// The off-policy family's device work (device_ops.h): the replay memory's ring of transitions
// (replay_kernels.h), its priority trees (priority_tree.h), and DQN's TD targets of a minibatch
// (dqn_kernels.h).
#pragma once

#include <cstdint>

#include "agents/common/device_ops.h"
#include "agents/off_policy/dqn_kernels.h"
#include "agents/off_policy/priority_tree.h"
#include "agents/off_policy/replay_kernels.h"

namespace cugym::agent {

class ReplayOps {
 public:
  virtual ~ReplayOps() = default;
  // Writes the n transitions of one vector step (n per lane, lanes x n in all: replay_kernels.h)
  // at rows head.. of the ring (the device's head), then moves the head and grows the size
  // (AdvanceReplay; on CUDA a second launch). Throws std::invalid_argument when n exceeds the
  // capacity: two envs of one step would share a row.
  // With continuous actions (replay.action_dim > 0) they come from action_values [lanes n][action_dim].
  void AddTransitions(const ReplayArrays& replay, int64_t n, const float* obs, const int32_t* actions,
                      const float* rewards, const float* next_obs, const float* final_obs, const uint8_t* terminated,
                      const uint8_t* truncated, const float* action_values = nullptr);
  // AddTransitions without moving the head: for one lane (a Lane view) of a step whose lanes'
  // transitions come from separate arrays, the head moved once for all by AdvanceReplay after.
  void WriteTransitions(const ReplayArrays& replay, int64_t n, const float* obs, const int32_t* actions,
                        const float* rewards, const float* next_obs, const float* final_obs, const uint8_t* terminated,
                        const uint8_t* truncated, const float* action_values = nullptr);
  virtual void AdvanceReplay(const ReplayArrays& replay, int64_t n) = 0;
  // A minibatch of n-step transitions (NStepTransition) from the stored ones (replay.size,
  // head and draws on the device), batch_size per lane, each lane's drawn as that lane alone
  // would draw it; then the draw counter goes up by one. With a priority tree (tree.nodes set)
  // rows are drawn by priority and batch.rows / batch.weights receive each sample's row (in its
  // lane) and importance weight.
  virtual void Sample(const ReplayArrays& replay, const Minibatch& batch, int64_t batch_size, uint64_t seed, int n_step,
                      float gamma, const PriorityTree& tree) = 0;
  // Prioritized replay: in every lane the n rows the last AddTransitions wrote (just before the
  // device-side head) get the lane's largest priority so far, and its tree is brought up to date.
  virtual void PrioritizeNewRows(const ReplayArrays& replay, const PriorityTree& tree, int64_t n) = 0;
  // Prioritized replay: in each lane l (tree.lanes), sampled rows[l n + j] gets the priority of
  // its TD error errors[l n + j] (LeafPriority; the last of duplicate rows wins), the lane's
  // largest priority is updated and its tree brought up to date.
  virtual void UpdatePriorities(const PriorityTree& tree, const int64_t* rows, const float* errors, int64_t n) = 0;
  // DQN: targets = rewards + bootstrap * next_q (TdTarget).
  virtual void TdTargets(const float* rewards, const float* bootstrap, const float* next_q, float* targets,
                         int64_t n) = 0;

 private:
  virtual void DoWriteTransitions(const ReplayArrays& replay, int64_t n, const float* obs, const int32_t* actions,
                                  const float* rewards, const float* next_obs, const float* final_obs,
                                  const uint8_t* terminated, const uint8_t* truncated, const float* action_values) = 0;
};

}  // namespace cugym::agent
