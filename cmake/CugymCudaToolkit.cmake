# cugym_find_cuda_toolkit(ARGS...): find_package(CUDAToolkit ARGS...) that also configures with CUDA
# 12.9 and later, which ship no nvToolsExt, on CMake versions whose FindCUDAToolkit marks
# CUDA::nvToolsExt deprecated without checking that the target exists (Debian bookworm's 3.25.1
# stops with "set_property could not find TARGET CUDA::nvToolsExt"). Only where the toolkit has no
# nvToolsExt library does an empty imported target of that name stand in; cugym links neither
# nvToolsExt nor nvtx3.
macro(cugym_find_cuda_toolkit)
  if(NOT TARGET CUDA::nvToolsExt)
    if(CMAKE_CUDA_COMPILER)
      set(_cugym_nvcc "${CMAKE_CUDA_COMPILER}")
    else()
      unset(_cugym_nvcc)  # find_program searches only for a variable that is not set
      find_program(_cugym_nvcc nvcc HINTS ENV CUDA_PATH PATH_SUFFIXES bin PATHS /usr/local/cuda/bin NO_CACHE)
    endif()
    if(_cugym_nvcc)
      get_filename_component(_cugym_cuda_root "${_cugym_nvcc}" REALPATH)
      get_filename_component(_cugym_cuda_root "${_cugym_cuda_root}" DIRECTORY)
      get_filename_component(_cugym_cuda_root "${_cugym_cuda_root}" DIRECTORY)
      file(GLOB _cugym_nvtoolsext "${_cugym_cuda_root}/lib64/libnvToolsExt*"
           "${_cugym_cuda_root}/targets/*/lib/libnvToolsExt*")
      if(NOT _cugym_nvtoolsext)
        add_library(CUDA::nvToolsExt INTERFACE IMPORTED)
      endif()
    endif()
  endif()
  find_package(CUDAToolkit ${ARGN})
endmacro()
