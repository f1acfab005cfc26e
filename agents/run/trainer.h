// The one driver of the training loop (SB3's `learn`), for `cugym train`, cugym.train() and the
// many-runs scheduler (multi_run.h): K >= 1 run folders of one config that differ only in their
// seeds, trained by one agent of K lanes (agent.h; K = 1 is a solo run). It keeps each lane's
// schedule (TrainSchedule), run folder (RunRecord: logs, evaluations, best model, checkpoints,
// model, eval.json), early stop and interruption, and shrinks a batch to the lanes still training.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "agents/common/agent.h"
#include "agents/common/train_config.h"
#include "agents/run/run_folder.h"
#include "agents/run/train_schedule.h"
#include "core/registry.h"

namespace cugym::agent {

class Trainer {
 public:
  // runs[k] is seed k's run folder and options (all resume, or none; one device); each folder is the
  // one a solo run of that seed writes, and on the CPU the same bits (model, checkpoints,
  // evaluations). Resumed runs must have their newest checkpoints at one step. Throws
  // std::invalid_argument for what MakeAgent refuses and for a folder that is not new or empty;
  // nothing is created on disk before the agent is built.
  Trainer(const Registry& registry, const TrainConfig& config, const std::vector<uint64_t>& seeds,
          const std::vector<TrainRunOptions>& runs, std::ostream& notes);
  ~Trainer();

  // Trains every run to its end. A run leaves when its steps are done, an evaluation ends it
  // (stop_at_threshold) or its on_eval asks it to stop; `stop()`, polled once per iteration, ends
  // all of them at one step, each with a checkpoint, so that they resume exactly. `on_finished(k,
  // result)` is called as each run's result is complete: an interrupted run's when it stops, a
  // completed run's once the batch shrinks or ends (the final evaluations of the completed runs run
  // together then). Once half the lanes or more have left, the agent shrinks to those still
  // training (Agent::Keep, a line in `notes`): their runs are unchanged, and the lanes that left
  // cost nothing more. A batch's last line in `notes` says where its time went.
  std::vector<TrainRunResult> Run(const std::function<bool()>& stop,
                                  const std::function<void(std::size_t k, const TrainRunResult&)>& on_finished = {});

 private:
  using Clock = std::chrono::steady_clock;
  struct RunState;
  // One iteration and the files it writes; false once every run has stopped.
  bool Step(const std::function<bool()>& stop);
  void StopRun(std::size_t k, bool interrupted);
  // The waiting runs' final evaluations, all at once.
  void EvaluateWaiting();
  void Shrink();
  void Committed(const std::function<void()>& work);
  void SayWhereTimeWent();

  TrainConfig config_;
  std::ostream& notes_;
  std::unique_ptr<Agent> agent_;
  int64_t global_step_ = 0;  // the schedules' step, whichever agent holds the lanes
  std::vector<std::unique_ptr<RunState>> runs_;
  std::function<void(std::size_t, const TrainRunResult&)> on_finished_;
  std::vector<std::size_t> training_;  // runs still training
  std::vector<std::size_t> waiting_;   // completed, not evaluated yet
  std::size_t shrink_at_ = 0;
  Clock::time_point started_;
  // Where the time goes, said in `notes` at a batch's end (the GPU check's report shows it).
  struct {
    double setup = 0, iterations = 0, evaluations = 0, final_evaluations = 0, shrinks = 0, syncs = 0;
    int64_t iteration_count = 0, final_rounds = 0, shrink_count = 0;
  } spent_;
};

// One run: a Trainer of one lane (config.seed's) into options.run_dir; `stop()` is polled every
// iteration (a signal flag): when it returns true a checkpoint is written and the run ends with
// interrupted = true. Progress notes (resuming, ...) go to `notes`.
TrainRunResult RunTraining(const Registry& registry, const TrainConfig& config, const TrainRunOptions& options,
                           const std::function<bool()>& stop, std::ostream& notes);

}  // namespace cugym::agent
