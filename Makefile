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
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
		echo "note: chromium is not installed, so cli_browser is skipped: the HTML reports are not opened in a browser (apt-get install chromium nodejs)"
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

bench: build
	sh bench/run.sh $(BUILD)

clean:
	rm -rf $(BUILD)
