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
#include <functional>
#include <memory>
#include <string>

#include "agents/agent.h"
#include "agents/agent_ops.h"
#include "agents/cuda_graph.h"
#include "agents/dqn_config.h"
#include "agents/episode_stats.h"
#include "agents/q_learner.h"
#include "core/memory.h"
#include "core/registry.h"

namespace cugym::agent {

class PqnAgent final : public Agent {
 public:
  // Throws std::invalid_argument for an env without discrete actions, an unknown env or a bad
  // config (config.algo must be "pqn").
  PqnAgent(const Registry& registry, const DqnConfig& config, Device device);
  ~PqnAgent() override;

  const DqnConfig& config() const override { return config_; }
  int64_t global_step() const override { return global_step_; }
  double Epsilon(int64_t step) const;
  // CUDA with cuda_graph and a capturable env: whether iterations are replayed from one captured
  // graph (from the second iteration on, unless the capture failed).
  bool replays_iteration_graph() const { return iteration_graph_.replaying(); }
  // Tests: the graph path on the CPU too (nn's Graph calls the recorded work again), so its
  // scheduling is checked against the eager loop without a GPU.
  void set_iteration_graph_on_cpu(bool on) { iteration_graph_on_cpu_ = on; }

  // Agent::Train: one iteration per rollout (num_envs * num_steps env steps); logs, evaluations
  // and checkpoints fall on the iteration that reaches their interval.
  void Train(const std::function<void(const DqnProgress&)>& on_log, const std::function<bool()>& stop,
             const std::function<void()>& on_checkpoint,
             const std::function<bool(const DqnEvaluation&)>& on_eval = {}) override;
  EvalResult Evaluate(int64_t k) override;

  // Between iterations, so no rollout is in flight: the network and its optimizer (the learner's
  // checkpoint without a target network), the envs' state, the exploration holds, the episode
  // statistics and the counters (cugym.algo "pqn", cugym.global_step, .vector_steps, .wall_time,
  // .last_eval_return).
  void SaveCheckpoint(const std::string& path) const override;
  void LoadCheckpoint(const std::string& path) override;
  void SaveModel(const std::string& path) const override;

 private:
  void Iteration();
  // One iteration's work, all on the back end's stream: the rollout (greedy forwards on the steps
  // where `greedy_from` <= t; the graph runs them all), the values and targets, the updates.
  void IterationKernels(int64_t greedy_from);
  void CollectStep(int64_t t, bool greedy);
  void LearnKernels();
  ExploreHold explore_hold();
  EpsilonSchedule epsilon_schedule() const;
  RolloutArrays rollout();

  DqnConfig config_;
  Device device_;
  EnvSpec spec_;
  std::unique_ptr<VectorEnv> env_;
  std::unique_ptr<VectorEnv> eval_env_;  // eval_episodes envs, when evaluating
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
  Buffer<StepCounters> counters_dev_;  // [1] vector and env steps, kept by AdvanceSteps

  CudaGraph iteration_graph_;
  bool use_graph_ = false;  // CUDA, cuda_graph, a capturable env
  bool iteration_graph_on_cpu_ = false;

  int64_t global_step_ = 0;
  int64_t vector_steps_ = 0;
  double wall_time_ = 0;
  double last_eval_return_;  // of the latest evaluation, NaN before any
};

}  // namespace cugym::agent
