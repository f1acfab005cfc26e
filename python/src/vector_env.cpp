// Python bindings of cugym's VectorEnv: each call hands its results out as new arrays that the
// C++ step itself filled (VectorEnv::SetOutputs), NumPy on the CPU and DLPack-capable device
// arrays on CUDA, with the GIL released while the envs step. Argument checks raise Python
// exceptions naming what was wrong; the Python layer (cugym/vector.py) builds Gymnasium's API
// on top.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "core/memory.h"
#include "core/raster_canvas.h"
#include "python/src/module.h"

namespace nb = nanobind;

namespace cugym::python {
namespace {

// One allocation holds all of a step's outputs; a capsule owning it keeps it alive for as
// long as any of the arrays viewing it lives.
nb::capsule OwnerOf(void* block, Device device) {
  if (device == Device::kCuda) return nb::capsule(block, [](void* p) noexcept { FreeBytes(Device::kCuda, p); });
  return nb::capsule(block, [](void* p) noexcept { FreeBytes(Device::kCpu, p); });
}

int DlpackDevice(Device device) { return device == Device::kCuda ? nb::device::cuda::value : nb::device::cpu::value; }

// A new C-contiguous array viewing `data` (owned by `owner`): NumPy on the CPU, an object with
// __dlpack__ / __dlpack_device__ on CUDA.
template <class T>
nb::object Export(T* data, std::initializer_list<size_t> shape, nb::handle owner, Device device) {
  if (device == Device::kCpu) return nb::ndarray<nb::numpy, T>(data, shape, owner).cast();
  return nb::ndarray<nb::array_api, T>(data, shape, owner, {}, nb::dtype<T>(), DlpackDevice(device), 0).cast();
}

std::size_t RoundUp(std::size_t bytes) { return (bytes + 63) / 64 * 64; }

class PyVectorEnv {
 public:
  PyVectorEnv(const std::string& id, int64_t num_envs, const std::string& device)
      : env_(MakeVectorEnv(GlobalRegistry(), id, num_envs, ResolveDevice(device))),
        spec_(env_->spec()),
        n_(num_envs),
        device_(env_->device()) {}

  std::string device() const { return DeviceName(device_); }
  int64_t num_envs() const { return n_; }
  void set_autoreset(bool on) { Live().set_autoreset(on); }

  // Starts every env; returns the observations.
  nb::object Reset(uint64_t seed) {
    Outputs out = Allocate();
    {
      nb::gil_scoped_release release;
      Live().Reset(seed);
    }
    return out.obs;
  }

  // One step with `actions` (checked against the action space); returns
  // (obs, rewards, terminated, truncated), new arrays.
  nb::tuple Step(nb::ndarray<nb::ro> actions) {
    VectorEnv& env = Live();
    const Space& space = spec_.action_space;
    CheckActions(actions, space);
    Outputs out = Allocate();
    {
      nb::gil_scoped_release release;
      if (space.is_discrete())
        env.Step(static_cast<const int32_t*>(actions.data()));
      else
        env.Step(static_cast<const float*>(actions.data()));
      // DLPack consumers may read on any stream: the step's work must be done first.
      if (device_ == Device::kCuda) Synchronize(device_);
    }
    return nb::make_tuple(out.obs, out.rewards, out.terminated, out.truncated);
  }

  // Resets the envs where `mask` is true, as Gymnasium's reset(options={"reset_mask": mask}).
  // fresh: returns a new obs array for all envs (the others keep their current observation);
  // else writes into the last call's arrays (obs rows, rewards and flags of the masked envs: the
  // NEXT_STEP autoreset) and returns None.
  nb::object ResetMasked(nb::ndarray<nb::ro> mask, bool fresh) {
    VectorEnv& env = Live();
    if (mask.ndim() != 1 || mask.shape(0) != static_cast<size_t>(n_) || mask.dtype() != nb::dtype<bool>() ||
        mask.device_type() != nb::device::cpu::value || (mask.ndim() == 1 && mask.stride(0) != 1))
      throw nb::value_error(
          ("reset_mask must be a contiguous NumPy bool array of shape (" + std::to_string(n_) + ",)").c_str());
    const float* previous_obs = env.obs();
    Outputs out;
    if (fresh) out = Allocate(/*point_env_at_them=*/false);
    {
      nb::gil_scoped_release release;
      Buffer<uint8_t> device_mask(device_, static_cast<size_t>(n_));
      device_mask.FromHost(static_cast<const uint8_t*>(mask.data()), static_cast<size_t>(n_));
      if (fresh) {
        CopyBytes(out.obs_ptr, device_, previous_obs, device_, sizeof(float) * n_ * spec_.obs_dim());
        env.SetOutputs(out.pointers);
      }
      env.ResetMasked(device_mask.data());
      if (device_ == Device::kCuda) Synchronize(device_);
    }
    return fresh ? out.obs : nb::none();
  }

  // Indices of the envs whose terminated or truncated flag is set (flags copied to the host).
  nb::object DoneIndices() {
    VectorEnv& env = Live();
    const std::vector<uint8_t> term = ToHostBytes(env.terminated()), trunc = ToHostBytes(env.truncated());
    std::vector<int64_t> idx;
    for (int64_t i = 0; i < n_; ++i)
      if (term[i] | trunc[i]) idx.push_back(i);
    void* block = AllocateBytes(Device::kCpu, sizeof(int64_t) * std::max<size_t>(idx.size(), 1));
    nb::capsule owner = OwnerOf(block, Device::kCpu);
    std::copy(idx.begin(), idx.end(), static_cast<int64_t*>(block));
    return nb::ndarray<nb::numpy, int64_t>(block, {idx.size()}, owner).cast();
  }

  // The rows of envs that ended in the last step, copied out: (final_obs [k, obs_dim],
  // episode returns [k], episode lengths [k]) for the k env indices given.
  nb::tuple Finished(nb::ndarray<const int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu> indices) {
    VectorEnv& env = Live();
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
    return nb::make_tuple(nb::ndarray<nb::numpy, float>(final_obs, {k, static_cast<size_t>(obs_dim)}, owner).cast(),
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
    const std::vector<float> state = env.GetStates(i, 1);
    RasterCanvas canvas(static_cast<uint8_t*>(block), static_cast<int>(w), static_cast<int>(h));
    entry.draw(state.data(), canvas);
    return nb::ndarray<nb::numpy, uint8_t>(block, {h, w, 3}, owner).cast();
  }

  std::vector<float> GetStates(int64_t first, int64_t count) { return Live().GetStates(first, count); }

  void Close() {
    if (env_) env_->SetOutputs({});
    env_.reset();
  }
  bool closed() const { return env_ == nullptr; }

 private:
  struct Outputs {
    StepOutputs pointers;
    float* obs_ptr = nullptr;
    nb::object obs, rewards, terminated, truncated;
  };

  std::vector<uint8_t> ToHostBytes(const uint8_t* flags) const {
    std::vector<uint8_t> host(static_cast<size_t>(n_));
    CopyBytes(host.data(), Device::kCpu, flags, device_, host.size());
    return host;
  }

  VectorEnv& Live() {
    if (!env_) throw nb::value_error("this cugym env is closed");
    return *env_;
  }

  // New output arrays for one call, in one block; by default the env writes into them next.
  Outputs Allocate(bool point_env_at_them = true) {
    const size_t n = static_cast<size_t>(n_), obs_dim = static_cast<size_t>(spec_.obs_dim());
    const size_t obs_bytes = RoundUp(sizeof(float) * n * obs_dim), reward_bytes = RoundUp(sizeof(float) * n),
                 flag_bytes = RoundUp(n);
    char* block = static_cast<char*>(AllocateBytes(device_, obs_bytes + reward_bytes + 2 * flag_bytes));
    nb::capsule owner = OwnerOf(block, device_);
    Outputs out;
    out.obs_ptr = reinterpret_cast<float*>(block);
    out.pointers = {out.obs_ptr, reinterpret_cast<float*>(block + obs_bytes),
                    reinterpret_cast<uint8_t*>(block + obs_bytes + reward_bytes),
                    reinterpret_cast<uint8_t*>(block + obs_bytes + reward_bytes + flag_bytes)};
    out.obs = Export(out.pointers.obs, {n, obs_dim}, owner, device_);
    out.rewards = Export(out.pointers.rewards, {n}, owner, device_);
    out.terminated = Export(reinterpret_cast<bool*>(out.pointers.terminated), {n}, owner, device_);
    out.truncated = Export(reinterpret_cast<bool*>(out.pointers.truncated), {n}, owner, device_);
    if (point_env_at_them) env_->SetOutputs(out.pointers);
    return out;
  }

  void CheckActions(const nb::ndarray<nb::ro>& a, const Space& space) const {
    const bool discrete = space.is_discrete();
    const std::string want = discrete
                                 ? "(" + std::to_string(n_) + ",) int32"
                                 : "(" + std::to_string(n_) + ", " + std::to_string(space.flat_size()) + ") float32";
    if (a.device_type() != DlpackDevice(device_))
      throw nb::value_error(("actions must be on the env's device (" + std::string(DeviceName(device_)) + ")").c_str());
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
      throw nb::type_error(("actions must be " + want + " (the Python layer converts NumPy arrays)").c_str());
    int64_t expected_stride = 1;
    for (size_t d = a.ndim(); d-- > 0;) {
      if (a.shape(d) > 1 && a.stride(d) != expected_stride) throw nb::value_error("actions must be C-contiguous");
      expected_stride *= static_cast<int64_t>(a.shape(d));
    }
    if (discrete && device_ == Device::kCpu) {
      const int32_t* p = static_cast<const int32_t*>(a.data());
      bool ok = true;
      for (int64_t i = 0; i < n_; ++i) ok &= static_cast<uint32_t>(p[i]) < static_cast<uint64_t>(space.n);
      if (!ok)
        for (int64_t i = 0; i < n_; ++i)
          if (p[i] < 0 || p[i] >= space.n)
            throw nb::value_error(("action " + std::to_string(p[i]) + " of env " + std::to_string(i) +
                                   " is outside Discrete(" + std::to_string(space.n) + ")")
                                      .c_str());
    }
  }

  std::unique_ptr<VectorEnv> env_;
  EnvSpec spec_;
  int64_t n_;
  Device device_;
};

}  // namespace

void BindVectorEnv(nb::module_& m) {
  nb::class_<PyVectorEnv>(m, "_VectorEnv")
      .def(nb::init<const std::string&, int64_t, const std::string&>(), nb::arg("env_id"), nb::arg("num_envs"),
           nb::arg("device"))
      .def_prop_ro("device", &PyVectorEnv::device)
      .def_prop_ro("num_envs", &PyVectorEnv::num_envs)
      .def_prop_ro("closed", &PyVectorEnv::closed)
      .def("set_autoreset", &PyVectorEnv::set_autoreset)
      .def("reset", &PyVectorEnv::Reset, nb::arg("seed"))
      .def("step", &PyVectorEnv::Step, nb::arg("actions"))
      .def("reset_masked", &PyVectorEnv::ResetMasked, nb::arg("mask"), nb::arg("fresh"))
      .def("done_indices", &PyVectorEnv::DoneIndices)
      .def("finished", &PyVectorEnv::Finished, nb::arg("indices"))
      .def("render", &PyVectorEnv::Render, nb::arg("index"))
      .def("get_states", &PyVectorEnv::GetStates, nb::arg("first"), nb::arg("count"))
      .def("close", &PyVectorEnv::Close);
}

}  // namespace cugym::python
