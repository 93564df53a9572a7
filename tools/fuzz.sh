#!/usr/bin/env bash
# Runs one libFuzzer target under ASan+UBSan for a given time:
#   bash tools/fuzz.sh TARGET SECONDS      TARGET: onnx_import | npy | config | plan | all
# Builds build-fuzz/ (clang, -DORCHID_FUZZ=ON) if needed, seeds a working corpus from the
# zoo, configs/ and the committed fuzz/corpus/TARGET (regression inputs included), runs one
# process (nice'd: the machine is shared) and prints libFuzzer's execution count. A crash
# leaves its input in build-fuzz/artifacts/TARGET/ and the script exits non-zero: turn
# the input into a regression test (docs/security.md) and add it to fuzz/corpus/TARGET/.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
target="${1:?usage: tools/fuzz.sh TARGET SECONDS}"
seconds="${2:?usage: tools/fuzz.sh TARGET SECONDS}"
build="${ORCHID_FUZZ_BUILD:-$root/build-fuzz}"
jobs="${ORCHID_FUZZ_BUILD_JOBS:-2}"

if [[ "$target" == all ]]; then
  for t in onnx_import npy config plan; do bash "$0" "$t" "$seconds"; done
  exit 0
fi
case "$target" in onnx_import | npy | config | plan) ;; *)
  echo "tools/fuzz.sh: unknown target '$target' (onnx_import, npy, config, plan, all)" >&2
  exit 2
  ;;
esac

if [[ ! -f "$build/build.ninja" ]]; then
  CXX="${CXX:-clang++}" cmake -S "$root" -B "$build" -G Ninja -DORCHID_FUZZ=ON \
    -DORCHID_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    ${CMAKE_CXX_COMPILER_LAUNCHER:+-DCMAKE_CXX_COMPILER_LAUNCHER=$CMAKE_CXX_COMPILER_LAUNCHER} >/dev/null
fi
# ORCHID_FUZZ_SKIP_BUILD=1: run the binaries as built (e.g. while the sources change).
[[ -n "${ORCHID_FUZZ_SKIP_BUILD:-}" ]] || nice -n 10 ninja -C "$build" -j"$jobs" "fuzz_$target" >/dev/null

corpus="$build/corpus/$target"
artifacts="$build/artifacts/$target"
mkdir -p "$corpus" "$artifacts"
seed() { [[ -f "$1" ]] && cp -n "$1" "$corpus/$2" 2>/dev/null || true; }
case "$target" in
  onnx_import)
    for f in "$root"/models/tiny_*.onnx; do seed "$f" "zoo_$(basename "$f")"; done
    # ONNX's own node tests: ~1,000 small single-op models (Debian libonnx-testdata).
    for d in /usr/share/libonnx-testdata/data/node/*/; do
      seed "$d/model.onnx" "node_$(basename "$d").onnx"
    done
    ;;
  npy)
    for f in $(find "$root/tests/data" -name '*.npy' -size -64k); do
      seed "$f" "$(echo "${f#"$root"/}" | tr / _)"
    done
    ;;
  config)
    # First byte: 0 system, 1 design library, 2 device, 3 workload (config_fuzzer.cpp).
    for f in "$root"/configs/systems/*.toml; do printf '\0' | cat - "$f" >"$corpus/system_$(basename "$f")"; done
    for f in "$root"/configs/designs/*.toml; do printf '\1' | cat - "$f" >"$corpus/design_$(basename "$f")"; done
    for f in "$root"/configs/devices/*.toml; do printf '\2' | cat - "$f" >"$corpus/device_$(basename "$f")"; done
    for f in "$root"/configs/workloads/*.toml; do
      [[ $(stat -c %s "$f") -lt 65536 ]] && printf '\3' | cat - "$f" >"$corpus/workload_$(basename "$f")"
    done
    ;;
  plan) ;;  # plans of models/tiny_mlp.onnx, committed in fuzz/corpus/plan
esac
if [[ -d "$root/fuzz/corpus/$target" ]]; then cp -n "$root/fuzz/corpus/$target"/* "$corpus/" 2>/dev/null || true; fi

log="$build/fuzz_$target.log"
echo "fuzz_$target: ${seconds} s, corpus $(ls "$corpus" | wc -l) files, log $log"
status=0
nice -n 15 "$build/fuzz/fuzz_$target" "$corpus" -max_total_time="$seconds" -timeout=25 \
  -rss_limit_mb=2048 -malloc_limit_mb=1024 -max_len=65536 -print_final_stats=1 \
  -artifact_prefix="$artifacts/" >"$log" 2>&1 || status=$?
grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb)|Done [0-9]+ runs" "$log" || true
if [[ $status -ne 0 ]]; then
  echo "fuzz_$target: FAILED (exit $status); artifacts in $artifacts" >&2
  grep -E "ERROR: |runtime error|SUMMARY" "$log" | head -5 >&2 || true
  exit 1
fi
echo "fuzz_$target: clean"
