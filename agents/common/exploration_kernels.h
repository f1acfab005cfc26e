// Exploration on the device: epsilon-greedy with its linear schedule, ez-greedy's held actions,
// and the loop's step counters that key them, so a captured iteration explores as the eager one
// does. Written once as CUGYM_HD functions; ExploreOps runs them on each back end.
#pragma once

#include <cstdint>

#include "core/fastmath.h"
#include "core/macros.h"
#include "core/rng.h"

namespace cugym::agent {

// Temporally extended exploration (ez-greedy, Dabney, Ostrovski and Barreto, ICLR 2021): an
// exploratory action is held for n steps with P(n >= k) = k^(1 - mu), n <= max_hold, instead of
// one. Per-env state lives on the device; held == nullptr means plain epsilon-greedy.
struct ExploreHold {
  int32_t* held = nullptr;  // [n] action being repeated
  int32_t* left = nullptr;  // [n] further steps to repeat it
  float mu = 0.0f;          // tail exponent of the duration, > 1
  int32_t max_hold = 1;
};

// Heavy-tailed duration from a uniform u in (0, 1]: floor(u^(-1 / (mu - 1))), in [1, max_hold].
// The power goes through Log2/Exp2 (core/fastmath.h), not pow: the same bits on CPU and GPU, so
// both back ends floor it to the same hold.
CUGYM_HD inline int32_t HoldDuration(float u, float mu, int32_t max_hold) {
  const double y = -Log2(static_cast<double>(u)) / (static_cast<double>(mu) - 1.0);  // log2 of the duration, >= 0
  if (y >= 31.0) return max_hold;                                                    // 2^31 exceeds any max_hold
  const double n = Exp2(y);
  return n >= static_cast<double>(max_hold) ? max_hold : static_cast<int32_t>(n);
}

// Env i's action: with probability epsilon a uniform random one in place of the greedy action
// already in actions[i]; with a hold, a held action is repeated first and epsilon is only tested
// when no hold is running.
CUGYM_HD inline void EpsilonGreedy(int32_t* actions, float epsilon, int num_actions, uint32_t step_key,
                                   const ExploreHold& hold, int64_t i) {
  if (hold.held && hold.left[i] > 0) {
    --hold.left[i];
    actions[i] = hold.held[i];
    return;
  }
  const uint32_t coin = HashDraw(step_key, static_cast<uint32_t>(i));
  if (U32ToUnitFloat(coin) >= epsilon) return;
  const uint32_t pick = HashDraw(step_key ^ 0x5bd1e995u, static_cast<uint32_t>(i));
  actions[i] = static_cast<int32_t>((static_cast<uint64_t>(pick) * static_cast<uint32_t>(num_actions)) >> 32);
  if (hold.held) {
    const uint32_t draw = HashDraw(step_key ^ 0x27d4eb2fu, static_cast<uint32_t>(i));
    const float u = 1.0f - U32ToUnitFloat(draw);  // (0, 1]
    hold.held[i] = actions[i];
    hold.left[i] = HoldDuration(u, hold.mu, hold.max_hold) - 1;
  }
}

// The training loop's step counters, on the device so a captured iteration advances them itself
// (AdvanceSteps) and its exploration reads them (Explore); the host keeps mirrors.
struct StepCounters {
  int64_t vector_steps;  // vector steps taken: keys the exploration stream
  int64_t global_step;   // env steps taken: drives epsilon
};

// Linear epsilon decay from start to end over `duration` env steps, then flat (CleanRL's
// linear_schedule). In double, with FMA contraction off on both compilers (cugym_strict_fp), so
// the device's value is the host's bit for bit.
struct EpsilonSchedule {
  double start;
  double end;
  double duration;  // env steps: exploration_fraction * total_steps
};

CUGYM_HD inline double ScheduledEpsilon(const EpsilonSchedule& s, int64_t step) {
  const double slope = (s.end - s.start) / s.duration;
  const double value = slope * static_cast<double>(step) + s.start;
  const double floor = s.start < s.end ? s.start : s.end;
  return value < floor ? floor : value;  // std::max(value, floor)
}

// EpsilonGreedy at the vector step the device's counters hold: epsilon from the schedule at the
// env step, the exploration key StepKey(seed, kExploration, vector step), both as the host
// computes them.
CUGYM_HD inline void Explore(int32_t* actions, const StepCounters* counters, const EpsilonSchedule& schedule,
                             uint64_t seed, int num_actions, const ExploreHold& hold, int64_t i) {
  const float epsilon = static_cast<float>(ScheduledEpsilon(schedule, counters->global_step));
  const uint32_t key = StepKey(seed, RngStream::kExploration, static_cast<uint64_t>(counters->vector_steps));
  EpsilonGreedy(actions, epsilon, num_actions, key, hold, i);
}

// Explore for lanes of n envs (K agents in lockstep): env i explores as env i % n of lane i / n's
// agent alone, with that lane's seed (seeds: a device array, one per lane) and hold rows.
CUGYM_HD inline void ExploreLane(int32_t* actions, const StepCounters* counters, const EpsilonSchedule& schedule,
                                 const uint64_t* seeds, int64_t n, int num_actions, const ExploreHold& hold,
                                 int64_t i) {
  const int64_t lane = i / n, first = lane * n;
  ExploreHold lane_hold = hold;
  if (lane_hold.held != nullptr) {
    lane_hold.held += first;
    lane_hold.left += first;
  }
  Explore(actions + first, counters, schedule, seeds[lane], num_actions, lane_hold, i - first);
}

// After a vector step of n envs (one thread).
CUGYM_HD inline void AdvanceSteps(StepCounters* counters, int64_t n) {
  counters->vector_steps += 1;
  counters->global_step += n;
}

}  // namespace cugym::agent
