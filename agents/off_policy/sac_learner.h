// SAC's learner: an actor (the squashed Gaussian's means and raw log standard deviations), twin
// critics Q1 and Q2 of (observation, action) with their target copies, and the log of the entropy
// temperature, as CleanRL's sac_continuous_action.py builds them (ReLU MLPs with PyTorch's default
// initialization; the targets start as copies). One Adam each for the actor (policy_lr), the
// critics and log_alpha (learning_rate); no gradient clipping. K replicas (the lanes of agent.h)
// run as one, each the learner of one of its seed. It knows nothing of envs or replay memories:
// SacAgent runs the losses (SacOps::SacCriticLoss, SacActorGrads) into the networks' output
// gradients, then calls the Step functions.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/memory.h"
#include "nn/adam.h"
#include "nn/backend.h"
#include "nn/mlp.h"

namespace cugym::agent {

class CheckpointWriter;
class CheckpointReader;

struct SacLearnerOptions {
  int obs_dim = 0;
  int action_dim = 0;
  std::vector<int> hidden_sizes;
  int max_batch = 1;                        // most rows per replica one call takes (minibatch, envs, eval envs)
  bool layer_norm = false;                  // a LayerNorm before every hidden ReLU of all five networks
  nn::AdamOptions actor_adam, critic_adam;  // critic_adam also steps log_alpha
  double alpha = 0.2;                       // the temperature's start
  bool autotune = true;
  uint64_t seed = 0;
  int replicas = 1;
  std::vector<uint64_t> replica_seeds;  // replica r's weights from replica_seeds[r] (empty: all from seed)
};

class SacLearner {
 public:
  SacLearner(std::shared_ptr<nn::Backend> backend, const SacLearnerOptions& options);

  nn::Mlp& actor() { return actor_; }
  const nn::Mlp& actor() const { return actor_; }
  nn::Mlp& q1() { return q1_; }
  nn::Mlp& q2() { return q2_; }
  nn::Mlp& target_q1() { return target_q1_; }
  nn::Mlp& target_q2() { return target_q2_; }
  float* log_alpha() { return log_alpha_.data(); }  // [replicas]
  float* log_alpha_grad() { return log_alpha_grad_.data(); }
  const SacLearnerOptions& options() const { return options_; }
  nn::Backend& backend() const { return *backend_; }

  // The critics' backward passes from their OutputGrad() and their Adam steps, then both targets
  // Polyak-averaged towards them by tau.
  void StepCritics(float tau);
  // The actor's backward from its OutputGrad() and its Adam step; with autotune, log_alpha's step
  // from log_alpha_grad().
  void StepActor();
  // Host copy of replica r's temperature.
  double ReadAlpha(int replica) const;

  // A learner of one's whole state into a checkpoint ("actor.", "q1.", "q2.", "target_q1.",
  // "target_q2." network tensors, "log_alpha", each Adam's moments and step count), and back
  // (throws std::invalid_argument naming the file for another shape or a missing tensor).
  void Save(CheckpointWriter& out) const;
  void Load(const CheckpointReader& in);
  // Replica r's whole state into or from `solo`, a learner of one with the same options.
  void CopyReplicaTo(int replica, SacLearner& solo) const;
  void CopyReplicaFrom(int replica, const SacLearner& solo);

 private:
  struct Part {  // a trained parameter buffer with its Adam
    nn::VectorView<float> params;
    nn::Adam* adam;
    int64_t stride;  // one replica's floats
  };
  std::vector<Part> Parts();
  std::vector<nn::Mlp*> Networks();

  std::shared_ptr<nn::Backend> backend_;
  SacLearnerOptions options_;
  nn::Mlp actor_, q1_, q2_, target_q1_, target_q2_;
  Buffer<float> log_alpha_, log_alpha_grad_;  // [replicas]
  nn::Adam actor_adam_, q1_adam_, q2_adam_, alpha_adam_;
};

}  // namespace cugym::agent
