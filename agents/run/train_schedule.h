// One lane's training schedule, kept by the driver (Trainer, trainer.h) an iteration at a time:
// iterations until total_steps, a metrics row every log_interval env steps, an evaluation every
// eval_interval and a checkpoint every checkpoint_interval. An interval an iteration steps over is
// taken once, at the end of that iteration.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

#include "agents/common/agent.h"
#include "agents/common/train_config.h"

namespace cugym::agent {

class TrainSchedule {
 public:
  // `progress` reads a metrics row for the last `seconds` and `steps`; `evaluate(k)` runs the k-th
  // evaluation (unused when eval_episodes is 0). `loop.wall_time` accumulates training seconds
  // (evaluations not counted) and `loop.last_eval_return` the latest evaluation's mean. `on_eval`
  // returns true to end the run at that evaluation (a normal end, with a last metrics row).
  TrainSchedule(const TrainConfig& config, const int64_t& global_step, LoopState& loop,
                std::function<MetricsRow(double seconds, int64_t steps)> progress,
                std::function<EvalResult(int64_t k)> evaluate, std::function<void(const MetricsRow&)> on_log,
                std::function<void()> on_checkpoint, std::function<bool(const TrainEvaluation&)> on_eval);
  // Whether training goes on: steps are left and no evaluation ended the run.
  bool going() const { return global_step_ < config_.total_steps && !finished_; }
  // After an iteration advanced global_step: the metrics row, evaluation and checkpoint that fall
  // on it. Returns the seconds its evaluation took (0 without one).
  double Iterated();
  // Seconds spent on other work (another lane's evaluation) that are not this lane's training.
  void Exclude(double seconds);
  // The end of training: a last row when it completed (an interrupted run writes none: its
  // checkpoint resumes the interval, so the resumed run's rows are the uninterrupted run's).
  void End();

 private:
  using Clock = std::chrono::steady_clock;
  void Log();

  const TrainConfig& config_;
  const int64_t& global_step_;
  LoopState& loop_;
  std::function<MetricsRow(double, int64_t)> progress_;
  std::function<EvalResult(int64_t)> evaluate_;
  std::function<void(const MetricsRow&)> on_log_;
  std::function<void()> on_checkpoint_;
  std::function<bool(const TrainEvaluation&)> on_eval_;
  Clock::time_point interval_start_;
  int64_t interval_first_step_, next_log_, next_checkpoint_, next_eval_;
  bool finished_ = false;  // on_eval ended the run
};

}  // namespace cugym::agent
