// `cugym train`: DQN or PQN from the command line, into a run folder (config.toml, metrics.csv,
// checkpoints/, model.safetensors), with a progress line, Ctrl-C checkpoints and --resume.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <vector>

#include "agents/common/train_config.h"
#include "agents/run/config_source.h"
#include "agents/run/multi_run.h"
#include "agents/run/trainer.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/common.h"

namespace cugym::cli {
namespace {

// The first SIGINT or SIGTERM caught (0: none); the run checkpoints and stops, and the command
// exits with the shell's status for that signal (InterruptedStatus).
std::atomic<int> g_signal{0};
extern "C" void OnSignal(int signal) {
  int none = 0;
  g_signal.compare_exchange_strong(none, signal);
}

// 128 + the signal number, as a shell reports a process the signal killed (130 for SIGINT, 143
// for SIGTERM), so a script or scheduler tells an interrupted run from a finished one; the run
// has written its checkpoint first.
int InterruptedStatus() {
  const int signal = g_signal.load();
  return 128 + (signal != 0 ? signal : SIGINT);
}

// Where the config comes from and the keys the flags override.
agent::TrainConfigSource SourceFromArgs(const Args& args) {
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
  return source;
}

// Restores the default signal handlers when it goes out of scope.
struct SignalsCaught {
  SignalsCaught() {
    g_signal.store(0);
    std::signal(SIGINT, OnSignal);
    std::signal(SIGTERM, OnSignal);
  }
  ~SignalsCaught() {
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
  }
};

// --seeds / --sweep, or --resume of a batch folder: every (grid point, seed) in this process.
int RunTrainBatch(const Registry& registry, const Args& args) {
  if (args.Has("--seed")) throw std::invalid_argument("--seed and --seeds do not go together (give --seeds S)");
  agent::TrainConfigSource source = SourceFromArgs(args);
  agent::MultiRunOptions options;
  options.resume = !source.resume_dir.empty();
  options.out_dir = options.resume ? source.resume_dir : args.String("--out");
  source.resume_dir.clear();
  options.device = PickDevice(args.String("--device"));
  if (args.Has("--jobs")) {
    options.jobs = static_cast<int>(args.Int("--jobs"));
    if (options.jobs < 1) throw std::invalid_argument("--jobs must be >= 1, got " + args.String("--jobs"));
  }
  if (args.Has("--lockstep")) {
    const std::string lockstep = args.String("--lockstep");
    if (lockstep != "on" && lockstep != "off" && lockstep != "auto")
      throw std::invalid_argument("--lockstep takes on, off or auto, got '" + lockstep + "'");
    if (lockstep != "auto") options.lockstep = lockstep == "on";
  }
  std::vector<uint64_t> seeds;
  std::vector<agent::SweepAxis> sweep;
  if (options.resume) {
    if (args.Has("--seeds") || !args.Strings("--sweep").empty())
      throw std::invalid_argument("--resume of a batch takes its own seeds and sweep (batch.toml)");
  } else {
    if (!args.Has("--out")) throw std::invalid_argument("--seeds and --sweep need --out DIR for the batch folder");
    seeds = args.Has("--seeds") ? agent::ParseSeedList(args.String("--seeds")) : std::vector<uint64_t>{1};
    for (const std::string& s : args.Strings("--sweep")) sweep.push_back(agent::ParseSweep(s));
  }
  const bool tty = isatty(STDOUT_FILENO) != 0;
  auto last_print = std::chrono::steady_clock::now() - std::chrono::hours(1);
  const auto on_progress = [&](const agent::MultiRunProgress& p) {
    const auto now = std::chrono::steady_clock::now();
    const bool last = p.done + p.interrupted == p.total;
    if (!last && now - last_print < std::chrono::seconds(tty ? 1 : 3)) return;
    last_print = now;
    std::string line = "runs: " + std::to_string(p.done) + "/" + std::to_string(p.total) + " done, " +
                       std::to_string(p.running) + " training";
    if (p.interrupted > 0) line += ", " + std::to_string(p.interrupted) + " interrupted";
    if (!std::isnan(p.best_eval)) {
      char evals[80];
      std::snprintf(evals, sizeof(evals), "  latest evaluations: best %.1f, worst %.1f", p.best_eval, p.worst_eval);
      line += evals;
    }
    std::printf(tty ? "\r%-120s" : "%s\n", line.c_str());
    if (tty && last) std::printf("\n");
    std::fflush(stdout);
  };
  agent::MultiRunResult result;
  {
    SignalsCaught signals;
    result = agent::RunMany(
        registry, source, seeds, sweep, options, on_progress, [] { return g_signal.load() != 0; }, std::cerr);
  }
  if (result.interrupted) {
    if (tty) std::printf("\n");
    std::cout << "interrupted: every run that had started wrote a checkpoint; continue with: cugym train --resume "
              << options.out_dir << "\n";
    return InterruptedStatus();
  }
  std::ifstream md(result.summary_md);
  std::cout << md.rdbuf() << "summary: " << result.summary_json << "\n";
  return 0;
}

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
       {"--resume", "DIR", "continue the run (or batch) in DIR from its last checkpoint(s)", ""},
       {"--seeds", "LIST", "train one run per seed in one process, e.g. 1-32 or 1,4,9 (needs --out)", ""},
       {"--sweep", "KEY=V1,V2", "cross these values of KEY with the seeds (repeatable; keys: docs/sweeps.md)", "",
        true},
       {"--jobs", "J", "runs (or lockstep batches) trained at once on the CPU (default: one per hardware thread)", ""},
       {"--lockstep", "on|off|auto",
        "train each grid point's seeds as one batched network (default auto: on CUDA, where the config allows)", ""},
       {"--save-replay", "", "checkpoints hold the replay memory (the default; save_replay = false turns it off)", ""}},
      argc, argv, 2);
  if (args.help()) {
    std::cout << args.Usage(
        "Trains DQN, PQN, PPO or SAC (algo in the config, or --set algo=pqn|ppo|sac for the env's config\n"
        "of that algorithm; else the env's default: DQN's where one ships, else SAC's or PPO's) and\n"
        "writes config.toml, metrics.csv, checkpoints/ and model.safetensors into the\n"
        "run folder, then evaluates the greedy policy. Ctrl-C or SIGTERM writes a checkpoint and stops\n"
        "(exit status 130 after SIGINT, 143 after SIGTERM; 0 when the run finished, 2 on bad input);\n"
        "--resume DIR continues from the newest checkpoint exactly as if the run had never stopped (envs,\n"
        "networks, Adam, replay memory, exploration, counters; with save_replay = false the replay memory\n"
        "is refilled before learning resumes). Keys: docs/dqn.md, pqn.md, ppo.md, sac.md.\n"
        "--seeds and --sweep train every (grid point, seed) in one process into DIR/[POINT/]seed_S/ (each\n"
        "the run folder `--seed S` alone gives, with the same bits) and write DIR/summary.json and\n"
        "DIR/summary.md; --resume DIR continues such a batch. With --lockstep on (the default on CUDA) a\n"
        "grid point's seeds step together and their K networks train as one batched network.");
    return 0;
  }
  const bool batch = args.Has("--seeds") || !args.Strings("--sweep").empty() ||
                     (args.Has("--resume") && agent::IsBatchFolder(args.String("--resume")));
  if (batch) return RunTrainBatch(registry, args);
  for (const char* flag : {"--jobs", "--lockstep"})
    if (args.Has(flag))
      throw std::invalid_argument(std::string(flag) + " goes with --seeds or --sweep (a batch of runs)");
  const agent::TrainConfigSource source = SourceFromArgs(args);
  const agent::TrainConfig config = agent::ResolveTrainConfig(registry, source, std::cerr);
  agent::TrainRunOptions options;
  options.resume = !source.resume_dir.empty();
  options.run_dir = options.resume ? source.resume_dir : args.Has("--out") ? args.String("--out") : "";
  options.device = PickDevice(args.String("--device"));

  const bool tty = isatty(STDOUT_FILENO) != 0;
  auto last_print = std::chrono::steady_clock::now() - std::chrono::hours(1);
  options.on_log = [&](const agent::MetricsRow& p) {
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

  agent::TrainRunResult run;
  {
    SignalsCaught signals;
    run = agent::RunTraining(
        registry, config, options, [] { return g_signal.load() != 0; }, std::cerr);
  }
  if (run.interrupted) {
    if (tty) std::printf("\n");
    std::cout << "interrupted at step " << run.global_step << ": checkpoint " << run.checkpoint
              << "; continue with: cugym train --resume " << run.run_dir << "\n";
    return InterruptedStatus();
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
