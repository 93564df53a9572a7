"""InferenceSession: numpy in and out, equal to the reference interpreter and to
`orchid run`, and errors with the CLI's messages."""

import json
import pathlib

import numpy as np
import pytest

import orchid
from conftest import model, run_cli

MODELS_DATA = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "models"


def random_feed(sess, seed=0):
    rng = np.random.default_rng(seed)
    feed = {}
    for arg in sess.get_inputs():
        feed[arg.name] = rng.standard_normal(arg.shape).astype(arg.type)
    return feed


@pytest.mark.parametrize("name", ["tiny_mlp", "tiny_conv", "tiny_attention", "tiny_resize_pad"])
def test_plan_executor_matches_reference_interpreter(name):
    sess = orchid.InferenceSession(model(name), device="cpu")
    ref = orchid.InferenceSession(model(name), device="reference")
    feed = random_feed(sess, seed=3)
    got = sess.run(None, feed)
    want = ref.run(None, feed)
    assert len(got) == len(want) == len(sess.get_outputs())
    for g, w, arg in zip(got, want, sess.get_outputs()):
        assert isinstance(g, np.ndarray)
        assert g.dtype == np.dtype(arg.type) and list(g.shape) == arg.shape
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_inputs_outputs_and_plan():
    sess = orchid.InferenceSession(model("tiny_mlp"))
    (x,) = sess.get_inputs()
    assert (x.name, x.shape, x.type) == ("x", [4, 16], "float32")
    (y,) = sess.get_outputs()
    assert (y.name, y.shape, y.type) == ("probs", [4, 10], "float32")
    assert isinstance(sess.plan, orchid.Plan)
    assert "of cpu" in sess.plan.device and sess.plan.kind
    assert orchid.InferenceSession(model("tiny_mlp"), device="reference").plan is None


def test_output_selection_and_threads():
    sess = orchid.InferenceSession(model("tiny_mlp"), threads=1)
    name = sess.get_outputs()[0].name
    feed = random_feed(sess)
    (a,) = sess.run([name], feed)
    (b,) = sess.run(None, feed)
    np.testing.assert_array_equal(a, b)


def test_equals_cli_run(tmp_path):
    # The same input through `orchid run --device cpu` (same orchestration, same plan).
    sess = orchid.InferenceSession(model("tiny_conv"), device="cpu")
    feed = random_feed(sess, seed=7)
    (name, value), = feed.items()
    np.save(tmp_path / "in.npy", value)
    out_dir = tmp_path / "out"
    run_cli("run", model("tiny_conv"), "--device", "cpu", "--input", f"{name}={tmp_path / 'in.npy'}",
            "--save-outputs", out_dir)
    got = sess.run(None, feed)
    for arg, g in zip(sess.get_outputs(), got):
        want = np.load(out_dir / f"{arg.name}.npy")
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6)


def test_bytes_model_and_plan_from_another_device():
    data = open(model("tiny_mlp"), "rb").read()
    plan = orchid.orchestrate(model("tiny_mlp"), device="a100")
    sess = orchid.InferenceSession(data, plan=plan)
    ref = orchid.InferenceSession(data, device="reference")
    feed = random_feed(sess, seed=1)
    np.testing.assert_allclose(sess.run(None, feed)[0], ref.run(None, feed)[0], rtol=1e-4,
                               atol=1e-5)
    assert sess.plan is plan


def test_errors_carry_the_cli_message(tmp_path):
    missing = str(tmp_path / "nope.onnx")
    with pytest.raises(orchid.Error) as e:
        orchid.InferenceSession(missing, device="reference")
    cli = run_cli("inspect", missing, check=False)
    assert cli.returncode == 1
    assert cli.stderr.strip() == f"orchid: error: {e.value}"

    sess = orchid.InferenceSession(model("tiny_mlp"), device="cpu")
    good = random_feed(sess)
    with pytest.raises(orchid.Error, match="has dtype float64, the model expects float32"):
        sess.run(None, {"x": good["x"].astype(np.float64)})
    with pytest.raises(orchid.Error, match=r"has shape 2x16, the model expects 4x16"):
        sess.run(None, {"x": good["x"][:2]})
    with pytest.raises(orchid.Error, match="no input named 'y'"):
        sess.run(None, {**good, "y": good["x"]})
    with pytest.raises(orchid.Error, match="input 'x' is missing"):
        sess.run(None, {})
    with pytest.raises(orchid.Error, match="no output named 'z'"):
        sess.run(["z"], good)
    with pytest.raises(orchid.Error, match="'cpu' or 'reference'"):
        orchid.InferenceSession(model("tiny_mlp"), device="tpu")
    with pytest.raises(orchid.Error):
        orchid.InferenceSession(model("tiny_mlp"), plan=orchid.orchestrate(model("tiny_conv"),
                                                                           device="cpu"))
    assert issubclass(orchid.Error, Exception)
    assert not issubclass(orchid.InternalError, orchid.Error)


def test_default_plan_is_what_orchid_run_chooses(tmp_path, monkeypatch):
    # Both time the same candidates (or reuse the choice cached for this model and
    # machine), so a session runs the plan `orchid run` runs.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    sess = orchid.InferenceSession(model("tiny_conv"))
    (cache,) = (tmp_path / "cache").rglob("plan-choices-cpu.json")
    entries = json.loads(cache.read_text())["entries"]
    assert [e["chosen"] for e in entries.values()] == [sess.plan.kind]
    report = json.loads(run_cli("run", model("tiny_conv"), "--device", "cpu", "--json", "-").stdout)
    assert report["selection"]["chosen"] == sess.plan.kind
    assert report["selection"]["cached"] == str(cache)
    again = orchid.InferenceSession(model("tiny_conv"))
    assert again.plan.kind == sess.plan.kind and again.plan.kernels == sess.plan.kernels


def test_half_float_model_runs_widened_like_the_cli():
    # f16 weights and compute inside, f32 inputs and outputs: plans run it widened to
    # f32, as `orchid run --device cpu` does; the reference interpreter rounds every
    # tensor to f16, hence the tolerance (README: 1e-2 (1 + max|ref|)).
    path = str(MODELS_DATA / "mlp_fp16.onnx")
    sess = orchid.InferenceSession(path, device="cpu")
    ref = orchid.InferenceSession(path, device="reference")
    feed = random_feed(sess, seed=5)
    (got,), (want,) = sess.run(None, feed), ref.run(None, feed)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.max(np.abs(got - want)) <= 1e-2 * (1 + np.max(np.abs(want)))


def test_denormals_are_flushed_unless_kept(tmp_path):
    # Relu(x * 1e-39) is a denormal float: the plan's threads flush it to zero (x86 cores
    # compute denormals through a slow path); keep_denormals=True computes it, as the
    # reference interpreter does.
    path = str(MODELS_DATA / "denormal_mul.onnx")
    plan = tmp_path / "plan.json"
    run_cli("orchestrate", path, "--device", "cpu", "--json", plan)
    feed = {"x": np.ones((1, 64), np.float32)}
    (flushed,) = orchid.InferenceSession(path, plan=str(plan)).run(None, feed)
    (kept,) = orchid.InferenceSession(path, plan=str(plan), keep_denormals=True).run(None, feed)
    (want,) = orchid.InferenceSession(path, device="reference").run(None, feed)
    tiny = np.float32(1e-39)
    assert np.all(want == tiny) and np.all(kept == tiny)
    assert np.all(flushed == 0)
