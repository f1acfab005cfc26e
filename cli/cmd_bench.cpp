// `cugym bench`: env steps per second of a batched env under a random policy, drawn on the device
// (modes step and fused) or handed in as action arrays (mode actions, as agents and Python do).
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <random>
#include <stdexcept>
#include <vector>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "core/json_writer.h"
#include "core/memory.h"

namespace cugym::cli {

int RunBench(const Registry& registry, int argc, char** argv) {
  Args args("cugym bench",
            {{"--env", "ID", "env id (see cugym list)", "CartPole-v1"},
             {"--num-envs", "N", "envs stepped together", "1024"},
             {"--steps", "T", "steps per timed repeat", "1000"},
             {"--device", "D", kDeviceHelp, "auto"},
             {"--mode", "M",
              "step: one Step() call per step, as an agent loop makes; fused: all T steps in "
              "one call (one launch or parallel region; on the GPU each env's state stays in "
              "registers and only the last step's outputs are written); actions: one Step(actions) "
              "call per step with an action array from memory (random ones made before timing, a "
              "few arrays used in turn), as an agent or the Python package steps",
              "step"},
             {"--repeats", "R", "timed repeats; the median is reported", "5"},
             {"--seed", "S", "seed of the env and the random actions", "0"},
             {"--json", "", "print one JSON object", ""}},
            argc, argv, 2);
  if (args.help()) {
    std::cout << args.Usage(
        "Steps N envs for T steps with uniformly random actions (drawn on the device, or\n"
        "given as arrays with --mode actions), autoreset on, and reports env steps per\n"
        "second (N*T/seconds), the median of R repeats after one untimed warm-up repeat.");
    return 0;
  }
  const std::string id = args.String("--env");
  const int64_t num_envs = args.Int("--num-envs");
  const int64_t steps = args.Int("--steps");
  const int64_t repeats = args.Int("--repeats");
  const std::string mode = args.String("--mode");
  if (steps <= 0) throw std::invalid_argument("--steps must be positive, got " + std::to_string(steps));
  if (repeats <= 0) throw std::invalid_argument("--repeats must be positive, got " + std::to_string(repeats));
  if (mode != "step" && mode != "fused" && mode != "actions")
    throw std::invalid_argument("--mode must be step, fused or actions, got '" + mode + "'");
  const uint64_t seed = args.Seed("--seed");
  registry.Get(id);  // unknown ids fail before the device is touched
  const Device device = PickDevice(args.String("--device"));
  std::unique_ptr<VectorEnv> env = MakeVectorEnv(registry, id, num_envs, device);

  env->Reset(seed);
  // Mode actions: `pool` random action arrays on the device (at most 64 MiB of them), made here.
  const Space& space = env->spec().action_space;
  const int64_t per_step = num_envs * space.flat_size();
  const int64_t pool = mode == "actions" ? std::clamp<int64_t>((int64_t{1} << 24) / per_step, 1, 64) : 0;
  Buffer<int32_t> discrete(device, space.is_discrete() ? static_cast<size_t>(pool * per_step) : 0);
  Buffer<float> box(device, space.is_discrete() ? 0 : static_cast<size_t>(pool * per_step));
  if (pool > 0) {
    std::mt19937_64 rng(seed);
    if (space.is_discrete()) {
      std::vector<int32_t> host(static_cast<size_t>(pool * per_step));
      for (int32_t& a : host) a = static_cast<int32_t>(rng() % static_cast<uint64_t>(space.n));
      discrete.FromHost(host.data(), host.size());
    } else {
      std::vector<float> host(static_cast<size_t>(pool * per_step));
      std::uniform_real_distribution<float> unit(0.0f, 1.0f);
      for (size_t k = 0; k < host.size(); ++k) {
        const size_t d = k % static_cast<size_t>(space.flat_size());
        host[k] = space.low[d] + (space.high[d] - space.low[d]) * unit(rng);
      }
      box.FromHost(host.data(), host.size());
    }
  }
  auto run = [&] {
    if (mode == "fused") {
      env->StepRandom(steps);
    } else if (mode == "actions") {
      for (int64_t t = 0; t < steps; ++t) {
        const int64_t offset = (t % pool) * per_step;
        if (space.is_discrete())
          env->Step(discrete.data() + offset);
        else
          env->Step(box.data() + offset);
      }
    } else {
      for (int64_t t = 0; t < steps; ++t) env->StepRandom(1);
    }
    Synchronize(device);
  };
  run();  // warm-up: first-touch of pages, caches, GPU clocks
  std::vector<double> rates;
  for (int64_t r = 0; r < repeats; ++r) {
    auto start = std::chrono::steady_clock::now();
    run();
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    rates.push_back(static_cast<double>(num_envs) * static_cast<double>(steps) / seconds);
  }
  std::sort(rates.begin(), rates.end());
  const double median = rates[rates.size() / 2];
  const int64_t bytes_per_step = registry.Get(id).bytes_per_step;
  const double gbytes = median * static_cast<double>(bytes_per_step) / 1e9;
  const std::string hardware =
      device == Device::kCuda ? CudaDeviceName() : std::to_string(omp_get_max_threads()) + " threads";

  if (args.Switch("--json")) {
    JsonObject json = ResultJson();
    json.Str("env", id)
        .Str("device", DeviceName(device))
        .Str("hardware", hardware)
        .Int("num_envs", num_envs)
        .Int("steps", steps)
        .Str("mode", mode)
        .Int("repeats", repeats)
        .Num("steps_per_second", median)
        .Num("min_steps_per_second", rates.front())
        .Num("max_steps_per_second", rates.back())
        .Int("bytes_per_step", bytes_per_step)
        .Num("model_gbytes_per_second", gbytes);
    std::cout << json.str() << "\n";
  } else {
    std::printf("%s on %s (%s): %lld envs x %lld steps, mode %s\n", id.c_str(), DeviceName(device), hardware.c_str(),
                static_cast<long long>(num_envs), static_cast<long long>(steps), mode.c_str());
    std::printf("  %.3g env steps/s (median of %lld; min %.3g, max %.3g)\n", median, static_cast<long long>(repeats),
                rates.front(), rates.back());
    std::printf("  traffic model: %lld bytes per env step = %.1f GB/s if nothing stayed cached\n",
                static_cast<long long>(bytes_per_step), gbytes);
  }
  return 0;
}

}  // namespace cugym::cli
