// The agents' own device work (dqn_kernels.h for DQN, pqn_kernels.h for PQN, policy_math.h for PPO, sac_kernels.h
// for SAC) on one device:
// the CPU runs plain loops, CUDA Thrust launches on the nn back end's stream (queued in order with the network's work
// and capturable into its CUDA graphs; no host synchronisation). No CUDA types here.
#pragma once

#include <cstdint>
#include <memory>

#include "agents/dqn_kernels.h"
#include "agents/normalizer_kernels.h"
#include "agents/policy_math.h"
#include "agents/ppo_loss_kernels.h"
#include "agents/ppo_rollout_kernels.h"
#include "agents/pqn_kernels.h"
#include "agents/rollout_kernels.h"
#include "agents/sac_kernels.h"
#include "core/device.h"

namespace cugym::agent {

class AgentOps {
 public:
  virtual ~AgentOps() = default;
  // Writes the n transitions of one vector step (n per lane, lanes x n in all: replay_kernels.h)
  // at rows head.. of the ring (the device's head), then moves the head and grows the size
  // (AdvanceReplay; on CUDA a second launch). Throws std::invalid_argument when n exceeds the
  // capacity: two envs of one step would share a row.
  // With continuous actions (replay.action_dim > 0) they come from action_values [lanes n][action_dim].
  void AddTransitions(const ReplayArrays& replay, int64_t n, const float* obs, const int32_t* actions,
                      const float* rewards, const float* next_obs, const float* final_obs, const uint8_t* terminated,
                      const uint8_t* truncated, const float* action_values = nullptr);
  // AddTransitions without moving the head: for one lane (a Lane view) of a step whose lanes'
  // transitions come from separate arrays, the head moved once for all by AdvanceReplay after.
  void WriteTransitions(const ReplayArrays& replay, int64_t n, const float* obs, const int32_t* actions,
                        const float* rewards, const float* next_obs, const float* final_obs, const uint8_t* terminated,
                        const uint8_t* truncated, const float* action_values = nullptr);
  virtual void AdvanceReplay(const ReplayArrays& replay, int64_t n) = 0;
  // A minibatch of n-step transitions (NStepTransition) from the stored ones (replay.size,
  // head and draws on the device), batch_size per lane, each lane's drawn as that lane alone
  // would draw it; then the draw counter goes up by one. With a priority tree (tree.nodes set)
  // rows are drawn by priority and batch.rows / batch.weights receive each sample's row (in its
  // lane) and importance weight.
  virtual void Sample(const ReplayArrays& replay, const Minibatch& batch, int64_t batch_size, uint64_t seed, int n_step,
                      float gamma, const PriorityTree& tree) = 0;
  // Prioritized replay: in every lane the n rows the last AddTransitions wrote (just before the
  // device-side head) get the lane's largest priority so far, and its tree is brought up to date.
  virtual void PrioritizeNewRows(const ReplayArrays& replay, const PriorityTree& tree, int64_t n) = 0;
  // Prioritized replay: in each lane l (tree.lanes), sampled rows[l n + j] gets the priority of
  // its TD error errors[l n + j] (LeafPriority; the last of duplicate rows wins), the lane's
  // largest priority is updated and its tree brought up to date.
  virtual void UpdatePriorities(const PriorityTree& tree, const int64_t* rows, const float* errors, int64_t n) = 0;
  // Replaces actions[i] (greedy) by a random action with probability epsilon; `hold` as in
  // dqn_kernels.h ({} for none).
  virtual void EpsilonGreedy(int32_t* actions, int64_t n, float epsilon, int num_actions, uint32_t step_key,
                             const ExploreHold& hold) = 0;
  // EpsilonGreedy for `lanes` lanes of n envs, with epsilon and the step key computed on the device
  // from `counters` (ExploreLane in exploration_kernels.h), so a captured iteration explores as the eager
  // one does: lane l's as its agent alone explores, with seeds[l] (a device array). One lane is a
  // solo run.
  virtual void Explore(int32_t* actions, int64_t lanes, int64_t n, const StepCounters* counters,
                       const EpsilonSchedule& schedule, const uint64_t* seeds, int num_actions,
                       const ExploreHold& hold) = 0;
  // The counters after a vector step of n envs (AdvanceSteps).
  virtual void AdvanceSteps(StepCounters* counters, int64_t n) = 0;
  // targets = rewards + bootstrap * next_q (TdTarget).
  virtual void TdTargets(const float* rewards, const float* bootstrap, const float* next_q, float* targets,
                         int64_t n) = 0;
  // Appends the episodes that ended in this step of `lanes` lanes of n envs to the lanes' rings
  // (rings: a device array), each lane's in env order (StoreEpisode), as a batch of n envs alone
  // appends its own: the same rings on every back end, for any lanes and n.
  virtual void CollectEpisodes(const uint8_t* terminated, const uint8_t* truncated, const float* returns,
                               const int32_t* lengths, int64_t lanes, int64_t n, const EpisodeRing* rings) = 0;

  // An evaluation's step `step` of n envs (RecordEvalEpisode): the episodes that ended in it and
  // count, each env up to its quota, recorded, and *recorded (a device value) raised by their number.
  virtual void RecordEvalEpisodes(const EvalRecord& record, const uint8_t* terminated, const uint8_t* truncated,
                                  const float* returns, const int32_t* lengths, int64_t n, int64_t step,
                                  unsigned long long* recorded) = 0;

  // PQN: rollout step t of the r.envs envs after their step (StoreRolloutStep).
  virtual void StoreRolloutStep(const RolloutArrays& r, int64_t t, const float* obs, const float* final_obs,
                                const float* rewards, const uint8_t* terminated, const uint8_t* truncated) = 0;
  // PQN: the Q(lambda) targets of the whole rollout, one env's column each (QLambdaColumn).
  virtual void QLambdaTargets(const RolloutArrays& r, double gamma, double lambda, double reward_scale) = 0;
  // PQN, PPO: every lane's `size` rows of the minibatch at position `first` of epoch `epoch`'s
  // permutation of its own rollout (r's shape: steps, envs, lanes), each of `columns` copied
  // (GatherRow), keyed by EpochKey of its seed (seeds: a device array of r.lanes) and the device's
  // counters.
  virtual void GatherMinibatch(const RolloutArrays& r, const GatherColumns& columns, int64_t first, int64_t size,
                               const StepCounters* counters, const uint64_t* seeds, int64_t epoch) = 0;
  // PQN: rows first.. first + count - 1 of every lane's next observations side by side in `staged`
  // (StageNextObsRow), and back, their values into r.next_values (UnstageValue).
  virtual void StageNextObs(const RolloutArrays& r, int64_t first, int64_t count, float* staged) = 0;
  virtual void UnstageValues(const RolloutArrays& r, int64_t first, int64_t count, const float* values) = 0;

  // PPO: the GAE(lambda) advantages and returns of the whole rollout, one env's column each (GaeColumn).
  virtual void GaeAdvantages(const GaeArrays& r, double gamma, double lambda) = 0;
  // PPO: the actions of `lanes` lanes of n rows from the actor's outputs [lanes n][head.out] and
  // their log-probabilities (SamplePolicyRow), each lane's drawn as its solo run draws them, with
  // seeds[l] (a device array) at the vector step the device's counters hold; deterministic: the
  // argmax or the mean (evaluation; counters and seeds may be null).
  virtual void SamplePolicy(const PolicyHead& head, const float* outputs, int64_t lanes, int64_t n,
                            const StepCounters* counters, const uint64_t* seeds, bool deterministic,
                            const PolicySample& out) = 0;
  // PPO: each of `replicas` replicas' gradients in `spans` clipped by their joint norm
  // (JointGradPartial into partials [replicas 32], JointGradNorm into norms [replicas], then
  // ScaleGradElement); `scale` is scratch [replicas].
  virtual void ClipJointGradNorm(const GradSpans& spans, int64_t replicas, double max_norm, double* partials,
                                 float* norms, float* scale) = 0;
  // PPO: the loss of every lane's minibatch, its gradients and statistics (PpoBatch): the
  // advantages' moments per lane (PpoAdvantageMoments), each row's terms and gradients
  // (PpoRowLoss), then the per-lane sums in row order (PpoLaneReduce).
  virtual void PpoLoss(const PolicyHead& head, const PpoBatch& batch, const PpoLossConfig& config) = 0;
  // PPO: observations [lanes n][m.dim] normalized with their lane's running statistics into `out`
  // (NormalizeObservation; in place is fine), the statistics first updated with them
  // (UpdateMomentsFeature, AdvanceCount) unless frozen: frozen for evaluation, and for a step's
  // final observations, which are normalized with the statistics of the step's new ones.
  virtual void NormalizeObservations(const RunningMoments& m, const float* obs, float* out, int64_t n, bool frozen,
                                     double clip) = 0;
  // PPO: the rewards of `s.moments.lanes` lanes of n envs scaled (AccumulateLaneReturns unless
  // frozen also updates the statistics, then ScaleReward; in place is fine).
  virtual void ScaleRewards(const RewardScaler& s, const float* rewards, const uint8_t* terminated,
                            const uint8_t* truncated, float* scaled, int64_t n, bool frozen, double clip) = 0;

  // SAC: a draw for every row of `lanes` lanes of `rows` rows from the actor's outputs
  // (SacSampleRow; `random`: uniform in the Box).
  virtual void SacSamplePolicy(const SacHead& head, const float* outputs, int64_t lanes, int64_t rows,
                               const SacKey& key, bool random, const SacSample& out) = 0;
  // SAC: the critics' input rows [observation, action] (SacJoinRow).
  virtual void SacJoin(const float* obs, int obs_dim, const float* actions, int dims, int64_t rows, float* out) = 0;
  // SAC: the twin critics' loss gradients and statistics (SacCriticRow, then SacCriticReduce per lane).
  virtual void SacCriticLoss(const SacCriticBatch& batch) = 0;
  // SAC: which critic each row's actor loss reads (SacActorPickRow), before the critics' backward.
  virtual void SacActorPick(const SacActorBatch& batch) = 0;
  // SAC: the actor's output gradients (SacActorGradRow), then each lane's statistics and the
  // temperature's gradient (SacActorReduce), after the critics' backward.
  virtual void SacActorGrads(const SacHead& head, const SacActorBatch& batch) = 0;

 private:
  virtual void DoWriteTransitions(const ReplayArrays& replay, int64_t n, const float* obs, const int32_t* actions,
                                  const float* rewards, const float* next_obs, const float* final_obs,
                                  const uint8_t* terminated, const uint8_t* truncated, const float* action_values) = 0;
};

std::unique_ptr<AgentOps> MakeCpuAgentOps();
// `stream` is a cudaStream_t (nn::Backend::native_stream()); defined only in CUDA builds.
std::unique_ptr<AgentOps> MakeCudaAgentOps(void* stream);
std::unique_ptr<AgentOps> MakeAgentOps(Device device, void* stream);

}  // namespace cugym::agent
