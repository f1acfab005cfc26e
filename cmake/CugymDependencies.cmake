# Finds cugym's optional dependencies quietly: CUDA, Thrust (CCCL), OpenMP, SDL2, Box2D.
# Each optional one is AUTO (use it when found), ON (required) or OFF.
include(${CMAKE_CURRENT_LIST_DIR}/CugymCudaToolkit.cmake)

function(cugym_option_state name found)
  if(${name} STREQUAL "ON" AND NOT ${found})
    message(FATAL_ERROR "${name}=ON but it was not found")
  endif()
endfunction()

# --- CUDA -----------------------------------------------------------------------------
set(CUGYM_HAVE_CUDA OFF)
if(NOT CUGYM_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    cugym_find_cuda_toolkit(REQUIRED)
    set(CUGYM_HAVE_CUDA ON)
  elseif(CUGYM_CUDA STREQUAL "ON")
    message(FATAL_ERROR "CUGYM_CUDA=ON but no CUDA compiler was found (set CMAKE_CUDA_COMPILER)")
  else()
    message(STATUS "cugym: no CUDA compiler found, building the CPU back end only")
  endif()
endif()

# --- Thrust for the CPU back end ----------------------------------------------------------
# The CUDA toolkit's CCCL headers when a toolkit is installed (even with CUGYM_CUDA=OFF),
# else a system Thrust (Debian: libthrust-dev).
if(NOT CUGYM_HAVE_CUDA)
  cugym_find_cuda_toolkit(QUIET)
endif()
find_path(CUGYM_THRUST_INCLUDE_DIR thrust/version.h
  HINTS ${CUDAToolkit_INCLUDE_DIRS}/cccl ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include/cccl
  NO_CACHE)
if(NOT CUGYM_THRUST_INCLUDE_DIR)
  message(FATAL_ERROR "Thrust headers not found: install the CUDA toolkit or libthrust-dev "
                      "(scripts/setup.sh does this)")
endif()

find_package(OpenMP REQUIRED COMPONENTS CXX)

# --- SDL2 (the window of `cugym watch`) and libpng (reading PNG in tests) --------------------
# `cugym record` needs neither: it draws with core's RasterCanvas and writes PNG with its own
# encoder (render/png_encoder.cpp).
set(CUGYM_HAVE_SDL2 OFF)
if(NOT CUGYM_SDL2 STREQUAL "OFF")
  find_package(SDL2 QUIET CONFIG)
  if(SDL2_FOUND)
    set(CUGYM_HAVE_SDL2 ON)
    find_package(SDL2_ttf QUIET CONFIG)  # optional: heads-up text in `cugym watch`
  else()
    message(STATUS "cugym: SDL2 not found, `cugym watch` (the window) is left out; `cugym record` is built")
  endif()
  cugym_option_state(CUGYM_SDL2 CUGYM_HAVE_SDL2)
endif()
find_package(PNG QUIET)
set(CUGYM_HAVE_LIBPNG OFF)
if(PNG_FOUND)
  set(CUGYM_HAVE_LIBPNG ON)
endif()

set(CUGYM_HAVE_BOX2D OFF)
if(NOT CUGYM_BOX2D STREQUAL "OFF")
  find_path(CUGYM_BOX2D_INCLUDE_DIR box2d/box2d.h NO_CACHE)
  find_library(CUGYM_BOX2D_LIBRARY box2d NO_CACHE)
  if(CUGYM_BOX2D_INCLUDE_DIR AND CUGYM_BOX2D_LIBRARY)
    set(CUGYM_HAVE_BOX2D ON)
  else()
    message(STATUS "cugym: Box2D not found, Box2D environments are left out")
  endif()
  cugym_option_state(CUGYM_BOX2D CUGYM_HAVE_BOX2D)
endif()
