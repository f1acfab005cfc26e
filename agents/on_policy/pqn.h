// PQN (Gallici et al., "Simplifying Deep Temporal Difference Learning", ICLR 2025): Q-learning
// built for batched envs. Each iteration collects a rollout of num_envs x num_steps transitions
// epsilon-greedily, computes Q(lambda) targets backwards over it with the network as it was
// during the rollout (pqn_kernels.h), then takes num_epochs passes of num_minibatches shuffled
// minibatches of MSE regression onto them, clipped by global norm, with RAdam or Adam (learning
// rate decaying linearly with anneal_lr), and discards the rollout: no replay memory, no target
// network; LayerNorm (layer_norm) keeps it stable. Everything runs on the back end's stream; on
// CUDA with cuda_graph and an env stepped on the device, a whole iteration is one graph. The
// host reads only scalars, for the progress line and metrics.
// The loop around the loss is the on-policy family's (on_policy_agent.h). K >= 1 lanes (agent.h): one replicated
// learner, K x n envs, one rollout over all of them; lane k's network, files and rows are, on the CPU, bit for bit the
// solo run's of seed k, because every op gives each lane the rows its solo run would (the minibatches are drawn from
// lane k's own rollout by its own permutation; the next values are taken in the solo run's chunks).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agents/common/algorithm.h"
#include "agents/common/explore_ops.h"
#include "agents/common/q_learner.h"
#include "agents/on_policy/on_policy_agent.h"

namespace cugym::agent {

// PQN as the registry knows it (algorithm.h): "pqn", its columns, keys, checks and factory.
Algorithm PqnAlgorithm();

class PqnAgent final : public OnPolicyAgent {
 public:
  // A lane per seed (`seeds` empty: one lane of config.seed). Throws std::invalid_argument for an
  // env without discrete actions, an unknown env, a bad config (config.algo must be "pqn"), a seed
  // listed twice and what Unbatchable names.
  PqnAgent(const Registry& registry, const TrainConfig& config, Device device, std::vector<uint64_t> seeds = {});
  ~PqnAgent() override;

  double Epsilon(int64_t step) const;

  MetricsRow Progress(int lane, double seconds, int64_t steps, const LoopState& loop) override;
  void SaveModel(int lane, const std::string& path) const override;
  void LoadModel(int lane, const std::string& path) override;

 private:
  // The public constructor's agent on `backend` (Keep's: learners on one back end exchange replicas).
  PqnAgent(const Registry& registry, const TrainConfig& config, std::vector<uint64_t> seeds,
           std::shared_ptr<nn::Backend> backend);
  // One iteration's work: the rollout (greedy forwards on every step when captured, else from the
  // first step whose epsilon is below 1: the actions would be replaced anyway, so the bits are
  // the same), the values and targets, the updates.
  void IterationKernels(bool captured) override;
  void CollectStep(int64_t t, bool greedy);
  // max_a Q(next_obs) of every rollout row, from the network before this iteration's updates.
  void NextValues();
  void GatherMinibatch(int64_t first, int64_t rows, int64_t epoch) override;
  void TrainMinibatch() override;
  RolloutArrays rollout();
  QLearner& Solo(int lane) const { return solo_.Of(*learner_, lane, backend_); }

  // LaneAgent's hooks: a checkpoint is the counters, the lanes' parts and the learner (network and
  // optimizer, no target network).
  AgentLanes::Play Play() override { return lanes_->ReplicasPlay(*learner_); }
  int64_t max_play_envs() const override { return learner_->options().max_act_batch; }
  void SaveLane(int lane, CheckpointWriter& out) const override { Solo(lane).Save(out); }
  void LoadLane(int lane, const CheckpointReader& in) override;
  std::unique_ptr<LaneAgent> MakeLike(std::vector<uint64_t> seeds) const override;
  void KeepLanes(const std::vector<int>& keep, LaneAgent& next) const override;

  EnvSpec spec_;
  std::unique_ptr<ExploreOps> explore_ops_ = MakeOps<ExploreOps>(device_, stream());
  std::unique_ptr<QLearner> learner_;
  SoloCopy<QLearner> solo_;
  int obs_dim_;
  int num_actions_;
  int64_t value_rows_;  // rows per lane per forward when the rollout's next observations are valued

  // The rollout of all lanes (pqn_kernels.h's RolloutArrays, step-major over K x n envs) and one
  // minibatch per lane.
  Buffer<float> obs_, next_obs_, rewards_, next_values_, targets_;
  Buffer<int32_t> actions_;
  Buffer<uint8_t> terminated_, truncated_;
  Buffer<float> batch_obs_, batch_targets_;
  Buffer<int32_t> batch_actions_;
  // K > 1: each lane's value_rows_ next observations and their values, side by side (NextValues).
  Buffer<float> staged_obs_, staged_values_;
};

}  // namespace cugym::agent
