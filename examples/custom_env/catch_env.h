// Catch-v0, a complete cugym env plugin: a ball falls down a 10 x 10 grid, one row per step;
// the agent moves a paddle along the bottom row (left, stay, right) and scores +1 for catching
// the ball, -1 for missing it. Small enough for DQN to learn in seconds; it draws itself.
#pragma once

#include "core/canvas.h"
#include "envs/env.h"

struct Catch {
  struct Params {
    int columns = 10;
    int rows = 10;
  };
  struct State {
    float ball_x, ball_y, paddle_x;  // grid cells; ball_y counts rows from the top
  };
  using Action = int32_t;
  static constexpr int kNumActions = 3;  // 0 left, 1 stay, 2 right
  static constexpr int kActionDim = 1;
  static constexpr int kObsDim = 3;
  static constexpr int kStateDim = 3;

  static cugym::EnvSpec Spec() {
    cugym::EnvSpec spec;
    spec.id = "Catch-v0";
    spec.observation_space = cugym::Space::Box({0, 0, 0}, {1, 1, 1});
    spec.action_space = cugym::Space::Discrete(kNumActions);
    spec.state_dim = kStateDim;
    spec.max_episode_steps = 100;  // never reached: every episode lasts rows - 1 steps
    spec.has_reward_threshold = true;
    spec.reward_threshold = 0.9;
    spec.render_fps = 10;
    spec.render_width = 400;
    spec.render_height = 400;
    spec.reference = "examples/custom_env (the Catch game of DeepMind's bsuite)";
    return spec;
  }

  CUGYM_HD static State Reset(const Params& p, cugym::Rng& rng) {
    const float ball_x = static_cast<float>(rng.UniformInt(p.columns));
    return State{ball_x, 0.0f, static_cast<float>(rng.UniformInt(p.columns))};
  }

  CUGYM_HD static cugym::StepResult Step(const Params& p, State& s, const Action* action, cugym::Rng&) {
    s.paddle_x = cugym::Clip(s.paddle_x + static_cast<float>(*action - 1), 0.0f, p.columns - 1.0f);
    s.ball_y += 1.0f;
    const bool landed = s.ball_y >= p.rows - 1.0f;
    const float reward = landed ? (s.ball_x == s.paddle_x ? 1.0f : -1.0f) : 0.0f;
    return cugym::StepResult{reward, landed};
  }

  // Every value scaled to [0, 1].
  CUGYM_HD static void Observe(const Params& p, const State& s, float* obs) {
    obs[0] = s.ball_x / (p.columns - 1);
    obs[1] = s.ball_y / (p.rows - 1);
    obs[2] = s.paddle_x / (p.columns - 1);
  }

  static void Draw(const Params& p, const State& s, cugym::Canvas& canvas) {
    const float cell_w = static_cast<float>(canvas.width()) / p.columns;
    const float cell_h = static_cast<float>(canvas.height()) / p.rows;
    canvas.Clear({250, 250, 245});
    for (int c = 1; c < p.columns; ++c) canvas.Line({c * cell_w, 0}, {c * cell_w, p.rows * cell_h}, {225, 225, 220});
    // y is up on the canvas and row 0 is the top row.
    const float ball_cx = (s.ball_x + 0.5f) * cell_w, ball_cy = (p.rows - s.ball_y - 0.5f) * cell_h;
    canvas.FillCircle({ball_cx, ball_cy}, 0.4f * cell_w, {214, 69, 65});
    const float left = s.paddle_x * cell_w + 2, right = (s.paddle_x + 1) * cell_w - 2;
    const cugym::Vec2 paddle[4] = {{left, 4}, {left, cell_h * 0.4f}, {right, cell_h * 0.4f}, {right, 4}};
    canvas.FillPolygon(paddle, 4, {52, 101, 164});
  }

  static void ToFlat(const State& s, float* flat) {
    flat[0] = s.ball_x;
    flat[1] = s.ball_y;
    flat[2] = s.paddle_x;
  }
  static State FromFlat(const float* flat) { return State{flat[0], flat[1], flat[2]}; }
};
