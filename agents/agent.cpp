// The agent factory and the training loop's schedule (agent.h).
#include "agents/agent.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <stdexcept>

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
                         double last_eval_return, int replica) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  DqnProgress p;
  p.global_step = global_step;
  p.wall_time = wall_time;
  p.epsilon = epsilon;
  p.sps = interval_seconds > 0 ? static_cast<double>(interval_steps) / interval_seconds : 0;
  const EpisodeStats::Interval ended = episodes.Read();
  p.episodic_return = ended.mean_return;
  p.episodic_length = ended.mean_length;
  p.mean_return_100 = ended.mean_return_100;
  p.episodes = ended.episodes;
  p.eval_return = last_eval_return;
  const QLearner::Stats stats = learner.ReadStats(replica);
  p.td_loss = stats.updates > 0 ? stats.loss : kNaN;
  p.q_values = stats.updates > 0 ? stats.mean_q : kNaN;
  return p;
}

namespace {

// The first multiple of `interval` after `step`.
int64_t NextMultiple(int64_t step, int64_t interval) { return (step / interval + 1) * interval; }

}  // namespace

void RunTrainLoop(const DqnConfig& config, const int64_t& global_step, double& wall_time, double& last_eval_return,
                  const TrainLoop& loop, const std::function<void(const DqnProgress&)>& on_log,
                  const std::function<bool()>& stop, const std::function<void()>& on_checkpoint,
                  const std::function<bool(const DqnEvaluation&)>& on_eval) {
  using Clock = std::chrono::steady_clock;
  auto interval_start = Clock::now();
  int64_t interval_first_step = global_step;
  int64_t next_log = NextMultiple(global_step, config.log_interval);
  int64_t next_checkpoint = config.checkpoint_interval > 0 ? NextMultiple(global_step, config.checkpoint_interval)
                                                           : std::numeric_limits<int64_t>::max();
  const bool evaluate = config.eval_episodes > 0;
  bool finished = false;  // on_eval ended the run
  int64_t next_eval = NextMultiple(global_step, config.eval_interval);
  auto log = [&] {
    const auto now = Clock::now();
    const double seconds = std::chrono::duration<double>(now - interval_start).count();
    wall_time += seconds;
    on_log(loop.progress(seconds, global_step - interval_first_step));
    interval_start = Clock::now();
    interval_first_step = global_step;
  };

  while (global_step < config.total_steps && !finished && !stop()) {
    loop.iterate();
    if (global_step >= next_log) {
      log();
      next_log = NextMultiple(global_step, config.log_interval);
    }
    if (evaluate && global_step >= next_eval) {
      const auto start = Clock::now();
      DqnEvaluation e;
      e.global_step = global_step;
      e.wall_time = wall_time + std::chrono::duration<double>(start - interval_start).count();
      e.result = loop.evaluate(next_eval / config.eval_interval - 1);
      last_eval_return = e.result.mean_return;
      const auto took = Clock::now() - start;
      e.eval_seconds = std::chrono::duration<double>(took).count();
      interval_start += took;  // training time only: the evaluation is not counted
      if (on_eval) finished = on_eval(e);
      next_eval = NextMultiple(global_step, config.eval_interval);
    }
    if (global_step >= next_checkpoint) {
      on_checkpoint();
      next_checkpoint = NextMultiple(global_step, config.checkpoint_interval);
    }
  }
  // A row at the end of the run; an interrupted run writes none (its checkpoint resumes the
  // interval, so the resumed run's rows are the uninterrupted run's).
  if ((global_step >= config.total_steps || finished) && global_step != interval_first_step) {
    log();
  } else {
    wall_time += std::chrono::duration<double>(Clock::now() - interval_start).count();
  }
}

}  // namespace cugym::agent
