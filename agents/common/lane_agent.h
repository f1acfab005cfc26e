// The lane-agent base: what every agent (DQN, PQN, PPO, SAC) keeps and does for its K >= 1 lanes
// besides its algorithm (agent.h: lane k is the solo run of seed k). It owns the config, the back
// end, the K x n envs, the lanes (agent_lanes.h: seeds, episodes, holds, evaluations), the step
// counters and the whole-iteration CUDA graph, and writes once: evaluations (each algorithm says
// how its networks play), the checkpoint skeleton (the header and counters, the lanes' parts, then
// the algorithm's), the resume (checked whole before anything changes; envs without a saved state
// reset by one seeding rule), and Keep. Under it the off-policy family (off_policy_agent.h: DQN,
// SAC) and the on-policy family (on_policy_agent.h: PQN, PPO).
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "agents/common/agent.h"
#include "agents/common/agent_lanes.h"
#include "agents/common/checkpoint.h"
#include "agents/common/cuda_graph.h"
#include "agents/common/episode_ops.h"
#include "agents/common/train_config.h"
#include "core/memory.h"
#include "core/registry.h"
#include "nn/backend.h"

namespace cugym::agent {

// Lane k's replica of a replicated learner (QLearner, PpoLearner, SacLearner) as a learner of one,
// the learner itself when it has one replica: model files and checkpoints are a learner of one's.
template <class Learner>
class SoloCopy {
 public:
  // Throws std::out_of_range "Solo: lane L of K" for a lane outside.
  Learner& Of(Learner& learner, int lane, const std::shared_ptr<nn::Backend>& backend) const {
    const int k = learner.options().replicas;
    if (lane < 0 || lane >= k)
      throw std::out_of_range("Solo: lane " + std::to_string(lane) + " of " + std::to_string(k));
    if (k == 1) return learner;
    if (!solo_) {
      auto one = learner.options();
      one.replicas = 1;
      one.replica_seeds.clear();
      solo_ = std::make_unique<Learner>(backend, one);
    }
    learner.CopyReplicaTo(lane, *solo_);
    return *solo_;
  }

 private:
  mutable std::unique_ptr<Learner> solo_;  // made at the first use (K > 1)
};

class LaneAgent : public Agent {
 public:
  ~LaneAgent() override;

  const TrainConfig& config() const final { return config_; }
  const std::vector<uint64_t>& seeds() const final { return lanes_->seeds(); }
  int64_t global_step() const final { return global_step_; }
  EpisodeStats& episodes(int lane) { return lanes_->episodes(lane); }

  EvalResult Evaluate(int lane, int64_t index) final;
  std::vector<EvalResult> EvaluateModels(const std::vector<int>& lanes, int64_t episodes, int64_t num_envs,
                                         uint64_t seed_offset) final;
  // The header and counters (WriteCheckpointCounters), the lane's episodes, envs and holds, then the
  // algorithm's parts (SaveLane): the solo run's file.
  void SaveCheckpoint(int lane, const std::string& path, const LoopState& loop) const final;
  // Every file checked (header, step, CheckLanes) before anything changes; then each lane's parts,
  // the envs (or, for one lane whose file holds none, new episodes from ResumeSeed), the device's
  // step counters, and the algorithm's Resumed. CUDA graphs captured before are dropped.
  std::vector<LoopState> LoadCheckpoints(const std::vector<std::unique_ptr<CheckpointReader>>& in) final;
  using Agent::LoadCheckpoints;
  std::unique_ptr<Agent> Keep(const std::vector<int>& keep) const final;

  bool replays_iteration_graph() const final { return iteration_graph_.replaying(); }
  void set_iteration_graph_on_cpu(bool on) final { iteration_graph_on_cpu_ = on; }

  // The seed of the new episodes of envs resumed without their state: lane 0's seed mixed with the
  // step, so that a resumed run does not replay its first episodes.
  static uint64_t ResumeSeed(uint64_t seed, int64_t step) {
    return seed ^ (0x9E3779B97F4A7C15ull * static_cast<uint64_t>(step));
  }

 protected:
  // Checks the config (TrainConfig::Validate, its algo is `algo`, what Unbatchable names) and takes
  // lane 0's seed as config.seed; the algorithm then makes its learner and calls MakeLanes.
  LaneAgent(const Registry& registry, const TrainConfig& config, const std::vector<uint64_t>& seeds,
            std::shared_ptr<nn::Backend> backend, const std::string& algo);
  // The K x n envs (lane k's reset as seed k's solo run), the lanes and the step
  // counters, on `stream` (the learner's).
  void MakeLanes(std::vector<uint64_t> seeds, void* stream);
  // Whether whole iterations may run from the CUDA graph: CUDA with cuda_graph and an env stepped on
  // the device (or the CPU when a test asks), and no failed capture.
  bool GraphAllowed() const;
  // A metrics row's fields every agent fills the same way: lane k's episodes since its last row,
  // steps and rates, the loop's values.
  MetricsRow CommonRow(int lane, double seconds, int64_t steps, const LoopState& loop);
  void* stream() const { return backend_->native_stream(); }

  // What each algorithm (or its family) adds.
  // Every lane's networks acting deterministically (AgentLanes::Play), and at most how many envs a
  // lane's network acts on at once.
  virtual AgentLanes::Play Play() = 0;
  virtual int64_t max_play_envs() const = 0;
  // Lane k's own counters and tensors (its networks, memories, normalizers).
  virtual void SaveLane(int lane, CheckpointWriter& out) const = 0;
  // Refuses files that cannot go on together, before anything changes (the step is checked already).
  virtual void CheckLanes(const std::vector<std::unique_ptr<CheckpointReader>>& /*in*/) const {}
  virtual void LoadLane(int lane, const CheckpointReader& in) = 0;
  // After every lane, the envs and the step counters: counters the lanes share, from the first file.
  virtual void Resumed(const CheckpointReader& /*first*/) {}
  virtual void DropGraphs() { iteration_graph_.Drop(); }
  // Keep: a new agent of `seeds` on this back end, and its lanes i from lanes keep[i] (networks,
  // memories, anything beyond the lanes' episodes, holds and envs).
  virtual std::unique_ptr<LaneAgent> MakeLike(std::vector<uint64_t> seeds) const = 0;
  virtual void KeepLanes(const std::vector<int>& keep, LaneAgent& next) const = 0;

  const Registry* registry_;
  TrainConfig config_;
  std::shared_ptr<nn::Backend> backend_;
  Device device_;
  std::unique_ptr<EpisodeOps> episode_ops_ = MakeOps<EpisodeOps>(device_, stream());
  std::unique_ptr<VectorEnv> env_;     // K x n envs in lanes, lane k's the k-th n
  std::unique_ptr<AgentLanes> lanes_;  // seeds, episodes, holds, evaluations
  Buffer<StepCounters> counters_dev_;  // [1] vector and env steps, kept by AdvanceSteps
  CudaGraph iteration_graph_;
  bool iteration_graph_on_cpu_ = false;
  int64_t global_step_ = 0;  // env steps of each lane
  int64_t vector_steps_ = 0;
};

}  // namespace cugym::agent
