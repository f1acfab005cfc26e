// The off-policy family (Stable-Baselines3's OffPolicyAlgorithm): DQN and SAC. One vector step of
// n envs per lane per iteration, the transitions into each lane's replay memory
// (replay_memory.h), then the gradient steps that fall on it: replay_ratio per env step, owed as an
// update debt once the step ends past learning_starts with a minibatch stored. Its checkpoints add
// cugym.draws, .update_debt and .learning_resumes_at, and the replay memory with save_replay;
// without it a resumed run learns again once min(learning_starts, buffer_size) new transitions are
// stored (the run is then no longer the uninterrupted one).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agents/common/lane_agent.h"
#include "agents/off_policy/replay_memory.h"
#include "agents/off_policy/replay_ops.h"

namespace cugym::agent {

class OffPolicyAgent : public LaneAgent {
 public:
  // The family's part of an algorithm's description (algorithm.h): the replay memory's keys, its
  // checks (one vector step and one minibatch fit in it), and the gradient steps of a run
  // (replay_ratio per env step, over the vector steps that end past learning_starts with a full
  // minibatch stored, as PlanUpdates counts them).
  static const std::vector<std::string>& ReplayKeys();
  static void CheckReplay(const TrainConfig& config);
  static int64_t PlannedUpdates(const TrainConfig& config);

 protected:
  OffPolicyAgent(const Registry& registry, const TrainConfig& config, const std::vector<uint64_t>& seeds,
                 std::shared_ptr<nn::Backend> backend, const std::string& algo);
  ~OffPolicyAgent() override;

  // The replay memory of a lane per seed, made first of all: it refuses (std::invalid_argument,
  // naming the lanes, envs and bytes) what would not fit before anything is allocated.
  void MakeReplay(ReplayOptions options, const std::vector<uint64_t>& seeds);
  // Whether this vector step learns, and if so the gradient steps it brings, added to *updates
  // (advances the update debt).
  bool PlanUpdates(int64_t* updates);
  // Gradient steps per vector step when every learning iteration takes the same whole number of
  // them (so that one CUDA graph can hold an iteration), else -1.
  int64_t WholeUpdatesPerStep() const;
  // The host's mirrors of what a vector step advanced on the device.
  void Stepped();

  // The algorithm's own part of a checkpoint, of its checks, of a resume and of Keep.
  virtual void SaveOwn(int lane, CheckpointWriter& out) const = 0;
  virtual void CheckOwn(const std::vector<std::unique_ptr<CheckpointReader>>& /*in*/) const {}
  virtual void LoadOwn(int lane, const CheckpointReader& in) = 0;
  virtual void ResumedOwn(const CheckpointReader& /*first*/) {}
  virtual void KeepOwn(const std::vector<int>& keep, LaneAgent& next) const = 0;

  int64_t n_;  // envs per lane
  std::unique_ptr<ReplayOps> replay_ops_ = MakeOps<ReplayOps>(device_, stream());
  std::unique_ptr<ReplayMemory> replay_;  // a lane per lane
  double update_debt_ = 0;
  int64_t learning_resumes_at_ = 0;  // learning_starts, or after a resume without the replay memory

 private:
  void SaveLane(int lane, CheckpointWriter& out) const final;
  void CheckLanes(const std::vector<std::unique_ptr<CheckpointReader>>& in) const final;
  void LoadLane(int lane, const CheckpointReader& in) final;
  void Resumed(const CheckpointReader& first) final;
  void KeepLanes(const std::vector<int>& keep, LaneAgent& next) const final;

  bool loading_replay_ = true;  // the checkpoints being loaded hold the replay memory
};

}  // namespace cugym::agent
