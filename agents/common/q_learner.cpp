// QLearner: the fused DQN update and the target-network evaluations on top of nn's Mlp and Adam.
#include "agents/common/q_learner.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <utility>

#include "agents/common/checkpoint.h"
#include "nn/checkpoint.h"

namespace cugym::agent {

using nn::AdamOptions;
using nn::AsVector;
using nn::Backend;
using nn::BatchView;
using nn::ConstBatchView;
using nn::CopyFromHost;
using nn::DescribeNetwork;
using nn::MlpMetadata;
using nn::MlpOptions;
using nn::MlpParametersFrom;
using nn::MlpParameterTensors;
using nn::MlpTensors;
using nn::ParameterTensor;
using nn::ToHost;
using nn::VectorView;

namespace {

MlpOptions NetOptions(const QLearnerOptions& o, bool trainable) {
  if (o.batch_size < 1)
    throw std::invalid_argument("QLearner: batch_size " + std::to_string(o.batch_size) + " (expected >= 1)");
  if (o.max_act_batch < 1) {
    throw std::invalid_argument("QLearner: max_act_batch " + std::to_string(o.max_act_batch) + " (expected >= 1)");
  }
  MlpOptions m;
  // Without a target network the target Mlp is never run: one row of workspace is enough.
  m.max_batch = trainable || o.target_network ? std::max(o.batch_size, o.max_act_batch) : 1;
  m.trainable = trainable;
  m.seed = o.seed;
  m.conv = o.conv;
  m.layer_norm = o.layer_norm;
  m.replicas = o.replicas;
  return m;
}

int Actions(const QLearnerOptions& o) {
  if (o.layer_sizes.size() < 2) throw std::invalid_argument("QLearner: layer_sizes needs an input and an output size");
  return o.layer_sizes.back();
}

constexpr const char* kAdamAvg = "adam.exp_avg.";
constexpr const char* kAdamAvgSq = "adam.exp_avg_sq.";
constexpr const char* kAdamStep = "adam.step";

}  // namespace

nn::ConvSpec ConvForObservations(int64_t conv_channels, const std::vector<int64_t>& obs_shape,
                                 const std::string& env_id) {
  if (conv_channels == 0) return {};
  std::string shape = "(";
  for (std::size_t i = 0; i < obs_shape.size(); ++i) shape += (i > 0 ? "," : "") + std::to_string(obs_shape[i]);
  shape += obs_shape.size() == 1 ? ",)" : ")";
  constexpr int kKernel = 3;
  if (obs_shape.size() != 3 || obs_shape[0] * obs_shape[1] * obs_shape[2] > (1 << 24))
    throw std::invalid_argument("conv_channels needs an image observation (H, W, C); " + env_id + "'s is " + shape);
  if (obs_shape[0] < kKernel || obs_shape[1] < kKernel) {
    throw std::invalid_argument("conv_channels: " + env_id + "'s images " + shape + " are smaller than the " +
                                std::to_string(kKernel) + " x " + std::to_string(kKernel) + " kernel");
  }
  if (conv_channels < 0 || conv_channels > 4096)
    throw std::invalid_argument("conv_channels " + std::to_string(conv_channels) + " (expected 0..4096)");
  nn::ConvSpec conv;
  conv.height = static_cast<int>(obs_shape[0]);
  conv.width = static_cast<int>(obs_shape[1]);
  conv.in_channels = static_cast<int>(obs_shape[2]);
  conv.out_channels = static_cast<int>(conv_channels);
  conv.kernel = kKernel;
  return conv;
}

std::vector<int> NetworkSizes(const QLearnerOptions& options) {
  std::vector<int> sizes = options.layer_sizes;
  if (options.dueling && !sizes.empty()) sizes.back() += 1;
  return sizes;
}

QLearner::QLearner(std::shared_ptr<Backend> backend, const QLearnerOptions& options)
    : backend_(std::move(backend)),
      options_(options),
      online_(backend_, NetworkSizes(options), NetOptions(options, true)),
      target_(backend_, NetworkSizes(options), NetOptions(options, false)),
      adam_(backend_, online_.parameters().size(), options.adam, options.replicas),
      stats_(backend_->device(), 2 * static_cast<int64_t>(online_.replicas())) {
  const int replicas = online_.replicas();
  if (!options.replica_seeds.empty()) {
    if (static_cast<int>(options.replica_seeds.size()) != replicas) {
      throw std::invalid_argument("QLearner: " + std::to_string(options.replica_seeds.size()) + " replica seeds for " +
                                  std::to_string(replicas) + " replicas");
    }
    for (int r = 0; r < replicas; ++r) online_.Initialize(r, options.replica_seeds[r]);
  }
  stats_.Zero();
  target_.CopyParametersFrom(online_);
  if (options.dueling) {
    const int64_t k = Actions(options);
    q_ = Buffer<float>(backend_->device(), static_cast<int64_t>(online_.max_batch()) * replicas * k);
    dq_ = Buffer<float>(backend_->device(), static_cast<int64_t>(options.batch_size) * replicas * k);
  }
}

ConstBatchView QFromOutputs(Backend& backend, ConstBatchView out, bool dueling, float* scratch) {
  if (!dueling) return out;
  const BatchView q(scratch, out.rows(), out.cols() - 1, backend.device());
  backend.ValueAdvantage(out, q);
  return q;
}

ConstBatchView QLearner::Q(nn::Mlp& net, ConstBatchView obs) {
  return QFromOutputs(*backend_, net.Forward(obs), options_.dueling, q_.data());
}

void QLearner::TrainStep(ConstBatchView obs, VectorView<const int32_t> actions, VectorView<const float> targets,
                         VectorView<const float> weights, VectorView<float> errors) {
  const int replicas = online_.replicas();
  if (obs.rows() > static_cast<int64_t>(options_.batch_size) * replicas) {
    throw std::invalid_argument("QLearner::TrainStep: " + std::to_string(obs.rows()) + " rows, batch_size is " +
                                std::to_string(options_.batch_size) +
                                (replicas > 1 ? " per replica of " + std::to_string(replicas) : ""));
  }
  ConstBatchView out = online_.ForwardTrain(obs);
  BatchView dout = online_.OutputGrad();
  const int last = online_.num_layers() - 1;
  if (!options_.dueling) {
    // The last bias gradient comes fused with the loss (one pass fewer).
    // (With replicas the grouped loss writes every replica's, so Backward leaves the last bias alone.)
    backend_->GatherLoss(options_.loss, out, actions, targets, dout, online_.linear_grads(last).bias, AsVector(stats_),
                         weights, errors, replicas, online_.replica_stride());
    online_.Backward(dout, /*last_bias_grad_ready=*/true);
  } else {
    const int64_t n = out.rows(), k = out.cols() - 1;
    BatchView q(q_.data(), n, k, backend_->device()), dq(dq_.data(), n, k, backend_->device());
    backend_->ValueAdvantage(out, q);
    backend_->GatherLoss(options_.loss, q, actions, targets, dq, VectorView<float>(), AsVector(stats_), weights, errors,
                         replicas);
    backend_->ValueAdvantageBackward(dq, dout);
    online_.Backward(dout, /*last_bias_grad_ready=*/false);
  }
  adam_.Step(online_.parameters(), online_.gradients());
}

void QLearner::Act(ConstBatchView obs, VectorView<int32_t> actions) {
  backend_->RowMax(Q(online_, obs), VectorView<float>(), actions);
}

ConstBatchView QLearner::QValues(ConstBatchView obs) { return Q(online_, obs); }

void QLearner::MaxQ(ConstBatchView obs, VectorView<float> max_q) {
  backend_->RowMax(Q(online_, obs), max_q, VectorView<int32_t>());
}

void QLearner::CheckTarget(const char* op) const {
  if (!options_.target_network)
    throw std::logic_error(std::string("QLearner::") + op + ": this learner has no target network");
}

void QLearner::TargetMaxQ(ConstBatchView obs, VectorView<float> max_q) {
  CheckTarget("TargetMaxQ");
  backend_->RowMax(Q(target_, obs), max_q, VectorView<int32_t>());
}

void QLearner::TargetQAt(ConstBatchView obs, VectorView<const int32_t> actions, VectorView<float> q) {
  CheckTarget("TargetQAt");
  backend_->Gather(Q(target_, obs), actions, q);
}

void QLearner::UpdateTarget(float tau) {
  CheckTarget("UpdateTarget");
  target_.PolyakFrom(online_, tau);
}

void QLearner::CheckSolo(int replica, const QLearner& solo, const char* op) const {
  if (replica < 0 || replica >= online_.replicas()) {
    throw std::invalid_argument(std::string("QLearner::") + op + ": replica " + std::to_string(replica) + " of " +
                                std::to_string(online_.replicas()));
  }
  if (solo.online_.replicas() != 1 || solo.options_.target_network != options_.target_network ||
      solo.options_.dueling != options_.dueling || solo.backend_ != backend_) {
    throw std::invalid_argument(std::string("QLearner::") + op +
                                ": the other learner must be one replica of the same kind on the same back end");
  }
}

void QLearner::CopyReplicaTo(int replica, QLearner& solo) const {
  CheckSolo(replica, solo, "CopyReplicaTo");
  online_.CopyReplicaTo(replica, solo.online_);  // checks the layers
  if (options_.target_network) target_.CopyReplicaTo(replica, solo.target_);
  const int64_t stride = online_.replica_stride(), first = replica * stride;
  const Device device = backend_->device();
  backend_->Polyak(solo.adam_.exp_avg(), VectorView<const float>(adam_.exp_avg().data() + first, stride, device), 1.0f);
  backend_->Polyak(solo.adam_.exp_avg_sq(), VectorView<const float>(adam_.exp_avg_sq().data() + first, stride, device),
                   1.0f);
  backend_->Polyak(AsVector(solo.stats_), VectorView<const float>(stats_.data() + 2 * replica, 2, device), 1.0f);
  CopyBytes(solo.adam_.step_count().data(), device, adam_.step_count().data(), device, sizeof(int64_t));
}

void QLearner::CopyReplicaFrom(int replica, const QLearner& solo) {
  CheckSolo(replica, solo, "CopyReplicaFrom");
  online_.CopyReplicaFrom(replica, solo.online_);
  if (options_.target_network) target_.CopyReplicaFrom(replica, solo.target_);
  const int64_t stride = online_.replica_stride(), first = replica * stride;
  const Device device = backend_->device();
  backend_->Polyak(VectorView<float>(adam_.exp_avg().data() + first, stride, device), solo.adam_.exp_avg(), 1.0f);
  backend_->Polyak(VectorView<float>(adam_.exp_avg_sq().data() + first, stride, device), solo.adam_.exp_avg_sq(), 1.0f);
  backend_->Polyak(VectorView<float>(stats_.data() + 2 * replica, 2, device), AsVector(solo.stats_), 1.0f);
  // One step count for all replicas: they step together.
  CopyBytes(adam_.step_count().data(), device, solo.adam_.step_count().data(), device, sizeof(int64_t));
}

QLearner::Stats QLearner::ReadStats(int replica) const {
  if (replica < 0 || replica >= online_.replicas()) {
    throw std::invalid_argument("QLearner::ReadStats: replica " + std::to_string(replica) + " of " +
                                std::to_string(online_.replicas()));
  }
  return ReadAllStats()[replica];
}

std::vector<QLearner::Stats> QLearner::ReadAllStats() const {
  const std::vector<float> s = stats_.ToHost();
  const std::vector<float> grad_norms =
      ClipsGradients(options_.adam) ? adam_.ReadGradNorms() : std::vector<float>(online_.replicas(), 0.0f);
  const int64_t updates = adam_.ReadStepCount();
  std::vector<Stats> all(online_.replicas());
  for (std::size_t r = 0; r < all.size(); ++r) all[r] = Stats{s[2 * r], s[2 * r + 1], grad_norms[r], updates};
  return all;
}

void QLearner::AppendState(std::vector<NamedTensor>* tensors, SafetensorsMetadata* metadata) const {
  for (NamedTensor& t : MlpTensors(online_)) tensors->push_back(std::move(t));
  if (options_.target_network)
    for (NamedTensor& t : MlpTensors(target_, "target.")) tensors->push_back(std::move(t));
  // Adam's moments, tensor by tensor like the parameters (the flat buffer's padding is left out).
  const std::vector<float> m = ToHost(adam_.exp_avg());
  const std::vector<float> v = ToHost(adam_.exp_avg_sq());
  for (const ParameterTensor& t : MlpParameterTensors(online_)) {
    tensors->push_back(NamedTensor::FromF32(kAdamAvg + t.name, t.shape, m.data() + t.offset));
    tensors->push_back(NamedTensor::FromF32(kAdamAvgSq + t.name, t.shape, v.data() + t.offset));
  }
  const int64_t step = adam_.ReadStepCount();
  tensors->push_back(NamedTensor::FromI64(kAdamStep, {}, &step));

  nn::EraseNetworkMetadata(*metadata);  // only the network says whether it has a convolution or LayerNorm
  for (const auto& [key, value] : MlpMetadata(online_.layer_sizes(), online_.conv(), online_.layer_norm()))
    (*metadata)[key] = value;
  (*metadata)["cugym.kind"] = "q_learner";
  (*metadata)["cugym.head"] = options_.dueling ? "dueling" : "q";
  (*metadata)["cugym.loss"] = LossName(options_.loss);
  const AdamOptions& a = adam_.options();
  (*metadata)["cugym.adam"] =
      "lr=" + MetadataNumber(a.lr) + ",beta1=" + MetadataNumber(a.beta1) + ",beta2=" + MetadataNumber(a.beta2) +
      ",eps=" + MetadataNumber(a.eps) + ",max_grad_norm=" + MetadataNumber(a.max_grad_norm) +
      ",lr_decay_updates=" + std::to_string(a.lr_decay_updates) + (a.rectified ? ",rectified=1" : "");
}

void QLearner::Save(const std::string& path, const SafetensorsMetadata& extra,
                    std::vector<NamedTensor> extra_tensors) const {
  std::vector<NamedTensor> tensors;
  SafetensorsMetadata metadata = extra;
  AppendState(&tensors, &metadata);
  for (NamedTensor& t : extra_tensors) tensors.push_back(std::move(t));
  WriteSafetensors(path, tensors, metadata);
}

void QLearner::Save(CheckpointWriter& out) const { AppendState(&out.tensors(), &out.metadata()); }

void QLearner::Load(const CheckpointReader& in) { Load(in.file(), in.path()); }

SafetensorsMetadata QLearner::Load(const std::string& path) { return Load(ReadSafetensors(path), path); }

SafetensorsMetadata QLearner::Load(const SafetensorsFile& file, const std::string& path) {
  auto kind = file.metadata.find("cugym.kind");
  // "q_trainer": the kind checkpoints carried before the learner was named QLearner.
  if (kind == file.metadata.end() || (kind->second != "q_learner" && kind->second != "q_trainer")) {
    throw std::invalid_argument(path + ": not a QLearner checkpoint (metadata cugym.kind is '" +
                                (kind == file.metadata.end() ? std::string() : kind->second) +
                                "'; load a model file with LoadMlp into online())");
  }
  auto layers = file.metadata.find("cugym.layers");
  const nn::ConvSpec conv = nn::ReadMlpConv(file, path);
  const bool layer_norm = nn::ReadMlpLayerNorm(file, path);
  if (layers == file.metadata.end() || layers->second != nn::FormatLayerSizes(online_.layer_sizes()) ||
      conv != online_.conv() || layer_norm != online_.layer_norm()) {
    const std::string held = layers == file.metadata.end() ? std::string("?") : layers->second;
    throw std::invalid_argument(path + ": the checkpoint holds a " +
                                (conv.enabled() ? DescribeNetwork({}, conv) + held : held) +
                                (layer_norm ? " LayerNorm" : "") + " network, this trainer's is " +
                                DescribeNetwork(online_.layer_sizes(), online_.conv(), online_.layer_norm()));
  }
  // Everything is checked before anything is changed.
  const NamedTensor* step = file.Find(kAdamStep);
  if (step == nullptr || step->dtype != DType::kI64 || step->NumElements() != 1) {
    throw std::invalid_argument(path + ": no I64 scalar '" + std::string(kAdamStep) + "'");
  }
  std::vector<float> m(adam_.num_params(), 0.0f), v(adam_.num_params(), 0.0f);
  for (const ParameterTensor& p : MlpParameterTensors(online_)) {
    for (auto [prefix, dst] : {std::pair<const char*, std::vector<float>*>{kAdamAvg, &m}, {kAdamAvgSq, &v}}) {
      const std::string name = prefix + p.name;
      const NamedTensor* t = file.Find(name);
      if (t == nullptr || t->dtype != DType::kF32 || t->shape != p.shape) {
        throw std::invalid_argument(path + ": tensor '" + name + "' is missing or not F32 of the parameter's shape");
      }
      const std::vector<float> values = t->ToF32();
      std::copy(values.begin(), values.end(), dst->begin() + p.offset);
    }
  }
  const std::vector<float> online = MlpParametersFrom(file, online_, "", path);
  const std::vector<float> target =
      options_.target_network ? MlpParametersFrom(file, target_, "target.", path) : std::vector<float>();
  CopyFromHost(online_.parameters(), online);
  if (options_.target_network) CopyFromHost(target_.parameters(), target);
  CopyFromHost(adam_.exp_avg(), m);
  CopyFromHost(adam_.exp_avg_sq(), v);
  CopyFromHost(adam_.step_count(), step->ToI64());
  return file.metadata;
}

}  // namespace cugym::agent
