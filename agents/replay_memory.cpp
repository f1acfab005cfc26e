// The replay memory: its buffers, the queued insertion and sampling, and its checkpoint part.
#include "agents/replay_memory.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace cugym::agent {

int64_t ReplayBytes(const ReplayOptions& options) {
  const int64_t cap = options.capacity, b = options.batch_size, dim = options.obs_dim;
  int64_t bytes = cap * (8 * dim + 13) + b * (8 * dim + 12);
  if (options.prioritized) {
    PriorityTree tree;
    SizePriorityTree(tree, cap);
    bytes += 8 * tree.leaves + b * 16 + 8;
  }
  return bytes;
}

ReplayMemory::ReplayMemory(Device device, const ReplayOptions& options) : device_(device), options_(options) {
  const int64_t cap = options.capacity, b = options.batch_size, dim = options.obs_dim;
  const double needed = static_cast<double>(ReplayBytes(options));
  const std::size_t available = AvailableBytes(device);
  if (needed > 0.9 * static_cast<double>(available)) {
    throw std::invalid_argument("replay memory: buffer_size " + std::to_string(cap) + " transitions of " +
                                std::to_string(dim) + " floats per observation need " +
                                std::to_string(static_cast<long long>(needed / (1 << 20))) + " MiB of " +
                                DeviceName(device) + " memory but only " + std::to_string(available >> 20) +
                                " MiB is free (lower buffer_size)");
  }
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
  if (options.prioritized) {
    SizePriorityTree(tree_, cap);
    priority_nodes_ = Buffer<float>(device, 2 * tree_.leaves);
    max_priority_ = Buffer<float>(device, 1);
    min_prob_ = Buffer<float>(device, 1);
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
  return ReplayArrays{obs_.data(),       next_obs_.data(),  actions_.data(),  rewards_.data(),
                      terminals_.data(), ends_.data(),      size_dev_.data(), head_dev_.data(),
                      draws_.data(),     options_.capacity, options_.obs_dim, options_.num_envs};
}

void ReplayMemory::ResetPriorities() {
  priority_nodes_.Zero();
  const float one = 1.0f;
  max_priority_.FromHost(&one, 1);
}

void ReplayMemory::Insert(AgentOps& ops, int64_t n, const float* obs, const int32_t* actions, const float* rewards,
                          const float* next_obs, const float* final_obs, const uint8_t* terminated,
                          const uint8_t* truncated) {
  ops.AddTransitions(arrays(), n, obs, actions, rewards, next_obs, final_obs, terminated, truncated);
  if (prioritized()) ops.PrioritizeNewRows(arrays(), tree_, n);
}

void ReplayMemory::Stored(int64_t n) {
  head_ = (head_ + n) % options_.capacity;
  size_ = std::min(size_ + n, options_.capacity);
}

void ReplayMemory::Sample(AgentOps& ops, uint64_t seed, int n_step, float gamma) {
  const Minibatch batch{batch_obs_.data(),       batch_next_obs_.data(), batch_actions_.data(), batch_rewards_.data(),
                        batch_bootstrap_.data(), batch_rows_.data(),     batch_weights_.data()};
  ops.Sample(arrays(), batch, options_.batch_size, seed, n_step, gamma, tree_);
}

void ReplayMemory::UpdatePriorities(AgentOps& ops) {
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

void ReplayMemory::Save(CheckpointWriter& out) const {
  const int64_t cap = options_.capacity;
  out.Int("cugym.replay.position", head_);
  out.Int("cugym.replay.size", size_);
  out.Floats("replay.obs", obs_.ToHost(), {cap, options_.obs_dim});
  out.Floats("replay.next_obs", next_obs_.ToHost(), {cap, options_.obs_dim});
  out.Ints("replay.actions", actions_.ToHost());
  out.Floats("replay.rewards", rewards_.ToHost());
  out.Floats("replay.terminals", terminals_.ToHost());
  out.Ints("replay.ends", ends_.ToHost());
  if (prioritized()) {
    // The leaves (one priority per row); the inner nodes are their sums, rebuilt on loading.
    out.Floats("replay.priorities", priority_nodes_.ToHost(tree_.leaves, cap));
    out.Real("cugym.replay.max_priority", max_priority_.ToHost()[0]);
  }
}

void ReplayMemory::Load(const CheckpointReader& in) {
  const int64_t cap = options_.capacity, rows = cap * options_.obs_dim;
  head_ = in.Int("cugym.replay.position");
  size_ = in.Int("cugym.replay.size");
  if (head_ < 0 || head_ >= cap || size_ < 0 || size_ > cap)
    throw std::invalid_argument(in.path() + ": replay position or size outside the buffer");
  obs_.FromHost(in.Floats("replay.obs", rows).data(), rows);
  next_obs_.FromHost(in.Floats("replay.next_obs", rows).data(), rows);
  actions_.FromHost(in.Ints("replay.actions", cap).data(), cap);
  rewards_.FromHost(in.Floats("replay.rewards", cap).data(), cap);
  // "replay.dones" is the name files written before the rename carry.
  const char* terminals = in.HasTensor("replay.terminals") ? "replay.terminals" : "replay.dones";
  terminals_.FromHost(in.Floats(terminals, cap).data(), cap);
  const std::vector<int32_t> ends = in.Ints("replay.ends", cap);
  const std::vector<uint8_t> ends8(ends.begin(), ends.end());
  ends_.FromHost(ends8.data(), cap);
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
    priority_nodes_.FromHost(nodes.data(), nodes.size());
    const float max_priority = static_cast<float>(in.Real("cugym.replay.max_priority"));
    max_priority_.FromHost(&max_priority, 1);
  }
}

}  // namespace cugym::agent
