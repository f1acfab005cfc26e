// Portability macros shared by host and device code. This header never includes CUDA headers,
// so code using it compiles with a plain C++ compiler.
#pragma once

#if defined(__CUDACC__)
#define CUGYM_HD __host__ __device__
#define CUGYM_FORCEINLINE __forceinline__
#else
#define CUGYM_HD
#define CUGYM_FORCEINLINE inline __attribute__((always_inline))
#endif

// Promises the compiler that a loop's iterations are independent (no aliasing between the
// arrays it touches), so it vectorizes. `#pragma omp simd` would also do, but GCC 12 then
// privatizes struct locals into arrays and gives up on the loop.
#if defined(__clang__)
#define CUGYM_IVDEP _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__) && !defined(__CUDACC__)
#define CUGYM_IVDEP _Pragma("GCC ivdep")
#else
#define CUGYM_IVDEP
#endif
