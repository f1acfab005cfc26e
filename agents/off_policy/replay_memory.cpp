// The replay memory: its buffers, the queued insertion and sampling, and its checkpoint part.
#include "agents/off_policy/replay_memory.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace cugym::agent {

int64_t ReplayBytes(const ReplayOptions& options) {
  const int64_t cap = options.capacity, b = options.batch_size, dim = options.obs_dim;
  const int64_t a = options.action_dim;
  int64_t bytes = cap * (8 * dim + 4 * a + 13) + b * (8 * dim + 4 * a + 12);
  if (options.prioritized) {
    PriorityTree tree;
    SizePriorityTree(tree, cap);
    bytes += 8 * tree.leaves + b * 16 + 8;
  }
  return std::max<int64_t>(options.lanes, 1) * bytes;
}

ReplayMemory::ReplayMemory(Device device, const ReplayOptions& options) : device_(device), options_(options) {
  if (options.lanes < 1) throw std::invalid_argument("replay memory: lanes " + std::to_string(options.lanes));
  const int64_t lanes = options.lanes, cap = lanes * options.capacity, b = lanes * options.batch_size,
                dim = options.obs_dim;
  // The memories dominate an agent's memory: refused before anything is allocated.
  CheckMemoryFits(lanes == 1 ? "a replay memory" : std::to_string(lanes) + " lanes' replay memories", lanes,
                  static_cast<double>(ReplayBytes(options)) / static_cast<double>(lanes), device,
                  std::string(lanes == 1 ? "" : "each: ") + "buffer_size " + std::to_string(options.capacity) +
                      " transitions of " + std::to_string(dim) + " floats per observation, " +
                      std::to_string(options.num_envs) + " envs; lower buffer_size");
  obs_ = Buffer<float>(device, cap * dim);
  next_obs_ = Buffer<float>(device, cap * dim);
  rewards_ = Buffer<float>(device, cap);
  terminals_ = Buffer<float>(device, cap);
  ends_ = Buffer<uint8_t>(device, cap);
  actions_ = Buffer<int32_t>(device, cap);
  for (Buffer<float>* f : {&obs_, &next_obs_, &rewards_, &terminals_}) f->Zero();
  ends_.Zero();
  actions_.Zero();
  batch_obs_ = Buffer<float>(device, b * dim);
  batch_next_obs_ = Buffer<float>(device, b * dim);
  batch_rewards_ = Buffer<float>(device, b);
  batch_bootstrap_ = Buffer<float>(device, b);
  batch_actions_ = Buffer<int32_t>(device, b);
  if (options.action_dim > 0) {
    action_values_ = Buffer<float>(device, cap * options.action_dim);
    action_values_.Zero();
    batch_action_values_ = Buffer<float>(device, b * options.action_dim);
  }
  if (options.prioritized) {
    SizePriorityTree(tree_, options.capacity);
    tree_.lanes = lanes;
    priority_nodes_ = Buffer<float>(device, lanes * 2 * tree_.leaves);
    max_priority_ = Buffer<float>(device, lanes);
    min_prob_ = Buffer<float>(device, lanes);
    batch_weights_ = Buffer<float>(device, b);
    td_errors_ = Buffer<float>(device, b);
    batch_rows_ = Buffer<int64_t>(device, b);
    tree_.nodes = priority_nodes_.data();
    tree_.max_leaf = max_priority_.data();
    tree_.min_prob = min_prob_.data();
    tree_.alpha = static_cast<float>(options.priorities.alpha);
    tree_.eps = static_cast<float>(options.priorities.eps);
    tree_.beta0 = static_cast<float>(options.priorities.beta0);
    tree_.beta_updates = options.priorities.beta_updates;
    ResetPriorities();
  }
  size_dev_ = Buffer<int64_t>(device, 1);
  size_dev_.Zero();
  head_dev_ = Buffer<int64_t>(device, 1);
  head_dev_.Zero();
  draws_ = Buffer<uint32_t>(device, 1);
  draws_.Zero();
}

ReplayArrays ReplayMemory::arrays() {
  ReplayArrays r{obs_.data(),       next_obs_.data(),  actions_.data(),  rewards_.data(),
                 terminals_.data(), ends_.data(),      size_dev_.data(), head_dev_.data(),
                 draws_.data(),     options_.capacity, options_.obs_dim, options_.num_envs};
  r.lanes = options_.lanes;
  r.lane_seeds = lane_seeds_.size() > 0 ? lane_seeds_.data() : nullptr;
  r.action_values = action_values_.size() > 0 ? action_values_.data() : nullptr;
  r.action_dim = static_cast<int>(options_.action_dim);
  return r;
}

void ReplayMemory::ResetPriorities() {
  priority_nodes_.Zero();
  const std::vector<float> ones(options_.lanes, 1.0f);
  max_priority_.FromHost(ones.data(), ones.size());
}

void ReplayMemory::SetLaneSeeds(const std::vector<uint64_t>& seeds) {
  if (static_cast<int64_t>(seeds.size()) != options_.lanes)
    throw std::invalid_argument("replay memory: " + std::to_string(seeds.size()) + " seeds for " +
                                std::to_string(options_.lanes) + " lanes");
  lane_seeds_ = Buffer<uint64_t>(device_, options_.lanes);
  lane_seeds_.FromHost(seeds.data(), seeds.size());
}

void ReplayMemory::Insert(ReplayOps& ops, int64_t n, const float* obs, const int32_t* actions, const float* rewards,
                          const float* next_obs, const float* final_obs, const uint8_t* terminated,
                          const uint8_t* truncated, const float* action_values) {
  ops.AddTransitions(arrays(), n, obs, actions, rewards, next_obs, final_obs, terminated, truncated, action_values);
  if (prioritized()) ops.PrioritizeNewRows(arrays(), tree_, n);
}

void ReplayMemory::InsertLane(ReplayOps& ops, int64_t lane, int64_t n, const float* obs, const int32_t* actions,
                              const float* rewards, const float* next_obs, const float* final_obs,
                              const uint8_t* terminated, const uint8_t* truncated) {
  if (lane < 0 || lane >= options_.lanes)
    throw std::out_of_range("replay memory: lane " + std::to_string(lane) + " of " + std::to_string(options_.lanes));
  ops.WriteTransitions(Lane(arrays(), lane), n, obs, actions, rewards, next_obs, final_obs, terminated, truncated);
}

void ReplayMemory::Inserted(ReplayOps& ops, int64_t n) {
  ops.AdvanceReplay(arrays(), n);
  if (prioritized()) ops.PrioritizeNewRows(arrays(), tree_, n);
}

void ReplayMemory::Stored(int64_t n) {
  head_ = (head_ + n) % options_.capacity;
  size_ = std::min(size_ + n, options_.capacity);
}

void ReplayMemory::Sample(ReplayOps& ops, uint64_t seed, int n_step, float gamma) {
  Minibatch batch{batch_obs_.data(),       batch_next_obs_.data(), batch_actions_.data(), batch_rewards_.data(),
                  batch_bootstrap_.data(), batch_rows_.data(),     batch_weights_.data()};
  batch.action_values = batch_action_values_.size() > 0 ? batch_action_values_.data() : nullptr;
  ops.Sample(arrays(), batch, options_.batch_size, seed, n_step, gamma, tree_);
}

void ReplayMemory::UpdatePriorities(ReplayOps& ops) {
  ops.UpdatePriorities(tree_, batch_rows_.data(), td_errors_.data(), options_.batch_size);
}

uint32_t ReplayMemory::draws() const { return draws_.ToHost()[0]; }

void ReplayMemory::set_draws(uint32_t draws) { draws_.FromHost(&draws, 1); }

void ReplayMemory::Clear() {
  head_ = 0;
  size_ = 0;
  size_dev_.Zero();
  head_dev_.Zero();
  if (prioritized()) ResetPriorities();
}

void ReplayMemory::Save(CheckpointWriter& out, int64_t lane) const {
  const int64_t cap = options_.capacity, dim = options_.obs_dim;
  out.Int("cugym.replay.position", head_);
  out.Int("cugym.replay.size", size_);
  out.Floats("replay.obs", obs_.ToHost(lane * cap * dim, cap * dim), {cap, dim});
  out.Floats("replay.next_obs", next_obs_.ToHost(lane * cap * dim, cap * dim), {cap, dim});
  out.Ints("replay.actions", actions_.ToHost(lane * cap, cap));
  if (options_.action_dim > 0) {
    const int64_t a = options_.action_dim;
    out.Floats("replay.action_values", action_values_.ToHost(lane * cap * a, cap * a), {cap, a});
  }
  out.Floats("replay.rewards", rewards_.ToHost(lane * cap, cap));
  out.Floats("replay.terminals", terminals_.ToHost(lane * cap, cap));
  out.Ints("replay.ends", ends_.ToHost(lane * cap, cap));
  if (prioritized()) {
    // The leaves (one priority per row); the inner nodes are their sums, rebuilt on loading.
    out.Floats("replay.priorities", priority_nodes_.ToHost(lane * 2 * tree_.leaves + tree_.leaves, cap));
    out.Real("cugym.replay.max_priority", max_priority_.ToHost(lane, 1)[0]);
  }
}

void ReplayMemory::TakeLanes(const ReplayMemory& from, const std::vector<int64_t>& lanes) {
  const int64_t cap = options_.capacity, dim = options_.obs_dim;
  if (from.device_ != device_ || from.options_.capacity != cap || from.options_.obs_dim != dim ||
      from.prioritized() != prioritized() || from.options_.action_dim != options_.action_dim ||
      static_cast<int64_t>(lanes.size()) != options_.lanes)
    throw std::invalid_argument("replay memory: TakeLanes of " + std::to_string(lanes.size()) + " lanes for " +
                                std::to_string(options_.lanes) + ", or from a memory of another shape or device");
  for (std::size_t to = 0; to < lanes.size(); ++to) {
    const int64_t lane = lanes[to];
    if (lane < 0 || lane >= from.options_.lanes)
      throw std::out_of_range("replay memory: lane " + std::to_string(lane) + " of " +
                              std::to_string(from.options_.lanes));
    const auto copy = [&](auto& dst, const auto& src, int64_t per_lane) {
      CopyBytes(dst.data() + static_cast<int64_t>(to) * per_lane, device_, src.data() + lane * per_lane, device_,
                static_cast<std::size_t>(per_lane) * sizeof(*dst.data()));
    };
    copy(obs_, from.obs_, cap * dim);
    copy(next_obs_, from.next_obs_, cap * dim);
    copy(rewards_, from.rewards_, cap);
    copy(terminals_, from.terminals_, cap);
    copy(ends_, from.ends_, cap);
    copy(actions_, from.actions_, cap);
    if (options_.action_dim > 0) copy(action_values_, from.action_values_, cap * options_.action_dim);
    if (prioritized()) {
      copy(priority_nodes_, from.priority_nodes_, 2 * tree_.leaves);  // inner nodes too: the same sums
      copy(max_priority_, from.max_priority_, 1);
    }
  }
  head_ = from.head_;
  size_ = from.size_;
  CopyBytes(head_dev_.data(), device_, from.head_dev_.data(), device_, sizeof(int64_t));
  CopyBytes(size_dev_.data(), device_, from.size_dev_.data(), device_, sizeof(int64_t));
  CopyBytes(draws_.data(), device_, from.draws_.data(), device_, sizeof(uint32_t));
}

void ReplayMemory::Load(const CheckpointReader& in, int64_t lane) {
  const int64_t cap = options_.capacity, rows = cap * options_.obs_dim;
  if (lane < 0 || lane >= options_.lanes)
    throw std::out_of_range("replay memory: lane " + std::to_string(lane) + " of " + std::to_string(options_.lanes));
  const int64_t head = in.Int("cugym.replay.position"), size = in.Int("cugym.replay.size");
  if (head < 0 || head >= cap || size < 0 || size > cap)
    throw std::invalid_argument(in.path() + ": replay position or size outside the buffer");
  if (lane > 0 && (head != head_ || size != size_))
    throw std::invalid_argument(in.path() + ": replay position or size other than the other lanes'");
  const int64_t a = options_.action_dim;
  const std::vector<float> action_values = a > 0 ? in.Floats("replay.action_values", cap * a) : std::vector<float>();
  head_ = head;
  size_ = size;
  if (a > 0) action_values_.FromHost(action_values.data(), cap * a, lane * cap * a);
  obs_.FromHost(in.Floats("replay.obs", rows).data(), rows, lane * rows);
  next_obs_.FromHost(in.Floats("replay.next_obs", rows).data(), rows, lane * rows);
  actions_.FromHost(in.Ints("replay.actions", cap).data(), cap, lane * cap);
  rewards_.FromHost(in.Floats("replay.rewards", cap).data(), cap, lane * cap);
  // "replay.dones" is the name files written before the rename carry.
  const char* terminals = in.HasTensor("replay.terminals") ? "replay.terminals" : "replay.dones";
  terminals_.FromHost(in.Floats(terminals, cap).data(), cap, lane * cap);
  const std::vector<int32_t> ends = in.Ints("replay.ends", cap);
  const std::vector<uint8_t> ends8(ends.begin(), ends.end());
  ends_.FromHost(ends8.data(), cap, lane * cap);
  head_dev_.FromHost(&head_, 1);
  size_dev_.FromHost(&size_, 1);
  if (prioritized()) {
    // Inner nodes recomputed from the leaves bottom up: the bits the running tree held.
    std::vector<float> nodes(2 * tree_.leaves, 0.0f);
    const std::vector<float> leaves = in.Floats("replay.priorities", cap);
    std::copy(leaves.begin(), leaves.end(), nodes.begin() + tree_.leaves);
    PriorityTree host;
    host.nodes = nodes.data();
    for (int64_t node = tree_.leaves - 1; node >= 1; --node) RefreshNode(host, node);
    priority_nodes_.FromHost(nodes.data(), nodes.size(), lane * 2 * tree_.leaves);
    const float max_priority = static_cast<float>(in.Real("cugym.replay.max_priority"));
    max_priority_.FromHost(&max_priority, 1, lane);
  }
}

}  // namespace cugym::agent
