# Installs the cugym executable, the static libraries with their public headers, and a CMake
# package: find_package(cugym) gives cugym::core, cugym::envs, cugym::nn, cugym::agents and
# cugym_add_env_plugin() (docs/cpp-api.md, docs/custom-envs.md).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS cugym RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
set_target_properties(cugym_core PROPERTIES EXPORT_NAME core)
set_target_properties(cugym_envs PROPERTIES EXPORT_NAME envs)
set_target_properties(cugym_nn PROPERTIES EXPORT_NAME nn)
set_target_properties(cugym_agents PROPERTIES EXPORT_NAME agents)
set_target_properties(cugym_flags PROPERTIES EXPORT_NAME flags)
set_target_properties(cugym_strict_fp PROPERTIES EXPORT_NAME strict_fp)
install(TARGETS cugym_core cugym_envs cugym_nn cugym_agents cugym_flags cugym_strict_fp EXPORT cugymTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
# Headers keep their folder (#include "agents/off_policy/dqn.h") under include/cugym. Every header a public
# one includes is installed; the few that only the libraries' own sources include are not (nn's
# back-end internals, the agents' device ops as loop bodies (device_ops_impl.h, which needs nvcc's
# --extended-lambda), and cublas_check.h, which needs the CUDA toolkit's headers).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/core ${PROJECT_SOURCE_DIR}/envs ${PROJECT_SOURCE_DIR}/nn
                  ${PROJECT_SOURCE_DIR}/agents
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/cugym
        FILES_MATCHING PATTERN "*.h" PATTERN "*.cuh"
        PATTERN "backend_impl.h" EXCLUDE PATTERN "cublas_check.h" EXCLUDE PATTERN "small_gemm.h" EXCLUDE
        PATTERN "device_ops_impl.h" EXCLUDE)
install(EXPORT cugymTargets NAMESPACE cugym:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/cugym)

# What the package needs to know about this build: the plugin helper's CUDA and Thrust, and the
# libraries the static libraries link that have no CMake package of their own (the config file
# looks for them again where they were at build time, then on the consumer's search path).
set(CUGYM_PACKAGE_HAVE_CUDA ${CUGYM_HAVE_CUDA})
set(CUGYM_PACKAGE_THRUST_INCLUDE_DIR ${CUGYM_THRUST_INCLUDE_DIR})
set(CUGYM_PACKAGE_OPENBLAS_LIBRARY ${CUGYM_OPENBLAS_LIBRARY})
set(CUGYM_PACKAGE_HAVE_BOX2D ${CUGYM_HAVE_BOX2D})
set(CUGYM_PACKAGE_BOX2D_LIBRARY "")
if(CUGYM_HAVE_BOX2D)
  set(CUGYM_PACKAGE_BOX2D_LIBRARY ${CUGYM_BOX2D_LIBRARY})
endif()
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/cugymConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cugymConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/cugym)
# 0.x: a minor release may change the C++ API, a patch release does not (docs/cpp-api.md).
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cugymConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cugymConfig.cmake ${PROJECT_BINARY_DIR}/cugymConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/CugymPlugin.cmake ${PROJECT_SOURCE_DIR}/cmake/CugymCudaToolkit.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/cugym)
