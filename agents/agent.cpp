// The agent factory and the training loop's schedule (agent.h).
#include "agents/agent.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <stdexcept>
#include <utility>

#include "agents/dqn.h"
#include "agents/episode_stats.h"
#include "agents/pqn.h"
#include "agents/q_learner.h"

namespace cugym::agent {

std::unique_ptr<Agent> MakeAgent(const Registry& registry, const DqnConfig& config, Device device) {
  if (config.algo == "pqn") return std::make_unique<PqnAgent>(registry, config, device);
  return std::make_unique<DqnAgent>(registry, config, device);
}

QLearnerOptions LearnerOptionsFor(const DqnConfig& c, const EnvSpec& spec) {
  QLearnerOptions options;
  options.layer_sizes = {static_cast<int>(spec.obs_dim())};
  options.layer_sizes.insert(options.layer_sizes.end(), c.hidden_sizes.begin(), c.hidden_sizes.end());
  options.layer_sizes.push_back(static_cast<int>(spec.action_space.n));
  options.loss = nn::ParseLoss(c.loss);
  options.adam.lr = c.learning_rate;
  options.adam.eps = c.adam_eps;
  options.adam.max_grad_norm = c.max_grad_norm;
  options.adam.rectified = c.optimizer == "radam";
  if (c.anneal_lr) options.adam.lr_decay_updates = std::max<int64_t>(c.PlannedUpdates(), 1);
  options.seed = c.seed;
  options.dueling = c.dueling;
  options.conv = ConvForObservations(c.conv_channels, spec.observation_space.shape, spec.id);
  options.layer_norm = c.layer_norm;
  return options;
}

const EnvSpec& DiscreteSpec(const Registry& registry, const std::string& id, const std::string& agent) {
  const EnvSpec& spec = registry.Get(id).spec;
  if (!spec.action_space.is_discrete())
    throw std::invalid_argument(agent + " needs a discrete action space, but " + id + " has " +
                                spec.action_space.ToString() + " actions");
  return spec;
}

DqnProgress ReadProgress(int64_t global_step, double wall_time, double epsilon, double interval_seconds,
                         int64_t interval_steps, EpisodeStats& episodes, const QLearner& learner,
                         double last_eval_return) {
  return MakeProgress(global_step, wall_time, epsilon, interval_seconds, interval_steps, episodes.Read(),
                      learner.ReadStats(), last_eval_return);
}

DqnProgress MakeProgress(int64_t global_step, double wall_time, double epsilon, double interval_seconds,
                         int64_t interval_steps, const EpisodeStats::Interval& ended, const QLearner::Stats& stats,
                         double last_eval_return) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  DqnProgress p;
  p.global_step = global_step;
  p.wall_time = wall_time;
  p.epsilon = epsilon;
  p.sps = interval_seconds > 0 ? static_cast<double>(interval_steps) / interval_seconds : 0;
  p.episodic_return = ended.mean_return;
  p.episodic_length = ended.mean_length;
  p.mean_return_100 = ended.mean_return_100;
  p.episodes = ended.episodes;
  p.eval_return = last_eval_return;
  p.td_loss = stats.updates > 0 ? stats.loss : kNaN;
  p.q_values = stats.updates > 0 ? stats.mean_q : kNaN;
  return p;
}

namespace {

// The first multiple of `interval` after `step`.
int64_t NextMultiple(int64_t step, int64_t interval) { return (step / interval + 1) * interval; }

}  // namespace

TrainSchedule::TrainSchedule(const DqnConfig& config, const int64_t& global_step, double& wall_time,
                             double& last_eval_return, std::function<DqnProgress(double, int64_t)> progress,
                             std::function<EvalResult(int64_t)> evaluate,
                             std::function<void(const DqnProgress&)> on_log, std::function<void()> on_checkpoint,
                             std::function<bool(const DqnEvaluation&)> on_eval)
    : config_(config),
      global_step_(global_step),
      wall_time_(wall_time),
      last_eval_return_(last_eval_return),
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
  wall_time_ += seconds;
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
    DqnEvaluation e;
    e.global_step = global_step_;
    e.wall_time = wall_time_ + std::chrono::duration<double>(start - interval_start_).count();
    e.result = evaluate_(next_eval_ / config_.eval_interval - 1);
    last_eval_return_ = e.result.mean_return;
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
    wall_time_ += std::chrono::duration<double>(Clock::now() - interval_start_).count();
  }
}

void RunTrainLoop(const DqnConfig& config, const int64_t& global_step, double& wall_time, double& last_eval_return,
                  const TrainLoop& loop, const std::function<void(const DqnProgress&)>& on_log,
                  const std::function<bool()>& stop, const std::function<void()>& on_checkpoint,
                  const std::function<bool(const DqnEvaluation&)>& on_eval) {
  TrainSchedule schedule(config, global_step, wall_time, last_eval_return, loop.progress, loop.evaluate, on_log,
                         on_checkpoint, on_eval);
  while (schedule.going() && !stop()) {
    loop.iterate();
    schedule.Iterated();
  }
  schedule.End();
}

}  // namespace cugym::agent
