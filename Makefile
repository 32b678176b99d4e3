# The two commands of the README, and what they stand on.
#   make demo   install what is missing, build, run `loadtrace demo`
#   make test   install what is missing, build, run the whole test suite
BUILD ?= build
TYPE ?= RelWithDebInfo
CMAKE_FLAGS ?=
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: all deps configure build demo test bench clean

all: build

deps:
	@sh scripts/deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(TYPE) $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

demo: build
	./$(BUILD)/loadtrace demo

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

bench: build
	sh bench/run.sh $(BUILD)

clean:
	rm -rf $(BUILD)
