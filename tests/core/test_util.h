// Helpers shared by the core and command-line test suites.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>

namespace cugym::testing {

// The message of the std::invalid_argument that `f` throws, or "(no error)".
inline std::string InvalidArgumentMessage(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace cugym::testing
