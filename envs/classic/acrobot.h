// Acrobot-v1: Sutton's two-link underactuated swing-up, as Gymnasium's
// gymnasium/envs/classic_control/acrobot.py (v1.4.0): "book" dynamics, one RK4 step of 0.2 s,
// joint angles wrapped to [-pi, pi], velocities bounded. float32 state on every back end.
#pragma once

#include <cmath>

#include "core/canvas.h"
#include "envs/env.h"

namespace cugym {

struct Acrobot {
  struct Params {
    float dt = 0.2f;             // s
    float link_length_1 = 1.0f;  // m
    float link_length_2 = 1.0f;  // m (drawing only, as in Gymnasium's dynamics)
    float link_mass_1 = 1.0f;    // kg
    float link_mass_2 = 1.0f;    // kg
    float link_com_1 = 0.5f;     // m, centre of mass of link 1
    float link_com_2 = 0.5f;     // m
    float link_moi = 1.0f;       // moment of inertia of each link
    float gravity = 9.8f;
  };
  struct State {
    float theta1, theta2, dtheta1, dtheta2;
  };
  using Action = int32_t;
  static constexpr int kNumActions = 3;  // torque -1, 0, +1 on the joint between the links
  static constexpr int kActionDim = 1;
  static constexpr int kObsDim = 6;
  static constexpr int kStateDim = 4;
  static constexpr float kPi = 3.14159265358979f;
  static constexpr float kMaxVel1 = 4 * kPi, kMaxVel2 = 9 * kPi;

  static EnvSpec Spec() {
    EnvSpec spec;
    spec.id = "Acrobot-v1";
    spec.observation_space = Space::Box({-1, -1, -1, -1, -kMaxVel1, -kMaxVel2}, {1, 1, 1, 1, kMaxVel1, kMaxVel2});
    spec.action_space = Space::Discrete(kNumActions);
    spec.state_dim = kStateDim;
    spec.max_episode_steps = 500;
    spec.has_reward_threshold = true;
    spec.reward_threshold = -100.0;
    spec.render_fps = 15;
    spec.render_width = 500;
    spec.render_height = 500;
    spec.reference = "gymnasium/envs/classic_control/acrobot.py (Gymnasium 1.4.0)";
    return spec;
  }

  CUGYM_HD static State Reset(const Params&, Rng& rng) {
    State s;
    s.theta1 = rng.Uniform(-0.1f, 0.1f);
    s.theta2 = rng.Uniform(-0.1f, 0.1f);
    s.dtheta1 = rng.Uniform(-0.1f, 0.1f);
    s.dtheta2 = rng.Uniform(-0.1f, 0.1f);
    return s;
  }

  // Time derivative of (theta1, theta2, dtheta1, dtheta2) under torque a ("book" equations).
  CUGYM_HD static State Derivative(const Params& p, const State& s, float a) {
    const float m1 = p.link_mass_1, m2 = p.link_mass_2, l1 = p.link_length_1;
    const float lc1 = p.link_com_1, lc2 = p.link_com_2, i1 = p.link_moi, i2 = p.link_moi, g = p.gravity;
    float sin2, cos2, sin_a, cos_a, sin_b, cos_b;
    SinCos(s.theta2, &sin2, &cos2);
    SinCos(s.theta1 + s.theta2 - kPi / 2, &sin_a, &cos_a);
    SinCos(s.theta1 - kPi / 2, &sin_b, &cos_b);
    const float d1 = m1 * (lc1 * lc1) + m2 * (l1 * l1 + lc2 * lc2 + 2 * l1 * lc2 * cos2) + i1 + i2;
    const float d2 = m2 * (lc2 * lc2 + l1 * lc2 * cos2) + i2;
    const float phi2 = m2 * lc2 * g * cos_a;
    const float phi1 = -m2 * l1 * lc2 * (s.dtheta2 * s.dtheta2) * sin2 -
                       2 * m2 * l1 * lc2 * s.dtheta2 * s.dtheta1 * sin2 + (m1 * lc1 + m2 * l1) * g * cos_b + phi2;
    const float ddtheta2 = (a + d2 / d1 * phi1 - m2 * l1 * lc2 * (s.dtheta1 * s.dtheta1) * sin2 - phi2) /
                           (m2 * (lc2 * lc2) + i2 - (d2 * d2) / d1);
    const float ddtheta1 = -(d2 * ddtheta2 + phi1) / d1;
    return State{s.dtheta1, s.dtheta2, ddtheta1, ddtheta2};
  }

  // x + h * k, component-wise.
  CUGYM_HD static State Add(const State& x, float h, const State& k) {
    return State{x.theta1 + h * k.theta1, x.theta2 + h * k.theta2, x.dtheta1 + h * k.dtheta1,
                 x.dtheta2 + h * k.dtheta2};
  }

  // Gymnasium's wrap: +-2 pi until inside [-pi, pi], here as a fixed number of selects so the
  // CPU loop over envs vectorizes (and inf and nan cannot hang). The same bits as Gymnasium's
  // loop for |x| < 17 pi; one RK4 step from within the velocity bounds ends below 9.4 pi
  // (20,000 sampled states, the extreme velocities included).
  CUGYM_HD static float Wrap(float x) {
    for (int k = 0; k < 8; ++k) x = x > kPi ? x - 2 * kPi : x;
    for (int k = 0; k < 8; ++k) x = x < -kPi ? x + 2 * kPi : x;
    return x;
  }

  CUGYM_HD static StepResult Step(const Params& p, State& s, const Action* action, Rng&) {
    const float torque = static_cast<float>(*action - 1);
    const float h = p.dt;
    const State k1 = Derivative(p, s, torque);
    const State k2 = Derivative(p, Add(s, h / 2, k1), torque);
    const State k3 = Derivative(p, Add(s, h / 2, k2), torque);
    const State k4 = Derivative(p, Add(s, h, k3), torque);
    auto rk4 = [h](float y, float a, float b, float c, float d) { return y + h / 6.0f * (a + 2 * b + 2 * c + d); };
    State next;
    next.theta1 = Wrap(rk4(s.theta1, k1.theta1, k2.theta1, k3.theta1, k4.theta1));
    next.theta2 = Wrap(rk4(s.theta2, k1.theta2, k2.theta2, k3.theta2, k4.theta2));
    next.dtheta1 = Clip(rk4(s.dtheta1, k1.dtheta1, k2.dtheta1, k3.dtheta1, k4.dtheta1), -kMaxVel1, kMaxVel1);
    next.dtheta2 = Clip(rk4(s.dtheta2, k1.dtheta2, k2.dtheta2, k3.dtheta2, k4.dtheta2), -kMaxVel2, kMaxVel2);
    s = next;
    float sin1, cos1, sin12, cos12;
    SinCos(s.theta1, &sin1, &cos1);
    SinCos(s.theta1 + s.theta2, &sin12, &cos12);
    const bool terminated = -cos1 - cos12 > 1.0f;
    return StepResult{terminated ? 0.0f : -1.0f, terminated};
  }

  CUGYM_HD static void Observe(const Params&, const State& s, float* obs) {
    SinCos(s.theta1, &obs[1], &obs[0]);
    SinCos(s.theta2, &obs[3], &obs[2]);
    obs[4] = s.dtheta1;
    obs[5] = s.dtheta2;
  }

  // Gymnasium's frame: links (0,204,204) 0.2 m wide, joints (204,204,0), the goal line in black
  // 1 m above the pivot, 500 px for 4.4 m.
  static void Draw(const Params& p, const State& s, Canvas& canvas) {
    const float bound = p.link_length_1 + p.link_length_2 + 0.2f;
    const float scale = canvas.width() / (2 * bound), offset = canvas.width() / 2.0f;
    canvas.Clear({255, 255, 255});
    canvas.Line({-bound * scale + offset, scale + offset}, {bound * scale + offset, scale + offset}, {0, 0, 0});
    // Joint positions (x right, y up) as Gymnasium computes them after swapping its axes.
    const float p1x = p.link_length_1 * std::sin(s.theta1) * scale;
    const float p1y = -p.link_length_1 * std::cos(s.theta1) * scale;
    const Vec2 joints[2] = {{offset, offset}, {p1x + offset, p1y + offset}};
    const float thetas[2] = {s.theta1 - kPi / 2, s.theta1 + s.theta2 - kPi / 2};
    const float lengths[2] = {p.link_length_1 * scale, p.link_length_2 * scale};
    for (int k = 0; k < 2; ++k) {
      const float c = std::cos(thetas[k]), sn = std::sin(thetas[k]);
      auto place = [&](float x, float y) { return Vec2{joints[k].x + x * c - y * sn, joints[k].y + x * sn + y * c}; };
      const float half = 0.1f * scale;
      const Vec2 link[4] = {place(0, -half), place(0, half), place(lengths[k], half), place(lengths[k], -half)};
      canvas.FillPolygon(link, 4, {0, 204, 204});
      canvas.FillCircle({std::floor(joints[k].x), std::floor(joints[k].y)}, std::floor(half), {204, 204, 0});
    }
  }

  static void ToFlat(const State& s, float* flat) {
    flat[0] = s.theta1;
    flat[1] = s.theta2;
    flat[2] = s.dtheta1;
    flat[3] = s.dtheta2;
  }
  static State FromFlat(const float* flat) { return State{flat[0], flat[1], flat[2], flat[3]}; }
};

}  // namespace cugym
