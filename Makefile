# tessera: two commands set up everything on a fresh Debian machine.
#   make run   installs missing Debian packages, builds (Release), runs the default simulation
#   make test  the same set-up, then every test through ctest
#   make bench the benchmarks (not part of make test)
BUILD ?= build
JOBS ?= $(shell nproc)
TESSERA := $(BUILD)/sc_main/tessera

.PHONY: all deps configure build run test bench clean

all: build

deps:
	@tools/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

run: build
	$(TESSERA) run

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

bench: build
	@cmake --build $(BUILD) -j $(JOBS) --target tessera_bench tessera_bench_compile
	$(BUILD)/tests/bench/tessera_bench
	$(BUILD)/tests/workloads/tessera_bench_compile

clean:
	rm -rf $(BUILD)
