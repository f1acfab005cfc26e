// Python bindings of cugym's VectorEnv: each call hands its results out as arrays new to the
// caller that the C++ step itself filled (VectorEnv::SetOutputs), NumPy on the CPU (recycled from
// earlier calls once nothing refers to them, numpy_arrays.h) and DLPack-capable device arrays on
// CUDA, with the GIL released while the envs step. On the CPU a step also builds
// Gymnasium's info dict for its autoreset mode (final_obs, final_info, episode statistics) in one
// pass over the envs that ended, and keeps the modes' bookkeeping, so cugym/vector.py's step is
// one call. Argument checks raise Python exceptions naming what was wrong.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/flag_mask.h"
#include "core/memory.h"
#include "core/raster_canvas.h"
#include "python/src/actions.h"
#include "python/src/module.h"
#include "python/src/numpy_arrays.h"

namespace nb = nanobind;

namespace cugym::python {
namespace {

// One allocation holds all of a step's outputs; a capsule owning it keeps it alive for as
// long as any of the arrays viewing it lives.
nb::capsule OwnerOf(void* block, Device device) {
  if (device == Device::kCuda) return nb::capsule(block, [](void* p) noexcept { FreeBytes(Device::kCuda, p); });
  return nb::capsule(block, [](void* p) noexcept { FreeBytes(Device::kCpu, p); });
}

// A new C-contiguous device array viewing `data` (owned by `owner`) on CUDA device `cuda_id`: an
// object with __dlpack__ / __dlpack_device__. CPU arrays are NumPy's own (numpy_arrays.h).
template <class T>
nb::object ExportDevice(T* data, size_t ndim, const size_t* shape, nb::handle owner, int cuda_id) {
  return nb::ndarray<nb::array_api, T>(data, ndim, shape, owner, nullptr, nb::dtype<T>(), nb::device::cuda::value,
                                       cuda_id)
      .cast();
}

// `lead` followed by the observation's own shape: (n, 4) for CartPole, (n, 10, 10, 4) for
// MinAtar Breakout. The data are the env's flat rows either way (row-major, C-contiguous).
template <class T>
std::vector<T> WithObsShape(T lead, const EnvSpec& spec) {
  std::vector<T> shape{lead};
  for (int64_t d : spec.observation_space.shape) shape.push_back(static_cast<T>(d));
  return shape;
}

std::size_t RoundUp(std::size_t bytes) { return (bytes + 63) / 64 * 64; }

double Seconds() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Gymnasium's autoreset modes; the env keeps their bookkeeping (CPU only, see Step).
enum class Autoreset { kSameStep, kNextStep, kDisabled };

class PyVectorEnv {
 public:
  PyVectorEnv(const std::string& id, int64_t num_envs, const std::string& device)
      : env_(MakeVectorEnv(GlobalRegistry(), id, num_envs, ResolveDevice(device))),
        spec_(env_->spec()),
        n_(num_envs),
        device_(env_->device()),
        actions_(spec_, num_envs),
        pending_(static_cast<size_t>(num_envs)),
        ended_(static_cast<size_t>(num_envs)),
        episode_start_(static_cast<size_t>(num_envs)) {
    if (device_ == Device::kCpu) {
      pools_ = std::make_unique<Pools>(num_envs, spec_);
      return;
    }
    obs_shape_ = WithObsShape(static_cast<size_t>(num_envs), spec_);
    // The GPU the env's memory was just allocated on; every later call makes it current again.
    cuda_device_ = CudaCurrentDevice();
    stream_ = Stream(device_);
    env_->set_stream(stream_.get());
  }

  std::string device() const { return DeviceName(device_); }
  int64_t num_envs() const { return n_; }

  // mode: "same_step", "next_step" or "disabled"; statistics: add Gymnasium's "episode" keys.
  void Configure(const std::string& mode, bool statistics) {
    if (mode == "same_step") {
      mode_ = Autoreset::kSameStep;
    } else if (mode == "next_step") {
      mode_ = Autoreset::kNextStep;
    } else if (mode == "disabled") {
      mode_ = Autoreset::kDisabled;
    } else {
      throw nb::value_error(("autoreset mode must be same_step, next_step or disabled, got " + mode).c_str());
    }
    statistics_ = statistics;
    // NEXT_STEP also steps with autoreset off: the step after an env ended resets it.
    Live().set_autoreset(mode_ == Autoreset::kSameStep);
  }

  // Starts every env; returns the observations.
  nb::object Reset(uint64_t seed) {
    VectorEnv& env = Live();
    ScopedCudaDevice on_device(device_, cuda_device_);
    Outputs out = Allocate();
    {
      nb::gil_scoped_release release;
      env.Reset(seed);
      WaitForEnv();
    }
    Restarted();
    return out.obs;
  }

  // Starts every env with a seed of its own (VectorEnv::ResetSeeds: env i draws from (seeds[i],
  // i)); returns the observations.
  nb::object ResetSeeds(nb::ndarray<const uint64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu> seeds) {
    VectorEnv& env = Live();
    if (seeds.shape(0) != static_cast<size_t>(n_))
      throw nb::value_error(
          ("expected " + std::to_string(n_) + " seeds, one per env, got " + std::to_string(seeds.shape(0))).c_str());
    const std::vector<uint64_t> keys(seeds.data(), seeds.data() + n_);
    ScopedCudaDevice on_device(device_, cuda_device_);
    Outputs out = Allocate();
    {
      nb::gil_scoped_release release;
      env.ResetSeeds(keys);
      WaitForEnv();
    }
    Restarted();
    return out.obs;
  }

  // One step with `actions`; returns (obs, rewards, terminated, truncated, infos), all new. On the
  // CPU `actions` is a NumPy array (CpuActions converts and checks it) and infos has Gymnasium's
  // layout for the autoreset mode, built here in one pass over the ended envs; on CUDA it is any
  // DLPack array on the env's GPU (ImportDeviceActions) and infos is empty.
  nb::tuple Step(nb::handle actions) {
    VectorEnv& env = Live();
    if (!reset_done_) throw std::runtime_error("call reset() before step()");
    if (any_ended_) ThrowEnded();
    const bool discrete = spec_.action_space.is_discrete();
    if (device_ == Device::kCpu) {
      const void* a = actions_.Get(actions);
      Outputs out = Allocate();
      {
        nb::gil_scoped_release release;
        if (discrete)
          env.Step(static_cast<const int32_t*>(a));
        else
          env.Step(static_cast<const float*>(a));
        if (any_pending_) env.ResetMasked(pending_.data());  // NEXT_STEP: obs rows, reward 0, flags 0
      }
      return nb::make_tuple(out.obs, out.rewards, out.terminated, out.truncated, CpuInfos(out));
    }
    ScopedCudaDevice on_device(device_, cuda_device_);
    const nb::ndarray<nb::ro> a = ImportDeviceActions(actions);
    CheckDeviceActions(a);
    Outputs out = Allocate();
    {
      nb::gil_scoped_release release;
      if (discrete)
        env.Step(static_cast<const int32_t*>(a.data()));
      else
        env.Step(static_cast<const float*>(a.data()));
      // DLPack consumers may read on any stream (cugym's exports make none wait): the step's work
      // must be done first. Its work is on the env's stream; the device's other streams
      // (PyTorch's, say) are not waited for.
      WaitForEnv();
    }
    return nb::make_tuple(out.obs, out.rewards, out.terminated, out.truncated, nb::dict());
  }

  // Resets the envs where `mask` is true, as Gymnasium's reset(options={"reset_mask": mask}), and
  // returns a new obs array for all envs (the others keep their current observation, reward and
  // flags, in new arrays too). All or nothing: everything that can fail (the mask's checks, the
  // new arrays, the mask's copy to the device, the copies of the current outputs) comes before the
  // env is pointed at the new arrays, and only a completed reset makes them the env's outputs, so
  // a refused mask leaves the arrays a caller holds, the env and the bookkeeping as they were.
  nb::object ResetMasked(nb::ndarray<nb::ro> mask) {
    VectorEnv& env = Live();
    if (!reset_done_) throw std::runtime_error("call reset() without a reset_mask first");
    if (mask.ndim() != 1 || mask.shape(0) != static_cast<size_t>(n_) || mask.dtype() != nb::dtype<bool>() ||
        mask.device_type() != nb::device::cpu::value || mask.stride(0) != 1)
      throw nb::value_error(
          ("reset_mask must be a contiguous NumPy bool array of shape (" + std::to_string(n_) + ",)").c_str());
    const uint8_t* m = static_cast<const uint8_t*>(mask.data());
    ScopedCudaDevice on_device(device_, cuda_device_);
    Outputs out = Allocate(/*point_env_at_them=*/false);
    {
      // last_outputs_ (the env's current arrays) is left alone until the GIL is back: Python
      // references change hands only with it held, and it keeps the arrays read here alive.
      nb::gil_scoped_release release;
      Buffer<uint8_t> device_mask(device_, static_cast<size_t>(n_));
      device_mask.FromHost(m, static_cast<size_t>(n_));
      // VectorEnv::ResetMasked rewrites only the masked envs' rows: the new arrays start as whole
      // copies of the current outputs, never partly stale.
      CopyOutputs(env, out.pointers);
      try {
        env.SetOutputs(out.pointers);
        env.ResetMasked(device_mask.data());
        WaitForEnv();
      } catch (...) {
        env.SetOutputs(last_outputs_.pointers);  // back to the arrays it wrote before
        throw;
      }
    }
    last_outputs_ = out;
    const double now = Seconds();
    for (int64_t i = 0; i < n_; ++i)
      if (m[i]) {
        pending_[i] = ended_[i] = 0;
        episode_start_[i] = now;
      }
    pending_idx_.erase(
        std::remove_if(pending_idx_.begin(), pending_idx_.end(), [&](int64_t i) { return pending_[i] == 0; }),
        pending_idx_.end());
    any_pending_ = !pending_idx_.empty();
    any_ended_ = std::find(ended_.begin(), ended_.end(), 1) != ended_.end();
    return out.obs;
  }

  // DISABLED: whether some env has ended and waits for a masked reset.
  bool has_ended() const { return any_ended_; }

  // Indices of the envs whose terminated or truncated flag is set (flags copied to the host).
  nb::object DoneIndices() {
    VectorEnv& env = Live();
    ScopedCudaDevice on_device(device_, cuda_device_);
    const std::vector<uint8_t> term = ToHostBytes(env.terminated()), trunc = ToHostBytes(env.truncated());
    std::vector<int64_t> idx;
    for (int64_t i = 0; i < n_; ++i)
      if (term[i] | trunc[i]) idx.push_back(i);
    void* block = AllocateBytes(Device::kCpu, sizeof(int64_t) * std::max<size_t>(idx.size(), 1));
    nb::capsule owner = OwnerOf(block, Device::kCpu);
    std::copy(idx.begin(), idx.end(), static_cast<int64_t*>(block));
    return nb::ndarray<nb::numpy, int64_t>(block, {idx.size()}, owner).cast();
  }

  // The rows of envs that ended in the last step, copied out: (final_obs [k, *obs shape],
  // episode returns [k], episode lengths [k]) for the k env indices given.
  nb::tuple Finished(nb::ndarray<const int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu> indices) {
    VectorEnv& env = Live();
    ScopedCudaDevice on_device(device_, cuda_device_);
    const size_t k = indices.shape(0);
    const int64_t obs_dim = spec_.obs_dim();
    const size_t bytes = RoundUp(sizeof(float) * k * obs_dim) + RoundUp(sizeof(float) * k) + sizeof(int32_t) * k;
    void* block = AllocateBytes(Device::kCpu, bytes + 64);
    nb::capsule owner = OwnerOf(block, Device::kCpu);
    float* final_obs = static_cast<float*>(block);
    float* returns = reinterpret_cast<float*>(static_cast<char*>(block) + RoundUp(sizeof(float) * k * obs_dim));
    int32_t* lengths = reinterpret_cast<int32_t*>(reinterpret_cast<char*>(returns) + RoundUp(sizeof(float) * k));
    const int64_t* idx = indices.data();
    for (size_t j = 0; j < k; ++j)
      if (idx[j] < 0 || idx[j] >= n_)
        throw nb::index_error(("env index " + std::to_string(idx[j]) + " out of range").c_str());
    for (size_t j = 0; j < k; ++j) {
      const int64_t i = idx[j];
      CopyBytes(final_obs + j * obs_dim, Device::kCpu, env.final_obs() + i * obs_dim, device_, sizeof(float) * obs_dim);
      CopyBytes(returns + j, Device::kCpu, env.episode_returns() + i, device_, sizeof(float));
      CopyBytes(lengths + j, Device::kCpu, env.episode_lengths() + i, device_, sizeof(int32_t));
    }
    const std::vector<size_t> final_shape = WithObsShape(k, spec_);
    return nb::make_tuple(
        nb::ndarray<nb::numpy, float>(final_obs, final_shape.size(), final_shape.data(), owner).cast(),
        nb::ndarray<nb::numpy, float>(returns, {k}, owner).cast(),
        nb::ndarray<nb::numpy, int32_t>(lengths, {k}, owner).cast());
  }

  // Env i drawn on a new (height, width, 3) uint8 frame with the CPU rasterizer.
  nb::object Render(int64_t i) {
    VectorEnv& env = Live();
    const EnvEntry& entry = GlobalRegistry().Get(spec_.id);
    if (!entry.draw) throw nb::type_error((spec_.id + " does not draw itself (no render support)").c_str());
    if (i < 0 || i >= n_) throw nb::index_error(("env index " + std::to_string(i) + " out of range").c_str());
    const size_t w = spec_.render_width, h = spec_.render_height;
    void* block = AllocateBytes(Device::kCpu, w * h * 3);
    nb::capsule owner = OwnerOf(block, Device::kCpu);
    ScopedCudaDevice on_device(device_, cuda_device_);
    const std::vector<float> state = env.GetStates(i, 1);
    RasterCanvas canvas(static_cast<uint8_t*>(block), static_cast<int>(w), static_cast<int>(h));
    entry.draw(state.data(), canvas);
    return nb::ndarray<nb::numpy, uint8_t>(block, {h, w, 3}, owner).cast();
  }

  std::vector<float> GetStates(int64_t first, int64_t count) {
    VectorEnv& env = Live();
    ScopedCudaDevice on_device(device_, cuda_device_);
    return env.GetStates(first, count);
  }

  void Close() {
    ScopedCudaDevice on_device(device_, cuda_device_);
    if (env_) env_->SetOutputs({});
    env_.reset();
    last_outputs_ = Outputs();
    pools_.reset();
  }
  bool closed() const { return env_ == nullptr; }

 private:
  struct Outputs {
    StepOutputs pointers;
    nb::object obs, rewards, terminated, truncated;
  };

  // The CPU's recycled arrays, one pool per dtype and shape (see ArrayPool); observations have
  // the env's shape, (n, *shape), and final_obs rows its shape.
  struct Pools {
    Pools(int64_t n, const EnvSpec& spec)
        : obs(NpType::kFloat32, WithObsShape(n, spec)),
          rewards(NpType::kFloat32, {n}),
          flags(NpType::kBool, {n}),
          doubles(NpType::kFloat64, {n}),
          ints(NpType::kInt64, {n}),
          final_obs(n, spec.observation_space.shape) {}
    ArrayPool obs, rewards, flags, doubles, ints;
    FinalObsPool final_obs;
  };

  // The info dict of a CPU step whose outputs are `out` (see Step), and the autoreset bookkeeping.
  nb::object CpuInfos(const Outputs& out) {
    const double now = Seconds();
    if (any_pending_) {  // their new episodes started in this step
      for (int64_t i : pending_idx_) {
        episode_start_[i] = now;
        pending_[i] = 0;
      }
      pending_idx_.clear();
      any_pending_ = false;
    }
    const uint8_t* term = out.pointers.terminated;
    const uint8_t* trunc = out.pointers.truncated;
    const int64_t k = EndedEnvs(term, trunc);
    if (k == 0) return nb::dict();
    if (mode_ == Autoreset::kNextStep) {
      pending_idx_.assign(done_idx_.begin(), done_idx_.begin() + k);
      for (int64_t i : pending_idx_) pending_[i] = 1;
      any_pending_ = true;
    } else if (mode_ == Autoreset::kDisabled) {
      for (int64_t j = 0; j < k; ++j) ended_[done_idx_[j]] = 1;
      any_ended_ = true;
    }
    // Gymnasium's layout: the done mask, and r, l, t over all envs with zeros where an env did
    // not end; SAME_STEP adds final_obs, None except for one row array per ended env.
    const bool same_step = mode_ == Autoreset::kSameStep;
    const size_t n = static_cast<size_t>(n_);
    Pools& pool = *pools_;
    nb::object done_array = pool.flags.Take(round_);
    bool* done = static_cast<bool*>(ArrayData(done_array));
    std::memset(done, 0, n);
    nb::object r_array, l_array, t_array, final_obs_array;
    double *r = nullptr, *t = nullptr;
    int64_t* l = nullptr;
    if (statistics_) {
      r_array = pool.doubles.Take(round_);
      l_array = pool.ints.Take(round_);
      t_array = pool.doubles.Take(round_);
      r = static_cast<double*>(ArrayData(r_array));
      l = static_cast<int64_t*>(ArrayData(l_array));
      t = static_cast<double*>(ArrayData(t_array));
      std::memset(r, 0, 8 * n);
      std::memset(l, 0, 8 * n);
      std::memset(t, 0, 8 * n);
    }
    const VectorEnv& env = *env_;
    if (same_step) final_obs_array = pool.final_obs.Make(env.final_obs(), done_idx_.data(), k, round_);
    const float* returns = env.episode_returns();
    const int32_t* lengths = env.episode_lengths();
    for (int64_t j = 0; j < k; ++j) {
      const int64_t i = done_idx_[j];
      done[i] = true;
      if (statistics_) {
        r[i] = returns[i];
        l[i] = lengths[i];
        t[i] = std::rint((now - episode_start_[i]) * 1e6) / 1e6;  // np.round(x, 6), as Gymnasium
      }
      episode_start_[i] = now;
    }
    const Keys& key = Keys::Get();
    nb::dict stats;
    if (statistics_) {
      nb::dict episode;
      episode[key.r] = r_array;
      episode[key.l] = l_array;
      episode[key.t] = t_array;
      episode[key.mask_r] = done_array;
      episode[key.mask_l] = done_array;
      episode[key.mask_t] = done_array;
      stats[key.episode] = episode;
      stats[key.mask_episode] = done_array;
    }
    if (!same_step) return std::move(stats);
    nb::dict infos;
    infos[key.final_obs] = final_obs_array;
    infos[key.mask_final_obs] = done_array;
    infos[key.final_info] = stats;
    infos[key.mask_final_info] = done_array;
    return std::move(infos);
  }

  // Writes the indices of the envs whose terminated or truncated flag is set to done_idx_ and
  // returns how many there are: 64 envs at a time as a bit mask (core/flag_mask.h), whose set bits
  // are the few that ended.
  int64_t EndedEnvs(const uint8_t* term, const uint8_t* trunc) {
    done_idx_.resize(static_cast<size_t>(n_));
    int64_t k = 0, i = 0;
    for (; i + 64 <= n_; i += 64)
      for (uint64_t set = NonzeroMask64(term + i, trunc + i); set != 0; set &= set - 1)
        done_idx_[k++] = i + __builtin_ctzll(set);
    for (; i < n_; ++i) {
      done_idx_[k] = i;
      k += (term[i] | trunc[i]) != 0;
    }
    return k;
  }

  // The info dict's keys, made once.
  struct Keys {
    nb::str r{"r"}, l{"l"}, t{"t"}, mask_r{"_r"}, mask_l{"_l"}, mask_t{"_t"}, episode{"episode"},
        mask_episode{"_episode"}, final_obs{"final_obs"}, mask_final_obs{"_final_obs"}, final_info{"final_info"},
        mask_final_info{"_final_info"};
    static const Keys& Get() {
      static const Keys* keys = new Keys;  // never destroyed: Python may be gone by then
      return *keys;
    }
  };

  [[noreturn]] void ThrowEnded() const {
    std::string list;
    int shown = 0;
    for (int64_t i = 0; i < n_ && shown < 8; ++i)
      if (ended_[i]) list += (shown++ ? ", " : "") + std::to_string(i);
    const bool more = std::count(ended_.begin(), ended_.end(), 1) > shown;
    throw std::runtime_error("autoreset is DISABLED and envs [" + list + (more ? ", ..." : "") +
                             "] have ended: reset them with reset(options={'reset_mask': mask}) before stepping");
  }

  // After a full reset: no env pending or ended, every episode starts now.
  void Restarted() {
    reset_done_ = true;
    std::fill(pending_.begin(), pending_.end(), 0);
    pending_idx_.clear();
    std::fill(ended_.begin(), ended_.end(), 0);
    any_pending_ = any_ended_ = false;
    std::fill(episode_start_.begin(), episode_start_.end(), Seconds());
  }

  std::vector<uint8_t> ToHostBytes(const uint8_t* flags) const {
    std::vector<uint8_t> host(static_cast<size_t>(n_));
    CopyBytes(host.data(), Device::kCpu, flags, device_, host.size());
    return host;
  }

  VectorEnv& Live() {
    if (!env_) throw std::runtime_error("this cugym " + spec_.id + " env is closed");
    return *env_;
  }

  // New output arrays for one call; by default the env writes into them next. On the CPU they
  // come from the pools (recycled once nothing else holds them), on CUDA from one device block.
  // last_outputs_ keeps the arrays the env writes into, so its outputs stay valid for calls that
  // read them later (done_indices, finished, a masked reset) even when Python dropped the arrays,
  // and a pool never hands them out while the env points at them.
  Outputs Allocate(bool point_env_at_them = true) {
    ++round_;
    Outputs out;
    if (device_ == Device::kCpu) {
      Pools& pool = *pools_;
      out.obs = pool.obs.Take(round_);
      out.rewards = pool.rewards.Take(round_);
      out.terminated = pool.flags.Take(round_);
      out.truncated = pool.flags.Take(round_);
      out.pointers = {static_cast<float*>(ArrayData(out.obs)), static_cast<float*>(ArrayData(out.rewards)),
                      static_cast<uint8_t*>(ArrayData(out.terminated)),
                      static_cast<uint8_t*>(ArrayData(out.truncated))};
    } else {
      const size_t n = static_cast<size_t>(n_), obs_dim = static_cast<size_t>(spec_.obs_dim());
      const size_t obs_bytes = RoundUp(sizeof(float) * n * obs_dim), reward_bytes = RoundUp(sizeof(float) * n),
                   flag_bytes = RoundUp(n);
      char* block = static_cast<char*>(AllocateBytes(device_, obs_bytes + reward_bytes + 2 * flag_bytes));
      nb::capsule owner = OwnerOf(block, device_);
      out.pointers = {reinterpret_cast<float*>(block), reinterpret_cast<float*>(block + obs_bytes),
                      reinterpret_cast<uint8_t*>(block + obs_bytes + reward_bytes),
                      reinterpret_cast<uint8_t*>(block + obs_bytes + reward_bytes + flag_bytes)};
      out.obs = ExportDevice(out.pointers.obs, obs_shape_.size(), obs_shape_.data(), owner, cuda_device_);
      out.rewards = ExportDevice(out.pointers.rewards, 1, &n, owner, cuda_device_);
      out.terminated = ExportDevice(reinterpret_cast<bool*>(out.pointers.terminated), 1, &n, owner, cuda_device_);
      out.truncated = ExportDevice(reinterpret_cast<bool*>(out.pointers.truncated), 1, &n, owner, cuda_device_);
    }
    if (point_env_at_them) {
      env_->SetOutputs(out.pointers);
      last_outputs_ = out;
    }
    return out;
  }

  // Waits for the env's work: on CUDA its stream (every launch and asynchronous copy of the env;
  // the synchronous copies before them are ordered by the blocking stream), not the whole device.
  void WaitForEnv() const {
    if (device_ == Device::kCuda) SynchronizeStream(device_, stream_.get());
  }

  // The env's current observations, rewards and flags into the arrays of `to`: on CUDA queued on
  // the env's stream, ahead of the env's next work there.
  void CopyOutputs(const VectorEnv& env, const StepOutputs& to) const {
    const size_t n = static_cast<size_t>(n_);
    void* s = stream_.get();
    CopyBytesAsync(to.obs, env.obs(), sizeof(float) * n * spec_.obs_dim(), device_, s);
    CopyBytesAsync(to.rewards, env.rewards(), sizeof(float) * n, device_, s);
    CopyBytesAsync(to.terminated, env.terminated(), n, device_, s);
    CopyBytesAsync(to.truncated, env.truncated(), n, device_, s);
  }

  // Device actions (CUDA), taken as the DLPack protocol hands them over: their device is checked
  // first (__dlpack_device__), then __dlpack__(stream=the env's stream) asks the producer to make
  // that stream wait for the work that writes them, so the step reads them in order whatever
  // stream they were written on (PyTorch's side streams are non-blocking): the consumer names the
  // stream it reads on, as the array API's from_dlpack does. nanobind's own import passes no stream.
  nb::ndarray<nb::ro> ImportDeviceActions(nb::handle actions) const {
    if (!nb::hasattr(actions, "__dlpack__") || !nb::hasattr(actions, "__dlpack_device__"))
      throw nb::type_error(("actions must be a DLPack array on the GPU of shape " + actions_.Expected()).c_str());
    CheckArrayDevice("actions", DlpackDeviceOf(actions), "env", device_, cuda_device_);
    // DLPack's stream argument on CUDA: the cudaStream_t as an integer (cugym's own stream: never
    // 0, 1 or 2, the values that name default streams).
    const auto stream = reinterpret_cast<uintptr_t>(stream_.get());
    nb::object capsule = actions.attr("__dlpack__")(nb::arg("stream") = stream);
    nb::ndarray<nb::ro> a;
    if (!nb::try_cast(capsule, a))
      throw nb::type_error(("actions' __dlpack__ gave no DLPack tensor; expected " + actions_.Expected()).c_str());
    return a;
  }

  // Device actions (CUDA): a DLPack array on the env's GPU, int32 (n,) or float32 (n, dim).
  void CheckDeviceActions(const nb::ndarray<nb::ro>& a) const {
    const Space& space = spec_.action_space;
    const bool discrete = space.is_discrete();
    const std::string want = actions_.Expected();
    CheckArrayDevice("actions", {a.device_type(), static_cast<int64_t>(a.device_id())}, "env", device_, cuda_device_);
    const bool shape_ok = discrete
                              ? (a.ndim() == 1 && a.shape(0) == static_cast<size_t>(n_))
                              : (a.ndim() == 2 && a.shape(0) == static_cast<size_t>(n_) &&
                                 a.shape(1) == static_cast<size_t>(space.flat_size())) ||
                                    (space.flat_size() == 1 && a.ndim() == 1 && a.shape(0) == static_cast<size_t>(n_));
    std::string got = "(";
    for (size_t d = 0; d < a.ndim(); ++d) got += (d ? ", " : "") + std::to_string(a.shape(d));
    got += a.ndim() == 1 ? ",)" : ")";
    if (!shape_ok) throw nb::value_error(("actions must have shape " + want + ", got shape " + got).c_str());
    if (a.dtype() != (discrete ? nb::dtype<int32_t>() : nb::dtype<float>()))
      throw nb::type_error(("actions on the GPU must be " + want).c_str());
    int64_t expected_stride = 1;
    for (size_t d = a.ndim(); d-- > 0;) {
      if (a.shape(d) > 1 && a.stride(d) != expected_stride) throw nb::value_error("actions must be C-contiguous");
      expected_stride *= static_cast<int64_t>(a.shape(d));
    }
  }

  Stream stream_;  // CUDA: the env's own stream, destroyed after the env (declared before it)
  std::unique_ptr<VectorEnv> env_;
  EnvSpec spec_;
  int64_t n_;
  Device device_;
  int cuda_device_ = 0;            // CUDA: the GPU the env lives on (cudaGetDevice when it was made)
  std::vector<size_t> obs_shape_;  // CUDA: (n, *obs shape) of the exported observations
  CpuActions actions_;
  Autoreset mode_ = Autoreset::kSameStep;
  bool statistics_ = true;
  bool reset_done_ = false;
  std::vector<uint8_t> pending_;      // NEXT_STEP: envs that ended in the last step, reset in the next
  std::vector<int64_t> pending_idx_;  // their indices
  std::vector<uint8_t> ended_;        // DISABLED: envs that ended and were not reset
  bool any_pending_ = false, any_ended_ = false;
  std::vector<double> episode_start_;  // seconds (steady clock) when each env's episode began
  std::vector<int64_t> done_idx_;
  Outputs last_outputs_;          // the arrays the env writes into (see Allocate)
  std::unique_ptr<Pools> pools_;  // CPU only
  uint64_t round_ = 0;            // calls that handed out arrays (ArrayPool::Take)
};

}  // namespace

void BindVectorEnv(nb::module_& m) {
  ImportNumpy();
  nb::class_<PyVectorEnv>(m, "_VectorEnv")
      .def(nb::init<const std::string&, int64_t, const std::string&>(), nb::arg("env_id"), nb::arg("num_envs"),
           nb::arg("device"))
      .def_prop_ro("device", &PyVectorEnv::device)
      .def_prop_ro("num_envs", &PyVectorEnv::num_envs)
      .def_prop_ro("closed", &PyVectorEnv::closed)
      .def("configure", &PyVectorEnv::Configure, nb::arg("mode"), nb::arg("statistics"))
      .def_prop_ro("has_ended", &PyVectorEnv::has_ended)
      .def("reset", &PyVectorEnv::Reset, nb::arg("seed"))
      .def("reset_seeds", &PyVectorEnv::ResetSeeds, nb::arg("seeds"))
      .def("step", &PyVectorEnv::Step, nb::arg("actions").none())
      .def("reset_masked", &PyVectorEnv::ResetMasked, nb::arg("mask"))
      .def("done_indices", &PyVectorEnv::DoneIndices)
      .def("finished", &PyVectorEnv::Finished, nb::arg("indices"))
      .def("render", &PyVectorEnv::Render, nb::arg("index"))
      .def("get_states", &PyVectorEnv::GetStates, nb::arg("first"), nb::arg("count"))
      .def("close", &PyVectorEnv::Close);
}

}  // namespace cugym::python
