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
// divides and an env stepped on the device, a whole learning iteration is one graph. The loop
// around the losses is the off-policy family's (off_policy_agent.h). Lane k's
// networks, files and rows are, on the CPU, bit for bit the solo run's of seed k.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agents/common/algorithm.h"
#include "agents/common/policy_ops.h"
#include "agents/off_policy/off_policy_agent.h"
#include "agents/off_policy/sac_learner.h"
#include "agents/off_policy/sac_ops.h"

namespace cugym::agent {

// A lane's replay memory for `config` on `spec`'s env, float actions (the agent's, and the
// registry's size check).
ReplayOptions SacReplayOptions(const TrainConfig& config, const EnvSpec& spec);
// SAC as the registry knows it (algorithm.h): "sac", its columns, keys, checks and factory.
Algorithm SacAlgorithm();

class SacAgent final : public OffPolicyAgent {
 public:
  // A lane per seed (`seeds` empty: one lane of config.seed). Throws std::invalid_argument for an
  // env without a flat Box of actions, an unknown env, a bad config (config.algo must be "sac"), a
  // seed listed twice, what Unbatchable names, and replay memories that would not fit.
  SacAgent(const Registry& registry, const TrainConfig& config, Device device, std::vector<uint64_t> seeds = {});
  ~SacAgent() override;

  void Iterate() override;
  MetricsRow Progress(int lane, double seconds, int64_t steps, const LoopState& loop) override;
  // Lane k's actor as a policy model file (SavePolicyModel: the actor's means and log-stds, acting
  // by tanh of the mean rescaled to the Box), and back.
  void SaveModel(int lane, const std::string& path) const override;
  void LoadModel(int lane, const std::string& path) override;
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
  SacLearner& Solo(int lane) const { return solo_.Of(*learner_, lane, backend_); }
  SacHead head() const { return SacHead{action_dim_, low_.data(), high_.data()}; }

  // LaneAgent's and OffPolicyAgent's hooks. A checkpoint adds cugym.updates, .actor_updates, the
  // acting noise's state (sac.noise_state) and the learner (networks, temperature, optimizers).
  // Tanh of the means, rescaled to the Box (eval_head_), as the model file acts.
  AgentLanes::Play Play() override;
  int64_t max_play_envs() const override { return learner_->options().max_batch; }
  void SaveOwn(int lane, CheckpointWriter& out) const override;
  void CheckOwn(const std::vector<std::unique_ptr<CheckpointReader>>& in) const override;
  void LoadOwn(int lane, const CheckpointReader& in) override;
  void ResumedOwn(const CheckpointReader& first) override;
  std::unique_ptr<LaneAgent> MakeLike(std::vector<uint64_t> seeds) const override;
  void KeepOwn(const std::vector<int>& keep, LaneAgent& next) const override;

  int obs_dim_, action_dim_;
  std::unique_ptr<SacOps> sac_ops_ = MakeOps<SacOps>(device_, stream());
  std::unique_ptr<PolicyOps> policy_ops_ = MakeOps<PolicyOps>(device_, stream());  // evaluations
  std::unique_ptr<SacLearner> learner_;
  SoloCopy<SacLearner> solo_;
  Buffer<float> low_, high_;  // the Box's bounds
  PolicyHead eval_head_;      // the deterministic action: tanh of the means, rescaled

  // Acting: the observations before the step and the actions [K n].
  Buffer<float> obs_, actions_;
  Buffer<float> noise_state_;  // [K n][A] the acting noise's AR(1) state (noise_correlation > 0)
  // An update's rows [K b]: the critics' inputs, the next actions and their log-probabilities, the
  // target critics' values, the actor's draws; the losses' scratch and statistics.
  Buffer<float> critic_in_, next_actions_, next_log_probs_, pi_actions_, pi_log_probs_, pi_noise_;
  Buffer<double> row_terms_;
  Buffer<float> stats_;             // [K][kSacStats]
  PolicyPlayScratch eval_scratch_;  // evaluation's
  std::vector<float> read_stats_;
  int64_t read_step_ = -1;

  int64_t graph_updates_ = -1;  // critic updates per learning iteration in the graph; -1: no graph
  int64_t updates_ = 0;         // critic updates so far
  int64_t actor_updates_ = 0;
};

}  // namespace cugym::agent
