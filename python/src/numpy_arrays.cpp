// NumPy's C API behind numpy_arrays.h. Built against NumPy 2 headers, which also run on NumPy 1.x
// (NumPy's default NPY_TARGET_VERSION keeps the 1.x ABI).
#define PY_ARRAY_UNIQUE_SYMBOL cugym_numpy_api
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include "python/src/numpy_arrays.h"

#include <nanobind/stl/string.h>
#include <numpy/arrayobject.h>

#include <cstdlib>
#include <mutex>
#include <new>
#include <vector>

namespace nb = nanobind;

namespace cugym::python {
namespace {

int TypeNum(NpType type) {
  switch (type) {
    case NpType::kBool:
      return NPY_BOOL;
    case NpType::kUInt8:
      return NPY_UINT8;
    case NpType::kInt32:
      return NPY_INT32;
    case NpType::kInt64:
      return NPY_INT64;
    case NpType::kFloat32:
      return NPY_FLOAT32;
    case NpType::kFloat64:
      return NPY_FLOAT64;
  }
  return NPY_VOID;
}

// A view of `data` with `descr` (a reference the call steals) and `owner` as its base.
PyObject* NewView(PyArray_Descr* descr, int ndim, npy_intp* dims, void* data, PyObject* owner) {
  PyObject* array = PyArray_NewFromDescr(&PyArray_Type, descr, ndim, dims, nullptr, data, NPY_ARRAY_CARRAY, nullptr);
  if (array == nullptr) return nullptr;
  Py_INCREF(owner);
  if (PyArray_SetBaseObject(reinterpret_cast<PyArrayObject*>(array), owner) < 0) {
    Py_DECREF(array);
    return nullptr;
  }
  return array;
}

// The pool behind NewHostBlock: free blocks by size class (powers of two), a few per class. Each
// block starts with a header that records its class; the data follows, 64-byte aligned.
class BlockPool {
 public:
  static constexpr std::size_t kHeader = 64;
  static constexpr int kKeepPerClass = 4;

  static BlockPool& Get() {
    static BlockPool* pool = new BlockPool;  // never destroyed: arrays may outlive everything else
    return *pool;
  }

  void* Take(std::size_t bytes) {
    int size_class = 6;
    while ((std::size_t{1} << size_class) < bytes) ++size_class;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      std::vector<char*>& free = free_[size_class];
      if (!free.empty()) {
        char* block = free.back();
        free.pop_back();
        return block + kHeader;
      }
    }
    char* block = static_cast<char*>(std::aligned_alloc(64, kHeader + (std::size_t{1} << size_class)));
    if (block == nullptr) throw std::bad_alloc();
    *reinterpret_cast<int*>(block) = size_class;
    return block + kHeader;
  }

  void Give(void* data) noexcept {
    char* block = static_cast<char*>(data) - kHeader;
    const int size_class = *reinterpret_cast<int*>(block);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      std::vector<char*>& free = free_[size_class];
      if (free.size() < kKeepPerClass) {
        free.push_back(block);  // capacity reserved below: no allocation here
        return;
      }
    }
    std::free(block);
  }

 private:
  BlockPool() {
    for (auto& free : free_) free.reserve(kKeepPerClass);
  }
  std::mutex mutex_;
  std::vector<char*> free_[64];
};

}  // namespace

HostBlock NewHostBlock(std::size_t bytes) {
  HostBlock block;
  block.data = BlockPool::Get().Take(bytes);
  block.owner = nb::capsule(block.data, [](void* p) noexcept { BlockPool::Get().Give(p); });
  return block;
}

void ImportNumpy() {
  if (_import_array() < 0) throw nb::python_error();
}

nb::object ArrayView(void* data, std::initializer_list<int64_t> shape, NpType type, nb::handle owner) {
  npy_intp dims[4];
  int ndim = 0;
  for (int64_t d : shape) dims[ndim++] = static_cast<npy_intp>(d);
  PyObject* array = NewView(PyArray_DescrFromType(TypeNum(type)), ndim, dims, data, owner.ptr());
  if (array == nullptr) throw nb::python_error();
  return nb::steal(array);
}

nb::object ObjectArrayOfRows(int64_t n, const int64_t* idx, int64_t k, float* rows, int64_t row_size,
                             nb::handle owner) {
  npy_intp dims[1] = {static_cast<npy_intp>(n)};
  nb::object result = nb::steal(PyArray_SimpleNew(1, dims, NPY_OBJECT));
  if (!result.is_valid()) throw nb::python_error();
  PyObject** items = static_cast<PyObject**>(PyArray_DATA(reinterpret_cast<PyArrayObject*>(result.ptr())));
  PyArray_Descr* float32 = PyArray_DescrFromType(NPY_FLOAT32);
  npy_intp row_dims[1] = {static_cast<npy_intp>(row_size)};
  for (int64_t j = 0; j < k; ++j) {
    Py_INCREF(float32);
    PyObject* row = NewView(float32, 1, row_dims, rows + j * row_size, owner.ptr());
    if (row == nullptr) {
      Py_DECREF(float32);
      throw nb::python_error();
    }
    items[idx[j]] = row;
  }
  Py_DECREF(float32);
  return result;
}

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
