# tessera: two commands set up everything on a fresh Debian machine.
#   make run   installs missing Debian packages, builds (Release), runs the default simulation
#   make test  the same set-up, then every test through ctest
#   make bench the benchmarks (not part of make test)
BUILD ?= build
JOBS ?= $(shell nproc)
TESSERA := $(BUILD)/sc_main/tessera

.PHONY: all deps configure build run test bench clean fuzz test-sanitize

# Sanitized builds live apart from the Release build.
SANITIZE_BUILD ?= build-sanitize
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60

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
	@cmake --build $(BUILD) -j $(JOBS) --target tessera_bench tessera_bench_compile tessera_bench_search_space tessera_bench_scale
	$(BUILD)/tests/bench/tessera_bench
	$(BUILD)/tests/workloads/tessera_bench_compile
	$(BUILD)/tests/workloads/tessera_bench_search_space
	$(TESSERA) search --model gpt3-175b --platform dgx-a100 --nodes 128 --global-batch 1536 -j $(JOBS)
	$(BUILD)/tests/bench/tessera_bench_scale

# Every test with AddressSanitizer and UndefinedBehaviorSanitizer (not part of make test).
test-sanitize: deps
	@cmake -S . -B $(SANITIZE_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTESSERA_SANITIZE=ON >/dev/null
	@cmake --build $(SANITIZE_BUILD) -j $(JOBS)
	cd $(SANITIZE_BUILD) && ASAN_OPTIONS=detect_leaks=0:detect_stack_use_after_return=0 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j $(JOBS)

# Each input reader under libFuzzer for FUZZ_SECONDS, from seeds of the shipped files.
fuzz:
	@tools/install-deps.sh fuzz
	@tools/fuzz.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(JOBS)

clean:
	rm -rf $(BUILD) $(SANITIZE_BUILD) $(FUZZ_BUILD)
