// LunarLander-v3 / LunarLanderContinuous-v3: spec, action decoding and checks, and the random
// draws, following Gymnasium 1.4.0's gymnasium/envs/box2d/lunar_lander.py (__init__, reset, step).
#include "envs/box2d/lunar_lander.h"

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace cugym::lunar_lander {

EnvSpec MakeSpec(bool continuous) {
  std::vector<float> low(kObsDim), high(kObsDim);
  for (int k = 0; k < kObsDim; ++k) {
    high[k] = static_cast<float>(kObsHigh[k]);
    low[k] = k >= 6 ? -0.0f : -high[k];
  }
  EnvSpec spec;
  spec.id = continuous ? "LunarLanderContinuous-v3" : "LunarLander-v3";
  spec.observation_space = Space::Box(low, high);
  spec.action_space = continuous ? Space::Box({-1.0f, -1.0f}, {1.0f, 1.0f}) : Space::Discrete(4);
  spec.state_dim = kStateDim;
  spec.max_episode_steps = 1000;
  spec.has_reward_threshold = true;
  spec.reward_threshold = 200.0;
  spec.render_fps = static_cast<int32_t>(kFps);
  spec.render_width = static_cast<int32_t>(kViewportW);
  spec.render_height = static_cast<int32_t>(kViewportH);
  spec.reference = "gymnasium/envs/box2d/lunar_lander.py (Gymnasium 1.4.0) on Box2D 2.4";
  return spec;
}

LunarLanderDraws DrawReset(const LunarLanderParams& params, Rng& rng) {
  constexpr double kInitialRandom = 1000.0;  // N
  LunarLanderDraws draws;
  for (double& h : draws.heights) h = rng.Uniform() * (kWorldH / 2);
  draws.force_x = -kInitialRandom + 2 * kInitialRandom * rng.Uniform();
  draws.force_y = -kInitialRandom + 2 * kInitialRandom * rng.Uniform();
  if (params.enable_wind) {  // np_random.integers(-9999, 9999): the upper bound is exclusive
    draws.wind_idx = -9999 + static_cast<int>(rng.UniformInt(2 * 9999));
    draws.torque_idx = -9999 + static_cast<int>(rng.UniformInt(2 * 9999));
  }
  draws.dispersion = DrawDispersion(rng);
  return draws;
}

std::array<double, 2> DrawDispersion(Rng& rng) {
  const double d0 = (2.0 * rng.Uniform() - 1.0) / kScale;
  const double d1 = (2.0 * rng.Uniform() - 1.0) / kScale;
  return {d0, d1};
}

LunarLanderEngines DecodeDiscrete(int32_t action) {
  LunarLanderEngines engines;
  if (action == 2) engines.main = 1.0;
  if (action == 1 || action == 3) engines.side = action - 2;
  return engines;
}

// Gymnasium clips to [-1, 1] and computes in float64: main fires when a0 > 0 at (a0 + 1) / 2, a
// side engine when |a1| > 0.5 at |a1| clipped to [0.5, 1], on a1's side.
LunarLanderEngines DecodeContinuous(const float* action) {
  const double a0 = std::fmin(std::fmax(static_cast<double>(action[0]), -1.0), 1.0);
  const double a1 = std::fmin(std::fmax(static_cast<double>(action[1]), -1.0), 1.0);
  LunarLanderEngines engines;
  if (a0 > 0.0) engines.main = (a0 + 1.0) * 0.5;
  if (std::fabs(a1) > 0.5) engines.side = std::copysign(std::fmin(std::fabs(a1), 1.0), a1);
  return engines;
}

void CheckDiscrete(int32_t action, int64_t env_index) {
  if (action < 0 || action > 3)
    throw std::invalid_argument("LunarLander-v3: action " + std::to_string(action) + " of env " +
                                std::to_string(env_index) + " is outside Discrete(4) (0..3)");
}

void CheckContinuous(const float* action, int64_t env_index) {
  for (int d = 0; d < 2; ++d) {
    if (std::isnan(action[d]))
      throw std::invalid_argument("LunarLanderContinuous-v3: action[" + std::to_string(d) + "] of env " +
                                  std::to_string(env_index) + " is NaN");
  }
}

void CheckParams(const LunarLanderParams& params) {
  if (!(params.gravity > -12.0f && params.gravity < 0.0f))
    throw std::invalid_argument("LunarLander: gravity must be in (-12, 0), got " + std::to_string(params.gravity));
  if (!(params.wind_power >= 0.0f) || !(params.turbulence_power >= 0.0f))
    throw std::invalid_argument("LunarLander: wind_power and turbulence_power must be >= 0, got " +
                                std::to_string(params.wind_power) + " and " + std::to_string(params.turbulence_power));
}

}  // namespace cugym::lunar_lander
