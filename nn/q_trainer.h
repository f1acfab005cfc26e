// The training step a DQN learner needs, on one device with no host synchronisation: regress
// Q(s, a) of an online MLP onto given targets (MSE or Huber), backward, clip, Adam; act greedily;
// evaluate a target network (max over outputs, or at given actions); hard or Polyak target
// updates; checkpoints. It knows nothing of envs or replay: the caller computes the targets.
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

namespace cugym::nn {

struct QTrainerOptions {
  std::vector<int> layer_sizes;      ///< {observation size, hidden sizes..., number of actions}
  int batch_size = 128;              ///< most rows one TrainStep takes (the minibatch)
  int max_act_batch = 1;             ///< most rows Act / TargetMaxQ / TargetQAt take (e.g. the env count)
  LossKind loss = LossKind::kHuber;  ///< SB3's DQN uses Huber, CleanRL's MSE
  AdamOptions adam;
  uint64_t seed = 0;  ///< initial weights; the target network starts as a copy of the online one
};

class QTrainer {
 public:
  struct Stats {
    float loss = 0;       // of the last TrainStep
    float mean_q = 0;     // mean Q(s, a) of the last TrainStep's minibatch
    float grad_norm = 0;  // total gradient norm before clipping (0 when clipping is off)
    int64_t updates = 0;  // Adam steps taken
  };

  QTrainer(std::shared_ptr<Backend> backend, const QTrainerOptions& options);

  // One gradient step on a minibatch on the back end's device: obs [B x in], actions [B] int32
  // in [0, out), targets [B]. loss = mean_b L(Q(obs_b, a_b) - target_b); then backward, optional
  // clipping and Adam, all queued. GPU kernels: 6 forward, 1 loss, 7 backward, 1 Adam (+1 for
  // clipping) for a 3-layer network.
  void TrainStep(ConstBatchView obs, VectorView<const int32_t> actions, VectorView<const float> targets);

  // Greedy actions argmax_a Q_online(obs_i, a) for obs [n x in] (ties to the lowest index).
  void Act(ConstBatchView obs, VectorView<int32_t> actions);
  // Q_online(obs) [n x out], valid until the next call on the online network.
  ConstBatchView QValues(ConstBatchView obs);
  // max_a Q_target(obs_i, a), for DQN targets r + gamma * (1 - terminated) * max_q.
  void TargetMaxQ(ConstBatchView obs, VectorView<float> max_q);
  // Q_target(obs_i, actions_i), for Double DQN (actions from Act on the same observations).
  void TargetQAt(ConstBatchView obs, VectorView<const int32_t> actions, VectorView<float> q);
  // target = tau * online + (1 - tau) * target; tau = 1 (the default) is a hard copy.
  void UpdateTarget(float tau = 1.0f);

  // [2] on the device: loss and mean Q(s, a) of the last TrainStep (the gradient norm is
  // optimizer().grad_norm(); ReadStats reads all of them).
  VectorView<const float> loss_stats() const { return AsVector(stats_); }
  // Host copy of the statistics (waits for the queued work: call it every K steps, not every step).
  Stats ReadStats() const;

  // Checkpoint: online weights under their plain names (so LoadMlp and PyTorch read it as a
  // model), the target network under "target.", Adam's moments under "adam.exp_avg." /
  // "adam.exp_avg_sq." and its step count as "adam.step" (I64). Metadata: the model keys,
  // "cugym.kind" = "q_trainer", the loss, Adam's options, plus `extra`.
  void Save(const std::string& path, const SafetensorsMetadata& extra = {}) const;
  // Restores everything Save wrote; throws std::invalid_argument naming the file for another
  // shape, kind or a damaged file. Returns the metadata.
  SafetensorsMetadata Load(const std::string& path);

  Mlp& online() { return online_; }
  const Mlp& online() const { return online_; }
  Mlp& target() { return target_; }
  Adam& optimizer() { return adam_; }
  const Adam& optimizer() const { return adam_; }
  Backend& backend() const { return *backend_; }
  const QTrainerOptions& options() const { return options_; }

 private:
  std::shared_ptr<Backend> backend_;
  QTrainerOptions options_;
  Mlp online_;
  Mlp target_;
  Adam adam_;
  Buffer<float> stats_;
};

}  // namespace cugym::nn
