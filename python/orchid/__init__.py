"""orchid from Python: kernel orchestration, CPU execution and multi-accelerator mapping.

    import numpy as np, orchid
    plan = orchid.orchestrate("models/resnet50.onnx", device="a100")
    print(plan.predicted_us, plan.baselines)
    sess = orchid.InferenceSession("models/resnet50.onnx", device="cpu")
    (logits,) = sess.run(None, {"input": np.zeros((1, 3, 224, 224), np.float32)})

The session mirrors ONNX Runtime's InferenceSession. Errors raise orchid.Error (bad input,
with the message the `orchid` command prints) or orchid.InternalError (a bug in orchid).
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any, Dict, Iterable, List, Mapping as MappingType, Optional, Sequence, Union

# How OpenMP threads wait, chosen as the `orchid` command chooses it (_wait_policy.py):
# libgomp reads it once, when it is loaded, so before the extension loads.
from ._wait_policy import wanted_environment as _wanted_wait_environment

os.environ.update(_wanted_wait_environment())

from . import _orchid  # noqa: E402
from ._toml import dumps as _toml_dumps  # noqa: E402

Error = _orchid.Error
UnsupportedError = _orchid.UnsupportedError
InternalError = _orchid.InternalError

__version__ = _orchid.__version__
__all__ = [
    "Error",
    "UnsupportedError",
    "InternalError",
    "InferenceSession",
    "NodeArg",
    "Plan",
    "Mapping",
    "inspect",
    "orchestrate",
    "map",
    "config_dirs",
]

_PACKAGE_CONFIGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "configs")


def config_dirs() -> List[str]:
    """The configs folders searched for devices/, systems/, designs/, workloads/, in
    order: $ORCHID_CONFIG_DIR when set, then the configs shipped in this package."""
    dirs = []
    env = os.environ.get("ORCHID_CONFIG_DIR")
    if env:
        dirs.append(env)
    dirs.append(_PACKAGE_CONFIGS)
    return dirs


PathOrBytes = Union[str, "os.PathLike[str]", bytes]


def _dims(dims: Optional[MappingType[str, int]]) -> Dict[str, int]:
    if dims is None:
        return {}
    if not isinstance(dims, MappingType):
        raise Error(f"dims must be a dict of symbolic dimension -> int, got {type(dims).__name__}")
    return {str(k): int(v) for k, v in dims.items()}


def _shapes(shapes: Optional[MappingType[str, Sequence[int]]]) -> Dict[str, List[int]]:
    if shapes is None:
        return {}
    if not isinstance(shapes, MappingType):
        raise Error(f"shapes must be a dict of input name -> shape, got {type(shapes).__name__}")
    return {str(k): [int(d) for d in v] for k, v in shapes.items()}


class _ModelFile:
    """A model path; bytes are written to a private temporary .onnx file for the session's
    lifetime (the importer reads files)."""

    def __init__(self, path_or_bytes: PathOrBytes):
        self._tmp = None
        if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            fd, path = tempfile.mkstemp(prefix="orchid-model-", suffix=".onnx")
            with os.fdopen(fd, "wb") as f:
                f.write(bytes(path_or_bytes))
            self._tmp = path
            self.path = path
        elif isinstance(path_or_bytes, (str, os.PathLike)):
            self.path = os.fspath(path_or_bytes)
        else:
            raise Error(
                "the model must be a path or the bytes of an .onnx file, got "
                f"{type(path_or_bytes).__name__}"
            )

    def close(self) -> None:
        if self._tmp is not None:
            try:
                os.unlink(self._tmp)
            except OSError:
                pass
            self._tmp = None

    def __del__(self) -> None:
        self.close()


def inspect(path: PathOrBytes, dims: Optional[MappingType[str, int]] = None,
            shapes: Optional[MappingType[str, Sequence[int]]] = None) -> Dict[str, Any]:
    """What the model is after import: the dict `orchid inspect MODEL --json -` prints
    (inputs, outputs, node counts, parameters, FLOPs, op histogram)."""
    model = _ModelFile(path)
    try:
        return json.loads(_orchid.inspect(model.path, _dims(dims), _shapes(shapes)))
    finally:
        model.close()


class Plan:
    """A kernel orchestration plan (docs/plan_format.md): which fused kernels compute the
    model, in execution order, with their predicted costs and the baselines' latencies."""

    def __init__(self, json_text: str, *, model: Optional[str] = None,
                 dims: Optional[MappingType[str, int]] = None,
                 shapes: Optional[MappingType[str, Sequence[int]]] = None,
                 _native: Any = None):
        try:
            self._doc = json.loads(json_text)
        except json.JSONDecodeError as e:
            raise Error(f"plan JSON: {e}") from None
        if not isinstance(self._doc, dict) or self._doc.get("format") != "orchid-plan":
            raise Error('plan JSON: not an orchid plan (expected "format": "orchid-plan")')
        self._json = json_text
        self._native = _native
        self._model = model if model is not None else self._doc.get("model")
        self._dims = _dims(dims)
        self._shapes = _shapes(shapes)

    @classmethod
    def from_json(cls, text_or_path: Union[str, "os.PathLike[str]"], *, model: Optional[str] = None,
                  dims: Optional[MappingType[str, int]] = None,
                  shapes: Optional[MappingType[str, Sequence[int]]] = None) -> "Plan":
        """A plan from JSON text or a .json file (`orchid orchestrate --json`). `model`
        (default: the path recorded in the plan) is needed only by to_dot() and sessions."""
        text = os.fspath(text_or_path)
        if not text.lstrip().startswith("{"):
            try:
                with open(text, encoding="utf-8") as f:
                    text = f.read()
            except OSError as e:
                raise Error(f"plan file '{text_or_path}': {e.strerror}") from None
        return cls(text, model=model, dims=dims, shapes=shapes)

    @property
    def kind(self) -> str:
        return self._doc["kind"]

    @property
    def device(self) -> str:
        return self._doc["device"]

    @property
    def model(self) -> Optional[str]:
        return self._model

    @property
    def kernels(self) -> List[Dict[str, Any]]:
        """Per kernel in execution order: id, primitives (with op types), inputs, sources,
        outputs, cost_us."""
        prims = self._doc["primitives"]
        out = []
        for k in self._doc["kernels"]:
            k = dict(k)
            k["ops"] = [prims[i]["op_type"] for i in k["primitives"]]
            out.append(k)
        return out

    @property
    def predicted_us(self) -> float:
        return float(self._doc["predicted_latency_us"])

    @property
    def baselines(self) -> Dict[str, float]:
        """Latency (us) of operator-level, per-primitive and greedy-fusion plans under the
        same cost model."""
        return {k: float(v) for k, v in self._doc.get("baselines_us", {}).items()}

    @property
    def search(self) -> Dict[str, Any]:
        return dict(self._doc.get("search", {}))

    def to_json(self) -> str:
        return self._json

    def to_dict(self) -> Dict[str, Any]:
        return json.loads(self._json)

    def to_dot(self) -> str:
        """Graphviz DOT of the primitive graph coloured by kernel."""
        if self._native is not None:
            return self._native.to_dot()
        if not self._model:
            raise Error("to_dot: the plan names no model; give Plan.from_json(..., model=PATH)")
        return _orchid.plan_dot(self._model, self._json, self._dims, self._shapes)

    def __repr__(self) -> str:
        return (f"<orchid.Plan {self.kind} for {self.device}: {len(self._doc['kernels'])} kernels, "
                f"{self.predicted_us:.2f} us predicted>")


def orchestrate(path: PathOrBytes, device: str = "a100", time_limit: Optional[float] = None, *,
                max_kernel_size: int = 10, region_size: int = 48,
                softmax_alternative: bool = True,
                dims: Optional[MappingType[str, int]] = None,
                shapes: Optional[MappingType[str, Sequence[int]]] = None) -> Plan:
    """Optimal kernel orchestration for `device` (a name in configs/devices or a .toml
    path), like `orchid orchestrate`. time_limit: seconds for the BLP solver (default 60)."""
    model = _ModelFile(path)
    try:
        native = _orchid.orchestrate(
            model.path, device, 60.0 if time_limit is None else float(time_limit),
            int(max_kernel_size), int(region_size), bool(softmax_alternative), _dims(dims),
            _shapes(shapes), config_dirs())
        model_path = None if model._tmp else model.path
        return Plan(native.to_json(), model=model_path, dims=dims, shapes=shapes,
                    _native=native)
    finally:
        model.close()


class NodeArg:
    """An input or output of a session, as ONNX Runtime describes it."""

    def __init__(self, name: str, shape: Optional[Sequence[int]], type: Optional[str]):
        self.name = name
        self.shape = list(shape) if shape is not None else None
        self.type = type  # numpy dtype name, e.g. "float32"; None when data-dependent

    def __repr__(self) -> str:
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape!r})"


class InferenceSession:
    """Runs a model on the CPU, like onnxruntime.InferenceSession.

    device="cpu": the plan executor (oneDNN + fused loops) runs `plan` (a Plan, plan
    JSON text or a .json path). By default it runs what `orchid run --device cpu` runs:
    the 3 best plans for the CPU cost model and greedy fusion are timed end to end on
    this machine (about 2 s, once: the choice is cached per model, machine and thread
    count beside the profile database) and the fastest is kept; `.plan.kind` says which. device="reference": the reference
    interpreter (any model, including data-dependent shapes). threads: OpenMP threads
    for each run (default: all cores). Denormal floats (below 1.2e-38) are flushed to
    zero on the threads that run the plan while the session exists (x86 cores compute
    them slowly: a convolution took 105 ms instead of 0.65); keep_denormals=True
    computes with them."""

    def __init__(self, path_or_bytes: PathOrBytes, device: str = "cpu",
                 plan: Union[Plan, str, None] = None,
                 dims: Optional[MappingType[str, int]] = None,
                 threads: Optional[int] = None, *,
                 shapes: Optional[MappingType[str, Sequence[int]]] = None,
                 keep_denormals: bool = False):
        if device not in ("cpu", "reference"):
            raise Error(f"device: 'cpu' or 'reference' can run a session, got '{device}'")
        if device == "reference" and plan is not None:
            raise Error("plan: the reference interpreter runs no plan; use device='cpu'")
        if threads is not None and (not isinstance(threads, int) or threads < 1):
            raise Error(f"threads must be a positive int, got {threads!r}")
        self._model = _ModelFile(path_or_bytes)
        if device == "cpu":
            if plan is None:
                pass  # chosen natively, as `orchid run` chooses (see the class doc)
            elif isinstance(plan, (str, os.PathLike)):
                plan = Plan.from_json(plan, model=self._model.path, dims=dims, shapes=shapes)
            elif not isinstance(plan, Plan):
                raise Error(f"plan must be an orchid.Plan, plan JSON or a path, got "
                            f"{type(plan).__name__}")
        engine = "reference" if device == "reference" else "plan" if plan is not None else "fastest"
        self._native = _orchid.Session(
            self._model.path, engine, plan.to_json() if plan is not None else None, _dims(dims),
            _shapes(shapes), threads or 0, config_dirs(), bool(keep_denormals))
        if engine == "fastest":
            plan = Plan(self._native.plan_json(), model=self._model.path, dims=dims, shapes=shapes)
        self._plan = plan
        self._device = device

    @property
    def plan(self) -> Optional[Plan]:
        """The plan the executor runs (None for the reference interpreter)."""
        return self._plan

    @property
    def device(self) -> str:
        return self._device

    def get_inputs(self) -> List[NodeArg]:
        return [NodeArg(*t) for t in self._native.inputs()]

    def get_outputs(self) -> List[NodeArg]:
        return [NodeArg(*t) for t in self._native.outputs()]

    def run(self, output_names: Optional[Iterable[str]], input_feed: MappingType[str, Any]):
        """Outputs named by `output_names` (None: all, in the model's order) as numpy
        arrays, for the inputs in `input_feed` (name -> array of the input's dtype and
        shape). The GIL is released while the model runs."""
        if not isinstance(input_feed, MappingType):
            raise Error(f"input_feed must be a dict of name -> array, got "
                        f"{type(input_feed).__name__}")
        names = None if output_names is None else [str(n) for n in output_names]
        return self._native.run(names, dict(input_feed))

    def __del__(self) -> None:
        model = getattr(self, "_model", None)
        if model is not None:
            model.close()


class Mapping:
    """A multi-accelerator mapping (`orchid map`): groups, designs, placement and
    sharding per layer, its latency and the baselines' (docs/mapping_format.md)."""

    def __init__(self, native: Any):
        self._native = native

    @property
    def latency_ms(self) -> float:
        return self._native.latency_ms

    @property
    def feasible(self) -> bool:
        return self._native.feasible

    @property
    def lower_bound_ms(self) -> float:
        return self._native.lower_bound_ms

    @property
    def baselines(self) -> Dict[str, Optional[float]]:
        """Baseline name -> latency (ms) under the same evaluator; None when the baseline
        cannot map this workload."""
        return {b["name"]: b["latency_ms"] for b in self._native.baselines()}

    @property
    def baseline_notes(self) -> Dict[str, str]:
        return {b["name"]: b["note"] for b in self._native.baselines()}

    @property
    def placement(self) -> List[Dict[str, Any]]:
        """Per layer: layer, group, design, devices (first, last), strategy, start_ms,
        finish_ms."""
        return self._native.placement()

    def to_json(self) -> str:
        return self._native.to_json()

    def to_trace(self) -> str:
        """Chrome trace-event JSON (Perfetto, chrome://tracing): per-device compute and
        transfers over time, like `orchid map --trace`."""
        return self._native.to_trace()

    def to_gantt_svg(self) -> str:
        return self._native.to_gantt_svg()

    def __repr__(self) -> str:
        return f"<orchid.Mapping {self.latency_ms:.4f} ms>"


def map(workload: Union[str, "os.PathLike[str]"], system: Union[str, "os.PathLike[str]",
        MappingType[str, Any]], batch: int = 1, seed: int = 1, *, generations: int = 150,
        population: int = 40, threads: int = 0, time_limit: float = 25.0,
        gpu_roofline: bool = False) -> Mapping:
    """Maps `workload` (an .onnx file, a case file or a name in configs/workloads) onto
    `system` (a system TOML path, or the same content as a dict, read as if it were a
    file in the package's configs/systems/) with the two-level GA, like `orchid map`."""
    if isinstance(system, MappingType):
        system_path = os.path.join(_PACKAGE_CONFIGS, "systems", "python-dict.toml")
        try:
            system_text = _toml_dumps(system)
        except ValueError as e:
            raise Error(str(e)) from None
    elif isinstance(system, (str, os.PathLike)):
        system_path = os.fspath(system)
        system_text = ""
    else:
        raise Error(f"system must be a path or a dict, got {type(system).__name__}")
    native = _orchid.map(os.fspath(workload), system_path, system_text, int(batch), int(seed),
                         int(generations), int(population), int(threads), float(time_limit),
                         bool(gpu_roofline), config_dirs())
    return Mapping(native)
