"""orchid.map: the same mapping as `orchid map` for a seed, from a path or a dict."""

import json
import pathlib

import pytest

import orchid
from conftest import REPO, run_cli

try:
    import tomllib
except ImportError:  # Python < 3.11
    tomllib = None

SYSTEM = REPO / "configs" / "systems" / "fpga4.toml"


def test_map_equals_cli(tmp_path):
    m = orchid.map("h2h_example", system=SYSTEM, batch=1, seed=3, generations=8)
    run_cli("map", "h2h_example", "--system", SYSTEM, "--seed", 3, "--generations", 8, "--quiet",
            "--json", tmp_path / "m.json")
    cli = json.loads((tmp_path / "m.json").read_text())
    mine = json.loads(m.to_json())
    for doc in (mine, cli):  # wall-clock figures differ between runs
        doc.pop("search_s", None)
    assert m.latency_ms > 0 and m.feasible
    assert mine == cli
    assert set(m.baselines) >= {"H2H"} or len(m.baselines) == 3
    for b in m.baselines.values():
        assert b is None or m.latency_ms <= b * (1 + 1e-9)
    placement = m.placement
    assert len(placement) > 1
    assert {"layer", "group", "design", "strategy", "start_ms", "finish_ms"} <= set(placement[0])
    trace = json.loads(m.to_trace())
    assert any(e["ph"] == "X" and e["cat"] == "compute" for e in trace["traceEvents"])


@pytest.mark.skipif(tomllib is None, reason="tomllib needs Python 3.11")
def test_map_system_dict_equals_file():
    system = tomllib.loads(SYSTEM.read_text())
    a = orchid.map("h2h_example", system=SYSTEM, seed=2, generations=5)
    b = orchid.map("h2h_example", system=system, seed=2, generations=5)
    assert a.latency_ms == b.latency_ms
    assert a.baselines == b.baselines


def test_map_errors():
    with pytest.raises(orchid.Error):
        orchid.map("no_such_workload", system=SYSTEM)
    with pytest.raises(orchid.Error, match="batch"):
        orchid.map("h2h_example", system=SYSTEM, batch=0)
    with pytest.raises(orchid.Error):
        orchid.map("h2h_example", system={"name": "x", "devices": {"fpga": float("nan")}})
