// The PPO ops' Thrust functors for agent_ops_cuda.cu (included there, inside its anonymous
// namespace): each runs one CUGYM_HD function of policy_math.h, ppo_loss_kernels.h or
// normalizer_kernels.h per element. Kept apart so that the one Thrust file stays readable.
#pragma once

struct GaeFunctor {
  GaeArrays r;
  double gamma, lambda;
  __device__ void operator()(int64_t e) const { GaeColumn(r, gamma, lambda, e); }
};

struct SamplePolicyFunctor {
  PolicyHead head;
  const float* outputs;
  int64_t n;
  const StepCounters* counters;
  const uint64_t* seeds;
  bool deterministic;
  PolicySample out;
  __device__ void operator()(int64_t e) const {
    SamplePolicyRow(head, outputs, n, counters, seeds, deterministic, out, e);
  }
};

// The PPO loss in three launches: the lanes' advantage moments (a thread per lane), the rows
// (a thread per row), then the per-lane sums, each a thread looping over its lane's rows in
// order, as the CPU does.
struct AdvantageMomentsFunctor {
  PpoBatch batch;
  __device__ void operator()(int64_t lane) const { PpoAdvantageMoments(batch, lane); }
};

struct PpoRowFunctor {
  PolicyHead head;
  PpoBatch batch;
  PpoLossConfig config;
  __device__ void operator()(int64_t row) const { PpoRowLoss(head, batch, config, row); }
};

struct PpoReduceFunctor {
  PolicyHead head;
  PpoBatch batch;
  PpoLossConfig config;
  __device__ void operator()(int64_t j) const { PpoLaneReduce(head, batch, config, j); }
};

struct UpdateMomentsFunctor {
  RunningMoments m;
  const float* x;
  int64_t n;
  __device__ void operator()(int64_t j) const { UpdateMomentsFeature(m, x, n, j); }
};

struct AdvanceMomentsCountFunctor {
  RunningMoments m;
  int64_t n;
  __device__ void operator()(int64_t lane) const { AdvanceCount(m, n, lane); }
};

struct NormalizeObsFunctor {
  RunningMoments m;
  const float* obs;
  float* out;
  int64_t n;
  double clip;
  __device__ void operator()(int64_t j) const { NormalizeObservation(m, obs, out, n, clip, j); }
};

struct LaneReturnsFunctor {
  RewardScaler s;
  const float* rewards;
  int64_t n;
  bool frozen;
  __device__ void operator()(int64_t lane) const { AccumulateLaneReturns(s, rewards, n, frozen, lane); }
};

struct ScaleRewardFunctor {
  RewardScaler s;
  const float* rewards;
  const uint8_t *terminated, *truncated;
  float* scaled;
  int64_t n;
  double clip;
  __device__ void operator()(int64_t i) const { ScaleReward(s, rewards, terminated, truncated, scaled, n, clip, i); }
};

struct JointGradPartialFunctor {
  GradSpans spans;
  double* partials;
  __device__ void operator()(int64_t t) const { JointGradPartial(spans, partials, t); }
};

struct JointGradNormFunctor {
  const double* partials;
  double max_norm;
  float* norms;
  float* scale;
  __device__ void operator()(int64_t r) const { JointGradNorm(partials, max_norm, norms, scale, r); }
};

struct ScaleGradFunctor {
  GradSpans spans;
  int k;
  const float* scale;
  __device__ void operator()(int64_t e) const { ScaleGradElement(spans, k, scale, e); }
};
