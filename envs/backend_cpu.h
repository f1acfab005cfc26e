// The CPU back end of BatchedEnv: OpenMP threads over chunks of envs (through Thrust's OMP
// system), and within a chunk a vectorized loop for phase 1 of the step and a scalar pass over
// the few envs that finished (found eight flags at a time). Multi-step calls keep each chunk in
// cache for all its steps and pay one fork/join per call, not per step. Include only in a .cpp
// compiled by the host compiler with THRUST_DEVICE_SYSTEM=THRUST_DEVICE_SYSTEM_OMP.
#pragma once

#include <omp.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/system/omp/execution_policy.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "core/flag_mask.h"
#include "envs/batched_env.h"

namespace cugym {

struct CpuBackend {
  // Envs per chunk: at most kMaxChunk, so a chunk's arrays (~100 B per env) stay in L2 while it
  // steps; at least `min_chunk`, so a thread's share of one call outweighs the fork/join (a
  // microsecond or two). Measured on 2 cores at N = 1024: one step per call runs faster on one
  // thread, many steps per call on two.
  static constexpr int64_t kMaxChunk = 2048;
  static constexpr int64_t kMinChunkOneStep = 2048;
  static constexpr int64_t kMinChunkManySteps = 512;

  // Calls fn(begin, end) over [first, first + count) in chunks, on all threads when there is
  // more than one chunk.
  template <class Fn>
  static void ForChunks(int64_t first, int64_t count, const Fn& fn, int64_t min_chunk = kMinChunkOneStep) {
    const int64_t threads = omp_get_max_threads();
    const int64_t chunk = std::clamp((count + threads - 1) / threads, min_chunk, kMaxChunk);
    const int64_t chunks = (count + chunk - 1) / chunk;
    if (chunks <= 1 || threads == 1) {
      for (int64_t c = 0; c < chunks; ++c) fn(first + c * chunk, first + std::min(count, (c + 1) * chunk));
      return;
    }
    thrust::for_each(thrust::omp::par, thrust::counting_iterator<int64_t>(0),
                     thrust::counting_iterator<int64_t>(chunks),
                     [&](int64_t c) { fn(first + c * chunk, first + std::min(count, (c + 1) * chunk)); });
  }

  template <class Env>
  static void Reset(const detail::BatchArrays<Env>& a, const typename Env::Params& params, uint64_t seed, int64_t first,
                    int64_t count, void* /*stream: none on the CPU*/) {
    ForChunks(first, count, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) detail::ResetEnv<Env>(a, params, seed, i);
    });
  }

  template <class Env>
  static void ResetDone(const detail::BatchArrays<Env>& a, const typename Env::Params& params, uint64_t seed,
                        const uint8_t* mask, int64_t n, void* /*stream*/) {
    ForChunks(0, n, [&](int64_t begin, int64_t end) {
      const detail::BatchArrays<Env> arrays = a;
      auto reset = [&](int64_t i) { detail::ResetIfDone<Env>(arrays, params, seed, mask, i); };
      if (mask != nullptr)
        ForEachSet(mask, mask, begin, end, reset);
      else
        ForEachSet(arrays.terminated, arrays.truncated, begin, end, reset);
    });
  }

  template <class Env>
  static void Observe(const detail::BatchArrays<Env>& a, const typename Env::Params& params, int64_t first,
                      int64_t count, void* /*stream*/) {
    ForChunks(first, count, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) Env::Observe(params, a.states[i], a.obs + i * Env::kObsDim);
    });
  }

  template <class Env>
  static void Step(const detail::BatchArrays<Env>& arrays, const detail::StepArgs<Env>& args, int64_t n,
                   uint64_t first_step, int64_t steps, void* /*stream*/) {
    ForChunks(
        0, n,
        [&](int64_t begin, int64_t end) {
          if (arrays.seeds != nullptr)
            StepChunk<Env, true>(arrays, args, first_step, steps, begin, end);
          else
            StepChunk<Env, false>(arrays, args, first_step, steps, begin, end);
        },
        steps > 1 ? kMinChunkManySteps : kMinChunkOneStep);
  }

 private:
  // Calls fn(i) for the i in [begin, end) where x[i] | y[i] is nonzero, in order. Set flags are
  // few and scattered (envs that ended, a reset mask): 64 at a time become a bit mask
  // (core/flag_mask.h), and only its set bits are visited.
  template <class Fn>
  static CUGYM_FORCEINLINE void ForEachSet(const uint8_t* x, const uint8_t* y, int64_t begin, int64_t end,
                                           const Fn& fn) {
    int64_t i = begin;
    for (; i + 64 <= end; i += 64)
      for (uint64_t set = NonzeroMask64(x + i, y + i); set != 0; set &= set - 1) fn(i + __builtin_ctzll(set));
    for (; i < end; ++i)
      if (x[i] | y[i]) fn(i);
  }

  // `steps` steps of envs [begin, end). Flattened: every call inside (the env's Step, Reset and
  // Observe) is inlined, which the loops over envs need to vectorize; left to itself GCC may keep
  // a large Step out of line (Acrobot's RK4 ran 4x slower so). kOwnSeeds false: every env has the
  // batch's seed, and the loops see a null BatchArrays::seeds and no lanes.
  template <class Env, bool kOwnSeeds>
  __attribute__((flatten)) static void StepChunk(const detail::BatchArrays<Env>& arrays,
                                                 const detail::StepArgs<Env>& args, uint64_t first_step, int64_t steps,
                                                 int64_t begin, int64_t end) {
    using Action = typename Env::Action;
    // Loop invariants as locals: GCC vectorizes nothing that reloads them through a pointer.
    const detail::BatchArrays<Env> a = [&] {
      detail::BatchArrays<Env> copy = arrays;
      if constexpr (!kOwnSeeds) {
        copy.seeds = nullptr;
        copy.lane_size = 0;
      }
      return copy;
    }();
    const typename Env::Params params = args.params;
    const uint64_t seed = args.seed;
    const int32_t max_steps = args.max_steps;
    const Action* actions = args.actions;
    for (int64_t t = 0; t < steps; ++t) {
      if (actions != nullptr) {
        CUGYM_IVDEP
        for (int64_t i = begin; i < end; ++i) {
          // A local copy, as in the random branch: handed the caller's pointer, GCC vectorized
          // this loop with twice the registers it has (CartPole 2x slower than random actions).
          Action action[Env::kActionDim];
          for (int d = 0; d < Env::kActionDim; ++d) action[d] = actions[i * Env::kActionDim + d];
          detail::StepCore<Env>(a, params, seed, max_steps, i, action);
        }
      } else {
        const uint32_t key = StepKey(seed, RngStream::kActions, first_step + t);
        CUGYM_IVDEP
        for (int64_t i = begin; i < end; ++i) {
          Action action[Env::kActionDim];
          detail::RandomAction<Env>(key, i, action);
          detail::StepCore<Env>(a, params, seed, max_steps, i, action);
        }
      }
      ForEachSet(a.terminated, a.truncated, begin, end, [&](int64_t i) { detail::FinishEpisode<Env>(a, args, i); });
    }
  }
};

template <class Env>
std::unique_ptr<VectorEnv> MakeCpuVectorEnv(int64_t num_envs) {
  return std::make_unique<BatchedEnv<Env, CpuBackend>>(num_envs, Device::kCpu);
}

}  // namespace cugym
