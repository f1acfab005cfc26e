// The CUDA implementation of AgentOps: one Thrust for_each per call on the nn back end's stream,
// no host synchronisation, so the update's kernels can be captured into a CUDA graph with the
// network's.
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/system/cuda/execution_policy.h>

#include "agents/agent_ops.h"
#include "core/error.h"

namespace cugym::agent {
namespace {

template <class F>
void ForEach(cudaStream_t stream, int64_t n, const F& f) {
  if (n <= 0) return;
  thrust::for_each(thrust::cuda::par_nosync.on(stream), thrust::counting_iterator<int64_t>(0),
                   thrust::counting_iterator<int64_t>(n), f);
  CUGYM_CUDA_CHECK_LAST();
}

struct AddFunctor {
  ReplayArrays replay;
  int64_t position, n;
  const float *obs, *rewards, *next_obs, *final_obs;
  const int32_t* actions;
  const uint8_t *terminated, *truncated;
  __device__ void operator()(int64_t i) const {
    AddTransition(replay, position, i, n, obs, actions, rewards, next_obs, final_obs, terminated, truncated);
  }
};

struct SampleFunctor {
  ReplayArrays replay;
  Minibatch batch;
  uint64_t seed;
  __device__ void operator()(int64_t j) const { SampleTransition(replay, batch, seed, j); }
};

struct AdvanceDrawFunctor {
  uint32_t* draws;
  __device__ void operator()(int64_t) const { ++*draws; }
};

struct EpsilonFunctor {
  int32_t* actions;
  float epsilon;
  int num_actions;
  uint32_t step_key;
  ExploreHold hold;
  __device__ void operator()(int64_t i) const { EpsilonGreedy(actions, epsilon, num_actions, step_key, hold, i); }
};

struct TargetFunctor {
  const float *rewards, *dones, *next_q;
  float gamma;
  float* targets;
  __device__ void operator()(int64_t j) const { TdTarget(rewards, dones, next_q, gamma, targets, j); }
};

struct EpisodeFunctor {
  const uint8_t *terminated, *truncated;
  const float* returns;
  const int32_t* lengths;
  EpisodeRing ring;
  __device__ void operator()(int64_t i) const {
    if (!(terminated[i] | truncated[i])) return;
    const unsigned long long k = atomicAdd(ring.count, 1ull);
    const int64_t slot = static_cast<int64_t>(k % static_cast<unsigned long long>(ring.capacity));
    ring.returns[slot] = returns[i];
    ring.lengths[slot] = lengths[i];
  }
};

class CudaAgentOps final : public AgentOps {
 public:
  explicit CudaAgentOps(void* stream) : stream_(static_cast<cudaStream_t>(stream)) {}

  void AddTransitions(const ReplayArrays& replay, int64_t position, int64_t n, const float* obs, const int32_t* actions,
                      const float* rewards, const float* next_obs, const float* final_obs, const uint8_t* terminated,
                      const uint8_t* truncated) override {
    ForEach(stream_, n, AddFunctor{replay, position, n, obs, rewards, next_obs, final_obs, actions, terminated, truncated});
  }
  void Sample(const ReplayArrays& replay, const Minibatch& batch, int64_t batch_size, uint64_t seed) override {
    ForEach(stream_, batch_size, SampleFunctor{replay, batch, seed});
    ForEach(stream_, 1, AdvanceDrawFunctor{replay.draws});
  }
  void EpsilonGreedy(int32_t* actions, int64_t n, float epsilon, int num_actions, uint32_t step_key,
                     const ExploreHold& hold) override {
    ForEach(stream_, n, EpsilonFunctor{actions, epsilon, num_actions, step_key, hold});
  }
  void TdTargets(const float* rewards, const float* dones, const float* next_q, float gamma, float* targets,
                 int64_t n) override {
    ForEach(stream_, n, TargetFunctor{rewards, dones, next_q, gamma, targets});
  }
  void CollectEpisodes(const uint8_t* terminated, const uint8_t* truncated, const float* returns,
                       const int32_t* lengths, int64_t n, const EpisodeRing& ring) override {
    ForEach(stream_, n, EpisodeFunctor{terminated, truncated, returns, lengths, ring});
  }

 private:
  cudaStream_t stream_;
};

}  // namespace

std::unique_ptr<AgentOps> MakeCudaAgentOps(void* stream) { return std::make_unique<CudaAgentOps>(stream); }

}  // namespace cugym::agent
