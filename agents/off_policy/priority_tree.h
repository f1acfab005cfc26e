// Prioritized replay's sum tree: the priorities of the replay rows on the device, the draw of a
// row by priority, and the per-row helpers of its two updates. Written once as CUGYM_HD functions;
// ReplayOps runs them on each back end, agents/off_policy/replay_memory.h owns the tree's buffers.
#pragma once

#include <cstdint>

#include "core/fastmath.h"
#include "core/macros.h"

namespace cugym::agent {

// Prioritized experience replay (Schaul, Quan, Antonoglou and Silver, ICLR 2016), proportional
// variant: row r is drawn with probability p_r / sum p, p_r = (|delta_r| + eps)^alpha from its
// latest TD error; new rows get the largest priority given so far, so each is seen at least once
// soon. The priorities live in a sum tree on the device: nodes[1] is the total, node i has the
// children 2i and 2i + 1, row r's leaf is nodes[leaves + r] (0 until the row is written). An inner
// node is always recomputed as the float sum of its two children, never adjusted by a difference,
// so the tree is a function of its leaves: the same bits on every back end and in any update order.
struct PriorityTree {
  float* nodes = nullptr;     // [2 * leaves]; nullptr: uniform sampling
  float* max_leaf = nullptr;  // [1] the largest leaf value so far (new rows get it); starts at 1
  float* min_prob = nullptr;  // [1] scratch: the smallest draw probability of the current minibatch
  int64_t leaves = 0;         // a power of two >= the replay capacity
  int depth = 0;              // log2(leaves): levels above the leaves
  float alpha = 0.6f;
  float eps = 1e-6f;
  float beta0 = 0.4f;        // importance-weight exponent at the first minibatch, annealed to 1 ...
  int64_t beta_updates = 1;  // ... linearly over this many minibatches (then 1)
  // Lanes (ReplayArrays::lanes): one tree per lane, nodes [lanes][2 * leaves], max_leaf and
  // min_prob [lanes].
  int64_t lanes = 1;
};

// Lane l's tree.
CUGYM_HD inline PriorityTree Lane(const PriorityTree& t, int64_t lane) {
  PriorityTree l = t;
  l.lanes = 1;
  if (t.nodes == nullptr) return l;
  l.nodes += lane * 2 * t.leaves;
  l.max_leaf += lane;
  l.min_prob += lane;
  return l;
}

// Sizes `t` for a replay of `capacity` rows: leaves the smallest power of two >= capacity, depth
// its log2.
inline void SizePriorityTree(PriorityTree& t, int64_t capacity) {
  t.leaves = 1;
  t.depth = 0;
  while (t.leaves < capacity) {
    t.leaves *= 2;
    ++t.depth;
  }
}

// (|error| + eps)^alpha through core's Log2/Exp2, so CPU and GPU give the same bits.
CUGYM_HD inline float LeafPriority(float error, float alpha, float eps) {
  const double base = static_cast<double>(error < 0.0f ? -error : error) + static_cast<double>(eps);
  return static_cast<float>(Exp2(static_cast<double>(alpha) * Log2(base)));
}

// Recomputes inner node `node` from its children.
CUGYM_HD inline void RefreshNode(const PriorityTree& t, int64_t node) {
  t.nodes[node] = t.nodes[2 * node] + t.nodes[2 * node + 1];
}

// The row whose leaf holds the mass point u in [0, total): descend, subtracting the left mass when
// going right. Float rounding can leave u at or past a subtree's stored sum; a child of zero mass
// is never entered, so the draw always ends on a written row.
CUGYM_HD inline int64_t FindPrioritized(const PriorityTree& t, double u) {
  int64_t node = 1;
  while (node < t.leaves) {
    const float left = t.nodes[2 * node];
    if (static_cast<double>(left) > u || t.nodes[2 * node + 1] <= 0.0f) {
      node = 2 * node;
    } else {
      u -= static_cast<double>(left);
      node = 2 * node + 1;
    }
  }
  return node - t.leaves;
}

// The rows a vector step of n transitions just wrote, ending before `head`, as up to two
// contiguous ranges [lo, hi) of the ring (two when they wrap); returns how many.
CUGYM_HD inline int NewRowRanges(int64_t head, int64_t n, int64_t capacity, int64_t lo[2], int64_t hi[2]) {
  const int64_t start = (head - n % capacity + capacity) % capacity;
  if (start + n <= capacity) {
    lo[0] = start;
    hi[0] = start + n;
    return 1;
  }
  lo[0] = start;
  hi[0] = capacity;
  lo[1] = 0;
  hi[1] = start + n - capacity;
  return 2;
}

// Whether sample j's row comes again later in the minibatch: only the last occurrence of a row
// writes its priority, so duplicates (whose errors can differ in the last bits, as a GEMM may
// round rows differently by position) leave the same leaf on every back end.
CUGYM_HD inline bool LaterDuplicate(const int64_t* rows, int64_t j, int64_t n) {
  for (int64_t k = j + 1; k < n; ++k)
    if (rows[k] == rows[j]) return true;
  return false;
}

}  // namespace cugym::agent
