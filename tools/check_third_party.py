#!/usr/bin/env python3
"""Exports common third-party models (torchvision classification and detection, Hugging
Face encoders) with random weights and runs `orchid inspect` and `orchid run` on each,
recording whether orchid accepts it and, if not, the one-line reason it gives.

Usage: .venv/bin/python tools/check_third_party.py [--orchid build/orchid] [--out FILE.md]
"""
import argparse
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
                 "retinanet_resnet50_fpn"]:
        yield f"torchvision.detection.{name}", \
            lambda n=name: getattr(det, n)(weights=None, weights_backbone=None), \
            ([torch.rand(3, 320, 320)],), ["images"]


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
        yield f"transformers.{name}", lambda c=cfg, k=cls: k(c), (ids, mask), \
            ["input_ids", "attention_mask"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--orchid", default=os.path.join(ROOT, "build", "orchid"))
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "third_party.md"))
    args = parser.parse_args()
    torch.manual_seed(0)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for source in (torchvision_models, huggingface_models):
            for name, make, example, input_names in source():
                path = os.path.join(tmp, name + ".onnx")
                try:
                    model = make().eval()
                    with torch.no_grad():
                        torch.onnx.export(model, example, path, opset_version=17,
                                          input_names=input_names, dynamo=False)
                except Exception as e:  # export failures are torch's, not orchid's
                    rows.append((name, "export failed", str(e).splitlines()[0][:160], ""))
                    continue
                t0 = time.monotonic()
                run = subprocess.run([args.orchid, "run", path], capture_output=True, text=True)
                wall = time.monotonic() - t0
                if run.returncode == 0:
                    rows.append((name, "runs", "", f"{wall:.1f} s"))
                else:
                    rows.append((name, "refused", run.stderr.strip().replace(path, name + ".onnx")
                                 .replace("|", "/")[:300], ""))
                print(rows[-1], flush=True)
    lines = ["# Third-party ONNX exports", "",
             f"`tools/check_third_party.py`: torch {torch.__version__}, opset 17, random weights; "
             "`orchid run` with random inputs.", "",
             "| model | result | orchid's message | run time |", "|---|---|---|---|"]
    lines += [f"| {n} | {r} | {m} | {t} |" for n, r, m, t in rows]
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out + ".tmp", "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(args.out + ".tmp", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
