// cpp_loop: a batch of CartPole-v1 envs made through the registry and stepped by a policy of our
// own (a hand-written controller on the host), on the CPU or the GPU, reading observations,
// rewards and the finished episodes' returns back each step.
//   cpp_loop [--device cpu|cuda|auto] [--num-envs N] [--steps T] [--seed S]
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/memory.h"
#include "core/registry.h"
#include "envs/builtin.h"

namespace {

struct Options {
  std::string device = "cpu";
  int64_t num_envs = 1024;
  int64_t steps = 1000;
  uint64_t seed = 0;
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
    } else if (flag == "--num-envs") {
      options.num_envs = ParseNumber(flag, value, 1);
    } else if (flag == "--steps") {
      options.steps = ParseNumber(flag, value, 1);
    } else if (flag == "--seed") {
      options.seed = static_cast<uint64_t>(ParseNumber(flag, value, 0));
    } else {
      throw std::invalid_argument("unknown option '" + flag + "' (try --help)");
    }
  }
  return options;
}

// Copies a device array into `host` (host.size() elements): a memcpy on the CPU back end, one
// synchronous cudaMemcpy on CUDA, which also waits for the step that wrote the array.
template <class T>
void ToHost(const T* device_array, cugym::Device device, std::vector<T>& host) {
  cugym::CopyBytes(host.data(), cugym::Device::kCpu, device_array, device, host.size() * sizeof(T));
}

// Pushes the cart the way the pole is falling, with a little correction for the cart's own
// position and speed so it does not drift off the track: most episodes last the full 500 steps.
int32_t Controller(const float* obs) {
  const float x = obs[0], x_dot = obs[1], theta = obs[2], theta_dot = obs[3];
  return theta + 0.5f * theta_dot + 0.02f * x + 0.1f * x_dot > 0.0f ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options options = ParseArgs(argc, argv);
    if (options.help) {
      std::printf("usage: cpp_loop [--device cpu|cuda|auto] [--num-envs N] [--steps T] [--seed S]\n");
      return 0;
    }
    // "cuda" without a GPU or a CUDA build throws std::invalid_argument with the reason.
    const cugym::Device device = cugym::ResolveDevice(options.device);

    cugym::Registry registry;
    cugym::RegisterBuiltinEnvs(registry);
    std::unique_ptr<cugym::VectorEnv> env = cugym::MakeVectorEnv(registry, "CartPole-v1", options.num_envs, device);
    const int64_t n = env->num_envs();
    const int64_t obs_dim = env->spec().obs_dim();

    // Host copies of what the policy and the statistics read, and the actions on the env's device.
    std::vector<float> obs(n * obs_dim), rewards(n), returns(n);
    std::vector<uint8_t> terminated(n), truncated(n);
    std::vector<int32_t> actions(n);
    cugym::Buffer<int32_t> device_actions(device, n);

    int64_t episodes = 0, full_length = 0;
    double return_sum = 0, reward_sum = 0;
    env->Reset(options.seed);
    const auto start = std::chrono::steady_clock::now();
    for (int64_t t = 0; t < options.steps; ++t) {
      ToHost(env->obs(), device, obs);
      for (int64_t i = 0; i < n; ++i) actions[i] = Controller(&obs[i * obs_dim]);
      device_actions.FromHost(actions.data(), actions.size());
      env->Step(device_actions.data());

      ToHost(env->rewards(), device, rewards);
      ToHost(env->terminated(), device, terminated);
      ToHost(env->truncated(), device, truncated);
      ToHost(env->episode_returns(), device, returns);  // valid where terminated | truncated
      for (int64_t i = 0; i < n; ++i) {
        reward_sum += rewards[i];
        if (!terminated[i] && !truncated[i]) continue;
        ++episodes;
        return_sum += returns[i];
        full_length += truncated[i] && !terminated[i];
      }
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    const double env_steps = static_cast<double>(n) * static_cast<double>(options.steps);
    std::printf(
        "CartPole-v1 on %s: %lld envs x %lld steps in %.3f s, %.3g env steps/s (host policy and copies included)\n",
        cugym::DeviceName(device), static_cast<long long>(n), static_cast<long long>(options.steps), seconds,
        env_steps / seconds);
    std::printf("reward per env step: %.3f\n", reward_sum / env_steps);
    if (episodes == 0) {
      std::printf("episodes finished: 0 (take more --steps)\n");
    } else {
      std::printf("episodes finished: %lld, mean return %.1f, %lld of them kept the pole up for all %d steps\n",
                  static_cast<long long>(episodes), return_sum / static_cast<double>(episodes),
                  static_cast<long long>(full_length), env->spec().max_episode_steps);
    }
    return 0;
  } catch (const std::invalid_argument& e) {  // bad options, CUDA requested where there is none
    std::fprintf(stderr, "cpp_loop: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cpp_loop: error: %s\n", e.what());
    return 1;
  }
}
