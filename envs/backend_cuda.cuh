// The CUDA back end of BatchedEnv: one Thrust for_each per call, one thread per env running the
// per-env functions of batch_kernels.h. Multi-step calls loop inside the thread, so a batch of
// random steps is one launch. Include only in .cu files compiled by nvcc.
#pragma once

#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/system/cuda/execution_policy.h>

#include <memory>

#include "core/error.h"
#include "envs/batched_env.h"

namespace cugym {
namespace detail {

template <class Env>
struct ResetFunctor {
  BatchArrays<Env> a;
  typename Env::Params params;
  uint64_t seed;
  __device__ void operator()(int64_t i) const { ResetEnv<Env>(a, params, seed, i); }
};

template <class Env>
struct ResetDoneFunctor {
  BatchArrays<Env> a;
  typename Env::Params params;
  uint64_t seed;
  const uint8_t* mask;
  __device__ void operator()(int64_t i) const { ResetIfDone<Env>(a, params, seed, mask, i); }
};

template <class Env>
struct ObserveFunctor {
  BatchArrays<Env> a;
  typename Env::Params params;
  __device__ void operator()(int64_t i) const { Env::Observe(params, a.states[i], a.obs + i * Env::kObsDim); }
};

template <class Env>
struct StepFunctor {
  BatchArrays<Env> a;
  StepArgs<Env> args;
  uint64_t first_step;
  int64_t steps;
  __device__ void operator()(int64_t i) const { StepOneEnv<Env>(a, args, i, first_step, steps); }
};

}  // namespace detail

// Every launch goes to the stream the env was given (VectorEnv::set_stream), or to CUDA's
// per-thread default stream, never to the legacy one: the caller's work and the env's are then
// ordered by the stream alone, and an agent can capture the env step into its CUDA graph.
struct CudaBackend {
  template <class F>
  static void ForEach(int64_t first, int64_t count, const F& f, void* stream) {
    if (count <= 0) return;
    cudaStream_t s = stream != nullptr ? static_cast<cudaStream_t>(stream) : cudaStreamPerThread;
    thrust::for_each(thrust::cuda::par_nosync.on(s), thrust::counting_iterator<int64_t>(first),
                     thrust::counting_iterator<int64_t>(first + count), f);
    CUGYM_CUDA_CHECK_LAST();
  }

  template <class Env>
  static void Reset(const detail::BatchArrays<Env>& a, const typename Env::Params& params, uint64_t seed, int64_t first,
                    int64_t count, void* stream) {
    ForEach(first, count, detail::ResetFunctor<Env>{a, params, seed}, stream);
  }

  template <class Env>
  static void ResetDone(const detail::BatchArrays<Env>& a, const typename Env::Params& params, uint64_t seed,
                        const uint8_t* mask, int64_t n, void* stream) {
    ForEach(0, n, detail::ResetDoneFunctor<Env>{a, params, seed, mask}, stream);
  }

  template <class Env>
  static void Observe(const detail::BatchArrays<Env>& a, const typename Env::Params& params, int64_t first,
                      int64_t count, void* stream) {
    ForEach(first, count, detail::ObserveFunctor<Env>{a, params}, stream);
  }

  template <class Env>
  static void Step(const detail::BatchArrays<Env>& a, const detail::StepArgs<Env>& args, int64_t n, uint64_t first_step,
                   int64_t steps, void* stream) {
    if (steps <= 0) return;
    ForEach(0, n, detail::StepFunctor<Env>{a, args, first_step, steps}, stream);
  }
};

template <class Env>
std::unique_ptr<VectorEnv> MakeCudaVectorEnv(int64_t num_envs) {
  return std::make_unique<BatchedEnv<Env, CudaBackend>>(num_envs, Device::kCuda);
}

}  // namespace cugym
