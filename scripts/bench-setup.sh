#!/usr/bin/env bash
# The benchmarks' Python environment: a venv with onnxruntime, numpy, PyTorch, torchvision
# (CPU wheels) and transformers, so that `.venv/bin/python bench/executor_benchmark.py` (README)
# works on a fresh machine. Idempotent: an existing venv is kept and only what it lacks is
# installed.
#
#   bash scripts/bench-setup.sh              # .venv in the repository root
#   VENV=/work/venv bash scripts/bench-setup.sh --no-torch
#
# Needs python3-venv (scripts/setup.sh) and network access to PyPI (and to PyTorch's CPU
# wheel index unless --no-torch). The core build never uses this venv.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${VENV:-$root/.venv}"
torch=1
for arg in "$@"; do
  case "$arg" in
    --no-torch) torch=0 ;;
    -h | --help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "bench-setup.sh: unknown option '$arg' (--no-torch, --help)" >&2; exit 1 ;;
  esac
done

if [[ ! -x "$venv/bin/python" ]]; then
  echo "creating $venv"
  python3 -m venv "$venv"
fi
py="$venv/bin/python"

has() { "$py" -c "import $1" >/dev/null 2>&1; }

missing=()
for module in numpy onnxruntime onnx; do
  has "$module" || missing+=("$module")
done
if ((${#missing[@]})); then
  echo "installing ${missing[*]} into $venv"
  "$py" -m pip install --quiet --upgrade pip
  "$py" -m pip install --quiet "${missing[@]}"
fi
if ((torch)) && ! has torch; then
  echo "installing torch (CPU wheels) into $venv"
  # PyTorch's own CPU index; where only PyPI is reachable, PyPI's wheel (with CUDA
  # libraries, larger, the same CPU kernels).
  "$py" -m pip install --quiet torch --index-url https://download.pytorch.org/whl/cpu ||
    { echo "the CPU wheel index is unreachable: installing torch from PyPI"; "$py" -m pip install --quiet torch; }
fi
# torchvision and onnxscript: tools/check_third_party.py exports the benchmark's third-party
# models with them (onnxscript is what PyTorch's default exporter runs on).
if ((torch)) && ! has torchvision; then
  echo "installing torchvision into $venv"
  "$py" -m pip install --quiet torchvision --index-url https://download.pytorch.org/whl/cpu ||
    "$py" -m pip install --quiet torchvision
fi
if ((torch)) && ! has onnxscript; then
  echo "installing onnxscript into $venv"
  "$py" -m pip install --quiet onnxscript
fi
# transformers: the Hugging Face encoders and GPT-2 that tools/check_third_party.py builds from
# their configurations (random weights, nothing downloaded from the Hub).
if ((torch)) && ! has transformers; then
  echo "installing transformers into $venv"
  "$py" -m pip install --quiet transformers
fi
"$py" - <<'PY'
import importlib
for name in ("numpy", "onnxruntime", "onnx", "torch", "torchvision", "onnxscript", "transformers"):
    try:
        m = importlib.import_module(name)
        print(f"{name:12s} {getattr(m, '__version__', '?')}")
    except ImportError:
        print(f"{name:12s} absent (benchmarks skip its column)")
PY
# bench/executor_benchmark.py's peak-RSS columns read /usr/bin/time (Debian package `time`),
# its competing-load columns start busy processes with taskset (util-linux).
[[ -x /usr/bin/time ]] || echo "note: /usr/bin/time missing (apt-get install time): peak RSS columns will be NaN"
command -v taskset >/dev/null || echo "note: taskset missing (util-linux): run the benchmark with --load 0"
echo "ready: $py bench/executor_benchmark.py --help"
