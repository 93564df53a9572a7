"""orchid.inspect and orchid.orchestrate give what the CLI gives."""

import json

import pytest

import orchid
from conftest import model, run_cli


def test_inspect_equals_cli_json():
    got = orchid.inspect(model("tiny_conv"))
    want = json.loads(run_cli("inspect", model("tiny_conv"), "--json", "-").stdout)
    assert got == want
    assert got["inputs"][0]["dtype"] == "f32"
    assert got["op_histogram"]["Conv"] == 2


def test_inspect_dims_change_shapes():
    a = orchid.inspect(model("tiny_mlp"))
    assert a["inputs"][0]["shape"] == [4, 16]
    with pytest.raises(orchid.Error):
        orchid.inspect(model("tiny_mlp"), dims={"n": -1})


def test_orchestrate_equals_cli_plan(tmp_path):
    plan = orchid.orchestrate(model("tiny_attention"), device="a100")
    run_cli("orchestrate", model("tiny_attention"), "--device", "a100", "--json",
            tmp_path / "p.json")
    cli = json.loads((tmp_path / "p.json").read_text())
    mine = plan.to_dict()
    for key in ("kind", "device", "predicted_latency_us", "kernels", "baselines_us", "arena"):
        assert mine[key] == cli[key], key
    assert plan.predicted_us == pytest.approx(cli["predicted_latency_us"])
    assert len(plan.kernels) == len(cli["kernels"]) and plan.kernels[0]["ops"]
    # The optimum is no worse than any baseline under the same model.
    assert set(plan.baselines) == {"operator-level", "per-primitive", "greedy-fusion"}
    assert all(plan.predicted_us <= v * (1 + 1e-9) for v in plan.baselines.values())


def test_plan_json_round_trip_and_dot(tmp_path):
    plan = orchid.orchestrate(model("tiny_mlp"), device="cpu", time_limit=10)
    (tmp_path / "p.json").write_text(plan.to_json())
    again = orchid.Plan.from_json(tmp_path / "p.json")
    assert again.predicted_us == plan.predicted_us
    assert again.kernels == plan.kernels
    assert plan.to_dot().startswith("digraph")
    assert again.to_dot() == plan.to_dot()
    with pytest.raises(orchid.Error, match="not an orchid plan"):
        orchid.Plan.from_json('{"format": "something else"}')


def test_orchestrate_errors():
    with pytest.raises(orchid.Error, match="nosuchdevice"):
        orchid.orchestrate(model("tiny_mlp"), device="nosuchdevice")
    with pytest.raises(orchid.Error, match="time_limit"):
        orchid.orchestrate(model("tiny_mlp"), time_limit=0)
