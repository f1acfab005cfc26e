// The environment contract: what an env struct provides so that the batched runner
// (envs/batched_env.h) can simulate N copies of it on the CPU and the GPU from one source.
//
//   struct MyEnv {
//     static EnvSpec Spec();                       // host: id, spaces, limits (core/spec.h)
//     struct Params { ... };                       // constants, defaults = the reference's
//     struct State { ... };                        // trivially copyable, plain floats/ints
//     using Action = int32_t;                      // Discrete; or float for a Box
//     static constexpr int kNumActions = 2;        // Discrete(n); 0 for a Box
//     static constexpr int kActionDim = 1;         // floats per action for a Box, 1 for Discrete
//     static constexpr int kObsDim = 4;
//     static constexpr int kStateDim = 4;          // flat state (Gymnasium's env.unwrapped.state)
//     CUGYM_HD static State Reset(const Params&, Rng&);
//     CUGYM_HD static StepResult Step(const Params&, State&, const Action* action, Rng&);
//     CUGYM_HD static void Observe(const Params&, const State&, float* obs);
//     static void ToFlat(const State&, float* flat);       // host, kStateDim floats
//     static State FromFlat(const float* flat);            // host
//     // Box only: bounds used to draw random actions.
//     CUGYM_HD static float ActionLow(int d); CUGYM_HD static float ActionHigh(int d);
//     // Optional: what a new episode inherits from the one before (MinAtar keeps its last action
//     // across resets). Called on the fresh state whenever the runner starts another episode of an
//     // env (autoreset, ResetDone, ResetMasked); never on VectorEnv::Reset/ResetSeeds, which start
//     // every env afresh. Envs without it compile exactly as before.
//     CUGYM_HD static void CarryOver(const State& ended, State& fresh);
//   };
//
// Rules: Reset/Step/Observe are pure functions of their arguments (no globals, no allocation,
// no exceptions, no host-only calls) because they run inside CUDA kernels and vectorized CPU
// loops; draw randomness only from the Rng passed in; use core/fastmath.h for sin/cos so
// every back end computes the same bits. Truncation and autoreset are the runner's job.
#pragma once

#include <cstdint>

#include "core/fastmath.h"
#include "core/macros.h"
#include "core/rng.h"
#include "core/spec.h"

namespace cugym {

struct StepResult {
  float reward;
  bool terminated;
};

}  // namespace cugym
