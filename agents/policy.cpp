// Greedy policies from model files.
#include "agents/policy.h"

#include <stdexcept>

#include "agents/q_learner.h"
#include "core/safetensors.h"
#include "nn/checkpoint.h"

namespace cugym::agent {

GreedyPolicy::GreedyPolicy(const Registry& registry, const std::string& model_path, const std::string& env_id,
                           int64_t max_batch, Device device)
    : device_(device) {
  const SafetensorsFile file = ReadSafetensors(model_path);
  auto it = file.metadata.find("cugym.env_id");
  env_id_ = !env_id.empty() ? env_id : it != file.metadata.end() ? it->second : "";
  if (env_id_.empty())
    throw std::invalid_argument(model_path + " names no env (no cugym.env_id): give the env id it was trained on");
  const EnvSpec& spec = registry.Get(env_id_).spec;
  if (!spec.action_space.is_discrete())
    throw std::invalid_argument("a Q-network model needs discrete actions, but " + env_id_ + " has " +
                                spec.action_space.ToString() + " actions");
  // A dueling head has one output more than actions: the value (cugym train writes cugym.head).
  auto head = file.metadata.find("cugym.head");
  dueling_ = head != file.metadata.end() && head->second == "dueling";
  if (head != file.metadata.end() && head->second != "dueling" && head->second != "q")
    throw std::invalid_argument(model_path + ": unknown cugym.head '" + head->second + "' (expected q or dueling)");
  const std::vector<int> sizes = nn::ReadMlpLayerSizes(file, model_path);
  if (sizes.front() != spec.obs_dim() || sizes.back() != spec.action_space.n + (dueling_ ? 1 : 0))
    throw std::invalid_argument(model_path + " is a " + nn::FormatLayerSizes(sizes) + (dueling_ ? " dueling" : "") +
                                " network, which does not fit " + env_id_ + " (" + std::to_string(spec.obs_dim()) +
                                " observations, " + std::to_string(spec.action_space.n) + " actions)");
  obs_dim_ = sizes.front();
  nn::MlpOptions options;
  options.max_batch = static_cast<int>(max_batch);
  options.trainable = false;
  options.conv = nn::ReadMlpConv(file, model_path);
  options.layer_norm = nn::ReadMlpLayerNorm(file, model_path);
  options.activation = nn::ReadMlpActivation(file, model_path);
  backend_ = nn::MakeBackend(device);
  net_ = std::make_unique<nn::Mlp>(backend_, sizes, options);
  nn::LoadMlp(file, model_path, *net_);  // the file read once, above
  if (dueling_) q_ = Buffer<float>(device, max_batch * spec.action_space.n);
}

void GreedyPolicy::Act(const float* obs, int32_t* actions, int64_t n) {
  const nn::ConstBatchView out = net_->Forward(nn::ConstBatchView(obs, n, obs_dim_, device_));
  backend_->RowMax(QFromOutputs(*backend_, out, dueling_, q_.data()), {}, nn::VectorView<int32_t>(actions, n, device_));
}

}  // namespace cugym::agent
