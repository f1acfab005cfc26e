// BatchedEnv<Env, Backend>: the VectorEnv implementation for one env type on one back end.
// Owns the device arrays; the back end (backend_cpu.h or backend_cuda.cuh) runs the per-env
// functions of batch_kernels.h over them. Included only by the translation units that
// instantiate envs (one per back end), never by users of the library.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/memory.h"
#include "core/registry.h"
#include "core/vector_env.h"
#include "envs/batch_kernels.h"

namespace cugym {

namespace detail {
// The error for Step(int32) on a Box env (env_is_box) or Step(float) on a Discrete one.
[[noreturn]] inline void ThrowWrongActionKind(const std::string& id, bool env_is_box) {
  throw std::invalid_argument(env_is_box ? id + " has a Box action space: step it with float actions"
                                         : id + " has a Discrete action space: step it with int32 actions");
}
}  // namespace detail

// Device bytes per env: state, seed, counters and every per-env output.
template <class Env>
constexpr int64_t BytesPerEnv() {
  return static_cast<int64_t>(sizeof(typename Env::State) + sizeof(uint64_t) + 3 * sizeof(uint32_t) +
                              3 * sizeof(float) + 2 * sizeof(uint8_t) + 2 * Env::kObsDim * sizeof(float) +
                              sizeof(int32_t) + Env::kActionDim * sizeof(typename Env::Action));
}

// Bytes one step moves per env in phase 1 (done envs add a reset): state read and written, the
// seed read, three 32-bit counters read and written, observation, reward and two flags written.
template <class Env>
constexpr int64_t StepTrafficBytes() {
  return static_cast<int64_t>(2 * sizeof(typename Env::State) + sizeof(uint64_t) + 3 * 2 * sizeof(uint32_t) +
                              Env::kObsDim * sizeof(float) + sizeof(float) + 2 * sizeof(uint8_t));
}

template <class Env, class Backend>
class BatchedEnv final : public VectorEnv {
 public:
  using State = typename Env::State;
  using Action = typename Env::Action;

  BatchedEnv(int64_t num_envs, Device device, typename Env::Params params = {})
      : spec_(Env::Spec()),
        device_(device),
        n_(num_envs),
        params_(params),
        states_(device, num_envs),
        seeds_(device, num_envs),
        rng_counters_(device, num_envs),
        elapsed_(device, num_envs),
        running_return_(device, num_envs),
        obs_(device, num_envs * Env::kObsDim),
        final_obs_(device, num_envs * Env::kObsDim),
        rewards_(device, num_envs),
        terminated_(device, num_envs),
        truncated_(device, num_envs),
        done_return_(device, num_envs),
        done_length_(device, num_envs) {
    for (Buffer<float>* b : {&obs_, &final_obs_, &rewards_, &done_return_, &running_return_}) b->Zero();
    terminated_.Zero();
    truncated_.Zero();
    done_length_.Zero();
    elapsed_.Zero();
    rng_counters_.Zero();
    seeds_.Zero();
    states_.Zero();
  }

  const EnvSpec& spec() const override { return spec_; }
  Device device() const override { return device_; }
  int64_t num_envs() const override { return n_; }

  void Reset(uint64_t seed) override {
    uniform_seeds_ = true;
    lane_size_ = 0;
    Restart(seed);
  }

  void ResetSeeds(const std::vector<uint64_t>& seeds) override {
    if (static_cast<int64_t>(seeds.size()) != n_)
      throw std::invalid_argument("ResetSeeds: expected " + std::to_string(n_) + " seeds, got " +
                                  std::to_string(seeds.size()));
    lane_size_ = 0;
    SetSeeds(seeds);
  }

  void ResetLanes(const std::vector<uint64_t>& seeds, int64_t lane_size) override {
    CheckLanes(seeds, lane_size, n_);
    lane_size_ = lane_size;
    SetSeeds(LaneEnvSeeds(seeds, lane_size));
  }
  bool supports_lanes() const override { return true; }

  void Step(const int32_t* actions) override {
    if constexpr (Env::kNumActions > 0) {
      RunSteps(actions, 1);
    } else {
      (void)actions;
      detail::ThrowWrongActionKind(spec_.id, true);
    }
  }
  void Step(const float* actions) override {
    if constexpr (Env::kNumActions == 0) {
      RunSteps(actions, 1);
    } else {
      (void)actions;
      detail::ThrowWrongActionKind(spec_.id, false);
    }
  }
  void StepRandom(int64_t steps) override {
    if (steps < 0) throw std::invalid_argument("StepRandom: steps must be >= 0");
    RunSteps(nullptr, steps);
  }

  void set_stream(void* stream) override {
    CheckBlockingStream(device_, stream);
    stream_ = stream;
  }
  // One launch on the stream per Step, reading only device arrays and the fixed StepArgs.
  bool step_capturable() const override { return true; }
  void set_autoreset(bool on) override { autoreset_ = on; }
  void ResetDone() override {
    if (!reset_done_) throw std::logic_error("VectorEnv: call Reset before ResetDone");
    Backend::template ResetDone<Env>(arrays(), params_, seed_, nullptr, n_, stream_);
  }
  void ResetMasked(const uint8_t* mask) override {
    if (!reset_done_) throw std::logic_error("VectorEnv: call Reset before ResetMasked");
    if (mask == nullptr) throw std::invalid_argument("ResetMasked: null mask");
    Backend::template ResetDone<Env>(arrays(), params_, seed_, mask, n_, stream_);
  }
  void SetOutputs(const StepOutputs& outputs) override { outputs_ = outputs; }
  bool autoreset() const override { return autoreset_; }

  const float* obs() const override { return Out(outputs_.obs, obs_); }
  const float* final_obs() const override { return final_obs_.data(); }
  const float* rewards() const override { return Out(outputs_.rewards, rewards_); }
  const uint8_t* terminated() const override { return Out(outputs_.terminated, terminated_); }
  const uint8_t* truncated() const override { return Out(outputs_.truncated, truncated_); }
  const float* episode_returns() const override { return done_return_.data(); }
  const int32_t* episode_lengths() const override { return done_length_.data(); }

  std::vector<float> GetStates(int64_t first, int64_t count) const override {
    CheckRange(first, count);
    std::vector<State> states = states_.ToHost(first, count);
    std::vector<float> flat(count * Env::kStateDim);
    for (int64_t i = 0; i < count; ++i) Env::ToFlat(states[i], flat.data() + i * Env::kStateDim);
    return flat;
  }

  void SetStates(int64_t first, int64_t count, const std::vector<float>& flat) override {
    CheckFlatStates(first, count, n_, Env::kStateDim, flat.size());
    std::vector<State> states(count);
    for (int64_t i = 0; i < count; ++i) states[i] = Env::FromFlat(flat.data() + i * Env::kStateDim);
    states_.FromHost(states.data(), count, first);
    ZeroBytes(device_, elapsed_.data() + first, count * sizeof(int32_t));
    ZeroBytes(device_, running_return_.data() + first, count * sizeof(float));
    Backend::template Observe<Env>(arrays(), params_, first, count, stream_);
    reset_done_ = true;
  }

  bool SaveSnapshot(VectorEnvSnapshot* snapshot) const override {
    snapshot->seed = seed_;
    // Lanes keep every env's seed (LaneSeedsOf reads a lane's from its first env).
    snapshot->env_seeds = !uniform_seeds_  ? seeds_.ToHost()
                          : lane_size_ > 0 ? std::vector<uint64_t>(static_cast<std::size_t>(n_), seed_)
                                           : std::vector<uint64_t>();
    snapshot->lane_size = lane_size_;
    snapshot->steps = step_index_;
    snapshot->states = GetStates(0, n_);
    snapshot->rng_counters = rng_counters_.ToHost();
    snapshot->elapsed = elapsed_.ToHost();
    snapshot->running_returns = running_return_.ToHost();
    return true;
  }

  void LoadSnapshot(const VectorEnvSnapshot& s) override {
    const auto n = static_cast<std::size_t>(n_);
    CheckSnapshotFits(s, n_, Env::kStateDim, spec_.id);
    // Flags, rewards and the rest start clean; then the saved state on top.
    if (s.lane_size > 0)
      ResetLanes(LaneSeedsOf(s), s.lane_size);
    else if (s.env_seeds.empty())
      Reset(s.seed);
    else
      ResetSeeds(s.env_seeds);
    SetStates(0, n_, s.states);
    rng_counters_.FromHost(s.rng_counters.data(), n);
    elapsed_.FromHost(s.elapsed.data(), n);
    running_return_.FromHost(s.running_returns.data(), n);
    step_index_ = s.steps;
  }

 private:
  template <class T>
  static T* Out(T* redirected, const Buffer<T>& own) {
    return redirected != nullptr ? redirected : const_cast<T*>(own.data());
  }

  // Each env's seed (equal seeds are Reset's case: the steps then need no per-env seed, and
  // arrays().seeds is null; not so for lanes of equal seeds beyond the first lane, whose envs
  // draw as env i % lane_size), then Reset's work.
  void SetSeeds(const std::vector<uint64_t>& seeds) {
    uniform_seeds_ = (lane_size_ == 0 || lane_size_ == n_) &&
                     std::all_of(seeds.begin(), seeds.end(), [&](uint64_t s) { return s == seeds[0]; });
    if (!uniform_seeds_) seeds_.FromHost(seeds.data(), seeds.size());
    Restart(seeds[0]);
  }

  // Reset's work once the seeds are set: `seed` is the batch's (random actions; every env's
  // where uniform_seeds_).
  void Restart(uint64_t seed) {
    seed_ = seed;
    step_index_ = 0;
    rng_counters_.Zero();
    ZeroBytes(device_, Out(outputs_.terminated, terminated_), n_ * sizeof(uint8_t));
    ZeroBytes(device_, Out(outputs_.truncated, truncated_), n_ * sizeof(uint8_t));
    ZeroBytes(device_, Out(outputs_.rewards, rewards_), n_ * sizeof(float));
    Backend::template Reset<Env>(arrays(), params_, seed_, 0, n_, stream_);
    reset_done_ = true;
  }

  detail::BatchArrays<Env> arrays() {
    return {states_.data(),
            uniform_seeds_ ? nullptr : seeds_.data(),
            rng_counters_.data(),
            elapsed_.data(),
            running_return_.data(),
            Out(outputs_.obs, obs_),
            final_obs_.data(),
            Out(outputs_.rewards, rewards_),
            Out(outputs_.terminated, terminated_),
            Out(outputs_.truncated, truncated_),
            done_return_.data(),
            done_length_.data(),
            uniform_seeds_ ? 0 : lane_size_};
  }

  void CheckRange(int64_t first, int64_t count) const { CheckEnvRange(first, count, n_); }

  void RunSteps(const Action* actions, int64_t steps) {
    if (!reset_done_) throw std::logic_error("VectorEnv: call Reset before Step");
    detail::StepArgs<Env> args{params_, seed_, spec_.max_episode_steps, autoreset_, actions};
    Backend::template Step<Env>(arrays(), args, n_, step_index_, steps, stream_);
    step_index_ += steps;
  }

  EnvSpec spec_;
  Device device_;
  int64_t n_;
  typename Env::Params params_;
  uint64_t seed_ = 0;          // keys the random-action stream (the first env's seed)
  bool uniform_seeds_ = true;  // every env has seed_ (seeds_ unused)
  int64_t lane_size_ = 0;      // envs per lane after ResetLanes (0: none)
  uint64_t step_index_ = 0;    // steps since Reset: keys the random-action stream
  bool reset_done_ = false;
  bool autoreset_ = true;
  void* stream_ = nullptr;  // CUDA: a cudaStream_t (nullptr: the per-thread default stream)
  StepOutputs outputs_;     // caller-owned output arrays (SetOutputs); null fields: our own
  Buffer<State> states_;
  Buffer<uint64_t> seeds_;
  Buffer<uint32_t> rng_counters_;
  Buffer<int32_t> elapsed_;
  Buffer<float> running_return_;
  Buffer<float> obs_;
  Buffer<float> final_obs_;
  Buffer<float> rewards_;
  Buffer<uint8_t> terminated_;
  Buffer<uint8_t> truncated_;
  Buffer<float> done_return_;
  Buffer<int32_t> done_length_;
};

// Whether Env has `static void Draw(const Params&, const State&, Canvas&)`.
template <class Env, class = void>
struct HasDraw : std::false_type {};
template <class Env>
struct HasDraw<Env,
               std::void_t<decltype(Env::Draw(std::declval<const typename Env::Params&>(),
                                              std::declval<const typename Env::State&>(), std::declval<Canvas&>()))>>
    : std::true_type {};

// Factories, defined per back end and explicitly instantiated for each env in the translation
// unit of that back end (envs/cpu/*.cpp, builtin_cuda.cu).
template <class Env>
std::unique_ptr<VectorEnv> MakeCpuVectorEnv(int64_t num_envs);
template <class Env>
std::unique_ptr<VectorEnv> MakeCudaVectorEnv(int64_t num_envs);

// The registry entry of an env: spec, size and the factories this build has.
template <class Env>
EnvEntry MakeEnvEntry() {
  EnvEntry entry;
  entry.spec = Env::Spec();
  entry.bytes_per_env = BytesPerEnv<Env>();
  entry.bytes_per_step = StepTrafficBytes<Env>();
  entry.make_cpu = [](int64_t n, Device) { return MakeCpuVectorEnv<Env>(n); };
  if constexpr (HasDraw<Env>::value) {
    entry.draw = [](const float* flat, Canvas& canvas) {
      Env::Draw(typename Env::Params{}, Env::FromFlat(flat), canvas);
    };
  }
#ifdef CUGYM_HAVE_CUDA
  entry.make_cuda = [](int64_t n, Device) { return MakeCudaVectorEnv<Env>(n); };
#endif
  return entry;
}

}  // namespace cugym
