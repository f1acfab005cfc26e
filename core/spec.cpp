// Spaces and specs.
#include "core/spec.h"

#include <stdexcept>
#include <string>
#include <utility>

namespace cugym {

Space Space::Discrete(int64_t n) {
  if (n <= 0) throw std::invalid_argument("Discrete(n) needs n > 0, got " + std::to_string(n));
  Space space;
  space.kind = Kind::kDiscrete;
  space.n = n;
  space.dtype = ScalarType::kInt32;
  return space;
}

Space Space::Box(std::vector<float> low, std::vector<float> high) {
  if (low.size() != high.size() || low.empty())
    throw std::invalid_argument("Box bounds need the same, non-zero length");
  for (std::size_t i = 0; i < low.size(); ++i) {
    if (!(low[i] <= high[i])) throw std::invalid_argument("Box bound " + std::to_string(i) + ": low > high");
  }
  Space space;
  space.kind = Kind::kBox;
  space.shape = {static_cast<int64_t>(low.size())};
  space.low = std::move(low);
  space.high = std::move(high);
  return space;
}

Space Space::UniformBox(std::vector<int64_t> shape, float low, float high) {
  if (shape.empty()) throw std::invalid_argument("UniformBox needs a non-empty shape");
  int64_t size = 1;
  for (int64_t d : shape) {
    if (d <= 0) throw std::invalid_argument("UniformBox: dimension " + std::to_string(d) + " is not positive");
    size *= d;
  }
  if (!(low <= high)) throw std::invalid_argument("UniformBox: low > high");
  Space space = Box(std::vector<float>(size, low), std::vector<float>(size, high));
  space.shape = std::move(shape);
  return space;
}

int64_t Space::flat_size() const {
  if (kind == Kind::kDiscrete) return 1;
  int64_t size = 1;
  for (int64_t d : shape) size *= d;
  return size;
}

std::string Space::ToString() const {
  if (kind == Kind::kDiscrete) return "Discrete(" + std::to_string(n) + ")";
  std::string out = "Box(";
  // Python's tuple spelling: (4,) for one dimension, (10,10,4) for more.
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? "," : "") + std::to_string(shape[i]);
  return out + (shape.size() == 1 ? ",) float32" : ") float32");
}

}  // namespace cugym
