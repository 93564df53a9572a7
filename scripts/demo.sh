#!/usr/bin/env bash
# The main job on the built-in example model: installs what is missing, builds orchid,
# prints the model summary and runs it. Usage: bash scripts/demo.sh [MODEL.onnx]
set -euo pipefail
cd "$(dirname "$0")/.."
model="${1:-models/resnet50.onnx}"
bash scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target orchid
echo
./build/orchid inspect "$model"
echo
./build/orchid run "$model" --seed 0
