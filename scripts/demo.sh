#!/usr/bin/env bash
# orchid's main job on the built-in example model, in a few seconds after the build:
#   1. orchestrate it for a GPU (an A100 device model: no GPU needed) and for this CPU:
#      the optimal set of fused kernels next to the usual ways of splitting a network
#      into kernels (one per ONNX operator, greedy fusion, one per primitive);
#   2. run the optimal CPU plan on this machine next to the reference interpreter, with
#      the time of each, and check that both give the same outputs.
# Installs what is missing and builds orchid first. Usage: bash scripts/demo.sh [MODEL.onnx]
set -euo pipefail
cd "$(dirname "$0")/.."
model="${1:-models/resnet50.onnx}"
bash scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target orchid
orchid=./build/orchid
work=build/demo  # the plans and outputs stay here for a closer look
rm -rf "$work" && mkdir -p "$work"

section() { printf '\n== %s\n\n' "$1"; }

section "The model"
"$orchid" inspect "$model" | head -n 10

section "1a. Kernel orchestration for an NVIDIA A100 (analytic device model)"
"$orchid" orchestrate "$model" --device a100 --time-limit 20 --dot "$work/a100_plan.dot"

section "1b. Kernel orchestration for this CPU"
"$orchid" orchestrate "$model" --device cpu --time-limit 20 --json "$work/cpu_plan.json"

section "2a. The optimal CPU plan, run on this CPU (oneDNN + fused loops)"
"$orchid" run "$model" --plan "$work/cpu_plan.json" --seed 0 --repeat 5 \
  --save-outputs "$work/plan_out"

section "2b. The same inputs through the reference interpreter (naive, the ground truth)"
"$orchid" run "$model" --seed 0 --save-outputs "$work/reference_out"

section "2c. Do they agree?"
if command -v python3 >/dev/null; then
  python3 - "$work/plan_out" "$work/reference_out" <<'PY'
# Compares the float32 .npy outputs of both runs with the standard library only.
import ast, os, struct, sys

def read_npy(path):
    with open(path, "rb") as f:
        data = f.read()
    header_len = struct.unpack("<H", data[8:10])[0]
    header = ast.literal_eval(data[10:10 + header_len].decode("latin1"))
    if header["descr"] != "<f4":
        return None
    body = data[10 + header_len:]
    return struct.unpack("<%df" % (len(body) // 4), body)

plan_dir, ref_dir = sys.argv[1], sys.argv[2]
for name in sorted(os.listdir(ref_dir)):
    a, b = read_npy(os.path.join(plan_dir, name)), read_npy(os.path.join(ref_dir, name))
    if a is None or b is None:
        print(f"{name}: not float32, not compared")
        continue
    worst = max(abs(x - y) / (1e-4 + 1e-3 * abs(y)) for x, y in zip(a, b))
    diff = max(abs(x - y) for x, y in zip(a, b))
    verdict = "agree" if worst <= 1 else "DIFFER"
    print(f"{name}: {len(a)} values, max |plan - reference| = {diff:.3g}: {verdict} "
          "(tolerance 1e-4 + 1e-3 |reference|)")
PY
else
  echo "(python3 not found: compare the 'output' lines of 2a and 2b by eye)"
fi
printf '\nPlans and outputs are in %s; the A100 plan as a picture: dot -Tsvg %s/a100_plan.dot\n' \
  "$work" "$work"
