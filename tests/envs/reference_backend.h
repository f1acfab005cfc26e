// ReferenceBackend: what CudaBackend does per env (envs/batch_kernels.h's StepOneEnv: random
// actions with the state in registers), as a plain loop over envs on the CPU, so that tests check
// the GPU's semantics on machines without a GPU: BatchedEnv<Env, ReferenceBackend>.
#pragma once

#include <cstdint>

#include "envs/batch_kernels.h"

namespace cugym::testing {

struct ReferenceBackend {
  template <class Env>
  static void Reset(const detail::BatchArrays<Env>& a, const typename Env::Params& params, uint64_t seed, int64_t first,
                    int64_t count, void*) {
    for (int64_t i = first; i < first + count; ++i) detail::ResetEnv<Env>(a, params, seed, i);
  }
  template <class Env>
  static void ResetDone(const detail::BatchArrays<Env>& a, const typename Env::Params& params, uint64_t seed,
                        const uint8_t* mask, int64_t n, void*) {
    for (int64_t i = 0; i < n; ++i) detail::ResetIfDone<Env>(a, params, seed, mask, i);
  }
  template <class Env>
  static void Observe(const detail::BatchArrays<Env>& a, const typename Env::Params& params, int64_t first,
                      int64_t count, void*) {
    for (int64_t i = first; i < first + count; ++i) Env::Observe(params, a.states[i], a.obs + i * Env::kObsDim);
  }
  template <class Env>
  static void Step(const detail::BatchArrays<Env>& a, const detail::StepArgs<Env>& args, int64_t n, uint64_t first_step,
                   int64_t steps, void*) {
    for (int64_t i = 0; i < n; ++i) detail::StepOneEnv<Env>(a, args, i, first_step, steps);
  }
};

}  // namespace cugym::testing
