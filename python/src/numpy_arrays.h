// NumPy arrays made with NumPy's own C API, for the hot path of a CPU step: a step hands out a
// dozen arrays (and one small row array per env that ended), and NumPy's constructors cost more
// than the step of a thousand envs when each array is made anew. The only file that includes
// NumPy's headers is numpy_arrays.cpp; this header carries no NumPy types.
#pragma once

#include <nanobind/nanobind.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cugym::python {

enum class NpType { kBool, kInt64, kFloat32, kFloat64, kObject };

// Loads NumPy's C API; call once when the module is imported (raises ImportError without NumPy).
void ImportNumpy();

// C-contiguous NumPy arrays of one dtype and shape that own their data, handed out again once
// nothing but the pool refers to them: NumPy's own rule for reusing a temporary (a reference
// count of one). An array is recycled only when no Python object, view or buffer export holds it
// (a view of an array that owns its data holds a reference to it), so arrays that a caller keeps
// never change and arrays alive at once never share memory; only a raw pointer kept past the
// array's life (`a.ctypes.data`) can see a recycled array's new contents, as it could see malloc
// reuse a freed one. An array whose shape, strides, dtype or flags were changed in place, or that
// has a weak reference, is never recycled.
//
// Take(round): `round` counts the caller's calls (each step one more). The array handed out
// longest ago comes back first; one still held after a round has passed is left to its holder
// (the pool forgets it), so a caller that keeps every array costs the pool only the check.
// Needs the GIL, as does destroying the pool.
class ArrayPool {
 public:
  ArrayPool(NpType type, std::vector<int64_t> shape);
  ArrayPool(const ArrayPool&) = delete;
  ArrayPool& operator=(const ArrayPool&) = delete;
  ~ArrayPool();

  // An array no other object refers to. Contents: whatever was last written (a recycled object
  // array keeps its entries); a new array's are uninitialized, except that a new object array's
  // entries are NULL, which NumPy reads as None everywhere (indexing, iteration, tolist,
  // pickling, copies).
  nanobind::object Take(uint64_t round);
  // Forgets every array (the ones still held elsewhere live on).
  void Clear();

 private:
  struct Entry {
    PyObject* array;  // an owned reference
    uint64_t round;   // when it was last handed out
  };
  int type_num_;
  std::vector<int64_t> shape_;
  std::vector<Entry> ring_;  // oldest first from head_, count_ of them (a ring: no allocation per Take)
  std::size_t head_ = 0, count_ = 0;
};

// Gymnasium's final_obs for a SAME_STEP step of n envs: an object array of n entries, NULL (None)
// except at the envs that ended, each a float32 array of the observation's shape ((4,), or
// (10, 10, 4) for an image-like env) holding its last observation.
// The object arrays are recycled as ArrayPool's are, and so are the row arrays in them: a
// recycled object array's rows that nothing else holds are kept for the next one, the others are
// left to their holders. Needs the GIL, as does destroying it.
class FinalObsPool {
 public:
  // obs_shape: one observation's shape; the env's rows are its flat (row-major) layout.
  FinalObsPool(int64_t num_envs, std::vector<int64_t> obs_shape);
  FinalObsPool(const FinalObsPool&) = delete;
  FinalObsPool& operator=(const FinalObsPool&) = delete;
  ~FinalObsPool();

  // final_obs: [num_envs, obs_dim] (the env's flat rows); idx: the k envs that ended, in any order.
  nanobind::object Make(const float* final_obs, const int64_t* idx, int64_t k, uint64_t round);

 private:
  // Empties a recycled object array, keeping its rows that nothing else holds.
  void Harvest(PyObject** items);

  int64_t n_;
  std::vector<int64_t> row_shape_;  // one observation's shape
  int64_t obs_dim_;                 // the product of row_shape_
  ArrayPool objects_;
  std::vector<PyObject*> free_rows_;  // owned references to row arrays nothing else refers to
};

// The data of a NumPy array (`array` must be one).
void* ArrayData(nanobind::handle array);

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
