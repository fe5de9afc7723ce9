"""Crops at a chosen scale and photometric augmentations that imitate fixed wide cameras.

A training crop is a square window of `crop / scale` source pixels resized to
`crop` x `crop` (area or bilinear filter, as ffmpeg's `scale=...:flags=area`
in the detect stage or a bilinear letterbox would), so one frame yields
people of many heights: real 1920x1080 frames (players ~57 px tall) at scale
0.3-1.0 give players of ~17-57 px, as a fixed wide rig sees them.
Then, each with its own chance: horizontal flip; brightness, contrast,
saturation and per-channel gain jitter (a camera's exposure and white
balance); Gaussian sensor noise; Gaussian blur (focus, motion); JPEG
re-compression at quality 20-80 (the blocking and ringing of H.264/JPEG
at low bitrates).
"""
from __future__ import annotations

import io

import numpy as np
from PIL import Image, ImageFilter


def scaled_crop(
    image: np.ndarray, boxes: np.ndarray, x0: float, y0: float, crop: int, scale: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Window (x0, y0, x0 + crop/scale, y0 + crop/scale) of `image` (uint8 HxWx3) resized to crop x crop.

    boxes [K, 6] (class, x1, y1, x2, y2, visibility) in source pixels -> crop pixels.
    """
    win = crop / scale
    boxes = boxes.copy()
    boxes[:, [1, 3]] = (boxes[:, [1, 3]] - x0) * scale
    boxes[:, [2, 4]] = (boxes[:, [2, 4]] - y0) * scale
    if abs(scale - 1.0) < 1e-6 and float(x0).is_integer() and float(y0).is_integer():
        xi, yi = int(x0), int(y0)
        return np.asarray(image[yi : yi + crop, xi : xi + crop]), boxes
    h, w, _ = image.shape
    ix0, iy0 = int(np.floor(x0)), int(np.floor(y0))
    ix1, iy1 = min(w, int(np.ceil(x0 + win)) + 1), min(h, int(np.ceil(y0 + win)) + 1)
    region = Image.fromarray(np.ascontiguousarray(image[iy0:iy1, ix0:ix1]))
    resample = Image.Resampling.BOX if scale < 1 and rng.random() < 0.5 else Image.Resampling.BILINEAR
    rw, rh = region.size
    box = (x0 - ix0, y0 - iy0, min(rw, x0 - ix0 + win), min(rh, y0 - iy0 + win))
    out = region.resize((crop, crop), resample, box=box)
    return np.asarray(out), boxes


def photometric(img: np.ndarray, rng: np.random.Generator, strength: float = 1.0) -> np.ndarray:
    """uint8 crop -> float32 0..1 crop with colour jitter, noise, blur and JPEG compression."""
    x = img.astype(np.float32) / 255.0
    x = x * rng.uniform(1 - 0.25 * strength, 1 + 0.25 * strength)
    mean = x.mean()
    x = (x - mean) * rng.uniform(1 - 0.25 * strength, 1 + 0.25 * strength) + mean
    grey = x.mean(-1, keepdims=True)
    x = grey + (x - grey) * rng.uniform(1 - 0.3 * strength, 1 + 0.3 * strength)
    x = x * rng.uniform(1 - 0.08 * strength, 1 + 0.08 * strength, size=3) + rng.uniform(-0.05, 0.05) * strength
    if rng.random() < 0.2 * strength:
        x = x + rng.normal(0, rng.uniform(0.005, 0.02), x.shape)
    out = Image.fromarray((np.clip(x, 0, 1) * 255 + 0.5).astype(np.uint8))
    if rng.random() < 0.25 * strength:
        out = out.filter(ImageFilter.GaussianBlur(rng.uniform(0.3, 1.0)))
    if rng.random() < 0.4 * strength:
        buf = io.BytesIO()
        out.save(buf, "JPEG", quality=int(rng.integers(20, 81)))
        buf.seek(0)
        out = Image.open(buf).convert("RGB")
    return np.asarray(out, np.float32) / 255.0
