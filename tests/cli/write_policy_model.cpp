// A test helper for the CLI checks (test_cli.sh): writes a PPO policy model file of a hand-made
// actor for an env, so eval, watch and record can be run on one before the PPO agent trains any.
//   cugym_write_policy_model OUT ENV_ID [--squash] [--normalize]
// The actor is PPO's: tanh hidden layers of 16 and 16, orthogonal weights (seed 1, output gain 1),
// a gaussian policy (log_std -0.5) on a Box env, a categorical one on a Discrete env; --normalize
// adds an observation normalizer's statistics (mean 0.1, variance 2 per feature).
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "agents/common/policy.h"
#include "core/registry.h"
#include "envs/builtin.h"
#include "nn/mlp.h"

int main(int argc, char** argv) {
  using namespace cugym;
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s OUT ENV_ID [--squash] [--normalize]\n", argv[0]);
    return 2;
  }
  try {
    Registry registry;
    RegisterBuiltinEnvs(registry);
    const EnvSpec& spec = registry.Get(argv[2]).spec;
    agent::PolicyModelInfo info;
    info.env_id = spec.id;
    info.gaussian = !spec.action_space.is_discrete();
    const int actions = static_cast<int>(info.gaussian ? spec.action_dim() : spec.action_space.n);
    for (int i = 3; i < argc; ++i) {
      info.squash |= std::strcmp(argv[i], "--squash") == 0;
      if (std::strcmp(argv[i], "--normalize") == 0) {
        info.obs_mean.assign(spec.obs_dim(), 0.1);
        info.obs_var.assign(spec.obs_dim(), 2.0);
      }
    }
    if (info.gaussian) info.log_std.assign(actions, -0.5f);
    nn::MlpOptions options;
    options.seed = 1;
    options.trainable = false;
    options.activation = nn::Activation::kTanh;
    options.init = nn::MlpInit::kOrthogonal;
    const nn::Mlp actor(nn::MakeBackend(Device::kCpu), {static_cast<int>(spec.obs_dim()), 16, 16, actions}, options);
    agent::SavePolicyModel(argv[1], actor, info);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", argv[0], e.what());
    return 2;
  }
  return 0;
}
