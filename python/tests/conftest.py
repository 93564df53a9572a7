import os
import pathlib
import shutil
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
MODELS = REPO / "models"


def model(name: str) -> str:
    return str(MODELS / f"{name}.onnx")


def cli_binary() -> str:
    """The `orchid` command the package is compared with: $ORCHID_CLI, else the build
    folder's, else one on PATH."""
    env = os.environ.get("ORCHID_CLI")
    if env:
        return env
    built = REPO / "build" / "orchid"
    if built.exists():
        return str(built)
    found = shutil.which("orchid")
    if found:
        return found
    pytest.skip("no orchid binary to compare with (set ORCHID_CLI or build the CLI)")


def run_cli(*args, check=True):
    r = subprocess.run([cli_binary(), *map(str, args)], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise AssertionError(f"orchid {' '.join(map(str, args))} failed: {r.stderr}")
    return r
