// DQN's per-element work that is not the network's or the replay memory's: the TD targets of a
// minibatch. Written once as a CUGYM_HD function; ReplayOps::TdTargets runs it.
#pragma once

#include <cstdint>

#include "core/macros.h"

namespace cugym::agent {

// y = R + bootstrap * next_q: for one step r + gamma * (1 - terminated) * max Q(s'), as the
// minibatch's bootstrap is gamma or 0 then.
CUGYM_HD inline void TdTarget(const float* rewards, const float* bootstrap, const float* next_q, float* targets,
                              int64_t j) {
  targets[j] = rewards[j] + bootstrap[j] * next_q[j];
}

}  // namespace cugym::agent
