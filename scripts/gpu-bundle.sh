#!/usr/bin/env bash
# Packs orchid and its unit tests, as built here, with every shared library they load
# (the C library and its loader included) into one archive for scripts/gpu-check.sh on a
# GPU machine that cannot build orchid: the lent GPU machines run a CUDA/Python image
# without the Debian libraries orchid links (oneDNN, CBC, protobuf/onnx, toml++, fmt, MPI)
# and cannot reach a package registry. There the binaries run through the packed loader,
# so the image's own C library does not matter. Left out: the NVIDIA driver (libcuda)
# and NVRTC (the GPU machine's CUDA toolkit has both; gpu-check.sh finds NVRTC there).
#
# Usage: bash scripts/gpu-bundle.sh [BUILD_DIR]   (default build/, built with the tests)
# Writes .gpu-bundle.tar.xz (git-ignored) in the repository root; then, through the `device` tool: run with carry [".gpu-bundle.tar.xz"] and
# command "ORCHID_GPU_CHECK_BUNDLE=.gpu-bundle.tar.xz bash scripts/gpu-check.sh".
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
for b in "$build/orchid" "$build/tests/orchid_unit_tests"; do
  [ -x "$b" ] || { echo "gpu-bundle: $b is missing; build it first" >&2; exit 3; }
done
stage=$(mktemp -d "${TMPDIR:-/tmp}/orchid-gpu-bundle.XXXXXX")
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib"
cp "$build/orchid" "$build/tests/orchid_unit_tests" "$stage/bin/"
# The libraries the dynamic loader resolves for both binaries, and the loader itself.
ldd "$build/orchid" "$build/tests/orchid_unit_tests" |
  awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\/.*ld-linux/ {print $1}' | sort -u |
  while read -r lib; do
    case "$(basename "$lib")" in
      libcuda.so* | libnvrtc*) continue ;;
    esac
    cp -L "$lib" "$stage/lib/"
  done
# The unit tests read models and configs at the source folder they were built in.
pwd > "$stage/source_dir"
tar -C "$stage" -cf - . | xz -T2 -6 > .gpu-bundle.tar.xz.tmp
mv .gpu-bundle.tar.xz.tmp .gpu-bundle.tar.xz
echo "gpu-bundle: .gpu-bundle.tar.xz ($(du -h .gpu-bundle.tar.xz | cut -f1), $(ls "$stage/lib" | wc -l) libraries)"
