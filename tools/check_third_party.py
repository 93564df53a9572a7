#!/usr/bin/env python3
"""Exports common third-party models (torchvision classification and detection, Hugging
Face encoders) with random weights and runs `orchid inspect` and `orchid run` on each,
recording whether orchid accepts it and, if not, the one-line reason it gives.

Usage: .venv/bin/python tools/check_third_party.py [--orchid build/orchid] [--out FILE.md]
                                                    [--only PREFIX[,PREFIX...]] [--ort]
                                                    [--variants opset17,current,fp16,qdq]

Each model is exported in the variants asked for (rows `name@variant`; opset17 rows keep
the bare name):
  opset17  the TorchScript exporter at opset 17 (what orchid's importer read first);
  current  the installed PyTorch's defaults, `torch.onnx.export(model, args, f)`: the
           dynamo exporter at its default opset (export failures are reported as such);
  fp16     the opset-17 export converted by onnxconverter-common (float16 weights and
           compute, float32 inputs and outputs), for the models in FP16_QDQ_MODELS;
  qdq      the opset-17 export quantized by onnxruntime.quantization.quantize_static
           (QDQ format, per-channel int8 weights, uint8 activations, 4 random calibration
           samples), for the models in FP16_QDQ_MODELS.
The `recurrent` family holds small torch LSTM/GRU/RNN models (batch first, two layers,
uni- and bidirectional).

--only keeps the models whose name starts with one of the prefixes (e.g. transformers);
--ort also runs ONNX Runtime on the same inputs and reports orchid's largest deviation
(tolerance |a - b| <= 1e-4 + 1e-3 |b|, as for the zoo; fp16 variants 1e-2 + 1e-2 |b|;
qdq variants 3 quantization steps of the output's DequantizeLinear, else 5 % of the
output's range, or ONNX Runtime's own disagreement between its two modes where that is
larger, and the same argmax per row for 2-D outputs, from ONNX Runtime run as the graph
defines it (optimisations off) or optimised (fused integer kernels); both distances are
reported).
"""
import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def torchvision_models():
    import torchvision.models as tvm
    import torchvision.models.detection as det
    classification = ["efficientnet_b0", "densenet121", "squeezenet1_1", "shufflenet_v2_x1_0",
                      "mobilenet_v3_large", "regnet_y_400mf", "convnext_tiny", "swin_t",
                      "resnext50_32x4d", "googlenet", "inception_v3", "mnasnet1_0", "alexnet",
                      "vgg11", "wide_resnet50_2"]
    for name in classification:
        kwargs = {"aux_logits": False, "init_weights": True} if name in ("googlenet", "inception_v3") else {}
        size = 299 if name == "inception_v3" else 224
        yield f"torchvision.{name}", lambda n=name, k=kwargs: getattr(tvm, n)(weights=None, **k), \
            (torch.randn(1, 3, size, size),), ["input"]
    for name in ["fasterrcnn_mobilenet_v3_large_320_fpn", "ssdlite320_mobilenet_v3_large",
                 "retinanet_resnet50_fpn", "fcos_resnet50_fpn", "maskrcnn_resnet50_fpn",
                 "keypointrcnn_resnet50_fpn"]:
        yield f"torchvision.detection.{name}", \
            lambda n=name: getattr(det, n)(weights=None, weights_backbone=None), \
            ([torch.rand(3, 320, 320)],), ["images"]


class Encoder(torch.nn.Module):
    """(input_ids, attention_mask) -> last hidden state, by keyword: newer transformers
    models take other arguments in second place, and no cache."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        kwargs = {"use_cache": False} if "use_cache" in self.model.forward.__code__.co_varnames else {}
        return self.model(input_ids=input_ids, attention_mask=attention_mask, **kwargs)[0]


class Recurrent(torch.nn.Module):
    def __init__(self, kind, bidirectional):
        super().__init__()
        cls = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU, "rnn": torch.nn.RNN}[kind]
        self.rnn = cls(32, 64, num_layers=2, bidirectional=bidirectional, batch_first=True)
        self.fc = torch.nn.Linear(64 * (2 if bidirectional else 1), 10)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.fc(y[:, -1])


def recurrent_models():
    for kind in ("lstm", "gru", "rnn"):
        for bi in (False, True):
            yield f"recurrent.{kind}{'_bidirectional' if bi else ''}", \
                lambda k=kind, b=bi: Recurrent(k, b), (torch.randn(2, 12, 32),), ["x"]


# fp16 and qdq variants: a few models (each costs an export, a conversion and two runs).
FP16_QDQ_MODELS = ["torchvision.squeezenet1_1", "torchvision.mobilenet_v3_large",
                   "torchvision.efficientnet_b0", "transformers.distilbert", "recurrent.lstm"]


def export(model, example, path, input_names, variant):
    """Writes `path` for one variant; raises on export/conversion failure."""
    if variant == "current":
        torch.onnx.export(model, example, path, input_names=input_names)
        return
    torch.onnx.export(model, example, path, opset_version=17, input_names=input_names,
                      dynamo=False)
    if variant == "fp16":
        import onnx
        from onnxconverter_common import float16
        m = float16.convert_float_to_float16(onnx.load(path), keep_io_types=True)
        onnx.save(m, path)
    elif variant == "qdq":
        import numpy as np
        from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                              quantize_static)
        sys.path.insert(0, os.path.join(ROOT, "tools"))
        from compare_onnxruntime import make_inputs
        import onnx
        base = make_inputs(onnx.load(path, load_external_data=False))
        rng = np.random.default_rng(1)
        samples = [{k: (v + 0.1 * rng.standard_normal(v.shape).astype(v.dtype))
                    if v.dtype == np.float32 else v for k, v in base.items()} for _ in range(4)]

        class Reader(CalibrationDataReader):
            def __init__(self):
                self.it = iter(samples)

            def get_next(self):
                return next(self.it, None)

        fp32 = path + ".fp32.onnx"
        os.replace(path, fp32)
        quantize_static(fp32, path, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)


def huggingface_models():
    import transformers as tf
    seq = 64
    for name, cfg, cls in [("distilbert", tf.DistilBertConfig(), tf.DistilBertModel),
                           ("roberta", tf.RobertaConfig(), tf.RobertaModel),
                           ("albert", tf.AlbertConfig(), tf.AlbertModel),
                           ("electra", tf.ElectraConfig(), tf.ElectraModel),
                           ("deberta_v2", tf.DebertaV2Config(), tf.DebertaV2Model),
                           ("gpt2", tf.GPT2Config(n_layer=4), tf.GPT2Model)]:
        ids = torch.randint(0, 1000, (1, seq))
        mask = torch.ones(1, seq, dtype=torch.int64)
        yield f"transformers.{name}", lambda c=cfg, k=cls: Encoder(k(c)), (ids, mask), \
            ["input_ids", "attention_mask"]


def sanitize(name):
    for c in "/:\\":
        name = name.replace(c, "_")
    return name


def ort_inputs(path, folder):
    """Deterministic inputs (tools/compare_onnxruntime.py's make_inputs) saved as .npy,
    as `orchid run --input` arguments."""
    import numpy as np
    import onnx
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    from compare_onnxruntime import make_inputs
    os.makedirs(folder, exist_ok=True)
    args = []
    for k, v in make_inputs(onnx.load(path, load_external_data=False)).items():
        f = os.path.join(folder, sanitize(k) + ".npy")
        np.save(f, v)
        args += ["--input", f"{k}={f}"]
    return args


def output_steps(path):
    """Output name -> scale of the DequantizeLinear that produces it (QDQ models)."""
    import numpy as np
    import onnx
    from onnx import numpy_helper
    m = onnx.load(path, load_external_data=False)
    inits = {i.name: i for i in m.graph.initializer}
    steps = {}
    for n in m.graph.node:
        if n.op_type == "DequantizeLinear" and n.input[1] in inits:
            steps[n.output[0]] = float(np.max(numpy_helper.to_array(inits[n.input[1]])))
    return steps


def qdq_check(path, feed, outs, steps):
    """QDQ models against both of ONNX Runtime's ways of running them: as the graph says
    (optimisations off: DequantizeLinear, float ops, QuantizeLinear, the ONNX definition
    orchid's reference interpreter follows) and optimised (QDQ groups fused into integer
    kernels that round differently). Each output must be within 3 output quantization
    steps of one of them, or, where ONNX Runtime's two modes differ from each other by
    more than that (a step rounded the other way early on grows through later layers), by
    no more than they do: no implementation can be held closer to ONNX Runtime than it is
    to itself. 2-D outputs must also have the same argmax per row. Both distances are
    reported, with ONNX Runtime's distance from itself."""
    import numpy as np
    import onnxruntime as ort
    runs = {}
    for mode, level in (("as-defined", ort.GraphOptimizationLevel.ORT_DISABLE_ALL),
                        ("optimised", ort.GraphOptimizationLevel.ORT_ENABLE_ALL)):
        so = ort.SessionOptions()
        so.graph_optimization_level = level
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        runs[mode] = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feed)))
    bad, notes, worst = [], [], 0.0
    for name, defined in runs["as-defined"].items():
        got = np.load(os.path.join(outs, sanitize(name) + ".npy")).astype(np.float64)
        step = steps.get(name)
        unit = step if step else 0.05 * float(np.ptp(defined)) / 3 if defined.size else 1.0
        ok_any, parts = False, []
        ort_self = float(np.max(np.abs(np.asarray(defined, np.float64) -
                                       np.asarray(runs["optimised"][name], np.float64)),
                                initial=0))
        tol = max(3 * unit, ort_self)
        for mode, want in (("as-defined", defined), ("optimised", runs["optimised"][name])):
            want = np.asarray(want).astype(np.float64)
            if got.shape != want.shape:
                parts.append(f"{mode}: shape {got.shape} vs {want.shape}")
                continue
            d = np.abs(got - want)
            worst = max(worst, float(d.max(initial=0)))
            ok = bool(np.all(d <= tol + 1e-6))
            if want.ndim == 2 and want.shape[1] > 1:
                ok = ok and bool(np.all(got.argmax(1) == want.argmax(1)))
            ok_any = ok_any or ok
            parts.append(f"{mode} {float(d.max(initial=0)) / unit:.1f} steps")
        parts.append(f"ONNX Runtime's two modes differ by {ort_self / unit:.1f} steps, "
                     f"tolerance {tol / unit:.1f} steps")
        notes.append(f"{name}: " + ", ".join(parts) + (" (step = the output's scale)" if step else " (step = 5 % of range / 3)"))
        if not ok_any:
            bad.append(name)
    return bad, notes, worst


def compare_with_ort(path, inputs, outs, variant="opset17"):
    import numpy as np
    import onnxruntime as ort
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feed = {i.name: np.load(os.path.join(inputs, sanitize(i.name) + ".npy"))
            for i in sess.get_inputs()}
    if variant == "qdq":
        bad, notes, worst = qdq_check(path, feed, outs, output_steps(path))
        extra = "; " + "; ".join(notes)
        return (f"MISMATCH vs ONNX Runtime ({', '.join(bad)}; max err {worst:.2g}{extra})" if bad
                else f"matches ONNX Runtime (max err {worst:.1g}{extra})")
    worst, bad, notes = 0.0, [], []
    for meta, want in zip(sess.get_outputs(), sess.run(None, feed)):
        got = np.load(os.path.join(outs, sanitize(meta.name) + ".npy")).astype(np.float64)
        want = np.asarray(want).astype(np.float64)
        if got.shape != want.shape:
            bad.append(meta.name)
            continue
        d = np.abs(got - want)
        worst = max(worst, float(d.max(initial=0)))
        if variant == "fp16":
            ok = np.all(d <= 1e-2 + 1e-2 * np.abs(want))
        else:
            ok = np.all(d <= 1e-4 + 1e-3 * np.abs(want))
        if not ok:
            bad.append(meta.name)
    if bad and "detection" in path:
        return match_detections(sess, feed, outs)
    first = sess.get_outputs()[0].name
    rows = np.load(os.path.join(outs, sanitize(first) + ".npy")).shape
    size = f"; {first} {'x'.join(map(str, rows))}" if "detection" in path else ""
    extra = f"; {', '.join(notes)}" if notes else ""
    return (f"MISMATCH vs ONNX Runtime ({', '.join(bad)}; max err {worst:.2g}{size}{extra})" if bad
            else f"matches ONNX Runtime (max err {worst:.1g}{size}{extra})")


def device_cpu_check(orchid, path, cmd, tmp, name):
    """QDQ rows also run on the CPU plan executor (`--device cpu`: QDQ Conv/MatMul on
    oneDNN's int8 kernels) and are compared with ONNX Runtime the same way."""
    outs = os.path.join(tmp, name + ".cpu.out")
    run = subprocess.run(cmd[:4] + [outs] + cmd[5:] + ["--device", "cpu", "--plan-kind", "optimal"],
                         capture_output=True, text=True)
    if run.returncode != 0:
        return "--device cpu FAILED: " + run.stderr.strip().replace("|", "/")[:200]
    int8 = [line.split(None, 1)[1] for line in run.stdout.splitlines() if line.startswith("int8 ")]
    result = compare_with_ort(path, os.path.join(tmp, name + ".in"), outs, "qdq")
    return f"--device cpu ({int8[0] if int8 else 'no int8 kernels'}): {result}"


def match_detections(sess, feed, outs):
    """Detection outputs row-aligned per detection (boxes first): pairs each orchid
    detection with the ONNX Runtime one whose box is nearest and compares every output
    row by row. With random weights many scores are nearly equal, and inputs that differ
    in the last bits (ResNet-FPN sums in another order) reorder them in TopK/NMS, so
    the raw outputs differ in order although the detections agree."""
    import numpy as np
    names = [o.name for o in sess.get_outputs()]
    want = [np.asarray(w).astype(np.float64) for w in sess.run(None, feed)]
    got = [np.load(os.path.join(outs, sanitize(n) + ".npy")).astype(np.float64) for n in names]
    n_got, n_want = got[0].shape[0], want[0].shape[0]
    if any(g.shape[:1] != (n_got,) for g in got) or any(w.shape[:1] != (n_want,) for w in want):
        return "MISMATCH vs ONNX Runtime (outputs not row-aligned per detection)"
    scale = max(float(np.abs(want[0]).max(initial=0)), 1.0)
    # Pairs by box distance, closest pairs first (a greedy pass in row order would let
    # one detection take its neighbour's partner).
    dist = np.abs(got[0][:, None, :] - want[0][None, :, :]).max(axis=2) if n_got and n_want \
        else np.zeros((n_got, n_want))
    pairs = sorted((float(dist[i, j]), i, j) for i in range(n_got) for j in range(n_want)
                   if dist[i, j] <= 1e-3 * scale)
    used_got, used_want = set(), set()
    matched, worst = 0, 0.0
    for _, i, j in pairs:
        if i in used_got or j in used_want:
            continue
        used_got.add(i)
        used_want.add(j)
        errs = [float(np.abs(g[i] - w[j]).max(initial=0)) / max(float(np.abs(w[j]).max(initial=0)), 1.0)
                for g, w in zip(got, want)]
        if max(errs) <= 1e-3:
            matched += 1
            worst = max(worst, max(errs))
    return (f"{'matches' if matched == n_got == n_want else 'MISMATCH'} ONNX Runtime up to the "
            f"order of near-equal scores: {matched} of {n_got} detections (ORT {n_want}) agree in "
            f"every output (max err {worst:.1g} of magnitude)")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--orchid", default=os.path.join(ROOT, "build", "orchid"))
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "third_party.md"))
    parser.add_argument("--only", default="", help="comma-separated name prefixes")
    parser.add_argument("--ort", action="store_true", help="compare outputs with ONNX Runtime")
    parser.add_argument("--work", default="",
                        help="keep exports, inputs and outputs in this folder (default: a temporary one)")
    parser.add_argument("--out-append", action="store_true",
                        help="replace only the rows of the models checked in an existing table")
    parser.add_argument("--variants", default="opset17,current,fp16,qdq",
                        help="comma-separated: opset17, current, fp16, qdq")
    args = parser.parse_args()
    variants = [v for v in args.variants.split(",") if v]
    prefixes = [p for p in args.only.split(",") if p]
    torch.manual_seed(0)
    rows = []
    if args.work:
        os.makedirs(args.work, exist_ok=True)
    with (contextlib.nullcontext(args.work) if args.work else tempfile.TemporaryDirectory()) as tmp:
        for family, source in (("torchvision", torchvision_models),
                               ("transformers", huggingface_models),
                               ("recurrent", recurrent_models)):
            # Only import what --only asks for (transformers may not be installed).
            if prefixes and not any(p.startswith(family) or family.startswith(p) for p in prefixes):
                continue
            for base_name, make, example, input_names in source():
                for variant in variants:
                    name = base_name if variant == "opset17" else f"{base_name}@{variant}"
                    if prefixes and not any(name.startswith(p) for p in prefixes):
                        continue
                    if variant in ("fp16", "qdq") and base_name not in FP16_QDQ_MODELS:
                        continue
                    path = os.path.join(tmp, name + ".onnx")
                    try:
                        torch.manual_seed(0)
                        model = make().eval()
                        with torch.no_grad():
                            export(model, example, path, input_names, variant)
                    except Exception as e:  # export failures are torch's, not orchid's
                        msg = (str(e).strip().splitlines() or [type(e).__name__])[0]
                        rows.append((name, "export failed", msg.replace("|", "/")[:160], ""))
                        print(rows[-1], flush=True)
                        continue
                    inspect = subprocess.run([args.orchid, "inspect", path], capture_output=True,
                                             text=True)
                    if inspect.returncode != 0:
                        rows.append((name, "refused", inspect.stderr.strip().replace(path, name + ".onnx")
                                     .replace("|", "/")[:300], ""))
                        print(rows[-1], flush=True)
                        continue
                    t0 = time.monotonic()
                    outs = os.path.join(tmp, name + ".out")
                    cmd = [args.orchid, "run", path, "--save-outputs", outs]
                    if args.ort:
                        cmd += ort_inputs(path, os.path.join(tmp, name + ".in"))
                    run = subprocess.run(cmd, capture_output=True, text=True)
                    wall = time.monotonic() - t0
                    if run.returncode == 0:
                        note = compare_with_ort(path, os.path.join(tmp, name + ".in"), outs,
                                                variant) if args.ort else ""
                        if variant == "qdq" and args.ort and family != "recurrent":
                            note += "; " + device_cpu_check(args.orchid, path, cmd, tmp, name)
                        elif variant == "qdq" and args.ort:
                            note += ("; --device cpu not tried (orchestrating the unrolled "
                                     "two-layer recurrent graph is a known limit)")
                        rows.append((name, "runs", note, f"{wall:.1f} s"))
                    else:
                        rows.append((name, "refused", run.stderr.strip().replace(path, name + ".onnx")
                                     .replace("|", "/")[:300], ""))
                    print(rows[-1], flush=True)
    if args.out_append and os.path.exists(args.out):
        # Keep the table's notes and other rows; rows of the models checked here are
        # replaced (or added at the end of the table).
        with open(args.out) as f:
            old = f.read().rstrip("\n").split("\n")
        fresh = {n: f"| {n} | {r} | {m} | {t} |" for n, r, m, t in rows}
        out = []
        for line in old:
            name = line.split("|")[1].strip() if line.startswith("| ") else None
            if name in fresh:
                out.append(fresh.pop(name))
            else:
                out.append(line)
        out += list(fresh.values())
        with open(args.out + ".tmp", "w") as f:
            f.write("\n".join(out) + "\n")
        os.replace(args.out + ".tmp", args.out)
        return 0
    lines = ["# Third-party ONNX exports", "",
             f"`tools/check_third_party.py`: torch {torch.__version__}, variants {', '.join(variants)} "
             "(see the script's docstring), random weights; `orchid run` with random inputs.", "",
             "| model | result | orchid's message | run time |", "|---|---|---|---|"]
    lines += [f"| {n} | {r} | {m} | {t} |" for n, r, m, t in rows]
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out + ".tmp", "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(args.out + ".tmp", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
