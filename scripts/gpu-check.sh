#!/usr/bin/env bash
# The GPU check, for a machine with an NVIDIA GPU (and the CUDA toolkit for NVRTC):
#   1. builds orchid and its unit tests (Release, build-gpu/);
#   1b. runs the GPU backend's unit tests with ORCHID_REQUIRE_GPU=1: every kernel family's
#      edge-shape graphs (TopK/Scatter included), fused and per node, on the GPU as well
#      as on OpenCL, NVRTC/nvcc compiles, the cuBLASLt/cuDNN mapping (row orchid-unit);
#   2. for every static zoo model, runs its optimal, greedy-fusion and operator-level plans
#      as generated CUDA (`orchid run --device cuda`: NVRTC, one arena, CUDA graph), and
#      the optimal plan once more with its linear stages on cuBLASLt/cuDNN
#      (`--linear-backend vendor`, column orchid-optimal-vendor), each timed as the median
#      of 100 graph replays measured with CUDA events after a warm-up, and checks every
#      output against the reference interpreter (|a - b| <= 1e-4 + 1e-3 |b|, the
#      tolerance of the OpenCL tests);
#   2b. times tiny_mlp's candidate kernels on the GPU once (`--device cuda --profile`,
#      the CUDA kernel timer behind the profile database);
#   3. where installed (and time is left: orchid's runs come first), times PyTorch eager,
#      torch.compile and ONNX Runtime's CUDA provider on the same models
#      (bench/gpu_peers.py);
#   4. prints one table and writes it to bench/results/gpu_check.csv and gpu_check.md,
#      with the geometric means the issue's targets name (optimal vs greedy-fusion,
#      optimal vs torch.compile).
# Stays within ORCHID_GPU_CHECK_BUDGET_S seconds (default 480, the build included): what
# does not fit is recorded as skipped. ORCHID_GPU_CHECK_UNIT=0 leaves out step 1b (and the
# unit tests' build); ORCHID_GPU_CHECK_BUILD=DIR builds in DIR instead of build-gpu/
# (a folder already built there is only brought up to date). Where $OUT is set (the `device` tool's run), the table, the CSV and
# every log are copied there. ORCHID_GPU_CHECK_BUNDLE=FILE skips the build and runs the
# binaries packed by scripts/gpu-bundle.sh (for a GPU machine without orchid's Debian
# libraries). Usage: bash scripts/gpu-check.sh [model ...]
# Exit status: 0 when every orchid run matched the reference; 1 when one failed or was
# wrong (listed as FAILED at the end); 4 when all that ran matched but the budget cut
# some runs (INCOMPLETE); 2 without a GPU; 3 when the build or a prerequisite is missing.
set -uo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
budget=${ORCHID_GPU_CHECK_BUDGET_S:-480}
python=${PYTHON:-python3}
[ -x /work/venv/bin/python ] && python=${PYTHON:-/work/venv/bin/python}
left() { echo $((budget - ($(date +%s) - start))); }

if ! command -v nvidia-smi > /dev/null || ! nvidia-smi -L > /dev/null 2>&1; then
  echo "gpu-check: no NVIDIA GPU here (nvidia-smi -L fails); nothing to check" >&2
  exit 2
fi
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "gpu-check: $gpu"
if ! "$python" -c 'import numpy' > /dev/null 2>&1; then
  echo "gpu-check: FAILED: $python has no numpy (needed to compare outputs)" >&2
  exit 3
fi

# Logs and outputs of this run only (several checks may share a machine).
work=$(mktemp -d "${TMPDIR:-/tmp}/orchid-gpu-check.XXXXXX")
rows="$work/rows.jsonl"
: > "$rows"
# Copies what this run wrote to $OUT (the device tool brings that folder back).
export_results() {
  [ -n "${OUT:-}" ] && [ -d "$OUT" ] || return 0
  # The logs as one archive, without the outputs and the unpacked bundle (hundreds of MB):
  # the device tool brings back a few files of at most 16 MB.
  tar -C "$work" --exclude=bundle --exclude='*.npy' -czf "$OUT/gpu-check-logs.tgz" . 2>/dev/null
  cp bench/results/gpu_check.* "$OUT/" 2>/dev/null
  return 0
}
trap export_results EXIT

unit=${ORCHID_GPU_CHECK_UNIT:-1}
bundle=${ORCHID_GPU_CHECK_BUNDLE:-}
if [ -n "$bundle" ]; then
  # Binaries built elsewhere (scripts/gpu-bundle.sh), run through their packed loader.
  [ -f "$bundle" ] || { echo "gpu-check: FAILED: no bundle $bundle" >&2; exit 3; }
  packed="$work/bundle"
  mkdir -p "$packed" && tar -C "$packed" -xJf "$bundle" ||
    { echo "gpu-check: FAILED: cannot unpack $bundle" >&2; exit 3; }
  # The unit tests read models/ and configs/ where they were built: point that at here.
  src=$(cat "$packed/source_dir")
  if [ ! "$src" -ef "$PWD" ]; then
    if [ -e "$src" ] || ! { mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; }; then
      echo "gpu-check: FAILED: cannot make $src this checkout (the unit tests need it)" >&2
      exit 3
    fi
  fi
  # NVRTC and cuBLASLt/cuDNN (all dlopen'ed, NVRTC needed) from this machine's toolkit or wheels.
  libdirs="$packed/lib"
  roots=(/usr/local/cuda*/lib* /usr/lib/x86_64-linux-gnu
         $("$python" -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null))
  for name in libnvrtc.so.13 libcublasLt.so.13 libcudnn.so.9; do
    found=$(find "${roots[@]}" -name "$name*" 2>/dev/null | head -1)
    [ -n "$found" ] && libdirs="$libdirs:$(dirname "$found")"
  done
  [ -n "${LD_LIBRARY_PATH:-}" ] && libdirs="$libdirs:$LD_LIBRARY_PATH"
  build=build  # where the unit tests call orchid
  mkdir -p "$build/tests"
  for b in orchid tests/orchid_unit_tests; do
    printf '#!/bin/sh\nexport OMP_WAIT_POLICY=PASSIVE ORCHID_CONFIG_DIR="%s"\nexec "%s" --library-path "%s" "%s" "$@"\n' \
      "$PWD/configs" "$packed/lib/ld-linux-x86-64.so.2" "$libdirs" "$packed/bin/$(basename "$b")" \
      > "$build/$b"
    chmod +x "$build/$b"
  done
  "$build/orchid" --version > "$work/bundle.log" 2>&1 ||
    { cat "$work/bundle.log" >&2; echo "gpu-check: FAILED: the bundled orchid does not start" >&2; exit 3; }
  orchid=$build/orchid
  echo "gpu-check: using the binaries of $bundle ($("$orchid" --version))"
else
  targets=(orchid)
  [ "$unit" = 1 ] && targets+=(orchid_unit_tests)
  launcher=()
  command -v ccache > /dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  tests_flag=OFF
  [ "$unit" = 1 ] && tests_flag=ON
  build=${ORCHID_GPU_CHECK_BUILD:-build-gpu}
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DORCHID_BUILD_TESTS=$tests_flag \
    "${launcher[@]}" > "$work/cmake.log" 2>&1 ||
    { tail -20 "$work/cmake.log"; echo "gpu-check: FAILED: cmake (a missing library? see above)" >&2; exit 3; }
  if ! grep -q "CUDA backend with NVRTC" "$work/cmake.log"; then
    grep -i cuda "$work/cmake.log" >&2
    echo "gpu-check: FAILED: the CUDA toolkit was not found (orchid would build without --device cuda)" >&2
    exit 3
fi
ninja -C "$build" "${targets[@]}" > "$work/build.log" 2>&1 ||
  { tail -30 "$work/build.log"; echo "gpu-check: FAILED: build" >&2; exit 3; }
orchid=$build/orchid
echo "gpu-check: built ${targets[*]} in $(( $(date +%s) - start )) s"
fi
if [ $# -gt 0 ]; then
  models=("$@")
else
  # Small models first, so a tight budget still covers most of the zoo.
  models=(tiny_mlp tiny_conv tiny_attention tiny_resize_pad tiny_shape_plumbing mobilenet_v2
          mobilenet_v2_opset11 resnet50 candy yolox_nano segformer_b0 vit_b_16 bert_base)
fi

record() {  # model engine median_ms ok note
  printf '{"model":"%s","engine":"%s","median_ms":%s,"ok":%s,"note":"%s"}\n' \
    "$1" "$2" "${3:-null}" "${4:-null}" "${5//\"/\'}" >> "$rows"
}

# The GPU backend's unit tests, on the GPU (a missing GPU fails them instead of skipping).
if [ "$unit" = 1 ]; then
  log="$work/unit.log"
  if [ "$(left)" -lt 60 ]; then
    record unit orchid-unit null null "skipped: time budget"
  else
    ORCHID_REQUIRE_GPU=1 timeout $(( $(left) > 150 ? 150 : $(left) - 30 )) \
      "$build/tests/orchid_unit_tests" \
      --gtest_filter='Codegen*:VendorLinear*:Nvrtc*:Zoo/NvrtcZoo.*:NvccCodegen*:Zoo/OpenCLZoo.*:-*Long*' \
      > "$log" 2>&1
    rc=$?
    passed=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log")
    failed=$(grep -c '^\[  FAILED  \] [A-Za-z]' "$log")
    if [ $rc -eq 0 ]; then
      record unit orchid-unit null true "${passed:-0} tests passed on the GPU"
    elif [ $rc -eq 124 ]; then
      record unit orchid-unit null null "cut by the time budget after ${passed:-some} tests"
    else
      record unit orchid-unit null false "$failed failed: $(grep -m3 '^\[  FAILED  \] [A-Za-z]' "$log" | cut -c14- | sed 's/ (.*//' | tr '\n' ' ')"
    fi
  fi
fi

for m in "${models[@]}"; do
  onnx=models/$m.onnx
  if [ "$(left)" -lt 20 ]; then
    record "$m" orchid-optimal null null "skipped: time budget"
    continue
  fi
  mkdir -p "$work/$m"
  # The reference: interpreter outputs for the same seed-0 inputs `run --device` uses.
  timeout $(( $(left) > 120 ? 120 : $(left) )) "$orchid" run "$onnx" \
    --save-outputs "$work/$m/ref" > "$work/$m/ref.log" 2>&1
  rc=$?
  if [ $rc -eq 124 ]; then
    record "$m" orchid-optimal null null "skipped: the reference interpreter ran out of time"
    continue
  elif [ $rc -ne 0 ]; then
    record "$m" orchid-optimal null false "reference: $(tail -1 "$work/$m/ref.log")"
    continue
  fi
  for column in optimal greedy-fusion operator-level optimal-vendor; do
    kind=${column%-vendor}
    backend=generated
    [ "$column" != "$kind" ] && backend=vendor
    if [ "$(left)" -lt 15 ]; then
      record "$m" "orchid-$column" null null "skipped: time budget"
      continue
    fi
    log="$work/$m/$column.log"
    timeout $(( $(left) > 150 ? 150 : $(left) )) "$orchid" run "$onnx" --device cuda \
        --plan-kind "$kind" --linear-backend "$backend" --repeat 100 \
        --save-outputs "$work/$m/$column" --json "$work/$m/$column.json" > "$log" 2>&1
    rc=$?
    if [ $rc -eq 124 ]; then
      # Cut by the time limit: not a wrong answer, and not checked either.
      record "$m" "orchid-$column" null null "cut by the time budget"
    elif [ $rc -eq 0 ]; then
      # The JSON's median keeps microseconds (the printed line rounds to 0.01 ms).
      ms=$("$python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["time_ms"]["median"])' \
        "$work/$m/$column.json" 2>/dev/null || sed -n 's/^time *\([0-9.]*\) ms median.*/\1/p' "$log")
      ok=$("$python" - "$work/$m/ref" "$work/$m/$column" <<'PY'
import sys, pathlib
import numpy as np
ref, got = map(pathlib.Path, sys.argv[1:3])
refs = sorted(ref.glob("*.npy"))
ok = bool(refs)
for r in refs:
    if not (got / r.name).exists():
        ok = False
        continue
    a, b = np.load(got / r.name).astype(np.float64), np.load(r).astype(np.float64)
    ok = ok and a.shape == b.shape and bool(np.all(np.abs(a - b) <= 1e-4 + 1e-3 * np.abs(b)))
print("true" if ok else "false")
PY
)
      # The vendor column names how many linear stages the libraries took.
      note=$(grep -o 'linear backend vendor: [^;]*' "$log" | head -1)
      record "$m" "orchid-$column" "${ms:-null}" "${ok:-false}" "$note"
    else
      record "$m" "orchid-$column" null false "$(grep -m1 'error' "$log" || tail -1 "$log")"
    fi
  done
done

# Measured GPU costs: candidate kernels of one small model timed on the GPU with CUDA
# events into a fresh profile database, and the plan orchestrated with them.
if [ "$(left)" -ge 30 ]; then
  log="$work/profile.log"
  if timeout $(( $(left) > 120 ? 120 : $(left) )) "$orchid" run models/tiny_mlp.onnx \
      --device cuda --profile --profile-db "$work/profile-db.json" > "$log" 2>&1 &&
      grep -q "timed" "$log"; then
    record tiny_mlp orchid-profile null true "$(grep -m1 '^profile .*distinct kernels' "$log")"
  else
    record tiny_mlp orchid-profile null false "$(grep -m1 'error' "$log" || tail -1 "$log")"
  fi
else
  record tiny_mlp orchid-profile null null "skipped: time budget"
fi

# The peers last: orchid's correctness comes first when the budget is short.
for m in "${models[@]}"; do
  [ -d "$work/$m/ref" ] || continue
  onnx=models/$m.onnx
  "$orchid" materialize "$onnx" "$work/$m/full.onnx" > /dev/null 2>&1
  for engine in eager compile ort; do
    if [ "$(left)" -lt 15 ]; then record "$m" "$engine" null null "skipped: time budget"; continue; fi
    line=$(timeout $(( $(left) > 120 ? 120 : $(left) )) "$python" bench/gpu_peers.py --model "$m" \
      --engine "$engine" --repeat 100 --onnx "$work/$m/full.onnx" 2>/dev/null | tail -1)
    ms=$(echo "$line" | "$python" -c 'import json,sys
try: r=json.loads(sys.stdin.read()); print(r["median_ms"] if r["median_ms"] is not None else "null", "|", r["error"])
except Exception: print("null | failed or timed out")')
    record "$m" "$engine" "${ms%% |*}" null "${ms#*| }"
  done
done

mkdir -p bench/results
"$python" - "$rows" "$gpu" <<'PY'
import json, math, sys, datetime, os
rows = [json.loads(l) for l in open(sys.argv[1])]
gpu = sys.argv[2]
engines = ["orchid-optimal", "orchid-greedy-fusion", "orchid-operator-level",
           "orchid-optimal-vendor", "eager", "compile", "ort"]
models = list(dict.fromkeys(r["model"] for r in rows if r["engine"] != "orchid-unit"))
cell = {(r["model"], r["engine"]): r for r in rows}
def fmt(r):
    if r is None: return "-"
    if r["median_ms"] is None: return "n/a"
    s = f'{r["median_ms"]:.4g}'
    if r["ok"] is False: s += " WRONG"
    return s
header = ["model"] + engines
lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
csv = [",".join(header + ["notes"])]
for m in models:
    vals = [fmt(cell.get((m, e))) for e in engines]
    notes = "; ".join(f'{e}: {cell[(m, e)]["note"]}' for e in engines if (m, e) in cell and cell[(m, e)]["note"])
    lines.append("| " + " | ".join([m] + vals) + " |")
    csv.append(",".join([m] + vals + ['"' + notes.replace('"', "'") + '"']))
def geomean(a, b):
    rs = [cell[(m, b)]["median_ms"] / cell[(m, a)]["median_ms"] for m in models
          if cell.get((m, a), {}).get("median_ms") and cell.get((m, b), {}).get("median_ms")]
    return (math.exp(sum(map(math.log, rs)) / len(rs)), len(rs)) if rs else (None, 0)
plans = [r for r in rows if r["engine"].startswith("orchid-") and r["engine"] not in ("orchid-profile", "orchid-unit")]
correct = sum(1 for r in plans if r["ok"] is True)
total = len(plans)
summary = [f"GPU: {gpu}; {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
           f"orchid plans matching the reference: {correct}/{total}"]
for r in rows:
    if r["engine"] == "orchid-unit":
        summary.append("GPU backend unit tests on the GPU: "
                       + ("ok" if r["ok"] else "FAILED" if r["ok"] is False else "not run")
                       + (f' ({r["note"]})' if r["note"] else ""))
    if r["engine"] == "orchid-profile":
        summary.append(f'--device cuda --profile on {r["model"]}: '
                       + ("ok" if r["ok"] else "FAILED" if r["ok"] is False else "not run")
                       + (f' ({r["note"]})' if r["note"] else ""))
for a, b, target in [("orchid-optimal", "orchid-greedy-fusion", 1.3), ("orchid-optimal", "compile", 1.2),
                     ("orchid-optimal", "eager", None), ("orchid-optimal", "ort", None),
                     ("orchid-optimal-vendor", "orchid-optimal", None)]:
    g, n = geomean(a, b)
    if g is not None:
        summary.append(f"geomean speedup of {a} over {b}: {g:.3f}x over {n} models"
                       + (f" (target >= {target}x)" if target else ""))
text = "\n".join(["# GPU check (scripts/gpu-check.sh)", "", *summary, "",
                  "Median ms of 100 runs (orchid: CUDA graph replays timed with CUDA events).", "", *lines, ""])
print(text)
open("bench/results/gpu_check.md.tmp", "w").write(text)
os.replace("bench/results/gpu_check.md.tmp", "bench/results/gpu_check.md")
open("bench/results/gpu_check.csv.tmp", "w").write("\n".join(csv) + "\n")
os.replace("bench/results/gpu_check.csv.tmp", "bench/results/gpu_check.csv")
PY
echo "gpu-check: $(( $(date +%s) - start )) s; rows in $rows"
# Loud verdict: any orchid run that failed or disagreed with the reference fails the check.
"$python" - "$rows" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
mine = [r for r in rows if r["engine"].startswith("orchid-")]
bad = [r for r in mine if r["ok"] is False]
cut = [r for r in mine if r["ok"] is None]
for r in bad:
    print(f'gpu-check: FAILED: {r["model"]} {r["engine"]}: {r["note"] or "outputs differ from the reference"}',
          file=sys.stderr)
for r in cut:
    print(f'gpu-check: INCOMPLETE: {r["model"]} {r["engine"]}: {r["note"]}', file=sys.stderr)
if bad:
    sys.exit(1)
if cut:
    sys.exit(4)
print(f"gpu-check: PASSED: {len(mine)} orchid runs matched the reference")
PY
