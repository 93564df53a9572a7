#!/usr/bin/env python3
"""Exports orchid's model zoo into models/ (deterministic, re-runnable).

    python3 models/export_zoo.py                 # every model
    python3 models/export_zoo.py --only resnet50 # one model (repeatable flag)
    python3 models/export_zoo.py --keep-weights  # also leave <name>.weights next to the model
    python3 models/export_zoo.py --list

Every model is built from its public definition with random weights (no downloads):
torchvision constructors with weights=None, transformers config objects built in code,
and two architectures written here (fast-neural-style TransformerNet, YOLOX-nano). The
tiny_* graphs are built directly with onnx.helper for unit tests and keep their weights
inline.

Large weights are stripped following src/onnx/stripped_weights.hpp: every float32
initializer with >= 1024 elements is marked data_location=EXTERNAL with location
"<name>.weights" (dims and data_type kept), the side file is not shipped, and model
metadata gets orchid.weights = "stripped". orchid regenerates those tensors at load time.

Each export is checked: the real weights are written to a temporary side file, the model
is loaded back with onnx.load(..., load_external_data=False), passes
onnx.checker.check_model(full_check=True) and, for torch models, ONNX Runtime on the real
weights is compared against the torch forward pass. Facts about every model go to
models/zoo.json and models/README.md (generated; do not edit by hand).

Python is a tool here only: the C++ build and its tests never need it.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import hashlib
import io
import json
import math
import os
import shutil
import sys
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.external_data_helper import set_external_data

HERE = Path(__file__).resolve().parent
DEFAULT_OPSET = 17
MAX_IR_VERSION = 8            # libonnx 1.12's checker rejects IR > 8 and opset > 17
STRIP_MIN_ELEMENTS = 1024     # float32 initializers with at least this many elements
STRIPPED_KEY = "orchid.weights"
STRIPPED_VALUE = "stripped"
SEED = 0

# ---------------------------------------------------------------------------------------
# registry


@dataclass
class Spec:
    name: str
    kind: str                      # "torch" or "tiny"
    build: Callable                # torch: () -> TorchExport; tiny: () -> ModelProto
    strip: bool = True
    summary: str = ""


@dataclass
class TorchExport:
    module: object
    args: tuple
    input_names: list
    output_names: list
    source: str
    opset: int = DEFAULT_OPSET
    preserve_bn: bool = False       # export with TrainingMode.PRESERVE: BN stays a node
    notes: list = field(default_factory=list)
    check_atol: float = 1e-4        # torch vs ORT (real weights) sanity tolerance
    check_rtol: float = 1e-3
    dynamic_outputs: bool = False   # output sizes depend on the data (detection post-processing)


REGISTRY: dict[str, Spec] = {}


def register(name, kind, strip=True, summary=""):
    def deco(fn):
        REGISTRY[name] = Spec(name, kind, fn, strip, summary)
        return fn
    return deco


def build_model(name: str) -> "TorchExport":
    """The eval-mode torch module and example inputs of zoo model NAME exactly as the export
    builds them (same seed, same init); for other tools such as bench/executor_benchmark.py.
    Note: torch_setup() inside leaves deterministic algorithms on and at most 2 threads."""
    spec = REGISTRY.get(name)
    if spec is None:
        raise KeyError(f"unknown zoo model {name!r}")
    if spec.kind != "torch":
        raise ValueError(f"zoo model {name!r} is hand-built with onnx.helper (no torch module)")
    return spec.build()


# ---------------------------------------------------------------------------------------
# torch helpers (torch is imported lazily so that the tiny graphs need only onnx+numpy)


def torch_setup():
    import torch
    torch.manual_seed(SEED)
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    return torch


def randomize_batchnorm(module, seed=SEED):
    """mean ~ U(-0.1, 0.1), var ~ U(0.5, 1.5): otherwise outputs barely depend on inputs;
    scale ~ U(0.8, 1.2), shift ~ U(-0.1, 0.1)."""
    import torch
    g = torch.Generator().manual_seed(seed + 12345)
    for m in module.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            with torch.no_grad():
                m.running_mean.copy_(torch.rand(m.running_mean.shape, generator=g) * 0.2 - 0.1)
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=g) + 0.5)
                # Distinct affines too: identical all-ones/all-zeros tensors get deduplicated
                # by the exporter into one initializer plus Identity nodes.
                if m.affine:
                    m.weight.copy_(torch.rand(m.weight.shape, generator=g) * 0.4 + 0.8)
                    m.bias.copy_(torch.rand(m.bias.shape, generator=g) * 0.2 - 0.1)


def kaiming_fan_in(module, skip=()):
    """Variance-preserving conv init (fan_in counts in_channels/groups, so depthwise convs
    are right too). Needed where BN in eval mode with random statistics cannot undo a
    shrinking init: torchvision's fan_out init divides depthwise weights by sqrt(channels)."""
    import torch
    skip_ids = {id(m) for m in skip}
    for m in module.modules():
        if isinstance(m, torch.nn.Conv2d) and id(m) not in skip_ids:
            with torch.no_grad():
                torch.nn.init.kaiming_normal_(m.weight, mode="fan_in", nonlinearity="relu")


def image_input(shape, seed=SEED):
    import torch
    g = torch.Generator().manual_seed(seed)
    return torch.rand(shape, generator=g) * 2 - 1


def count_torch_params(module):
    return int(sum(p.numel() for p in module.parameters()))


# ---------------------------------------------------------------------------------------
# hand-written architectures


def transformer_net():
    """Fast-neural-style TransformerNet (Johnson et al. 2016, as in the PyTorch examples):
    9x9 reflection-padded conv, two stride-2 convs, five residual blocks, two nearest x2
    upsample + conv stages, final 9x9 conv; InstanceNorm (affine) + ReLU after each conv
    except the last."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class ConvLayer(nn.Module):
        def __init__(self, cin, cout, k, stride, upsample=None):
            super().__init__()
            self.upsample = upsample
            self.pad = nn.ReflectionPad2d(k // 2)
            self.conv = nn.Conv2d(cin, cout, k, stride)

        def forward(self, x):
            if self.upsample:
                x = F.interpolate(x, scale_factor=self.upsample, mode="nearest")
            return self.conv(self.pad(x))

    class ResidualBlock(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.conv1 = ConvLayer(c, c, 3, 1)
            self.in1 = nn.InstanceNorm2d(c, affine=True)
            self.conv2 = ConvLayer(c, c, 3, 1)
            self.in2 = nn.InstanceNorm2d(c, affine=True)
            self.relu = nn.ReLU()

        def forward(self, x):
            y = self.relu(self.in1(self.conv1(x)))
            return self.in2(self.conv2(y)) + x

    class TransformerNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = ConvLayer(3, 32, 9, 1)
            self.in1 = nn.InstanceNorm2d(32, affine=True)
            self.conv2 = ConvLayer(32, 64, 3, 2)
            self.in2 = nn.InstanceNorm2d(64, affine=True)
            self.conv3 = ConvLayer(64, 128, 3, 2)
            self.in3 = nn.InstanceNorm2d(128, affine=True)
            self.res = nn.Sequential(*[ResidualBlock(128) for _ in range(5)])
            self.deconv1 = ConvLayer(128, 64, 3, 1, upsample=2)
            self.in4 = nn.InstanceNorm2d(64, affine=True)
            self.deconv2 = ConvLayer(64, 32, 3, 1, upsample=2)
            self.in5 = nn.InstanceNorm2d(32, affine=True)
            self.deconv3 = ConvLayer(32, 3, 9, 1)
            self.relu = nn.ReLU()

        def forward(self, x):
            y = self.relu(self.in1(self.conv1(x)))
            y = self.relu(self.in2(self.conv2(y)))
            y = self.relu(self.in3(self.conv3(y)))
            y = self.res(y)
            y = self.relu(self.in4(self.deconv1(y)))
            y = self.relu(self.in5(self.deconv2(y)))
            return self.deconv3(y)

    net = TransformerNet()
    # Trained style nets have non-trivial norm affines; give them some spread.
    g = torch.Generator().manual_seed(SEED + 7)
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, nn.InstanceNorm2d):
                m.weight.copy_(torch.rand(m.weight.shape, generator=g) + 0.5)
                m.bias.copy_(torch.rand(m.bias.shape, generator=g) * 0.2 - 0.1)
    return net


def yolox_nano(num_classes=80):
    """YOLOX-nano (Ge et al. 2021): CSPDarknet backbone (depth 0.33, width 0.25,
    depthwise-separable convs, Focus stem, SPP), PAFPN neck, decoupled head with SiLU.
    Output as YOLOX's own ONNX export (decode_in_inference=False):
    [1, 52*52+26*26+13*13, 4+1+num_classes] = reg | sigmoid(obj) | sigmoid(cls)."""
    import torch
    import torch.nn as nn

    depth, width = 0.33, 0.25

    class BaseConv(nn.Module):
        def __init__(self, cin, cout, k, stride=1, groups=1):
            super().__init__()
            self.conv = nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False)
            self.bn = nn.BatchNorm2d(cout, eps=1e-3, momentum=0.03)
            self.act = nn.SiLU()

        def forward(self, x):
            return self.act(self.bn(self.conv(x)))

    class DWConv(nn.Module):
        def __init__(self, cin, cout, k, stride=1):
            super().__init__()
            self.dconv = BaseConv(cin, cin, k, stride, groups=cin)
            self.pconv = BaseConv(cin, cout, 1, 1)

        def forward(self, x):
            return self.pconv(self.dconv(x))

    Conv = DWConv  # nano: depthwise everywhere except the stem and 1x1s

    class Bottleneck(nn.Module):
        def __init__(self, cin, cout, shortcut=True, expansion=1.0):
            super().__init__()
            hidden = int(cout * expansion)
            self.conv1 = BaseConv(cin, hidden, 1)
            self.conv2 = Conv(hidden, cout, 3, 1)
            self.use_add = shortcut and cin == cout

        def forward(self, x):
            y = self.conv2(self.conv1(x))
            return y + x if self.use_add else y

    class CSPLayer(nn.Module):
        def __init__(self, cin, cout, n=1, shortcut=True):
            super().__init__()
            hidden = int(cout * 0.5)
            self.conv1 = BaseConv(cin, hidden, 1)
            self.conv2 = BaseConv(cin, hidden, 1)
            self.conv3 = BaseConv(2 * hidden, cout, 1)
            self.m = nn.Sequential(*[Bottleneck(hidden, hidden, shortcut) for _ in range(n)])

        def forward(self, x):
            return self.conv3(torch.cat([self.m(self.conv1(x)), self.conv2(x)], dim=1))

    class SPPBottleneck(nn.Module):
        def __init__(self, cin, cout, ks=(5, 9, 13)):
            super().__init__()
            hidden = cin // 2
            self.conv1 = BaseConv(cin, hidden, 1)
            self.pools = nn.ModuleList([nn.MaxPool2d(k, 1, k // 2) for k in ks])
            self.conv2 = BaseConv(hidden * (len(ks) + 1), cout, 1)

        def forward(self, x):
            x = self.conv1(x)
            return self.conv2(torch.cat([x] + [p(x) for p in self.pools], dim=1))

    class Focus(nn.Module):
        def __init__(self, cin, cout, k=3):
            super().__init__()
            self.conv = BaseConv(cin * 4, cout, k, 1)

        def forward(self, x):
            tl = x[..., ::2, ::2]
            tr = x[..., ::2, 1::2]
            bl = x[..., 1::2, ::2]
            br = x[..., 1::2, 1::2]
            return self.conv(torch.cat((tl, bl, tr, br), dim=1))

    class CSPDarknet(nn.Module):
        def __init__(self):
            super().__init__()
            c = int(64 * width)              # 16
            d = max(round(3 * depth), 1)     # 1
            self.stem = Focus(3, c, 3)
            self.dark2 = nn.Sequential(Conv(c, c * 2, 3, 2), CSPLayer(c * 2, c * 2, d))
            self.dark3 = nn.Sequential(Conv(c * 2, c * 4, 3, 2), CSPLayer(c * 4, c * 4, d * 3))
            self.dark4 = nn.Sequential(Conv(c * 4, c * 8, 3, 2), CSPLayer(c * 8, c * 8, d * 3))
            self.dark5 = nn.Sequential(Conv(c * 8, c * 16, 3, 2), SPPBottleneck(c * 16, c * 16),
                                       CSPLayer(c * 16, c * 16, d, shortcut=False))

        def forward(self, x):
            x = self.dark2(self.stem(x))
            x3 = self.dark3(x)
            x4 = self.dark4(x3)
            x5 = self.dark5(x4)
            return x3, x4, x5

    class PAFPN(nn.Module):
        def __init__(self):
            super().__init__()
            ch = [int(c * width) for c in (256, 512, 1024)]   # 64, 128, 256
            n = round(3 * depth)                              # 1
            self.backbone = CSPDarknet()
            self.upsample = nn.Upsample(scale_factor=2, mode="nearest")
            self.lateral_conv0 = BaseConv(ch[2], ch[1], 1)
            self.C3_p4 = CSPLayer(2 * ch[1], ch[1], n, False)
            self.reduce_conv1 = BaseConv(ch[1], ch[0], 1)
            self.C3_p3 = CSPLayer(2 * ch[0], ch[0], n, False)
            self.bu_conv2 = Conv(ch[0], ch[0], 3, 2)
            self.C3_n3 = CSPLayer(2 * ch[0], ch[1], n, False)
            self.bu_conv1 = Conv(ch[1], ch[1], 3, 2)
            self.C3_n4 = CSPLayer(2 * ch[1], ch[2], n, False)

        def forward(self, x):
            x2, x1, x0 = self.backbone(x)
            fpn_out0 = self.lateral_conv0(x0)
            f_out0 = self.C3_p4(torch.cat([self.upsample(fpn_out0), x1], 1))
            fpn_out1 = self.reduce_conv1(f_out0)
            pan_out2 = self.C3_p3(torch.cat([self.upsample(fpn_out1), x2], 1))
            pan_out1 = self.C3_n3(torch.cat([self.bu_conv2(pan_out2), fpn_out1], 1))
            pan_out0 = self.C3_n4(torch.cat([self.bu_conv1(pan_out1), fpn_out0], 1))
            return pan_out2, pan_out1, pan_out0

    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            hidden = int(256 * width)
            self.stems, self.cls_convs, self.reg_convs = nn.ModuleList(), nn.ModuleList(), nn.ModuleList()
            self.cls_preds, self.reg_preds, self.obj_preds = nn.ModuleList(), nn.ModuleList(), nn.ModuleList()
            for cin in (int(c * width) for c in (256, 512, 1024)):
                self.stems.append(BaseConv(cin, hidden, 1))
                self.cls_convs.append(nn.Sequential(Conv(hidden, hidden, 3), Conv(hidden, hidden, 3)))
                self.reg_convs.append(nn.Sequential(Conv(hidden, hidden, 3), Conv(hidden, hidden, 3)))
                self.cls_preds.append(nn.Conv2d(hidden, num_classes, 1))
                self.reg_preds.append(nn.Conv2d(hidden, 4, 1))
                self.obj_preds.append(nn.Conv2d(hidden, 1, 1))
            prior = -math.log((1 - 0.01) / 0.01)
            with torch.no_grad():
                for conv in list(self.cls_preds) + list(self.obj_preds):
                    conv.bias.fill_(prior)

        def forward(self, feats):
            outs = []
            for k, x in enumerate(feats):
                x = self.stems[k](x)
                cls_feat = self.cls_convs[k](x)
                reg_feat = self.reg_convs[k](x)
                outs.append(torch.cat([self.reg_preds[k](reg_feat),
                                       self.obj_preds[k](reg_feat).sigmoid(),
                                       self.cls_preds[k](cls_feat).sigmoid()], 1))
            return torch.cat([o.flatten(start_dim=2) for o in outs], dim=2).permute(0, 2, 1)

    class YOLOX(nn.Module):
        def __init__(self):
            super().__init__()
            self.backbone = PAFPN()
            self.head = Head()

        def forward(self, x):
            return self.head(self.backbone(x))

    return YOLOX()


# ---------------------------------------------------------------------------------------
# torch models


@register("candy", "torch", summary="fast-neural-style TransformerNet (style transfer)")
def _candy():
    torch_setup()
    m = transformer_net().eval()
    return TorchExport(m, (image_input((1, 3, 224, 224)),), ["input"], ["output"],
                       source="written here: fast-neural-style TransformerNet (PyTorch examples' "
                              "architecture), random init")


@register("segformer_b0", "torch", summary="SegFormer-B0 semantic segmentation (ADE20k head)")
def _segformer():
    torch = torch_setup()
    from transformers import SegformerConfig, SegformerForSemanticSegmentation
    cfg = SegformerConfig(num_channels=3, num_encoder_blocks=4, depths=[2, 2, 2, 2],
                          sr_ratios=[8, 4, 2, 1], hidden_sizes=[32, 64, 160, 256],
                          patch_sizes=[7, 3, 3, 3], strides=[4, 2, 2, 2],
                          num_attention_heads=[1, 2, 5, 8], mlp_ratios=[4, 4, 4, 4],
                          decoder_hidden_size=256, num_labels=150)
    inner = SegformerForSemanticSegmentation(cfg)
    randomize_batchnorm(inner)

    class Wrap(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, pixel_values):
            return self.m(pixel_values=pixel_values, return_dict=True).logits

    m = Wrap(inner).eval()
    return TorchExport(m, (image_input((1, 3, 512, 512)),), ["pixel_values"], ["logits"],
                       source="transformers SegformerForSemanticSegmentation(SegformerConfig("
                              "hidden_sizes=[32,64,160,256], depths=[2,2,2,2], "
                              "decoder_hidden_size=256, num_labels=150)) = mit-b0, random init",
                       notes=["decode head BatchNorm folded into the fuse conv by the exporter"])


@register("yolox_nano", "torch", summary="YOLOX-nano detector (CSPDarknet-dw, PAFPN, decoupled head)")
def _yolox():
    torch = torch_setup()
    m = yolox_nano()
    # PyTorch's default conv init shrinks the signal ~3x in variance per layer; with BN in
    # eval mode nothing renormalises it, and the output would not depend on the image.
    kaiming_fan_in(m, skip=list(m.head.cls_preds) + list(m.head.reg_preds) + list(m.head.obj_preds))
    randomize_batchnorm(m)
    m.eval()
    return TorchExport(m, (image_input((1, 3, 416, 416)),), ["images"], ["output"],
                       source="written here: YOLOX-nano (CSPDarknet depth 0.33 width 0.25, depthwise "
                              "convs, Focus stem, SPP, PAFPN, decoupled head, SiLU), 80 classes, "
                              "random init",
                       notes=["backbone/neck/head convs initialised kaiming-normal (fan_in), prediction "
                              "convs PyTorch default with YOLOX's prior bias -log(99)",
                              "output [1,3549,85] = reg(4) | sigmoid(obj) | sigmoid(cls 80) per anchor "
                              "point, not decoded to boxes (as YOLOX's own ONNX export)",
                              "BatchNorm folded into conv by the exporter"])


@register("ssdlite320", "torch",
          summary="SSDlite320-MobileNetV3 detector with post-processing (NMS, If: data-dependent shapes)")
def _ssdlite320():
    torch = torch_setup()
    import torchvision
    # 20 candidates per class and 20 detections (torchvision: 300 and 300): with orchid's
    # regenerated unit-gain weights the class scores are nearly uniform, and deep in a
    # top-300 list neighbours differ by less than float32 rounding, so any two correct
    # implementations may order them differently. The top 20 are well separated.
    det = torchvision.models.detection.ssdlite320_mobilenet_v3_large(
        weights=None, weights_backbone=None, topk_candidates=20, detections_per_img=20)
    # As for MobileNetV2: fan-in init in the backbone and random BN statistics, or the
    # features vanish and every class score is exactly 1/91 (ties decide the output).
    kaiming_fan_in(det.backbone)
    randomize_batchnorm(det)

    class Wrap(torch.nn.Module):
        """One image in, (boxes, scores, labels) out: torchvision's list/dict interface
        as plain tensors."""

        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, image):
            out = self.m([image])[0]
            return out["boxes"], out["scores"], out["labels"]

    m = Wrap(det).eval()
    return TorchExport(m, (image_input((3, 240, 240)),), ["image"], ["boxes", "scores", "labels"],
                       source="torchvision.models.detection.ssdlite320_mobilenet_v3_large(weights=None, "
                              "weights_backbone=None), random init, whole forward incl. transform "
                              "and post-processing",
                       notes=["backbone convs re-initialised kaiming-normal fan_in, BN statistics "
                              "randomised; heads keep torchvision's init",
                              "input one 3x240x240 image; the model's transform resizes it to 320x320",
                              "post-processing: per-class score filter (NonZero), TopK, batched NMS "
                              "(an If on 'no boxes'), top 20 candidates per class and 20 detections: output sizes depend on the "
                              "data, so only the reference interpreter runs this model (orchestration "
                              "refuses it, naming the first dynamic node)"],
                       dynamic_outputs=True)


@register("resnet50", "torch", summary="ResNet-50 classifier, BatchNormalization kept as nodes")
def _resnet50():
    torch_setup()
    import torchvision
    m = torchvision.models.resnet50(weights=None)
    randomize_batchnorm(m)
    m.eval()
    return TorchExport(m, (image_input((1, 3, 224, 224)),), ["input"], ["logits"],
                       source="torchvision.models.resnet50(weights=None), random init",
                       preserve_bn=True,
                       notes=["exported with training=TrainingMode.PRESERVE on an eval-mode module: "
                              "BatchNormalization stays a separate (inference) node"])


def _mobilenet(opset):
    torch_setup()
    import torchvision
    m = torchvision.models.mobilenet_v2(weights=None)
    kaiming_fan_in(m)
    randomize_batchnorm(m)
    m.eval()
    return TorchExport(m, (image_input((1, 3, 224, 224)),), ["input"], ["logits"], opset=opset,
                       source="torchvision.models.mobilenet_v2(weights=None), random init",
                       notes=["convs re-initialised kaiming-normal fan_in (torchvision's fan_out init "
                              "makes the output input-independent once BN uses random statistics)",
                              "BatchNorm folded into conv by the exporter (the common form)"] +
                             ([f"opset {opset}: older op forms (Clip min/max as inputs, "
                               "Squeeze/Unsqueeze axes attributes, etc.)"] if opset < 13 else []))


@register("mobilenet_v2", "torch", summary="MobileNetV2 classifier, BN folded")
def _mobilenet_v2():
    return _mobilenet(DEFAULT_OPSET)


@register("mobilenet_v2_opset11", "torch", summary="MobileNetV2 at opset 11 (older op forms)")
def _mobilenet_v2_opset11():
    return _mobilenet(11)


@register("vit_b_16", "torch", summary="ViT-B/16 classifier")
def _vit():
    torch = torch_setup()
    import torchvision
    m = torchvision.models.vit_b_16(weights=None)
    # torchvision zero-initialises the classifier head (logits would be all zero).
    with torch.no_grad():
        torch.nn.init.normal_(m.heads.head.weight, std=0.02)
        torch.nn.init.uniform_(m.heads.head.bias, -0.01, 0.01)
    m.eval()
    return TorchExport(m, (image_input((1, 3, 224, 224)),), ["input"], ["logits"],
                       source="torchvision.models.vit_b_16(weights=None), random init "
                              "(classifier head re-initialised N(0, 0.02), torchvision zeroes it)",
                       check_atol=1e-3)


@register("bert_base", "torch", summary="BERT-base encoder (BertModel), sequence 128")
def _bert():
    torch = torch_setup()
    from transformers import BertConfig, BertModel
    cfg = BertConfig()  # defaults = bert-base-uncased geometry
    cfg._attn_implementation = "eager"
    inner = BertModel(cfg, add_pooling_layer=True)

    class Wrap(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask, token_type_ids):
            out = self.m(input_ids=input_ids, attention_mask=attention_mask,
                         token_type_ids=token_type_ids, return_dict=True)
            return out.last_hidden_state, out.pooler_output

    m = Wrap(inner).eval()
    g = torch.Generator().manual_seed(SEED)
    seq = 128
    ids = torch.randint(0, 1000, (1, seq), generator=g, dtype=torch.int64)
    # A mask with padding, so that tracing cannot specialise an all-ones mask away.
    mask = torch.ones((1, seq), dtype=torch.int64)
    mask[0, 100:] = 0
    types = torch.zeros((1, seq), dtype=torch.int64)
    return TorchExport(m, (ids, mask, types), ["input_ids", "attention_mask", "token_type_ids"],
                       ["last_hidden_state", "pooler_output"],
                       source="transformers BertModel(BertConfig()) (bert-base: 12 layers, hidden 768, "
                              "12 heads, vocab 30522), eager attention, with pooler, random init",
                       check_atol=1e-3)


# ---------------------------------------------------------------------------------------
# tiny hand-made graphs (onnx.helper), weights inline


def _rng(name):
    return np.random.default_rng(int(hashlib.sha256(name.encode()).hexdigest()[:8], 16))


def _init(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def _f32(rng, shape, scale):
    return (rng.uniform(-1, 1, size=shape) * scale).astype(np.float32)


def _vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def _make_model(graph, opset=DEFAULT_OPSET):
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="orchid export_zoo.py")
    m.ir_version = 8
    return m


@register("tiny_mlp", "tiny", strip=False, summary="MatMul+Add+Relu+Softmax")
def _tiny_mlp():
    r = _rng("tiny_mlp")
    inits = [_init("W1", _f32(r, (16, 32), 0.25)), _init("b1", _f32(r, (32,), 0.1)),
             _init("W2", _f32(r, (32, 10), 0.25)), _init("b2", _f32(r, (10,), 0.1))]
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["h0"], name="fc1"),
             helper.make_node("Add", ["h0", "b1"], ["h1"], name="fc1_bias"),
             helper.make_node("Relu", ["h1"], ["h2"], name="relu"),
             helper.make_node("MatMul", ["h2", "W2"], ["h3"], name="fc2"),
             helper.make_node("Add", ["h3", "b2"], ["logits"], name="fc2_bias"),
             helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1)]
    g = helper.make_graph(nodes, "tiny_mlp", [_vi("x", TensorProto.FLOAT, [4, 16])],
                          [_vi("probs", TensorProto.FLOAT, [4, 10])], inits)
    return _make_model(g)


@register("tiny_conv", "tiny", strip=False,
          summary="Conv+BN+Relu+MaxPool+GlobalAveragePool+Gemm")
def _tiny_conv():
    r = _rng("tiny_conv")
    inits = [_init("conv1.w", _f32(r, (8, 3, 3, 3), 0.4)), _init("conv1.b", _f32(r, (8,), 0.1)),
             _init("bn.scale", (r.uniform(0.5, 1.5, 8)).astype(np.float32)),
             _init("bn.bias", _f32(r, (8,), 0.1)),
             _init("bn.mean", _f32(r, (8,), 0.1)),
             _init("bn.var", (r.uniform(0.5, 1.5, 8)).astype(np.float32)),
             _init("conv2.w", _f32(r, (16, 8, 3, 3), 0.2)),
             _init("fc.w", _f32(r, (10, 16), 0.3)), _init("fc.b", _f32(r, (10,), 0.1))]
    nodes = [helper.make_node("Conv", ["x", "conv1.w", "conv1.b"], ["c1"], name="conv1",
                              kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
             helper.make_node("BatchNormalization", ["c1", "bn.scale", "bn.bias", "bn.mean", "bn.var"],
                              ["b1"], name="bn", epsilon=1e-5),
             helper.make_node("Relu", ["b1"], ["r1"], name="relu1"),
             helper.make_node("MaxPool", ["r1"], ["p1"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["p1", "conv2.w"], ["c2"], name="conv2",
                              kernel_shape=[3, 3], pads=[0, 0, 1, 1], strides=[2, 2]),
             helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
             helper.make_node("GlobalAveragePool", ["r2"], ["gap"], name="gap"),
             helper.make_node("Flatten", ["gap"], ["flat"], name="flatten", axis=1),
             helper.make_node("Gemm", ["flat", "fc.w", "fc.b"], ["logits"], name="fc",
                              transB=1, alpha=1.0, beta=1.0)]
    g = helper.make_graph(nodes, "tiny_conv", [_vi("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                          [_vi("logits", TensorProto.FLOAT, [1, 10])], inits)
    return _make_model(g)


@register("tiny_attention", "tiny", strip=False,
          summary="one pre-LN transformer block: LayerNorm, MHA (4 heads), GELU(Erf) MLP")
def _tiny_attention():
    r = _rng("tiny_attention")
    S, D, H = 8, 32, 4
    dh = D // H
    inits = [_init("ln1.g", r.uniform(0.8, 1.2, D).astype(np.float32)), _init("ln1.b", _f32(r, (D,), 0.1)),
             _init("Wq", _f32(r, (D, D), 0.3)), _init("bq", _f32(r, (D,), 0.1)),
             _init("Wk", _f32(r, (D, D), 0.3)), _init("bk", _f32(r, (D,), 0.1)),
             _init("Wv", _f32(r, (D, D), 0.3)), _init("bv", _f32(r, (D,), 0.1)),
             _init("Wo", _f32(r, (D, D), 0.3)), _init("bo", _f32(r, (D,), 0.1)),
             _init("ln2.g", r.uniform(0.8, 1.2, D).astype(np.float32)), _init("ln2.b", _f32(r, (D,), 0.1)),
             _init("W1", _f32(r, (D, 2 * D), 0.3)), _init("b1", _f32(r, (2 * D,), 0.1)),
             _init("W2", _f32(r, (2 * D, D), 0.3)), _init("b2", _f32(r, (D,), 0.1)),
             _init("heads_shape", np.array([1, S, H, dh], np.int64)),
             _init("merge_shape", np.array([1, S, D], np.int64)),
             _init("scale", np.array(1.0 / math.sqrt(dh), np.float32)),
             _init("sqrt2", np.array(math.sqrt(2.0), np.float32)),
             _init("one", np.array(1.0, np.float32)), _init("half", np.array(0.5, np.float32))]
    n = helper.make_node
    nodes = [n("LayerNormalization", ["x", "ln1.g", "ln1.b"], ["ln1"], name="ln1", axis=-1, epsilon=1e-5)]
    for t in ("q", "k", "v"):
        W, b = "W" + t, "b" + t
        nodes += [n("MatMul", ["ln1", W], [t + "0"], name=t + "_proj"),
                  n("Add", [t + "0", b], [t + "1"], name=t + "_bias"),
                  n("Reshape", [t + "1", "heads_shape"], [t + "2"], name=t + "_split_heads")]
    nodes += [n("Transpose", ["q2"], ["q3"], name="q_t", perm=[0, 2, 1, 3]),
              n("Transpose", ["k2"], ["k3"], name="k_t", perm=[0, 2, 3, 1]),
              n("Transpose", ["v2"], ["v3"], name="v_t", perm=[0, 2, 1, 3]),
              n("MatMul", ["q3", "k3"], ["s0"], name="qk"),
              n("Mul", ["s0", "scale"], ["s1"], name="scale"),
              n("Softmax", ["s1"], ["p"], name="softmax", axis=-1),
              n("MatMul", ["p", "v3"], ["o0"], name="pv"),
              n("Transpose", ["o0"], ["o1"], name="o_t", perm=[0, 2, 1, 3]),
              n("Reshape", ["o1", "merge_shape"], ["o2"], name="merge_heads"),
              n("MatMul", ["o2", "Wo"], ["o3"], name="o_proj"),
              n("Add", ["o3", "bo"], ["o4"], name="o_bias"),
              n("Add", ["x", "o4"], ["res1"], name="residual1"),
              n("LayerNormalization", ["res1", "ln2.g", "ln2.b"], ["ln2"], name="ln2", axis=-1, epsilon=1e-5),
              n("MatMul", ["ln2", "W1"], ["f0"], name="fc1"),
              n("Add", ["f0", "b1"], ["f1"], name="fc1_bias"),
              # GELU(x) = 0.5 * x * (1 + erf(x / sqrt(2)))
              n("Div", ["f1", "sqrt2"], ["g0"], name="gelu_div"),
              n("Erf", ["g0"], ["g1"], name="gelu_erf"),
              n("Add", ["g1", "one"], ["g2"], name="gelu_add"),
              n("Mul", ["f1", "g2"], ["g3"], name="gelu_mul"),
              n("Mul", ["g3", "half"], ["g4"], name="gelu_half"),
              n("MatMul", ["g4", "W2"], ["f2"], name="fc2"),
              n("Add", ["f2", "b2"], ["f3"], name="fc2_bias"),
              n("Add", ["res1", "f3"], ["y"], name="residual2")]
    g = helper.make_graph(nodes, "tiny_attention", [_vi("x", TensorProto.FLOAT, [1, S, D])],
                          [_vi("y", TensorProto.FLOAT, [1, S, D])], inits)
    return _make_model(g)


@register("tiny_shape_plumbing", "tiny", strip=False,
          summary="exporter-style shape subgraphs (Shape/Gather/Unsqueeze/Concat/Reshape, "
                  "ConstantOfShape, Range, Cast, Expand, Where) that fold to static")
def _tiny_shape_plumbing():
    n = helper.make_node
    i64 = lambda name, v: _init(name, np.array(v, np.int64))
    inits = [i64("i0", 0), i64("i1", 1), i64("i2", 2), i64("i3", 3), i64("axis0", [0]),
             i64("minus1", [-1]), i64("zero", 0), i64("step", 1), i64("neg_one_vec", [-1, -1, -1])]
    cos = helper.make_tensor("cos_value", TensorProto.FLOAT, [1], [0.25])
    ones_val = helper.make_tensor("ones_value", TensorProto.INT64, [1], [1])
    nodes = [
        n("Shape", ["x"], ["s"], name="shape"),                              # [2,3,4,5]
        n("Gather", ["s", "i0"], ["d0"], name="gather_d0", axis=0),          # scalar 2
        n("Gather", ["s", "i1"], ["d1"], name="gather_d1", axis=0),
        n("Gather", ["s", "i2"], ["d2"], name="gather_d2", axis=0),
        n("Gather", ["s", "i3"], ["d3"], name="gather_d3", axis=0),
        n("Mul", ["d2", "d3"], ["d23"], name="flat_dim"),                    # 20
        n("Unsqueeze", ["d0", "axis0"], ["u0"], name="unsq_d0"),
        n("Unsqueeze", ["d1", "axis0"], ["u1"], name="unsq_d1"),
        n("Unsqueeze", ["d23", "axis0"], ["u23"], name="unsq_d23"),
        n("Concat", ["u0", "u1", "u23"], ["shape3"], name="concat_shape", axis=0),   # [2,3,20]
        n("Reshape", ["x", "shape3"], ["xr"], name="reshape"),               # [2,3,20]
        n("Range", ["zero", "d23", "step"], ["rng"], name="range"),          # int64 [20]
        n("Cast", ["rng"], ["rngf"], name="cast", to=TensorProto.FLOAT),
        # exporter idiom for expand: where(shape == -1, ones, shape)
        n("ConstantOfShape", ["u_rank"], ["ones3"], name="ones_like_shape", value=ones_val),
        n("Equal", ["shape3", "neg_one_vec"], ["is_neg"], name="eq_neg_one"),
        n("Where", ["is_neg", "ones3", "shape3"], ["expand_shape"], name="where_shape"),
        n("Expand", ["rngf", "expand_shape"], ["rng_b"], name="expand"),     # [2,3,20]
        n("ConstantOfShape", ["shape3"], ["quarter"], name="const_of_shape", value=cos),
        n("Mul", ["rng_b", "quarter"], ["ramp"], name="ramp"),
        n("Add", ["xr", "ramp"], ["y"], name="add"),                         # [2,3,20]
        n("Shape", ["y"], ["ys_tail"], name="shape_tail", start=1),          # [3,20]
        n("ReduceProd", ["ys_tail"], ["tail_prod"], name="tail_prod", keepdims=1),  # [60]
        n("Concat", ["u0", "tail_prod"], ["shape2"], name="concat_shape2", axis=0),  # [2,60]
        n("Reshape", ["y", "shape2"], ["z0"], name="reshape2"),
        n("Slice", ["shape3", "axis0", "minus1_end"], ["sl"], name="slice_shape"),  # [2,3]
        n("Concat", ["sl", "minus1"], ["shape_m1"], name="concat_m1", axis=0),      # [2,3,-1]
        n("Reshape", ["z0", "shape_m1"], ["z1"], name="reshape3"),                  # [2,3,20]
        n("Sub", ["z1", "xr"], ["z"], name="sub"),                                  # == ramp
    ]
    inits += [i64("minus1_end", [-1])]
    # rank of shape3 via Shape(Shape(...)) — a common pattern
    nodes.insert(13, n("Shape", ["shape3"], ["u_rank"], name="shape_of_shape"))
    g = helper.make_graph(nodes, "tiny_shape_plumbing", [_vi("x", TensorProto.FLOAT, [2, 3, 4, 5])],
                          [_vi("y", TensorProto.FLOAT, [2, 3, 20]), _vi("z0", TensorProto.FLOAT, [2, 60]),
                           _vi("z", TensorProto.FLOAT, [2, 3, 20])], inits)
    return _make_model(g)


@register("tiny_resize_pad", "tiny", strip=False,
          summary="reflect Pad, Resize nearest/linear, InstanceNormalization, Slice, Split, Concat")
def _tiny_resize_pad():
    r = _rng("tiny_resize_pad")
    n = helper.make_node
    i64 = lambda name, v: _init(name, np.array(v, np.int64))
    f32 = lambda name, v: _init(name, np.array(v, np.float32))
    inits = [i64("pads", [0, 0, 2, 2, 0, 0, 2, 2]),
             _init("in.scale", r.uniform(0.5, 1.5, 4).astype(np.float32)),
             _init("in.bias", _f32(r, (4,), 0.2)),
             f32("scales2", [1, 1, 2, 2]), i64("sizes18", [1, 4, 18, 18]),
             i64("sl_starts", [3, 3]), i64("sl_ends", [21, 21]), i64("sl_axes", [2, 3]),
             i64("split_sizes", [3, 5]),
             i64("flip_starts", [-1]), i64("flip_ends", [-(2 ** 63)]), i64("flip_axes", [3]),
             i64("flip_steps", [-1]),
             i64("cpads", [0, 0, 1, 0, 0, 0, 0, 1]), f32("cpad_value", 0.5),
             i64("crop_starts", [0, 1]), i64("crop_ends", [18, 19]), i64("crop_axes", [2, 3]),
             i64("edge_pads", [0, 0, 1, 1, 0, 0, 1, 1]),
             i64("sub_starts", [0, 0]), i64("sub_ends", [18, 18]), i64("sub_axes", [2, 3]),
             i64("sub_steps", [1, 1])]
    nodes = [
        n("Pad", ["x", "pads"], ["p"], name="reflect_pad", mode="reflect"),          # [1,4,12,12]
        n("InstanceNormalization", ["p", "in.scale", "in.bias"], ["inorm"], name="instnorm", epsilon=1e-5),
        n("Resize", ["inorm", "", "scales2"], ["up_nearest"], name="resize_nearest", mode="nearest",
          coordinate_transformation_mode="asymmetric", nearest_mode="floor"),   # [1,4,24,24]
        n("Resize", ["inorm", "", "", "sizes18"], ["up_linear"], name="resize_linear", mode="linear",
          coordinate_transformation_mode="half_pixel"),                          # [1,4,18,18]
        n("Slice", ["up_nearest", "sl_starts", "sl_ends", "sl_axes"], ["crop"], name="crop"),  # [1,4,18,18]
        n("Concat", ["crop", "up_linear"], ["cat"], name="concat", axis=1),     # [1,8,18,18]
        n("Split", ["cat", "split_sizes"], ["a", "b"], name="split", axis=1),   # [1,3,..], [1,5,..]
        n("Slice", ["a", "flip_starts", "flip_ends", "flip_axes", "flip_steps"], ["a_flip"],
          name="flip_w"),                                                        # reversed along W
        n("Pad", ["b", "cpads", "cpad_value"], ["b_pad"], name="const_pad", mode="constant"),  # [1,5,19,19]
        n("Slice", ["b_pad", "crop_starts", "crop_ends", "crop_axes"], ["b_crop"], name="crop2"),  # [1,5,18,18]
        n("Pad", ["b_crop", "edge_pads"], ["b_edge"], name="edge_pad", mode="edge"),   # [1,5,20,20]
        n("Slice", ["b_edge", "sub_starts", "sub_ends", "sub_axes", "sub_steps"], ["b_sub"], name="crop3"),
        n("Concat", ["b_sub", "a_flip"], ["y"], name="concat_out", axis=1),      # [1,8,18,18]
    ]
    g = helper.make_graph(nodes, "tiny_resize_pad", [_vi("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                          [_vi("y", TensorProto.FLOAT, [1, 8, 18, 18])], inits)
    return _make_model(g)


# ---------------------------------------------------------------------------------------
# export, strip, check


def torch_to_onnx(te: TorchExport) -> onnx.ModelProto:
    import torch
    kwargs = dict(input_names=te.input_names, output_names=te.output_names,
                  opset_version=te.opset, do_constant_folding=True, dynamo=False)
    if te.preserve_bn:
        kwargs["training"] = torch.onnx.TrainingMode.PRESERVE
    # nn.MultiheadAttention's inference fast path (_native_multi_head_attention) has no
    # ONNX form; the plain path exports as MatMul/Softmax/...
    torch.backends.mha.set_fastpath_enabled(False)
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.no_grad():
            torch.onnx.export(te.module, te.args, f, **kwargs)
    return onnx.load_from_string(f.getvalue())


def inline_identity_initializers(model: onnx.ModelProto) -> int:
    """The exporter deduplicates equal initializers into one plus Identity nodes; give each
    consumer its own copy again (per-layer weight names, no Identity plumbing)."""
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    outputs = {o.name for o in g.output}
    keep, removed = [], 0
    for nd in g.node:
        if nd.op_type == "Identity" and nd.input[0] in inits and nd.output[0] not in outputs:
            t = TensorProto()
            t.CopyFrom(inits[nd.input[0]])
            t.name = nd.output[0]
            g.initializer.append(t)
            removed += 1
        else:
            keep.append(nd)
    if removed:
        del g.node[:]
        g.node.extend(keep)
        used = {i for nd in g.node for i in nd.input} | outputs
        unused = [t for t in g.initializer if t.name not in used]
        for t in unused:
            g.initializer.remove(t)
    return removed


def _small_or_nonfloat(t: TensorProto) -> bool:
    return t.data_type != TensorProto.FLOAT or numel(t) < STRIP_MIN_ELEMENTS


def fold_constants(model: onnx.ModelProto) -> int:
    """Evaluates nodes whose inputs are all constants (Constant nodes, inline initializers)
    and whose results are small or non-float, replacing them by initializers. The
    TorchScript exporter leaves such subgraphs behind (e.g. the pads of ReflectionPad2d are
    computed by ~8 nodes per Pad). Shape computations that start from a graph input's Shape
    are left alone: folding those is the importer's job (tiny_shape_plumbing tests it)."""
    from onnx.reference import ReferenceEvaluator
    g = model.graph
    known = {t.name: numpy_helper.to_array(t) for t in g.initializer
             if t.data_location != TensorProto.EXTERNAL and _small_or_nonfloat(t)}
    new_inits, keep, folded = [], [], 0
    for nd in g.node:
        has_subgraph = any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
                           for a in nd.attribute)
        inputs = [i for i in nd.input if i]
        foldable = (nd.domain in ("", "ai.onnx") and not has_subgraph
                    and nd.op_type not in ("RandomNormal", "RandomUniform", "RandomNormalLike",
                                           "RandomUniformLike", "Multinomial", "Bernoulli")
                    and all(i in known for i in inputs))
        if not foldable:
            keep.append(nd)
            continue
        mini = helper.make_model(
            helper.make_graph([nd], "fold", [helper.make_tensor_value_info(
                i, helper.np_dtype_to_tensor_dtype(known[i].dtype), known[i].shape) for i in inputs],
                [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in nd.output]),
            opset_imports=model.opset_import)
        mini.ir_version = model.ir_version
        try:
            outs = ReferenceEvaluator(mini).run(None, {i: known[i] for i in inputs})
        except Exception:  # unsupported in the reference evaluator: leave the node
            keep.append(nd)
            continue
        results = [numpy_helper.from_array(np.asarray(v), o) for o, v in zip(nd.output, outs)]
        if nd.op_type == "Constant":
            for o, v in zip(nd.output, outs):
                known[o] = np.asarray(v)
            keep.append(nd)  # kept unless it ends up unused
            continue
        if not all(_small_or_nonfloat(t) for t in results):
            keep.append(nd)
            continue
        for t in results:
            known[t.name] = numpy_helper.to_array(t)
            new_inits.append(t)
        folded += 1
    outputs = {o.name for o in g.output}
    while True:  # drop Constant nodes and initializers nothing reads any more
        used = {i for nd in keep for i in nd.input} | outputs
        dead = [nd for nd in keep if nd.op_type == "Constant" and nd.output[0] not in used]
        if not dead:
            break
        keep = [nd for nd in keep if nd not in dead]
    used = {i for nd in keep for i in nd.input} | outputs
    del g.node[:]
    g.node.extend(keep)
    g.initializer.extend(t for t in new_inits if t.name in used)
    for t in [t for t in g.initializer if t.name not in used]:
        g.initializer.remove(t)
    return folded


def make_outputs_static(model: onnx.ModelProto, dynamic_outputs: bool = False):
    """Re-derives graph output shapes by ONNX shape inference (with data propagation)
    where the exporter left symbolic dims, and insists that every input and output is
    static."""
    def static(vi):
        dims = vi.type.tensor_type.shape.dim
        return vi.type.tensor_type.HasField("shape") and all(d.HasField("dim_value") for d in dims)

    if not all(static(o) for o in model.graph.output):
        probe = onnx.ModelProto()
        probe.CopyFrom(model)
        for o in probe.graph.output:
            if not static(o):
                o.type.tensor_type.ClearField("shape")
        inferred = onnx.shape_inference.infer_shapes(probe, data_prop=True)
        by_name = {o.name: o for o in inferred.graph.output}
        for o in model.graph.output:
            if not static(o) and o.name in by_name and static(by_name[o.name]):
                o.type.tensor_type.shape.CopyFrom(by_name[o.name].type.tensor_type.shape)
    checked = list(model.graph.input) + ([] if dynamic_outputs else list(model.graph.output))
    bad = [v.name for v in checked if not static(v)]
    if bad:
        raise RuntimeError(f"not static after shape inference: {bad}")


def numel(t: TensorProto) -> int:
    return int(np.prod(t.dims, dtype=np.int64)) if len(t.dims) else 1


def strip_weights(model: onnx.ModelProto, name: str) -> tuple[bytes, int, int]:
    """Marks float32 initializers with >= STRIP_MIN_ELEMENTS elements as external data in
    '<name>.weights'. Returns (side-file bytes, tensors stripped, elements stripped)."""
    location = f"{name}.weights"
    blob = bytearray()
    count = elems = 0
    for t in model.graph.initializer:
        if t.data_type != TensorProto.FLOAT or numel(t) < STRIP_MIN_ELEMENTS:
            continue
        data = numpy_helper.to_array(t).astype("<f4").tobytes()
        offset = len(blob)
        blob += data
        pad = (-len(blob)) % 64
        blob += b"\0" * pad
        t.ClearField("float_data")
        t.raw_data = data  # set_external_data wants raw_data present
        set_external_data(t, location, offset=offset, length=len(data))
        t.ClearField("raw_data")
        t.data_location = TensorProto.EXTERNAL
        count += 1
        elems += numel(t)
    del model.metadata_props[:]
    model.metadata_props.append(onnx.StringStringEntryProto(key=STRIPPED_KEY, value=STRIPPED_VALUE))
    return bytes(blob), count, elems


def tensor_type_str(vi) -> dict:
    tt = vi.type.tensor_type
    return {"name": vi.name, "dtype": helper.tensor_dtype_to_np_dtype(tt.elem_type).name,
            "shape": [d.dim_value if d.HasField("dim_value") else d.dim_param for d in tt.shape.dim]}


def model_facts(model: onnx.ModelProto) -> dict:
    g = model.graph
    hist = collections.Counter(nd.op_type for nd in g.node)
    float_types = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE, TensorProto.BFLOAT16}
    params = sum(numel(t) for t in g.initializer if t.data_type in float_types)
    const_elems = 0
    for nd in g.node:
        if nd.op_type == "Constant":
            for a in nd.attribute:
                if a.type == onnx.AttributeProto.TENSOR and a.t.data_type in float_types:
                    const_elems += numel(a.t)
    stripped = [t for t in g.initializer if t.data_location == TensorProto.EXTERNAL]
    return {
        "opset": next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx")),
        "ir_version": model.ir_version,
        "inputs": [tensor_type_str(v) for v in g.input],
        "outputs": [tensor_type_str(v) for v in g.output],
        "node_count": len(g.node),
        "op_histogram": dict(sorted(hist.items(), key=lambda kv: (-kv[1], kv[0]))),
        "parameter_count": int(params),
        "constant_node_float_elements": int(const_elems),
        "initializer_count": len(g.initializer),
        "stripped_tensor_count": len(stripped),
        "stripped_parameter_count": int(sum(numel(t) for t in stripped)),
        "weights": dict((p.key, p.value) for p in model.metadata_props).get(STRIPPED_KEY, "inline"),
    }


def ort_run(path: str, feeds: dict) -> list:
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = 2
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def export_one(spec: Spec, keep_weights: bool) -> dict:
    out_path = HERE / f"{spec.name}.onnx"
    notes, source, torch_params, check = [], "", None, {}
    versions = {"onnx": onnx.__version__}
    te = None
    if spec.kind == "torch":
        te = spec.build()
        import torch
        versions["torch"] = torch.__version__
        if "transformers" in te.source:
            import transformers
            versions["transformers"] = transformers.__version__
        if "torchvision" in te.source:
            import torchvision
            versions["torchvision"] = torchvision.__version__
        model = torch_to_onnx(te)
        source, notes = te.source, list(te.notes)
        torch_params = count_torch_params(te.module)
        n_id = inline_identity_initializers(model)
        if n_id:
            notes.append(f"{n_id} Identity nodes on deduplicated initializers replaced by copies")
        n_fold = fold_constants(model)
        if n_fold:
            notes.append(f"{n_fold} exporter-left constant subgraph nodes folded into initializers")
    else:
        model = spec.build()
        source = "hand-built with onnx.helper in models/export_zoo.py; weights inline"
    model.ir_version = min(model.ir_version, MAX_IR_VERSION)
    model.producer_name = model.producer_name or "orchid export_zoo.py"
    model.doc_string = ""
    for nd in model.graph.node:
        nd.doc_string = ""

    make_outputs_static(model, te is not None and te.dynamic_outputs)
    if te is not None and te.preserve_bn:
        n_bn = sum(nd.op_type == "BatchNormalization" for nd in model.graph.node)
        if n_bn == 0:
            raise RuntimeError(f"{spec.name}: BatchNormalization nodes did not survive the export")
        notes.append(f"{n_bn} BatchNormalization nodes kept")

    blob = b""
    if spec.strip:
        blob, n_stripped, _ = strip_weights(model, spec.name)
    with tempfile.TemporaryDirectory(prefix="orchid_zoo_") as tmp:
        tmp_model = os.path.join(tmp, out_path.name)
        if blob:
            with open(os.path.join(tmp, f"{spec.name}.weights"), "wb") as fh:
                fh.write(blob)
        with open(tmp_model, "wb") as fh:
            fh.write(model.SerializeToString())
        # The convention's promises: loads without external data, passes the checker.
        # (The checker insists the side file exists as a regular file; here it does.)
        reloaded = onnx.load(tmp_model, load_external_data=False)
        onnx.checker.check_model(tmp_model, full_check=True)
        with contextlib.chdir(tmp):  # an in-memory proto resolves the side file from cwd
            onnx.checker.check_model(reloaded)
        if te is not None:
            import torch
            with torch.no_grad():
                ref = te.module(*te.args)
            ref = [ref] if isinstance(ref, torch.Tensor) else list(ref)
            feeds = {n: a.numpy() for n, a in zip(te.input_names, te.args)}
            got = ort_run(tmp_model, feeds)
            errs = []
            for r_, g_ in zip(ref, got):
                r_ = r_.numpy()
                errs.append(float(np.max(np.abs(r_ - g_))))
                if not np.allclose(g_, r_, atol=te.check_atol, rtol=te.check_rtol):
                    raise RuntimeError(f"{spec.name}: ORT on the exported model disagrees with torch "
                                       f"(max abs err {errs[-1]:.3g})")
            # Outputs must depend on the input (random init can make them constant).
            other = tuple(image_input(a.shape, seed=SEED + 1) if a.is_floating_point()
                          else torch.randint(0, 1000, a.shape, generator=torch.Generator().manual_seed(1))
                          if n == "input_ids" else a
                          for n, a in zip(te.input_names, te.args))
            with torch.no_grad():
                ref2 = te.module(*other)
            ref2 = [ref2] if isinstance(ref2, torch.Tensor) else list(ref2)
            sens = []
            for a_, b_ in zip(ref, ref2):
                scale = float(a_.abs().max())
                sens.append(float((a_ - b_).abs().max()) / scale if scale > 0 else 0.0)
            if min(sens) < 1e-3:
                raise RuntimeError(f"{spec.name}: an output barely depends on the input ({sens})")
            check = {"torch_vs_onnxruntime_max_abs_err": max(errs),
                     "output_max_abs": [float(r_.abs().max()) for r_ in ref],
                     "input_sensitivity": [round(x, 4) for x in sens]}
        else:
            x = {v.name: _rng(spec.name + v.name).uniform(-1, 1, [d.dim_value for d in
                 v.type.tensor_type.shape.dim]).astype(np.float32) for v in model.graph.input}
            got = ort_run(tmp_model, x)
            for vi, arr in zip(model.graph.output, got):
                want = [d.dim_value for d in vi.type.tensor_type.shape.dim]
                if list(arr.shape) != want or not np.all(np.isfinite(arr)):
                    raise RuntimeError(f"{spec.name}: output {vi.name} {arr.shape} != {want}")
            check = {"onnxruntime_runs": True}
        shutil.copyfile(tmp_model, out_path)
        side = HERE / f"{spec.name}.weights"
        if blob and keep_weights:
            shutil.copyfile(os.path.join(tmp, f"{spec.name}.weights"), side)
        elif side.exists():
            side.unlink()

    facts = model_facts(model)
    data = out_path.read_bytes()
    entry = {"name": spec.name, "file": out_path.name, "summary": spec.summary, "source": source,
             "versions": versions, **facts, "file_size_bytes": len(data),
             "sha256": hashlib.sha256(data).hexdigest(), "notes": notes, "export_check": check}
    if torch_params is not None:
        entry["torch_parameter_count"] = torch_params
    return entry


# ---------------------------------------------------------------------------------------
# zoo.json / README.md


README_HEAD = """# orchid model zoo

Generated by `python3 models/export_zoo.py` from `models/zoo.json`; do not edit by hand.
Every model is built from its public definition with random weights and a fixed seed (no
downloads, no pretrained weights), exported with static input shapes and batch 1 (the
output sizes of `ssdlite320`, a detector with its post-processing, depend on the data;
orchid's reference interpreter sizes them per run). Python is only
needed to regenerate this folder; the C++ build and tests read the `.onnx` files directly.

## Stripped weights (see `src/onnx/stripped_weights.hpp`)

To keep the repository small, every float32 initializer with at least 1024 elements is
stored as ONNX external data (`data_location = EXTERNAL`, `location = <model>.weights`,
offset/length set, dims and data_type kept) and the side file is **not shipped** (`*.weights`
is git-ignored). Such models carry the metadata entry `orchid.weights = stripped`. Smaller
tensors and every non-float tensor (shape constants, indices) stay inline, so BatchNorm
running statistics, biases and norm scales are the exported values. When the side file is
absent, orchid regenerates the stripped tensors deterministically (seeded by tensor name,
distribution by role); `build/orchid materialize IN.onnx OUT.onnx` writes a self-contained
copy that other tools (ONNX Runtime) can run with the same weights. `--keep-weights` leaves
the torch weights in `<model>.weights` next to the model (orchid then reads them).

Each stripped file loads with `onnx.load(path, load_external_data=False)` and passes
`onnx.checker.check_model` (which wants the side file to exist; the export script checks it
with the real weights next to it, then compares ONNX Runtime against the torch forward
pass). The `tiny_*` graphs are hand-built with `onnx.helper` for unit tests and keep all
weights inline.

Parameter count = elements of all floating-point initializers, stripped ones included
(BatchNorm running statistics count; for BN-folded exports they are folded away).
`tools/compare_onnxruntime.py` compares `orchid run` against ONNX Runtime on these models
(materialising stripped ones with `orchid materialize`; tolerance |a-b| <= 1e-4 + 1e-3|b|).
With `--write-reference` it stores inputs and ONNX Runtime outputs under
`tests/data/reference/<model>/{inputs,outputs}/<name>.npy` for the C++ tests: the tiny_*
models, plus `mobilenet_v2`, `bert_base` and `ssdlite320` via `--reference-stripped` (their references
depend on orchid's weight generator and must be rewritten if it changes).
"""


def fmt_int(n):
    return f"{n:,}"


def fmt_size(n):
    return f"{n / 1024:.1f} KiB" if n < 1024 * 1024 else f"{n / 1024 / 1024:.2f} MiB"


def shape_str(v):
    return f"`{v['name']}` {v['dtype']}[{','.join(str(d) for d in v['shape'])}]"


def write_docs(zoo: dict):
    order = [n for n in REGISTRY if n in zoo] + sorted(n for n in zoo if n not in REGISTRY)
    (HERE / "zoo.json").write_text(json.dumps({"models": [zoo[n] for n in order]}, indent=1) + "\n")
    lines = [README_HEAD, "## Summary\n",
             "| model | inputs | opset | nodes | parameters | weights | file |",
             "|---|---|---|---|---|---|---|"]
    for n in order:
        e = zoo[n]
        lines.append(f"| `{n}` | {'<br>'.join(shape_str(v) for v in e['inputs'])} | {e['opset']} | "
                     f"{e['node_count']} | {fmt_int(e['parameter_count'])} | {e['weights']} | "
                     f"{fmt_size(e['file_size_bytes'])} |")
    total = sum(zoo[n]["file_size_bytes"] for n in order)
    lines.append(f"\nTotal size of the .onnx files: {fmt_size(total)}.\n")
    lines.append("## Provenance\n")
    for n in order:
        e = zoo[n]
        v = ", ".join(f"{k} {val}" for k, val in e["versions"].items())
        lines += [f"### {n}\n", f"{e['summary']}.\n",
                  f"- source: {e['source']}",
                  f"- versions: {v}",
                  f"- inputs: {'; '.join(shape_str(x) for x in e['inputs'])}",
                  f"- outputs: {'; '.join(shape_str(x) for x in e['outputs'])}",
                  f"- opset {e['opset']}, IR version {e['ir_version']}, {e['node_count']} nodes",
                  f"- parameters: {fmt_int(e['parameter_count'])}"
                  + (f" (torch module: {fmt_int(e['torch_parameter_count'])})" if "torch_parameter_count" in e else ""),
                  f"- weights: {e['weights']}" + (f" ({e['stripped_tensor_count']} of {e['initializer_count']} "
                                                  f"initializers, {fmt_int(e['stripped_parameter_count'])} elements)"
                                                  if e["weights"] == "stripped" else ""),
                  f"- file: `{e['file']}`, {fmt_size(e['file_size_bytes'])} ({e['file_size_bytes']} bytes)"]
        if e.get("constant_node_float_elements"):
            lines.append(f"- float elements held in Constant nodes: {fmt_int(e['constant_node_float_elements'])}")
        chk = e.get("export_check", {})
        if "torch_vs_onnxruntime_max_abs_err" in chk:
            lines.append(f"- export check: ONNX Runtime vs torch, max abs err "
                         f"{chk['torch_vs_onnxruntime_max_abs_err']:.3g}")
        for note in e["notes"]:
            lines.append(f"- note: {note}")
        lines.append("- ops: " + ", ".join(f"{op} {c}" for op, c in e["op_histogram"].items()) + "\n")
    (HERE / "README.md").write_text("\n".join(lines))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", action="append", metavar="NAME", help="export only NAME (repeatable)")
    ap.add_argument("--keep-weights", action="store_true",
                    help="leave <name>.weights (the torch weights) next to stripped models")
    ap.add_argument("--list", action="store_true", help="list the models and exit")
    ap.add_argument("--docs-only", action="store_true",
                    help="rewrite README.md from zoo.json without exporting")
    args = ap.parse_args()
    if args.list:
        for n, s in REGISTRY.items():
            print(f"{n:24s} {s.kind:6s} {s.summary}")
        return
    names = args.only or list(REGISTRY)
    unknown = [n for n in names if n not in REGISTRY]
    if unknown:
        sys.exit(f"unknown model(s): {', '.join(unknown)}; try --list")
    zoo_path = HERE / "zoo.json"
    zoo = {}
    if zoo_path.exists():
        zoo = {e["name"]: e for e in json.loads(zoo_path.read_text())["models"]}
    if args.docs_only:
        write_docs(zoo)
        return
    for n in names:
        print(f"[{n}] exporting ...", flush=True)
        e = export_one(REGISTRY[n], args.keep_weights)
        zoo[n] = e
        chk = e["export_check"]
        extra = (f", ORT vs torch {chk['torch_vs_onnxruntime_max_abs_err']:.2g}"
                 if "torch_vs_onnxruntime_max_abs_err" in chk else "")
        print(f"[{n}] {e['file']}: {fmt_size(e['file_size_bytes'])}, {e['node_count']} nodes, "
              f"{fmt_int(e['parameter_count'])} params, weights {e['weights']}{extra}", flush=True)
        write_docs(zoo)  # after each model, so a partial run leaves consistent docs
    total = sum(p.stat().st_size for p in HERE.iterdir() if p.is_file() and p.suffix != ".weights")
    print(f"models/ total (without side files): {fmt_size(total)}")


if __name__ == "__main__":
    main()
