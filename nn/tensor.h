// Non-owning views of dense float32 (and int32) arrays on one device, with the memory layout in
// the type. No CUDA types here.
//
// Convention (docs/nn.md): every matrix cugym's nn stores is row-major, as in PyTorch.
// Activations are [batch x features] (one sample's features contiguous, as a replay buffer holds
// observations), weights are [out x in]. BLAS and cuBLAS work on column-major matrices; a
// row-major [r x c] matrix is the same memory as a column-major [c x r] one, and Transpose()
// hands out that view for free, so the GEMM calls say which they mean.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "core/device.h"
#include "core/memory.h"

namespace cugym::nn {

enum class Layout { kRowMajor, kColMajor };

constexpr Layout OtherLayout(Layout layout) {
  return layout == Layout::kRowMajor ? Layout::kColMajor : Layout::kRowMajor;
}

template <class T, Layout L>
class MatrixView {
 public:
  MatrixView() = default;
  MatrixView(T* data, int64_t rows, int64_t cols, Device device)
      : data_(data), rows_(rows), cols_(cols), device_(device) {
    if (rows < 0 || cols < 0) {
      throw std::invalid_argument("matrix view of " + std::to_string(rows) + " x " + std::to_string(cols));
    }
  }
  // A view of mutable data converts to a view of const data.
  template <class U, class = std::enable_if_t<std::is_same_v<const U, T> && !std::is_same_v<U, T>>>
  MatrixView(const MatrixView<U, L>& other)  // NOLINT(google-explicit-constructor)
      : data_(other.data()), rows_(other.rows()), cols_(other.cols()), device_(other.device()) {}

  T* data() const { return data_; }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  int64_t size() const { return rows_ * cols_; }
  Device device() const { return device_; }
  static constexpr Layout layout() { return L; }
  // BLAS's leading dimension: elements from the start of one row (row-major) or column
  // (column-major) to the next. Views are always dense.
  int64_t ld() const { return L == Layout::kRowMajor ? cols_ : rows_; }
  int64_t Index(int64_t row, int64_t col) const {
    return L == Layout::kRowMajor ? row * cols_ + col : col * rows_ + row;
  }

  // The same memory read as the transpose in the other layout: row-major [r x c] is
  // column-major [c x r]. Nothing moves.
  MatrixView<T, OtherLayout(L)> Transpose() const { return {data_, cols_, rows_, device_}; }

  // The first `rows` rows of a row-major matrix (contiguous, so still a dense view).
  MatrixView TopRows(int64_t rows) const {
    static_assert(L == Layout::kRowMajor, "only a row-major matrix has contiguous leading rows");
    if (rows < 0 || rows > rows_) {
      throw std::invalid_argument("TopRows(" + std::to_string(rows) + ") of a matrix with " + std::to_string(rows_) +
                                  " rows");
    }
    return {data_, rows, cols_, device_};
  }

 private:
  T* data_ = nullptr;
  int64_t rows_ = 0;
  int64_t cols_ = 0;
  Device device_ = Device::kCpu;
};

template <class T>
class VectorView {
 public:
  VectorView() = default;
  VectorView(T* data, int64_t size, Device device) : data_(data), size_(size), device_(device) {
    if (size < 0) throw std::invalid_argument("vector view of size " + std::to_string(size));
  }
  template <class U, class = std::enable_if_t<std::is_same_v<const U, T> && !std::is_same_v<U, T>>>
  VectorView(const VectorView<U>& other)  // NOLINT(google-explicit-constructor)
      : data_(other.data()), size_(other.size()), device_(other.device()) {}

  T* data() const { return data_; }
  int64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  Device device() const { return device_; }
  VectorView Head(int64_t n) const {
    if (n < 0 || n > size_) {
      throw std::invalid_argument("Head(" + std::to_string(n) + ") of a vector of " + std::to_string(size_));
    }
    return {data_, n, device_};
  }

 private:
  T* data_ = nullptr;
  int64_t size_ = 0;
  Device device_ = Device::kCpu;
};

// Activations and other per-sample data: [batch x features], row-major.
using BatchView = MatrixView<float, Layout::kRowMajor>;
using ConstBatchView = MatrixView<const float, Layout::kRowMajor>;
// What BLAS takes.
using ColMajorView = MatrixView<float, Layout::kColMajor>;
using ConstColMajorView = MatrixView<const float, Layout::kColMajor>;

// Views of a whole core Buffer. AsMatrix checks rows * cols == buffer.size().
template <class T>
VectorView<T> AsVector(Buffer<T>& buffer) {
  return {buffer.data(), static_cast<int64_t>(buffer.size()), buffer.device()};
}
template <class T>
VectorView<const T> AsVector(const Buffer<T>& buffer) {
  return {buffer.data(), static_cast<int64_t>(buffer.size()), buffer.device()};
}
template <class T>
MatrixView<T, Layout::kRowMajor> AsMatrix(Buffer<T>& buffer, int64_t rows, int64_t cols) {
  if (rows < 0 || cols < 0 || static_cast<uint64_t>(rows * cols) != buffer.size()) {
    throw std::invalid_argument("a buffer of " + std::to_string(buffer.size()) + " elements is not a " +
                                std::to_string(rows) + " x " + std::to_string(cols) + " matrix");
  }
  return {buffer.data(), rows, cols, buffer.device()};
}

// Host copies, for tests, checkpoints and logs (never in a hot loop). On CUDA they wait for the
// work queued before them (a plain cudaMemcpy on the legacy stream).
template <class T>
std::vector<std::remove_const_t<T>> ToHost(const VectorView<T>& view) {
  std::vector<std::remove_const_t<T>> out(static_cast<std::size_t>(view.size()));
  CopyBytes(out.data(), Device::kCpu, view.data(), view.device(), out.size() * sizeof(T));
  return out;
}
template <class T, Layout L>
std::vector<std::remove_const_t<T>> ToHost(const MatrixView<T, L>& view) {
  return ToHost(VectorView<T>(view.data(), view.size(), view.device()));
}
template <class T>
void CopyFromHost(const VectorView<T>& view, const std::vector<T>& values) {
  if (static_cast<int64_t>(values.size()) != view.size()) {
    throw std::invalid_argument("CopyFromHost: " + std::to_string(values.size()) + " values for a view of " +
                                std::to_string(view.size()));
  }
  CopyBytes(view.data(), view.device(), values.data(), Device::kCpu, values.size() * sizeof(T));
}
template <class T, Layout L>
void CopyFromHost(const MatrixView<T, L>& view, const std::vector<T>& values) {
  CopyFromHost(VectorView<T>(view.data(), view.size(), view.device()), values);
}

}  // namespace cugym::nn
