// Run folders (run_folder.h).
#include "agents/run/run_folder.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <limits>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "agents/common/algorithm.h"
#include "core/atomic_file.h"
#include "core/checkpoint_files.h"
#include "core/safetensors.h"

namespace cugym::agent {
namespace fs = std::filesystem;
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

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

}  // namespace

EvalTracker::EvalTracker(const EnvSpec& spec, double stop_margin)
    : has_threshold_(spec.has_reward_threshold),
      threshold_(spec.reward_threshold),
      stop_margin_(stop_margin),
      threshold_seconds_(kNaN) {}

bool EvalTracker::Add(int64_t step, double wall_time, const EvalResult& r) {
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

void EvalTracker::Replay(const fs::path& evals_csv) {
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

void EvalTracker::AddTo(JsonObject& json) const {
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

void EvalTracker::Into(TrainRunResult& result) const {
  result.best_step = best_step_;
  result.best = best_;
  result.threshold_step = threshold_step_;
  result.threshold_seconds = threshold_seconds_;
}

std::string NewestCheckpoint(const std::string& run_dir) {
  const std::vector<fs::path> found = Checkpoints(fs::path(run_dir) / "checkpoints");
  return found.empty() ? std::string() : found.back().string();
}

std::unique_ptr<CheckpointReader> ResumableCheckpoint(const fs::path& run_dir, std::ostream& notes) {
  std::vector<std::string> newest_first;
  for (const fs::path& path : Checkpoints(run_dir / "checkpoints"))
    newest_first.insert(newest_first.begin(), path.string());
  if (newest_first.empty())
    throw std::invalid_argument("resume " + run_dir.string() + ": no checkpoint in checkpoints/");
  // The file that verifies is the one loaded: read once (a checkpoint with its replay memory can
  // be gigabytes), and nothing can change it between the check and the load.
  std::unique_ptr<CheckpointReader> read;
  UsableFile usable;
  try {
    usable = NewestUsableFile(newest_first,
                              [&read](const std::string& path) { read = std::make_unique<CheckpointReader>(path); });
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("resume " + run_dir.string() + ": " + e.what());
  }
  for (const SkippedFile& skipped : usable.skipped) notes << "cugym train: " << SkipLine(skipped) << "\n";
  return read;
}

fs::path NewRunFolder(const TrainConfig& config, const std::string& requested) {
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

RunRecord::RunRecord(const Registry& registry, const TrainConfig& config, const fs::path& run_dir,
                     const TrainRunOptions& options, const RunLane& lane, std::ostream& notes)
    : config_(config),
      run_dir_(run_dir),
      options_(options),
      lane_(lane),
      tracker_(registry.Get(config.env_id).spec, config.stop_margin) {
  const int64_t step = lane.agent->global_step();
  if (options.resume) {
    notes << "cugym train: resuming " << run_dir.string() << " at step " << step
          << (config.save_replay || config.algo != "dqn" ? ""
                                                         : " (refilling the replay memory first: save_replay is off)")
          << "\n";
    TruncateLog(run_dir / "metrics.csv", step);
    TruncateLog(run_dir / "evals.csv", step);
    // The earlier parts' event files keep what the checkpoint covers; this part writes a new one.
    for (const std::string& events : EventFilesIn(run_dir.string())) TruncateEventFile(events, step);
  }
  WriteFileAtomically((run_dir / "config.toml").string(), config.ToToml());
  // metrics.csv is a log, appended and flushed row by row (a resumed run continues it), so it is
  // the one file not rewritten through WriteFileAtomically.
  columns_ = GetAlgorithm(config.algo).metrics;
  std::string header = "global_step,wall_time,episodic_return,episodic_length,";
  for (const MetricColumn& c : columns_) header += c.name + ",";
  metrics_ = OpenLog(run_dir / "metrics.csv", header + "sps,eval_return");
  evals_ = OpenLog(run_dir / "evals.csv",
                   "global_step,wall_time,mean_return,std_return,min_return,max_return,episodes,eval_seconds");
  // The evaluations so far (a resumed run reads them back): the best and the first to reach the
  // threshold.
  tracker_.Replay(run_dir / "evals.csv");
  // TensorBoard's scalars: metrics.csv's and evals.csv's values under CleanRL's tags.
  if (config.tensorboard) events_.emplace(run_dir.string());
}

void RunRecord::Log(const MetricsRow& p) {
  metrics_ << p.global_step << "," << Number(p.wall_time) << "," << Number(p.episodic_return) << ","
           << Number(p.episodic_length) << ",";
  for (const MetricColumn& c : columns_) metrics_ << Number(p.Get(c.name)) << ",";
  metrics_ << Number(p.sps) << "," << Number(p.eval_return) << "\n";
  metrics_.flush();
  AddScalars(p.global_step, {{"charts/episodic_return", p.episodic_return},
                             {"charts/episodic_length", p.episodic_length},
                             {"charts/SPS", p.sps}});
  std::vector<std::pair<const char*, double>> own;  // the algorithm's, under CleanRL's tags
  for (const MetricColumn& c : columns_)
    if (!c.tag.empty()) own.emplace_back(c.tag.c_str(), p.Get(c.name));
  AddScalars(p.global_step, own);
  if (options_.on_log) options_.on_log(p);
}

bool RunRecord::Evaluated(const TrainEvaluation& e) {
  const EvalResult& r = e.result;
  // Exact text (core/safetensors.h), so a resumed run reads back the best and threshold
  // evaluations the uninterrupted run compares against, to the bit.
  evals_ << e.global_step << "," << MetadataNumber(e.wall_time) << "," << MetadataNumber(r.mean_return) << ","
         << MetadataNumber(r.std_return) << "," << MetadataNumber(r.min_return) << "," << MetadataNumber(r.max_return)
         << "," << r.episodes << "," << Number(e.eval_seconds) << "\n";
  evals_.flush();
  const bool reached_before = tracker_.reached();
  if (tracker_.Add(e.global_step, e.wall_time, r))
    lane_.agent->SaveModel(lane_.lane, (run_dir_ / "best.safetensors").string());
  AddScalars(e.global_step, {{"eval/mean_return", r.mean_return}, {"eval/std_return", r.std_return}});
  if (tracker_.reached() && !reached_before)  // seconds of training until the threshold, once per run
    AddScalars(e.global_step, {{"eval/time_to_threshold", e.wall_time}});
  if (options_.on_eval && options_.on_eval(e)) stop_asked_ = true;  // the next poll stops the run
  return config_.stop_at_threshold && tracker_.cleared();
}

fs::path RunRecord::Checkpoint() {
  const fs::path checkpoints = run_dir_ / "checkpoints";
  char name[64];
  std::snprintf(name, sizeof(name), "step_%012lld.safetensors", static_cast<long long>(lane_.agent->global_step()));
  const fs::path path = checkpoints / name;
  lane_.agent->SaveCheckpoint(lane_.lane, path.string(), lane_.loop);
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

// The files in order of size, smallest first, so that a full disk costs the largest: the model,
// (eval.json, in Complete), the checkpoint with its replay memory.
TrainRunResult RunRecord::Stop(bool interrupted) {
  TrainRunResult result;
  result.run_dir = run_dir_.string();
  result.resumed = options_.resume;
  result.global_step = lane_.agent->global_step();
  result.interrupted = interrupted;
  if (interrupted) {
    result.checkpoint = Checkpoint().string();
    return result;
  }
  const fs::path model = run_dir_ / "model.safetensors";
  lane_.agent->SaveModel(lane_.lane, model.string());
  result.model = model.string();
  try {
    result.checkpoint = Checkpoint().string();
  } catch (const std::exception& e) {
    not_written_ = std::string("its last checkpoint: ") + e.what();
  }
  return result;
}

void RunRecord::Complete(TrainRunResult& result, const EvalResult* evaluated) {
  if (result.interrupted) return;
  if (evaluated != nullptr) {
    result.eval = *evaluated;
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
  tracker_.Into(result);
  if (!not_written_.empty())
    throw std::runtime_error(run_dir_.string() + ": could not write " + not_written_ + " (model.safetensors" +
                             (evaluated != nullptr ? " and eval.json are" : " is") + " there)");
}

void RunRecord::AddScalars(int64_t step, const std::vector<std::pair<const char*, double>>& values) {
  if (!events_) return;
  std::vector<Scalar> scalars;
  for (const auto& [tag, value] : values)
    if (!std::isnan(value)) scalars.push_back({tag, static_cast<float>(value)});  // as metrics.csv's empty fields
  events_->Add(step, scalars);
}

std::string ProgressLine(const MetricsRow& p, int64_t total_steps) {
  const double eta = p.sps > 0 ? static_cast<double>(total_steps - p.global_step) / p.sps : 0;
  char line[240];
  // The Q-learners' exploration, SAC's temperature, or PPO's entropy (NaN before its first update).
  char extra[48];
  const double alpha = p.Get("alpha"), epsilon = p.Get("epsilon"), entropy = p.Get("entropy");
  if (!std::isnan(alpha))
    std::snprintf(extra, sizeof(extra), "alpha %s", Number(alpha).c_str());
  else if (std::isnan(epsilon))
    std::snprintf(extra, sizeof(extra), "entropy %s", std::isnan(entropy) ? "-" : Number(entropy).c_str());
  else
    std::snprintf(extra, sizeof(extra), "epsilon %.3f", epsilon);
  std::snprintf(line, sizeof(line), "step %lld/%lld  %.0f steps/s  return(100) %s  eval %s  %s  ETA %.0fs",
                static_cast<long long>(p.global_step), static_cast<long long>(total_steps), p.sps,
                std::isnan(p.mean_return_100) ? "-" : Number(p.mean_return_100).c_str(),
                std::isnan(p.eval_return) ? "-" : Number(p.eval_return).c_str(), extra, eta);
  return line;
}

}  // namespace cugym::agent
