// PQN (Gallici et al., "Simplifying Deep Temporal Difference Learning", ICLR 2025): Q-learning
// built for batched envs. Each iteration collects a rollout of num_envs x num_steps transitions
// epsilon-greedily, computes Q(lambda) targets backwards over it with the network as it was
// during the rollout (pqn_kernels.h), then takes num_epochs passes of num_minibatches shuffled
// minibatches of MSE regression onto them, clipped by global norm, with RAdam or Adam (learning
// rate decaying linearly with anneal_lr), and discards the rollout: no replay memory, no target
// network; LayerNorm (layer_norm) keeps it stable. Everything runs on the back end's stream; on
// CUDA with cuda_graph and an env stepped on the device, a whole iteration is one graph. The
// host reads only scalars, for the progress line and metrics.
// K >= 1 lanes (agent.h), as DqnAgent's: one replicated learner, K x n envs, one rollout over all
// of them; lane k's network, files and rows are, on the CPU, bit for bit the solo run's of seed k,
// because every op gives each lane the rows its solo run would (the minibatches are drawn from
// lane k's own rollout by its own permutation; the next values are taken in the solo run's chunks).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "agents/agent_lanes.h"
#include "agents/agent_ops.h"
#include "agents/cuda_graph.h"
#include "agents/episode_stats.h"
#include "agents/q_learner.h"
#include "agents/train_config.h"
#include "core/memory.h"
#include "core/registry.h"

namespace cugym::agent {

class PqnAgent final : public Agent {
 public:
  // A lane per seed (`seeds` empty: one lane of config.seed). Throws std::invalid_argument for an
  // env without discrete actions, an unknown env, a bad config (config.algo must be "pqn"), a seed
  // listed twice and what Unbatchable names.
  PqnAgent(const Registry& registry, const TrainConfig& config, Device device, std::vector<uint64_t> seeds = {});
  ~PqnAgent() override;

  const TrainConfig& config() const override { return config_; }
  const std::vector<uint64_t>& seeds() const override { return lanes_->seeds(); }
  int64_t global_step() const override { return global_step_; }
  double Epsilon(int64_t step) const;

  // One rollout (num_envs * num_steps env steps) and its updates; logs, evaluations and
  // checkpoints fall on the iteration that reaches their interval.
  void Iterate() override;
  MetricsRow Progress(int lane, double seconds, int64_t steps, const LoopState& loop) override;
  EvalResult Evaluate(int lane, int64_t index) override;
  std::vector<EvalResult> EvaluateModels(const std::vector<int>& lanes, int64_t episodes, int64_t num_envs,
                                         uint64_t seed_offset) override;
  void SaveModel(int lane, const std::string& path) const override;
  void LoadModel(int lane, const std::string& path) override;
  // Between iterations, so no rollout is in flight: lane k's network and its optimizer (the
  // learner's checkpoint without a target network), its envs' state, exploration holds and episode
  // statistics, and the counters (cugym.algo "pqn", cugym.global_step, .vector_steps, .wall_time,
  // .last_eval_return): the solo run's file.
  void SaveCheckpoint(int lane, const std::string& path, const LoopState& loop) const override;
  std::vector<LoopState> LoadCheckpoints(const std::vector<std::unique_ptr<CheckpointReader>>& in) override;
  using Agent::LoadCheckpoints;
  std::unique_ptr<Agent> Keep(const std::vector<int>& keep) const override;

  // CUDA with cuda_graph and a capturable env: whether iterations are replayed from one captured
  // graph (from the second iteration on, unless the capture failed).
  bool replays_iteration_graph() const override { return iteration_graph_.replaying(); }
  void set_iteration_graph_on_cpu(bool on) override { iteration_graph_on_cpu_ = on; }

 private:
  // The public constructor's agent on `backend` (Keep's: learners on one back end exchange replicas).
  PqnAgent(const Registry& registry, const TrainConfig& config, std::vector<uint64_t> seeds,
           std::shared_ptr<nn::Backend> backend);
  // One iteration's work, all on the back end's stream: the rollout (greedy forwards on the steps
  // where `greedy_from` <= t; the graph runs them all), the values and targets, the updates.
  void IterationKernels(int64_t greedy_from);
  void CollectStep(int64_t t, bool greedy);
  // max_a Q(next_obs) of every rollout row, from the network before this iteration's updates.
  void NextValues();
  void LearnKernels();
  EpsilonSchedule epsilon_schedule() const;
  RolloutArrays rollout();

  const Registry* registry_;
  TrainConfig config_;
  Device device_;
  EnvSpec spec_;
  std::unique_ptr<VectorEnv> env_;  // K x n envs in lanes, lane k's the k-th n
  std::unique_ptr<QLearner> learner_;
  std::unique_ptr<AgentOps> ops_;
  std::unique_ptr<AgentLanes> lanes_;  // seeds, episodes, holds, evaluations (agent_lanes.h)
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
  Buffer<StepCounters> counters_dev_;  // [1] vector and env steps, kept by AdvanceSteps

  CudaGraph iteration_graph_;
  bool use_graph_ = false;  // CUDA, cuda_graph, a capturable env
  bool iteration_graph_on_cpu_ = false;

  int64_t global_step_ = 0;
  int64_t vector_steps_ = 0;
};

}  // namespace cugym::agent
