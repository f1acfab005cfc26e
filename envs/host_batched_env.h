// HostBatchedEnv<Env>: the VectorEnv of envs that cannot be CUGYM_HD functors because they need a
// physics engine (Box2D: LunarLander). Each env owns a host `World`; a persistent thread pool
// steps the envs, with the same semantics as BatchedEnv (same-step autoreset with final_obs,
// terminated/truncated, episode statistics, randomness keyed by (seed, env index, counter), so
// env i's episodes do not depend on the batch size or the thread count). On Device::kCuda the env
// still steps on the CPU: actions are copied from the device, and the outputs, written to pinned
// host memory, are copied to the device asynchronously on the env's stream (set_stream; the
// per-thread default stream without one) after each call. Snapshots (checkpoints) hold each env's
// episode, the RNG counter it began from and its actions, and LoadSnapshot replays them: Reset and
// Step must therefore be deterministic given (params, world, action, draws), as Box2D is.
//
// The host env contract (envs/box2d/lunar_lander.h is one):
//   struct MyEnv {
//     static EnvSpec Spec();
//     struct Params { ... };  using World = ...;      // World: default-constructible host class
//     static constexpr int64_t kWorldBytes = ...;      // host memory one World holds, engine included
//     using Action = int32_t or float;  kNumActions, kActionDim, kObsDim, kStateDim as env.h;
//     static float ActionLow(int d), ActionHigh(int d);                        // Box only
//     static void CheckParams(const Params&);                  // throws std::invalid_argument
//     static void CheckAction(const Action*, int64_t env);     // throws std::invalid_argument
//     static void Reset(const Params&, World&, Rng&);
//     static StepResult Step(const Params&, World&, const Action*, Rng&);
//     static void Observe(const Params&, const World&, float* obs);
//     static void ToFlat(const World&, float* flat);
//     static void FromFlat(const Params&, World&, const float* flat);
//     static void Draw(const Params&, const float* flat, Canvas&);            // optional
//   };
// Include only in the translation unit that registers such envs (or a plugin's).
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/memory.h"
#include "core/registry.h"
#include "core/thread_pool.h"
#include "core/vector_env.h"
#include "envs/batch_kernels.h"
#include "envs/batched_env.h"

namespace cugym {
namespace detail {

// Host memory for the outputs: pinned when they are copied to a GPU, so the copy is asynchronous.
class HostBlock {
 public:
  HostBlock(Device device, std::size_t bytes)
      : pinned_(device == Device::kCuda),
        data_(static_cast<uint8_t*>(pinned_ ? AllocatePinned(bytes) : AllocateBytes(Device::kCpu, bytes))) {
    if (data_ != nullptr) std::memset(data_, 0, bytes);
  }
  ~HostBlock() {
    if (pinned_) {
      FreePinned(data_);
    } else {
      FreeBytes(Device::kCpu, data_);
    }
  }
  HostBlock(const HostBlock&) = delete;
  HostBlock& operator=(const HostBlock&) = delete;
  uint8_t* data() const { return data_; }

 private:
  bool pinned_;
  uint8_t* data_;
};

// Byte offsets of the outputs inside one block (one copy to the device per call), 64-byte aligned.
struct OutputLayout {
  std::size_t obs, final_obs, rewards, done_return, done_length, terminated, truncated, bytes;
  OutputLayout(int64_t n, int obs_dim) {
    std::size_t at = 0;
    auto take = [&](std::size_t size) {
      const std::size_t offset = at;
      at += (size + 63) / 64 * 64;
      return offset;
    };
    obs = take(n * obs_dim * sizeof(float));
    final_obs = take(n * obs_dim * sizeof(float));
    rewards = take(n * sizeof(float));
    done_return = take(n * sizeof(float));
    done_length = take(n * sizeof(int32_t));
    terminated = take(n);
    truncated = take(n);
    bytes = at;
  }
};

}  // namespace detail

template <class Env>
class HostBatchedEnv final : public VectorEnv {
 public:
  using Action = typename Env::Action;
  using Params = typename Env::Params;

  // threads = 0: omp_get_max_threads() (all cores, or OMP_NUM_THREADS).
  HostBatchedEnv(int64_t num_envs, Device device, Params params = {}, int threads = 0)
      : spec_(Env::Spec()),
        device_(device),
        n_(num_envs),
        params_((Env::CheckParams(params), params)),
        layout_(num_envs, Env::kObsDim),
        host_(device, layout_.bytes),
        host_actions_(device, static_cast<std::size_t>(num_envs) * Env::kActionDim * sizeof(Action)),
        worlds_(new typename Env::World[num_envs]),
        seeds_(num_envs, 0),
        counters_(num_envs, 0),
        elapsed_(num_envs, 0),
        running_return_(num_envs, 0.0f),
        episode_starts_(num_envs, kEpisodeFromStates),
        episode_actions_(num_envs),
        pool_(threads > 0 ? threads : omp_get_max_threads()) {
    if (device_ == Device::kCuda) {
      device_block_ = Buffer<uint8_t>(device_, layout_.bytes);
      device_block_.Zero();
    }
  }

  const EnvSpec& spec() const override { return spec_; }
  Device device() const override { return device_; }
  int64_t num_envs() const override { return n_; }
  int threads() const { return pool_.threads(); }

  void Reset(uint64_t seed) override { ResetSeeds(std::vector<uint64_t>(static_cast<std::size_t>(n_), seed)); }

  void ResetSeeds(const std::vector<uint64_t>& seeds) override {
    if (static_cast<int64_t>(seeds.size()) != n_)
      throw std::invalid_argument("ResetSeeds: expected " + std::to_string(n_) + " seeds, got " +
                                  std::to_string(seeds.size()));
    lane_size_ = 0;
    Restart(seeds);
  }

  void ResetLanes(const std::vector<uint64_t>& seeds, int64_t lane_size) override {
    CheckLanes(seeds, lane_size, n_);
    lane_size_ = lane_size;
    Restart(LaneEnvSeeds(seeds, lane_size));
  }
  bool supports_lanes() const override { return true; }

  void Step(const int32_t* actions) override {
    if constexpr (Env::kNumActions > 0) {
      StepGiven(actions);
    } else {
      (void)actions;
      detail::ThrowWrongActionKind(spec_.id, true);
    }
  }
  void Step(const float* actions) override {
    if constexpr (Env::kNumActions == 0) {
      StepGiven(actions);
    } else {
      (void)actions;
      detail::ThrowWrongActionKind(spec_.id, false);
    }
  }

  // All T steps in one pool call: each env is independent, so a thread takes its envs through
  // every step (random actions from HashDraw keyed by (seed, step, env) as on the other back ends).
  void StepRandom(int64_t steps) override {
    if (steps < 0) throw std::invalid_argument("StepRandom: steps must be >= 0");
    CheckReset("Step");
    if (steps == 0) return;
    WaitForCopies();
    const uint64_t first_step = step_index_;
    ForEnvs([&](int64_t i) {
      for (int64_t t = 0; t < steps; ++t) {
        Action action[Env::kActionDim];
        detail::RandomAction<Env>(StepKey(seed_, RngStream::kActions, first_step + t), i, action);
        StepEnv(i, action);
      }
    });
    step_index_ += steps;
    PublishOutputs();
  }

  void set_autoreset(bool on) override { autoreset_ = on; }
  bool autoreset() const override { return autoreset_; }

  void ResetDone() override {
    CheckReset("ResetDone");
    WaitForCopies();
    const uint8_t* term = Out<uint8_t>(layout_.terminated);
    const uint8_t* trunc = Out<uint8_t>(layout_.truncated);
    ResetWhere([&](int64_t i) { return (term[i] | trunc[i]) != 0; });
  }

  void ResetMasked(const uint8_t* mask) override {
    CheckReset("ResetMasked");
    if (mask == nullptr) throw std::invalid_argument("ResetMasked: null mask");
    WaitForCopies();
    std::vector<uint8_t> host_mask(n_);
    CopyBytes(host_mask.data(), Device::kCpu, mask, device_, n_);
    ResetWhere([&](int64_t i) { return host_mask[i] != 0; });
  }

  void set_stream(void* stream) override {
    CheckBlockingStream(device_, stream);
    stream_ = stream;
  }
  void SetOutputs(const StepOutputs& outputs) override {
    outputs_ = outputs;
    PublishOutputs();  // the new arrays hold the current outputs too
  }

  const float* obs() const override { return outputs_.obs ? outputs_.obs : Published<float>(layout_.obs); }
  const float* final_obs() const override { return Published<float>(layout_.final_obs); }
  const float* rewards() const override {
    return outputs_.rewards ? outputs_.rewards : Published<float>(layout_.rewards);
  }
  const uint8_t* terminated() const override {
    return outputs_.terminated ? outputs_.terminated : Published<uint8_t>(layout_.terminated);
  }
  const uint8_t* truncated() const override {
    return outputs_.truncated ? outputs_.truncated : Published<uint8_t>(layout_.truncated);
  }
  const float* episode_returns() const override { return Published<float>(layout_.done_return); }
  const int32_t* episode_lengths() const override { return Published<int32_t>(layout_.done_length); }

  std::vector<float> GetStates(int64_t first, int64_t count) const override {
    CheckRange(first, count);
    std::vector<float> flat(count * Env::kStateDim);
    for (int64_t i = 0; i < count; ++i) Env::ToFlat(worlds_[first + i], flat.data() + i * Env::kStateDim);
    return flat;
  }

  void SetStates(int64_t first, int64_t count, const std::vector<float>& flat) override {
    CheckFlatStates(first, count, n_, Env::kStateDim, flat.size());
    WaitForCopies();
    for (int64_t i = first; i < first + count; ++i) {
      Env::FromFlat(params_, worlds_[i], flat.data() + (i - first) * Env::kStateDim);
      episode_starts_[i] = kEpisodeFromStates;  // a snapshot restores it from its flat state
      episode_actions_[i].clear();
      elapsed_[i] = 0;
      running_return_[i] = 0.0f;
      Env::Observe(params_, worlds_[i], Out<float>(layout_.obs) + i * Env::kObsDim);
    }
    reset_done_ = true;
    PublishOutputs();
  }

  // A world's state is more than its flat state (an engine keeps contact manifolds, warm-start
  // impulses and its broad phase between steps), so the snapshot holds each env's episode as the
  // RNG counter it began from and the actions since (VectorEnvSnapshot::episode_starts); saving
  // copies at most max_episode_steps actions per env.
  bool SaveSnapshot(VectorEnvSnapshot* snapshot) const override {
    CheckReset("SaveSnapshot");
    snapshot->seed = seed_;
    const bool uniform =
        lane_size_ == 0 && std::all_of(seeds_.begin(), seeds_.end(), [&](uint64_t s) { return s == seed_; });
    snapshot->env_seeds = uniform ? std::vector<uint64_t>() : seeds_;
    snapshot->lane_size = lane_size_;
    snapshot->steps = step_index_;
    snapshot->states = GetStates(0, n_);
    snapshot->rng_counters = counters_;
    snapshot->elapsed = elapsed_;
    snapshot->running_returns = running_return_;
    snapshot->episode_starts = episode_starts_;
    snapshot->episode_actions.clear();
    for (int64_t i = 0; i < n_; ++i) {
      if (episode_starts_[i] == kEpisodeFromStates) continue;
      snapshot->episode_actions.insert(snapshot->episode_actions.end(), episode_actions_[i].begin(),
                                       episode_actions_[i].end());
    }
    return true;
  }

  // Resets each env from its episode's start and replays its actions, which rebuilds the engine's
  // world bit for bit; the result is checked against the saved flat state and RNG counter. Where
  // they differ (a snapshot of another build of the engine) or the snapshot holds no episodes (a
  // writer that leaves them out), the env takes the saved flat state as SetStates does: close,
  // without the engine's caches. Flags and rewards start clean.
  void LoadSnapshot(const VectorEnvSnapshot& s) override {
    const auto n = static_cast<std::size_t>(n_);
    CheckSnapshotFits(s, n_, Env::kStateDim, spec_.id);
    const bool replay = !s.episode_starts.empty();
    std::vector<std::size_t> first_action(n + 1, 0);  // env i's actions: [first_action[i], first_action[i + 1])
    if (replay) {
      if (s.episode_starts.size() != n)
        throw std::invalid_argument("LoadSnapshot: " + std::to_string(s.episode_starts.size()) +
                                    " episode starts for " + std::to_string(n_) + " envs");
      for (std::size_t i = 0; i < n; ++i) {
        if (s.elapsed[i] < 0 || s.episode_starts[i] < kEpisodeFromStates || s.episode_starts[i] > UINT32_MAX)
          throw std::invalid_argument("LoadSnapshot: env " + std::to_string(i) + "'s episode is out of range");
        const std::size_t steps = s.episode_starts[i] == kEpisodeFromStates ? 0 : s.elapsed[i];
        first_action[i + 1] = first_action[i] + steps * Env::kActionDim;
      }
      if (s.episode_actions.size() != first_action[n])
        throw std::invalid_argument("LoadSnapshot: " + std::to_string(s.episode_actions.size()) +
                                    " episode action floats, the episodes take " + std::to_string(first_action[n]));
    }
    if (s.lane_size > 0)
      ResetLanes(LaneSeedsOf(s), s.lane_size);
    else if (s.env_seeds.empty())
      Reset(s.seed);
    else
      ResetSeeds(s.env_seeds);
    WaitForCopies();
    ForEnvs([&](int64_t i) {
      const float* flat = s.states.data() + i * Env::kStateDim;
      const bool replayed = replay && s.episode_starts[i] != kEpisodeFromStates &&
                            Replay(i, s, s.episode_actions.data() + first_action[i]);
      if (!replayed) Env::FromFlat(params_, worlds_[i], flat);
      episode_starts_[i] = replayed ? s.episode_starts[i] : kEpisodeFromStates;
      episode_actions_[i].assign(s.episode_actions.begin() + (replayed ? first_action[i] : 0),
                                 s.episode_actions.begin() + (replayed ? first_action[i + 1] : 0));
      counters_[i] = s.rng_counters[i];
      elapsed_[i] = s.elapsed[i];
      running_return_[i] = s.running_returns[i];
      Env::Observe(params_, worlds_[i], Out<float>(layout_.obs) + i * Env::kObsDim);
    });
    step_index_ = s.steps;
    PublishOutputs();
  }

 private:
  // Env i's episode of snapshot `s` rebuilt from its start and actions; whether it ended where the
  // snapshot says (flat state, bit for bit, and RNG counter).
  bool Replay(int64_t i, const VectorEnvSnapshot& s, const float* actions) {
    counters_[i] = static_cast<uint32_t>(s.episode_starts[i]);
    ResetWorld(i);
    for (int32_t t = 0; t < s.elapsed[i]; ++t) {
      Action action[Env::kActionDim];
      for (int d = 0; d < Env::kActionDim; ++d) action[d] = static_cast<Action>(actions[t * Env::kActionDim + d]);
      StepWorld(i, action);
    }
    float flat[Env::kStateDim];
    Env::ToFlat(worlds_[i], flat);
    return counters_[i] == s.rng_counters[i] &&
           std::memcmp(flat, s.states.data() + i * Env::kStateDim, sizeof flat) == 0;
  }

  // ResetSeeds' work once the seeds are checked.
  void Restart(const std::vector<uint64_t>& seeds) {
    WaitForCopies();
    seeds_ = seeds;
    seed_ = seeds[0];
    step_index_ = 0;
    std::fill(counters_.begin(), counters_.end(), 0u);
    std::memset(Out<uint8_t>(layout_.terminated), 0, n_);
    std::memset(Out<uint8_t>(layout_.truncated), 0, n_);
    std::fill(Out<float>(layout_.rewards), Out<float>(layout_.rewards) + n_, 0.0f);
    ForEnvs([this](int64_t i) { ResetEnv(i); });
    reset_done_ = true;
    PublishOutputs();
  }

  template <class T>
  T* Out(std::size_t offset) const {
    return reinterpret_cast<T*>(host_.data() + offset);
  }
  template <class T>
  const T* Published(std::size_t offset) const {
    return device_ == Device::kCuda ? reinterpret_cast<const T*>(device_block_.data() + offset) : Out<T>(offset);
  }

  void CheckReset(const char* what) const {
    if (!reset_done_) throw std::logic_error(std::string("VectorEnv: call Reset before ") + what);
  }
  void CheckRange(int64_t first, int64_t count) const { CheckEnvRange(first, count, n_); }

  // Envs in pieces of about a quarter of a thread's share, taken as threads come free.
  template <class Fn>
  void ForEnvs(const Fn& fn) {
    const int64_t grain = std::max<int64_t>(1, n_ / (4 * pool_.threads()));
    pool_.ParallelFor(n_, grain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) fn(i);
    });
  }

  // The host outputs are rewritten only after the previous copy to the device has finished.
  void WaitForCopies() {
    if (device_ == Device::kCuda) Synchronize(device_);
  }
  // The outputs from the host block to where the caller reads them: the device block on cuda,
  // and the arrays of SetOutputs (a small copy per call: host envs write the host block).
  void PublishOutputs() {
    if (device_ == Device::kCuda) CopyBytesAsync(device_block_.data(), host_.data(), layout_.bytes, device_, stream_);
    auto publish = [&](void* dst, std::size_t offset, std::size_t bytes) {
      if (dst != nullptr) CopyBytesAsync(dst, host_.data() + offset, bytes, device_, stream_);
    };
    publish(outputs_.obs, layout_.obs, static_cast<std::size_t>(n_) * Env::kObsDim * sizeof(float));
    publish(outputs_.rewards, layout_.rewards, static_cast<std::size_t>(n_) * sizeof(float));
    publish(outputs_.terminated, layout_.terminated, static_cast<std::size_t>(n_));
    publish(outputs_.truncated, layout_.truncated, static_cast<std::size_t>(n_));
  }

  // Resets the envs for which reset(i) holds and clears their flags and rewards.
  template <class Pred>
  void ResetWhere(const Pred& reset) {
    uint8_t* term = Out<uint8_t>(layout_.terminated);
    uint8_t* trunc = Out<uint8_t>(layout_.truncated);
    float* rewards = Out<float>(layout_.rewards);
    ForEnvs([&](int64_t i) {
      if (!reset(i)) return;
      ResetEnv(i);
      term[i] = trunc[i] = 0;
      rewards[i] = 0.0f;
    });
    PublishOutputs();
  }

  void StepGiven(const Action* actions) {
    CheckReset("Step");
    const Action* host_actions = actions;
    const std::size_t action_bytes = static_cast<std::size_t>(n_) * Env::kActionDim * sizeof(Action);
    if (device_ == Device::kCuda) {  // synchronous: also waits for the last output copy
      CopyBytes(host_actions_.data(), Device::kCpu, actions, device_, action_bytes);
      host_actions = reinterpret_cast<const Action*>(host_actions_.data());
    }
    // Every action is checked before any env moves, so a bad one leaves the batch as it was.
    for (int64_t i = 0; i < n_; ++i) Env::CheckAction(host_actions + i * Env::kActionDim, i);
    ForEnvs([&](int64_t i) { StepEnv(i, host_actions + i * Env::kActionDim); });
    ++step_index_;
    PublishOutputs();
  }

  // Env i's index in its Philox key: i, or with lanes its index in its lane.
  uint64_t Stream(int64_t i) const { return static_cast<uint64_t>(lane_size_ > 0 ? i % lane_size_ : i); }

  // The world's reset and step with env i's draws, the RNG counter stored back (live and replay).
  void ResetWorld(int64_t i) {
    Rng rng(seeds_[i], Stream(i), counters_[i]);
    Env::Reset(params_, worlds_[i], rng);
    counters_[i] = rng.counter();
  }
  StepResult StepWorld(int64_t i, const Action* action) {
    Rng rng(seeds_[i], Stream(i), counters_[i]);
    const StepResult result = Env::Step(params_, worlds_[i], action, rng);
    counters_[i] = rng.counter();
    return result;
  }

  void ResetEnv(int64_t i) {
    episode_starts_[i] = counters_[i];
    episode_actions_[i].clear();
    ResetWorld(i);
    elapsed_[i] = 0;
    running_return_[i] = 0.0f;
    Env::Observe(params_, worlds_[i], Out<float>(layout_.obs) + i * Env::kObsDim);
  }

  // One step of env i, then, if its episode ended, final_obs, statistics and (autoreset) reset.
  void StepEnv(int64_t i, const Action* action) {
    const StepResult result = StepWorld(i, action);
    std::vector<float>& actions = episode_actions_[i];
    if (actions.capacity() == 0 && spec_.max_episode_steps > 0)
      actions.reserve(static_cast<std::size_t>(spec_.max_episode_steps) * Env::kActionDim);
    actions.insert(actions.end(), action, action + Env::kActionDim);
    const int32_t elapsed = ++elapsed_[i];
    running_return_[i] += result.reward;
    const bool truncated = spec_.max_episode_steps > 0 && elapsed >= spec_.max_episode_steps;
    Out<float>(layout_.rewards)[i] = result.reward;
    Out<uint8_t>(layout_.terminated)[i] = result.terminated ? 1 : 0;
    Out<uint8_t>(layout_.truncated)[i] = truncated ? 1 : 0;
    float* obs = Out<float>(layout_.obs) + i * Env::kObsDim;
    Env::Observe(params_, worlds_[i], obs);
    if (!(result.terminated || truncated)) return;
    std::copy(obs, obs + Env::kObsDim, Out<float>(layout_.final_obs) + i * Env::kObsDim);
    Out<float>(layout_.done_return)[i] = running_return_[i];
    Out<int32_t>(layout_.done_length)[i] = elapsed;
    if (autoreset_) ResetEnv(i);
  }

  EnvSpec spec_;
  Device device_;
  int64_t n_;
  Params params_;
  detail::OutputLayout layout_;
  detail::HostBlock host_;
  detail::HostBlock host_actions_;
  Buffer<uint8_t> device_block_;  // the outputs on the GPU (Device::kCuda only)
  std::unique_ptr<typename Env::World[]> worlds_;
  std::vector<uint64_t> seeds_;     // env i draws from (seeds_[i], Stream(i), counters_[i])
  int64_t lane_size_ = 0;           // envs per lane after ResetLanes (0: none)
  std::vector<uint32_t> counters_;  // next Philox counter of each env's kEnv stream
  std::vector<int32_t> elapsed_;
  std::vector<float> running_return_;
  std::vector<int64_t> episode_starts_;              // RNG counter before each env's episode began
  std::vector<std::vector<float>> episode_actions_;  // each env's actions since (snapshots replay them)
  ThreadPool pool_;
  uint64_t seed_ = 0;        // keys the random-action stream (the first env's seed)
  uint64_t step_index_ = 0;  // steps since Reset: keys the random-action stream
  bool reset_done_ = false;
  bool autoreset_ = true;
  void* stream_ = nullptr;  // cuda: a cudaStream_t for the output copies (nullptr: the per-thread default)
  StepOutputs outputs_;     // caller-owned output arrays (SetOutputs); null fields: our own
};

// Whether Env has `static void Draw(const Params&, const float* flat, Canvas&)`.
template <class Env, class = void>
struct HasFlatDraw : std::false_type {};
template <class Env>
struct HasFlatDraw<Env, std::void_t<decltype(Env::Draw(std::declval<const typename Env::Params&>(),
                                                       std::declval<const float*>(), std::declval<Canvas&>()))>>
    : std::true_type {};

// The registry entry of a host env. Env::kWorldBytes lets MakeVectorEnv refuse a batch that
// would not fit.
template <class Env>
EnvEntry MakeHostEnvEntry() {
  EnvEntry entry;
  entry.spec = Env::Spec();
  entry.host_stepped = true;
  const detail::OutputLayout one_env(1, Env::kObsDim);
  entry.bytes_per_env = Env::kWorldBytes + static_cast<int64_t>(one_env.bytes);
  // What one env step moves to the device on --device cuda: observation, reward and flags.
  entry.bytes_per_step = static_cast<int64_t>(Env::kObsDim * sizeof(float) + sizeof(float) + 2);
  entry.make_cpu = [](int64_t n, Device) { return std::make_unique<HostBatchedEnv<Env>>(n, Device::kCpu); };
  if (CudaBuilt()) {
    entry.make_cuda = [](int64_t n, Device) { return std::make_unique<HostBatchedEnv<Env>>(n, Device::kCuda); };
  }
  if constexpr (HasFlatDraw<Env>::value) {
    entry.draw = [](const float* flat, Canvas& canvas) { Env::Draw(typename Env::Params{}, flat, canvas); };
  }
  return entry;
}

}  // namespace cugym
