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
