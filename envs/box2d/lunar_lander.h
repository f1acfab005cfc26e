// LunarLander-v3 (Discrete(4)) and LunarLanderContinuous-v3 (Box(2)): Gymnasium 1.4.0's
// gymnasium/envs/box2d/lunar_lander.py on Box2D 2.4, as host envs for HostBatchedEnv (one Box2D
// world per env, envs/host_batched_env.h). The physics is LunarLanderWorld; this file adds what
// the batched runner needs: spec, actions (decoding and checking), random draws from cugym's
// counter-based Rng in Gymnasium's order, state and drawing. What differs from Gymnasium, and
// by how much: docs/benchmarks-history.md
// ("LunarLander-v3 and LunarLanderContinuous-v3 against Gymnasium 1.4.0").
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/canvas.h"
#include "core/registry.h"
#include "envs/box2d/lunar_lander_world.h"

namespace cugym {

namespace lunar_lander {

EnvSpec MakeSpec(bool continuous);
// Reset's random values from the env's Rng, in Gymnasium's order (heights, force, wind, then the
// internal step's dispersion).
LunarLanderDraws DrawReset(const LunarLanderParams& params, Rng& rng);
// Two U(-1, 1) / SCALE values, drawn every step whether or not an engine fires.
std::array<double, 2> DrawDispersion(Rng& rng);
// Gymnasium's action -> engine decoding (L527-617).
LunarLanderEngines DecodeDiscrete(int32_t action);
LunarLanderEngines DecodeContinuous(const float* action);
// Throw std::invalid_argument naming the env and the value: Gymnasium asserts discrete actions
// lie in the space; cugym refuses NaN continuous actions too (Gymnasium would take them as no-op).
void CheckDiscrete(int32_t action, int64_t env_index);
void CheckContinuous(const float* action, int64_t env_index);
// Gymnasium's own bounds: -12 < gravity < 0 (an assertion); wind and turbulence powers >= 0.
void CheckParams(const LunarLanderParams& params);
// The 600x400 frame of Gymnasium's render() from a flat state (lunar_lander_draw.cpp).
void Draw(const float* flat, Canvas& canvas);

}  // namespace lunar_lander

template <bool kContinuous>
struct LunarLanderEnv {
  using Params = LunarLanderParams;
  using World = LunarLanderWorld;
  using Action = std::conditional_t<kContinuous, float, int32_t>;
  static constexpr int kNumActions = kContinuous ? 0 : 4;  // no-op, left, main, right engine
  static constexpr int kActionDim = kContinuous ? 2 : 1;   // (main, lateral) throttles in [-1, 1]
  static constexpr int kObsDim = lunar_lander::kObsDim;
  static constexpr int kStateDim = lunar_lander::kStateDim;
  // A world holds its b2World (a 100 KiB stack allocator inside) and Box2D's block-allocator
  // chunks (16 KiB per size class in use: bodies, fixtures, contacts, joints, shapes). Measured:
  // 443 MB resident at N = 4096, about 105 KiB per env; the batch-size check uses this bound.
  static constexpr int64_t kWorldBytes = 256 * 1024;

  static EnvSpec Spec() { return lunar_lander::MakeSpec(kContinuous); }
  static float ActionLow(int) { return -1.0f; }
  static float ActionHigh(int) { return 1.0f; }
  static void CheckParams(const Params& params) { lunar_lander::CheckParams(params); }
  static void CheckAction(const Action* action, int64_t env_index) {
    if constexpr (kContinuous) {
      lunar_lander::CheckContinuous(action, env_index);
    } else {
      lunar_lander::CheckDiscrete(*action, env_index);
    }
  }

  static void Reset(const Params& params, World& world, Rng& rng) {
    world.Reset(params, lunar_lander::DrawReset(params, rng));
  }
  static StepResult Step(const Params& params, World& world, const Action* action, Rng& rng) {
    LunarLanderEngines engines;
    if constexpr (kContinuous) {
      engines = lunar_lander::DecodeContinuous(action);
    } else {
      engines = lunar_lander::DecodeDiscrete(*action);
    }
    return world.Step(params, engines, lunar_lander::DrawDispersion(rng));
  }
  static void Observe(const Params&, const World& world, float* obs) { world.Observe(obs); }
  static void ToFlat(const World& world, float* flat) { world.ToFlat(flat); }
  static void FromFlat(const Params& params, World& world, const float* flat) { world.FromFlat(params, flat); }
  static void Draw(const Params&, const float* flat, Canvas& canvas) { lunar_lander::Draw(flat, canvas); }
};

using LunarLander = LunarLanderEnv<false>;
using LunarLanderContinuous = LunarLanderEnv<true>;

// Registers LunarLander-v3 and LunarLanderContinuous-v3 (called by RegisterBuiltinEnvs when
// cugym is built with Box2D).
void RegisterBox2dEnvs(Registry& registry);

}  // namespace cugym
