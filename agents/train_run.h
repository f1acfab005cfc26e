// A training run (DQN or PQN, agent.h) in a run folder, shared by `cugym train` and the Python package's
// cugym.train(): where the config comes from, the folder (config.toml, metrics.csv, checkpoints/,
// model.safetensors, eval.json), Ctrl-C checkpoints and resuming. Front ends only parse their
// arguments and show progress.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "agents/dqn_config.h"
#include "core/registry.h"
#include "core/toml.h"

namespace cugym::agent {

// Where a run's config comes from, applied in this order.
struct TrainConfigSource {
  std::string resume_dir;          // non-empty: the run's own config.toml (config_path must be empty)
  std::string config_path;         // else a TOML file
  std::optional<TomlTable> table;  // else these keys over the defaults (a config given in code);
                                   // else the config shipped for `env_id` (configs/), or the
                                   // defaults when none ships
  std::string env_id;              // overrides the file's env_id when non-empty
  TomlTable overrides;             // keys applied last (--set, --seed, ...)
};

// Builds and validates the config; says on `notes` which shipped config it used, if any.
// Throws std::invalid_argument naming the bad key, file or env.
DqnConfig ResolveTrainConfig(const Registry& registry, const TrainConfigSource& source, std::ostream& notes);

struct TrainRunOptions {
  std::string run_dir;  // "" = runs/<env>_<seed>_<time>; must be new or empty unless resuming
  bool resume = false;  // continue run_dir from its newest checkpoint, exactly (Agent::LoadCheckpoint)
  Device device = Device::kCpu;
  // Called after each evaluation during training, once its evals.csv row, best.safetensors and
  // event-file scalars are written. Returning true ends the run as stop() does: a checkpoint, then
  // interrupted = true (Ray Tune's trainable reports and checkpoints at every evaluation so).
  std::function<bool(const DqnEvaluation&)> on_eval;
  // Called once the run stops training (its steps done, stopped early or interrupted), before its
  // final evaluation, which in a lockstep batch waits for the batch's end.
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

// Trains `config` into options.run_dir: config.toml, metrics.csv, evals.csv (an evaluation every
// eval_interval env steps), best.safetensors (the best evaluation's network, ties to the later),
// checkpoints/, model.safetensors and eval.json (the final evaluation, the best one, the
// threshold and when it was first reached). `on_log` gets every metrics.csv row after it is written;
// `stop()` is polled every vector step (a signal flag): when it returns true a checkpoint is
// written and the run ends with interrupted = true. Progress notes (resuming, ...) go to `notes`.
TrainRunResult RunTraining(const Registry& registry, const DqnConfig& config, const TrainRunOptions& options,
                           const std::function<void(const DqnProgress&)>& on_log, const std::function<bool()>& stop,
                           std::ostream& notes);

// K runs of `config` differing only in their seeds, trained as one DqnBatch (agents/dqn_batch.h):
// the K agents step in lockstep and their networks train as one replicated network. runs[k] is
// seed k's run folder and options (all resume, or none; one device); each folder is the one
// RunTraining writes for that seed, and on the CPU the same bits (model, checkpoints, evaluations).
// An agent leaves the batch when its steps are done, an evaluation ends it (stop_at_threshold) or
// its on_eval asks it to stop; `stop()`, polled once per iteration, ends all of them at one step,
// each with a checkpoint, so the batch resumes (every run with resume) exactly. Resumed runs must
// have their newest checkpoints at one step. Throws std::invalid_argument for what DqnBatch
// refuses (PQN, gradient clipping, ...) and for a folder that is not new or empty. `on_finished(k,
// result)` is called as each run's result is complete: an interrupted run's when it stops, a
// completed run's once the batch shrinks or ends (the final evaluations of the completed runs run
// together then). Once half the agents or more have left, the batch shrinks to those still
// training (DqnBatch::Keep, a line in `notes`): their runs are unchanged, and the agents that left
// cost nothing more. The batch's last line in `notes` says where its time went (setup, iterations,
// evaluations during training, final evaluations, shrinking, file syncs, the rest).
std::vector<TrainRunResult> RunBatchTraining(
    const Registry& registry, const DqnConfig& config, const std::vector<uint64_t>& seeds,
    const std::vector<TrainRunOptions>& runs, const std::function<bool()>& stop, std::ostream& notes,
    const std::function<void(std::size_t k, const TrainRunResult& result)>& on_finished = {});

// The newest checkpoint in run_dir/checkpoints ("" when there is none).
std::string NewestCheckpoint(const std::string& run_dir);

// The one-line progress text `cugym train` prints ("step 2000/60000  ...  ETA 3s").
std::string ProgressLine(const DqnProgress& progress, int64_t total_steps);

}  // namespace cugym::agent
