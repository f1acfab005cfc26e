// Adam's device state and the call into the back end's fused update.
#include "nn/adam.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace cugym::nn {

Adam::Adam(std::shared_ptr<Backend> backend, int64_t num_params, const AdamOptions& options, int64_t groups)
    : backend_(std::move(backend)), num_params_(num_params), groups_(groups) {
  if (backend_ == nullptr) throw std::invalid_argument("Adam: no back end");
  if (num_params < 1)
    throw std::invalid_argument("Adam: num_params " + std::to_string(num_params) + " (expected >= 1)");
  if (groups < 1 || num_params % groups != 0) {
    throw std::invalid_argument("Adam: " + std::to_string(num_params) + " parameters do not split into " +
                                std::to_string(groups) + " equal groups");
  }
  set_options(options);
  const Device device = backend_->device();
  moments_ = Buffer<float>(device, 2 * num_params);
  step_ = Buffer<int64_t>(device, 1);
  scratch_ = Buffer<float>(device, groups + backend_->AdamScratchSize(num_params, groups));
  Reset();
}

void Adam::set_options(const AdamOptions& o) {
  auto bad = [](const std::string& what) { throw std::invalid_argument("Adam: " + what); };
  if (!(o.lr >= 0.0)) bad("lr " + std::to_string(o.lr) + " (expected >= 0)");
  if (!(o.beta1 >= 0.0 && o.beta1 < 1.0)) bad("beta1 " + std::to_string(o.beta1) + " (expected in [0, 1))");
  if (!(o.beta2 >= 0.0 && o.beta2 < 1.0)) bad("beta2 " + std::to_string(o.beta2) + " (expected in [0, 1))");
  if (!(o.eps > 0.0)) bad("eps " + std::to_string(o.eps) + " (expected > 0)");
  if (!(o.max_grad_norm >= 0.0)) bad("max_grad_norm " + std::to_string(o.max_grad_norm) + " (expected >= 0; 0 = off)");
  if (o.lr_decay_updates < 0)
    bad("lr_decay_updates " + std::to_string(o.lr_decay_updates) + " (expected >= 0; 0 = off)");
  options_ = o;
}

void Adam::Reset() {
  moments_.Zero();
  step_.Zero();
  scratch_.Zero();
}

void Adam::Step(VectorView<float> params, VectorView<const float> grads) {
  if (params.size() != num_params_) {
    throw std::invalid_argument("Adam::Step: " + std::to_string(params.size()) + " parameters, the optimizer has " +
                                std::to_string(num_params_));
  }
  AdamState state;
  state.exp_avg = exp_avg();
  state.exp_avg_sq = exp_avg_sq();
  state.step = step_count();
  state.grad_norm = VectorView<float>(scratch_.data(), groups_, scratch_.device());
  state.scratch =
      VectorView<float>(scratch_.data() + groups_, static_cast<int64_t>(scratch_.size()) - groups_, scratch_.device());
  backend_->AdamStep(options_, params, grads, state, groups_);
}

int64_t Adam::ReadStepCount() const { return step_.ToHost()[0]; }

std::vector<float> Adam::ReadGradNorms() const { return scratch_.ToHost(0, groups_); }

}  // namespace cugym::nn
