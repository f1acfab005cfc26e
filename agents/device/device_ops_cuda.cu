// The agents' device ops on CUDA: device_ops_impl.h's loop bodies each one Thrust for_each on the
// nn back end's stream, and the CUDA forms of the rest (the priority trees' updates, one block per
// lane; the episodes' collection, a CUB scan between three launches). No host synchronisation or
// allocation after the first use, so the iteration's kernels can be captured into a CUDA graph with
// the network's.
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/system/cuda/execution_policy.h>
#include <cub/device/device_scan.cuh>

#include <stdexcept>

#include "agents/device/device_ops_impl.h"
#include "core/error.h"
#include "core/memory.h"

namespace cugym::agent {

struct CudaLoop {
  cudaStream_t stream = nullptr;
  template <class Body>
  void operator()(int64_t n, const Body& body) const {
    if (n <= 0) return;
    thrust::for_each(thrust::cuda::par_nosync.on(stream), thrust::counting_iterator<int64_t>(0),
                     thrust::counting_iterator<int64_t>(n), body);
    CUGYM_CUDA_CHECK_LAST();
  }
  __device__ static void Increment(unsigned long long* count) { atomicAdd(count, 1ull); }
};

namespace {

// The priority tree's two updates, each one block per lane: leaves first, then the levels above
// them one at a time with a barrier between, so a node is recomputed only once its children are
// final.
constexpr int kTreeThreads = 512;

__global__ void PrioritizeNewRowsKernel(PriorityTree trees, const int64_t* head, int64_t n, int64_t capacity) {
  const PriorityTree t = Lane(trees, blockIdx.x);
  int64_t lo[2], hi[2];
  const int ranges = NewRowRanges(*head, n, capacity, lo, hi);
  const float p = *t.max_leaf;
  for (int s = 0; s < ranges; ++s)
    for (int64_t row = lo[s] + threadIdx.x; row < hi[s]; row += blockDim.x) t.nodes[t.leaves + row] = p;
  __syncthreads();
  for (int level = 1; level <= t.depth; ++level) {
    for (int s = 0; s < ranges; ++s) {
      const int64_t first = (t.leaves + lo[s]) >> level, last = (t.leaves + hi[s] - 1) >> level;
      for (int64_t node = first + threadIdx.x; node <= last; node += blockDim.x) RefreshNode(t, node);
    }
    __syncthreads();
  }
}

__global__ void UpdatePrioritiesKernel(PriorityTree trees, const int64_t* all_rows, const float* all_errors,
                                       int64_t n) {
  const PriorityTree t = Lane(trees, blockIdx.x);
  const int64_t* rows = all_rows + blockIdx.x * n;
  const float* errors = all_errors + blockIdx.x * n;
  __shared__ float largest[kTreeThreads];
  float mine = 0.0f;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    if (LaterDuplicate(rows, j, n)) continue;
    const float p = LeafPriority(errors[j], t.alpha, t.eps);
    t.nodes[t.leaves + rows[j]] = p;
    mine = p > mine ? p : mine;
  }
  largest[threadIdx.x] = mine;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half && largest[threadIdx.x + half] > largest[threadIdx.x])
      largest[threadIdx.x] = largest[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0 && largest[0] > *t.max_leaf) *t.max_leaf = largest[0];
  for (int level = 1; level <= t.depth; ++level) {
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) RefreshNode(t, (t.leaves + rows[j]) >> level);
    __syncthreads();
  }
}

class CudaReplayOps final : public ReplayOpsOn<CudaLoop> {
 public:
  using ReplayOpsOn::ReplayOpsOn;
  void PrioritizeNewRows(const ReplayArrays& replay, const PriorityTree& tree, int64_t n) override {
    if (n <= 0) return;
    PrioritizeNewRowsKernel<<<static_cast<unsigned>(tree.lanes), kTreeThreads, 0, loop_.stream>>>(tree, replay.head, n,
                                                                                                  replay.capacity);
    CUGYM_CUDA_CHECK_LAST();
  }
  void UpdatePriorities(const PriorityTree& tree, const int64_t* rows, const float* errors, int64_t n) override {
    if (n <= 0) return;
    UpdatePrioritiesKernel<<<static_cast<unsigned>(tree.lanes), kTreeThreads, 0, loop_.stream>>>(tree, rows, errors, n);
    CUGYM_CUDA_CHECK_LAST();
  }
};

// Episodes of lane i / n after the exclusive sum of every env's flag: lane l's k-th ended env is the
// one whose offset is k past the offset of the lane's first env, and the lane's total is its last
// env's offset and flag past that (one scan for all lanes, no scan by key).
struct LaneSpan {
  const int32_t *flags, *offsets;
  int64_t n;
  __device__ int32_t base(int64_t lane) const { return offsets[lane * n]; }
  __device__ int64_t total(int64_t lane) const {
    const int64_t last = lane * n + n - 1;
    return offsets[last] + flags[last] - base(lane);
  }
};

class CudaEpisodeOps final : public EpisodeOpsOn<CudaLoop> {
 public:
  using EpisodeOpsOn::EpisodeOpsOn;
  // In three passes, so the ring is filled in env order as on the CPU whatever order the threads
  // run in: flag the envs that ended, an exclusive scan gives each its k (CUB, into preallocated
  // scratch), then each stores its episode and one thread per lane advances the count.
  void CollectEpisodes(const uint8_t* terminated, const uint8_t* truncated, const float* returns,
                       const int32_t* lengths, int64_t lanes, int64_t n, const EpisodeRing* rings) override {
    const int64_t envs = lanes * n;
    if (envs <= 0) return;
    Reserve(envs);
    int32_t* flags = flags_.data();
    loop_(envs, [=] __device__(int64_t i) { flags[i] = (terminated[i] | truncated[i]) != 0; });
    std::size_t bytes = scan_scratch_.size();
    CUGYM_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(scan_scratch_.data(), bytes, flags_.data(), offsets_.data(),
                                                   static_cast<int>(envs), loop_.stream));
    const LaneSpan span{flags_.data(), offsets_.data(), n};
    loop_(envs, [=] __device__(int64_t i) {
      if (!span.flags[i]) return;
      const int64_t lane = i / span.n;
      const EpisodeRing& ring = rings[lane];
      StoreEpisode(ring, *ring.count, span.offsets[i] - span.base(lane), span.total(lane), returns[i], lengths[i]);
    });
    loop_(lanes,
          [=] __device__(int64_t lane) { *rings[lane].count += static_cast<unsigned long long>(span.total(lane)); });
  }

 private:
  // Scratch for CollectEpisodes over n envs, allocated on first use (before any graph capture)
  // and grown only for a larger n.
  void Reserve(int64_t n) {
    if (static_cast<int64_t>(flags_.size()) >= n) return;
    if (n > 0x7fffffff) throw std::invalid_argument("CollectEpisodes: more than 2^31 - 1 envs");
    flags_ = Buffer<int32_t>(Device::kCuda, n);
    offsets_ = Buffer<int32_t>(Device::kCuda, n);
    std::size_t bytes = 0;
    CUGYM_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, flags_.data(), offsets_.data(), static_cast<int>(n),
                                                   loop_.stream));
    scan_scratch_ = Buffer<unsigned char>(Device::kCuda, bytes > 0 ? bytes : 1);  // null means 'query' to CUB
  }

  Buffer<int32_t> flags_, offsets_;
  Buffer<unsigned char> scan_scratch_;
};

}  // namespace

// Called by MakeOps (device_ops_cpu.cpp).
template <class Ops>
std::unique_ptr<Ops> MakeCudaOps(void* stream) {
  return MakeOpsOn<Ops, CudaEpisodeOps, CudaReplayOps>(CudaLoop{static_cast<cudaStream_t>(stream)});
}
#define CUGYM_INSTANTIATE(Ops) template std::unique_ptr<Ops> MakeCudaOps(void*);
CUGYM_EACH_OPS_FAMILY(CUGYM_INSTANTIATE)
#undef CUGYM_INSTANTIATE

}  // namespace cugym::agent
