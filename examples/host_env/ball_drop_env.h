// BallDrop-v0: an env that brings its own physics engine, as a plugin (docs/custom-envs.md §5).
// BallEngine stands for Box2D, MuJoCo or any host library: a class with heap state and a step
// function that could never run in a CUDA kernel. Three balls fall in a 10 m shaft and bounce
// (restitution 0.8); action 1 kicks ball 0 upwards by 0.5 m/s. Reward 1 per step; the episode
// ends when ball 0 touches the floor. Observation: ball 0's height and velocity.
#pragma once

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/rng.h"
#include "core/spec.h"
#include "envs/env.h"

// The "engine": plain host code with its own memory.
class BallEngine {
 public:
  void Clear() { height_.clear(), velocity_.clear(); }
  void AddBall(float height, float velocity) { height_.push_back(height), velocity_.push_back(velocity); }
  void Kick(int ball, float dv) { velocity_[ball] += dv; }
  // Semi-implicit Euler, then bounces off the floor and the ceiling; true if ball 0 hit the floor.
  bool Step(float dt) {
    bool ball0_landed = false;
    for (std::size_t b = 0; b < height_.size(); ++b) {
      velocity_[b] -= 9.8f * dt;
      height_[b] += velocity_[b] * dt;
      if (height_[b] < 0.0f) {
        height_[b] = 0.0f, velocity_[b] = -0.8f * velocity_[b];
        ball0_landed |= b == 0;
      }
      if (height_[b] > 10.0f) height_[b] = 10.0f, velocity_[b] = -0.8f * velocity_[b];
    }
    return ball0_landed;
  }
  std::size_t balls() const { return height_.size(); }
  float height(int b) const { return height_[b]; }
  float velocity(int b) const { return velocity_[b]; }

 private:
  std::vector<float> height_, velocity_;
};

struct BallDrop {
  struct Params {
    int balls = 3;
  };
  using World = BallEngine;
  using Action = int32_t;
  static constexpr int kNumActions = 2;  // 0: nothing, 1: kick ball 0 up
  static constexpr int kActionDim = 1;
  static constexpr int kObsDim = 2;
  static constexpr int kStateDim = 6;  // heights, then velocities
  static constexpr int64_t kWorldBytes = 2 * 3 * sizeof(float) + sizeof(BallEngine);

  static cugym::EnvSpec Spec() {
    cugym::EnvSpec spec;
    spec.id = "BallDrop-v0";
    const float inf = std::numeric_limits<float>::infinity();
    spec.observation_space = cugym::Space::Box({0.0f, -inf}, {10.0f, inf});
    spec.action_space = cugym::Space::Discrete(kNumActions);
    spec.state_dim = kStateDim;
    spec.max_episode_steps = 200;
    spec.reference = "examples/host_env (a host-engine plugin example)";
    return spec;
  }
  static void CheckParams(const Params& p) {
    if (p.balls != 3) throw std::invalid_argument("BallDrop: balls must be 3, got " + std::to_string(p.balls));
  }
  static void CheckAction(const Action* a, int64_t env) {
    if (*a < 0 || *a >= kNumActions)
      throw std::invalid_argument("BallDrop-v0: action " + std::to_string(*a) + " of env " + std::to_string(env) +
                                  " is outside Discrete(2)");
  }
  static void Reset(const Params& p, World& world, cugym::Rng& rng) {
    world.Clear();
    for (int b = 0; b < p.balls; ++b) world.AddBall(rng.Uniform(1.0f, 2.0f), 0.0f);
  }
  static cugym::StepResult Step(const Params&, World& world, const Action* a, cugym::Rng&) {
    if (*a == 1) world.Kick(0, 0.5f);
    return {1.0f, world.Step(0.02f)};
  }
  static void Observe(const Params&, const World& world, float* obs) {
    obs[0] = world.height(0);
    obs[1] = world.velocity(0);
  }
  static void ToFlat(const World& world, float* flat) {
    for (int b = 0; b < 3; ++b) flat[b] = world.height(b), flat[3 + b] = world.velocity(b);
  }
  static void FromFlat(const Params&, World& world, const float* flat) {
    world.Clear();
    for (int b = 0; b < 3; ++b) world.AddBall(flat[b], flat[3 + b]);
  }
};
