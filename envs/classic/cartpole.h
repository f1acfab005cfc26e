// CartPole-v1: Barto, Sutton & Anderson's cart-pole, as Gymnasium's
// gymnasium/envs/classic_control/cartpole.py (v1.4.0): Euler integration, tau = 0.02,
// strict termination thresholds, reward 1.0 on every step including the terminal one,
// reset uniform in [-0.05, 0.05]. Gymnasium keeps the state in float64; cugym keeps it in
// float32 on every back end (agreement with Gymnasium within float32 rounding per step).
#pragma once

#include <cmath>
#include <limits>

#include "core/canvas.h"
#include "envs/env.h"

namespace cugym {

struct CartPole {
  struct Params {
    float gravity = 9.8f;                          // m/s^2
    float mass_cart = 1.0f;                        // kg
    float mass_pole = 0.1f;                        // kg
    float half_length = 0.5f;                      // m, half the pole's length (Gymnasium's `length`)
    float force_mag = 10.0f;                       // N, push per action
    float tau = 0.02f;                             // s per step
    float theta_threshold = 0.20943951023931953f;  // rad, 12 degrees
    float x_threshold = 2.4f;                      // m
    float reset_low = -0.05f;                      // every state variable starts uniform in [low, high)
    float reset_high = 0.05f;
  };
  struct State {
    float x, x_dot, theta, theta_dot;
  };
  using Action = int32_t;
  static constexpr int kNumActions = 2;  // 0 pushes left, 1 pushes right
  static constexpr int kActionDim = 1;
  static constexpr int kObsDim = 4;
  static constexpr int kStateDim = 4;

  static EnvSpec Spec() {
    const Params p;
    constexpr float kInf = std::numeric_limits<float>::infinity();
    EnvSpec spec;
    spec.id = "CartPole-v1";
    spec.observation_space = Space::Box({-2 * p.x_threshold, -kInf, -2 * p.theta_threshold, -kInf},
                                        {2 * p.x_threshold, kInf, 2 * p.theta_threshold, kInf});
    spec.action_space = Space::Discrete(kNumActions);
    spec.state_dim = kStateDim;
    spec.max_episode_steps = 500;
    spec.has_reward_threshold = true;
    spec.reward_threshold = 475.0;
    spec.render_fps = 50;
    spec.render_width = 600;
    spec.render_height = 400;
    spec.reference = "gymnasium/envs/classic_control/cartpole.py (Gymnasium 1.4.0)";
    return spec;
  }

  CUGYM_HD static State Reset(const Params& p, Rng& rng) {
    State s;
    s.x = rng.Uniform(p.reset_low, p.reset_high);
    s.x_dot = rng.Uniform(p.reset_low, p.reset_high);
    s.theta = rng.Uniform(p.reset_low, p.reset_high);
    s.theta_dot = rng.Uniform(p.reset_low, p.reset_high);
    return s;
  }

  // Operation order follows Gymnasium's Python expression by expression.
  CUGYM_HD static StepResult Step(const Params& p, State& s, const Action* action, Rng&) {
    const float total_mass = p.mass_pole + p.mass_cart;
    const float polemass_length = p.mass_pole * p.half_length;
    const float force = *action == 1 ? p.force_mag : -p.force_mag;
    float sintheta, costheta;
    SinCos(s.theta, &sintheta, &costheta);
    const float temp = (force + polemass_length * (s.theta_dot * s.theta_dot) * sintheta) / total_mass;
    const float thetaacc = (p.gravity * sintheta - costheta * temp) /
                           (p.half_length * (4.0f / 3.0f - p.mass_pole * (costheta * costheta) / total_mass));
    const float xacc = temp - polemass_length * thetaacc * costheta / total_mass;
    // Euler: positions advance with the old velocities.
    s.x = s.x + p.tau * s.x_dot;
    s.x_dot = s.x_dot + p.tau * xacc;
    s.theta = s.theta + p.tau * s.theta_dot;
    s.theta_dot = s.theta_dot + p.tau * thetaacc;
    const bool terminated =
        (s.x < -p.x_threshold) | (s.x > p.x_threshold) | (s.theta < -p.theta_threshold) | (s.theta > p.theta_threshold);
    return StepResult{1.0f, terminated};
  }

  CUGYM_HD static void Observe(const Params&, const State& s, float* obs) {
    obs[0] = s.x;
    obs[1] = s.x_dot;
    obs[2] = s.theta;
    obs[3] = s.theta_dot;
  }

  // Gymnasium's rgb_array frame: 600x400, white, the world 4.8 m wide (125 px/m), the track at
  // y = 100, a black 50x30 cart, a 10x125 px pole (202,152,101) pivoting 7.5 px above the cart's
  // centre, and the axle (129,132,203) of radius 5.
  static void Draw(const Params& p, const State& s, Canvas& canvas) {
    const float scale = static_cast<float>(canvas.width()) / (2 * p.x_threshold);
    const float pole_len = scale * (2 * p.half_length);
    const float cart_x = s.x * scale + canvas.width() / 2.0f;
    const float cart_y = 100.0f;
    const float axle_y = cart_y + 30.0f / 4;
    canvas.Clear({255, 255, 255});
    const Vec2 cart[4] = {
        {cart_x - 25, cart_y - 15}, {cart_x - 25, cart_y + 15}, {cart_x + 25, cart_y + 15}, {cart_x + 25, cart_y - 15}};
    canvas.FillPolygon(cart, 4, {0, 0, 0});
    // Corners (l,b), (l,t), (r,t), (r,b) of the upright pole, rotated by -theta about the axle.
    const float c = std::cos(-s.theta), sn = std::sin(-s.theta);
    const float corners[4][2] = {{-5, -5}, {-5, pole_len - 5}, {5, pole_len - 5}, {5, -5}};
    Vec2 pole[4];
    for (int k = 0; k < 4; ++k) {
      pole[k] = {cart_x + corners[k][0] * c - corners[k][1] * sn, axle_y + corners[k][0] * sn + corners[k][1] * c};
    }
    canvas.FillPolygon(pole, 4, {202, 152, 101});
    canvas.FillCircle({std::floor(cart_x), std::floor(axle_y)}, 5.0f, {129, 132, 203});
    canvas.Line({0, cart_y}, {static_cast<float>(canvas.width()), cart_y}, {0, 0, 0});
  }

  static void ToFlat(const State& s, float* flat) { Observe(Params{}, s, flat); }
  static State FromFlat(const float* flat) { return State{flat[0], flat[1], flat[2], flat[3]}; }
};

}  // namespace cugym
