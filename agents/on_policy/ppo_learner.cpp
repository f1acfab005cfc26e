// PPO's actor-critic learner (ppo_learner.h).
#include "agents/on_policy/ppo_learner.h"

#include <stdexcept>
#include <string>
#include <utility>

#include "agents/common/checkpoint.h"
#include "nn/checkpoint.h"

namespace cugym::agent {
namespace {

nn::MlpOptions NetworkOptions(const PpoLearnerOptions& o, uint64_t seed, double output_gain) {
  nn::MlpOptions m;
  m.max_batch = o.max_batch;
  m.seed = seed;
  m.conv = o.conv;
  m.layer_norm = o.layer_norm;
  m.replicas = o.replicas;
  m.activation = nn::Activation::kTanh;
  m.init = nn::MlpInit::kOrthogonal;
  m.output_gain = output_gain;
  return m;
}

// The critic's weights come from a seed of their own, drawn from the run's.
uint64_t CriticSeed(uint64_t seed) { return seed * 0x9E3779B97F4A7C15ull + 0xC217u; }

// Adam without clipping: the learner clips the three buffers' joint norm itself.
nn::AdamOptions Unclipped(nn::AdamOptions adam) {
  adam.max_grad_norm = 0.0;
  return adam;
}

}  // namespace

PpoLearner::PpoLearner(std::shared_ptr<nn::Backend> backend, const PpoLearnerOptions& options)
    : backend_(std::move(backend)),
      options_(options),
      actor_(backend_, options.actor_sizes, NetworkOptions(options, options.seed, 0.01)),
      critic_(backend_, options.critic_sizes, NetworkOptions(options, CriticSeed(options.seed), 1.0)),
      actor_adam_(backend_, actor_.parameters().size(), Unclipped(options.adam), options.replicas),
      critic_adam_(backend_, critic_.parameters().size(), Unclipped(options.adam), options.replicas) {
  if (options.critic_sizes.empty() || options.critic_sizes.back() != 1)
    throw std::invalid_argument("PpoLearner: the critic must have one output");
  const int k = options.replicas;
  if (!options.replica_seeds.empty()) {
    if (static_cast<int>(options.replica_seeds.size()) != k)
      throw std::invalid_argument("PpoLearner: " + std::to_string(options.replica_seeds.size()) +
                                  " replica seeds for " + std::to_string(k) + " replicas");
    for (int r = 0; r < k; ++r) {
      actor_.Initialize(r, options.replica_seeds[r]);
      critic_.Initialize(r, CriticSeed(options.replica_seeds[r]));
    }
  }
  const Device device = backend_->device();
  if (options.gaussian) {
    const int64_t dims = static_cast<int64_t>(k) * action_outputs();
    log_std_ = Buffer<float>(device, dims);
    log_std_grad_ = Buffer<float>(device, dims);
    const std::vector<float> start(dims, options.init_log_std);
    log_std_.FromHost(start.data(), dims);
    log_std_grad_.Zero();
    log_std_adam_ = std::make_unique<nn::Adam>(backend_, dims, Unclipped(options.adam), k);
  }
  clip_norms_ = Buffer<float>(device, k);
  clip_scale_ = Buffer<float>(device, k);
  clip_partials_ = Buffer<double>(device, k * kGradNormPartials);
}

std::vector<PpoLearner::Part> PpoLearner::Parts() {
  const int k = options_.replicas;
  std::vector<Part> parts{{actor_.parameters(), actor_.gradients(), &actor_adam_, actor_.replica_stride()},
                          {critic_.parameters(), critic_.gradients(), &critic_adam_, critic_.replica_stride()}};
  if (options_.gaussian) {
    const int64_t dims = static_cast<int64_t>(k) * action_outputs();
    const Device device = backend_->device();
    parts.push_back({nn::VectorView<float>(log_std_.data(), dims, device),
                     nn::VectorView<float>(log_std_grad_.data(), dims, device), log_std_adam_.get(), action_outputs()});
  }
  return parts;
}

void PpoLearner::Step(PpoOps& ops) {
  actor_.Backward(actor_.OutputGrad());
  critic_.Backward(critic_.OutputGrad());
  std::vector<Part> parts = Parts();
  if (options_.adam.max_grad_norm > 0.0) {
    GradSpans spans;
    for (const Part& p : parts) {
      spans.grads[spans.num] = p.grads.data();
      spans.stride[spans.num] = p.stride;
      spans.count[spans.num] = p.stride;
      ++spans.num;
    }
    ops.ClipJointGradNorm(spans, options_.replicas, options_.adam.max_grad_norm, clip_partials_.data(),
                          clip_norms_.data(), clip_scale_.data());
  }
  for (const Part& p : parts) p.adam->Step(p.params, p.grads);
}

double PpoLearner::LearningRate(int64_t t) const {
  return nn::ScheduledLr(options_.adam.lr, options_.adam.lr_decay_updates, t);
}

std::vector<float> PpoLearner::ReadLogStd(int replica) const {
  if (!options_.gaussian) return {};
  return log_std_.ToHost(static_cast<std::size_t>(replica) * action_outputs(), action_outputs());
}

namespace {

const char* const kPartNames[] = {"actor", "critic", "log_std"};

}  // namespace

void PpoLearner::Save(CheckpointWriter& out) const {
  if (options_.replicas != 1) throw std::logic_error("PpoLearner::Save: a learner of one saves (CopyReplicaTo)");
  for (NamedTensor& t : nn::MlpTensors(actor_, "actor.")) out.tensors().push_back(std::move(t));
  for (NamedTensor& t : nn::MlpTensors(critic_, "critic.")) out.tensors().push_back(std::move(t));
  std::vector<Part> parts = const_cast<PpoLearner*>(this)->Parts();
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string name = std::string("adam.") + kPartNames[i];
    if (i == 2) out.Floats("log_std", ToHost(parts[i].params));
    out.Floats(name + ".exp_avg", ToHost(parts[i].adam->exp_avg()));
    out.Floats(name + ".exp_avg_sq", ToHost(parts[i].adam->exp_avg_sq()));
    out.Ints(name + ".step", ToHost(parts[i].adam->step_count()));
  }
}

void PpoLearner::Load(const CheckpointReader& in) {
  if (options_.replicas != 1) throw std::logic_error("PpoLearner::Load: a learner of one loads (CopyReplicaFrom)");
  // Everything is read and checked before anything changes.
  const std::vector<float> actor = nn::MlpParametersFrom(in.file(), actor_, "actor.", in.path());
  const std::vector<float> critic = nn::MlpParametersFrom(in.file(), critic_, "critic.", in.path());
  std::vector<Part> parts = Parts();
  std::vector<std::vector<float>> m, v;
  std::vector<std::vector<int64_t>> steps;
  std::vector<float> log_std;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string name = std::string("adam.") + kPartNames[i];
    const int64_t size = parts[i].params.size();
    if (i == 2) log_std = in.Floats("log_std", size);
    m.push_back(in.Floats(name + ".exp_avg", size));
    v.push_back(in.Floats(name + ".exp_avg_sq", size));
    steps.push_back(in.Int64s(name + ".step", 1));
  }
  CopyFromHost(actor_.parameters(), actor);
  CopyFromHost(critic_.parameters(), critic);
  if (options_.gaussian) CopyFromHost(parts[2].params, log_std);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    CopyFromHost(parts[i].adam->exp_avg(), m[i]);
    CopyFromHost(parts[i].adam->exp_avg_sq(), v[i]);
    CopyFromHost(parts[i].adam->step_count(), steps[i]);
  }
}

void PpoLearner::CopyReplicaTo(int replica, PpoLearner& solo) const {
  auto& self = const_cast<PpoLearner&>(*this);
  std::vector<Part> from = self.Parts(), to = solo.Parts();
  actor_.CopyReplicaTo(replica, solo.actor_);
  critic_.CopyReplicaTo(replica, solo.critic_);
  const Device device = backend_->device();
  for (std::size_t i = 0; i < from.size(); ++i) {
    const int64_t at = replica * from[i].stride, bytes = from[i].stride * static_cast<int64_t>(sizeof(float));
    if (i == 2) CopyBytes(to[i].params.data(), device, from[i].params.data() + at, device, bytes);
    CopyBytes(to[i].adam->exp_avg().data(), device, from[i].adam->exp_avg().data() + at, device, bytes);
    CopyBytes(to[i].adam->exp_avg_sq().data(), device, from[i].adam->exp_avg_sq().data() + at, device, bytes);
    CopyBytes(to[i].adam->step_count().data(), device, from[i].adam->step_count().data(), device, sizeof(int64_t));
  }
}

void PpoLearner::CopyReplicaFrom(int replica, const PpoLearner& solo) {
  auto& one = const_cast<PpoLearner&>(solo);
  std::vector<Part> from = one.Parts(), to = Parts();
  actor_.CopyReplicaFrom(replica, solo.actor_);
  critic_.CopyReplicaFrom(replica, solo.critic_);
  const Device device = backend_->device();
  for (std::size_t i = 0; i < from.size(); ++i) {
    const int64_t at = replica * to[i].stride, bytes = to[i].stride * static_cast<int64_t>(sizeof(float));
    if (i == 2) CopyBytes(to[i].params.data() + at, device, from[i].params.data(), device, bytes);
    CopyBytes(to[i].adam->exp_avg().data() + at, device, from[i].adam->exp_avg().data(), device, bytes);
    CopyBytes(to[i].adam->exp_avg_sq().data() + at, device, from[i].adam->exp_avg_sq().data(), device, bytes);
    CopyBytes(to[i].adam->step_count().data(), device, from[i].adam->step_count().data(), device, sizeof(int64_t));
  }
}

}  // namespace cugym::agent
