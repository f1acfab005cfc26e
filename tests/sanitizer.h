// Whether this test binary is an AddressSanitizer build (CUGYM_SANITIZE). Such builds run the
// longest checks shorter (the Release configuration runs them in full, so the sanitizers need only
// the code they reach); suites say so where they do.
#pragma once

namespace cugym::testing {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitizerBuild = true;
#else
inline constexpr bool kSanitizerBuild = false;
#endif

}  // namespace cugym::testing
