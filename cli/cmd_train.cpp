// `cugym train`: DQN from the command line, into a run folder (config.toml, metrics.csv,
// checkpoints/, model.safetensors), with a progress line, Ctrl-C checkpoints and --resume.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <stdexcept>

#include "agents/train_run.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/common.h"

namespace cugym::cli {
namespace {

std::atomic<int> g_signal{0};
extern "C" void OnSignal(int signal) { g_signal.store(signal); }

}  // namespace

int RunTrain(const Registry& registry, int argc, char** argv) {
  Args args(
      "cugym train",
      {{"--env", "ID", "env id (see cugym list); overrides the config's env_id", ""},
       {"--config", "FILE", "TOML config; default: the one shipped for the env (configs/), if any", ""},
       {"--device", "D", kDeviceHelp, "auto"},
       {"--seed", "S", "seed (overrides the config)", ""},
       {"--num-envs", "N", "envs stepped together (overrides the config)", ""},
       {"--total-steps", "T", "env steps to train for (overrides the config)", ""},
       {"--out", "DIR", "run folder (default runs/<env>_<seed>_<time>)", ""},
       {"--set", "KEY=VALUE", "override one config key", "", true},
       {"--resume", "DIR", "continue the run in DIR from its last checkpoint", ""},
       {"--save-replay", "", "checkpoints hold the replay memory (the default; save_replay = false turns it off)", ""}},
      argc, argv, 2);
  if (args.help()) {
    std::cout << args.Usage(
        "Trains DQN and writes config.toml, metrics.csv, checkpoints/ and model.safetensors into the\n"
        "run folder, then evaluates the greedy policy. Ctrl-C or SIGTERM writes a checkpoint and stops;\n"
        "--resume DIR continues from the newest checkpoint exactly as if the run had never stopped (envs,\n"
        "networks, Adam, replay memory, exploration, counters; with save_replay = false the replay memory\n"
        "is refilled before learning resumes). Keys: docs/dqn.md.");
    return 0;
  }
  agent::TrainConfigSource source;
  if (args.Has("--resume")) {
    source.resume_dir = args.String("--resume");
    if (args.Has("--config") || args.Has("--out") || args.Has("--env"))
      throw std::invalid_argument("--resume takes the run's own config; use --set or --total-steps to change it");
  }
  if (args.Has("--config")) source.config_path = args.String("--config");
  if (args.Has("--env")) source.env_id = args.String("--env");
  if (args.Has("--seed")) source.overrides["seed"] = ParseTomlValue(std::to_string(args.Seed("--seed")), "--seed");
  if (args.Has("--num-envs"))
    source.overrides["num_envs"] = ParseTomlValue(std::to_string(args.Int("--num-envs")), "--num-envs");
  if (args.Has("--total-steps"))
    source.overrides["total_steps"] = ParseTomlValue(std::to_string(args.Int("--total-steps")), "--total-steps");
  for (const std::string& set : args.Strings("--set")) {
    const std::size_t eq = set.find('=');
    if (eq == std::string::npos || eq == 0) throw std::invalid_argument("--set needs KEY=VALUE, got '" + set + "'");
    source.overrides[set.substr(0, eq)] = ParseTomlValue(set.substr(eq + 1), "--set " + set.substr(0, eq));
  }
  if (args.Switch("--save-replay")) source.overrides["save_replay"] = ParseTomlValue("true", "--save-replay");
  const agent::DqnConfig config = agent::ResolveTrainConfig(registry, source, std::cerr);
  agent::TrainRunOptions options;
  options.resume = !source.resume_dir.empty();
  options.run_dir = options.resume ? source.resume_dir : args.Has("--out") ? args.String("--out") : "";
  options.device = PickDevice(args.String("--device"));

  const bool tty = isatty(STDOUT_FILENO) != 0;
  auto last_print = std::chrono::steady_clock::now() - std::chrono::hours(1);
  const auto on_log = [&](const agent::DqnProgress& p) {
    const auto now = std::chrono::steady_clock::now();
    const bool last = p.global_step >= config.total_steps;
    if (!tty && !last && now - last_print < std::chrono::seconds(3)) return;
    last_print = now;
    const std::string line = agent::ProgressLine(p, config.total_steps);
    if (tty) {
      std::printf("\r%-120s", line.c_str());
      if (last) std::printf("\n");
    } else {
      std::printf("%s\n", line.c_str());
    }
    std::fflush(stdout);
  };

  g_signal.store(0);
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  agent::TrainRunResult run;
  try {
    run = agent::RunTraining(
        registry, config, options, on_log, [] { return g_signal.load() != 0; }, std::cerr);
  } catch (...) {
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
    throw;
  }
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  if (run.interrupted) {
    if (tty) std::printf("\n");
    std::cout << "interrupted at step " << run.global_step << ": checkpoint " << run.checkpoint
              << "; continue with: cugym train --resume " << run.run_dir << "\n";
    return 0;
  }
  std::cout << "trained " << config.env_id << " for " << run.global_step << " env steps: " << run.model << "\n";
  if (run.evaluated) {
    const agent::EvalResult& r = run.eval;
    std::printf("greedy evaluation over %lld episodes: mean return %.2f +- %.2f (min %.0f, max %.0f)\n",
                static_cast<long long>(r.episodes), r.mean_return, r.std_return, r.min_return, r.max_return);
  }
  return 0;
}

}  // namespace cugym::cli
