# Thin wrapper over CMake. Each target installs what is missing first; all but package configure and build
# $(BUILD) (package builds a copy of the tree with dpkg-buildpackage).
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps configure build demo test bench package clean

all: build

deps:
	scripts/install-deps

configure: deps
	cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	scripts/demo $(BUILD)

test: build
	cd $(BUILD) && ctest --output-on-failure --timeout 1200 -j $(JOBS)

bench: build
	bench/run-all $(BUILD)

# The Debian packages, built by dpkg-buildpackage from the source tree (scripts/make-packages), in
# $(BUILD)/packages; CMAKE_FLAGS reach the package's CMake too.
package: deps
	NVME_ADAPT_CMAKE_FLAGS="$(CMAKE_FLAGS)" scripts/make-packages $(BUILD)/packages $(JOBS)

clean:
	rm -rf $(BUILD)
