# What `cmake --install`, `cpack -G DEB` and a wheel (pyproject.toml) put
# where (destinations: InstallLayout.cmake). Three components:
#   runtime      gcprof, gcprof-gui, the injector, the python shim and its
#                C++ backward hooks (profiler/backward_hooks, when built)
#   python       the python package and its GCPROF_PLAN hook in a
#                site-packages (the wheel; elsewhere when GCPROF_PYTHON_SITE_DIR is set)
#   development  the C API header, gcprof::torch, find_package(gcprof)
# The wheel takes runtime and python only.
set(_py ${PROJECT_SOURCE_DIR}/profiler/python)
set(_no_bytecode PATTERN __pycache__ EXCLUDE PATTERN "*.pyc" EXCLUDE)

install(TARGETS gcprof RUNTIME DESTINATION ${GCPROF_INSTALL_BINDIR} COMPONENT runtime)
if(TARGET gcprof-gui)
  install(TARGETS gcprof-gui RUNTIME DESTINATION ${GCPROF_INSTALL_BINDIR} COMPONENT runtime)
endif()
# The injector keeps the run path to a CUDA toolkit's CUPTI it links
# (the build tree's run path is dropped on install otherwise).
set_target_properties(gcprof_inject PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
install(TARGETS gcprof_inject LIBRARY DESTINATION ${GCPROF_INSTALL_LIBDIR} COMPONENT runtime)
set_target_properties(gcprof_attach PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
install(TARGETS gcprof_attach LIBRARY DESTINATION ${GCPROF_INSTALL_LIBDIR} COMPONENT runtime)
# The shim folder `gcprof record` puts on the job's PYTHONPATH: the package
# travels with it so that any python the job runs finds it.
install(DIRECTORY ${_py}/gcprof DESTINATION ${GCPROF_INSTALL_SHAREDIR}/python
        COMPONENT runtime ${_no_bytecode})
install(FILES ${_py}/sitecustomize.py DESTINATION ${GCPROF_INSTALL_SHAREDIR}/python
        COMPONENT runtime)

if(GCPROF_PYTHON_SITE_DIR)
  install(DIRECTORY ${_py}/gcprof DESTINATION ${GCPROF_PYTHON_SITE_DIR}
          COMPONENT python ${_no_bytecode})
  install(FILES ${_py}/gcprof.pth DESTINATION ${GCPROF_PYTHON_SITE_DIR} COMPONENT python)
endif()

# What a wheel compiles (pyproject.toml's build.targets): what it installs.
# The C++ backward hooks exist only when torch was importable at configure
# time, the allocator trace tracker only with a LibTorch built with CUDA.
add_custom_target(gcprof_wheel)
foreach(_target gcprof gcprof-gui gcprof_inject gcprof_attach gcprof_backward_hooks
                gcprof_allocator_trace)
  if(TARGET ${_target})
    add_dependencies(gcprof_wheel ${_target})
  endif()
endforeach()

if(SKBUILD)
  return()
endif()

# development: headers, gcprof::api, gcprof::torch and the package config.
include(CMakePackageConfigHelpers)
set(_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/gcprof)
install(FILES ${PROJECT_SOURCE_DIR}/profiler/include/gcprof/gcprof.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/gcprof COMPONENT development)
set_target_properties(gcprof_api PROPERTIES EXPORT_NAME api)
set(_exported gcprof_api)
set(GCPROF_INSTALLED_TORCH OFF)
if(TARGET gcprof_torch)
  set(GCPROF_INSTALLED_TORCH ON)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/runtime/torch/include/gcprof/torch
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/gcprof COMPONENT development)
  # gcprof::libtorch names the LibTorch gcprof::torch was compiled against
  # (its absolute paths): the helper only links with that one.
  set_target_properties(gcprof_torch PROPERTIES EXPORT_NAME torch)
  set_target_properties(gcprof_libtorch PROPERTIES EXPORT_NAME libtorch)
  list(APPEND _exported gcprof_torch gcprof_libtorch)
endif()
install(TARGETS ${_exported} EXPORT gcprofTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development)
install(EXPORT gcprofTargets NAMESPACE gcprof:: DESTINATION ${_cmake_dir} COMPONENT development)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/gcprofConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/gcprofConfig.cmake
  INSTALL_DESTINATION ${_cmake_dir}
  PATH_VARS GCPROF_INSTALL_BINDIR GCPROF_INSTALL_LIBDIR)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/gcprofConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/gcprofConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/gcprofConfigVersion.cmake
        DESTINATION ${_cmake_dir} COMPONENT development)

# The Debian package: every component, installed under /usr.
set(CPACK_PACKAGE_NAME gcprof)
set(CPACK_PACKAGE_CONTACT "gcprof maintainers <gcprof@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "GPU memory profiler and gradient-checkpoint advisor for PyTorch/LibTorch training")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
# What the binaries link (ldd): named here rather than found by
# dpkg-shlibdeps, which stops at a CUDA build's CUPTI (the toolkit's, owned by
# no Debian package; the injector keeps its run path to it).
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6, libstdc++6, libgcc-s1, libsqlite3-0, libre2-9")
if(TARGET gcprof-gui)
  string(APPEND CPACK_DEBIAN_PACKAGE_DEPENDS ", libglfw3, libopengl0, libstb0")
endif()
include(CPack)
