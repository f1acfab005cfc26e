// CpuActions: see actions.h. The common cases (int32 or int64 Discrete actions, float32 or float64
// Box actions, C-contiguous) take one pass over the array and no Python call.
#include "python/src/actions.h"

#include <nanobind/stl/string.h>

#include <algorithm>
#include <type_traits>

#include "python/src/numpy_arrays.h"

namespace nb = nanobind;

namespace cugym::python {
namespace {

// Checks that count integers of type T are in [0, num_actions) and, with a `dst`, copies them to
// int32; returns the index of the first one outside, or -1. The check compares the values seen as
// unsigned (negatives wrap to large values) in one pass that vectorizes; a second pass only finds
// a bad index.
template <class T>
int64_t ToDiscrete(const void* src, int64_t count, int32_t num_actions, int32_t* dst) {
  using U = std::conditional_t<sizeof(T) <= 4, uint32_t, uint64_t>;
  using S = std::conditional_t<std::is_signed_v<T>, std::make_signed_t<U>, U>;
  const T* s = static_cast<const T*>(src);
  const U limit = static_cast<U>(num_actions);
  U outside = 0;
  for (int64_t i = 0; i < count; ++i) outside |= static_cast<U>(static_cast<U>(static_cast<S>(s[i])) >= limit);
  if (outside == 0) {
    if (dst != nullptr)
      for (int64_t i = 0; i < count; ++i) dst[i] = static_cast<int32_t>(s[i]);
    return -1;
  }
  for (int64_t i = 0;; ++i)
    if (static_cast<U>(static_cast<S>(s[i])) >= static_cast<U>(num_actions)) return i;
}

template <class T>
void ToBox(const void* src, int64_t count, float* dst) {
  const T* s = static_cast<const T*>(src);
  for (int64_t i = 0; i < count; ++i) dst[i] = static_cast<float>(s[i]);
}

// The value of element i of an integer array, for messages.
std::string IntegerAt(const ArrayInfo& a, int64_t i) {
  const char* p = static_cast<const char*>(a.data) + i * a.itemsize;
  auto read = [&](auto zero) { return std::to_string(*reinterpret_cast<const decltype(zero)*>(p)); };
  if (a.kind == 'i') {
    if (a.itemsize == 1) return read(int8_t{});
    if (a.itemsize == 2) return read(int16_t{});
    if (a.itemsize == 4) return read(int32_t{});
    return read(int64_t{});
  }
  if (a.itemsize == 1) return read(uint8_t{});
  if (a.itemsize == 2) return read(uint16_t{});
  if (a.itemsize == 4) return read(uint32_t{});
  return read(uint64_t{});
}

std::string ShapeText(const ArrayInfo& a, nb::handle array) {
  if (a.ndim > 2) return ToText(array.attr("shape"));
  if (a.ndim == 0) return "()";
  if (a.ndim == 1) return "(" + std::to_string(a.shape[0]) + ",)";
  return "(" + std::to_string(a.shape[0]) + ", " + std::to_string(a.shape[1]) + ")";
}

std::string DeviceText(DlpackDevice where) {
  const std::string id = std::to_string(where.id);
  switch (where.type) {
    case 1:
      return "cpu";
    case 2:
      return "cuda:" + id;
    case 3:
      return "cuda_host (pinned host memory)";
    case 13:
      return "cuda_managed:" + id;
    default:
      return "DLPack device type " + std::to_string(where.type) + " id " + id;
  }
}

}  // namespace

DlpackDevice DlpackDeviceOf(nb::handle obj) {
  nb::object pair = obj.attr("__dlpack_device__")();
  nb::tuple t;
  DlpackDevice where;
  // DLPack producers give (IntEnum, int); both cast as ints.
  if (!nb::try_cast(pair, t) || t.size() != 2 || !nb::try_cast(nb::handle(t[0]), where.type) ||
      !nb::try_cast(nb::handle(t[1]), where.id))
    throw nb::type_error(("__dlpack_device__() must return (device_type, device_id), got " + ToText(pair)).c_str());
  return where;
}

void CheckArrayDevice(const char* what, DlpackDevice where, const char* owner, Device device, int cuda_id) {
  const bool ok = device == Device::kCpu ? where.type == 1 : where.type == 2 && where.id == cuda_id;
  if (ok) return;
  const std::string mine = device == Device::kCpu ? "cpu" : "cuda:" + std::to_string(cuda_id);
  throw nb::value_error((std::string(what) + " are on device " + DeviceText(where) + ", but this " + owner +
                         " is on device " + mine + ": move them to " + mine + " first")
                            .c_str());
}

std::string CpuActions::Expected() const {
  if (spec_.action_space.is_discrete()) return "(" + std::to_string(n_) + ",) int32";
  return "(" + std::to_string(n_) + ", " + std::to_string(spec_.action_space.flat_size()) + ") float32";
}

const void* CpuActions::Get(nb::handle actions) {
  ArrayInfo a;
  contiguous_ = nb::object();
  if (!NumpyArrayInfo(actions, &a)) {  // a list, a scalar, a CPU tensor: through np.asarray (a view if it can)
    // A GPU array is refused naming its device, before NumPy fails to read it.
    if (nb::hasattr(actions, "__dlpack_device__"))
      CheckArrayDevice("actions", DlpackDeviceOf(actions), "env", Device::kCpu, 0);
    contiguous_ = nb::module_::import_("numpy").attr("asarray")(actions);
    if (!NumpyArrayInfo(contiguous_, &a))
      throw nb::type_error(("actions must be an array of shape " + Expected()).c_str());
    actions = contiguous_;
  }
  const Space& space = spec_.action_space;
  const bool discrete = space.is_discrete();
  const int64_t dim = space.flat_size();
  const bool shape_ok = discrete ? a.ndim == 1 && a.shape[0] == n_
                                 : (a.ndim == 2 && a.shape[0] == n_ && a.shape[1] == dim) ||
                                       (dim == 1 && a.ndim == 1 && a.shape[0] == n_);
  if (!shape_ok)
    throw nb::value_error(("actions must have shape " + Expected() + ", got shape " + ShapeText(a, actions)).c_str());
  if (discrete && a.kind != 'i' && a.kind != 'u')
    throw nb::type_error((spec_.id + " has Discrete(" + std::to_string(space.n) +
                          ") actions: expected integers of shape (" + std::to_string(n_) + ",), got dtype " +
                          DtypeName(actions))
                             .c_str());
  if (!discrete && a.kind != 'f' && a.kind != 'i' && a.kind != 'u')
    throw nb::type_error(
        (spec_.id + " has Box actions: expected floats of shape " + Expected() + ", got dtype " + DtypeName(actions))
            .c_str());
  if (!a.c_contiguous_aligned) {  // rare: a slice or a byte-swapped array; kept until the next call
    contiguous_ = nb::module_::import_("numpy").attr("ascontiguousarray")(
        actions, actions.attr("dtype").attr("newbyteorder")("="));
    NumpyArrayInfo(contiguous_, &a);
    actions = contiguous_;
  }
  if (!discrete) {
    if (a.kind == 'f' && a.itemsize == 4) return a.data;
    const int64_t count = n_ * dim;
    box_.resize(static_cast<size_t>(count));
    if (a.kind == 'f' && a.itemsize == 8) {
      ToBox<double>(a.data, count, box_.data());
    } else if (a.kind == 'i') {
      if (a.itemsize == 1) ToBox<int8_t>(a.data, count, box_.data());
      if (a.itemsize == 2) ToBox<int16_t>(a.data, count, box_.data());
      if (a.itemsize == 4) ToBox<int32_t>(a.data, count, box_.data());
      if (a.itemsize == 8) ToBox<int64_t>(a.data, count, box_.data());
    } else if (a.kind == 'u') {
      if (a.itemsize == 1) ToBox<uint8_t>(a.data, count, box_.data());
      if (a.itemsize == 2) ToBox<uint16_t>(a.data, count, box_.data());
      if (a.itemsize == 4) ToBox<uint32_t>(a.data, count, box_.data());
      if (a.itemsize == 8) ToBox<uint64_t>(a.data, count, box_.data());
    } else {  // float16, long double: through NumPy
      nb::object f32 = nb::module_::import_("numpy").attr("asarray")(actions, "float32");
      ArrayInfo b;
      NumpyArrayInfo(f32, &b);
      std::copy_n(static_cast<const float*>(b.data), count, box_.data());
    }
    return box_.data();
  }
  if (a.kind == 'i' && a.itemsize == 4) {  // int32 already: checked, not copied
    const int64_t bad = ToDiscrete<int32_t>(a.data, n_, space.n, nullptr);
    if (bad < 0) return a.data;
    throw nb::value_error(("action " + IntegerAt(a, bad) + " of env " + std::to_string(bad) + " is outside Discrete(" +
                           std::to_string(space.n) + ")")
                              .c_str());
  }
  discrete_.resize(static_cast<size_t>(n_));
  int64_t bad = -1;
  if (a.kind == 'i') {
    if (a.itemsize == 1) bad = ToDiscrete<int8_t>(a.data, n_, space.n, discrete_.data());
    if (a.itemsize == 2) bad = ToDiscrete<int16_t>(a.data, n_, space.n, discrete_.data());
    if (a.itemsize == 8) bad = ToDiscrete<int64_t>(a.data, n_, space.n, discrete_.data());
  } else {
    if (a.itemsize == 1) bad = ToDiscrete<uint8_t>(a.data, n_, space.n, discrete_.data());
    if (a.itemsize == 2) bad = ToDiscrete<uint16_t>(a.data, n_, space.n, discrete_.data());
    if (a.itemsize == 4) bad = ToDiscrete<uint32_t>(a.data, n_, space.n, discrete_.data());
    if (a.itemsize == 8) bad = ToDiscrete<uint64_t>(a.data, n_, space.n, discrete_.data());
  }
  if (bad >= 0)
    throw nb::value_error(("action " + IntegerAt(a, bad) + " of env " + std::to_string(bad) + " is outside Discrete(" +
                           std::to_string(space.n) + ")")
                              .c_str());
  return discrete_.data();
}

}  // namespace cugym::python
