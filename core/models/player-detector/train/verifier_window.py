"""The verifiers' windows: what part of the frame each verifier sees for a box, sampled how (verifier.py).

The detect stage samples windows the same way (core/src/workers/detect/verify/window.ts); evaluate.py
uses this file to score the verifiers' rescoring as the stage does it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image

PAD = 114.0
# The box deltas (dx, dy in box widths / heights, log width and height ratios) are predicted divided by these.
DELTA_SCALE = (0.1, 0.1, 0.2, 0.2)


@dataclass(frozen=True)
class Spec:
    """A verifier's window: `width` x `height` input pixels, centred on the box, `context` x max(box height,
    box width x height / width, `min_extent` frame px) tall and width / height of that wide; its fused score
    is detector ** (1 - weight) * verifier ** weight."""

    name: str
    width: int
    height: int
    context: float
    min_extent: float
    weight: float


# People: a tall window, 1.6 x max(box height, 2 x box width); the fused score leans on the detector.
PERSON = Spec("person", 32, 64, 1.6, 1.0, 0.3)
# The ball (~7 px in a 1280 x 720 analysed frame): a square 6 x its size, at least 36 frame px, so the
# window holds the grass, lines and boots around it; the geometric mean of both scores.
BALL = Spec("ball", 32, 32, 6.0, 6.0, 0.5)
SPECS = {s.name: s for s in (PERSON, BALL)}


def window(box: np.ndarray, spec: Spec = PERSON, scale: float = 1.0) -> tuple[float, float, float, float]:
    """The window of a box (x1, y1, x2, y2, px of a frame `scale` x the size the detector saw): x0, y0, x1, y1."""
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    tall = spec.context * max(box[3] - box[1], (box[2] - box[0]) * spec.height / spec.width, spec.min_extent / scale)
    wide = tall * spec.width / spec.height
    return cx - wide / 2, cy - tall / 2, cx + wide / 2, cy + tall / 2


def sample(image: np.ndarray, x0: float, y0: float, x1: float, y1: float, spec: Spec = PERSON) -> np.ndarray:
    """float32 [height, width, 3] bilinear samples of (x0, y0)-(x1, y1) of a uint8 HxWx3 image at the
    output pixel centres (x = x0 + (i + 0.5)(x1 - x0) / width - 0.5 in pixel-centre coordinates); a
    neighbour outside the image counts as grey 114."""
    h, w, _ = image.shape
    xs = x0 + (np.arange(spec.width) + 0.5) * (x1 - x0) / spec.width - 0.5
    ys = y0 + (np.arange(spec.height) + 0.5) * (y1 - y0) / spec.height - 0.5
    xf, yf = np.floor(xs).astype(int), np.floor(ys).astype(int)
    ax, ay = (xs - xf)[None, :, None], (ys - yf)[:, None, None]

    def at(yy: np.ndarray, xx: np.ndarray) -> np.ndarray:
        inside = ((yy >= 0) & (yy < h))[:, None] & ((xx >= 0) & (xx < w))[None, :]
        v = np.asarray(image[np.clip(yy, 0, h - 1)][:, np.clip(xx, 0, w - 1)], np.float32)
        v[~inside] = PAD
        return v

    return (at(yf, xf) * (1 - ax) * (1 - ay) + at(yf, xf + 1) * ax * (1 - ay)
            + at(yf + 1, xf) * (1 - ax) * ay + at(yf + 1, xf + 1) * ax * ay)


def crop(image: np.ndarray, box: np.ndarray, decode: float = 1.0, jitter=(0.0, 0.0, 0.0), spec: Spec = PERSON) -> np.ndarray:
    """uint8 [height, width, 3] window of `box` as the detect stage sees it in a frame decoded at `decode`
    x the source size (area filter); `jitter` = (dx, dy in box widths / heights, log size)."""
    bw, bh = box[2] - box[0], box[3] - box[1]
    moved = np.array([box[0] + jitter[0] * bw, box[1] + jitter[1] * bh, box[2] + jitter[0] * bw, box[3] + jitter[1] * bh])
    x0, y0, x1, y1 = window(moved, spec, decode)
    cx, cy, k = (x0 + x1) / 2, (y0 + y1) / 2, float(np.exp(jitter[2]))
    x0, x1, y0, y1 = cx + (x0 - cx) * k, cx + (x1 - cx) * k, cy + (y0 - cy) * k, cy + (y1 - cy) * k
    if decode < 1:
        h, w, _ = image.shape
        px0, py0 = max(0, int(np.floor(x0)) - 2), max(0, int(np.floor(y0)) - 2)
        px1, py1 = min(w, int(np.ceil(x1)) + 2), min(h, int(np.ceil(y1)) + 2)
        if px1 - px0 < 4 or py1 - py0 < 4:
            return np.full((spec.height, spec.width, 3), PAD, np.uint8)
        pw, ph = max(2, round((px1 - px0) * decode)), max(2, round((py1 - py0) * decode))
        patch = np.asarray(Image.fromarray(np.ascontiguousarray(image[py0:py1, px0:px1])).resize((pw, ph), Image.Resampling.BOX))
        kx, ky = pw / (px1 - px0), ph / (py1 - py0)
        out = sample(patch, (x0 - px0) * kx, (y0 - py0) * ky, (x1 - px0) * kx, (y1 - py0) * ky, spec)
        # The patch ends at the frame's edges; beyond them the stage samples grey.
        gx = x0 + (np.arange(spec.width) + 0.5) * (x1 - x0) / spec.width
        gy = y0 + (np.arange(spec.height) + 0.5) * (y1 - y0) / spec.height
        out[(gy < 0) | (gy > h)] = PAD
        out[:, (gx < 0) | (gx > w)] = PAD
    else:
        out = sample(image, x0, y0, x1, y1, spec)
    return (out + 0.5).astype(np.uint8)
