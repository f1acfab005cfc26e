// The agents' device ops on the CPU (device_ops_impl.h run as plain loops, with the CPU's own
// priority-tree updates and episode collection), and MakeOps for both back ends.
#include <stdexcept>
#include <string>

#include "agents/device/device_ops_impl.h"

namespace cugym::agent {

#ifdef CUGYM_HAVE_CUDA
// device_ops_cuda.cu
template <class Ops>
std::unique_ptr<Ops> MakeCudaOps(void* stream);
#endif

namespace {

class CpuEpisodeOps final : public EpisodeOpsOn<CpuLoop> {
 public:
  using EpisodeOpsOn::EpisodeOpsOn;
  void CollectEpisodes(const uint8_t* terminated, const uint8_t* truncated, const float* returns,
                       const int32_t* lengths, int64_t lanes, int64_t n, const EpisodeRing* rings) override {
    for (int64_t l = 0; l < lanes; ++l) CollectLaneEpisodes(terminated, truncated, returns, lengths, n, rings, l);
  }
};

class CpuReplayOps final : public ReplayOpsOn<CpuLoop> {
 public:
  using ReplayOpsOn::ReplayOpsOn;
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
};

}  // namespace

template <class Ops>
std::unique_ptr<Ops> MakeOps(Device device, void* stream) {
  if (device == Device::kCpu) return MakeOpsOn<Ops, CpuEpisodeOps, CpuReplayOps>(CpuLoop{});
#ifdef CUGYM_HAVE_CUDA
  return MakeCudaOps<Ops>(stream);
#else
  (void)stream;
  throw std::invalid_argument("this cugym was built without CUDA");
#endif
}
#define CUGYM_INSTANTIATE(Ops) template std::unique_ptr<Ops> MakeOps(Device, void*);
CUGYM_EACH_OPS_FAMILY(CUGYM_INSTANTIATE)
#undef CUGYM_INSTANTIATE

void ReplayOps::WriteTransitions(const ReplayArrays& replay, int64_t n, const float* obs, const int32_t* actions,
                                 const float* rewards, const float* next_obs, const float* final_obs,
                                 const uint8_t* terminated, const uint8_t* truncated, const float* action_values) {
  if (n > replay.capacity)
    throw std::invalid_argument("AddTransitions: " + std::to_string(n) +
                                " transitions in one step exceed the replay capacity " +
                                std::to_string(replay.capacity));
  DoWriteTransitions(replay, n, obs, actions, rewards, next_obs, final_obs, terminated, truncated, action_values);
}

void ReplayOps::AddTransitions(const ReplayArrays& replay, int64_t n, const float* obs, const int32_t* actions,
                               const float* rewards, const float* next_obs, const float* final_obs,
                               const uint8_t* terminated, const uint8_t* truncated, const float* action_values) {
  WriteTransitions(replay, n, obs, actions, rewards, next_obs, final_obs, terminated, truncated, action_values);
  AdvanceReplay(replay, n);
}

}  // namespace cugym::agent
