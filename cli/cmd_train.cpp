// `cugym train`: DQN from the command line, into a run folder (config.toml, metrics.csv,
// checkpoints/, model.safetensors), with a progress line, Ctrl-C checkpoints and --resume.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <stdexcept>

#include "agents/dqn.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/json.h"
#include "core/atomic_file.h"

namespace cugym::cli {
namespace fs = std::filesystem;
namespace {

std::atomic<int> g_signal{0};
extern "C" void OnSignal(int signal) { g_signal.store(signal); }

std::string Number(double x) {
  if (std::isnan(x)) return "";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", x);
  return buf;
}

// Checkpoints are checkpoints/step_<12 digits>.safetensors; the newest sorts last.
std::vector<fs::path> Checkpoints(const fs::path& dir) {
  std::vector<fs::path> found;
  if (!fs::is_directory(dir)) return found;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("step_", 0) == 0 && entry.path().extension() == ".safetensors" &&
        name.find(".replay.") == std::string::npos)
      found.push_back(entry.path());
  }
  std::sort(found.begin(), found.end());
  return found;
}

// A resumed run continues metrics.csv from its checkpoint: rows logged after it (by a run that
// was killed rather than interrupted) are dropped, so no row appears twice.
void TruncateMetrics(const fs::path& path, int64_t last_step) {
  std::ifstream in(path);
  if (!in) return;
  std::string line, kept;
  bool dropped = false;
  for (bool header = true; std::getline(in, line); header = false) {
    if (!header && !line.empty() && std::stoll(line.substr(0, line.find(','))) > last_step) {
      dropped = true;
      continue;
    }
    kept += line + "\n";
  }
  if (dropped) WriteFileAtomically(path.string(), kept);
}

}  // namespace

int RunTrain(const Registry& registry, int argc, char** argv) {
  Args args("cugym train",
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
  const bool resume = args.Has("--resume");
  fs::path run_dir;
  DqnConfig config;
  if (resume) {
    run_dir = args.String("--resume");
    if (!fs::is_regular_file(run_dir / "config.toml"))
      throw std::invalid_argument("--resume " + run_dir.string() + ": no config.toml there (not a cugym run folder)");
    config.Apply(ReadTomlFile((run_dir / "config.toml").string()));
    if (args.Has("--config") || args.Has("--out") || args.Has("--env"))
      throw std::invalid_argument("--resume takes the run's own config; use --set or --total-steps to change it");
  } else if (args.Has("--config")) {
    config.Apply(ReadTomlFile(args.String("--config")));
  } else {
    // No config file: the tuned one shipped for the env when there is one, else the defaults.
    const std::string env = args.Has("--env") ? args.String("--env") : config.env_id;
    registry.Get(env);  // an unknown id is the only thing said
    if (const ShippedConfig* shipped = FindShippedConfig(env)) {
      config.Apply(ParseToml(shipped->toml, shipped->path));
      std::cerr << "cugym train: " << env << " with the hyperparameters of " << shipped->path
                << " (built in; --config FILE for others)\n";
    } else {
      std::cerr << "cugym train: no tuned config ships for " << env
                << "; using the defaults (configs/cartpole.toml's values, docs/dqn.md)\n";
    }
  }
  if (args.Has("--env")) config.env_id = args.String("--env");
  if (args.Has("--seed")) config.seed = args.Seed("--seed");
  if (args.Has("--num-envs")) config.num_envs = args.Int("--num-envs");
  if (args.Has("--total-steps")) config.total_steps = args.Int("--total-steps");
  for (const std::string& set : args.Strings("--set")) {
    const std::size_t eq = set.find('=');
    if (eq == std::string::npos || eq == 0) throw std::invalid_argument("--set needs KEY=VALUE, got '" + set + "'");
    TomlValue value = ParseTomlValue(set.substr(eq + 1), "--set " + set.substr(0, eq));
    config.Apply({{set.substr(0, eq), value}});
  }
  if (args.Switch("--save-replay")) config.save_replay = true;
  config.Validate();
  registry.Get(config.env_id);
  const Device device = PickDevice(args.String("--device"));

  if (!resume) {
    if (args.Has("--out")) {
      run_dir = args.String("--out");
    } else {
      char stamp[32];
      const std::time_t now = std::time(nullptr);
      std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", std::localtime(&now));
      run_dir = fs::path("runs") / (config.env_id + "_" + std::to_string(config.seed) + "_" + stamp);
    }
    if (fs::exists(run_dir) && !(fs::is_directory(run_dir) && fs::is_empty(run_dir)))
      throw std::invalid_argument("--out " + run_dir.string() +
                                  " exists and is not empty (use another folder, or --resume it)");
    std::error_code error;
    fs::create_directories(run_dir / "checkpoints", error);
    if (error) throw std::invalid_argument("cannot create run folder " + run_dir.string() + ": " + error.message());
  }
  DqnAgent agent(registry, config, device);
  const fs::path checkpoints = run_dir / "checkpoints";
  if (resume) {
    const std::vector<fs::path> found = Checkpoints(checkpoints);
    if (found.empty()) throw std::invalid_argument("--resume " + run_dir.string() + ": no checkpoint in checkpoints/");
    agent.LoadCheckpoint(found.back().string());
    std::cerr << "cugym train: resuming " << run_dir.string() << " at step " << agent.global_step()
              << (config.save_replay ? "" : " (refilling the replay memory first: save_replay is off)") << "\n";
    TruncateMetrics(run_dir / "metrics.csv", agent.global_step());
  }
  WriteFileAtomically((run_dir / "config.toml").string(), config.ToToml());

  // metrics.csv is a log, appended and flushed row by row (a resumed run continues it), so it is
  // the one file not rewritten through WriteFileAtomically.
  const fs::path metrics_path = run_dir / "metrics.csv";
  const bool new_metrics = !fs::exists(metrics_path);
  std::ofstream metrics(metrics_path, std::ios::app);
  if (!metrics) throw std::runtime_error("cannot write " + metrics_path.string());
  if (new_metrics) metrics << "global_step,wall_time,episodic_return,episodic_length,td_loss,q_values,epsilon,sps\n";

  auto write_checkpoint = [&] {
    char name[64];
    std::snprintf(name, sizeof(name), "step_%012lld.safetensors", static_cast<long long>(agent.global_step()));
    const fs::path path = checkpoints / name;
    agent.SaveCheckpoint(path.string());
    std::vector<fs::path> found = Checkpoints(checkpoints);
    while (static_cast<int64_t>(found.size()) > config.keep_checkpoints) {
      fs::remove(found.front());
      found.erase(found.begin());
    }
    return path;
  };

  const bool tty = isatty(STDOUT_FILENO) != 0;
  auto last_print = std::chrono::steady_clock::now() - std::chrono::hours(1);
  const auto on_log = [&](const DqnProgress& p) {
    metrics << p.global_step << "," << Number(p.wall_time) << "," << Number(p.episodic_return) << ","
            << Number(p.episodic_length) << "," << Number(p.td_loss) << "," << Number(p.q_values) << ","
            << Number(p.epsilon) << "," << Number(p.sps) << "\n";
    metrics.flush();
    const auto now = std::chrono::steady_clock::now();
    const bool last = p.global_step >= config.total_steps;
    if (!tty && !last && now - last_print < std::chrono::seconds(3)) return;
    last_print = now;
    const double eta = p.sps > 0 ? static_cast<double>(config.total_steps - p.global_step) / p.sps : 0;
    char line[200];
    std::snprintf(line, sizeof(line), "step %lld/%lld  %.0f steps/s  return(100) %s  epsilon %.3f  ETA %.0fs",
                  static_cast<long long>(p.global_step), static_cast<long long>(config.total_steps), p.sps,
                  std::isnan(p.mean_return_100) ? "-" : Number(p.mean_return_100).c_str(), p.epsilon, eta);
    if (tty) {
      std::printf("\r%-100s", line);
      if (last) std::printf("\n");
    } else {
      std::printf("%s\n", line);
    }
    std::fflush(stdout);
  };

  g_signal.store(0);
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  agent.Train(on_log, [] { return g_signal.load() != 0; }, [&] { write_checkpoint(); });
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  const fs::path checkpoint = write_checkpoint();
  if (g_signal.load() != 0) {
    if (tty) std::printf("\n");
    std::cout << "interrupted at step " << agent.global_step() << ": checkpoint " << checkpoint.string()
              << "; continue with: cugym train --resume " << run_dir.string() << "\n";
    return 0;
  }
  const fs::path model = run_dir / "model.safetensors";
  agent.SaveModel(model.string());
  std::cout << "trained " << config.env_id << " for " << agent.global_step() << " env steps: " << model.string()
            << "\n";
  if (config.eval_episodes > 0) {
    const EvalResult r = EvaluateModel(registry, model.string(), config.eval_episodes, 10, config.seed + 1000003,
                                       device, 0.0);
    std::printf("greedy evaluation over %lld episodes: mean return %.2f +- %.2f (min %.0f, max %.0f)\n",
                static_cast<long long>(r.episodes), r.mean_return, r.std_return, r.min_return, r.max_return);
    JsonObject json = ResultJson();
    json.Str("env", r.env_id).Int("episodes", r.episodes).Num("mean_return", r.mean_return)
        .Num("std_return", r.std_return).Num("min_return", r.min_return).Num("max_return", r.max_return)
        .Num("mean_length", r.mean_length).Int("global_step", agent.global_step());
    WriteFileAtomically((run_dir / "eval.json").string(), json.str() + "\n");
  }
  return 0;
}

}  // namespace cugym::cli
