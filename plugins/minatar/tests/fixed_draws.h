// A draw source for rule tests on hand-built states (plugins/minatar/common.h's draw interface):
// every rand() returns `uniform`, every randint(lo, hi) returns lo, and the calls are counted.
#pragma once

namespace cugym::minatar::testing {

// Every rand() returns `uniform`, every randint(lo, hi) returns lo; counts the calls.
struct FixedDraws {
  double uniform = 0.9;
  int uniforms = 0, ints = 0;
  double Uniform() {
    ++uniforms;
    return uniform;
  }
  int Int(int lo, int) {
    ++ints;
    return lo;
  }
};

}  // namespace cugym::minatar::testing
