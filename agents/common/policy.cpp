// Greedy policies from model files: Q models and PPO and SAC policy files.
#include "agents/common/policy.h"

#include <stdexcept>

#include "agents/common/policy_model_file.h"
#include "agents/common/q_learner.h"
#include "core/safetensors.h"
#include "nn/checkpoint.h"

namespace cugym::agent {

namespace {

template <class T>
Buffer<T> DeviceCopy(Device device, const std::vector<T>& host) {
  Buffer<T> buffer(device, host.size());
  if (!host.empty()) buffer.FromHost(host.data(), host.size());
  return buffer;
}

// The network a model file describes, for max_batch rows, not trainable.
std::unique_ptr<nn::Mlp> BuildNetwork(const SafetensorsFile& file, const std::string& path,
                                      const std::shared_ptr<nn::Backend>& backend, int64_t max_batch) {
  nn::MlpOptions options;
  options.max_batch = static_cast<int>(max_batch);
  options.trainable = false;
  options.conv = nn::ReadMlpConv(file, path);
  options.layer_norm = nn::ReadMlpLayerNorm(file, path);
  options.activation = nn::ReadMlpActivation(file, path);
  return std::make_unique<nn::Mlp>(backend, nn::ReadMlpLayerSizes(file, path), options);
}

}  // namespace

void ActDeterministically(PolicyOps& ops, nn::Mlp& actor, const PolicyHead& head, const RunningMoments& moments,
                          double clip, const float* obs, float* normalized, int64_t lanes, int64_t n,
                          const PolicySample& out) {
  const float* x = obs;
  if (moments.mean != nullptr) {
    ops.NormalizeObservations(moments, obs, normalized, n, /*frozen=*/true, clip);
    x = normalized;
  }
  const nn::ConstBatchView outputs =
      actor.Forward(nn::ConstBatchView(x, lanes * n, actor.in_features(), actor.device()));
  ops.SamplePolicy(head, outputs.data(), lanes, n, nullptr, nullptr, /*deterministic=*/true, out);
}

GreedyPolicy::GreedyPolicy(const Registry& registry, const std::string& model_path, const std::string& env_id,
                           int64_t max_batch, Device device)
    : device_(device) {
  const SafetensorsFile file = ReadSafetensors(model_path);
  auto it = file.metadata.find("cugym.env_id");
  env_id_ = !env_id.empty() ? env_id : it != file.metadata.end() ? it->second : "";
  if (env_id_.empty())
    throw std::invalid_argument(model_path + " names no env (no cugym.env_id): give the env id it was trained on");
  const EnvSpec& spec = registry.Get(env_id_).spec;
  continuous_ = !spec.action_space.is_discrete();
  action_dim_ = continuous_ ? spec.action_dim() : 1;
  policy_model_ = IsPolicyModel(file);
  backend_ = nn::MakeBackend(device);
  if (policy_model_)
    LoadPolicy(file, model_path, spec, max_batch);
  else
    LoadQModel(file, model_path, spec, max_batch);
}

void GreedyPolicy::LoadQModel(const SafetensorsFile& file, const std::string& path, const EnvSpec& spec,
                              int64_t max_batch) {
  if (continuous_)
    throw std::invalid_argument(path + " is a Q-network model, which needs discrete actions, but " + env_id_ + " has " +
                                spec.action_space.ToString() + " actions");
  // A dueling head has one output more than actions: the value (cugym train writes cugym.head).
  auto head = file.metadata.find("cugym.head");
  dueling_ = head != file.metadata.end() && head->second == "dueling";
  if (head != file.metadata.end() && head->second != "dueling" && head->second != "q")
    throw std::invalid_argument(path + ": unknown cugym.head '" + head->second + "' (expected q or dueling)");
  const std::vector<int> sizes = nn::ReadMlpLayerSizes(file, path);
  if (sizes.front() != spec.obs_dim() || sizes.back() != spec.action_space.n + (dueling_ ? 1 : 0))
    throw std::invalid_argument(path + " is a " + nn::FormatLayerSizes(sizes) + (dueling_ ? " dueling" : "") +
                                " network, which does not fit " + env_id_ + " (" + std::to_string(spec.obs_dim()) +
                                " observations, " + std::to_string(spec.action_space.n) + " actions)");
  obs_dim_ = sizes.front();
  net_ = BuildNetwork(file, path, backend_, max_batch);
  nn::LoadMlp(file, path, *net_);  // the file read once, above
  if (dueling_) q_ = Buffer<float>(device_, max_batch * spec.action_space.n);
}

void GreedyPolicy::LoadPolicy(const SafetensorsFile& file, const std::string& path, const EnvSpec& spec,
                              int64_t max_batch) {
  CheckPolicyModelKind(file, path);
  const bool gaussian = PolicyModelIsGaussian(file, path);
  if (gaussian != continuous_)
    throw std::invalid_argument(path + " is a " + (gaussian ? "gaussian" : "categorical") + " policy (" +
                                (gaussian ? "continuous" : "discrete") + " actions), but " + env_id_ + " has " +
                                spec.action_space.ToString() + " actions");
  const std::vector<int> sizes = nn::ReadMlpLayerSizes(file, path);
  const int64_t actions = continuous_ ? spec.action_dim() : spec.action_space.n;
  const bool state_log_std = PolicyModelHasStateLogStd(file, path);  // SAC's: means, then log-stds
  if (sizes.front() != spec.obs_dim() || sizes.back() != actions * (state_log_std ? 2 : 1))
    throw std::invalid_argument(path + " is a " + nn::FormatLayerSizes(sizes) + " actor, which does not fit " +
                                env_id_ + " (" + std::to_string(spec.obs_dim()) + " observations, " +
                                std::to_string(actions) + (continuous_ ? " action dimensions)" : " actions)"));
  obs_dim_ = sizes.front();
  net_ = BuildNetwork(file, path, backend_, max_batch);
  nn::LoadMlp(file, path, *net_);
  const PolicyModelInfo info = ReadPolicyModelInfo(file, path, *net_);
  ops_ = MakeOps<PolicyOps>(device_, backend_->native_stream());
  head_.out = static_cast<int>(actions);
  head_.gaussian = gaussian;
  head_.squash = info.squash;
  head_.stride = sizes.back();
  if (gaussian) {
    if (!state_log_std) log_std_ = DeviceCopy(device_, info.log_std);
    low_ = DeviceCopy(device_, spec.action_space.low);
    high_ = DeviceCopy(device_, spec.action_space.high);
    samples_ = Buffer<float>(device_, max_batch * actions);
    head_.log_std = state_log_std ? nullptr : log_std_.data();
    head_.low = low_.data();
    head_.high = high_.data();
  }
  clip_ = info.obs_clip;
  if (!info.obs_mean.empty()) {
    obs_mean_ = DeviceCopy(device_, info.obs_mean);
    obs_var_ = DeviceCopy(device_, info.obs_var);
    obs_count_ = DeviceCopy(device_, std::vector<double>{kRunningCountPrior});  // frozen: never read
    moments_ = RunningMoments{obs_mean_.data(), obs_var_.data(), obs_count_.data(), 1, obs_dim_};
    normalized_ = Buffer<float>(device_, max_batch * obs_dim_);
  }
}

void GreedyPolicy::Act(const float* obs, int32_t* actions, int64_t n) {
  if (continuous_)
    throw std::invalid_argument(env_id_ + " has Box actions: act with float actions (n x " +
                                std::to_string(action_dim_) + "), not int32 ones");
  if (policy_model_) {
    PolicySample out;
    out.actions = actions;
    ActPolicy(obs, out, n);
    return;
  }
  const nn::ConstBatchView out = net_->Forward(nn::ConstBatchView(obs, n, obs_dim_, device_));
  backend_->RowMax(QFromOutputs(*backend_, out, dueling_, q_.data()), {}, nn::VectorView<int32_t>(actions, n, device_));
}

void GreedyPolicy::Act(const float* obs, float* actions, int64_t n) {
  if (!continuous_)
    throw std::invalid_argument(env_id_ + " has discrete actions: act with int32 actions, not float ones");
  PolicySample out;
  out.samples = samples_.data();
  out.env_actions = actions;
  ActPolicy(obs, out, n);
}

void GreedyPolicy::ActPolicy(const float* obs, const PolicySample& out, int64_t n) {
  if (n > net_->max_batch())
    throw std::invalid_argument("GreedyPolicy: " + std::to_string(n) + " rows, at most " +
                                std::to_string(net_->max_batch()));
  ActDeterministically(*ops_, *net_, head_, moments_, clip_, obs, normalized_.data(), 1, n, out);
}

}  // namespace cugym::agent
