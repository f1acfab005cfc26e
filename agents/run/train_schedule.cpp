// One lane's training schedule (train_schedule.h).
#include "agents/run/train_schedule.h"

#include <limits>
#include <utility>

namespace cugym::agent {
namespace {

// The first multiple of `interval` after `step`.
int64_t NextMultiple(int64_t step, int64_t interval) { return (step / interval + 1) * interval; }

}  // namespace

TrainSchedule::TrainSchedule(const TrainConfig& config, const int64_t& global_step, LoopState& loop,
                             std::function<MetricsRow(double, int64_t)> progress,
                             std::function<EvalResult(int64_t)> evaluate, std::function<void(const MetricsRow&)> on_log,
                             std::function<void()> on_checkpoint, std::function<bool(const TrainEvaluation&)> on_eval)
    : config_(config),
      global_step_(global_step),
      loop_(loop),
      progress_(std::move(progress)),
      evaluate_(std::move(evaluate)),
      on_log_(std::move(on_log)),
      on_checkpoint_(std::move(on_checkpoint)),
      on_eval_(std::move(on_eval)),
      interval_start_(Clock::now()),
      interval_first_step_(global_step),
      next_log_(NextMultiple(global_step, config.log_interval)),
      next_checkpoint_(config.checkpoint_interval > 0 ? NextMultiple(global_step, config.checkpoint_interval)
                                                      : std::numeric_limits<int64_t>::max()),
      next_eval_(NextMultiple(global_step, config.eval_interval)) {}

void TrainSchedule::Log() {
  const auto now = Clock::now();
  const double seconds = std::chrono::duration<double>(now - interval_start_).count();
  loop_.wall_time += seconds;
  on_log_(progress_(seconds, global_step_ - interval_first_step_));
  interval_start_ = Clock::now();
  interval_first_step_ = global_step_;
}

double TrainSchedule::Iterated() {
  double eval_seconds = 0;
  if (global_step_ >= next_log_) {
    Log();
    next_log_ = NextMultiple(global_step_, config_.log_interval);
  }
  if (config_.eval_episodes > 0 && global_step_ >= next_eval_) {
    const auto start = Clock::now();
    TrainEvaluation e;
    e.global_step = global_step_;
    e.wall_time = loop_.wall_time + std::chrono::duration<double>(start - interval_start_).count();
    e.result = evaluate_(next_eval_ / config_.eval_interval - 1);
    loop_.last_eval_return = e.result.mean_return;
    const auto took = Clock::now() - start;
    eval_seconds = e.eval_seconds = std::chrono::duration<double>(took).count();
    interval_start_ += took;  // training time only: the evaluation is not counted
    if (on_eval_) finished_ = on_eval_(e);
    next_eval_ = NextMultiple(global_step_, config_.eval_interval);
  }
  if (global_step_ >= next_checkpoint_) {
    on_checkpoint_();
    next_checkpoint_ = NextMultiple(global_step_, config_.checkpoint_interval);
  }
  return eval_seconds;
}

void TrainSchedule::Exclude(double seconds) {
  interval_start_ += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

void TrainSchedule::End() {
  if ((global_step_ >= config_.total_steps || finished_) && global_step_ != interval_first_step_) {
    Log();
  } else {
    loop_.wall_time += std::chrono::duration<double>(Clock::now() - interval_start_).count();
  }
}

}  // namespace cugym::agent
