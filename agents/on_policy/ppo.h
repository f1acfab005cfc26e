// PPO (Schulman et al. 2017, as CleanRL's ppo.py and ppo_continuous_action.py train it; docs/ppo.md):
// each iteration collects a rollout of num_envs x num_steps transitions with the current policy
// (a categorical policy over the actor's logits for Discrete actions, a diagonal Gaussian over its
// means with a state-independent log_std for a Box), values it with the critic, computes GAE(lambda)
// advantages, then takes num_epochs passes of num_minibatches shuffled minibatches of the clipped
// objective (ppo_loss_kernels.h), the three parameter sets clipped by their joint gradient norm,
// Adam with the learning rate falling linearly with anneal_lr. Observations and rewards may be
// normalized by running statistics (normalize_obs, normalize_reward), kept in checkpoints and model
// files. Everything runs on the back end's stream; on CUDA with cuda_graph and an env stepped on
// the device, a whole iteration is one graph (the loop around the loss is the on-policy family's,
// on_policy_agent.h). The host reads only scalars, at log steps.
// K >= 1 lanes (agent.h): one replicated learner, K x n envs, one rollout over all of them; lane
// k's network, files and rows are, on the CPU, bit for bit the solo run's of seed k.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agents/common/algorithm.h"
#include "agents/common/normalizer.h"
#include "agents/common/policy_ops.h"
#include "agents/on_policy/on_policy_agent.h"
#include "agents/on_policy/ppo_learner.h"
#include "agents/on_policy/ppo_ops.h"

namespace cugym::agent {

// CleanRL's clips of the normalized observations and rewards (after Gymnasium's normalizers).
inline constexpr double kPpoObsClip = 10.0, kPpoRewardClip = 10.0;

// PPO as the registry knows it (algorithm.h): "ppo", its columns, keys, checks and factory.
Algorithm PpoAlgorithm();

class PpoAgent final : public OnPolicyAgent {
 public:
  // A lane per seed (`seeds` empty: one lane of config.seed). Throws std::invalid_argument for an
  // unknown env, a policy that does not fit the env's actions, a bad config (config.algo must be
  // "ppo"), a seed listed twice and what Unbatchable names.
  PpoAgent(const Registry& registry, const TrainConfig& config, Device device, std::vector<uint64_t> seeds = {});
  ~PpoAgent() override;

  MetricsRow Progress(int lane, double seconds, int64_t steps, const LoopState& loop) override;
  // Lane k's actor as a policy model file (SavePolicyModel: the actor, log_std, the observation
  // normalizer), and back.
  void SaveModel(int lane, const std::string& path) const override;
  void LoadModel(int lane, const std::string& path) override;

 private:
  PpoAgent(const Registry& registry, const TrainConfig& config, std::vector<uint64_t> seeds,
           std::shared_ptr<nn::Backend> backend);
  void IterationKernels(bool captured) override;
  // With target_kl the host decides after each epoch whether to go on: every iteration is eager.
  bool EveryIterationAlike() const override { return config_.target_kl <= 0; }
  void CollectStep(int64_t t);
  void GatherMinibatch(int64_t first, int64_t rows, int64_t epoch) override;
  // One minibatch of every lane: both networks forward, the loss and its gradients, the step.
  void TrainMinibatch() override;
  bool StopEpochs() override;
  // The normalized (or copied) current observations of `env` into `out`, for lanes of m envs.
  void ObserveCurrent(const float* obs, float* out, int64_t m, bool frozen);
  PpoLearner& Solo(int lane) const { return solo_.Of(*learner_, lane, backend_); }

  // LaneAgent's hooks: a checkpoint adds the normalizers and the learner (networks, log_std,
  // optimizers).
  AgentLanes::Play Play() override;
  int64_t max_play_envs() const override { return learner_->options().max_batch; }
  void SaveLane(int lane, CheckpointWriter& out) const override;
  void LoadLane(int lane, const CheckpointReader& in) override;
  void Resumed(const CheckpointReader& first) override;
  std::unique_ptr<LaneAgent> MakeLike(std::vector<uint64_t> seeds) const override;
  void KeepLanes(const std::vector<int>& keep, LaneAgent& next) const override;

  EnvSpec spec_;
  std::unique_ptr<PolicyOps> policy_ops_ = MakeOps<PolicyOps>(device_, stream());
  std::unique_ptr<PpoOps> ppo_ops_ = MakeOps<PpoOps>(device_, stream());
  std::unique_ptr<PpoLearner> learner_;
  SoloCopy<PpoLearner> solo_;
  std::unique_ptr<Normalizers> norms_;
  int obs_dim_;
  int outputs_;  // the actor's: actions (categorical) or action dimensions (Gaussian)
  PolicyHead head_;
  PpoLossConfig loss_;
  Buffer<float> low_, high_;  // Gaussian: the Box's bounds

  // The rollout of all lanes, step-major over K x n envs (ppo_rollout_kernels.h), and the
  // observations the next step acts on.
  Buffer<float> current_obs_, obs_, next_obs_, samples_, env_actions_, log_probs_, values_, next_values_, rewards_,
      advantages_, returns_;
  Buffer<int32_t> actions_;
  Buffer<uint8_t> terminated_, truncated_;
  // One minibatch per lane, and the loss's outputs and scratch.
  Buffer<float> batch_obs_, batch_samples_, batch_log_probs_, batch_values_, batch_advantages_, batch_returns_;
  Buffer<int32_t> batch_actions_;
  Buffer<float> stats_;  // [K][kPpoStats] of the last minibatch
  Buffer<double> moments_, row_terms_;
  PolicyPlayScratch eval_scratch_;  // evaluation's
  // Host reads at a log step: the stats of every lane, their rollouts' values and returns, the
  // updates taken.
  std::vector<float> read_stats_, read_values_, read_returns_;
  int64_t read_updates_ = 0;
  int64_t read_step_ = -1;
};

}  // namespace cugym::agent
