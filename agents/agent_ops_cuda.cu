// The CUDA implementation of AgentOps: one Thrust for_each per call on the nn back end's stream
// (AddTransitions and Sample: one more for the head or counter; CollectEpisodes: a CUB scan and
// three more; PpoLoss, NormalizeObservations and ScaleRewards: one per pass), no host synchronisation or allocation, so
// the iteration's kernels can be captured into a CUDA graph with the network's.
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/system/cuda/execution_policy.h>
#include <cub/device/device_scan.cuh>

#include <stdexcept>

#include "agents/agent_ops.h"
#include "core/error.h"
#include "core/memory.h"

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
  const float *obs, *rewards, *next_obs, *final_obs;
  const int32_t* actions;
  const uint8_t *terminated, *truncated;
  const float* action_values;
  __device__ void operator()(int64_t i) const {
    AddTransition(replay, i, obs, actions, rewards, next_obs, final_obs, terminated, truncated, action_values);
  }
};

struct AdvanceReplayFunctor {
  ReplayArrays replay;
  int64_t n;
  __device__ void operator()(int64_t) const { AdvanceReplay(replay, n); }
};

struct SampleFunctor {
  ReplayArrays replay;
  Minibatch batch;
  PriorityTree tree;
  int64_t batch_size;
  uint64_t seed;
  int n_step;
  float gamma;
  __device__ void operator()(int64_t j) const {
    SampleTransition(replay, batch, tree, batch_size, seed, n_step, gamma, j);
  }
};

// One thread per lane.
struct MinProbabilityFunctor {
  PriorityTree tree;
  Minibatch batch;
  int64_t n;
  int obs_dim;
  __device__ void operator()(int64_t lane) const { MinProbability(Lane(tree, lane), Lane(batch, lane, n, obs_dim), n); }
};

struct WeightFunctor {
  PriorityTree tree;
  Minibatch batch;
  const uint32_t* draws;
  int64_t n;  // per lane
  int obs_dim;
  __device__ void operator()(int64_t j) const {
    const int64_t lane = j / n;
    ImportanceWeight(Lane(tree, lane), Lane(batch, lane, n, obs_dim), *draws, j - lane * n);
  }
};

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

struct ExploreLaneFunctor {
  int32_t* actions;
  const StepCounters* counters;
  EpsilonSchedule schedule;
  const uint64_t* seeds;
  int64_t n;
  int num_actions;
  ExploreHold hold;
  __device__ void operator()(int64_t i) const {
    ExploreLane(actions, counters, schedule, seeds, n, num_actions, hold, i);
  }
};

struct AdvanceStepsFunctor {
  StepCounters* counters;
  int64_t n;
  __device__ void operator()(int64_t) const { AdvanceSteps(counters, n); }
};

struct TargetFunctor {
  const float *rewards, *bootstrap, *next_q;
  float* targets;
  __device__ void operator()(int64_t j) const { TdTarget(rewards, bootstrap, next_q, targets, j); }
};

// CollectEpisodes in three passes, so the ring is filled in env order as on the CPU whatever
// order the threads run in: flag the envs that ended, an exclusive scan gives each its k (CUB,
// into preallocated scratch), then each stores its episode and one thread advances the count.
struct EndedFunctor {
  const uint8_t *terminated, *truncated;
  int32_t* flags;
  __device__ void operator()(int64_t i) const { flags[i] = (terminated[i] | truncated[i]) != 0; }
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

struct StoreEpisodeFunctor {
  LaneSpan span;
  const float* returns;
  const int32_t* lengths;
  const EpisodeRing* rings;
  __device__ void operator()(int64_t i) const {
    if (!span.flags[i]) return;
    const int64_t lane = i / span.n;
    const EpisodeRing& ring = rings[lane];
    StoreEpisode(ring, *ring.count, span.offsets[i] - span.base(lane), span.total(lane), returns[i], lengths[i]);
  }
};

struct AdvanceCountFunctor {
  LaneSpan span;
  const EpisodeRing* rings;
  __device__ void operator()(int64_t lane) const {
    *rings[lane].count += static_cast<unsigned long long>(span.total(lane));
  }
};

struct EvalEpisodeFunctor {
  EvalRecord record;
  const uint8_t *terminated, *truncated;
  const float* returns;
  const int32_t* lengths;
  int64_t step;
  unsigned long long* recorded;
  __device__ void operator()(int64_t i) const {
    if (RecordEvalEpisode(record, terminated, truncated, returns, lengths, step, i)) atomicAdd(recorded, 1ull);
  }
};

struct StoreRolloutFunctor {
  RolloutArrays r;
  int64_t t;
  const float *obs, *final_obs, *rewards;
  const uint8_t *terminated, *truncated;
  __device__ void operator()(int64_t i) const {
    StoreRolloutStep(r, t, obs, final_obs, rewards, terminated, truncated, i);
  }
};

struct QLambdaFunctor {
  RolloutArrays r;
  double gamma, lambda, reward_scale;
  __device__ void operator()(int64_t i) const { QLambdaColumn(r, gamma, lambda, reward_scale, i); }
};

struct GatherFunctor {
  RolloutArrays r;
  GatherColumns columns;
  int64_t first, size;
  const StepCounters* counters;
  const uint64_t* seeds;
  int64_t epoch;
  __device__ void operator()(int64_t e) const { GatherRow(r, columns, first, size, counters, seeds, epoch, e); }
};

struct StageNextObsFunctor {
  RolloutArrays r;
  int64_t first, count;
  float* staged;
  __device__ void operator()(int64_t e) const { StageNextObsRow(r, first, count, staged, e); }
};

struct UnstageValueFunctor {
  RolloutArrays r;
  int64_t first, count;
  const float* values;
  __device__ void operator()(int64_t e) const { UnstageValue(r, first, count, values, e); }
};

#include "agents/ppo_functors_cuda.cuh"  // GaeFunctor .. ScaleRewardFunctor, in this namespace
#include "agents/sac_functors_cuda.cuh"  // SacSampleFunctor .. SacActorReduceFunctor

class CudaAgentOps final : public AgentOps {
 public:
  explicit CudaAgentOps(void* stream) : stream_(static_cast<cudaStream_t>(stream)) {}

  void DoWriteTransitions(const ReplayArrays& replay, int64_t n, const float* obs, const int32_t* actions,
                          const float* rewards, const float* next_obs, const float* final_obs,
                          const uint8_t* terminated, const uint8_t* truncated, const float* action_values) override {
    ForEach(stream_, replay.lanes * n,
            AddFunctor{replay, obs, rewards, next_obs, final_obs, actions, terminated, truncated, action_values});
  }
  void AdvanceReplay(const ReplayArrays& replay, int64_t n) override {
    ForEach(stream_, 1, AdvanceReplayFunctor{replay, n});
  }
  void Sample(const ReplayArrays& replay, const Minibatch& batch, int64_t batch_size, uint64_t seed, int n_step,
              float gamma, const PriorityTree& tree) override {
    ForEach(stream_, replay.lanes * batch_size, SampleFunctor{replay, batch, tree, batch_size, seed, n_step, gamma});
    if (tree.nodes != nullptr) {
      ForEach(stream_, replay.lanes, MinProbabilityFunctor{tree, batch, batch_size, replay.obs_dim});
      ForEach(stream_, replay.lanes * batch_size, WeightFunctor{tree, batch, replay.draws, batch_size, replay.obs_dim});
    }
    ForEach(stream_, 1, AdvanceDrawFunctor{replay.draws});
  }
  void PrioritizeNewRows(const ReplayArrays& replay, const PriorityTree& tree, int64_t n) override {
    if (n <= 0) return;
    PrioritizeNewRowsKernel<<<static_cast<unsigned>(tree.lanes), kTreeThreads, 0, stream_>>>(tree, replay.head, n,
                                                                                             replay.capacity);
    CUGYM_CUDA_CHECK_LAST();
  }
  void UpdatePriorities(const PriorityTree& tree, const int64_t* rows, const float* errors, int64_t n) override {
    if (n <= 0) return;
    UpdatePrioritiesKernel<<<static_cast<unsigned>(tree.lanes), kTreeThreads, 0, stream_>>>(tree, rows, errors, n);
    CUGYM_CUDA_CHECK_LAST();
  }
  void EpsilonGreedy(int32_t* actions, int64_t n, float epsilon, int num_actions, uint32_t step_key,
                     const ExploreHold& hold) override {
    ForEach(stream_, n, EpsilonFunctor{actions, epsilon, num_actions, step_key, hold});
  }
  void Explore(int32_t* actions, int64_t lanes, int64_t n, const StepCounters* counters,
               const EpsilonSchedule& schedule, const uint64_t* seeds, int num_actions,
               const ExploreHold& hold) override {
    ForEach(stream_, lanes * n, ExploreLaneFunctor{actions, counters, schedule, seeds, n, num_actions, hold});
  }
  void RecordEvalEpisodes(const EvalRecord& record, const uint8_t* terminated, const uint8_t* truncated,
                          const float* returns, const int32_t* lengths, int64_t n, int64_t step,
                          unsigned long long* recorded) override {
    ForEach(stream_, n, EvalEpisodeFunctor{record, terminated, truncated, returns, lengths, step, recorded});
  }
  void AdvanceSteps(StepCounters* counters, int64_t n) override {
    ForEach(stream_, 1, AdvanceStepsFunctor{counters, n});
  }
  void TdTargets(const float* rewards, const float* bootstrap, const float* next_q, float* targets,
                 int64_t n) override {
    ForEach(stream_, n, TargetFunctor{rewards, bootstrap, next_q, targets});
  }
  void CollectEpisodes(const uint8_t* terminated, const uint8_t* truncated, const float* returns,
                       const int32_t* lengths, int64_t lanes, int64_t n, const EpisodeRing* rings) override {
    const int64_t envs = lanes * n;
    if (envs <= 0) return;
    Reserve(envs);
    ForEach(stream_, envs, EndedFunctor{terminated, truncated, flags_.data()});
    std::size_t bytes = scan_scratch_.size();
    CUGYM_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(scan_scratch_.data(), bytes, flags_.data(), offsets_.data(),
                                                   static_cast<int>(envs), stream_));
    const LaneSpan span{flags_.data(), offsets_.data(), n};
    ForEach(stream_, envs, StoreEpisodeFunctor{span, returns, lengths, rings});
    ForEach(stream_, lanes, AdvanceCountFunctor{span, rings});
  }
  void StoreRolloutStep(const RolloutArrays& r, int64_t t, const float* obs, const float* final_obs,
                        const float* rewards, const uint8_t* terminated, const uint8_t* truncated) override {
    ForEach(stream_, r.envs, StoreRolloutFunctor{r, t, obs, final_obs, rewards, terminated, truncated});
  }
  void QLambdaTargets(const RolloutArrays& r, double gamma, double lambda, double reward_scale) override {
    ForEach(stream_, r.envs, QLambdaFunctor{r, gamma, lambda, reward_scale});
  }
  void GatherMinibatch(const RolloutArrays& r, const GatherColumns& columns, int64_t first, int64_t size,
                       const StepCounters* counters, const uint64_t* seeds, int64_t epoch) override {
    ForEach(stream_, r.lanes * size, GatherFunctor{r, columns, first, size, counters, seeds, epoch});
  }
  void StageNextObs(const RolloutArrays& r, int64_t first, int64_t count, float* staged) override {
    ForEach(stream_, r.lanes * count, StageNextObsFunctor{r, first, count, staged});
  }
  void UnstageValues(const RolloutArrays& r, int64_t first, int64_t count, const float* values) override {
    ForEach(stream_, r.lanes * count, UnstageValueFunctor{r, first, count, values});
  }
  void GaeAdvantages(const GaeArrays& r, double gamma, double lambda) override {
    ForEach(stream_, r.envs, GaeFunctor{r, gamma, lambda});
  }
  void SamplePolicy(const PolicyHead& head, const float* outputs, int64_t lanes, int64_t n,
                    const StepCounters* counters, const uint64_t* seeds, bool deterministic,
                    const PolicySample& out) override {
    ForEach(stream_, lanes * n, SamplePolicyFunctor{head, outputs, n, counters, seeds, deterministic, out});
  }
  void ClipJointGradNorm(const GradSpans& spans, int64_t replicas, double max_norm, double* partials, float* norms,
                         float* scale) override {
    ForEach(stream_, replicas * kGradNormPartials, JointGradPartialFunctor{spans, partials});
    ForEach(stream_, replicas, JointGradNormFunctor{partials, max_norm, norms, scale});
    for (int k = 0; k < spans.num; ++k) ForEach(stream_, replicas * spans.count[k], ScaleGradFunctor{spans, k, scale});
  }
  void PpoLoss(const PolicyHead& head, const PpoBatch& batch, const PpoLossConfig& config) override {
    ForEach(stream_, batch.lanes, AdvantageMomentsFunctor{batch});
    ForEach(stream_, batch.lanes * batch.rows, PpoRowFunctor{head, batch, config});
    ForEach(stream_, batch.lanes * PpoReduceThreads(head), PpoReduceFunctor{head, batch, config});
  }
  void SacSamplePolicy(const SacHead& head, const float* outputs, int64_t lanes, int64_t rows, const SacKey& key,
                       bool random, const SacSample& out) override {
    ForEach(stream_, lanes * rows, SacSampleFunctor{head, outputs, rows, key, random, out});
  }
  void SacJoin(const float* obs, int obs_dim, const float* actions, int dims, int64_t rows, float* out) override {
    ForEach(stream_, rows, SacJoinFunctor{obs, obs_dim, actions, dims, out});
  }
  void SacCriticLoss(const SacCriticBatch& b) override {
    ForEach(stream_, b.lanes * b.rows, SacCriticRowFunctor{b});
    ForEach(stream_, b.lanes, SacCriticReduceFunctor{b});
  }
  void SacActorPick(const SacActorBatch& b) override { ForEach(stream_, b.lanes * b.rows, SacActorPickFunctor{b}); }
  void SacActorGrads(const SacHead& head, const SacActorBatch& b) override {
    ForEach(stream_, b.lanes * b.rows, SacActorGradFunctor{head, b});
    ForEach(stream_, b.lanes, SacActorReduceFunctor{b});
  }
  void NormalizeObservations(const RunningMoments& m, const float* obs, float* out, int64_t n, bool frozen,
                             double clip) override {
    if (!frozen) {
      ForEach(stream_, m.lanes * m.dim, UpdateMomentsFunctor{m, obs, n});
      ForEach(stream_, m.lanes, AdvanceMomentsCountFunctor{m, n});
    }
    ForEach(stream_, m.lanes * n * m.dim, NormalizeObsFunctor{m, obs, out, n, clip});
  }
  void ScaleRewards(const RewardScaler& s, const float* rewards, const uint8_t* terminated, const uint8_t* truncated,
                    float* scaled, int64_t n, bool frozen, double clip) override {
    ForEach(stream_, s.moments.lanes, LaneReturnsFunctor{s, rewards, n, frozen});
    ForEach(stream_, s.moments.lanes * n, ScaleRewardFunctor{s, rewards, terminated, truncated, scaled, n, clip});
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
    CUGYM_CUDA_CHECK(
        cub::DeviceScan::ExclusiveSum(nullptr, bytes, flags_.data(), offsets_.data(), static_cast<int>(n), stream_));
    scan_scratch_ = Buffer<unsigned char>(Device::kCuda, bytes > 0 ? bytes : 1);  // null means 'query' to CUB
  }

  cudaStream_t stream_;
  Buffer<int32_t> flags_, offsets_;
  Buffer<unsigned char> scan_scratch_;
};

}  // namespace

std::unique_ptr<AgentOps> MakeCudaAgentOps(void* stream) { return std::make_unique<CudaAgentOps>(stream); }

}  // namespace cugym::agent
