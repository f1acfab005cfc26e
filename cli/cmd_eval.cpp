// `cugym eval`: the greedy policy of a trained model (a PPO policy's deterministic one) over exactly E
// finished episodes.
#include <cstdio>
#include <iostream>
#include <stdexcept>

#include "agents/off_policy/dqn.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "core/json_writer.h"

namespace cugym::cli {

int RunEval(const Registry& registry, int argc, char** argv) {
  Args args("cugym eval",
            {{"--model", "FILE", "model.safetensors written by cugym train", ""},
             {"--env", "ID", "env to evaluate on (default: the model's)", ""},
             {"--episodes", "E", "finished episodes to average", "100"},
             {"--num-envs", "N", "envs stepped together", "10"},
             {"--seed", "S", "seed of the evaluation episodes", "12345"},
             {"--device", "D", kDeviceHelp, "auto"},
             {"--epsilon", "X", "probability of a random action (discrete actions only)", "0"},
             {"--json", "", "print one JSON object", ""}},
            argc, argv, 2);
  if (args.help()) {
    std::cout << args.Usage(
        "Runs the model's greedy policy for exactly E finished episodes (spread evenly over\n"
        "the N envs) and prints the mean and spread of the return. A PPO model acts\n"
        "deterministically: its most likely action, or on a Box env its mean clipped (or squashed)\n"
        "into the Box.");
    return 0;
  }
  const std::string model = args.Required("--model");
  const uint64_t seed = args.Seed("--seed");
  const Device device = PickDevice(args.String("--device"));
  const agent::EvalResult r = agent::EvaluateModel(registry, model, args.Int("--episodes"), args.Int("--num-envs"),
                                                   seed, device, args.Double("--epsilon"), args.String("--env"));
  if (args.Switch("--json")) {
    JsonObject json = ResultJson();
    json.Str("env", r.env_id)
        .Str("model", model)
        .Str("device", DeviceName(device))
        .Int("episodes", r.episodes)
        .Num("mean_return", r.mean_return)
        .Num("std_return", r.std_return)
        .Num("min_return", r.min_return)
        .Num("max_return", r.max_return)
        .Num("mean_length", r.mean_length);
    std::cout << json.str() << "\n";
  } else {
    std::printf("%s, %lld episodes: mean return %.2f +- %.2f, min %.2f, max %.2f, mean length %.1f\n", r.env_id.c_str(),
                static_cast<long long>(r.episodes), r.mean_return, r.std_return, r.min_return, r.max_return,
                r.mean_length);
  }
  return 0;
}

}  // namespace cugym::cli
