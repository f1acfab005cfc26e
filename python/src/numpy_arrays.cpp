// NumPy's C API behind numpy_arrays.h. Built against NumPy 2 headers, which also run on NumPy 1.x
// (NumPy's default NPY_TARGET_VERSION keeps the 1.x ABI).
#define PY_ARRAY_UNIQUE_SYMBOL cugym_numpy_api
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include "python/src/numpy_arrays.h"

#include <nanobind/stl/string.h>
#include <numpy/arrayobject.h>

#include <cstring>
#include <utility>

namespace nb = nanobind;

namespace cugym::python {
namespace {

int TypeNum(NpType type) {
  switch (type) {
    case NpType::kBool:
      return NPY_BOOL;
    case NpType::kInt64:
      return NPY_INT64;
    case NpType::kFloat32:
      return NPY_FLOAT32;
    case NpType::kFloat64:
      return NPY_FLOAT64;
    case NpType::kObject:
      return NPY_OBJECT;
  }
  return NPY_VOID;
}

// Whether `obj` is an array of dtype type_num and this C-contiguous shape that owns its data and
// that nothing but its one holder refers to, unchanged since it was made (see ArrayPool).
bool Recyclable(PyObject* obj, int type_num, const std::vector<int64_t>& shape) {
  if (Py_REFCNT(obj) != 1 || Py_TYPE(obj) != &PyArray_Type) return false;
  auto* array = reinterpret_cast<PyArrayObject*>(obj);
  constexpr int kFlags = NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_WRITEABLE | NPY_ARRAY_OWNDATA;
  if ((PyArray_FLAGS(array) & (kFlags | NPY_ARRAY_WRITEBACKIFCOPY)) != kFlags) return false;
  if (reinterpret_cast<PyArrayObject_fields*>(obj)->weakreflist != nullptr) return false;
  const PyArray_Descr* descr = PyArray_DESCR(array);
  if (descr->type_num != type_num || !PyArray_ISNOTSWAPPED(array) || PyDataType_HASFIELDS(descr)) return false;
  if (PyArray_NDIM(array) != static_cast<int>(shape.size())) return false;
  npy_intp stride = PyArray_ITEMSIZE(array);
  for (int d = static_cast<int>(shape.size()); d-- > 0;) {
    if (PyArray_DIM(array, d) != shape[d] || PyArray_STRIDE(array, d) != stride) return false;
    stride *= shape[d];
  }
  return true;
}

PyObject* NewArray(int type_num, const std::vector<int64_t>& shape) {
  npy_intp dims[NPY_MAXDIMS];
  for (size_t d = 0; d < shape.size(); ++d) dims[d] = static_cast<npy_intp>(shape[d]);
  // Object arrays come zero-filled from NumPy (their entries are NULL until set).
  PyObject* array = PyArray_SimpleNew(static_cast<int>(shape.size()), dims, type_num);
  if (array == nullptr) throw nb::python_error();
  return array;
}

}  // namespace

ArrayPool::ArrayPool(NpType type, std::vector<int64_t> shape)
    : type_num_(TypeNum(type)), shape_(std::move(shape)), ring_(8) {}

ArrayPool::~ArrayPool() { Clear(); }

void ArrayPool::Clear() {
  while (count_ > 0) {  // popped before released: an object array's entries may run any code
    PyObject* array = ring_[head_].array;
    head_ = (head_ + 1) % ring_.size();
    --count_;
    Py_DECREF(array);
  }
}

nb::object ArrayPool::Take(uint64_t round) {
  PyObject* array = nullptr;
  while (count_ > 0) {
    const Entry front = ring_[head_];
    const bool recyclable = Recyclable(front.array, type_num_, shape_);
    if (!recyclable && Py_REFCNT(front.array) != 1 && front.round + 1 >= round)
      break;  // handed out just now: likely back soon
    head_ = (head_ + 1) % ring_.size();
    --count_;
    if (recyclable) {
      array = front.array;
      break;
    }
    Py_DECREF(front.array);  // kept by someone, or changed in place: theirs now
  }
  if (array == nullptr) array = NewArray(type_num_, shape_);
  if (count_ == ring_.size()) {  // full: unroll into a ring twice the size
    std::vector<Entry> grown(2 * ring_.size());
    for (std::size_t j = 0; j < count_; ++j) grown[j] = ring_[(head_ + j) % ring_.size()];
    ring_ = std::move(grown);
    head_ = 0;
  }
  ring_[(head_ + count_) % ring_.size()] = {array, round};
  ++count_;
  Py_INCREF(array);
  return nb::steal(array);
}

FinalObsPool::FinalObsPool(int64_t num_envs, std::vector<int64_t> obs_shape)
    : n_(num_envs), row_shape_(std::move(obs_shape)), obs_dim_(1), objects_(NpType::kObject, {num_envs}) {
  for (int64_t d : row_shape_) obs_dim_ *= d;
}

FinalObsPool::~FinalObsPool() {
  for (PyObject* row : free_rows_) Py_DECREF(row);
}

void FinalObsPool::Harvest(PyObject** items) {
  std::vector<PyObject*> others;  // released after the loop: their destructors may run any code
  auto take = [&](int64_t i) {
    PyObject* item = items[i];
    items[i] = nullptr;
    if (Recyclable(item, NPY_FLOAT32, row_shape_))
      free_rows_.push_back(item);  // the object array's reference, now ours
    else
      others.push_back(item);
  };
  // Most entries are NULL (envs that did not end): eight are tested at a time.
  int64_t i = 0;
  for (; i + 8 <= n_; i += 8) {
    uintptr_t any = 0;
    for (int j = 0; j < 8; ++j) any |= reinterpret_cast<uintptr_t>(items[i + j]);
    if (any != 0)
      for (int j = 0; j < 8; ++j)
        if (items[i + j] != nullptr) take(i + j);
  }
  for (; i < n_; ++i)
    if (items[i] != nullptr) take(i);
  for (PyObject* item : others) Py_DECREF(item);
}

nb::object FinalObsPool::Make(const float* final_obs, const int64_t* idx, int64_t k, uint64_t round) {
  nb::object array = objects_.Take(round);
  PyObject** items = static_cast<PyObject**>(PyArray_DATA(reinterpret_cast<PyArrayObject*>(array.ptr())));
  Harvest(items);
  const int64_t obs_dim = obs_dim_;
  for (int64_t j = 0; j < k; ++j) {
    PyObject* row;
    if (!free_rows_.empty()) {
      row = free_rows_.back();  // the most recently used: warm in cache
      free_rows_.pop_back();
    } else {
      row = NewArray(NPY_FLOAT32, row_shape_);
    }
    float* x = static_cast<float*>(PyArray_DATA(reinterpret_cast<PyArrayObject*>(row)));
    const float* last = final_obs + idx[j] * obs_dim;
    for (int64_t d = 0; d < obs_dim; ++d) x[d] = last[d];  // a few floats: no memcpy call
    items[idx[j]] = row;                                   // our reference, now the object array's
  }
  return array;
}

void ImportNumpy() {
  if (_import_array() < 0) throw nb::python_error();
}

void* ArrayData(nb::handle array) { return PyArray_DATA(reinterpret_cast<PyArrayObject*>(array.ptr())); }

bool NumpyArrayInfo(nb::handle obj, ArrayInfo* info) {
  if (!PyArray_Check(obj.ptr())) return false;
  auto* array = reinterpret_cast<PyArrayObject*>(obj.ptr());
  info->data = PyArray_DATA(array);
  info->ndim = PyArray_NDIM(array);
  for (int d = 0; d < info->ndim && d < 2; ++d) info->shape[d] = PyArray_DIM(array, d);
  info->kind = PyArray_DESCR(array)->kind;
  info->itemsize = static_cast<int>(PyArray_ITEMSIZE(array));
  info->c_contiguous_aligned = PyArray_ISCARRAY_RO(array) && PyArray_ISNOTSWAPPED(array);
  return true;
}

std::string DtypeName(nb::handle array) { return ToText(array.attr("dtype")); }

std::string ToText(nb::handle obj) {
  nb::object text = nb::steal(PyObject_Str(obj.ptr()));
  if (!text.is_valid()) throw nb::python_error();
  return nb::borrow<nb::str>(text).c_str();
}

}  // namespace cugym::python
