// SAC's actor, twin critics and temperature (sac_learner.h).
#include "agents/off_policy/sac_learner.h"

#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "agents/common/checkpoint.h"
#include "nn/checkpoint.h"

namespace cugym::agent {
namespace {

nn::MlpOptions NetworkOptions(const SacLearnerOptions& o, uint64_t seed, bool trainable, bool input_gradient) {
  nn::MlpOptions m;
  m.max_batch = o.max_batch;
  m.seed = seed;
  m.replicas = o.replicas;
  m.trainable = trainable;
  m.input_gradient = input_gradient;
  m.layer_norm = o.layer_norm;
  return m;
}

std::vector<int> Sizes(int in, const std::vector<int>& hidden, int out) {
  std::vector<int> sizes{in};
  sizes.insert(sizes.end(), hidden.begin(), hidden.end());
  sizes.push_back(out);
  return sizes;
}

// The temperature's Adam: the critics' settings without gradient clipping (one scalar per replica).
nn::AdamOptions Unclipped(nn::AdamOptions adam) {
  adam.max_grad_norm = 0.0;
  return adam;
}

// Each network's weights from a seed of its own, drawn from the run's.
uint64_t NetworkSeed(uint64_t seed, uint64_t which) { return seed * 0x9E3779B97F4A7C15ull + 0x5AC0u + which; }

}  // namespace

SacLearner::SacLearner(std::shared_ptr<nn::Backend> backend, const SacLearnerOptions& options)
    : backend_(std::move(backend)),
      options_(options),
      actor_(backend_, Sizes(options.obs_dim, options.hidden_sizes, 2 * options.action_dim),
             NetworkOptions(options, NetworkSeed(options.seed, 0), true, false)),
      q1_(backend_, Sizes(options.obs_dim + options.action_dim, options.hidden_sizes, 1),
          NetworkOptions(options, NetworkSeed(options.seed, 1), true, true)),
      q2_(backend_, Sizes(options.obs_dim + options.action_dim, options.hidden_sizes, 1),
          NetworkOptions(options, NetworkSeed(options.seed, 2), true, true)),
      target_q1_(backend_, Sizes(options.obs_dim + options.action_dim, options.hidden_sizes, 1),
                 NetworkOptions(options, 0, false, false)),
      target_q2_(backend_, Sizes(options.obs_dim + options.action_dim, options.hidden_sizes, 1),
                 NetworkOptions(options, 0, false, false)),
      actor_adam_(backend_, actor_.parameters().size(), options.actor_adam, options.replicas),
      q1_adam_(backend_, q1_.parameters().size(), options.critic_adam, options.replicas),
      q2_adam_(backend_, q2_.parameters().size(), options.critic_adam, options.replicas),
      alpha_adam_(backend_, options.replicas, Unclipped(options.critic_adam), options.replicas) {
  const int k = options.replicas;
  if (options.obs_dim < 1 || options.action_dim < 1)
    throw std::invalid_argument("SacLearner: observation and action sizes must be >= 1");
  if (!options.replica_seeds.empty()) {
    if (static_cast<int>(options.replica_seeds.size()) != k)
      throw std::invalid_argument("SacLearner: " + std::to_string(options.replica_seeds.size()) +
                                  " replica seeds for " + std::to_string(k) + " replicas");
    for (int r = 0; r < k; ++r) {
      actor_.Initialize(r, NetworkSeed(options.replica_seeds[r], 0));
      q1_.Initialize(r, NetworkSeed(options.replica_seeds[r], 1));
      q2_.Initialize(r, NetworkSeed(options.replica_seeds[r], 2));
    }
  }
  target_q1_.CopyParametersFrom(q1_);
  target_q2_.CopyParametersFrom(q2_);
  const Device device = backend_->device();
  log_alpha_ = Buffer<float>(device, k);
  log_alpha_grad_ = Buffer<float>(device, k);
  const std::vector<float> start(k, static_cast<float>(std::log(options.alpha)));
  log_alpha_.FromHost(start.data(), k);
  log_alpha_grad_.Zero();
}

std::vector<SacLearner::Part> SacLearner::Parts() {
  return {{actor_.parameters(), &actor_adam_, actor_.replica_stride()},
          {q1_.parameters(), &q1_adam_, q1_.replica_stride()},
          {q2_.parameters(), &q2_adam_, q2_.replica_stride()},
          {nn::VectorView<float>(log_alpha_.data(), options_.replicas, backend_->device()), &alpha_adam_, 1}};
}

std::vector<nn::Mlp*> SacLearner::Networks() { return {&actor_, &q1_, &q2_, &target_q1_, &target_q2_}; }

void SacLearner::StepCritics(float tau) {
  q1_.Backward(q1_.OutputGrad());
  q2_.Backward(q2_.OutputGrad());
  q1_adam_.Step(q1_.parameters(), q1_.gradients());
  q2_adam_.Step(q2_.parameters(), q2_.gradients());
  target_q1_.PolyakFrom(q1_, tau);
  target_q2_.PolyakFrom(q2_, tau);
}

void SacLearner::StepActor() {
  actor_.Backward(actor_.OutputGrad());
  actor_adam_.Step(actor_.parameters(), actor_.gradients());
  if (options_.autotune)
    alpha_adam_.Step(nn::VectorView<float>(log_alpha_.data(), options_.replicas, backend_->device()),
                     nn::VectorView<const float>(log_alpha_grad_.data(), options_.replicas, backend_->device()));
}

double SacLearner::ReadAlpha(int replica) const {
  return std::exp(static_cast<double>(log_alpha_.ToHost(replica, 1).front()));
}

namespace {

const char* const kNetworkNames[] = {"actor.", "q1.", "q2.", "target_q1.", "target_q2."};
const char* const kAdamNames[] = {"adam.actor", "adam.q1", "adam.q2", "adam.log_alpha"};

}  // namespace

void SacLearner::Save(CheckpointWriter& out) const {
  if (options_.replicas != 1) throw std::logic_error("SacLearner::Save: a learner of one saves (CopyReplicaTo)");
  auto& self = const_cast<SacLearner&>(*this);
  const std::vector<nn::Mlp*> nets = self.Networks();
  for (std::size_t i = 0; i < nets.size(); ++i)
    for (NamedTensor& t : nn::MlpTensors(*nets[i], kNetworkNames[i])) out.tensors().push_back(std::move(t));
  out.Floats("log_alpha", log_alpha_.ToHost());
  const std::vector<Part> parts = self.Parts();
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string name = kAdamNames[i];
    out.Floats(name + ".exp_avg", ToHost(parts[i].adam->exp_avg()));
    out.Floats(name + ".exp_avg_sq", ToHost(parts[i].adam->exp_avg_sq()));
    out.Ints(name + ".step", ToHost(parts[i].adam->step_count()));
  }
}

void SacLearner::Load(const CheckpointReader& in) {
  if (options_.replicas != 1) throw std::logic_error("SacLearner::Load: a learner of one loads (CopyReplicaFrom)");
  // Everything is read and checked before anything changes.
  const std::vector<nn::Mlp*> nets = Networks();
  std::vector<std::vector<float>> params;
  for (std::size_t i = 0; i < nets.size(); ++i)
    params.push_back(nn::MlpParametersFrom(in.file(), *nets[i], kNetworkNames[i], in.path()));
  const std::vector<float> log_alpha = in.Floats("log_alpha", 1);
  const std::vector<Part> parts = Parts();
  std::vector<std::vector<float>> m, v;
  std::vector<std::vector<int64_t>> steps;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string name = kAdamNames[i];
    m.push_back(in.Floats(name + ".exp_avg", parts[i].params.size()));
    v.push_back(in.Floats(name + ".exp_avg_sq", parts[i].params.size()));
    steps.push_back(in.Int64s(name + ".step", 1));
  }
  for (std::size_t i = 0; i < nets.size(); ++i) CopyFromHost(nets[i]->parameters(), params[i]);
  log_alpha_.FromHost(log_alpha.data(), 1);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    CopyFromHost(parts[i].adam->exp_avg(), m[i]);
    CopyFromHost(parts[i].adam->exp_avg_sq(), v[i]);
    CopyFromHost(parts[i].adam->step_count(), steps[i]);
  }
}

void SacLearner::CopyReplicaTo(int replica, SacLearner& solo) const {
  auto& self = const_cast<SacLearner&>(*this);
  const std::vector<nn::Mlp*> from_nets = self.Networks(), to_nets = solo.Networks();
  for (std::size_t i = 0; i < from_nets.size(); ++i) from_nets[i]->CopyReplicaTo(replica, *to_nets[i]);
  const std::vector<Part> from = self.Parts(), to = solo.Parts();
  const Device device = backend_->device();
  for (std::size_t i = 0; i < from.size(); ++i) {
    const int64_t at = replica * from[i].stride, bytes = from[i].stride * static_cast<int64_t>(sizeof(float));
    if (i == 3) CopyBytes(to[i].params.data(), device, from[i].params.data() + at, device, bytes);
    CopyBytes(to[i].adam->exp_avg().data(), device, from[i].adam->exp_avg().data() + at, device, bytes);
    CopyBytes(to[i].adam->exp_avg_sq().data(), device, from[i].adam->exp_avg_sq().data() + at, device, bytes);
    CopyBytes(to[i].adam->step_count().data(), device, from[i].adam->step_count().data(), device, sizeof(int64_t));
  }
}

void SacLearner::CopyReplicaFrom(int replica, const SacLearner& solo) {
  auto& one = const_cast<SacLearner&>(solo);
  const std::vector<nn::Mlp*> from_nets = one.Networks(), to_nets = Networks();
  for (std::size_t i = 0; i < from_nets.size(); ++i) to_nets[i]->CopyReplicaFrom(replica, *from_nets[i]);
  const std::vector<Part> from = one.Parts(), to = Parts();
  const Device device = backend_->device();
  for (std::size_t i = 0; i < from.size(); ++i) {
    const int64_t at = replica * to[i].stride, bytes = to[i].stride * static_cast<int64_t>(sizeof(float));
    if (i == 3) CopyBytes(to[i].params.data() + at, device, from[i].params.data(), device, bytes);
    CopyBytes(to[i].adam->exp_avg().data() + at, device, from[i].adam->exp_avg().data(), device, bytes);
    CopyBytes(to[i].adam->exp_avg_sq().data() + at, device, from[i].adam->exp_avg_sq().data(), device, bytes);
    CopyBytes(to[i].adam->step_count().data(), device, from[i].adam->step_count().data(), device, sizeof(int64_t));
  }
}

}  // namespace cugym::agent
