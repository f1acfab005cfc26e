// DQN (Mnih et al. 2015) on batched envs, everything on one device, for K >= 1 lanes: act
// epsilon-greedily for every lane's N envs from its Q network, step, write the transitions into
// each lane's ring-buffer replay memory, sample minibatches with the counter RNG, regress onto
// r + gamma * (1 - terminated) * max_a' Q_target (Double DQN on request), update with Adam, copy
// or Polyak-average the target. The K lanes' networks are one replicated learner
// (QLearnerOptions::replicas), their envs lanes of one VectorEnv (VectorEnv::ResetLanes) and their
// replay memories lanes of one (ReplayOptions::lanes): every op of an iteration is one launch for
// all K, and on CUDA the iteration is one CUDA graph. Lane k's network, model file, metrics row,
// evaluations and checkpoint after T iterations are, on the CPU, bit for bit those of the solo run
// (K = 1) of seed k; the schedule (update debt, target updates, step counters) is one for all, as
// lockstep makes it. The replay memory, the episode statistics, the CUDA graphs and the checkpoint
// format are parts of their own (replay_memory.h, episode_stats.h, cuda_graph.h, checkpoint.h), and
// the loop around the loss is the off-policy family's (off_policy_agent.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agents/common/algorithm.h"
#include "agents/common/explore_ops.h"
#include "agents/common/q_learner.h"
#include "agents/off_policy/off_policy_agent.h"

namespace cugym::agent {

// A lane's replay memory for `config` on `spec`'s env (the agent's, and the registry's size check).
ReplayOptions DqnReplayOptions(const TrainConfig& config, const EnvSpec& spec);
// DQN as the registry knows it (algorithm.h): "dqn", its columns, keys, checks and factory.
Algorithm DqnAlgorithm();

class DqnAgent final : public OffPolicyAgent {
 public:
  // A lane per seed (`seeds` empty: one lane of config.seed). Throws std::invalid_argument for an
  // env with a Box action space (DQN needs discrete actions), an unknown env, a bad config, a seed
  // listed twice, what Unbatchable names, and K replay memories that would not fit in the device's
  // free memory (before allocating anything; the message names the lanes, envs and bytes).
  DqnAgent(const Registry& registry, const TrainConfig& config, Device device, std::vector<uint64_t> seeds = {});
  ~DqnAgent() override;

  double Epsilon(int64_t step) const;

  void Iterate() override;
  MetricsRow Progress(int lane, double seconds, int64_t steps, const LoopState& loop) override;
  void SaveModel(int lane, const std::string& path) const override;
  void LoadModel(int lane, const std::string& path) override;

  // CUDA with cuda_graph where the whole iteration cannot be one graph (a fractional number of
  // gradient steps per vector step, or an env stepped on the host): whether the gradient steps are
  // replayed from a captured graph.
  bool replays_update_graph() const { return update_graph_.replaying(); }
  const QLearner& learner() const { return *learner_; }

 private:
  // The public constructor's agent on `backend` (Keep's: learners on one back end exchange replicas).
  DqnAgent(const Registry& registry, const TrainConfig& config, std::vector<uint64_t> seeds,
           std::shared_ptr<nn::Backend> backend);
  // What one iteration queues after its vector step, decided on the host (advances the update
  // debt and the target schedule).
  struct IterationPlan {
    bool greedy = true;   // the greedy forward runs (it is skipped while epsilon is 1)
    int64_t updates = 0;  // gradient steps
    int64_t targets = 0;  // target updates
  };
  IterationPlan PlanIteration();
  // Whether the whole-iteration graph holds exactly this plan's work.
  bool IterationGraphFits(const IterationPlan& plan) const;
  // The whole-iteration graph's work: Collect(true), graph_updates_ gradient steps and
  // graph_targets_ target updates.
  void IterationKernels();
  void Collect(bool greedy);
  void Update();
  void UpdateKernels();
  void UpdateTarget() { learner_->UpdateTarget(static_cast<float>(config_.tau)); }
  QLearner& Solo(int lane) const { return solo_.Of(*learner_, lane, backend_); }

  // LaneAgent's and OffPolicyAgent's hooks. A checkpoint adds cugym.next_target_step and the
  // learner (both networks and Adam).
  AgentLanes::Play Play() override { return lanes_->ReplicasPlay(*learner_); }
  int64_t max_play_envs() const override { return learner_->options().max_act_batch; }
  void SaveOwn(int lane, CheckpointWriter& out) const override;
  void CheckOwn(const std::vector<std::unique_ptr<CheckpointReader>>& in) const override;
  void LoadOwn(int lane, const CheckpointReader& in) override;
  void ResumedOwn(const CheckpointReader& first) override;
  void DropGraphs() override;
  std::unique_ptr<LaneAgent> MakeLike(std::vector<uint64_t> seeds) const override;
  void KeepOwn(const std::vector<int>& keep, LaneAgent& next) const override;

  int obs_dim_, num_actions_;
  std::unique_ptr<ExploreOps> explore_ops_ = MakeOps<ExploreOps>(device_, stream());
  std::unique_ptr<QLearner> learner_;
  SoloCopy<QLearner> solo_;
  Buffer<float> obs_;        // [K n, obs_dim] every lane's observations before the step
  Buffer<int32_t> actions_;  // [K n]
  // The learner's inputs and outputs on every lane's minibatch [K b] (the replay memory's).
  Buffer<int32_t> next_actions_;
  Buffer<float> next_q_, targets_;

  // CUDA graphs (cuda_graph.h): the whole iteration where every learning iteration queues the same
  // work (graph_updates_ >= 0), else the gradient step alone; never both. graph_targets_: target
  // updates in the graph (0: they do not fall on every iteration, and run outside).
  CudaGraph update_graph_;
  int64_t graph_updates_ = -1;
  int64_t graph_targets_ = 0;

  int64_t next_target_step_ = 0;
};

}  // namespace cugym::agent
