// One LunarLander world on Box2D: Gymnasium 1.4.0's gymnasium/envs/box2d/lunar_lander.py
// (LunarLander-v3 and its continuous variant) ported to Box2D 2.4 (Debian's libbox2d-dev).
// Constants, reset order, engines, observation, reward and termination follow that file; what
// Box2D 2.4.1 changes against pybox2d 2.3.10 (Gymnasium's Box2D) is measured in
// docs/benchmarks-history.md. The randomness comes in as values
// (LunarLanderDraws, the dispersion pair), so tests can inject Gymnasium's own draws.
#pragma once

#include <box2d/box2d.h>

#include <array>
#include <memory>

#include "envs/env.h"

namespace cugym {

// Gymnasium's constructor arguments (continuous is a property of the id, not a parameter).
struct LunarLanderParams {
  float gravity = -10.0f;  // m/s², Gymnasium asserts -12 < gravity < 0
  bool enable_wind = false;
  float wind_power = 15.0f;       // N, Gymnasium warns outside [0, 20]
  float turbulence_power = 1.5f;  // N·m, Gymnasium warns outside [0, 2]
};

namespace lunar_lander {

inline constexpr double kScale = 30.0;  // pixels per metre
inline constexpr double kFps = 50.0;
inline constexpr double kViewportW = 600.0, kViewportH = 400.0;
inline constexpr double kWorldW = kViewportW / kScale;  // 20 m
inline constexpr double kWorldH = kViewportH / kScale;  // 13.333 m
inline constexpr int kChunks = 11;
inline constexpr double kHelipadY = kWorldH / 4;
inline constexpr double kLegAway = 20.0, kLegDown = 18.0, kLegW = 2.0, kLegH = 8.0;  // pixels
inline constexpr int kObsDim = 8;
// The observation space's upper bounds (L262-296); the lower ones are their negatives, except for
// the two leg-contact flags (0).
inline constexpr double kObsHigh[kObsDim] = {2.5, 2.5, 10.0, 10.0, 6.283185307179586, 10.0, 1.0, 1.0};

// The flat state (VectorEnv::GetStates): Gymnasium keeps no `state` vector for this env, so the
// order is cugym's. Bodies are (x, y, angle, vx, vy, angular velocity) with (x, y) the body
// origin and (vx, vy) the centre of mass velocity, as Box2D reports them.
enum FlatIndex : int {
  kLander = 0,     // 6 values
  kLeg0 = 6,       // legs[0], the one on the +x side at reset; 6 values
  kLeg1 = 12,      // 6 values
  kContact0 = 18,  // legs[i].ground_contact, 0 or 1
  kContact1 = 19,
  kGameOver = 20,     // the lander body touched the moon
  kPrevShaping = 21,  // the shaping potential after the last step
  kAwake = 22,        // Box2D's awake flag of the lander (its island)
  kWindIdx = 23,      // wind and turbulence phases (enable_wind)
  kTorqueIdx = 24,
  kMainPower = 25,  // engines fired in the last step (for drawing the flames): 0 or 0.5..1
  kSidePower = 26,  // signed: -1..-0.5 left engine, 0.5..1 right engine, 0 none
  kTerrain = 27,    // smooth_y[0..10], the terrain heights at x = 2 i
  kStateDim = kTerrain + kChunks,
};

}  // namespace lunar_lander

// The random values of a reset, in Gymnasium's order of draws: 12 terrain heights U(0, H/2), the
// initial force's two components U(-1000, 1000) N, the wind phases (integers in [-9999, 9999),
// drawn only with wind), then the dispersion pair of reset's internal step.
struct LunarLanderDraws {
  std::array<double, lunar_lander::kChunks + 1> heights{};
  double force_x = 0, force_y = 0;
  int wind_idx = 0, torque_idx = 0;
  std::array<double, 2> dispersion{};  // U(-1, 1) / SCALE each
};

// What the engines do in one step, decoded from an action (LunarLanderEnv). `main` is the main
// engine's power (0 = off, else 0.5..1); `side` the side engine's signed power (0 = off, -1..-0.5
// fires the left engine (action 1), 0.5..1 the right one (action 3)).
struct LunarLanderEngines {
  double main = 0.0;
  double side = 0.0;
};

class LunarLanderWorld {
 public:
  LunarLanderWorld();
  ~LunarLanderWorld();
  LunarLanderWorld(const LunarLanderWorld&) = delete;
  LunarLanderWorld& operator=(const LunarLanderWorld&) = delete;

  // Builds a fresh world (terrain, lander, legs, joints), applies the initial force and takes
  // reset's internal no-op step, as Gymnasium's reset does.
  void Reset(const LunarLanderParams& params, const LunarLanderDraws& draws);
  // One step: wind, engine impulses at the dispersed points, world.Step(1/50, 180, 60), then
  // reward and termination (crash or out of bounds -100, at rest +100).
  StepResult Step(const LunarLanderParams& params, const LunarLanderEngines& engines,
                  const std::array<double, 2>& dispersion);
  // Gymnasium's 8 observation values.
  void Observe(float* obs) const;

  void ToFlat(float* flat) const;
  // Rebuilds the world from a flat state: terrain, bodies with their poses and velocities, joints,
  // flags. Contact impulses and sleep timers are not part of the state and start from zero.
  void FromFlat(const LunarLanderParams& params, const float* flat);

  // Test access to the bodies.
  const b2Body* lander() const { return lander_; }
  const b2Body* leg(int i) const { return legs_[i]; }

 private:
  class ContactListener;

  void Build(const LunarLanderParams& params, const double* smooth_y);
  // The observation in double, as Gymnasium computes it before rounding to float32.
  std::array<double, lunar_lander::kObsDim> ObserveDouble() const;
  // Step without the reward's shaping difference when there is no previous potential (reset's
  // internal step, whose reward Gymnasium discards).
  StepResult Advance(const LunarLanderParams& params, const LunarLanderEngines& engines,
                     const std::array<double, 2>& dispersion, bool has_prev_shaping);

  // Box2D 2.3's stateful joint limits on 2.4's predictive ones (see the .cpp), before each world
  // step; true when a limit acts in this step.
  bool SetLimitStates();
  // The lander or a leg has a contact with the moon (bounding boxes overlap).
  bool NearTheMoon() const;

  std::unique_ptr<ContactListener> listener_;
  std::unique_ptr<b2World> world_;
  b2Body* lander_ = nullptr;
  b2Body* legs_[2] = {nullptr, nullptr};
  b2RevoluteJoint* joints_[2] = {nullptr, nullptr};
  double smooth_y_[lunar_lander::kChunks] = {};
  bool ground_contact_[2] = {false, false};
  bool game_over_ = false;
  double prev_shaping_ = 0.0;
  bool cold_ = true;  // no step since Build: the joints have no impulses to warm-start from
  int wind_idx_ = 0, torque_idx_ = 0;
  LunarLanderEngines last_engines_;
};

}  // namespace cugym
