// The CPU implementation of AgentOps: loops over dqn_kernels.h, pqn_kernels.h and policy_math.h.
#include <stdexcept>
#include <string>

#include "agents/agent_ops.h"

namespace cugym::agent {
namespace {

class CpuAgentOps final : public AgentOps {
 public:
  void DoWriteTransitions(const ReplayArrays& replay, int64_t n, const float* obs, const int32_t* actions,
                          const float* rewards, const float* next_obs, const float* final_obs,
                          const uint8_t* terminated, const uint8_t* truncated, const float* action_values) override {
    for (int64_t i = 0; i < replay.lanes * n; ++i)
      AddTransition(replay, i, obs, actions, rewards, next_obs, final_obs, terminated, truncated, action_values);
  }
  void AdvanceReplay(const ReplayArrays& replay, int64_t n) override { agent::AdvanceReplay(replay, n); }
  void Sample(const ReplayArrays& replay, const Minibatch& batch, int64_t batch_size, uint64_t seed, int n_step,
              float gamma, const PriorityTree& tree) override {
    for (int64_t j = 0; j < replay.lanes * batch_size; ++j)
      SampleTransition(replay, batch, tree, batch_size, seed, n_step, gamma, j);
    if (tree.nodes != nullptr) {
      for (int64_t l = 0; l < replay.lanes; ++l) {
        const PriorityTree lane_tree = Lane(tree, l);
        const Minibatch lane_batch = Lane(batch, l, batch_size, replay.obs_dim);
        MinProbability(lane_tree, lane_batch, batch_size);
        for (int64_t j = 0; j < batch_size; ++j) ImportanceWeight(lane_tree, lane_batch, *replay.draws, j);
      }
    }
    ++*replay.draws;
  }
  void PrioritizeNewRows(const ReplayArrays& replay, const PriorityTree& trees, int64_t n) override {
    int64_t lo[2], hi[2];
    const int ranges = NewRowRanges(*replay.head, n, replay.capacity, lo, hi);
    for (int64_t l = 0; l < trees.lanes; ++l) {
      const PriorityTree tree = Lane(trees, l);
      for (int s = 0; s < ranges; ++s)
        for (int64_t row = lo[s]; row < hi[s]; ++row) tree.nodes[tree.leaves + row] = *tree.max_leaf;
      // Level by level, as the CUDA kernel does (a node's children are final when it is recomputed).
      for (int level = 1; level <= tree.depth; ++level) {
        for (int s = 0; s < ranges; ++s) {
          const int64_t first = (tree.leaves + lo[s]) >> level, last = (tree.leaves + hi[s] - 1) >> level;
          for (int64_t node = first; node <= last; ++node) RefreshNode(tree, node);
        }
      }
    }
  }
  void UpdatePriorities(const PriorityTree& trees, const int64_t* all_rows, const float* all_errors,
                        int64_t n) override {
    for (int64_t l = 0; l < trees.lanes; ++l) {
      const PriorityTree tree = Lane(trees, l);
      const int64_t* rows = all_rows + l * n;
      const float* errors = all_errors + l * n;
      float largest = *tree.max_leaf;
      for (int64_t j = 0; j < n; ++j) {
        if (LaterDuplicate(rows, j, n)) continue;
        const float p = LeafPriority(errors[j], tree.alpha, tree.eps);
        tree.nodes[tree.leaves + rows[j]] = p;
        largest = p > largest ? p : largest;
      }
      *tree.max_leaf = largest;
      for (int level = 1; level <= tree.depth; ++level)
        for (int64_t j = 0; j < n; ++j) RefreshNode(tree, (tree.leaves + rows[j]) >> level);
    }
  }
  void EpsilonGreedy(int32_t* actions, int64_t n, float epsilon, int num_actions, uint32_t step_key,
                     const ExploreHold& hold) override {
    for (int64_t i = 0; i < n; ++i) agent::EpsilonGreedy(actions, epsilon, num_actions, step_key, hold, i);
  }
  void Explore(int32_t* actions, int64_t lanes, int64_t n, const StepCounters* counters,
               const EpsilonSchedule& schedule, const uint64_t* seeds, int num_actions,
               const ExploreHold& hold) override {
    for (int64_t i = 0; i < lanes * n; ++i) ExploreLane(actions, counters, schedule, seeds, n, num_actions, hold, i);
  }
  void AdvanceSteps(StepCounters* counters, int64_t n) override { agent::AdvanceSteps(counters, n); }
  void TdTargets(const float* rewards, const float* bootstrap, const float* next_q, float* targets,
                 int64_t n) override {
    for (int64_t j = 0; j < n; ++j) TdTarget(rewards, bootstrap, next_q, targets, j);
  }
  void CollectEpisodes(const uint8_t* terminated, const uint8_t* truncated, const float* returns,
                       const int32_t* lengths, int64_t lanes, int64_t n, const EpisodeRing* rings) override {
    for (int64_t l = 0; l < lanes; ++l) CollectLaneEpisodes(terminated, truncated, returns, lengths, n, rings, l);
  }
  void RecordEvalEpisodes(const EvalRecord& record, const uint8_t* terminated, const uint8_t* truncated,
                          const float* returns, const int32_t* lengths, int64_t n, int64_t step,
                          unsigned long long* recorded) override {
    for (int64_t i = 0; i < n; ++i)
      *recorded += RecordEvalEpisode(record, terminated, truncated, returns, lengths, step, i) ? 1 : 0;
  }
  void StoreRolloutStep(const RolloutArrays& r, int64_t t, const float* obs, const float* final_obs,
                        const float* rewards, const uint8_t* terminated, const uint8_t* truncated) override {
    for (int64_t i = 0; i < r.envs; ++i)
      agent::StoreRolloutStep(r, t, obs, final_obs, rewards, terminated, truncated, i);
  }
  void QLambdaTargets(const RolloutArrays& r, double gamma, double lambda, double reward_scale) override {
    for (int64_t i = 0; i < r.envs; ++i) QLambdaColumn(r, gamma, lambda, reward_scale, i);
  }
  void GatherMinibatch(const RolloutArrays& r, const GatherColumns& columns, int64_t first, int64_t size,
                       const StepCounters* counters, const uint64_t* seeds, int64_t epoch) override {
    for (int64_t e = 0; e < r.lanes * size; ++e) GatherRow(r, columns, first, size, counters, seeds, epoch, e);
  }

  void StageNextObs(const RolloutArrays& r, int64_t first, int64_t count, float* staged) override {
    for (int64_t e = 0; e < r.lanes * count; ++e) StageNextObsRow(r, first, count, staged, e);
  }
  void UnstageValues(const RolloutArrays& r, int64_t first, int64_t count, const float* values) override {
    for (int64_t e = 0; e < r.lanes * count; ++e) UnstageValue(r, first, count, values, e);
  }
  void GaeAdvantages(const GaeArrays& r, double gamma, double lambda) override {
    for (int64_t e = 0; e < r.envs; ++e) GaeColumn(r, gamma, lambda, e);
  }
  void SamplePolicy(const PolicyHead& head, const float* outputs, int64_t lanes, int64_t n,
                    const StepCounters* counters, const uint64_t* seeds, bool deterministic,
                    const PolicySample& out) override {
    for (int64_t e = 0; e < lanes * n; ++e) SamplePolicyRow(head, outputs, n, counters, seeds, deterministic, out, e);
  }

  void ClipJointGradNorm(const GradSpans& spans, int64_t replicas, double max_norm, double* partials, float* norms,
                         float* scale) override {
    for (int64_t t = 0; t < replicas * kGradNormPartials; ++t) JointGradPartial(spans, partials, t);
    for (int64_t r = 0; r < replicas; ++r) JointGradNorm(partials, max_norm, norms, scale, r);
    for (int k = 0; k < spans.num; ++k)
      for (int64_t e = 0; e < replicas * spans.count[k]; ++e) ScaleGradElement(spans, k, scale, e);
  }
  void PpoLoss(const PolicyHead& head, const PpoBatch& batch, const PpoLossConfig& config) override {
    for (int64_t l = 0; l < batch.lanes; ++l) PpoAdvantageMoments(batch, l);
    for (int64_t row = 0; row < batch.lanes * batch.rows; ++row) PpoRowLoss(head, batch, config, row);
    for (int64_t j = 0; j < batch.lanes * PpoReduceThreads(head); ++j) PpoLaneReduce(head, batch, config, j);
  }
  void SacSamplePolicy(const SacHead& head, const float* outputs, int64_t lanes, int64_t rows, const SacKey& key,
                       bool random, const SacSample& out) override {
    for (int64_t e = 0; e < lanes * rows; ++e) SacSampleRow(head, outputs, rows, key, random, out, e);
  }
  void SacJoin(const float* obs, int obs_dim, const float* actions, int dims, int64_t rows, float* out) override {
    for (int64_t r = 0; r < rows; ++r) SacJoinRow(obs, obs_dim, actions, dims, out, r);
  }
  void SacCriticLoss(const SacCriticBatch& b) override {
    for (int64_t j = 0; j < b.lanes * b.rows; ++j) SacCriticRow(b, j);
    for (int64_t l = 0; l < b.lanes; ++l) SacCriticReduce(b, l);
  }
  void SacActorPick(const SacActorBatch& b) override {
    for (int64_t j = 0; j < b.lanes * b.rows; ++j) SacActorPickRow(b, j);
  }
  void SacActorGrads(const SacHead& head, const SacActorBatch& b) override {
    for (int64_t j = 0; j < b.lanes * b.rows; ++j) SacActorGradRow(head, b, j);
    for (int64_t l = 0; l < b.lanes; ++l) SacActorReduce(b, l);
  }
  void NormalizeObservations(const RunningMoments& m, const float* obs, float* out, int64_t n, bool frozen,
                             double clip) override {
    if (!frozen) {
      for (int64_t j = 0; j < m.lanes * m.dim; ++j) UpdateMomentsFeature(m, obs, n, j);
      for (int64_t l = 0; l < m.lanes; ++l) AdvanceCount(m, n, l);
    }
    for (int64_t j = 0; j < m.lanes * n * m.dim; ++j) NormalizeObservation(m, obs, out, n, clip, j);
  }
  void ScaleRewards(const RewardScaler& s, const float* rewards, const uint8_t* terminated, const uint8_t* truncated,
                    float* scaled, int64_t n, bool frozen, double clip) override {
    for (int64_t l = 0; l < s.moments.lanes; ++l) AccumulateLaneReturns(s, rewards, n, frozen, l);
    for (int64_t i = 0; i < s.moments.lanes * n; ++i)
      ScaleReward(s, rewards, terminated, truncated, scaled, n, clip, i);
  }
};

}  // namespace

void AgentOps::WriteTransitions(const ReplayArrays& replay, int64_t n, const float* obs, const int32_t* actions,
                                const float* rewards, const float* next_obs, const float* final_obs,
                                const uint8_t* terminated, const uint8_t* truncated, const float* action_values) {
  if (n > replay.capacity)
    throw std::invalid_argument("AddTransitions: " + std::to_string(n) +
                                " transitions in one step exceed the replay capacity " +
                                std::to_string(replay.capacity));
  DoWriteTransitions(replay, n, obs, actions, rewards, next_obs, final_obs, terminated, truncated, action_values);
}

void AgentOps::AddTransitions(const ReplayArrays& replay, int64_t n, const float* obs, const int32_t* actions,
                              const float* rewards, const float* next_obs, const float* final_obs,
                              const uint8_t* terminated, const uint8_t* truncated, const float* action_values) {
  WriteTransitions(replay, n, obs, actions, rewards, next_obs, final_obs, terminated, truncated, action_values);
  AdvanceReplay(replay, n);
}

std::unique_ptr<AgentOps> MakeCpuAgentOps() { return std::make_unique<CpuAgentOps>(); }

std::unique_ptr<AgentOps> MakeAgentOps(Device device, void* stream) {
  if (device == Device::kCpu) return MakeCpuAgentOps();
#ifdef CUGYM_HAVE_CUDA
  return MakeCudaAgentOps(stream);
#else
  (void)stream;
  throw std::invalid_argument("this cugym was built without CUDA");
#endif
}

}  // namespace cugym::agent
