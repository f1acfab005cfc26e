// PPO policy model files (SavePolicyModel, LoadPolicyModel in policy.h; docs/ppo.md, "Model files").
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "agents/common/normalizer.h"
#include "agents/common/policy.h"
#include "agents/common/policy_model_file.h"
#include "core/build_info.h"
#include "core/safetensors.h"
#include "nn/checkpoint.h"

namespace cugym::agent {
namespace {

constexpr const char* kKindKey = "cugym.kind";

// The info's sizes against the actor's: log_std [out] for a Gaussian, the statistics [in] or none.
void CheckInfo(const nn::Mlp& actor, const PolicyModelInfo& info, const std::string& where) {
  const auto out = static_cast<std::size_t>(actor.out_features()), in = static_cast<std::size_t>(actor.in_features());
  if (info.algo != "ppo" && info.algo != "sac")
    throw std::invalid_argument(where + ": algo '" + info.algo + "' (expected ppo or sac)");
  if (info.state_log_std) {
    if (!info.gaussian || out % 2 != 0 || !info.log_std.empty())
      throw std::invalid_argument(where +
                                  ": a state-dependent log_std needs a gaussian policy whose actor has an even "
                                  "number of outputs (means, then log-stds), and no log_std tensor");
  } else if (info.gaussian && info.log_std.size() != out) {
    throw std::invalid_argument(where + ": log_std has " + std::to_string(info.log_std.size()) +
                                " entries, the actor has " + std::to_string(out) + " outputs");
  }
  if (info.obs_mean.size() != info.obs_var.size() || (!info.obs_mean.empty() && info.obs_mean.size() != in))
    throw std::invalid_argument(where + ": the normalizer's statistics have " + std::to_string(info.obs_mean.size()) +
                                " and " + std::to_string(info.obs_var.size()) + " entries, the actor has " +
                                std::to_string(in) + " inputs");
  if (!(info.obs_clip > 0) || !std::isfinite(info.obs_clip))
    throw std::invalid_argument(where + ": obs_clip must be positive and finite, got " + std::to_string(info.obs_clip));
}

std::string Meta(const SafetensorsFile& file, const std::string& key, const std::string& otherwise) {
  auto it = file.metadata.find(key);
  return it == file.metadata.end() ? otherwise : it->second;
}

// Tensor `name`: of `dtype` and shape [size], else std::invalid_argument naming the file.
const NamedTensor& VectorTensor(const SafetensorsFile& file, const std::string& path, const std::string& name,
                                DType dtype, int64_t size) {
  const NamedTensor* t = file.Find(name);
  if (t == nullptr) throw std::invalid_argument(path + ": no tensor '" + name + "'");
  if (t->dtype != dtype || t->shape != std::vector<int64_t>{size})
    throw std::invalid_argument(path + ": tensor '" + name + "' must be " + DTypeName(dtype) + " [" +
                                std::to_string(size) + "]");
  return *t;
}

bool ParseBool(const SafetensorsFile& file, const std::string& path, const std::string& key) {
  const std::string value = Meta(file, key, "false");
  if (value != "true" && value != "false")
    throw std::invalid_argument(path + ": metadata " + key + " '" + value + "' (expected true or false)");
  return value == "true";
}

}  // namespace

void CheckPolicyModelKind(const SafetensorsFile& file, const std::string& path) {
  const std::string kind = Meta(file, kKindKey, "");
  if (kind == "mlp") throw std::invalid_argument(path + " is a Q-network model (cugym.kind mlp), not a policy file");
  const std::string algo = Meta(file, "cugym.algo", "");
  if (kind != kPolicyModelKind || (algo != "ppo" && algo != "sac"))
    throw std::invalid_argument(path + " is not a PPO or SAC policy file (cugym.kind '" + kind + "', cugym.algo '" +
                                Meta(file, "cugym.algo", "") + "')");
}

bool PolicyModelHasStateLogStd(const SafetensorsFile& file, const std::string& path) {
  const std::string log_std = Meta(file, "cugym.log_std", "parameter");
  if (log_std != "parameter" && log_std != "state")
    throw std::invalid_argument(path + ": metadata cugym.log_std '" + log_std + "' (expected parameter or state)");
  return log_std == "state";
}

bool IsPolicyModel(const SafetensorsFile& file) { return Meta(file, kKindKey, "") == kPolicyModelKind; }

bool PolicyModelIsGaussian(const SafetensorsFile& file, const std::string& path) {
  const std::string policy = Meta(file, "cugym.policy", "");
  if (policy != "categorical" && policy != "gaussian")
    throw std::invalid_argument(path + ": metadata cugym.policy '" + policy + "' (expected categorical or gaussian)");
  return policy == "gaussian";
}

PolicyModelInfo ReadPolicyModelInfo(const SafetensorsFile& file, const std::string& path, const nn::Mlp& actor) {
  CheckPolicyModelKind(file, path);
  PolicyModelInfo info;
  info.algo = Meta(file, "cugym.algo", "");
  info.state_log_std = PolicyModelHasStateLogStd(file, path);
  info.env_id = Meta(file, "cugym.env_id", "");
  info.global_step = static_cast<int64_t>(
      ParseMetadataNumber(Meta(file, "cugym.global_step", "0"), path + ": metadata cugym.global_step"));
  info.gaussian = PolicyModelIsGaussian(file, path);
  info.squash = ParseBool(file, path, "cugym.squash");
  info.obs_clip = ParseMetadataNumber(Meta(file, "cugym.norm.obs_clip", "10"), path + ": metadata cugym.norm.obs_clip");
  if (info.gaussian && !info.state_log_std)
    info.log_std = VectorTensor(file, path, "log_std", DType::kF32, actor.out_features()).ToF32();
  const bool mean = file.Find("norm.obs_mean") != nullptr, var = file.Find("norm.obs_var") != nullptr;
  if (mean != var) throw std::invalid_argument(path + ": norm.obs_mean and norm.obs_var go together");
  if (mean) {
    info.obs_mean =
        DoublesFromBits(VectorTensor(file, path, "norm.obs_mean", DType::kI64, actor.in_features()).ToI64());
    info.obs_var = DoublesFromBits(VectorTensor(file, path, "norm.obs_var", DType::kI64, actor.in_features()).ToI64());
  }
  CheckInfo(actor, info, path);
  return info;
}

void SavePolicyModel(const std::string& path, const nn::Mlp& actor, const PolicyModelInfo& info) {
  CheckInfo(actor, info, "SavePolicyModel(" + path + ")");
  SafetensorsMetadata metadata =
      nn::MlpMetadata(actor.layer_sizes(), actor.conv(), actor.layer_norm(), actor.activation());
  metadata[kKindKey] = kPolicyModelKind;
  metadata["cugym.algo"] = info.algo;
  metadata["cugym.log_std"] = info.state_log_std ? "state" : "parameter";
  metadata["cugym.policy"] = info.gaussian ? "gaussian" : "categorical";
  metadata["cugym.squash"] = info.squash ? "true" : "false";
  metadata["cugym.norm.obs_clip"] = MetadataNumber(info.obs_clip);
  metadata["cugym.env_id"] = info.env_id;
  metadata["cugym.global_step"] = std::to_string(info.global_step);
  metadata["cugym.version"] = VersionString();
  std::vector<NamedTensor> tensors = nn::MlpTensors(actor);
  if (info.gaussian && !info.state_log_std)
    tensors.push_back(NamedTensor::FromF32("log_std", {actor.out_features()}, info.log_std.data()));
  if (!info.obs_mean.empty()) {
    const int64_t dim = actor.in_features();
    tensors.push_back(NamedTensor::FromI64("norm.obs_mean", {dim}, DoubleBits(info.obs_mean).data()));
    tensors.push_back(NamedTensor::FromI64("norm.obs_var", {dim}, DoubleBits(info.obs_var).data()));
  }
  WriteSafetensors(path, tensors, metadata);
}

PolicyModelInfo LoadPolicyModel(const std::string& path, nn::Mlp& actor) {
  const SafetensorsFile file = ReadSafetensors(path);
  CheckPolicyModelKind(file, path);
  nn::LoadMlp(file, path, actor);
  return ReadPolicyModelInfo(file, path, actor);
}

}  // namespace cugym::agent
