// cpp_train: trains DQN on CartPole-v1 through the library with a plain loop over the agent's
// iterations (agents/off_policy/dqn.h), saves the trained network as a model file and evaluates it greedily
// (agents/common/evaluation.h). `cugym train` runs the same agent through agents/run/trainer.h, which adds
// the run folder, evaluations during training, checkpoints and resuming.
//   cpp_train [--device cpu|cuda|auto] [--steps N] [--seed S] [--model PATH] [--eval-episodes E]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>

#include "agents/common/evaluation.h"
#include "agents/common/train_config.h"
#include "agents/off_policy/dqn.h"
#include "core/device.h"
#include "core/registry.h"
#include "envs/builtin.h"

namespace {

struct Options {
  std::string device = "cpu";
  int64_t steps = 20000;  // env steps; CartPole's tuned config (the defaults) solves it in 60000
  uint64_t seed = 1;
  std::string model = "cpp_train_model.safetensors";
  int64_t eval_episodes = 100;
  bool help = false;
};

// A whole number >= `min`; anything else is an error that names the flag.
int64_t ParseNumber(const std::string& flag, const std::string& text, int64_t min) {
  std::size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || value < min)
    throw std::invalid_argument(flag + " needs a whole number >= " + std::to_string(min) + ", got '" + text + "'");
  return value;
}

Options ParseArgs(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      options.help = true;
      return options;
    }
    if (i + 1 >= argc) throw std::invalid_argument("unknown option or missing value: '" + flag + "' (try --help)");
    const std::string value = argv[++i];
    if (flag == "--device") {
      options.device = value;
    } else if (flag == "--steps") {
      options.steps = ParseNumber(flag, value, 1);
    } else if (flag == "--seed") {
      options.seed = static_cast<uint64_t>(ParseNumber(flag, value, 0));
    } else if (flag == "--model") {
      options.model = value;
    } else if (flag == "--eval-episodes") {
      options.eval_episodes = ParseNumber(flag, value, 1);
    } else {
      throw std::invalid_argument("unknown option '" + flag + "' (try --help)");
    }
  }
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options options = ParseArgs(argc, argv);
    if (options.help) {
      std::printf(
          "usage: cpp_train [--device cpu|cuda|auto] [--steps N] [--seed S] [--model PATH] "
          "[--eval-episodes E]\n");
      return 0;
    }
    const cugym::Device device = cugym::ResolveDevice(options.device);
    cugym::Registry registry;
    cugym::RegisterBuiltinEnvs(registry);

    // The defaults are configs/cartpole.toml's; TrainConfig::Apply takes a TOML table instead.
    cugym::agent::TrainConfig config;
    config.env_id = "CartPole-v1";
    config.seed = options.seed;
    config.total_steps = options.steps;
    config.log_interval = std::max<int64_t>(config.num_envs, options.steps / 4);  // four progress lines
    config.eval_episodes = 0;  // no evaluations during training: one at the end, below

    cugym::agent::DqnAgent agent(registry, config, device);  // validates the config, allocates everything
    std::printf("training DQN on %s (%s) for %lld env steps\n", config.env_id.c_str(), cugym::DeviceName(device),
                static_cast<long long>(config.total_steps));
    // One lane (the agent's lane 0): a vector step of config.num_envs envs and the gradient steps
    // that fall on it per iteration, all queued on the device; the host reads a row now and then.
    const cugym::agent::LoopState loop;
    auto last = std::chrono::steady_clock::now();
    int64_t last_step = 0, next_row = config.log_interval;
    while (agent.global_step() < config.total_steps) {
      agent.Iterate();
      if (agent.global_step() < next_row && agent.global_step() < config.total_steps) continue;
      const auto now = std::chrono::steady_clock::now();
      const cugym::agent::MetricsRow p =
          agent.Progress(0, std::chrono::duration<double>(now - last).count(), agent.global_step() - last_step, loop);
      // NaN until an episode has finished (or learning has started, for the loss).
      std::printf("  step %6lld  episodes %5lld  return(100) %6.1f  epsilon %.2f  td_loss %8.4f  %6.0f steps/s\n",
                  static_cast<long long>(p.global_step), static_cast<long long>(p.episodes), p.mean_return_100,
                  p.Get("epsilon"), p.Get("td_loss"), p.sps);
      last = now;
      last_step = agent.global_step();
      next_row += config.log_interval;
    }
    agent.SaveModel(0, options.model);

    // A fresh greedy policy from the model file, on envs of its own: one episode per env.
    const cugym::agent::EvalResult result =
        cugym::agent::EvaluateModel(registry, options.model, options.eval_episodes, options.eval_episodes,
                                    /*seed=*/options.seed + 1000, device, /*epsilon=*/0.0);
    const cugym::EnvSpec& spec = registry.Get(config.env_id).spec;
    std::printf("greedy evaluation of %s: %lld episodes, mean return %.1f +- %.1f (min %.0f, max %.0f); %s\n",
                options.model.c_str(), static_cast<long long>(result.episodes), result.mean_return, result.std_return,
                result.min_return, result.max_return,
                result.mean_return >= spec.reward_threshold ? "solved" : "not solved yet (try more --steps)");
    return 0;
  } catch (const std::invalid_argument& e) {  // bad options or config, CUDA requested where there is none
    std::fprintf(stderr, "cpp_train: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cpp_train: error: %s\n", e.what());
    return 1;
  }
}
