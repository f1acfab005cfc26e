# Compiler flags shared by every cugym target, collected in the interface target cugym_flags.

add_library(cugym_flags INTERFACE)
target_compile_options(cugym_flags INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra>
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>)
if(CUGYM_WERROR)
  target_compile_options(cugym_flags INTERFACE
    $<BUILD_INTERFACE:$<$<COMPILE_LANGUAGE:CXX>:-Werror> $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings>>)
endif()
if(CUGYM_NATIVE)  # not passed on to plugins built against the installed package
  target_compile_options(cugym_flags INTERFACE $<BUILD_INTERFACE:$<$<COMPILE_LANGUAGE:CXX>:-march=native>>)
endif()
if(CUGYM_SANITIZE)
  target_compile_options(cugym_flags INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined>)
  target_link_options(cugym_flags INTERFACE -fsanitize=address,undefined)
endif()
if(CUGYM_HAVE_CUDA)  # plugins decide for themselves (cugym_add_env_plugin)
  target_compile_definitions(cugym_flags INTERFACE $<BUILD_INTERFACE:CUGYM_HAVE_CUDA=1>)
endif()

# Env dynamics must give the same bits on every back end: no fused multiply-add contraction
# (the CPU and GPU would round differently), no fast-math. Applied to env translation units.
# -fno-trapping-math changes no value (cugym never unmasks FP exceptions): it lets GCC if-convert
# float compares (Clip, the wraps) without AVX-512's masked operations, so the step loops of
# MountainCar, Acrobot and Pendulum vectorize on AVX2 and NEON too, not only on AVX-512.
add_library(cugym_strict_fp INTERFACE)
target_compile_options(cugym_strict_fp INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-ffp-contract=off -fno-fast-math -fno-trapping-math>
  $<$<COMPILE_LANGUAGE:CUDA>:--fmad=false>)
