// Policies and an episode runner for the LunarLander tests: Gymnasium's heuristic controller
// (heuristic() in Gymnasium 1.4.0's gymnasium/envs/box2d/lunar_lander.py, L791-842), computed in float32 as NumPy 2
// does on the float32 observation, and a runner that collects each env's first episode.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/vector_env.h"

namespace cugym::testing {

struct HeuristicCommand {
  float angle_todo, hover_todo;
};

inline HeuristicCommand Heuristic(const float* s) {
  float angle_targ = s[0] * 0.5f + s[2] * 1.0f;
  angle_targ = std::fmin(std::fmax(angle_targ, -0.4f), 0.4f);
  const float hover_targ = 0.55f * std::fabs(s[0]);
  HeuristicCommand c{(angle_targ - s[4]) * 0.5f - s[5] * 1.0f, (hover_targ - s[1]) * 0.5f - s[3] * 0.5f};
  if (s[6] != 0.0f || s[7] != 0.0f) c = {0.0f, -s[3] * 0.5f};
  return c;
}

inline int32_t HeuristicDiscrete(const float* s) {
  const HeuristicCommand c = Heuristic(s);
  if (c.hover_todo > std::fabs(c.angle_todo) && c.hover_todo > 0.05f) return 2;
  if (c.angle_todo < -0.05f) return 3;
  if (c.angle_todo > 0.05f) return 1;
  return 0;
}

inline void HeuristicContinuous(const float* s, float* action) {
  const HeuristicCommand c = Heuristic(s);
  action[0] = std::fmin(std::fmax(c.hover_todo * 20.0f - 1.0f, -1.0f), 1.0f);
  action[1] = std::fmin(std::fmax(-c.angle_todo * 20.0f, -1.0f), 1.0f);
}

struct Episodes {
  std::vector<double> returns;
  std::vector<int32_t> lengths;
  double MeanReturn() const;
  double StdReturn() const;
  double MeanLength() const;
  double FractionAtLeast(double value) const;
};

inline double Episodes::MeanReturn() const {
  double sum = 0;
  for (double r : returns) sum += r;
  return sum / static_cast<double>(returns.size());
}
inline double Episodes::StdReturn() const {  // population std, as the reference's numpy.std
  const double mean = MeanReturn();
  double sum = 0;
  for (double r : returns) sum += (r - mean) * (r - mean);
  return std::sqrt(sum / static_cast<double>(returns.size()));
}
inline double Episodes::MeanLength() const {
  double sum = 0;
  for (int32_t l : lengths) sum += l;
  return sum / static_cast<double>(lengths.size());
}
inline double Episodes::FractionAtLeast(double value) const {
  int64_t count = 0;
  for (double r : returns) count += r >= value;
  return static_cast<double>(count) / static_cast<double>(returns.size());
}

// The first `per_env` episodes of every env of a CPU `env` (autoreset on), stepping with
// `act(env)` (one step from the current observations) until every env has them: the episodes
// depend on (seed, env index) only, not on which env finishes first, so short episodes are not
// favoured. Returned env by env.
inline Episodes FirstEpisodes(VectorEnv& env, uint64_t seed, int per_env, const std::function<void(VectorEnv&)>& act) {
  const int64_t n = env.num_envs();
  env.set_autoreset(true);
  env.Reset(seed);
  std::vector<Episodes> by_env(n);
  for (int64_t left = n * per_env; left > 0;) {
    act(env);
    for (int64_t i = 0; i < n; ++i) {
      if (static_cast<int>(by_env[i].returns.size()) == per_env || !(env.terminated()[i] | env.truncated()[i]))
        continue;
      by_env[i].returns.push_back(env.episode_returns()[i]);
      by_env[i].lengths.push_back(env.episode_lengths()[i]);
      --left;
    }
  }
  Episodes out;
  for (const Episodes& e : by_env) {
    out.returns.insert(out.returns.end(), e.returns.begin(), e.returns.end());
    out.lengths.insert(out.lengths.end(), e.lengths.begin(), e.lengths.end());
  }
  return out;
}

}  // namespace cugym::testing
