// Pendulum-v1: the inverted pendulum swing-up, as Gymnasium's
// gymnasium/envs/classic_control/pendulum.py (v1.4.0). Never terminates; truncated at 200 steps.
#pragma once

#include <cmath>

#include "core/canvas.h"
#include "envs/env.h"

namespace cugym {

struct Pendulum {
  struct Params {
    float max_speed = 8.0f;   // rad/s
    float max_torque = 2.0f;  // N m
    float dt = 0.05f;         // s
    float g = 10.0f;          // m/s^2
    float m = 1.0f;           // kg
    float l = 1.0f;           // m
  };
  struct State {
    float theta, theta_dot;  // theta = 0 is upright; theta is never wrapped (as Gymnasium)
  };
  using Action = float;
  static constexpr int kNumActions = 0;
  static constexpr int kActionDim = 1;
  static constexpr int kObsDim = 3;
  static constexpr int kStateDim = 2;
  static constexpr float kPi = 3.14159265358979f;
  CUGYM_HD static float ActionLow(int) { return -2.0f; }
  CUGYM_HD static float ActionHigh(int) { return 2.0f; }

  static EnvSpec Spec() {
    EnvSpec spec;
    spec.id = "Pendulum-v1";
    spec.observation_space = Space::Box({-1.0f, -1.0f, -8.0f}, {1.0f, 1.0f, 8.0f});
    spec.action_space = Space::Box({-2.0f}, {2.0f});
    spec.state_dim = kStateDim;
    spec.max_episode_steps = 200;
    spec.has_reward_threshold = false;
    spec.render_fps = 30;
    spec.render_width = 500;
    spec.render_height = 500;
    spec.reference = "gymnasium/envs/classic_control/pendulum.py (Gymnasium 1.4.0)";
    return spec;
  }

  CUGYM_HD static State Reset(const Params&, Rng& rng) {
    const float theta = rng.Uniform(-kPi, kPi);
    return State{theta, rng.Uniform(-1.0f, 1.0f)};
  }

  // ((x + pi) mod 2 pi) - pi, with Python's modulo (the sign of the divisor).
  CUGYM_HD static float AngleNormalize(float x) {
    const float two_pi = 2 * kPi;
    const float y = x + kPi;
    return (y - two_pi * FloorF(y / two_pi)) - kPi;
  }

  // The cost uses the state before the step; the torque is clipped to +-max_torque.
  CUGYM_HD static StepResult Step(const Params& p, State& s, const Action* action, Rng&) {
    const float u = Clip(action[0], -p.max_torque, p.max_torque);
    const float th_norm = AngleNormalize(s.theta);
    const float costs = th_norm * th_norm + 0.1f * (s.theta_dot * s.theta_dot) + 0.001f * (u * u);
    float sn, cs;
    SinCos(s.theta, &sn, &cs);
    const float theta_dot =
        Clip(s.theta_dot + (3 * p.g / (2 * p.l) * sn + 3.0f / (p.m * p.l * p.l) * u) * p.dt, -p.max_speed, p.max_speed);
    s.theta = s.theta + theta_dot * p.dt;
    s.theta_dot = theta_dot;
    return StepResult{-costs, false};
  }

  CUGYM_HD static void Observe(const Params&, const State& s, float* obs) {
    SinCos(s.theta, &obs[1], &obs[0]);
    obs[2] = s.theta_dot;
  }

  // Gymnasium's frame without the torque arrow (the last action is not part of the state): a
  // rod (204,77,77) of 1 m from the centre, 500 px for 4.4 m, and a black axle.
  static void Draw(const Params& p, const State& s, Canvas& canvas) {
    const float scale = canvas.width() / 4.4f, offset = canvas.width() / 2.0f;
    const float rod_length = p.l * scale, rod_width = 0.2f * scale;
    const float angle = s.theta + kPi / 2;
    const float c = std::cos(angle), sn = std::sin(angle);
    auto place = [&](float x, float y) { return Vec2{offset + x * c - y * sn, offset + x * sn + y * c}; };
    canvas.Clear({255, 255, 255});
    const Vec2 rod[4] = {place(0, -rod_width / 2), place(0, rod_width / 2), place(rod_length, rod_width / 2),
                         place(rod_length, -rod_width / 2)};
    const Color red{204, 77, 77};
    canvas.FillPolygon(rod, 4, red);
    canvas.FillCircle({offset, offset}, std::floor(rod_width / 2), red);
    const Vec2 end = place(rod_length, 0);
    canvas.FillCircle({std::floor(end.x), std::floor(end.y)}, std::floor(rod_width / 2), red);
    canvas.FillCircle({offset, offset}, std::floor(0.05f * scale), {0, 0, 0});
  }

  static void ToFlat(const State& s, float* flat) {
    flat[0] = s.theta;
    flat[1] = s.theta_dot;
  }
  static State FromFlat(const float* flat) { return State{flat[0], flat[1]}; }
};

}  // namespace cugym
