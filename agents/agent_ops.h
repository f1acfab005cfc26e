// The DQN loop's own device work (agent_kernels.h) on one device: the CPU runs plain loops, CUDA
// one Thrust launch per call on the nn back end's stream (queued in order with the network's
// work and capturable into its CUDA graphs; no host synchronisation). No CUDA types here.
#pragma once

#include <cstdint>
#include <memory>

#include "agents/agent_kernels.h"
#include "core/device.h"

namespace cugym::agent {

// Finished episodes, appended on the device: slot (count + k) % capacity of the ring holds the
// k-th episode that ended in a step; the host reads the ring and the count every few thousand
// steps.
struct EpisodeRing {
  float* returns;
  int32_t* lengths;
  unsigned long long* count;  // episodes appended so far (one value)
  int64_t capacity;
};

class AgentOps {
 public:
  virtual ~AgentOps() = default;
  virtual void AddTransitions(const ReplayArrays& replay, int64_t position, int64_t n, const float* obs,
                              const int32_t* actions, const float* rewards, const float* next_obs,
                              const float* final_obs, const uint8_t* terminated, const uint8_t* truncated) = 0;
  // A minibatch from the stored transitions (replay.size, replay.draws on the device); then the
  // draw counter goes up by one.
  virtual void Sample(const ReplayArrays& replay, const Minibatch& batch, int64_t batch_size, uint64_t seed) = 0;
  // Replaces actions[i] (greedy) by a random action with probability epsilon; `hold` as in
  // agent_kernels.h ({} for none).
  virtual void EpsilonGreedy(int32_t* actions, int64_t n, float epsilon, int num_actions, uint32_t step_key,
                             const ExploreHold& hold) = 0;
  virtual void TdTargets(const float* rewards, const float* dones, const float* next_q, float gamma, float* targets,
                         int64_t n) = 0;
  virtual void CollectEpisodes(const uint8_t* terminated, const uint8_t* truncated, const float* returns,
                               const int32_t* lengths, int64_t n, const EpisodeRing& ring) = 0;
};

std::unique_ptr<AgentOps> MakeCpuAgentOps();
// `stream` is a cudaStream_t (nn::Backend::native_stream()); defined only in CUDA builds.
std::unique_ptr<AgentOps> MakeCudaAgentOps(void* stream);
std::unique_ptr<AgentOps> MakeAgentOps(Device device, void* stream);

}  // namespace cugym::agent
