# The two commands of the README:
#   make demo   installs what is missing, builds, records a sample training run
#               on CPU, advises, verifies and writes a report
#   make test   installs, builds and runs every test, then the sanitizer and
#               fuzz build (make sanitize), and lists the tests that skipped
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

SANITIZE_BUILD ?= build-asan
# clang for libFuzzer (the sanitized build never loads the injector).
SANITIZE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGCPROF_SANITIZE=ON \
                  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
ifneq ($(shell command -v ccache 2>/dev/null),)
SANITIZE_FLAGS += -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache
endif

.PHONY: all deps build test sanitize demo bench bench-scale clean
all: build

deps:
	@scripts/install-deps

build: deps
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

# Skipped tests (exit 77: a package, a GPU or a kernel feature is missing) and
# partly skipped ones are listed at the end (scripts/skipped-tests); ctest
# (3.24 or newer) keeps the tail of each output, where the runners print
# their SKIP lines.
CTEST_KEEP_TAIL := $(shell ctest --help 2>/dev/null | grep -q -- --test-output-truncation && echo --test-output-truncation head)
#
# The tests write under a TMPDIR of their own (scripts/test-tmpdir): removed
# when they pass, kept and named when one fails, so runs never fill /tmp.
test: build
	@rc=0; cd $(BUILD) && $(CURDIR)/scripts/test-tmpdir ctest --output-on-failure -j$(JOBS) $(CTEST_KEEP_TAIL) \
	  --output-junit ctest-junit.xml || rc=$$?; \
	  if [ $$rc -ne 0 ]; then $(CURDIR)/scripts/skipped-tests ctest-junit.xml; exit $$rc; fi
	@$(MAKE) --no-print-directory sanitize
	@scripts/skipped-tests $(BUILD)/ctest-junit.xml

# ASan + UBSan build of the libraries, the CLI and their in-process tests, and
# the libFuzzer targets run for 20 s each (tests/fuzz).
sanitize: deps
	@cmake -S . -B $(SANITIZE_BUILD) $(SANITIZE_FLAGS) >/dev/null
	@cmake --build $(SANITIZE_BUILD) -j$(JOBS)
	@cd $(SANITIZE_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 $(CURDIR)/scripts/test-tmpdir ctest --output-on-failure -j$(JOBS)

demo: build
	@scripts/demo $(BUILD)

# The benchmarks behind bench/RESULTS.md, with the commands it names.
bench: build
	$(BUILD)/bin/gui_frame_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
	$(BUILD)/bin/advisor_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
	python3 bench/record/side_by_side.py --build $(BUILD) --short
	python3 bench/record/storm.py --build $(BUILD) --rounds 1

# show, advise, export and the GUI on a generated trace of SCALE allocations
# (bench/RESULTS.md, "Scale"); the trace is kept in /tmp/gcprof-scale.
SCALE ?= 1000000
bench-scale: build
	bench/scale/measure.sh $(BUILD) $(SCALE) /tmp/gcprof-scale

clean:
	rm -rf $(BUILD) $(SANITIZE_BUILD) build-wheel
