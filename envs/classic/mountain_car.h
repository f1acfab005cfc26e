// MountainCar-v0 and MountainCarContinuous-v0: Moore's car in a valley, as Gymnasium's
// gymnasium/envs/classic_control/mountain_car.py and continuous_mountain_car.py (v1.4.0).
// Gymnasium computes in float64 (MountainCar) or float32 state (the continuous one); cugym
// keeps float32 state on every back end.
#pragma once

#include <cmath>

#include "core/canvas.h"
#include "envs/env.h"

namespace cugym {
namespace mountain_car {

constexpr float kMinPosition = -1.2f, kMaxPosition = 0.6f, kMaxSpeed = 0.07f;

struct State {
  float position, velocity;
};

CUGYM_HD inline State ResetState(Rng& rng) { return State{rng.Uniform(-0.6f, -0.4f), 0.0f}; }

// velocity += force; clip; position += velocity; clip; a car at the left wall stops (written
// as a lower bound on the velocity, 0 at the wall: the same values, and the CPU loop vectorizes).
CUGYM_HD inline void Move(State& s, float force_term) {
  float sn, cs;
  SinCos(3.0f * s.position, &sn, &cs);
  s.velocity = Clip(s.velocity + (force_term - 0.0025f * cs), -kMaxSpeed, kMaxSpeed);
  s.position = Clip(s.position + s.velocity, kMinPosition, kMaxPosition);
  const float low = s.position == kMinPosition ? 0.0f : -kMaxSpeed;
  s.velocity = s.velocity < low ? low : s.velocity;
}

// The hill, the car (rotated by cos(3 * position) as in Gymnasium) and the goal flag.
inline void Draw(const State& s, float goal_position, Canvas& canvas) {
  const float scale = canvas.width() / (kMaxPosition - kMinPosition);
  auto height = [](float x) { return std::sin(3 * x) * 0.45f + 0.55f; };
  canvas.Clear({255, 255, 255});
  Vec2 previous{0, height(kMinPosition) * scale};
  for (int k = 1; k < 100; ++k) {
    const float x = kMinPosition + (kMaxPosition - kMinPosition) * k / 99.0f;
    const Vec2 point{(x - kMinPosition) * scale, height(x) * scale};
    canvas.Line(previous, point, {0, 0, 0});
    previous = point;
  }
  const float clearance = 10, car_w = 40, car_h = 20;
  const float angle = std::cos(3 * s.position);
  const float c = std::cos(angle), sn = std::sin(angle);
  const float base_x = (s.position - kMinPosition) * scale, base_y = clearance + height(s.position) * scale;
  auto place = [&](float x, float y) { return Vec2{base_x + x * c - y * sn, base_y + x * sn + y * c}; };
  const Vec2 car[4] = {place(-car_w / 2, 0), place(-car_w / 2, car_h), place(car_w / 2, car_h), place(car_w / 2, 0)};
  canvas.FillPolygon(car, 4, {0, 0, 0});
  for (float wheel_x : {car_w / 4, -car_w / 4}) {
    const Vec2 wheel = place(wheel_x, 0);
    canvas.FillCircle({std::floor(wheel.x), std::floor(wheel.y)}, std::floor(car_h / 2.5f), {128, 128, 128});
  }
  const float flag_x = std::floor((goal_position - kMinPosition) * scale);
  const float flag_y1 = std::floor(height(goal_position) * scale), flag_y2 = flag_y1 + 50;
  canvas.Line({flag_x, flag_y1}, {flag_x, flag_y2}, {0, 0, 0});
  const Vec2 flag[3] = {{flag_x, flag_y2}, {flag_x, flag_y2 - 10}, {flag_x + 25, flag_y2 - 5}};
  canvas.FillPolygon(flag, 3, {204, 204, 0});
}

// What both variants share: state, reset, observation, goal test, drawing, flat state.
struct Common {
  using State = mountain_car::State;
  static constexpr int kObsDim = 2;
  static constexpr int kStateDim = 2;

  template <class Params>
  CUGYM_HD static State Reset(const Params&, Rng& rng) {
    return ResetState(rng);
  }
  template <class Params>
  CUGYM_HD static void Observe(const Params&, const State& s, float* obs) {
    obs[0] = s.position;
    obs[1] = s.velocity;
  }
  template <class Params>
  CUGYM_HD static bool ReachedGoal(const Params& p, const State& s) {
    return (s.position >= p.goal_position) & (s.velocity >= p.goal_velocity);
  }
  template <class Params>
  static void Draw(const Params& p, const State& s, Canvas& canvas) {
    mountain_car::Draw(s, p.goal_position, canvas);
  }
  static void ToFlat(const State& s, float* flat) {
    flat[0] = s.position;
    flat[1] = s.velocity;
  }
  static State FromFlat(const float* flat) { return State{flat[0], flat[1]}; }
};

inline EnvSpec BaseSpec(const char* id, int max_steps, double threshold) {
  EnvSpec spec;
  spec.id = id;
  spec.observation_space = Space::Box({kMinPosition, -kMaxSpeed}, {kMaxPosition, kMaxSpeed});
  spec.state_dim = 2;
  spec.max_episode_steps = max_steps;
  spec.has_reward_threshold = true;
  spec.reward_threshold = threshold;
  spec.render_fps = 30;
  spec.render_width = 600;
  spec.render_height = 400;
  return spec;
}

}  // namespace mountain_car

struct MountainCar : mountain_car::Common {
  struct Params {
    float force = 0.001f;
    float goal_position = 0.5f;
    float goal_velocity = 0.0f;
  };
  using Action = int32_t;
  static constexpr int kNumActions = 3;  // push left, no push, push right
  static constexpr int kActionDim = 1;

  static EnvSpec Spec() {
    EnvSpec spec = mountain_car::BaseSpec("MountainCar-v0", 200, -110.0);
    spec.action_space = Space::Discrete(kNumActions);
    spec.reference = "gymnasium/envs/classic_control/mountain_car.py (Gymnasium 1.4.0)";
    return spec;
  }
  CUGYM_HD static StepResult Step(const Params& p, State& s, const Action* action, Rng&) {
    mountain_car::Move(s, static_cast<float>(*action - 1) * p.force);
    return StepResult{-1.0f, ReachedGoal(p, s)};
  }
};

struct MountainCarContinuous : mountain_car::Common {
  struct Params {
    float power = 0.0015f;
    float goal_position = 0.45f;  // 0.45, not MountainCar's 0.5
    float goal_velocity = 0.0f;
  };
  using Action = float;
  static constexpr int kNumActions = 0;
  static constexpr int kActionDim = 1;
  CUGYM_HD static float ActionLow(int) { return -1.0f; }
  CUGYM_HD static float ActionHigh(int) { return 1.0f; }

  static EnvSpec Spec() {
    EnvSpec spec = mountain_car::BaseSpec("MountainCarContinuous-v0", 999, 90.0);
    spec.action_space = Space::Box({-1.0f}, {1.0f});
    spec.reference = "gymnasium/envs/classic_control/continuous_mountain_car.py (Gymnasium 1.4.0)";
    return spec;
  }
  // The force is clipped to [-1, 1]; the action penalty uses the unclipped action, as Gymnasium.
  CUGYM_HD static StepResult Step(const Params& p, State& s, const Action* action, Rng&) {
    mountain_car::Move(s, Clip(action[0], -1.0f, 1.0f) * p.power);
    const bool terminated = ReachedGoal(p, s);
    const float reward = (terminated ? 100.0f : 0.0f) - action[0] * action[0] * 0.1f;
    return StepResult{reward, terminated};
  }
};

}  // namespace cugym
