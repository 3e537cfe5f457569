# The two commands of the README:
#   make demo   installs what is missing, builds, records a sample training run
#               on CPU, advises, verifies and writes a report
#   make test   installs, builds and runs every test
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=Release
ifeq ($(CI),true)
CMAKE_FLAGS += -DGCPROF_WERROR=ON
endif
# Paths under the checkout are hashed relative to it, so the wheel's build
# (build-wheel/, tests/install) and clones elsewhere reuse what build/ compiled.
export CCACHE_BASEDIR := $(CURDIR)
ifneq ($(shell command -v ccache 2>/dev/null),)
CMAKE_FLAGS += -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache
endif

.PHONY: all deps build test demo bench clean
all: build

deps:
	@scripts/install-deps

build: deps
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

test: build
	@cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

demo: build
	@scripts/demo $(BUILD)

bench: build
	@scripts/bench $(BUILD)

clean:
	rm -rf $(BUILD) build-wheel
