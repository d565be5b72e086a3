#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the fuzz targets with clang (libFuzzer + AddressSanitizer) in their own build directory and runs
# each for a bounded time over its checked-in corpus. New inputs go to a temporary directory, so the
# checked-in corpus only changes when someone copies findings in on purpose.
#
#   run-fuzz.sh [--source DIR] [--build DIR] [--seconds N]      (defaults: this checkout, build/fuzz, 30)
set -euo pipefail
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
build_dir="" seconds=30
while (($#)); do
  case $1 in
    --source) source_dir=$2; shift 2 ;;
    --build) build_dir=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    *) echo "run-fuzz: unknown argument $1" >&2; exit 2 ;;
  esac
done
build_dir=${build_dir:-$source_dir/build/fuzz}

for tool in clang clang++ cmake ninja; do
  command -v "$tool" >/dev/null || { echo "run-fuzz: $tool is missing (scripts/install-deps installs it)" >&2; exit 1; }
done
# libFuzzer's runtime comes with libclang-rt-14-dev; without it the link below fails less clearly.
runtime=$(clang++ -print-file-name=libclang_rt.fuzzer-x86_64.a)
[[ -f "$runtime" ]] || { echo "run-fuzz: the libFuzzer runtime is missing (package libclang-rt-14-dev)" >&2; exit 1; }

if [[ ! -f "$build_dir/CMakeCache.txt" ]]; then
  # -O1 with line tables, without NDEBUG: assertions (Result::value() on an error) stay on, and the targets
  # compile faster than with the build type's -O2 -g.
  cmake -S "$source_dir" -B "$build_dir" -G Ninja -DNVME_ADAPT_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link,address -fno-omit-frame-pointer" \
    -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address -fno-omit-frame-pointer" >"$build_dir.configure.log" 2>&1 ||
    { cat "$build_dir.configure.log" >&2; echo "run-fuzz: configuring the clang build failed" >&2; exit 1; }
fi
build_start=$(date +%s)
targets=(config requests uvnvme_control restore_point procfs)
cmake --build "$build_dir" --target "${targets[@]/#/fuzz_}" -j "${JOBS:-$(nproc)}"
echo "run-fuzz: build took $(($(date +%s) - build_start)) s"

failed=0
for target in "${targets[@]}"; do
  work=$(mktemp -d /tmp/nvme-adapt-fuzz-XXXXXX)
  artifacts="$build_dir/artifacts/$target"
  mkdir -p "$artifacts"
  dict=()
  [[ -f "$source_dir/tests/fuzz/$target.dict" ]] && dict=(-dict="$source_dir/tests/fuzz/$target.dict")
  echo "== fuzz_$target for ${seconds}s"
  if ! ASAN_OPTIONS=detect_leaks=1 "$build_dir/tests/fuzz/fuzz_$target" -max_total_time="$seconds" -timeout=10 \
      -rss_limit_mb=2048 -print_final_stats=1 "${dict[@]}" -artifact_prefix="$artifacts/" \
      "$work" "$source_dir/tests/fuzz/corpus/$target" 2>"$work.log"; then
    tail -60 "$work.log" >&2
    echo "run-fuzz: fuzz_$target FAILED; the input that did it is in $artifacts/" >&2
    failed=1
  else
    grep -E "stat::number_of_executed_units|stat::new_units_added|cov:" "$work.log" | tail -3
  fi
  rm -rf "$work" "$work.log"
done
exit $failed
