// The agents' device work, split by family (episode_ops.h for every agent, explore_ops.h for DQN and
// PQN, policy_ops.h for policies, replay_ops.h for the off-policy family, rollout_ops.h for the
// on-policy one, ppo_ops.h and sac_ops.h for PPO's and SAC's losses): each an interface over its
// CUGYM_HD kernels, written
// once as loop bodies (device_ops_impl.h) that the CPU runs as plain loops and CUDA as Thrust
// launches on the nn back end's stream (queued in order with the network's work and capturable into
// its CUDA graphs; no host synchronisation). No CUDA types here.
#pragma once

#include <memory>

#include "core/device.h"

namespace cugym::agent {

// A family's ops (EpisodeOps, ExploreOps, PolicyOps, ReplayOps, RolloutOps, PpoOps, SacOps) on
// `device`; `stream`
// is a cudaStream_t (nn::Backend::native_stream()) on CUDA. Throws std::invalid_argument for CUDA
// in a build without it.
template <class Ops>
std::unique_ptr<Ops> MakeOps(Device device, void* stream);

}  // namespace cugym::agent
