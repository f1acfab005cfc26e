// QLearner: the fused DQN update and the target-network evaluations on top of nn's Mlp and Adam.
#include "agents/q_learner.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "nn/checkpoint.h"

namespace cugym::agent {

using nn::AdamOptions;
using nn::AsVector;
using nn::Backend;
using nn::BatchView;
using nn::ConstBatchView;
using nn::CopyFromHost;
using nn::FormatLayerSizes;
using nn::LinearTensorName;
using nn::MlpMetadata;
using nn::MlpOptions;
using nn::MlpParametersFrom;
using nn::MlpTensors;
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
  m.max_batch = std::max(o.batch_size, o.max_act_batch);
  m.trainable = trainable;
  m.seed = o.seed;
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
      adam_(backend_, online_.parameters().size(), options.adam),
      stats_(backend_->device(), 2) {
  stats_.Zero();
  target_.CopyParametersFrom(online_);
  if (options.dueling) {
    const int64_t k = Actions(options);
    q_ = Buffer<float>(backend_->device(), static_cast<int64_t>(online_.max_batch()) * k);
    dq_ = Buffer<float>(backend_->device(), static_cast<int64_t>(options.batch_size) * k);
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
  if (obs.rows() > options_.batch_size) {
    throw std::invalid_argument("QLearner::TrainStep: " + std::to_string(obs.rows()) + " rows, batch_size is " +
                                std::to_string(options_.batch_size));
  }
  ConstBatchView out = online_.ForwardTrain(obs);
  BatchView dout = online_.OutputGrad();
  const int last = online_.num_layers() - 1;
  if (!options_.dueling) {
    // The last bias gradient comes fused with the loss (one pass fewer).
    backend_->GatherLoss(options_.loss, out, actions, targets, dout, online_.linear_grads(last).bias, AsVector(stats_),
                         weights, errors);
    online_.Backward(dout, /*last_bias_grad_ready=*/true);
  } else {
    const int64_t n = out.rows(), k = out.cols() - 1;
    BatchView q(q_.data(), n, k, backend_->device()), dq(dq_.data(), n, k, backend_->device());
    backend_->ValueAdvantage(out, q);
    backend_->GatherLoss(options_.loss, q, actions, targets, dq, VectorView<float>(), AsVector(stats_), weights,
                         errors);
    backend_->ValueAdvantageBackward(dq, dout);
    online_.Backward(dout, /*last_bias_grad_ready=*/false);
  }
  adam_.Step(online_.parameters(), online_.gradients());
}

void QLearner::Act(ConstBatchView obs, VectorView<int32_t> actions) {
  backend_->RowMax(Q(online_, obs), VectorView<float>(), actions);
}

ConstBatchView QLearner::QValues(ConstBatchView obs) { return Q(online_, obs); }

void QLearner::TargetMaxQ(ConstBatchView obs, VectorView<float> max_q) {
  backend_->RowMax(Q(target_, obs), max_q, VectorView<int32_t>());
}

void QLearner::TargetQAt(ConstBatchView obs, VectorView<const int32_t> actions, VectorView<float> q) {
  backend_->Gather(Q(target_, obs), actions, q);
}

void QLearner::UpdateTarget(float tau) { target_.PolyakFrom(online_, tau); }

QLearner::Stats QLearner::ReadStats() const {
  std::vector<float> s = stats_.ToHost();
  Stats out;
  out.loss = s[0];
  out.mean_q = s[1];
  out.grad_norm = ClipsGradients(options_.adam) ? adam_.ReadGradNorm() : 0.0f;
  out.updates = adam_.ReadStepCount();
  return out;
}

void QLearner::Save(const std::string& path, const SafetensorsMetadata& extra,
                    std::vector<NamedTensor> extra_tensors) const {
  std::vector<NamedTensor> tensors = MlpTensors(online_);
  for (NamedTensor& t : MlpTensors(target_, "target.")) tensors.push_back(std::move(t));
  // Adam's moments, tensor by tensor like the parameters (the flat buffer's padding is left out).
  const std::vector<float> m = ToHost(adam_.exp_avg());
  const std::vector<float> v = ToHost(adam_.exp_avg_sq());
  const std::vector<int>& s = online_.layer_sizes();
  for (int l = 0; l < online_.num_layers(); ++l) {
    for (const char* what : {"weight", "bias"}) {
      const bool w = what[0] == 'w';
      std::vector<int64_t> shape = w ? std::vector<int64_t>{s[l + 1], s[l]} : std::vector<int64_t>{s[l + 1]};
      const int64_t offset = w ? online_.weight_offset(l) : online_.bias_offset(l);
      const std::string name = LinearTensorName("", l, what);
      tensors.push_back(NamedTensor::FromF32(kAdamAvg + name, shape, m.data() + offset));
      tensors.push_back(NamedTensor::FromF32(kAdamAvgSq + name, shape, v.data() + offset));
    }
  }
  const int64_t step = adam_.ReadStepCount();
  tensors.push_back(NamedTensor::FromI64(kAdamStep, {}, &step));

  SafetensorsMetadata metadata = extra;
  for (const auto& [key, value] : MlpMetadata(online_.layer_sizes())) metadata[key] = value;
  metadata["cugym.kind"] = "q_learner";
  metadata["cugym.head"] = options_.dueling ? "dueling" : "q";
  metadata["cugym.loss"] = LossName(options_.loss);
  const AdamOptions& a = adam_.options();
  metadata["cugym.adam"] = "lr=" + MetadataNumber(a.lr) + ",beta1=" + MetadataNumber(a.beta1) +
                           ",beta2=" + MetadataNumber(a.beta2) + ",eps=" + MetadataNumber(a.eps) +
                           ",max_grad_norm=" + MetadataNumber(a.max_grad_norm) +
                           ",lr_decay_updates=" + std::to_string(a.lr_decay_updates);
  for (NamedTensor& t : extra_tensors) tensors.push_back(std::move(t));
  WriteSafetensors(path, tensors, metadata);
}

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
  if (layers == file.metadata.end() || layers->second != FormatLayerSizes(online_.layer_sizes())) {
    throw std::invalid_argument(path + ": the checkpoint holds a " +
                                (layers == file.metadata.end() ? std::string("?") : layers->second) +
                                " network, this trainer's is " + FormatLayerSizes(online_.layer_sizes()));
  }
  // Everything is checked before anything is changed.
  const NamedTensor* step = file.Find(kAdamStep);
  if (step == nullptr || step->dtype != DType::kI64 || step->NumElements() != 1) {
    throw std::invalid_argument(path + ": no I64 scalar '" + std::string(kAdamStep) + "'");
  }
  std::vector<float> m(adam_.num_params(), 0.0f), v(adam_.num_params(), 0.0f);
  const std::vector<int>& s = online_.layer_sizes();
  for (int l = 0; l < online_.num_layers(); ++l) {
    for (const char* what : {"weight", "bias"}) {
      const bool w = what[0] == 'w';
      const std::vector<int64_t> shape = w ? std::vector<int64_t>{s[l + 1], s[l]} : std::vector<int64_t>{s[l + 1]};
      const int64_t offset = w ? online_.weight_offset(l) : online_.bias_offset(l);
      for (auto [prefix, dst] : {std::pair<const char*, std::vector<float>*>{kAdamAvg, &m}, {kAdamAvgSq, &v}}) {
        const std::string name = prefix + LinearTensorName("", l, what);
        const NamedTensor* t = file.Find(name);
        if (t == nullptr || t->dtype != DType::kF32 || t->shape != shape) {
          throw std::invalid_argument(path + ": tensor '" + name + "' is missing or not F32 of the parameter's shape");
        }
        const std::vector<float> values = t->ToF32();
        std::copy(values.begin(), values.end(), dst->begin() + offset);
      }
    }
  }
  const std::vector<float> online = MlpParametersFrom(file, online_, "", path);
  const std::vector<float> target = MlpParametersFrom(file, target_, "target.", path);
  CopyFromHost(online_.parameters(), online);
  CopyFromHost(target_.parameters(), target);
  CopyFromHost(adam_.exp_avg(), m);
  CopyFromHost(adam_.exp_avg_sq(), v);
  CopyFromHost(adam_.step_count(), step->ToI64());
  return file.metadata;
}

}  // namespace cugym::agent
