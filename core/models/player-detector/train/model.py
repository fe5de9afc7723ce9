"""The player detector network, in JAX, and its output decoding.

A small single-scale, anchor-free detector (in the spirit of FCOS / YOLOv8's
head, without distribution focal loss): six 3x3 convolutions with ReLU
(strides 2, 2, 2, then dilations 1, 2, 4 at stride 8), a bottleneck residual
block at stride 8 (3x3 conv 64->32, ReLU, 1x1 conv 32->64, added to its input,
ReLU; He et al. 2016), and a 1x1 head with 4 box channels and C class channels
per stride-8 cell. The residual block's 1x1 convolution starts at zero, so a
model without it (the synthetic-only detector) is its exact starting point.

Decoding of cell (row i, column j), stride s = 8, in input pixels:
    cx = (j + 0.5 + dx) * s        cy = (i + 0.5 + dy) * s
    w  = exp(tw) * s               h  = exp(th) * s
    score_c = sigmoid(logit_c)
The exported ONNX model does this decoding in the graph and returns
[1, 4 + C, N] (YOLOv8 export layout), N = (H / 8) * (W / 8), cells in
row-major order.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from classes import CLASS_NAMES

STRIDE = 8
NUM_CLASSES = len(CLASS_NAMES)
# (in, out, stride, dilation) of each 3x3 convolution.
LAYERS = [(3, 16, 2, 1), (16, 32, 2, 1), (32, 48, 2, 1), (48, 64, 1, 1), (64, 64, 1, 2), (64, 64, 1, 4)]
# Bottleneck residual block after LAYERS: (channels, bottleneck channels, dilation of its 3x3).
RESIDUAL = (64, 32, 2)
HEAD_IN = 64
# Prior probability of the class scores at initialisation (RetinaNet, Lin et al. 2017, section 4.1).
PRIOR = 0.01


def init_params(seed: int) -> dict[str, np.ndarray]:
    """He-initialised weights (HWIO) and zero biases; class biases set to the prior."""
    rng = np.random.default_rng(seed)
    params: dict[str, np.ndarray] = {}
    for k, (cin, cout, _, _) in enumerate(LAYERS):
        params[f"conv{k}_w"] = (rng.standard_normal((3, 3, cin, cout)) * np.sqrt(2.0 / (9 * cin))).astype(np.float32)
        params[f"conv{k}_b"] = np.zeros((cout,), np.float32)
    ch, mid, _ = RESIDUAL
    params["res_a_w"] = (rng.standard_normal((3, 3, ch, mid)) * np.sqrt(2.0 / (9 * ch))).astype(np.float32)
    params["res_a_b"] = np.zeros((mid,), np.float32)
    params["res_b_w"] = np.zeros((1, 1, mid, ch), np.float32)
    params["res_b_b"] = np.zeros((ch,), np.float32)
    params["head_w"] = (rng.standard_normal((1, 1, HEAD_IN, 4 + NUM_CLASSES)) * 0.01).astype(np.float32)
    bias = np.zeros((4 + NUM_CLASSES,), np.float32)
    bias[4:] = -np.log((1 - PRIOR) / PRIOR)
    params["head_b"] = bias
    return params


def with_residual(params: dict[str, np.ndarray], seed: int) -> dict[str, np.ndarray]:
    """Adds the residual block (identity at start) to parameters that lack it."""
    out = dict(params)
    for k, v in init_params(seed).items():
        if k.startswith("res_") and k not in out:
            out[k] = v
    return out


def params_from_onnx(path) -> dict[str, np.ndarray]:
    """Reads the weights of an exported detector (export_onnx.py) back into the HWIO layout."""
    import onnx
    from onnx import numpy_helper

    names = {f"conv{k}": f"conv{k}" for k in range(len(LAYERS))} | {"head": "head", "res_a": "res_a", "res_b": "res_b"}
    inits = {i.name: numpy_helper.to_array(i) for i in onnx.load(str(path)).graph.initializer}
    params: dict[str, np.ndarray] = {}
    for onnx_name, key in names.items():
        if f"{onnx_name}.weight" in inits:
            params[f"{key}_w"] = inits[f"{onnx_name}.weight"].transpose(2, 3, 1, 0).astype(np.float32)
            params[f"{key}_b"] = inits[f"{onnx_name}.bias"].astype(np.float32)
    return params


def forward(params, images):
    """images: float32 [B, H, W, 3] in 0..1 (H, W multiples of 8) -> raw head [B, H/8, W/8, 4 + C]."""
    x = images
    for k, (_, _, stride, dilation) in enumerate(LAYERS):
        x = jax.lax.conv_general_dilated(
            x,
            params[f"conv{k}_w"],
            window_strides=(stride, stride),
            padding=[(dilation, dilation), (dilation, dilation)],
            rhs_dilation=(dilation, dilation),
            dimension_numbers=("NHWC", "HWIO", "NHWC"),
        )
        x = jax.nn.relu(x + params[f"conv{k}_b"])
    d = RESIDUAL[2]
    r = jax.lax.conv_general_dilated(
        x, params["res_a_w"], (1, 1), [(d, d), (d, d)], rhs_dilation=(d, d),
        dimension_numbers=("NHWC", "HWIO", "NHWC"),
    )
    r = jax.nn.relu(r + params["res_a_b"])
    r = jax.lax.conv_general_dilated(r, params["res_b_w"], (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    x = jax.nn.relu(x + r + params["res_b_b"])
    x = jax.lax.conv_general_dilated(
        x, params["head_w"], (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC")
    )
    return x + params["head_b"]


def decode(raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """raw [H/8, W/8, 4 + C] -> boxes [N, 4] as (cx, cy, w, h) in input pixels, scores [N, C]."""
    gh, gw, _ = raw.shape
    jj, ii = np.meshgrid(np.arange(gw), np.arange(gh))
    cx = (jj + 0.5 + raw[..., 0]) * STRIDE
    cy = (ii + 0.5 + raw[..., 1]) * STRIDE
    w = np.exp(np.clip(raw[..., 2], -10, 10)) * STRIDE
    h = np.exp(np.clip(raw[..., 3], -10, 10)) * STRIDE
    boxes = np.stack([cx, cy, w, h], -1).reshape(-1, 4)
    scores = 1 / (1 + np.exp(-raw[..., 4:].reshape(-1, NUM_CLASSES)))
    return boxes, scores
