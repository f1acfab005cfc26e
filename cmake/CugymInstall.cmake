# Installs the cugym executable, the headers an env plugin compiles against, the static core
# library and a CMake package: find_package(cugym) gives cugym::core and cugym_add_env_plugin().
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS cugym RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
set_target_properties(cugym_core PROPERTIES EXPORT_NAME core)
set_target_properties(cugym_flags PROPERTIES EXPORT_NAME flags)
set_target_properties(cugym_strict_fp PROPERTIES EXPORT_NAME strict_fp)
install(TARGETS cugym_core cugym_flags cugym_strict_fp EXPORT cugymTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/core ${PROJECT_SOURCE_DIR}/envs
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/cugym
        FILES_MATCHING PATTERN "*.h" PATTERN "*.cuh")
install(EXPORT cugymTargets NAMESPACE cugym:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/cugym)

# What the plugin helper needs to know about this build.
set(CUGYM_PACKAGE_HAVE_CUDA ${CUGYM_HAVE_CUDA})
set(CUGYM_PACKAGE_THRUST_INCLUDE_DIR ${CUGYM_THRUST_INCLUDE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/cugymConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cugymConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/cugym)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cugymConfigVersion.cmake COMPATIBILITY ExactVersion)
install(FILES ${PROJECT_BINARY_DIR}/cugymConfig.cmake ${PROJECT_BINARY_DIR}/cugymConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/CugymPlugin.cmake ${PROJECT_SOURCE_DIR}/cmake/CugymCudaToolkit.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/cugym)
