"""A small TOML writer for system descriptions given as dicts (tomllib only reads)."""

from __future__ import annotations

import json
import math
from typing import Any, List, Mapping


def _key(k: str) -> str:
    k = str(k)
    if k and all(c.isalnum() or c in "_-" for c in k):
        return k
    return json.dumps(k)


def _value(v: Any, where: str) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError(f"system dict: {where} is {v}, which TOML cannot hold here")
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # a TOML basic string accepts JSON's escapes
    if isinstance(v, Mapping):
        return "{ " + ", ".join(f"{_key(k)} = {_value(x, f'{where}.{k}')}"
                                for k, x in v.items()) + " }"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x, f"{where}[{i}]") for i, x in enumerate(v)) + "]"
    raise ValueError(f"system dict: {where} has type {type(v).__name__}, which TOML cannot hold")


def _is_table_array(v: Any) -> bool:
    return isinstance(v, (list, tuple)) and len(v) > 0 and all(isinstance(x, Mapping) for x in v)


def _table(d: Mapping, prefix: List[str], out: List[str]) -> None:
    for k, v in d.items():
        if not isinstance(v, Mapping) and not _is_table_array(v):
            out.append(f"{_key(k)} = {_value(v, '.'.join(prefix + [str(k)]))}")
    for k, v in d.items():
        path = prefix + [str(k)]
        if isinstance(v, Mapping):
            out.append("")
            out.append("[" + ".".join(_key(p) for p in path) + "]")
            _table(v, path, out)
        elif _is_table_array(v):
            for item in v:
                out.append("")
                out.append("[[" + ".".join(_key(p) for p in path) + "]]")
                _table(item, path, out)


def dumps(d: Mapping) -> str:
    out: List[str] = []
    _table(d, [], out)
    return "\n".join(out) + "\n"
