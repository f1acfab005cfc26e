// Per-env work of the batched runner, written once as CUGYM_HD functions and run by both back
// ends: the CUDA back end calls them from one Thrust functor per env, the CPU back end from
// vectorized loops over chunks of envs (envs/batched_env.h). Not a public header.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

#include "core/macros.h"
#include "core/rng.h"
#include "envs/env.h"

namespace cugym {
namespace detail {

// Device arrays of a batch; all indexed by env.
template <class Env>
struct BatchArrays {
  typename Env::State* states;
  const uint64_t* seeds;   // each env's seed after ResetSeeds; null: every env has the batch's seed
  uint32_t* rng_counters;  // next Philox counter of each env's kEnv stream
  int32_t* elapsed;        // steps in the current episode
  float* running_return;   // return of the current episode so far
  float* obs;              // [n, kObsDim]
  float* final_obs;        // [n, kObsDim]
  float* rewards;
  uint8_t* terminated;
  uint8_t* truncated;
  float* done_return;  // finished episode's return where done
  int32_t* done_length;
  // Lanes (VectorEnv::ResetLanes): envs per lane, env i drawing as env i % lane_size of its lane;
  // 0: none, env i draws as env i. Only with per-env seeds.
  int64_t lane_size;
};

// What one step needs besides the arrays. `actions` is null for random actions, which are then
// drawn from the kActions stream keyed by the step's index (StepKey).
template <class Env>
struct StepArgs {
  typename Env::Params params;
  uint64_t seed;      // the batch's seed: random actions, and the envs' draws where seeds is null
  int32_t max_steps;  // 0: never truncate
  bool autoreset;
  const typename Env::Action* actions;
};

template <class Env>
CUGYM_HD CUGYM_FORCEINLINE void RandomAction(uint32_t action_key, int64_t i, typename Env::Action* action) {
  if constexpr (Env::kNumActions > 0) {
    uint32_t bits = HashDraw(action_key, static_cast<uint32_t>(i));
    *action = static_cast<int32_t>((static_cast<uint64_t>(bits) * Env::kNumActions) >> 32);
  } else {
    for (int d = 0; d < Env::kActionDim; ++d) {
      float u = U32ToUnitFloat(HashDraw(action_key + 0x632BE5ABu * static_cast<uint32_t>(d), static_cast<uint32_t>(i)));
      action[d] = Env::ActionLow(d) + (Env::ActionHigh(d) - Env::ActionLow(d)) * u;
    }
  }
}

// Whether Env declares the optional CarryOver hook (envs/env.h). Envs without it compile to exactly
// the code they had before the hook existed.
template <class Env, class = void>
struct HasCarryOver : std::false_type {};
template <class Env>
struct HasCarryOver<Env, std::void_t<decltype(Env::CarryOver(std::declval<const typename Env::State&>(),
                                                             std::declval<typename Env::State&>()))>> : std::true_type {
};

// Env i's seed: its own (BatchArrays::seeds) or the batch's. Env i draws from (seed, i, counter).
// The CPU back end steps with a null `seeds` in a loop of its own, where this folds to `seed`.
template <class Env>
CUGYM_HD CUGYM_FORCEINLINE uint64_t EnvSeed(const BatchArrays<Env>& a, uint64_t seed, int64_t i) {
  return a.seeds != nullptr ? a.seeds[i] : seed;
}

// Env i's index in its Philox key: i, or with lanes its index in its lane. (The CPU back end's loop
// for a batch without per-env seeds sees lane_size 0, where this folds to i.)
template <class Env>
CUGYM_HD CUGYM_FORCEINLINE uint64_t EnvStream(const BatchArrays<Env>& a, int64_t i) {
  return static_cast<uint64_t>(a.lane_size > 0 ? i % a.lane_size : i);
}

// Starts env i's next episode: draws its initial state and writes its observation. kNext: env i
// had an episode before (autoreset, ResetDone), whose state the new one may inherit from (CarryOver).
template <class Env, bool kNext = false>
CUGYM_HD CUGYM_FORCEINLINE void ResetEnv(const BatchArrays<Env>& a, const typename Env::Params& params, uint64_t seed,
                                         int64_t i) {
  Rng rng(EnvSeed(a, seed, i), EnvStream(a, i), a.rng_counters[i]);
  typename Env::State state = Env::Reset(params, rng);
  if constexpr (kNext && HasCarryOver<Env>::value) Env::CarryOver(a.states[i], state);
  a.rng_counters[i] = rng.counter();
  a.states[i] = state;
  a.elapsed[i] = 0;
  a.running_return[i] = 0.0f;
  Env::Observe(params, state, a.obs + i * Env::kObsDim);
}

// Phase 1 of a step, for every env: dynamics, reward, flags, statistics and the observation of
// the state reached. Branch-free apart from the env's own code, so CPU loops vectorize; the
// caller passes everything loop-invariant by value.
template <class Env>
CUGYM_HD CUGYM_FORCEINLINE void StepCore(const BatchArrays<Env>& a, const typename Env::Params& params, uint64_t seed,
                                         int32_t max_steps, int64_t i, const typename Env::Action* action) {
  typename Env::State state = a.states[i];
  Rng rng(EnvSeed(a, seed, i), EnvStream(a, i), a.rng_counters[i]);
  StepResult result = Env::Step(params, state, action, rng);
  a.rng_counters[i] = rng.counter();
  a.states[i] = state;
  const int32_t elapsed = a.elapsed[i] + 1;
  a.elapsed[i] = elapsed;
  a.running_return[i] += result.reward;
  a.rewards[i] = result.reward;
  a.terminated[i] = result.terminated ? 1 : 0;
  a.truncated[i] = (max_steps > 0) & (elapsed >= max_steps) ? 1 : 0;
  Env::Observe(params, state, a.obs + i * Env::kObsDim);
}

CUGYM_HD CUGYM_FORCEINLINE bool Done(const uint8_t* terminated, const uint8_t* truncated, int64_t i) {
  return (terminated[i] | truncated[i]) != 0;
}

// Phase 2, only for envs that ended in phase 1: keep the last observation and the episode's
// statistics, then (with autoreset on) reset in the same step.
template <class Env>
CUGYM_HD CUGYM_FORCEINLINE void FinishEpisode(const BatchArrays<Env>& a, const StepArgs<Env>& args, int64_t i) {
  if (!Done(a.terminated, a.truncated, i)) return;
  for (int k = 0; k < Env::kObsDim; ++k) a.final_obs[i * Env::kObsDim + k] = a.obs[i * Env::kObsDim + k];
  a.done_return[i] = a.running_return[i];
  a.done_length[i] = a.elapsed[i];
  if (args.autoreset) ResetEnv<Env, true>(a, args.params, args.seed, i);
}

// Starts env i's next episode if mask[i] is set (with a null mask: if it ended), and clears its
// flags and reward. With autoreset off this is how an ended env starts again.
template <class Env>
CUGYM_HD CUGYM_FORCEINLINE void ResetIfDone(const BatchArrays<Env>& a, const typename Env::Params& params,
                                            uint64_t seed, const uint8_t* mask, int64_t i) {
  if (mask != nullptr ? mask[i] == 0 : !Done(a.terminated, a.truncated, i)) return;
  ResetEnv<Env, true>(a, params, seed, i);
  a.terminated[i] = 0;
  a.truncated[i] = 0;
  a.rewards[i] = 0.0f;
}

// `steps` random-action steps of env i with its state, counters and return kept in registers:
// memory is read once and the outputs written once (plus final_obs and the statistics of
// episodes that end on the way, which are rare). Gives the same results as `steps` rounds of
// StepCore + FinishEpisode; tests check this on the CPU (ReferenceBackend).
template <class Env>
CUGYM_HD void RandomRollout(const BatchArrays<Env>& a, const StepArgs<Env>& args, int64_t i, uint64_t first_step,
                            int64_t steps) {
  typename Env::State state = a.states[i];
  const uint64_t seed = EnvSeed(a, args.seed, i), stream = EnvStream(a, i);
  uint32_t counter = a.rng_counters[i];
  int32_t elapsed = a.elapsed[i];
  float running_return = a.running_return[i];
  StepResult result{0.0f, false};
  bool truncated = false;
  for (int64_t t = 0; t < steps; ++t) {
    typename Env::Action action[Env::kActionDim];
    RandomAction<Env>(StepKey(args.seed, RngStream::kActions, first_step + t), i, action);
    Rng rng(seed, stream, counter);
    result = Env::Step(args.params, state, action, rng);
    counter = rng.counter();
    elapsed += 1;
    running_return += result.reward;
    truncated = (args.max_steps > 0) & (elapsed >= args.max_steps);
    if (result.terminated | truncated) {
      Env::Observe(args.params, state, a.final_obs + i * Env::kObsDim);
      a.done_return[i] = running_return;
      a.done_length[i] = elapsed;
      if (args.autoreset) {
        Rng reset_rng(seed, stream, counter);
        if constexpr (HasCarryOver<Env>::value) {
          typename Env::State fresh = Env::Reset(args.params, reset_rng);
          Env::CarryOver(state, fresh);
          state = fresh;
        } else {
          state = Env::Reset(args.params, reset_rng);
        }
        counter = reset_rng.counter();
        elapsed = 0;
        running_return = 0.0f;
      }
    }
  }
  if (steps <= 0) return;
  a.states[i] = state;
  a.rng_counters[i] = counter;
  a.elapsed[i] = elapsed;
  a.running_return[i] = running_return;
  a.rewards[i] = result.reward;
  a.terminated[i] = result.terminated ? 1 : 0;
  a.truncated[i] = truncated ? 1 : 0;
  Env::Observe(args.params, state, a.obs + i * Env::kObsDim);
}

// All the work of `steps` steps of env i, as one GPU thread does it: given actions (one step)
// through the two phases, random actions in registers.
template <class Env>
CUGYM_HD void StepOneEnv(const BatchArrays<Env>& a, const StepArgs<Env>& args, int64_t i, uint64_t first_step,
                         int64_t steps) {
  if (args.actions == nullptr) {
    RandomRollout<Env>(a, args, i, first_step, steps);
    return;
  }
  for (int64_t t = 0; t < steps; ++t) {
    StepCore<Env>(a, args.params, args.seed, args.max_steps, i, args.actions + i * Env::kActionDim);
    FinishEpisode<Env>(a, args, i);
  }
}

}  // namespace detail
}  // namespace cugym
