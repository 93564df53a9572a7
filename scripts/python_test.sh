#!/usr/bin/env bash
# Builds the Python package into a fresh venv (`pip install .`) and runs its tests, which
# compare it with build/orchid. Run after scripts/test.sh (CI: .ci/run). The package's
# build folder (build-python/) is kept, so a second run recompiles only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
venv=build-python/venv
rm -rf "$venv"
python3 -m venv "$venv"
start=$(date +%s)
"$venv/bin/pip" install --quiet ".[test]"
echo "python: pip install . took $(( $(date +%s) - start )) s"
ORCHID_CLI="$PWD/build/orchid" "$venv/bin/python" -m pytest -q python/tests
