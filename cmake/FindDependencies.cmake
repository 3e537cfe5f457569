# Every third-party dependency in one place. All come from Debian packages
# or PyPI through scripts/install-deps; nothing is vendored.
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(SQLite3 REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
# RE2 (libre2-dev) matches `advise --units REGEX` in linear time, with no
# recursion, whatever the pattern (std::regex backtracks and recurses).
pkg_check_modules(RE2 REQUIRED IMPORTED_TARGET re2)
find_package(GTest)
# Without it most tests would silently not exist: say so instead.
if(GCPROF_BUILD_TESTS AND NOT GTest_FOUND)
  message(FATAL_ERROR "GoogleTest not found: the tests need it (scripts/install-deps installs "
                      "libgtest-dev), or configure with -DGCPROF_BUILD_TESTS=OFF")
endif()

# LibTorch: the one inside PyTorch's wheel (same version as the python side),
# or any LibTorch given with -DGCPROF_TORCH_DIR=<dir holding include/ and lib/>.
# We link its libraries directly instead of find_package(Torch): TorchConfig
# insists on a CUDA toolkit matching the wheel's, which we do not need to
# compile CPU code or to call into libtorch_cuda.
#
# The python asked: python3, or in a wheel build the python running pip
# (scikit-build-core names it). pip's build isolation hides that python's
# site-packages (PYTHONPATH names a sitecustomize that drops them, and
# PYTHONNOUSERSITE=1), so torch, which the wheel must not require, is not
# importable there; it is still the torch the user's jobs import. When the
# plain probe fails, it is asked again without those two variables, so that
# `pip install .` builds the C++ recording hooks as `--no-build-isolation`
# does (docs/install.md).
set(GCPROF_PYTHON3 python3)
if(SKBUILD AND Python3_EXECUTABLE)
  set(GCPROF_PYTHON3 ${Python3_EXECUTABLE})
elseif(SKBUILD AND Python_EXECUTABLE)
  set(GCPROF_PYTHON3 ${Python_EXECUTABLE})
endif()
execute_process(COMMAND ${GCPROF_PYTHON3} -c "import torch" RESULT_VARIABLE _torch_rc OUTPUT_QUIET ERROR_QUIET)
if(NOT _torch_rc EQUAL 0 AND (DEFINED ENV{PYTHONPATH} OR DEFINED ENV{PYTHONNOUSERSITE}))
  set(_unisolated ${CMAKE_COMMAND} -E env --unset=PYTHONPATH --unset=PYTHONNOUSERSITE ${GCPROF_PYTHON3})
  execute_process(COMMAND ${_unisolated} -c "import torch" RESULT_VARIABLE _torch_rc OUTPUT_QUIET ERROR_QUIET)
  if(_torch_rc EQUAL 0)
    set(GCPROF_PYTHON3 ${_unisolated})
    message(STATUS "gcprof: torch found outside the isolated build environment (for the C++ recording hooks)")
  endif()
endif()
set(GCPROF_TORCH_DIR "" CACHE PATH "LibTorch root (include/, lib/); default: python3's torch")
if(NOT GCPROF_TORCH_DIR)
  execute_process(
    COMMAND ${GCPROF_PYTHON3} -c "import torch, os; print(os.path.dirname(torch.__file__))"
    OUTPUT_VARIABLE _torch_dir OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
    RESULT_VARIABLE _torch_rc)
  if(_torch_rc EQUAL 0)
    set(GCPROF_TORCH_DIR "${_torch_dir}" CACHE PATH "" FORCE)
  endif()
endif()
set(GCPROF_HAVE_TORCH OFF)
if(GCPROF_TORCH_DIR AND EXISTS "${GCPROF_TORCH_DIR}/include/torch/csrc/api/include/torch/torch.h")
  set(GCPROF_HAVE_TORCH ON)
  add_library(gcprof_libtorch INTERFACE)
  target_include_directories(gcprof_libtorch SYSTEM INTERFACE
    ${GCPROF_TORCH_DIR}/include ${GCPROF_TORCH_DIR}/include/torch/csrc/api/include)
  set(_abi 1)
  execute_process(
    COMMAND ${GCPROF_PYTHON3} -c "import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))"
    OUTPUT_VARIABLE _abi_out OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _abi_rc)
  if(_abi_rc EQUAL 0)
    set(_abi ${_abi_out})
  endif()
  target_compile_definitions(gcprof_libtorch INTERFACE _GLIBCXX_USE_CXX11_ABI=${_abi})
  # LibTorch 2.x headers need C++20; the rest of gcprof stays C++17.
  target_compile_features(gcprof_libtorch INTERFACE cxx_std_20)
  set(_torch_libs ${GCPROF_TORCH_DIR}/lib/libtorch.so ${GCPROF_TORCH_DIR}/lib/libtorch_cpu.so
                  ${GCPROF_TORCH_DIR}/lib/libc10.so)
  # CUDA support comes along when the LibTorch has it; --no-as-needed keeps
  # libtorch_cuda loaded so that its device registers itself.
  if(EXISTS ${GCPROF_TORCH_DIR}/lib/libtorch_cuda.so)
    target_link_options(gcprof_libtorch INTERFACE -Wl,--no-as-needed
      ${GCPROF_TORCH_DIR}/lib/libtorch_cuda.so ${GCPROF_TORCH_DIR}/lib/libc10_cuda.so
      -Wl,--as-needed)
  endif()
  target_link_libraries(gcprof_libtorch INTERFACE ${_torch_libs} Threads::Threads)
  target_link_options(gcprof_libtorch INTERFACE -Wl,-rpath,${GCPROF_TORCH_DIR}/lib)
  message(STATUS "gcprof: LibTorch from ${GCPROF_TORCH_DIR} (cxx11 abi ${_abi})")
else()
  message(WARNING "gcprof: no LibTorch found (pip install torch); samples are not built")
endif()

# CUDA toolkit with CUPTI: the injector's CUDA backend (auto-detected).
set(GCPROF_CUDA_ROOT "/usr/local/cuda" CACHE PATH "CUDA toolkit root")
find_path(GCPROF_CUPTI_INCLUDE cupti.h
  HINTS ${GCPROF_CUDA_ROOT}/include ${GCPROF_CUDA_ROOT}/extras/CUPTI/include)
find_library(GCPROF_CUPTI_LIB cupti
  HINTS ${GCPROF_CUDA_ROOT}/lib64 ${GCPROF_CUDA_ROOT}/lib ${GCPROF_CUDA_ROOT}/extras/CUPTI/lib64)
if(GCPROF_CUPTI_INCLUDE AND GCPROF_CUPTI_LIB)
  set(_cuda_default ON)
else()
  set(_cuda_default OFF)
endif()
option(GCPROF_WITH_CUDA "Build the CUDA (CUPTI) backend" ${_cuda_default})
message(STATUS "gcprof: CUDA backend ${GCPROF_WITH_CUDA} (cupti: ${GCPROF_CUPTI_LIB})")

# NVTX v3 is header-only; the CUDA toolkit ships it. We only need its types
# for the injection entry point, so a missing toolkit falls back to our own
# minimal declarations (see profiler/inject/nvtx_injection.cpp).
find_path(GCPROF_NVTX_INCLUDE nvtx3/nvToolsExt.h HINTS ${GCPROF_CUDA_ROOT}/include)
