# The README's commands. `make run`: install, build, run saker's main job. `make test`: install, build, test.
BUILD      ?= build
FUZZ_BUILD ?= build-fuzz
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=
SAKER      := $(BUILD)/bin/saker

.PHONY: all deps build run test test-unit test-fuzz test-python clean

all: build

deps:
	@scripts/install-deps.sh --python

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_ARGS)
	cmake --build $(BUILD) -j$(JOBS)

run: build
	@scripts/run-main-job.sh $(SAKER) $(MODEL)

# Every test: unit + golden + CLI (ctest), the fuzz build under ASan/UBSan, and the Python oracle tests.
test: build test-unit test-fuzz test-python
	@echo "saker: all test suites passed"

test-unit:
	ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS)

test-fuzz:
	@if command -v clang++ >/dev/null 2>&1; then \
	  cmake -S . -B $(FUZZ_BUILD) -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
	    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSAKER_FUZZ=ON -DSAKER_TESTS=OFF -DSAKER_CUDA=OFF && \
	  cmake --build $(FUZZ_BUILD) -j$(JOBS) && \
	  ctest --test-dir $(FUZZ_BUILD) --output-on-failure -L fuzz -j$(JOBS); \
	else echo "saker: clang++ not found: fuzz targets skipped"; fi

test-python:
	SAKER_BIN=$(abspath $(SAKER)) .venv/bin/python -m pytest -q tests/python

clean:
	rm -rf $(BUILD) $(FUZZ_BUILD)
