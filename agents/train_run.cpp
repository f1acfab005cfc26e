// Training runs in run folders (see train_run.h).
#include "agents/train_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

#include "agents/dqn_batch.h"
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

// The run folder for a new run (runs/<env>_<seed>_<time> when none is asked for); throws
// std::invalid_argument unless it is new or empty. CreateRunFolder makes it once the agent is built,
// so a refused config leaves no folder behind.
fs::path NewRunFolder(const DqnConfig& config, const std::string& requested) {
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
  return run_dir;
}

void CreateRunFolder(const fs::path& run_dir) {
  std::error_code error;
  fs::create_directories(run_dir / "checkpoints", error);
  if (error) throw std::invalid_argument("cannot create run folder " + run_dir.string() + ": " + error.message());
}

// A run's final evaluation: eval_episodes greedy episodes of model.safetensors, one per env as the
// evaluations during training (`cugym eval --episodes E --num-envs E`), seeded with the run's seed +
// kFinalEvalSeed. All the episodes run at once: 100 CartPole episodes take at most 500 batched
// steps. (Until 2026-12-03 they ran on 10 envs, ten episodes in a row: 5,000 steps, each a launch-
// and sync-bound step on a GPU, and a lockstep batch runs one such evaluation per shrink.)
constexpr uint64_t kFinalEvalSeed = 1000003;

// A run folder being written for an agent: config.toml, metrics.csv, evals.csv, best.safetensors,
// the event file and checkpoints/ as it trains, then model.safetensors and eval.json. The agent is
// restored from its newest checkpoint first when the run resumes.
class RunRecord {
 public:
  RunRecord(const Registry& registry, const DqnConfig& config, const fs::path& run_dir, const TrainRunOptions& options,
            const AgentFiles& agent, std::function<void(const DqnProgress&)> on_log, std::ostream& notes)
      : registry_(registry),
        config_(config),
        run_dir_(run_dir),
        options_(options),
        agent_(agent),
        on_log_(std::move(on_log)),
        tracker_(registry.Get(config.env_id).spec, config.stop_margin) {
    if (options.resume) {
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
    metrics_ = OpenLog(run_dir / "metrics.csv",
                       "global_step,wall_time,episodic_return,episodic_length,td_loss,q_values,epsilon,sps,"
                       "eval_return");
    evals_ = OpenLog(run_dir / "evals.csv",
                     "global_step,wall_time,mean_return,std_return,min_return,max_return,episodes,eval_seconds");
    // The evaluations so far (a resumed run reads them back): the best and the first to reach the
    // threshold.
    tracker_.Replay(run_dir / "evals.csv");
    // TensorBoard's scalars: metrics.csv's and evals.csv's values under CleanRL's tags.
    if (config.tensorboard) events_.emplace(run_dir.string());
  }

  // A run that already ended at the threshold (resumed from its last checkpoint) trains no more.
  bool done() const { return config_.stop_at_threshold && tracker_.cleared(); }
  // Whether options.on_eval asked the run to end (as stop() does: a checkpoint, interrupted).
  bool stop_asked() const { return stop_asked_; }

  void Log(const DqnProgress& p) {
    metrics_ << p.global_step << "," << Number(p.wall_time) << "," << Number(p.episodic_return) << ","
             << Number(p.episodic_length) << "," << Number(p.td_loss) << "," << Number(p.q_values) << ","
             << Number(p.epsilon) << "," << Number(p.sps) << "," << Number(p.eval_return) << "\n";
    metrics_.flush();
    AddScalars(p.global_step, {{"charts/episodic_return", p.episodic_return},
                               {"charts/episodic_length", p.episodic_length},
                               {"losses/td_loss", p.td_loss},
                               {"losses/q_values", p.q_values},
                               {"charts/epsilon", p.epsilon},
                               {"charts/SPS", p.sps}});
    if (on_log_) on_log_(p);
  }

  // Records an evaluation; returns true when the run ends at it (stop_at_threshold).
  bool Evaluated(const DqnEvaluation& e) {
    const EvalResult& r = e.result;
    // Exact text (core/safetensors.h), so a resumed run reads back the best and threshold
    // evaluations the uninterrupted run compares against, to the bit.
    evals_ << e.global_step << "," << MetadataNumber(e.wall_time) << "," << MetadataNumber(r.mean_return) << ","
           << MetadataNumber(r.std_return) << "," << MetadataNumber(r.min_return) << "," << MetadataNumber(r.max_return)
           << "," << r.episodes << "," << Number(e.eval_seconds) << "\n";
    evals_.flush();
    const bool reached_before = tracker_.reached();
    if (tracker_.Add(e.global_step, e.wall_time, r)) agent_.SaveModel((run_dir_ / "best.safetensors").string());
    AddScalars(e.global_step, {{"eval/mean_return", r.mean_return}, {"eval/std_return", r.std_return}});
    if (tracker_.reached() && !reached_before)  // seconds of training until the threshold, once per run
      AddScalars(e.global_step, {{"eval/time_to_threshold", e.wall_time}});
    if (options_.on_eval && options_.on_eval(e)) stop_asked_ = true;  // the next poll stops the run
    return config_.stop_at_threshold && tracker_.cleared();
  }

  // checkpoints/step_<global step>.safetensors, keeping the newest keep_checkpoints.
  fs::path Checkpoint() {
    const fs::path checkpoints = run_dir_ / "checkpoints";
    char name[64];
    std::snprintf(name, sizeof(name), "step_%012lld.safetensors", static_cast<long long>(agent_.global_step()));
    const fs::path path = checkpoints / name;
    agent_.SaveCheckpoint(path.string());
    std::vector<fs::path> found = Checkpoints(checkpoints);
    if (std::find(found.begin(), found.end(), path) == found.end()) {  // its rename waits (AtomicFileGroup)
      found.push_back(path);
      std::sort(found.begin(), found.end());
    }
    while (static_cast<int64_t>(found.size()) > config_.keep_checkpoints) {
      RemoveFile(found.front().string());  // in a group, once the new one is on disk
      found.erase(found.begin());
    }
    return path;
  }

  // The end of training: the last checkpoint, then (unless interrupted) model.safetensors.
  TrainRunResult Stop(bool interrupted) {
    TrainRunResult result;
    result.run_dir = run_dir_.string();
    result.resumed = options_.resume;
    result.checkpoint = Checkpoint().string();
    result.global_step = agent_.global_step();
    result.interrupted = interrupted;
    if (interrupted) return result;
    const fs::path model = run_dir_ / "model.safetensors";
    agent_.SaveModel(model.string());
    result.model = model.string();
    return result;
  }

  // A completed run's final evaluation (`evaluated`, or EvaluateModel's of the model file when
  // null), eval.json and the evaluations during training in `result`.
  void Complete(TrainRunResult& result, const EvalResult* evaluated = nullptr) {
    if (result.interrupted) return;
    if (config_.eval_episodes > 0) {
      result.eval = evaluated != nullptr
                        ? *evaluated
                        : EvaluateModel(registry_, result.model, config_.eval_episodes, config_.eval_episodes,
                                        config_.seed + kFinalEvalSeed, options_.device, 0.0);
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
          .Int("global_step", result.global_step);
      tracker_.AddTo(json);
      WriteFileAtomically((run_dir_ / "eval.json").string(), json.str() + "\n");
    }
    result.best_step = tracker_.best_step();
    result.best = tracker_.best();
    result.threshold_step = tracker_.threshold_step();
    result.threshold_seconds = tracker_.threshold_seconds();
  }

 private:
  void AddScalars(int64_t step, std::initializer_list<std::pair<const char*, double>> values) {
    if (!events_) return;
    std::vector<Scalar> scalars;
    for (const auto& [tag, value] : values)
      if (!std::isnan(value)) scalars.push_back({tag, static_cast<float>(value)});  // as metrics.csv's empty fields
    events_->Add(step, scalars);
  }

  const Registry& registry_;
  const DqnConfig& config_;
  fs::path run_dir_;
  const TrainRunOptions& options_;
  const AgentFiles& agent_;
  std::function<void(const DqnProgress&)> on_log_;
  std::ofstream metrics_, evals_;
  EvalTracker tracker_;
  std::optional<EventFileWriter> events_;
  bool stop_asked_ = false;
};

// The newest checkpoint of a run to resume; throws std::invalid_argument when there is none.
std::string NewestCheckpointOf(const fs::path& run_dir) {
  const std::string path = NewestCheckpoint(run_dir.string());
  if (path.empty()) throw std::invalid_argument("resume " + run_dir.string() + ": no checkpoint in checkpoints/");
  return path;
}

// Agent `lane` of a DqnBatch as its run folder sees it, with the training loop's values its
// checkpoints keep. The batch and lane change when the batch shrinks (DqnBatch::Keep).
class BatchMember final : public AgentFiles {
 public:
  BatchMember(const DqnBatch* batch, int lane) : batch(batch), lane(lane) {}
  int64_t global_step() const override { return batch->global_step(); }
  void SaveCheckpoint(const std::string& path) const override {
    batch->SaveCheckpoint(lane, path, wall_time, last_eval_return);
  }
  void SaveModel(const std::string& path) const override { batch->SaveModel(lane, path); }

  const DqnBatch* batch;
  int lane;
  double wall_time = 0;
  double last_eval_return = std::numeric_limits<double>::quiet_NaN();
};

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

std::string NewestCheckpoint(const std::string& run_dir) {
  const std::vector<fs::path> found = Checkpoints(fs::path(run_dir) / "checkpoints");
  return found.empty() ? std::string() : found.back().string();
}

TrainRunResult RunTraining(const Registry& registry, const DqnConfig& config, const TrainRunOptions& options,
                           const std::function<void(const DqnProgress&)>& on_log, const std::function<bool()>& stop,
                           std::ostream& notes) {
  const fs::path run_dir = options.resume ? fs::path(options.run_dir) : NewRunFolder(config, options.run_dir);
  const std::unique_ptr<Agent> agent = MakeAgent(registry, config, options.device);
  if (options.resume) {
    agent->LoadCheckpoint(NewestCheckpointOf(run_dir));
  } else {
    CreateRunFolder(run_dir);
  }
  RunRecord record(registry, config, run_dir, options, *agent, on_log, notes);
  bool stopped = false;
  if (!record.done())
    agent->Train([&](const DqnProgress& p) { record.Log(p); },
                 [&] { return stopped = stopped || record.stop_asked() || stop(); }, [&] { record.Checkpoint(); },
                 [&](const DqnEvaluation& e) { return record.Evaluated(e); });
  // on_eval asking to stop makes an interrupted run even at its last step (Ray Tune's trainable
  // reports that evaluation, then resumes the run to its end).
  TrainRunResult result = record.Stop(stopped || record.stop_asked());
  if (options.on_stop) options.on_stop();
  record.Complete(result);
  return result;
}

std::vector<TrainRunResult> RunBatchTraining(
    const Registry& registry, const DqnConfig& config, const std::vector<uint64_t>& seeds,
    const std::vector<TrainRunOptions>& runs, const std::function<bool()>& stop, std::ostream& notes,
    const std::function<void(std::size_t, const TrainRunResult&)>& on_finished) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point started = Clock::now();
  const auto since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  const std::size_t k_agents = seeds.size();
  if (runs.size() != k_agents) throw std::invalid_argument("RunBatchTraining: one run folder per seed");
  for (const TrainRunOptions& run : runs)
    if (run.resume != runs.front().resume || run.device != runs.front().device)
      throw std::invalid_argument("RunBatchTraining: the runs of a batch all resume or all start, on one device");
  const bool resume = !runs.empty() && runs.front().resume;
  std::vector<DqnConfig> configs(k_agents, config);  // each agent's own: its seed
  std::vector<fs::path> dirs;
  for (std::size_t k = 0; k < k_agents; ++k) {
    configs[k].seed = seeds[k];
    dirs.push_back(resume ? fs::path(runs[k].run_dir) : NewRunFolder(configs[k], runs[k].run_dir));
  }
  auto batch = std::make_unique<DqnBatch>(registry, config, seeds, runs.empty() ? Device::kCpu : runs.front().device);
  if (!resume)
    for (const fs::path& dir : dirs) CreateRunFolder(dir);
  std::vector<std::unique_ptr<BatchMember>> members;
  for (std::size_t k = 0; k < k_agents; ++k)
    members.push_back(std::make_unique<BatchMember>(batch.get(), static_cast<int>(k)));
  if (resume) {
    std::vector<std::string> paths;
    for (const fs::path& dir : dirs) paths.push_back(NewestCheckpointOf(dir));
    const std::vector<DqnBatch::LoopState> loops = batch->LoadCheckpoints(paths);
    for (std::size_t k = 0; k < k_agents; ++k) {
      members[k]->wall_time = loops[k].wall_time;
      members[k]->last_eval_return = loops[k].last_eval_return;
    }
  }
  int64_t global_step = batch->global_step();  // the schedules' step, whichever batch holds the agents
  // The K runs write their files at the same steps: each step's files (config.toml here; the
  // checkpoints, models and eval.json below) are synced and renamed together (AtomicFileGroup), two
  // syncs for all instead of two per file. A resumed run reads back what it truncates: no group.
  std::optional<AtomicFileGroup> first_files;
  if (!resume) first_files.emplace();
  std::vector<std::unique_ptr<RunRecord>> records;
  std::vector<std::unique_ptr<TrainSchedule>> schedules;
  for (std::size_t k = 0; k < k_agents; ++k) {
    records.push_back(std::make_unique<RunRecord>(registry, configs[k], dirs[k], runs[k], *members[k], nullptr, notes));
    RunRecord& record = *records[k];
    BatchMember& member = *members[k];
    schedules.push_back(std::make_unique<TrainSchedule>(
        configs[k], global_step, member.wall_time, member.last_eval_return,
        [&batch, &member](double seconds, int64_t steps) {
          return batch->Progress(member.lane, member.wall_time, seconds, steps, member.last_eval_return);
        },
        [&batch, &member](int64_t index) { return batch->Evaluate(member.lane, index); },
        [&record](const DqnProgress& p) { record.Log(p); }, [&record] { record.Checkpoint(); },
        [&record](const DqnEvaluation& e) { return record.Evaluated(e); }));
  }
  if (first_files) first_files->Commit();

  // Each agent's loop is RunTraining's, one iteration of the batch at a time: an agent leaves when
  // its steps are done, an evaluation ends it, or its on_eval asks it to stop; stop() ends all of
  // them at the same step (their checkpoints resume the batch). A run stops at once (its checkpoint
  // and model); one that completed waits for its final evaluation, which the completed runs take
  // together when the batch shrinks or ends.
  std::vector<TrainRunResult> results(k_agents);
  std::vector<std::size_t> waiting;  // completed, not evaluated yet
  // Where the batch's time goes, said in `notes` at its end (the GPU check's report shows it).
  struct {
    double setup = 0, iterations = 0, evaluations = 0, final_evaluations = 0, shrinks = 0, syncs = 0;
    int64_t iteration_count = 0, final_rounds = 0, shrink_count = 0;
  } spent;
  const auto stop_run = [&](std::size_t k, bool interrupted) {
    results[k] = records[k]->Stop(interrupted);
    if (runs[k].on_stop) runs[k].on_stop();
    if (!interrupted && config.eval_episodes > 0) {
      waiting.push_back(k);
      return;
    }
    records[k]->Complete(results[k]);
    if (on_finished) on_finished(k, results[k]);
  };
  // The waiting runs' final evaluations, all at once; an agent that stopped before this step first
  // gets its model file back into its replica (its lane trained on).
  const auto evaluate_waiting = [&] {
    if (waiting.empty()) return;
    const Clock::time_point t0 = Clock::now();
    std::vector<int> lanes;
    for (std::size_t k : waiting) {
      if (results[k].global_step != batch->global_step()) batch->LoadModel(members[k]->lane, results[k].model);
      lanes.push_back(members[k]->lane);
    }
    const std::vector<EvalResult> evals =
        batch->EvaluateModels(lanes, config.eval_episodes, config.eval_episodes, kFinalEvalSeed);
    for (std::size_t e = 0; e < waiting.size(); ++e) {
      records[waiting[e]]->Complete(results[waiting[e]], &evals[e]);
      if (on_finished) on_finished(waiting[e], results[waiting[e]]);
    }
    waiting.clear();
    spent.final_evaluations += since(t0);
    ++spent.final_rounds;
  };
  std::vector<std::size_t> training;
  for (std::size_t k = 0; k < k_agents; ++k) {
    if (records[k]->done()) {
      stop_run(k, false);
    } else {
      training.push_back(k);
    }
  }
  // Once half the agents or more have left, the batch shrinks to those training (DqnBatch::Keep),
  // which go on exactly as they would have: those that left cost nothing more. Halving bounds the
  // copies to log2(K) rounds; a batch that cannot shrink (envs without snapshots, memory that does
  // not fit beside it) tries again at the next halving.
  std::size_t shrink_at = batch->agents() / 2;
  const auto shrink = [&] {
    shrink_at = training.size() / 2;
    std::vector<int> keep;
    for (std::size_t k : training) keep.push_back(members[k]->lane);
    std::unique_ptr<DqnBatch> next;
    const Clock::time_point t0 = Clock::now();
    try {
      next = batch->Keep(keep);
    } catch (const std::invalid_argument& e) {
      notes << "cugym train: the batch goes on with all " << batch->agents() << " agents: " << e.what() << "\n";
    }
    spent.shrinks += since(t0);
    if (!next) return;
    ++spent.shrink_count;
    evaluate_waiting();  // the agents that completed leave with this batch
    notes << "cugym train: " << training.size() << " of " << batch->agents() << " agents train on at step "
          << global_step << "; the batch shrinks to them\n";
    for (const std::unique_ptr<BatchMember>& member : members) member->batch = nullptr;  // the runs that left
    batch = std::move(next);
    for (std::size_t i = 0; i < training.size(); ++i) {
      members[training[i]]->batch = batch.get();
      members[training[i]]->lane = static_cast<int>(i);
    }
  };
  // One iteration and the files it writes (one group), false once every run has stopped.
  std::vector<double> eval_seconds(k_agents, 0.0);
  const auto step = [&] {
    std::vector<std::size_t> going;
    for (std::size_t k : training) {
      if (schedules[k]->going() && !records[k]->stop_asked()) {
        going.push_back(k);
        continue;
      }
      schedules[k]->End();
      stop_run(k, records[k]->stop_asked());  // interrupted, as RunTraining's, when on_eval asked
    }
    training.swap(going);
    if (!training.empty() && stop()) {
      for (std::size_t k : training) {
        schedules[k]->End();
        stop_run(k, true);
      }
      return false;
    }
    if (training.empty()) return false;
    if (training.size() <= shrink_at) shrink();
    const Clock::time_point t0 = Clock::now();
    batch->Iterate();
    spent.iterations += since(t0);
    ++spent.iteration_count;
    global_step = batch->global_step();
    double all_evals = 0;
    for (std::size_t k : training) all_evals += eval_seconds[k] = schedules[k]->Iterated();
    spent.evaluations += all_evals;
    if (all_evals > 0)
      for (std::size_t k : training) schedules[k]->Exclude(all_evals - eval_seconds[k]);
    return true;
  };
  const auto commit = [&](AtomicFileGroup& files) {
    const Clock::time_point t0 = Clock::now();
    files.Commit();
    spent.syncs += since(t0);
  };
  spent.setup = since(started);
  for (bool going = true; going;) {
    AtomicFileGroup files;
    going = step();
    commit(files);
  }
  AtomicFileGroup last_files;
  evaluate_waiting();
  commit(last_files);
  const double total = since(started);
  const auto count = [](int64_t n, const char* what) { return std::to_string(n) + " " + what + (n == 1 ? "" : "s"); };
  char line[400];
  std::snprintf(line, sizeof(line),
                "cugym train: a batch of %zu agents took %.2f s: setup %.2f s, %s %.2f s, evaluations during "
                "training %.2f s, final evaluations %.2f s (%s), shrinking %.2f s (%s), file syncs %.2f s, the rest "
                "(logs, models, checkpoints) %.2f s\n",
                k_agents, total, spent.setup, count(spent.iteration_count, "iteration").c_str(), spent.iterations,
                spent.evaluations, spent.final_evaluations, count(spent.final_rounds, "round").c_str(), spent.shrinks,
                count(spent.shrink_count, "shrink").c_str(), spent.syncs,
                total - spent.setup - spent.iterations - spent.evaluations - spent.final_evaluations - spent.shrinks -
                    spent.syncs);
  notes << line;
  return results;
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
