// PPO's learner: an actor (the policy's logits or means) and a critic (the value), separate MLPs
// with tanh and orthogonal initialization as CleanRL's ppo.py builds them, a state-independent
// log standard deviation per replica for a Gaussian policy, one Adam for each, and the joint
// gradient clipping of all three (torch.nn.utils.clip_grad_norm_ over every parameter, as
// CleanRL does). K replicas (the lanes of agent.h) run as one, each the learner of one of its
// seed. It knows nothing of envs or rollouts: PpoAgent runs the loss (PpoOps::PpoLoss) into
// the networks' output gradients, then calls Step.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "agents/on_policy/ppo_ops.h"
#include "core/memory.h"
#include "nn/adam.h"
#include "nn/backend.h"
#include "nn/mlp.h"

namespace cugym::agent {

class CheckpointWriter;
class CheckpointReader;

struct PpoLearnerOptions {
  std::vector<int> actor_sizes;   // {observation size, hidden sizes..., actions or action dimensions}
  std::vector<int> critic_sizes;  // {observation size, hidden sizes..., 1}
  nn::ConvSpec conv;              // both networks' convolution in front (out_channels 0: none)
  bool layer_norm = false;
  int max_batch = 1;     // most rows per replica one call takes (minibatch, envs, eval envs)
  nn::AdamOptions adam;  // its max_grad_norm is the joint norm's limit (0: none)
  bool gaussian = false;
  float init_log_std = 0.0f;
  uint64_t seed = 0;
  int replicas = 1;
  std::vector<uint64_t> replica_seeds;  // replica r's weights from replica_seeds[r] (empty: all from seed)
};

class PpoLearner {
 public:
  PpoLearner(std::shared_ptr<nn::Backend> backend, const PpoLearnerOptions& options);

  nn::Mlp& actor() { return actor_; }
  const nn::Mlp& actor() const { return actor_; }
  nn::Mlp& critic() { return critic_; }
  // Gaussian: [replicas][action dims] on the device; nullptr for a categorical policy.
  float* log_std() { return options_.gaussian ? log_std_.data() : nullptr; }
  float* log_std_grad() { return options_.gaussian ? log_std_grad_.data() : nullptr; }
  const PpoLearnerOptions& options() const { return options_; }
  nn::Backend& backend() const { return *backend_; }
  int action_outputs() const { return options_.actor_sizes.back(); }

  // One update of every replica, all queued: the backward passes of the last ForwardTrain of each
  // network from their OutputGrad() (and log_std_grad()), each replica's gradients clipped by
  // their joint norm, then the three Adam steps.
  void Step(PpoOps& ops);
  // The learning rate of update `t` (1-based; Adam reads its step count on the device).
  double LearningRate(int64_t t) const;
  // Updates taken so far (the actor's Adam's step count; a host read that waits for the device).
  int64_t ReadUpdates() const { return actor_adam_.ReadStepCount(); }
  // Host copy of replica r's log_std (empty for a categorical policy).
  std::vector<float> ReadLogStd(int replica) const;

  // A learner of one's whole state into a checkpoint ("actor." and "critic." network tensors,
  // "log_std", each Adam's moments and step count), and back (throws
  // std::invalid_argument naming the file for another shape or a missing tensor).
  void Save(CheckpointWriter& out) const;
  void Load(const CheckpointReader& in);
  // Replica r's whole state into or from `solo`, a learner of one with the same options.
  void CopyReplicaTo(int replica, PpoLearner& solo) const;
  void CopyReplicaFrom(int replica, const PpoLearner& solo);

 private:
  struct Part {  // a parameter buffer with its Adam
    nn::VectorView<float> params, grads;
    nn::Adam* adam;
    int64_t stride;  // one replica's floats
  };
  std::vector<Part> Parts();

  std::shared_ptr<nn::Backend> backend_;
  PpoLearnerOptions options_;
  nn::Mlp actor_, critic_;
  Buffer<float> log_std_, log_std_grad_;  // Gaussian: [replicas][dims]
  nn::Adam actor_adam_, critic_adam_;
  std::unique_ptr<nn::Adam> log_std_adam_;
  Buffer<float> clip_norms_, clip_scale_;  // [replicas]
  Buffer<double> clip_partials_;           // [replicas][kGradNormPartials]
};

}  // namespace cugym::agent
