"""The player detector network, in JAX, and its output decoding.

A small single-scale, anchor-free detector (in the spirit of FCOS / YOLOv8's
head, without distribution focal loss): six 3x3 convolutions with ReLU
(strides 2, 2, 2, then dilations 1, 2, 4 at stride 8), and a 1x1 head with
4 box channels and C class channels per stride-8 cell.

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

STRIDE = 8
CLASS_NAMES = ["player", "goalkeeper", "referee", "ball"]
NUM_CLASSES = len(CLASS_NAMES)
# (in, out, stride, dilation) of each 3x3 convolution.
LAYERS = [(3, 16, 2, 1), (16, 32, 2, 1), (32, 48, 2, 1), (48, 64, 1, 1), (64, 64, 1, 2), (64, 64, 1, 4)]
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
    params["head_w"] = (rng.standard_normal((1, 1, HEAD_IN, 4 + NUM_CLASSES)) * 0.01).astype(np.float32)
    bias = np.zeros((4 + NUM_CLASSES,), np.float32)
    bias[4:] = -np.log((1 - PRIOR) / PRIOR)
    params["head_b"] = bias
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
