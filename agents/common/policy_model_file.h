// Reading PPO policy model files (policy.h's SavePolicyModel writes them) from a file already
// read: what LoadPolicyModel and GreedyPolicy share. Errors are std::invalid_argument naming
// `path`.
#pragma once

#include <string>

#include "agents/common/policy.h"
#include "core/safetensors.h"

namespace cugym::agent {

inline constexpr const char* kPolicyModelKind = "policy";  // cugym.kind of a PPO policy file

// Whether the file says it is a PPO policy file (cugym.kind "policy").
bool IsPolicyModel(const SafetensorsFile& file);
// Refuses anything but a PPO policy file: a Q model (cugym.kind "mlp") by name.
void CheckPolicyModelKind(const SafetensorsFile& file, const std::string& path);
// cugym.policy: true for "gaussian", false for "categorical"; refuses any other value.
bool PolicyModelIsGaussian(const SafetensorsFile& file, const std::string& path);
// Whether the actor's outputs carry a log standard deviation per dimension after the means
// (metadata cugym.log_std "state": SAC's); std::invalid_argument for an unknown value.
bool PolicyModelHasStateLogStd(const SafetensorsFile& file, const std::string& path);
// Everything but the network, checked against the actor's sizes (which LoadMlp checks).
PolicyModelInfo ReadPolicyModelInfo(const SafetensorsFile& file, const std::string& path, const nn::Mlp& actor);

}  // namespace cugym::agent
