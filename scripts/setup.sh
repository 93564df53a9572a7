#!/usr/bin/env bash
# Installs the Debian packages orchid needs. Idempotent: when everything is present it
# returns at once without touching apt.
set -euo pipefail
# ocl-icd-opencl-dev: Debian's oneDNN CMake config looks for OpenCL (its GPU runtime),
# and libdnnl-dev does not pull it in; the GPU backend (src/codegen) links it too.
# pocl-opencl-icd: an OpenCL device on the CPU, where the tests run every generated
# GPU kernel; clinfo -l lists OpenCL devices.
# pybind11-dev, python3-dev, python3-venv: the Python package (`pip install .`, python/).
packages=(
  build-essential cmake ninja-build pkg-config
  libprotobuf-dev protobuf-compiler libonnx-dev libonnx-testdata
  coinor-libcbc-dev libdnnl-dev ocl-icd-opencl-dev libopenblas-dev
  nlohmann-json3-dev libcli11-dev libtomlplusplus-dev libfmt-dev libtbb-dev
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  pocl-opencl-icd opencl-c-headers clinfo
  libopenmpi-dev openmpi-bin
  pybind11-dev python3-dev python3-venv
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "setup: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
