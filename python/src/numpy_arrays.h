// NumPy arrays made with NumPy's own C API, for the hot path of a CPU step: a step hands out a
// dozen arrays (and one small row view per env that ended), and NumPy's constructors cost a
// fraction of a generic buffer-protocol or DLPack export. The only file that includes NumPy's
// headers is numpy_arrays.cpp; this header carries no NumPy types.
#pragma once

#include <nanobind/nanobind.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

namespace cugym::python {

enum class NpType { kBool, kUInt8, kInt32, kInt64, kFloat32, kFloat64 };

// A host memory block for one call's arrays and the Python object that owns it (give it as the
// arrays' `owner`). Blocks come from a small pool: when the last array viewing a block dies, the
// block is kept for a later call of about the same size instead of going back to malloc, which
// spares a step's large allocations (and, for big batches, their page faults). A block is reused
// only after every array viewing it is gone, so arrays that are alive never share memory.
struct HostBlock {
  void* data = nullptr;
  nanobind::object owner;
};
HostBlock NewHostBlock(std::size_t bytes);

// Loads NumPy's C API; call once when the module is imported (raises ImportError without NumPy).
void ImportNumpy();

// A new C-contiguous, writable NumPy array over `data`, which `owner` keeps alive (the array holds
// a reference to it).
nanobind::object ArrayView(void* data, std::initializer_list<int64_t> shape, NpType type, nanobind::handle owner);

// A new object array of n entries: None, except at each of the k env indices idx[j], where it
// holds a new float32 array of shape (row_size,) viewing rows + j * row_size (kept alive by
// `owner`). Gymnasium's final_obs layout. The None entries are NULL pointers, which NumPy reads
// as None everywhere (indexing, iteration, tolist, pickling, copies): filling and later clearing
// n references to None would cost more than the rest of a step's info dict.
nanobind::object ObjectArrayOfRows(int64_t n, const int64_t* idx, int64_t k, float* rows, int64_t row_size,
                                   nanobind::handle owner);

// What a step needs to know of a NumPy array passed as actions; false if `obj` is not a NumPy
// array (an exact np.ndarray or a subclass).
struct ArrayInfo {
  const void* data = nullptr;
  int ndim = 0;
  int64_t shape[2] = {0, 0};
  char kind = '?';  // NumPy's dtype.kind: 'i', 'u', 'f', 'b', ...
  int itemsize = 0;
  bool c_contiguous_aligned = false;
};
bool NumpyArrayInfo(nanobind::handle obj, ArrayInfo* info);

// `str(dtype)` of a NumPy array, and str(obj) of any object, for error messages.
std::string DtypeName(nanobind::handle array);
std::string ToText(nanobind::handle obj);

}  // namespace cugym::python
