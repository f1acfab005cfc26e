// A trained model acting greedily: the Q network of a DQN or PQN model file (cugym train's
// model.safetensors or a checkpoint), or the actor of a PPO or SAC policy file (SavePolicyModel), checked
// against the env it is to act in.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agents/common/policy_ops.h"
#include "core/memory.h"
#include "core/registry.h"
#include "core/safetensors.h"
#include "nn/backend.h"
#include "nn/mlp.h"

namespace cugym::agent {

// What a PPO or SAC model file holds besides the actor network.
struct PolicyModelInfo {
  std::string algo = "ppo";  // "ppo" or "sac": who wrote it
  std::string env_id;
  int64_t global_step = 0;
  bool gaussian = false;  // false: categorical over the logits; true: diagonal Gaussian over the means
  bool squash = false;    // gaussian: tanh(mean) rescaled to the Box (else the mean clipped to the Box)
  // gaussian: the actor's outputs are the means, then as many log standard deviations (SAC's
  // state-dependent ones, metadata cugym.log_std = "state"); the action is the means' alone.
  bool state_log_std = false;
  std::vector<float> log_std;             // gaussian, not state_log_std: [action_dim], the state-independent log std
  std::vector<double> obs_mean, obs_var;  // [obs_dim] each, the observation normalizer's statistics; empty: none
  double obs_clip = 10.0;                 // the normalized observations' clip
};

// Writes `actor` (a network of one replica) with `info` as a model file: the network's tensors under the names
// SaveMlp gives them (so LoadMlp and PyTorch read it as a network), "log_std" F32 [A] for a Gaussian, and for a
// normalizer "norm.obs_mean" / "norm.obs_var" as I64 tensors holding the doubles' bit patterns (as
// normalizer.cpp writes them in checkpoints), with metadata cugym.kind = "policy", cugym.algo = info.algo,
// cugym.log_std = "state" (SAC's actor: no log_std tensor, twice the outputs) or "parameter",
// cugym.policy = "categorical" | "gaussian", cugym.squash ("true" | "false"), cugym.norm.obs_clip, cugym.env_id,
// cugym.global_step, cugym.version and the network's keys (cugym.layers, cugym.activation, cugym.conv, cugym.norm).
// Throws std::invalid_argument for a log_std or statistics of the wrong size (docs/ppo.md, "Model files").
void SavePolicyModel(const std::string& path, const nn::Mlp& actor, const PolicyModelInfo& info);
// Reads such a file into `actor` (same layers and activation; throws std::invalid_argument naming the file for
// another shape, kind, a damaged file, or a Q model), returning its info.
PolicyModelInfo LoadPolicyModel(const std::string& path, nn::Mlp& actor);

// The one deterministic action of a PPO actor, shared by GreedyPolicy (model files) and the PPO
// agent's evaluation, so that both queue exactly these device ops on `ops`'s stream (the actor's):
//   1. with a normalizer (moments.mean set, moments.lanes = lanes): ops.NormalizeObservations(
//      moments, obs, normalized, n, frozen = true, clip), the lanes' observations into
//      `normalized` ([lanes n][obs_dim]);
//   2. actor.Forward of the (normalized) observations, lanes x n rows (one replica per lane);
//   3. ops.SamplePolicy(head, outputs, lanes, n, nullptr, nullptr, deterministic = true, out):
//      categorical: out.actions = the first largest logit; gaussian: out.samples = the means and
//      out.env_actions = GaussianEnvAction of them (clipped to the Box, or with squash tanh
//      rescaled to it; head.low and head.high are the Box's bounds as device arrays).
// On the CPU the same inputs give the same bits, whoever calls it.
void ActDeterministically(PolicyOps& ops, nn::Mlp& actor, const PolicyHead& head, const RunningMoments& moments,
                          double clip, const float* obs, float* normalized, int64_t lanes, int64_t n,
                          const PolicySample& out);

class GreedyPolicy {
 public:
  // Loads `model_path` for `env_id` ("" = the env named in the model's metadata) for up to
  // max_batch observations at a time. A Q model (cugym.kind "mlp") acts by argmax_a Q on a
  // Discrete env; a PPO policy file (cugym.kind "policy") builds its actor as the file says and
  // acts by ActDeterministically: categorical on a Discrete env, gaussian on a Box env. Throws
  // std::invalid_argument for a missing or damaged file, a model naming no env, a model of the
  // other kind of action space (a Q model or a categorical policy on a Box env, a gaussian policy
  // on a Discrete env), or layer sizes that do not fit the env's observation and action sizes.
  GreedyPolicy(const Registry& registry, const std::string& model_path, const std::string& env_id, int64_t max_batch,
               Device device);

  const std::string& env_id() const { return env_id_; }
  // Whether the env's actions are a Box: Act with float actions; else with int32 ones.
  bool continuous() const { return continuous_; }
  // Whether the file is a PPO or SAC policy file (else a Q model).
  bool is_policy_model() const { return policy_model_; }
  // Floats per action: the Box's size (continuous), else 1.
  int64_t action_dim() const { return action_dim_; }
  // The actions for n rows of obs [n x obs_dim] (device pointers): argmax_a Q(obs_i, a) of a Q
  // model, or the PPO actor's deterministic action. Throws std::invalid_argument on a Box env.
  void Act(const float* obs, int32_t* actions, int64_t n);
  // The PPO actor's deterministic actions [n x action_dim] on a Box env; std::invalid_argument on a
  // Discrete one.
  void Act(const float* obs, float* actions, int64_t n);
  // The stream Act queues on (nn::Backend::native_stream()), for kernels that use its actions.
  void* native_stream() const { return backend_->native_stream(); }

 private:
  void LoadQModel(const SafetensorsFile& file, const std::string& path, const EnvSpec& spec, int64_t max_batch);
  void LoadPolicy(const SafetensorsFile& file, const std::string& path, const EnvSpec& spec, int64_t max_batch);
  void ActPolicy(const float* obs, const PolicySample& out, int64_t n);

  std::string env_id_;
  int obs_dim_ = 0;
  Device device_;
  bool continuous_ = false, policy_model_ = false;
  int64_t action_dim_ = 1;
  std::shared_ptr<nn::Backend> backend_;
  std::unique_ptr<nn::Mlp> net_;
  bool dueling_ = false;  // a dueling head (model metadata cugym.head): Q from V and A
  Buffer<float> q_;       // dueling: the aggregated Q values
  // A policy file: its head, normalizer and clip, and their device arrays.
  std::unique_ptr<PolicyOps> ops_;
  PolicyHead head_;
  RunningMoments moments_;
  double clip_ = 10.0;
  Buffer<float> log_std_, low_, high_, normalized_, samples_;
  Buffer<double> obs_mean_, obs_var_, obs_count_;
};

}  // namespace cugym::agent
