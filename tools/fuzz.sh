#!/usr/bin/env bash
# Builds the libFuzzer harnesses (tests/fuzz) with clang and runs each for a bounded time from
# seed corpora made of the shipped files. Usage: tools/fuzz.sh BUILD_DIR SECONDS JOBS
# A finding (crash, sanitizer report, unexpected exception, hang) stops with its reproducer in
# BUILD_DIR/findings/<reader>/ and a non-zero status.
set -euo pipefail
build=${1:-build-fuzz}
seconds=${2:-60}
jobs=${3:-2}
# A fixed seed by default, so that a run is repeatable (CI); FUZZ_SEED=0 draws a new one each time.
seed=${FUZZ_SEED:-1}
root=$(cd "$(dirname "$0")/.." && pwd)
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTESSERA_FUZZ=ON >/dev/null
cmake --build "$build" -j "$jobs"

# The seeds of each reader: the shipped files of its format.
seeds() {
  case $1 in
    platform) ls "$root"/platforms/*.yaml "$root"/platforms/gpus/*.yaml "$root"/tests/platforms/*/*.yaml ;;
    model) ls "$root"/workloads/models/*.yaml ;;
    strategy) ls "$root"/tests/fuzz/seeds/strategy.yaml ;;
    config) ls "$root"/tests/fuzz/seeds/run.cfg ;;
    job) ls "$root"/tests/fuzz/seeds/job.yaml ;;
    csv) ls "$root"/tests/validation/data/*.csv ;;
    calibration) ls "$root"/tests/fuzz/seeds/calibration.yaml ;;
    kineto) ls "$root"/tests/fuzz/seeds/kineto.json ;;
  esac
}

# The time one input may take before libFuzzer calls it a hang; the sanitizer settings of every run.
unit_timeout=${FUZZ_UNIT_TIMEOUT:-10}
export ASAN_OPTIONS=detect_leaks=0:detect_stack_use_after_return=0

# A timeout is a finding only if its input is slow again when run alone (with three times the
# limit): one that then finishes in time met a stall of the machine (another process, swapping),
# not a reader that hangs. Any other finding (crash, sanitizer report, leak) always counts.
slow_not_hung() {
  local reader=$1 findings=$2 unit
  unit=$(ls "$findings"/timeout-* 2>/dev/null | head -1)
  [ -n "$unit" ] || return 1
  [ "$(ls "$findings" | wc -l)" -eq 1 ] || return 1
  if "$build/tests/fuzz/fuzz_$reader" -timeout=$((3 * unit_timeout)) -rss_limit_mb=4096 "$unit" \
       >"$build/fuzz_$reader.recheck.log" 2>&1; then
    echo "  rerun of $unit alone: $(grep -o 'Executed .* in [0-9]* ms' "$build/fuzz_$reader.recheck.log")"
    mv "$unit" "$unit.not-reproduced"
    return 0
  fi
  return 1
}

status=0
for reader in platform model strategy job config csv calibration kineto; do
  corpus="$build/corpus/$reader"
  findings="$build/findings/$reader"
  mkdir -p "$corpus" "$findings"
  for f in $(seeds $reader); do cp "$f" "$corpus/" 2>/dev/null || true; done
  echo "fuzz_$reader: ${seconds} s from $(ls "$corpus" | wc -l) inputs"
  start=$(date +%s)
  if ! "$build/tests/fuzz/fuzz_$reader" "$corpus" -max_total_time="$seconds" -seed="$seed" -timeout="$unit_timeout" -rss_limit_mb=4096 \
       -max_len=65536 -artifact_prefix="$findings/" -print_final_stats=1 >"$build/fuzz_$reader.log" 2>&1; then
    if slow_not_hung "$reader" "$findings"; then
      echo "  a unit passed the ${unit_timeout} s limit once but ran in time on its own: the machine stalled, not the reader"
    else
      echo "  FINDING: see $build/fuzz_$reader.log and $findings/"
      tail -30 "$build/fuzz_$reader.log"
      status=1
    fi
  fi
  echo "  $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$build/fuzz_$reader.log" | tr -s ' ') in $(( $(date +%s) - start )) s"
done
exit $status
