// SAC (Haarnoja et al. 2018, as CleanRL's sac_continuous_action.py trains it; docs/sac.md) on
// batched envs with Box actions, for K >= 1 lanes: each iteration is one vector step of n envs per
// lane (uniform random actions before learning_starts, then draws of the squashed Gaussian actor),
// the transitions into each lane's replay memory (replay_memory.h with float actions), then the
// gradient steps that fall on it (replay_ratio per env step, as DQN's): each samples a minibatch,
// regresses both critics onto the soft Bellman target of the target critics (the smaller of the
// two, minus alpha log pi of a fresh next action; sac_kernels.h), and Polyak-averages the targets;
// every policy_frequency-th takes policy_frequency actor steps (reparameterized, through the
// smaller critic) and, with autotune, temperature steps. Everything runs on the back end's stream;
// on CUDA with cuda_graph, a whole number of gradient steps per vector step that policy_frequency
// divides and an env stepped on the device, a whole learning iteration is one graph. Lane k's
// networks, files and rows are, on the CPU, bit for bit the solo run's of seed k.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "agents/agent_lanes.h"
#include "agents/agent_ops.h"
#include "agents/cuda_graph.h"
#include "agents/replay_memory.h"
#include "agents/sac_learner.h"
#include "agents/train_config.h"
#include "core/memory.h"
#include "core/registry.h"

namespace cugym::agent {

class SacAgent final : public Agent {
 public:
  // A lane per seed (`seeds` empty: one lane of config.seed). Throws std::invalid_argument for an
  // env without a flat Box of actions, an unknown env, a bad config (config.algo must be "sac"), a
  // seed listed twice, what Unbatchable names, and replay memories that would not fit.
  SacAgent(const Registry& registry, const TrainConfig& config, Device device, std::vector<uint64_t> seeds = {});
  ~SacAgent() override;

  const TrainConfig& config() const override { return config_; }
  const std::vector<uint64_t>& seeds() const override { return lanes_->seeds(); }
  int64_t global_step() const override { return global_step_; }

  void Iterate() override;
  MetricsRow Progress(int lane, double seconds, int64_t steps, const LoopState& loop) override;
  EvalResult Evaluate(int lane, int64_t index) override;
  std::vector<EvalResult> EvaluateModels(const std::vector<int>& lanes, int64_t episodes, int64_t num_envs,
                                         uint64_t seed_offset) override;
  // Lane k's actor as a policy model file (SavePolicyModel: the actor's means and log-stds, acting
  // by tanh of the mean rescaled to the Box), and back.
  void SaveModel(int lane, const std::string& path) const override;
  void LoadModel(int lane, const std::string& path) override;
  // Lane k's networks, temperature, optimizers, replay memory (with save_replay), envs and
  // episodes, and the counters (cugym.algo "sac", cugym.global_step, .vector_steps, .updates,
  // .update_debt, .draws, .wall_time, .last_eval_return): the solo run's file. Without the replay
  // memory in it (save_replay = false) a resumed run acts with its actor and learns again once
  // min(learning_starts, buffer_size) new transitions are stored.
  void SaveCheckpoint(int lane, const std::string& path, const LoopState& loop) const override;
  std::vector<LoopState> LoadCheckpoints(const std::vector<std::unique_ptr<CheckpointReader>>& in) override;
  using Agent::LoadCheckpoints;
  std::unique_ptr<Agent> Keep(const std::vector<int>& keep) const override;

  bool replays_iteration_graph() const override { return iteration_graph_.replaying(); }
  void set_iteration_graph_on_cpu(bool on) override { iteration_graph_on_cpu_ = on; }
  const SacLearner& learner() const { return *learner_; }

 private:
  SacAgent(const Registry& registry, const TrainConfig& config, std::vector<uint64_t> seeds,
           std::shared_ptr<nn::Backend> backend);
  // What one iteration queues after its vector step, decided on the host.
  struct IterationPlan {
    bool random = true;   // uniform random actions (before learning_starts)
    int64_t updates = 0;  // critic updates
    int64_t first = 0;    // critic updates before this iteration's
    // Whether the actor steps after this iteration's critic update u (0-based): after every
    // policy_frequency-th of the run.
    bool ActorStepsAfter(int64_t u, int64_t policy_frequency) const { return (first + u + 1) % policy_frequency == 0; }
  };
  IterationPlan PlanIteration();
  bool IterationGraphFits(const IterationPlan& plan) const;
  void Collect(bool random);
  void UpdateCritics();
  void UpdateActor(uint32_t repeat);
  // The listed work of one learning iteration: the graph's.
  void IterationKernels(const IterationPlan& plan);
  // EvaluateLanes' play with the actor acting deterministically on every lane.
  AgentLanes::Play DeterministicPlay();
  SacLearner& Solo(int lane) const;
  SacHead head() const { return SacHead{action_dim_, low_.data(), high_.data()}; }

  const Registry* registry_;
  TrainConfig config_;
  Device device_;
  int64_t n_;  // envs per lane
  int obs_dim_, action_dim_;
  std::unique_ptr<SacLearner> learner_;
  std::unique_ptr<AgentOps> ops_;
  std::unique_ptr<VectorEnv> env_;
  std::unique_ptr<ReplayMemory> replay_;
  std::unique_ptr<AgentLanes> lanes_;
  mutable std::unique_ptr<SacLearner> solo_;
  Buffer<float> low_, high_;  // the Box's bounds
  PolicyHead eval_head_;      // the deterministic action: tanh of the means, rescaled

  // Acting: the observations before the step and the actions [K n].
  Buffer<float> obs_, actions_;
  Buffer<float> noise_state_;  // [K n][A] the acting noise's AR(1) state (noise_correlation > 0)
  Buffer<StepCounters> counters_dev_;
  // An update's rows [K b]: the critics' inputs, the next actions and their log-probabilities, the
  // target critics' values, the actor's draws; the losses' scratch and statistics.
  Buffer<float> critic_in_, next_actions_, next_log_probs_, pi_actions_, pi_log_probs_, pi_noise_;
  Buffer<double> row_terms_;
  Buffer<float> stats_;             // [K][kSacStats]
  PolicyPlayScratch eval_scratch_;  // evaluation's
  std::vector<float> read_stats_;
  int64_t read_step_ = -1;

  CudaGraph iteration_graph_;
  int64_t graph_updates_ = -1;  // critic updates per learning iteration in the graph; -1: no graph
  bool iteration_graph_on_cpu_ = false;

  // The host's schedule (all K share it).
  int64_t global_step_ = 0;
  int64_t vector_steps_ = 0;
  int64_t updates_ = 0;  // critic updates so far
  int64_t actor_updates_ = 0;
  double update_debt_ = 0;
  int64_t learning_resumes_at_ = 0;  // learning_starts, or after a resume without the replay memory
};

}  // namespace cugym::agent
