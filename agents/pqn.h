// PQN (Gallici et al., "Simplifying Deep Temporal Difference Learning", ICLR 2025): Q-learning
// built for batched envs. Each iteration collects a rollout of num_envs x num_steps transitions
// epsilon-greedily, computes Q(lambda) targets backwards over it with the network as it was
// during the rollout (pqn_kernels.h), then takes num_epochs passes of num_minibatches shuffled
// minibatches of MSE regression onto them, clipped by global norm, with RAdam or Adam (learning
// rate decaying linearly with anneal_lr), and discards the rollout: no replay memory, no target
// network; LayerNorm (layer_norm) keeps it stable. Everything runs on the back end's stream; on
// CUDA with cuda_graph and an env stepped on the device, a whole iteration is one graph. The
// host reads only scalars, for the progress line and metrics.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agents/agent.h"
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
  // One lane for now (`seeds` empty or of one seed: PQN's LayerNorm, convolution and gradient
  // clipping have no replicated form yet, Unbatchable). Throws std::invalid_argument for an env
  // without discrete actions, an unknown env or a bad config (config.algo must be "pqn").
  PqnAgent(const Registry& registry, const TrainConfig& config, Device device, std::vector<uint64_t> seeds = {});
  ~PqnAgent() override;

  const TrainConfig& config() const override { return config_; }
  const std::vector<uint64_t>& seeds() const override { return seeds_; }
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
  // Between iterations, so no rollout is in flight: the network and its optimizer (the learner's
  // checkpoint without a target network), the envs' state, the exploration holds, the episode
  // statistics and the counters (cugym.algo "pqn", cugym.global_step, .vector_steps, .wall_time,
  // .last_eval_return).
  void SaveCheckpoint(int lane, const std::string& path, const LoopState& loop) const override;
  std::vector<LoopState> LoadCheckpoints(const std::vector<std::unique_ptr<CheckpointReader>>& in) override;
  using Agent::LoadCheckpoints;
  // Null: one lane has nothing to shrink to.
  std::unique_ptr<Agent> Keep(const std::vector<int>& keep) const override;

  // CUDA with cuda_graph and a capturable env: whether iterations are replayed from one captured
  // graph (from the second iteration on, unless the capture failed).
  bool replays_iteration_graph() const override { return iteration_graph_.replaying(); }
  void set_iteration_graph_on_cpu(bool on) override { iteration_graph_on_cpu_ = on; }

 private:
  // One iteration's work, all on the back end's stream: the rollout (greedy forwards on the steps
  // where `greedy_from` <= t; the graph runs them all), the values and targets, the updates.
  void IterationKernels(int64_t greedy_from);
  void CollectStep(int64_t t, bool greedy);
  void LearnKernels();
  void CheckLane(int lane, const char* op) const;
  ExploreHold explore_hold();
  EpsilonSchedule epsilon_schedule() const;
  RolloutArrays rollout();

  const Registry* registry_;
  TrainConfig config_;
  std::vector<uint64_t> seeds_;
  Device device_;
  EnvSpec spec_;
  std::unique_ptr<VectorEnv> env_;
  std::unique_ptr<VectorEnv> eval_env_;   // eval_episodes envs, when evaluating
  std::unique_ptr<VectorEnv> model_env_;  // EvaluateModels' envs, made at its first use
  Buffer<int32_t> eval_actions_;
  std::unique_ptr<QLearner> learner_;
  std::unique_ptr<AgentOps> ops_;
  int obs_dim_;
  int num_actions_;
  int64_t value_rows_;  // rows per forward when the rollout's next observations are valued

  // The rollout (pqn_kernels.h's RolloutArrays) and one minibatch.
  Buffer<float> obs_, next_obs_, rewards_, next_values_, targets_;
  Buffer<int32_t> actions_;
  Buffer<uint8_t> terminated_, truncated_;
  Buffer<float> batch_obs_, batch_targets_;
  Buffer<int32_t> batch_actions_;
  Buffer<int32_t> held_actions_, hold_left_;  // [n] ez-greedy holds (exploration_hold_mu > 0)
  std::unique_ptr<EpisodeStats> episodes_;
  Buffer<EpisodeRing> ring_dev_;       // [1] episodes_'s ring, as CollectEpisodes reads the lanes' rings
  Buffer<uint64_t> seed_dev_;          // [1] the seed, as Explore reads the lanes' seeds
  Buffer<StepCounters> counters_dev_;  // [1] vector and env steps, kept by AdvanceSteps

  CudaGraph iteration_graph_;
  bool use_graph_ = false;  // CUDA, cuda_graph, a capturable env
  bool iteration_graph_on_cpu_ = false;

  int64_t global_step_ = 0;
  int64_t vector_steps_ = 0;
};

}  // namespace cugym::agent
