# Where an installed gcprof puts its files. One layout for every way of
# installing (cmake --install, the Debian package from CPack, a wheel), so
# that the gcprof executable finds its injector and python shim relative to
# itself: <prefix>/bin/gcprof, <prefix>/<libdir>/libgcprof_inject.so,
# <prefix>/<datadir>/gcprof/python (recorded_launch.cpp looks there).
include(GNUInstallDirs)

# The same two directories relative to the prefix, compiled into gcprof.
file(RELATIVE_PATH GCPROF_LIBDIR_IN_PREFIX ${CMAKE_INSTALL_PREFIX} ${CMAKE_INSTALL_FULL_LIBDIR})
file(RELATIVE_PATH GCPROF_DATADIR_IN_PREFIX ${CMAKE_INSTALL_PREFIX} ${CMAKE_INSTALL_FULL_DATADIR})

if(SKBUILD)
  # A wheel (scikit-build-core, pyproject.toml): executables go to the
  # environment's bin/ (the wheel's scripts), the injector and the shim to
  # its prefix (the wheel's data), the python package to site-packages.
  set(GCPROF_INSTALL_BINDIR ${SKBUILD_SCRIPTS_DIR})
  set(GCPROF_INSTALL_LIBDIR ${SKBUILD_DATA_DIR}/${GCPROF_LIBDIR_IN_PREFIX})
  set(GCPROF_INSTALL_SHAREDIR ${SKBUILD_DATA_DIR}/${GCPROF_DATADIR_IN_PREFIX}/gcprof)
  set(GCPROF_PYTHON_SITE_DIR ${SKBUILD_PLATLIB_DIR})
else()
  set(GCPROF_INSTALL_BINDIR ${CMAKE_INSTALL_BINDIR})
  set(GCPROF_INSTALL_LIBDIR ${CMAKE_INSTALL_LIBDIR})
  set(GCPROF_INSTALL_SHAREDIR ${CMAKE_INSTALL_DATADIR}/gcprof)
  set(GCPROF_PYTHON_SITE_DIR "" CACHE STRING
      "Also install the python package and its GCPROF_PLAN hook (gcprof.pth) into this \
site-packages directory (relative to the prefix), e.g. lib/python3/dist-packages; empty: not")
endif()
if(NOT CMAKE_INSTALL_BINDIR STREQUAL "bin")
  message(WARNING "gcprof: CMAKE_INSTALL_BINDIR is '${CMAKE_INSTALL_BINDIR}'; gcprof looks for "
                  "its injector and shim from <prefix>/bin and will not find them")
endif()
