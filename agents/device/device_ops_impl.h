// Internal to agents/ (not installed): every family's device ops written once, as loop bodies that
// a Loop runs over [0, n): CpuLoop (below) as a plain loop in device_ops_cpu.cpp, CudaLoop as one
// Thrust for_each on the stream in device_ops_cuda.cu (nvcc with --extended-lambda, where
// CUGYM_BODY marks the body __device__). Each body calls the CUGYM_HD kernel its op names, so the
// two back ends give the same bits. The few ops whose CUDA form is not a loop over elements (the
// priority trees' block-wide updates, the episodes' scan) are each back end's own.
#pragma once

#include <cstdint>
#include <memory>
#include <type_traits>

#include "agents/common/episode_ops.h"
#include "agents/common/explore_ops.h"
#include "agents/common/policy_ops.h"
#include "agents/off_policy/replay_ops.h"
#include "agents/off_policy/sac_ops.h"
#include "agents/on_policy/ppo_ops.h"
#include "agents/on_policy/rollout_ops.h"

#if defined(__CUDACC__)
#define CUGYM_BODY [=] __device__
#else
#define CUGYM_BODY [=]
#endif

namespace cugym::agent {

struct CpuLoop {
  template <class Body>
  void operator()(int64_t n, const Body& body) const {
    for (int64_t i = 0; i < n; ++i) body(i);
  }
  static void Increment(unsigned long long* count) { ++*count; }
};

// CollectEpisodes is the back end's.
template <class Loop>
class EpisodeOpsOn : public EpisodeOps {
 public:
  explicit EpisodeOpsOn(Loop loop = {}) : loop_(loop) {}
  void AdvanceSteps(StepCounters* counters, int64_t n) override {
    loop_(
        1, CUGYM_BODY(int64_t) { agent::AdvanceSteps(counters, n); });
  }
  void RecordEvalEpisodes(const EvalRecord& record, const uint8_t* terminated, const uint8_t* truncated,
                          const float* returns, const int32_t* lengths, int64_t n, int64_t step,
                          unsigned long long* recorded) override {
    loop_(
        n, CUGYM_BODY(int64_t i) {
          if (RecordEvalEpisode(record, terminated, truncated, returns, lengths, step, i)) Loop::Increment(recorded);
        });
  }

 protected:
  Loop loop_;
};

// PrioritizeNewRows and UpdatePriorities are the back end's.
template <class Loop>
class ReplayOpsOn : public ReplayOps {
 public:
  explicit ReplayOpsOn(Loop loop = {}) : loop_(loop) {}
  void DoWriteTransitions(const ReplayArrays& replay, int64_t n, const float* obs, const int32_t* actions,
                          const float* rewards, const float* next_obs, const float* final_obs,
                          const uint8_t* terminated, const uint8_t* truncated, const float* action_values) override {
    loop_(
        replay.lanes * n, CUGYM_BODY(int64_t i) {
          AddTransition(replay, i, obs, actions, rewards, next_obs, final_obs, terminated, truncated, action_values);
        });
  }
  void AdvanceReplay(const ReplayArrays& replay, int64_t n) override {
    loop_(
        1, CUGYM_BODY(int64_t) { agent::AdvanceReplay(replay, n); });
  }
  void Sample(const ReplayArrays& replay, const Minibatch& batch, int64_t batch_size, uint64_t seed, int n_step,
              float gamma, const PriorityTree& tree) override {
    loop_(
        replay.lanes * batch_size,
        CUGYM_BODY(int64_t j) { SampleTransition(replay, batch, tree, batch_size, seed, n_step, gamma, j); });
    if (tree.nodes != nullptr) {
      const int obs_dim = replay.obs_dim;
      loop_(
          replay.lanes, CUGYM_BODY(int64_t lane) {
            MinProbability(Lane(tree, lane), Lane(batch, lane, batch_size, obs_dim), batch_size);
          });
      const uint32_t* draws = replay.draws;
      loop_(
          replay.lanes * batch_size, CUGYM_BODY(int64_t j) {
            const int64_t lane = j / batch_size;
            ImportanceWeight(Lane(tree, lane), Lane(batch, lane, batch_size, obs_dim), *draws, j - lane * batch_size);
          });
    }
    uint32_t* draws = replay.draws;
    loop_(
        1, CUGYM_BODY(int64_t) { ++*draws; });
  }
  void TdTargets(const float* rewards, const float* bootstrap, const float* next_q, float* targets,
                 int64_t n) override {
    loop_(
        n, CUGYM_BODY(int64_t j) { TdTarget(rewards, bootstrap, next_q, targets, j); });
  }

 protected:
  Loop loop_;
};

template <class Loop>
class ExploreOpsOn final : public ExploreOps {
 public:
  explicit ExploreOpsOn(Loop loop = {}) : loop_(loop) {}
  void EpsilonGreedy(int32_t* actions, int64_t n, float epsilon, int num_actions, uint32_t step_key,
                     const ExploreHold& hold) override {
    loop_(
        n, CUGYM_BODY(int64_t i) { agent::EpsilonGreedy(actions, epsilon, num_actions, step_key, hold, i); });
  }
  void Explore(int32_t* actions, int64_t lanes, int64_t n, const StepCounters* counters,
               const EpsilonSchedule& schedule, const uint64_t* seeds, int num_actions,
               const ExploreHold& hold) override {
    loop_(
        lanes * n, CUGYM_BODY(int64_t i) { ExploreLane(actions, counters, schedule, seeds, n, num_actions, hold, i); });
  }

 private:
  Loop loop_;
};

template <class Loop>
class RolloutOpsOn final : public RolloutOps {
 public:
  explicit RolloutOpsOn(Loop loop = {}) : loop_(loop) {}
  void StoreRolloutStep(const RolloutArrays& r, int64_t t, const float* obs, const float* final_obs,
                        const float* rewards, const uint8_t* terminated, const uint8_t* truncated) override {
    loop_(
        r.envs,
        CUGYM_BODY(int64_t i) { agent::StoreRolloutStep(r, t, obs, final_obs, rewards, terminated, truncated, i); });
  }
  void GatherMinibatch(const RolloutArrays& r, const GatherColumns& columns, int64_t first, int64_t size,
                       const StepCounters* counters, const uint64_t* seeds, int64_t epoch) override {
    loop_(
        r.lanes * size, CUGYM_BODY(int64_t e) { GatherRow(r, columns, first, size, counters, seeds, epoch, e); });
  }
  void GaeAdvantages(const GaeArrays& r, double gamma, double lambda) override {
    loop_(
        r.envs, CUGYM_BODY(int64_t e) { GaeColumn(r, gamma, lambda, e); });
  }
  void QLambdaTargets(const RolloutArrays& r, double gamma, double lambda, double reward_scale) override {
    loop_(
        r.envs, CUGYM_BODY(int64_t i) { QLambdaColumn(r, gamma, lambda, reward_scale, i); });
  }
  void StageNextObs(const RolloutArrays& r, int64_t first, int64_t count, float* staged) override {
    loop_(
        r.lanes * count, CUGYM_BODY(int64_t e) { StageNextObsRow(r, first, count, staged, e); });
  }
  void UnstageValues(const RolloutArrays& r, int64_t first, int64_t count, const float* values) override {
    loop_(
        r.lanes * count, CUGYM_BODY(int64_t e) { UnstageValue(r, first, count, values, e); });
  }

 private:
  Loop loop_;
};

template <class Loop>
class PolicyOpsOn final : public PolicyOps {
 public:
  explicit PolicyOpsOn(Loop loop = {}) : loop_(loop) {}
  void SamplePolicy(const PolicyHead& head, const float* outputs, int64_t lanes, int64_t n,
                    const StepCounters* counters, const uint64_t* seeds, bool deterministic,
                    const PolicySample& out) override {
    loop_(
        lanes * n,
        CUGYM_BODY(int64_t e) { SamplePolicyRow(head, outputs, n, counters, seeds, deterministic, out, e); });
  }
  void NormalizeObservations(const RunningMoments& m, const float* obs, float* out, int64_t n, bool frozen,
                             double clip) override {
    if (!frozen) {
      loop_(
          m.lanes * m.dim, CUGYM_BODY(int64_t j) { UpdateMomentsFeature(m, obs, n, j); });
      loop_(
          m.lanes, CUGYM_BODY(int64_t l) { AdvanceCount(m, n, l); });
    }
    loop_(
        m.lanes * n * m.dim, CUGYM_BODY(int64_t j) { NormalizeObservation(m, obs, out, n, clip, j); });
  }
  void ScaleRewards(const RewardScaler& s, const float* rewards, const uint8_t* terminated, const uint8_t* truncated,
                    float* scaled, int64_t n, bool frozen, double clip) override {
    loop_(
        s.moments.lanes, CUGYM_BODY(int64_t l) { AccumulateLaneReturns(s, rewards, n, frozen, l); });
    loop_(
        s.moments.lanes * n,
        CUGYM_BODY(int64_t i) { ScaleReward(s, rewards, terminated, truncated, scaled, n, clip, i); });
  }

 private:
  Loop loop_;
};

template <class Loop>
class PpoOpsOn final : public PpoOps {
 public:
  explicit PpoOpsOn(Loop loop = {}) : loop_(loop) {}
  void ClipJointGradNorm(const GradSpans& spans, int64_t replicas, double max_norm, double* partials, float* norms,
                         float* scale) override {
    loop_(
        replicas * kGradNormPartials, CUGYM_BODY(int64_t t) { JointGradPartial(spans, partials, t); });
    loop_(
        replicas, CUGYM_BODY(int64_t r) { JointGradNorm(partials, max_norm, norms, scale, r); });
    for (int k = 0; k < spans.num; ++k)
      loop_(
          replicas * spans.count[k], CUGYM_BODY(int64_t e) { ScaleGradElement(spans, k, scale, e); });
  }
  void PpoLoss(const PolicyHead& head, const PpoBatch& batch, const PpoLossConfig& config) override {
    // The lanes' advantage moments (one per lane), the rows, then the per-lane sums, each looping
    // over its lane's rows in order.
    loop_(
        batch.lanes, CUGYM_BODY(int64_t l) { PpoAdvantageMoments(batch, l); });
    loop_(
        batch.lanes * batch.rows, CUGYM_BODY(int64_t row) { PpoRowLoss(head, batch, config, row); });
    loop_(
        batch.lanes * PpoReduceThreads(head), CUGYM_BODY(int64_t j) { PpoLaneReduce(head, batch, config, j); });
  }

 private:
  Loop loop_;
};

template <class Loop>
class SacOpsOn final : public SacOps {
 public:
  explicit SacOpsOn(Loop loop = {}) : loop_(loop) {}
  void SacSamplePolicy(const SacHead& head, const float* outputs, int64_t lanes, int64_t rows, const SacKey& key,
                       bool random, const SacSample& out) override {
    loop_(
        lanes * rows, CUGYM_BODY(int64_t e) { SacSampleRow(head, outputs, rows, key, random, out, e); });
  }
  void SacJoin(const float* obs, int obs_dim, const float* actions, int dims, int64_t rows, float* out) override {
    loop_(
        rows, CUGYM_BODY(int64_t r) { SacJoinRow(obs, obs_dim, actions, dims, out, r); });
  }
  void SacCriticLoss(const SacCriticBatch& b) override {
    loop_(
        b.lanes * b.rows, CUGYM_BODY(int64_t j) { SacCriticRow(b, j); });
    loop_(
        b.lanes, CUGYM_BODY(int64_t l) { SacCriticReduce(b, l); });
  }
  void SacActorPick(const SacActorBatch& b) override {
    loop_(
        b.lanes * b.rows, CUGYM_BODY(int64_t j) { SacActorPickRow(b, j); });
  }
  void SacActorGrads(const SacHead& head, const SacActorBatch& b) override {
    loop_(
        b.lanes * b.rows, CUGYM_BODY(int64_t j) { SacActorGradRow(head, b, j); });
    loop_(
        b.lanes, CUGYM_BODY(int64_t l) { SacActorReduce(b, l); });
  }

 private:
  Loop loop_;
};

// Family Ops run by `loop`: Episodes and Replay are the back end's classes for the two families
// with ops of their own (EpisodeOpsOn, ReplayOpsOn completed), the rest written wholly above.
template <class Ops, class Episodes, class Replay, class Loop>
std::unique_ptr<Ops> MakeOpsOn(Loop loop) {
  if constexpr (std::is_same_v<Ops, EpisodeOps>)
    return std::make_unique<Episodes>(loop);
  else if constexpr (std::is_same_v<Ops, ReplayOps>)
    return std::make_unique<Replay>(loop);
  else if constexpr (std::is_same_v<Ops, ExploreOps>)
    return std::make_unique<ExploreOpsOn<Loop>>(loop);
  else if constexpr (std::is_same_v<Ops, RolloutOps>)
    return std::make_unique<RolloutOpsOn<Loop>>(loop);
  else if constexpr (std::is_same_v<Ops, PolicyOps>)
    return std::make_unique<PolicyOpsOn<Loop>>(loop);
  else if constexpr (std::is_same_v<Ops, PpoOps>)
    return std::make_unique<PpoOpsOn<Loop>>(loop);
  else
    return std::make_unique<SacOpsOn<Loop>>(loop);
}

// MakeOps and MakeCudaOps for every family (in device_ops_cpu.cpp and device_ops_cuda.cu).
#define CUGYM_EACH_OPS_FAMILY(X) X(EpisodeOps) X(ReplayOps) X(ExploreOps) X(RolloutOps) X(PolicyOps) X(PpoOps) X(SacOps)

}  // namespace cugym::agent
