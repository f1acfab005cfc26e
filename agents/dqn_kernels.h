// DQN's per-element work that is not the network's: the TD targets. What it shares with the other
// agents has headers of its own, included here: replay insertion and n-step sampling
// (replay_kernels.h), the priority sum tree (priority_tree.h), epsilon-greedy and ez-greedy
// exploration (exploration_kernels.h), the episode ring (episode_ring.h). Written once as
// CUGYM_HD functions; agent_ops_cpu.cpp and agent_ops_cuda.cu run them over their ranges.
#pragma once

#include <cstdint>

#include "agents/episode_ring.h"
#include "agents/exploration_kernels.h"
#include "agents/priority_tree.h"
#include "agents/replay_kernels.h"
#include "core/macros.h"

namespace cugym::agent {

// y = R + bootstrap * next_q: for one step r + gamma * (1 - terminated) * max Q(s'), as the
// minibatch's bootstrap is gamma or 0 then.
CUGYM_HD inline void TdTarget(const float* rewards, const float* bootstrap, const float* next_q, float* targets,
                              int64_t j) {
  targets[j] = rewards[j] + bootstrap[j] * next_q[j];
}

}  // namespace cugym::agent
