#!/usr/bin/env python3
"""Writes ONNX's node backend test cases (PyPI `onnx`) as model folders.

Each case becomes DIR/<name>/model.onnx plus test_data_set_N/{input,output}_K.pb, the
layout of Debian's libonnx-testdata, so one conformance test reads both suites. Only
cases whose default-domain opset is at least --min-opset are written (Debian's ONNX 1.12
data already covers opsets <= 17). A file DIR/VERSION names the onnx version that made
the data, and DIR/<name>/tolerance.txt holds the case's "rtol atol".

With --archive, the folder is also packed into a reproducible .tar.xz (sorted names, fixed
times and owners); the repository keeps that archive (tests/data/onnx-node-opset18.tar.xz,
about 2 MB) and CMake unpacks it into the build folder for the conformance test.

Usage: /work/venv/bin/python tools/generate_onnx_node_tests.py --out /tmp/onnx-node-opset18 \
           --archive tests/data/onnx-node-opset18.tar.xz
"""
import argparse
import os
import shutil
import sys
import tarfile

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.backend.test.case import node as node_cases


def default_opset(model: onnx.ModelProto) -> int:
    for op in model.opset_import:
        if op.domain in ("", "ai.onnx"):
            return op.version
    return 0


def is_plain_tensor(value_info: onnx.ValueInfoProto) -> bool:
    return value_info.type.HasField("tensor_type")


def write_case(case, out_dir: str) -> bool:
    model = case.model
    values = list(model.graph.input) + list(model.graph.output)
    if not all(is_plain_tensor(v) for v in values):
        return False  # sequence/map/optional values: orchid has tensors only
    os.makedirs(out_dir)
    with open(os.path.join(out_dir, "model.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    with open(os.path.join(out_dir, "tolerance.txt"), "w") as f:
        f.write(f"{case.rtol} {case.atol}\n")
    for i, (inputs, outputs) in enumerate(case.data_sets or []):
        data_dir = os.path.join(out_dir, f"test_data_set_{i}")
        os.makedirs(data_dir)
        for kind, arrays, infos in (("input", inputs, model.graph.input),
                                    ("output", outputs, model.graph.output)):
            for j, array in enumerate(arrays):
                if isinstance(array, onnx.TensorProto):
                    tensor = array  # dtypes numpy has no type for (float8, int4, ...)
                else:
                    tensor = numpy_helper.from_array(np.asarray(array), infos[j].name)
                with open(os.path.join(data_dir, f"{kind}_{j}.pb"), "wb") as f:
                    f.write(tensor.SerializeToString())
    return True


def write_archive(folder: str, archive: str) -> None:
    def normalized(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.mtime = 0
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        return info

    root = os.path.basename(os.path.normpath(folder))
    tmp = archive + ".tmp"
    with tarfile.open(tmp, "w:xz", preset=9) as tar:
        for dirpath, dirnames, filenames in os.walk(folder):
            dirnames.sort()
            for name in sorted(filenames):
                path = os.path.join(dirpath, name)
                arcname = os.path.join(root, os.path.relpath(path, folder))
                tar.add(path, arcname=arcname, filter=normalized)
    os.replace(tmp, archive)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="output folder (replaced)")
    parser.add_argument("--min-opset", type=int, default=18)
    parser.add_argument("--archive", help="also write the folder as this .tar.xz")
    args = parser.parse_args()

    tmp = args.out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    written = skipped = 0
    for case in node_cases.collect_testcases():
        if case.model is None or default_opset(case.model) < args.min_opset:
            continue
        if write_case(case, os.path.join(tmp, case.name)):
            written += 1
        else:
            skipped += 1
    with open(os.path.join(tmp, "VERSION"), "w") as f:
        f.write(f"onnx {onnx.__version__} opset>={args.min_opset} cases {written}\n")
    shutil.rmtree(args.out, ignore_errors=True)
    os.replace(tmp, args.out)  # the folder appears whole or not at all
    if args.archive:
        write_archive(args.out, args.archive)
    print(f"wrote {written} cases to {args.out} ({skipped} with non-tensor values skipped)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
