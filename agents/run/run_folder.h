// A run folder as the driver (Trainer, trainer.h) writes it for one lane of an agent: config.toml,
// metrics.csv, evals.csv, best.safetensors, the TensorBoard event file and checkpoints/ (rotated)
// as it trains, then model.safetensors and eval.json; and what a resumed run reads back of it (its
// logs truncated to its checkpoint, its evaluations so far).
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "agents/common/agent.h"
#include "agents/common/checkpoint.h"
#include "agents/common/evaluation.h"
#include "agents/common/train_config.h"
#include "core/event_file.h"
#include "core/json_writer.h"
#include "core/registry.h"

namespace cugym::agent {

struct TrainRunOptions {
  std::string run_dir;  // "" = runs/<env>_<seed>_<time>; must be new or empty unless resuming
  bool resume = false;  // continue run_dir from its newest checkpoint, exactly (Agent::LoadCheckpoints)
  Device device = Device::kCpu;
  // Gets every metrics.csv row after it is written (a progress line).
  std::function<void(const MetricsRow&)> on_log;
  // Called after each evaluation during training, once its evals.csv row, best.safetensors and
  // event-file scalars are written. Returning true ends the run as stop() does: a checkpoint, then
  // interrupted = true (Ray Tune's trainable reports and checkpoints at every evaluation so).
  std::function<bool(const TrainEvaluation&)> on_eval;
  // Called once the run stops training (its steps done, stopped early or interrupted), before its
  // final evaluation, which in a batch waits until the batch shrinks or ends.
  std::function<void()> on_stop;
};

struct TrainRunResult {
  std::string run_dir;
  std::string checkpoint;  // the last checkpoint written
  std::string model;       // model.safetensors ("" when interrupted)
  int64_t global_step = 0;
  bool interrupted = false;
  bool resumed = false;
  bool evaluated = false;  // eval holds the greedy evaluation (config.eval_episodes > 0)
  EvalResult eval;
  // The evaluations during training (evals.csv): the best (best.safetensors, -1 when none ran)
  // and the first to reach the env's threshold (-1 and 0 s when none did).
  int64_t best_step = -1;
  EvalResult best;
  int64_t threshold_step = -1;
  double threshold_seconds = 0;
};

// A run's final evaluation: eval_episodes greedy episodes of model.safetensors, one per env as the
// evaluations during training (`cugym eval --episodes E --num-envs E`), seeded with the run's seed +
// kFinalEvalSeed, all at once.
constexpr uint64_t kFinalEvalSeed = 1000003;

// The newest checkpoint in run_dir/checkpoints ("" when there is none).
std::string NewestCheckpoint(const std::string& run_dir);
// The checkpoint a resume of run_dir goes on from, read whole: the newest one that reads and
// verifies (its structure and CRC-32C, core/checkpoint_files.h), for Agent::LoadCheckpoints; each
// newer one skipped is a line on `notes`.
// Throws std::invalid_argument when there is none ("resume DIR: no checkpoint in checkpoints/") or
// none is usable (one line listing each with its reason).
std::unique_ptr<CheckpointReader> ResumableCheckpoint(const std::filesystem::path& run_dir, std::ostream& notes);
// The run folder for a new run (runs/<env>_<seed>_<time> when none is asked for); throws
// std::invalid_argument unless it is new or empty. CreateRunFolder makes it once the agent is built,
// so a refused config leaves no folder behind.
std::filesystem::path NewRunFolder(const TrainConfig& config, const std::string& requested);
void CreateRunFolder(const std::filesystem::path& run_dir);

// The one-line progress text `cugym train` prints ("step 2000/60000  ...  ETA 3s").
std::string ProgressLine(const MetricsRow& progress, int64_t total_steps);

// One lane of an agent as its run folder sees it: which agent and lane (they change when a batch
// shrinks) and the loop's values its checkpoints keep.
struct RunLane {
  Agent* agent = nullptr;
  int lane = 0;
  LoopState loop;
};

// The evaluations of a run: the best (ties to the later), the first that reached the env's
// threshold, and whether one cleared it by `stop_margin` standard errors of its mean (where a run
// with stop_at_threshold ends).
class EvalTracker {
 public:
  EvalTracker(const EnvSpec& spec, double stop_margin);
  // Returns true when this evaluation is the best so far.
  bool Add(int64_t step, double wall_time, const EvalResult& r);
  // Reads the evaluations an earlier part of the run wrote to evals.csv.
  void Replay(const std::filesystem::path& evals_csv);
  // eval.json's fields: the threshold, the best evaluation, when the threshold was first reached.
  void AddTo(JsonObject& json) const;
  bool reached() const { return threshold_step_ >= 0; }
  bool cleared() const { return cleared_; }
  void Into(TrainRunResult& result) const;

 private:
  bool has_threshold_;
  double threshold_;
  double stop_margin_;
  bool cleared_ = false;
  EvalResult best_;
  int64_t best_step_ = -1;
  int64_t threshold_step_ = -1;
  double threshold_seconds_;
};

// A run folder being written for a lane. The lane is restored from its newest checkpoint before
// the record is made when the run resumes.
class RunRecord {
 public:
  RunRecord(const Registry& registry, const TrainConfig& config, const std::filesystem::path& run_dir,
            const TrainRunOptions& options, const RunLane& lane, std::ostream& notes);

  // A run that already ended at the threshold (resumed from its last checkpoint) trains no more.
  bool done() const { return config_.stop_at_threshold && tracker_.cleared(); }
  // Whether options.on_eval asked the run to end (as stop() does: a checkpoint, interrupted).
  bool stop_asked() const { return stop_asked_; }

  void Log(const MetricsRow& p);
  // Records an evaluation; returns true when the run ends at it (stop_at_threshold).
  bool Evaluated(const TrainEvaluation& e);
  // checkpoints/step_<global step>.safetensors, keeping the newest keep_checkpoints.
  std::filesystem::path Checkpoint();
  // The end of training: model.safetensors (unless interrupted), then the last checkpoint. A
  // completed run whose checkpoint cannot be written (a full disk) keeps its model, and Complete
  // says so once eval.json is written; an interrupted run's checkpoint failing throws at once.
  TrainRunResult Stop(bool interrupted);
  // A completed run's final evaluation (null when eval_episodes is 0), eval.json and the
  // evaluations during training in `result`. Then throws std::runtime_error naming what Stop could
  // not write, if anything: the smaller files written before it stay.
  void Complete(TrainRunResult& result, const EvalResult* evaluated);

 private:
  void AddScalars(int64_t step, const std::vector<std::pair<const char*, double>>& values);

  const TrainConfig& config_;
  std::filesystem::path run_dir_;
  const TrainRunOptions& options_;
  const RunLane& lane_;
  std::ofstream metrics_, evals_;
  std::vector<MetricColumn> columns_;  // the algorithm's own metrics.csv columns (Algorithm::metrics)
  EvalTracker tracker_;
  std::optional<EventFileWriter> events_;
  bool stop_asked_ = false;
  std::string not_written_;  // what Stop could not write, and why
};

}  // namespace cugym::agent
