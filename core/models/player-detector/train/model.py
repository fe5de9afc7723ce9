"""The player detector network, in JAX, and its output decoding.

A small single-scale, anchor-free detector (in the spirit of FCOS / YOLOv8's
head, without distribution focal loss): six 3x3 convolutions with ReLU
(strides 2, 2, 2, then dilations 1, 2, 4 at stride 8), one or more bottleneck
residual blocks at stride 8 (3x3 conv 64->32, ReLU, 1x1 conv 32->64, added to
its input, ReLU; He et al. 2016), and a 1x1 head with 4 box channels and C
class channels per stride-8 cell. A new residual block's 1x1 convolution starts
at zero, so a model without it is its exact starting point (how version 2 grew
from the synthetic-only detector, and version 3 from version 2). Block 0's
weights are named res_a/res_b, block k's res{k}_a/res{k}_b.

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
# Bottleneck residual blocks after LAYERS: (channels, bottleneck channels); the dilation of each
# block's 3x3, in turn (block 0: 2 since version 2; block 1: 1 since version 3.0).
RESIDUAL = (64, 32)
RESIDUAL_DILATIONS = (2, 1, 4, 2)
HEAD_IN = 64
# Prior probability of the class scores at initialisation (RetinaNet, Lin et al. 2017, section 4.1).
PRIOR = 0.01


def residual_prefix(block: int) -> str:
    """Weight-name prefix of residual block `block` (0 -> "res", k -> "res{k}")."""
    return "res" if block == 0 else f"res{block}"


def residual_blocks(params) -> int:
    """How many residual blocks `params` has (blocks are consecutive from 0)."""
    n = 0
    while f"{residual_prefix(n)}_a_w" in params:
        n += 1
    return n


def init_params(seed: int, blocks: int = 1) -> dict[str, np.ndarray]:
    """He-initialised weights (HWIO) and zero biases; class biases set to the prior; `blocks` residual blocks
    (at most len(RESIDUAL_DILATIONS)), each an identity at start."""
    rng = np.random.default_rng(seed)
    params: dict[str, np.ndarray] = {}
    for k, (cin, cout, _, _) in enumerate(LAYERS):
        params[f"conv{k}_w"] = (rng.standard_normal((3, 3, cin, cout)) * np.sqrt(2.0 / (9 * cin))).astype(np.float32)
        params[f"conv{k}_b"] = np.zeros((cout,), np.float32)
    ch, mid = RESIDUAL
    if not 1 <= blocks <= len(RESIDUAL_DILATIONS):
        raise ValueError(f"residual blocks must be 1..{len(RESIDUAL_DILATIONS)}, got {blocks}")
    for block in range(blocks):
        pre = residual_prefix(block)
        params[f"{pre}_a_w"] = (rng.standard_normal((3, 3, ch, mid)) * np.sqrt(2.0 / (9 * ch))).astype(np.float32)
        params[f"{pre}_a_b"] = np.zeros((mid,), np.float32)
        params[f"{pre}_b_w"] = np.zeros((1, 1, mid, ch), np.float32)
        params[f"{pre}_b_b"] = np.zeros((ch,), np.float32)
    params["head_w"] = (rng.standard_normal((1, 1, HEAD_IN, 4 + NUM_CLASSES)) * 0.01).astype(np.float32)
    bias = np.zeros((4 + NUM_CLASSES,), np.float32)
    bias[4:] = -np.log((1 - PRIOR) / PRIOR)
    params["head_b"] = bias
    return params


def with_residual(params: dict[str, np.ndarray], seed: int, blocks: int = 1) -> dict[str, np.ndarray]:
    """Adds residual blocks (each an identity at start) to parameters that have fewer than `blocks`."""
    out = dict(params)
    for k, v in init_params(seed, max(blocks, residual_blocks(params), 1)).items():
        if k.startswith("res") and k not in out:
            out[k] = v
    return out


def params_from_onnx(path) -> dict[str, np.ndarray]:
    """Reads the weights of an exported detector (export_onnx.py) back into the HWIO layout."""
    import onnx
    from onnx import numpy_helper

    inits = {i.name: numpy_helper.to_array(i) for i in onnx.load(str(path)).graph.initializer}
    names = [f"conv{k}" for k in range(len(LAYERS))] + ["head"]
    names += [f"{residual_prefix(b)}_{part}" for b in range(len(RESIDUAL_DILATIONS)) for part in ("a", "b")]
    params: dict[str, np.ndarray] = {}
    for name in names:
        if f"{name}.weight" in inits:
            params[f"{name}_w"] = inits[f"{name}.weight"].transpose(2, 3, 1, 0).astype(np.float32)
            params[f"{name}_b"] = inits[f"{name}.bias"].astype(np.float32)
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
    for block in range(residual_blocks(params)):
        pre, d = residual_prefix(block), RESIDUAL_DILATIONS[block]
        r = jax.lax.conv_general_dilated(
            x, params[f"{pre}_a_w"], (1, 1), [(d, d), (d, d)], rhs_dilation=(d, d),
            dimension_numbers=("NHWC", "HWIO", "NHWC"),
        )
        r = jax.nn.relu(r + params[f"{pre}_a_b"])
        r = jax.lax.conv_general_dilated(
            r, params[f"{pre}_b_w"], (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC")
        )
        x = jax.nn.relu(x + r + params[f"{pre}_b_b"])
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
