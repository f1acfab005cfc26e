// Training runs in run folders (see train_run.h).
#include "agents/train_run.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "core/atomic_file.h"
#include "core/event_file.h"
#include "core/json_writer.h"
#include "core/safetensors.h"

namespace cugym::agent {
namespace fs = std::filesystem;
namespace {

std::string Number(double x) {
  if (std::isnan(x)) return "";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", x);
  return buf;
}

// A resumed run continues metrics.csv and evals.csv from its checkpoint: rows logged after it (by
// a run that was killed rather than interrupted) are dropped, so no row appears twice.
void TruncateLog(const fs::path& path, int64_t last_step) {
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

// A CSV log opened for appending, with its header when new.
std::ofstream OpenLog(const fs::path& path, const std::string& header) {
  const bool fresh = !fs::exists(path);
  std::ofstream out(path, std::ios::app);
  if (!out) throw std::runtime_error("cannot write " + path.string());
  if (fresh) out << header << "\n";
  return out;
}

// The evaluations of a run: the best (ties to the later), the first that reached the env's
// threshold, and whether one cleared it by `stop_margin` standard errors of its mean (where a run
// with stop_at_threshold ends).
class EvalTracker {
 public:
  EvalTracker(const EnvSpec& spec, double stop_margin)
      : has_threshold_(spec.has_reward_threshold), threshold_(spec.reward_threshold), stop_margin_(stop_margin) {}

  // Returns true when this evaluation is the best so far.
  bool Add(int64_t step, double wall_time, const EvalResult& r) {
    if (has_threshold_ && threshold_step_ < 0 && r.mean_return >= threshold_) {
      threshold_step_ = step;
      threshold_seconds_ = wall_time;
    }
    const double standard_error = r.episodes > 0 ? r.std_return / std::sqrt(static_cast<double>(r.episodes)) : 0.0;
    if (has_threshold_ && r.mean_return - stop_margin_ * standard_error >= threshold_) cleared_ = true;
    if (best_step_ >= 0 && r.mean_return < best_.mean_return) return false;
    best_ = r;
    best_step_ = step;
    return true;
  }
  // Reads the evaluations an earlier part of the run wrote to evals.csv.
  void Replay(const fs::path& evals_csv) {
    std::ifstream in(evals_csv);
    std::string line;
    if (!std::getline(in, line)) return;
    while (std::getline(in, line)) {
      std::vector<double> v;
      std::stringstream fields(line);
      for (std::string field; std::getline(fields, field, ',');) v.push_back(field.empty() ? kNaN : std::stod(field));
      if (v.size() < 7) continue;
      EvalResult r;
      r.mean_return = v[2];
      r.std_return = v[3];
      r.min_return = v[4];
      r.max_return = v[5];
      r.episodes = static_cast<int64_t>(v[6]);
      Add(static_cast<int64_t>(v[0]), v[1], r);
    }
  }
  // eval.json's fields: the threshold, the best evaluation, when the threshold was first reached.
  void AddTo(JsonObject& json) const {
    json.Raw("threshold", has_threshold_ ? JsonNumber(threshold_) : "null");
    if (best_step_ >= 0) {
      JsonObject best;
      best.Int("global_step", best_step_)
          .Num("mean_return", best_.mean_return)
          .Num("std_return", best_.std_return)
          .Int("episodes", best_.episodes);
      json.Raw("best", best.str());
    } else {
      json.Raw("best", "null");
    }
    json.Raw("threshold_step", threshold_step_ >= 0 ? std::to_string(threshold_step_) : "null");
    json.Raw("threshold_seconds", threshold_step_ >= 0 ? JsonNumber(threshold_seconds_) : "null");
  }
  bool reached() const { return threshold_step_ >= 0; }
  bool cleared() const { return cleared_; }
  int64_t best_step() const { return best_step_; }
  const EvalResult& best() const { return best_; }
  int64_t threshold_step() const { return threshold_step_; }
  double threshold_seconds() const { return threshold_seconds_; }

 private:
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  bool has_threshold_;
  double threshold_;
  double stop_margin_;
  bool cleared_ = false;
  EvalResult best_;
  int64_t best_step_ = -1;
  int64_t threshold_step_ = -1;
  double threshold_seconds_ = kNaN;
};

fs::path PrepareRunFolder(const DqnConfig& config, const std::string& requested) {
  fs::path run_dir = requested;
  if (run_dir.empty()) {
    char stamp[32];
    const std::time_t now = std::time(nullptr);
    std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", std::localtime(&now));
    run_dir = fs::path("runs") / (config.env_id + "_" + std::to_string(config.seed) + "_" + stamp);
  }
  if (fs::exists(run_dir) && !(fs::is_directory(run_dir) && fs::is_empty(run_dir)))
    throw std::invalid_argument("run folder " + run_dir.string() +
                                " exists and is not empty (use another folder, or resume it)");
  std::error_code error;
  fs::create_directories(run_dir / "checkpoints", error);
  if (error) throw std::invalid_argument("cannot create run folder " + run_dir.string() + ": " + error.message());
  return run_dir;
}

}  // namespace

DqnConfig ResolveTrainConfig(const Registry& registry, const TrainConfigSource& source, std::ostream& notes) {
  DqnConfig config;
  if (!source.resume_dir.empty()) {
    const fs::path run_dir = source.resume_dir;
    if (!fs::is_regular_file(run_dir / "config.toml"))
      throw std::invalid_argument("resume " + run_dir.string() + ": no config.toml there (not a cugym run folder)");
    if (!source.config_path.empty() || !source.env_id.empty())
      throw std::invalid_argument("a resumed run takes its own config; change keys with overrides instead");
    config.Apply(ReadTomlFile((run_dir / "config.toml").string()));
  } else if (!source.config_path.empty()) {
    config.Apply(ReadTomlFile(source.config_path));
  } else if (source.table) {
    config.Apply(*source.table);
  } else {
    // No config file: the tuned one shipped for the env when there is one, else the defaults.
    const std::string env = !source.env_id.empty() ? source.env_id : config.env_id;
    registry.Get(env);  // an unknown id is the only thing said
    // An algorithm asked for among the overrides picks its own tuned config (--set algo=pqn).
    auto algo = source.overrides.find("algo");
    const std::string wanted = algo != source.overrides.end() && algo->second.kind == TomlValue::Kind::kString
                                   ? algo->second.text
                                   : config.algo;
    if (const ShippedConfig* shipped = FindShippedConfig(env, wanted)) {
      config.Apply(ParseToml(shipped->toml, shipped->path));
      notes << "cugym train: " << env << " with the hyperparameters of " << shipped->path
            << " (built in; pass a config file for others)\n";
    } else {
      notes << "cugym train: no tuned config ships for " << env << (wanted == "dqn" ? "" : " with algo = " + wanted)
            << "; using the defaults (configs/cartpole.toml's values, docs/dqn.md"
            << (wanted == "dqn" ? "" : ", docs/pqn.md") << ")\n";
    }
  }
  if (!source.env_id.empty()) config.env_id = source.env_id;
  for (const auto& [key, value] : source.overrides) config.Apply({{key, value}});
  config.Validate();
  registry.Get(config.env_id);
  return config;
}

TrainRunResult RunTraining(const Registry& registry, const DqnConfig& config, const TrainRunOptions& options,
                           const std::function<void(const DqnProgress&)>& on_log, const std::function<bool()>& stop,
                           std::ostream& notes) {
  const fs::path run_dir = options.resume ? fs::path(options.run_dir) : PrepareRunFolder(config, options.run_dir);
  TrainRunResult result;
  result.run_dir = run_dir.string();
  result.resumed = options.resume;
  const std::unique_ptr<Agent> trained = MakeAgent(registry, config, options.device);
  Agent& agent = *trained;
  const fs::path checkpoints = run_dir / "checkpoints";
  if (options.resume) {
    const std::vector<fs::path> found = Checkpoints(checkpoints);
    if (found.empty()) throw std::invalid_argument("resume " + run_dir.string() + ": no checkpoint in checkpoints/");
    agent.LoadCheckpoint(found.back().string());
    notes << "cugym train: resuming " << run_dir.string() << " at step " << agent.global_step()
          << (config.save_replay ? "" : " (refilling the replay memory first: save_replay is off)") << "\n";
    TruncateLog(run_dir / "metrics.csv", agent.global_step());
    TruncateLog(run_dir / "evals.csv", agent.global_step());
    // The earlier parts' event files keep what the checkpoint covers; this part writes a new one.
    for (const std::string& events : EventFilesIn(run_dir.string())) TruncateEventFile(events, agent.global_step());
  }
  WriteFileAtomically((run_dir / "config.toml").string(), config.ToToml());

  // metrics.csv is a log, appended and flushed row by row (a resumed run continues it), so it is
  // the one file not rewritten through WriteFileAtomically.

  std::ofstream metrics = OpenLog(run_dir / "metrics.csv",
                                  "global_step,wall_time,episodic_return,episodic_length,td_loss,q_values,epsilon,sps,"
                                  "eval_return");
  std::ofstream evals = OpenLog(run_dir / "evals.csv",
                                "global_step,wall_time,mean_return,std_return,min_return,max_return,episodes,"
                                "eval_seconds");
  // The evaluations so far (a resumed run reads them back): the best and the first to reach the
  // threshold.
  EvalTracker tracker(registry.Get(config.env_id).spec, config.stop_margin);
  tracker.Replay(run_dir / "evals.csv");
  // TensorBoard's scalars: metrics.csv's and evals.csv's values under CleanRL's tags.
  std::optional<EventFileWriter> events;
  if (config.tensorboard) events.emplace(run_dir.string());
  const auto add_scalars = [&](int64_t step, std::initializer_list<std::pair<const char*, double>> values) {
    if (!events) return;
    std::vector<Scalar> scalars;
    for (const auto& [tag, value] : values)
      if (!std::isnan(value)) scalars.push_back({tag, static_cast<float>(value)});  // as metrics.csv's empty fields
    events->Add(step, scalars);
  };

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
  const auto log_row = [&](const DqnProgress& p) {
    metrics << p.global_step << "," << Number(p.wall_time) << "," << Number(p.episodic_return) << ","
            << Number(p.episodic_length) << "," << Number(p.td_loss) << "," << Number(p.q_values) << ","
            << Number(p.epsilon) << "," << Number(p.sps) << "," << Number(p.eval_return) << "\n";
    metrics.flush();
    add_scalars(p.global_step, {{"charts/episodic_return", p.episodic_return},
                                {"charts/episodic_length", p.episodic_length},
                                {"losses/td_loss", p.td_loss},
                                {"losses/q_values", p.q_values},
                                {"charts/epsilon", p.epsilon},
                                {"charts/SPS", p.sps}});
    on_log(p);
  };
  const fs::path best_model = run_dir / "best.safetensors";
  bool stopped = false;
  const auto on_eval = [&](const DqnEvaluation& e) {
    const EvalResult& r = e.result;
    // Exact text (core/safetensors.h), so a resumed run reads back the best and threshold
    // evaluations the uninterrupted run compares against, to the bit.
    evals << e.global_step << "," << MetadataNumber(e.wall_time) << "," << MetadataNumber(r.mean_return) << ","
          << MetadataNumber(r.std_return) << "," << MetadataNumber(r.min_return) << "," << MetadataNumber(r.max_return)
          << "," << r.episodes << "," << Number(e.eval_seconds) << "\n";
    evals.flush();
    const bool reached_before = tracker.reached();
    if (tracker.Add(e.global_step, e.wall_time, r)) agent.SaveModel(best_model.string());
    add_scalars(e.global_step, {{"eval/mean_return", r.mean_return}, {"eval/std_return", r.std_return}});
    if (tracker.reached() && !reached_before)  // seconds of training until the threshold, once per run
      add_scalars(e.global_step, {{"eval/time_to_threshold", e.wall_time}});
    if (options.on_eval && options.on_eval(e)) stopped = true;  // the next poll stops the run
    return config.stop_at_threshold && tracker.cleared();
  };

  // A run that already ended at the threshold (resumed from its last checkpoint) trains no more.
  const bool done = config.stop_at_threshold && tracker.cleared();
  if (!done)
    agent.Train(
        log_row, [&] { return stopped = stopped || stop(); }, [&] { write_checkpoint(); }, on_eval);
  result.checkpoint = write_checkpoint().string();
  result.global_step = agent.global_step();
  if (stopped) {
    result.interrupted = true;
    return result;
  }
  const fs::path model = run_dir / "model.safetensors";
  agent.SaveModel(model.string());
  result.model = model.string();
  if (config.eval_episodes > 0) {
    result.eval =
        EvaluateModel(registry, model.string(), config.eval_episodes, 10, config.seed + 1000003, options.device, 0.0);
    result.evaluated = true;
    const EvalResult& r = result.eval;
    JsonObject json = ResultJson();
    json.Str("env", r.env_id)
        .Int("episodes", r.episodes)
        .Num("mean_return", r.mean_return)
        .Num("std_return", r.std_return)
        .Num("min_return", r.min_return)
        .Num("max_return", r.max_return)
        .Num("mean_length", r.mean_length)
        .Int("global_step", agent.global_step());
    tracker.AddTo(json);
    WriteFileAtomically((run_dir / "eval.json").string(), json.str() + "\n");
  }
  result.best_step = tracker.best_step();
  result.best = tracker.best();
  result.threshold_step = tracker.threshold_step();
  result.threshold_seconds = tracker.threshold_seconds();
  return result;
}

std::string ProgressLine(const DqnProgress& p, int64_t total_steps) {
  const double eta = p.sps > 0 ? static_cast<double>(total_steps - p.global_step) / p.sps : 0;
  char line[240];
  std::snprintf(line, sizeof(line), "step %lld/%lld  %.0f steps/s  return(100) %s  eval %s  epsilon %.3f  ETA %.0fs",
                static_cast<long long>(p.global_step), static_cast<long long>(total_steps), p.sps,
                std::isnan(p.mean_return_100) ? "-" : Number(p.mean_return_100).c_str(),
                std::isnan(p.eval_return) ? "-" : Number(p.eval_return).c_str(), p.epsilon, eta);
  return line;
}

}  // namespace cugym::agent
