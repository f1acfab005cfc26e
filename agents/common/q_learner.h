// The Q-learning learner of the DQN agent, on one device with no host synchronisation: regress
// Q(s, a) of an online MLP onto given targets (MSE or Huber), backward, clip, Adam; act greedily;
// evaluate a target network (max over outputs, or at given actions); hard or Polyak target
// updates; checkpoints. Built on nn's Mlp, Adam and "regress selected outputs" (GatherLoss); it
// knows nothing of envs or replay: the agent computes the TD targets.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/memory.h"
#include "core/safetensors.h"
#include "nn/adam.h"
#include "nn/backend.h"
#include "nn/mlp.h"

namespace cugym::agent {

class CheckpointReader;  // checkpoint.h
class CheckpointWriter;

struct QLearnerOptions {
  std::vector<int> layer_sizes;              ///< {observation size, hidden sizes..., number of actions}
  int batch_size = 128;                      ///< most rows one TrainStep takes (the minibatch)
  int max_act_batch = 1;                     ///< most rows Act / TargetMaxQ / TargetQAt take (e.g. the env count)
  nn::LossKind loss = nn::LossKind::kHuber;  ///< SB3's DQN uses Huber, CleanRL's MSE
  nn::AdamOptions adam;
  uint64_t seed = 0;  ///< initial weights; the target network starts as a copy of the online one
  /// A dueling head (Wang et al. 2016): the network's last layer has one value output and one
  /// advantage per action, combined as V + A - mean(A) (nn::Backend::ValueAdvantage).
  bool dueling = false;
  /// A convolution in front of the MLP for image observations (out_channels 0: none):
  /// layer_sizes[0] must then be height * width * in_channels (nn::MlpOptions::conv).
  nn::ConvSpec conv;
  /// A LayerNorm before every hidden ReLU (nn::MlpOptions::layer_norm): PQN's network.
  bool layer_norm = false;
  /// A target network (DQN). Without one (PQN, whose targets come from the online network before
  /// its updates) TargetMaxQ, TargetQAt and UpdateTarget throw and checkpoints hold no "target.".
  bool target_network = true;
  /// K learners in one (nn::MlpOptions::replicas: the agents of a batch of seeds): every call
  /// takes and gives K equal blocks of rows, replica r's after replica r - 1's, and each replica
  /// learns as a learner of one would from its own rows (the same bits on the CPU): any network
  /// (convolution, LayerNorm, dueling head), gradients clipped by each replica's own norm; all
  /// replicas share these options and take their gradient steps together. Save and Load take
  /// learners of one.
  int replicas = 1;
  /// Replica r's initial weights from replica_seeds[r] (empty: every replica from `seed`).
  std::vector<uint64_t> replica_seeds;
};

/// The convolution TrainConfig's conv_channels asks for (3 x 3, stride 1, no padding, as MinAtar's
/// network) on observations of `obs_shape` (H, W, C), or none for conv_channels 0. Throws
/// std::invalid_argument when the observations are not images: "conv_channels needs an image
/// observation (H, W, C); CartPole-v1's is (4,)".
nn::ConvSpec ConvForObservations(int64_t conv_channels, const std::vector<int64_t>& obs_shape,
                                 const std::string& env_id);

/// The layer sizes of the network a learner with `options` trains: layer_sizes, with one more
/// output (the value) when dueling.
std::vector<int> NetworkSizes(const QLearnerOptions& options);

/// Q values from a network's outputs `out` [n x outputs]: `out` itself, or for a dueling head
/// V + A - mean(A) written to `scratch` (n x (outputs - 1) floats on the back end's device).
nn::ConstBatchView QFromOutputs(nn::Backend& backend, nn::ConstBatchView out, bool dueling, float* scratch);

class QLearner {
 public:
  struct Stats {
    float loss = 0;       // of the last TrainStep
    float mean_q = 0;     // mean Q(s, a) of the last TrainStep's minibatch
    float grad_norm = 0;  // the replica's gradient norm before clipping (0 when clipping is off)
    int64_t updates = 0;  // Adam steps taken
  };

  QLearner(std::shared_ptr<nn::Backend> backend, const QLearnerOptions& options);

  // One gradient step on a minibatch on the back end's device: obs [B x in], actions [B] int32
  // in [0, out), targets [B]. loss = mean_b L(Q(obs_b, a_b) - target_b); then backward, optional
  // clipping and Adam, all queued. GPU kernels: 6 forward, 1 loss, 7 backward, 1 Adam (+1 for
  // clipping) for a 3-layer network. Optional: `weights` [B] weigh each row's loss (prioritized
  // replay's importance weights); `errors` [B] receives Q(obs_b, a_b) - target_b.
  void TrainStep(nn::ConstBatchView obs, nn::VectorView<const int32_t> actions, nn::VectorView<const float> targets,
                 nn::VectorView<const float> weights = {}, nn::VectorView<float> errors = {});

  // Greedy actions argmax_a Q_online(obs_i, a) for obs [n x in] (ties to the lowest index).
  void Act(nn::ConstBatchView obs, nn::VectorView<int32_t> actions);
  // Q_online(obs) [n x actions], valid until the next call on the learner.
  nn::ConstBatchView QValues(nn::ConstBatchView obs);
  // max_a Q_online(obs_i, a), for PQN's targets.
  void MaxQ(nn::ConstBatchView obs, nn::VectorView<float> max_q);
  // max_a Q_target(obs_i, a), for DQN targets r + gamma * (1 - terminated) * max_q.
  void TargetMaxQ(nn::ConstBatchView obs, nn::VectorView<float> max_q);
  // Q_target(obs_i, actions_i), for Double DQN (actions from Act on the same observations).
  void TargetQAt(nn::ConstBatchView obs, nn::VectorView<const int32_t> actions, nn::VectorView<float> q);
  // target = tau * online + (1 - tau) * target; tau = 1 (the default) is a hard copy.
  void UpdateTarget(float tau = 1.0f);

  // [2] on the device (2 per replica): loss and mean Q(s, a) of the last TrainStep (the gradient
  // norm is optimizer().grad_norm(); ReadStats reads all of them).
  nn::VectorView<const float> loss_stats() const { return nn::AsVector(stats_); }
  // Host copy of one replica's statistics (waits for the queued work: call it every K steps, not
  // every step).
  Stats ReadStats(int replica = 0) const;
  // Every replica's, with one copy of each statistic for all.
  std::vector<Stats> ReadAllStats() const;

  // Checkpoint: online weights under their plain names (so LoadMlp and PyTorch read it as a
  // model; a convolution as "conv.weight", "conv.bias"), the target network (if any) under "target.", Adam's moments
  // under "adam.exp_avg." / "adam.exp_avg_sq." and its step count as "adam.step" (I64). Metadata: the model keys,
  // "cugym.kind" = "q_learner" (Load also takes "q_trainer", the kind older checkpoints carry),
  // the loss, Adam's options, plus `extra`.
  // `extra_tensors` go into the same file (names not starting with "adam." or "target.").
  void Save(const std::string& path, const SafetensorsMetadata& extra = {},
            std::vector<NamedTensor> extra_tensors = {}) const;
  // The same tensors and metadata added to a checkpoint's (an agent's lane, checkpoint.h).
  void Save(CheckpointWriter& out) const;
  void Load(const CheckpointReader& in);
  // Restores everything Save wrote; throws std::invalid_argument naming the file for another
  // shape, kind or a damaged file. Returns the metadata.
  SafetensorsMetadata Load(const std::string& path);
  // The same from a file already read (`path` names it in errors).
  SafetensorsMetadata Load(const SafetensorsFile& file, const std::string& path);

  // One replica's whole state (online and target networks, Adam's moments and step count, the last
  // statistics) into or from `solo`, a learner of one with the same layers and back end: to save
  // one agent of a batch in a learner of one's checkpoint, or to load it. Throws
  // std::invalid_argument for another shape or back end.
  void CopyReplicaTo(int replica, QLearner& solo) const;
  void CopyReplicaFrom(int replica, const QLearner& solo);

  nn::Mlp& online() { return online_; }
  const nn::Mlp& online() const { return online_; }
  nn::Mlp& target() { return target_; }
  nn::Adam& optimizer() { return adam_; }
  const nn::Adam& optimizer() const { return adam_; }
  nn::Backend& backend() const { return *backend_; }
  const QLearnerOptions& options() const { return options_; }

 private:
  // Everything Save writes: the tensors appended to *tensors, the keys into *metadata.
  void AppendState(std::vector<NamedTensor>* tensors, SafetensorsMetadata* metadata) const;
  // Q(obs) of `net` [n x actions]: its output, or for a dueling head the aggregated output (in q_).
  nn::ConstBatchView Q(nn::Mlp& net, nn::ConstBatchView obs);
  void CheckTarget(const char* op) const;
  void CheckSolo(int replica, const QLearner& solo, const char* op) const;

  std::shared_ptr<nn::Backend> backend_;
  QLearnerOptions options_;
  nn::Mlp online_;
  nn::Mlp target_;
  nn::Adam adam_;
  Buffer<float> stats_;
  Buffer<float> q_, dq_;  // dueling: Q of the last forward [max rows x actions], dL/dQ [batch x actions]
};

}  // namespace cugym::agent
