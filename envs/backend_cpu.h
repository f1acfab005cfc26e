// The CPU back end of BatchedEnv: OpenMP threads over chunks of envs (through Thrust's OMP
// system), and within a chunk a vectorized loop for phase 1 of the step and a scalar pass for
// the few envs that finished. Multi-step calls keep each chunk in cache for all its steps and
// pay one fork/join per call, not per step. Include only in a .cpp compiled by the host
// compiler with THRUST_DEVICE_SYSTEM=THRUST_DEVICE_SYSTEM_OMP.
#pragma once

#include <omp.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/system/omp/execution_policy.h>

#include <algorithm>
#include <memory>

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
      for (int64_t i = begin; i < end; ++i) detail::ResetIfDone<Env>(a, params, seed, mask, i);
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
          if (arrays.seeds != nullptr) {
            StepChunk<Env>(arrays, args, first_step, steps, begin, end);
          } else {  // every env has the batch's seed: a copy whose null seeds the compiler sees
            detail::BatchArrays<Env> uniform = arrays;
            uniform.seeds = nullptr;
            StepChunk<Env>(uniform, args, first_step, steps, begin, end);
          }
        },
        steps > 1 ? kMinChunkManySteps : kMinChunkOneStep);
  }

 private:
  // `steps` steps of envs [begin, end).
  template <class Env>
  static CUGYM_FORCEINLINE void StepChunk(const detail::BatchArrays<Env>& arrays, const detail::StepArgs<Env>& args,
                                          uint64_t first_step, int64_t steps, int64_t begin, int64_t end) {
    using Action = typename Env::Action;
    // Loop invariants as locals: GCC vectorizes nothing that reloads them through a pointer.
    const detail::BatchArrays<Env> a = arrays;
    const typename Env::Params params = args.params;
    const uint64_t seed = args.seed;
    const int32_t max_steps = args.max_steps;
    const Action* actions = args.actions;
    for (int64_t t = 0; t < steps; ++t) {
      if (actions != nullptr) {
        CUGYM_IVDEP
        for (int64_t i = begin; i < end; ++i)
          detail::StepCore<Env>(a, params, seed, max_steps, i, actions + i * Env::kActionDim);
      } else {
        const uint32_t key = StepKey(seed, RngStream::kActions, first_step + t);
        CUGYM_IVDEP
        for (int64_t i = begin; i < end; ++i) {
          Action action[Env::kActionDim];
          detail::RandomAction<Env>(key, i, action);
          detail::StepCore<Env>(a, params, seed, max_steps, i, action);
        }
      }
      for (int64_t i = begin; i < end; ++i) detail::FinishEpisode<Env>(a, args, i);
    }
  }
};

template <class Env>
std::unique_ptr<VectorEnv> MakeCpuVectorEnv(int64_t num_envs) {
  return std::make_unique<BatchedEnv<Env, CpuBackend>>(num_envs, Device::kCpu);
}

}  // namespace cugym
