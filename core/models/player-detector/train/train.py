"""Trains the player detector (model.py) on a dataset made by dataset.py.

Each step takes a batch of random crops from one or more datasets (most
centred near an object, rarer classes favoured; each source with its share
and its range of crop scales), flips and colour jitter (or, with --augment,
the wide-camera augmentations of augment.py), builds anchor-free targets
(FCOS-style centre sampling on the stride-8 grid) and minimises
    focal loss (Lin et al. 2017, alpha 0.25, gamma 2) on the class scores
  + 2 x L1 on (dx, dy, log w/8, log h/8) of the positive cells,
both normalised by the number of positive cells, with Adam and a cosine
learning-rate schedule. Deterministic for a seed (numpy + JAX on CPU).

Usage:
    python train.py --data data/train --out work/params.npz --steps 3000
    python train.py --data data/train:0.5:0.5-1 --data data/real-train:0.5:0.3-1 --augment 1 \
        --init work/params-ft.npz --out work/params-mixed.npz --steps 4000
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax

from augment import photometric, scaled_crop
from model import NUM_CLASSES, STRIDE, forward, init_params, params_from_onnx, with_residual

# Sampling weight of a crop centred on an object of each class (player, goalkeeper, referee, ball).
CLASS_SAMPLING = np.array([1.0, 4.0, 4.0, 6.0])
MIN_VISIBILITY = 0.25


BALL = 3


def build_targets(boxes: np.ndarray, crop: int, ball_radius_cells: int = 0):
    """boxes [K, 6]: class, x1, y1, x2, y2, visibility in crop pixels (unclipped).

    Returns cls [g, g, C], box [g, g, 4], pos [g, g], valid [g, g] with g = crop / 8.
    A cell is positive for a box when its centre lies within max(4 px, 0.25 w)
    horizontally and max(4 px, 0.3 h) vertically of the box centre (the cell
    holding the centre always is; for the ball, also the cells within
    `ball_radius_cells` of it); smaller boxes win ties. Cells inside boxes
    that are mostly hidden or cut by the crop are ignored (valid = 0).
    """
    g = crop // STRIDE
    cls = np.zeros((g, g, NUM_CLASSES), np.float32)
    tgt = np.zeros((g, g, 4), np.float32)
    pos = np.zeros((g, g), np.float32)
    valid = np.ones((g, g), np.float32)
    centres = (np.arange(g) + 0.5) * STRIDE
    order = np.argsort(-(boxes[:, 3] - boxes[:, 1]) * (boxes[:, 4] - boxes[:, 2])) if len(boxes) else []
    for k in order:
        c, x1, y1, x2, y2, vis = boxes[k]
        cx1, cy1, cx2, cy2 = max(x1, 0), max(y1, 0), min(x2, crop), min(y2, crop)
        if cx2 - cx1 < 1 or cy2 - cy1 < 1:
            continue
        full = (x2 - x1) * (y2 - y1)
        inside = (cx2 - cx1) * (cy2 - cy1) / max(full, 1e-6)
        cols = (centres >= cx1) & (centres <= cx2)
        rows = (centres >= cy1) & (centres <= cy2)
        if vis < MIN_VISIBILITY or inside < 0.6:
            valid[np.ix_(rows, cols)] = 0
            continue
        bx, by, w, h = (x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1
        sel_c = np.abs(centres - bx) <= max(4.0, 0.25 * w)
        sel_r = np.abs(centres - by) <= max(4.0, 0.3 * h)
        jc, ic = int(bx // STRIDE), int(by // STRIDE)
        rad = ball_radius_cells if int(c) == BALL else 0
        sel_c[max(0, jc - rad) : max(0, min(g, jc + rad + 1))] = True
        sel_r[max(0, ic - rad) : max(0, min(g, ic + rad + 1))] = True
        ii, jj = np.nonzero(np.outer(sel_r, sel_c))
        keep = (ii < g) & (jj < g)
        ii, jj = ii[keep], jj[keep]
        cls[ii, jj] = 0
        cls[ii, jj, int(c)] = 1
        tgt[ii, jj, 0] = bx / STRIDE - (jj + 0.5)
        tgt[ii, jj, 1] = by / STRIDE - (ii + 0.5)
        tgt[ii, jj, 2] = np.log(max(w, 1.0) / STRIDE)
        tgt[ii, jj, 3] = np.log(max(h, 1.0) / STRIDE)
        pos[ii, jj] = 1
        valid[ii, jj] = 1
    return cls, tgt, pos, valid


class Source:
    """One dataset (dataset.py / real_dataset.py format) with its share of crops and its scale range."""

    def __init__(self, spec: str, class_sampling: np.ndarray):
        path, _, rest = spec.partition(":")
        weight, _, scales = rest.partition(":")
        self.path = Path(path)
        self.weight = float(weight or 1)
        lo, _, hi = (scales or "1-1").partition("-")
        self.scale_range = (float(lo), float(hi or lo))
        self.images = np.load(self.path / "images.npy", mmap_mode="r")
        labels = np.load(self.path / "labels.npy")
        self.by_frame = [labels[labels[:, 0] == f, 1:] for f in range(len(self.images))]
        self.labels = labels
        weights = class_sampling[labels[:, 1].astype(int)] * (labels[:, 6] >= MIN_VISIBILITY)
        self.object_p = weights / weights.sum()
        # Hard negatives (mine_negatives.py): frame, x1, y1, x2, y2, score where a model fired on no label.
        negatives = self.path / "negatives.npy"
        self.negatives = np.load(negatives) if negatives.exists() else np.zeros((0, 6), np.float32)


class Sampler:
    """Random training crops from one or more sources (see --data)."""

    def __init__(
        self, sources: list[str], crop: int, seed: int, class_sampling: np.ndarray = CLASS_SAMPLING,
        ball_radius_cells: int = 0, augment: float = 0.0, negatives: float = 0.0,
    ):
        self.ball_radius_cells = ball_radius_cells
        self.sources = [Source(spec, class_sampling) for spec in sources]
        w = np.array([src.weight for src in self.sources])
        self.source_p = w / w.sum()
        self.crop = crop
        self.augment = augment
        self.negatives = negatives
        self.rng = np.random.default_rng(seed)

    def sample(self):
        src = self.sources[self.rng.choice(len(self.sources), p=self.source_p)]
        n, height, width, _ = src.images.shape
        c = self.crop
        lo, hi = src.scale_range
        scale = float(np.exp(self.rng.uniform(np.log(lo), np.log(hi)))) if hi > lo else lo
        win = c / scale
        if self.negatives > 0 and len(src.negatives) and self.rng.random() < self.negatives:
            neg = src.negatives[self.rng.integers(len(src.negatives))]
            f = int(neg[0])
            cx = (neg[1] + neg[3]) / 2 + self.rng.uniform(-win / 3, win / 3)
            cy = (neg[2] + neg[4]) / 2 + self.rng.uniform(-win / 3, win / 3)
            x0, y0 = float(np.clip(cx - win / 2, 0, width - win)), float(np.clip(cy - win / 2, 0, height - win))
        elif self.rng.random() < 0.8:
            obj = src.labels[self.rng.choice(len(src.labels), p=src.object_p)]
            f = int(obj[0])
            cx = (obj[2] + obj[4]) / 2 + self.rng.uniform(-win / 3, win / 3)
            cy = (obj[3] + obj[5]) / 2 + self.rng.uniform(-win / 3, win / 3)
            x0, y0 = float(np.clip(cx - win / 2, 0, width - win)), float(np.clip(cy - win / 2, 0, height - win))
        else:
            f = int(self.rng.integers(n))
            x0, y0 = self.rng.uniform(0, width - win), self.rng.uniform(0, height - win)
        if scale == 1.0:
            x0, y0 = float(int(x0)), float(int(y0))
        img, boxes = scaled_crop(src.images[f], src.by_frame[f], x0, y0, c, scale, self.rng)
        if self.augment > 0:
            img = photometric(img, self.rng, self.augment)
        else:
            img = np.asarray(img, np.float32) / 255.0
            img = img * self.rng.uniform(0.8, 1.2) * self.rng.uniform(0.95, 1.05, size=3)
            img = np.clip(img + self.rng.uniform(-0.05, 0.05), 0, 1)
        if self.rng.random() < 0.5:
            img = img[:, ::-1]
            boxes[:, [1, 3]] = c - boxes[:, [3, 1]]
        return img, build_targets(boxes, c, self.ball_radius_cells)

    def batch(self, size: int):
        xs, cls, tgt, pos, valid = [], [], [], [], []
        for _ in range(size):
            img, t = self.sample()
            xs.append(img)
            cls.append(t[0])
            tgt.append(t[1])
            pos.append(t[2])
            valid.append(t[3])
        return tuple(np.stack(a).astype(np.float32) for a in (xs, cls, tgt, pos, valid))


def loss_fn(params, x, cls, tgt, pos, valid):
    raw = forward(params, x)
    logits = raw[..., 4:]
    p = jax.nn.sigmoid(logits)
    ce = optax.sigmoid_binary_cross_entropy(logits, cls)
    pt = p * cls + (1 - p) * (1 - cls)
    alpha = 0.25 * cls + 0.75 * (1 - cls)
    focal = (alpha * (1 - pt) ** 2 * ce).sum(-1) * valid
    npos = jnp.maximum(pos.sum(), 1.0)
    box = (jnp.abs(raw[..., :4] - tgt).sum(-1) * pos).sum()
    return (focal.sum() + 2.0 * box) / npos


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--data", required=True, action="append",
        help="PATH[:WEIGHT[:MIN-MAX]]: a dataset folder, its share of the crops and the range of the crop "
        "scale (output px per source px, log-uniform); repeat to mix sources",
    )
    ap.add_argument("--augment", type=float, default=0.0,
                    help="strength of the wide-camera augmentations (augment.py); 0 = the old brightness jitter only")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--crop", type=int, default=192)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--init", type=Path, help="start from these parameters (.npz of train.py, or an exported .onnx)")
    ap.add_argument(
        "--class-sampling", default="1,4,4,6",
        help="relative chance that a crop is centred on a player, goalkeeper, referee, ball",
    )
    ap.add_argument("--ball-radius-cells", type=int, default=0, help="ball positives: cells within this of its centre cell")
    ap.add_argument(
        "--residual-blocks", type=int, default=1,
        help="residual blocks at stride 8 (model.py); blocks the --init weights lack start as identities",
    )
    ap.add_argument(
        "--negatives", type=float, default=0.0,
        help="share of a source's crops centred on one of its hard negatives (negatives.npy, mine_negatives.py)",
    )
    ap.add_argument("--max-minutes", type=float, default=0, help="stop early (and save) after this long; 0 = no limit")
    args = ap.parse_args()
    sampling = np.array([float(v) for v in args.class_sampling.split(",")])
    if sampling.shape != (NUM_CLASSES,) or (sampling < 0).any():
        raise SystemExit(f"--class-sampling needs {NUM_CLASSES} non-negative numbers")
    sampler = Sampler(args.data, args.crop, args.seed, sampling, args.ball_radius_cells, args.augment, args.negatives)
    if args.init:
        if args.init.suffix == ".onnx":
            loaded = params_from_onnx(args.init)
        else:
            npz = np.load(args.init)
            loaded = {k: npz[k] for k in npz.files if k != "steps_done"}
        params = {k: jnp.asarray(v) for k, v in with_residual(loaded, args.seed, args.residual_blocks).items()}
    else:
        params = {k: jnp.asarray(v) for k, v in init_params(args.seed, args.residual_blocks).items()}
    schedule = optax.warmup_cosine_decay_schedule(0.0, args.lr, min(100, args.steps // 10), args.steps, args.lr * 0.02)
    opt = optax.chain(optax.clip_by_global_norm(10.0), optax.adam(schedule))
    state = opt.init(params)

    @jax.jit
    def step(params, state, batch):
        loss, grads = jax.value_and_grad(loss_fn)(params, *batch)
        updates, state = opt.update(grads, state, params)
        return optax.apply_updates(params, updates), state, loss

    args.out.parent.mkdir(parents=True, exist_ok=True)
    started = time.time()
    running = None
    done = 0
    for i in range(args.steps):
        batch = sampler.batch(args.batch)
        params, state, loss = step(params, state, batch)
        loss = float(loss)
        running = loss if running is None else 0.95 * running + 0.05 * loss
        done = i + 1
        if done % 25 == 0 or done == 1:
            print(f"step {done}/{args.steps} loss {running:.4f} elapsed {time.time() - started:.0f}s", flush=True)
        if done % 250 == 0:
            np.savez(args.out, **{k: np.asarray(v) for k, v in params.items()})
        if args.max_minutes and time.time() - started > args.max_minutes * 60:
            print(f"stopping after {done} steps: --max-minutes reached", flush=True)
            break
    np.savez(args.out, **{k: np.asarray(v) for k, v in params.items()}, steps_done=np.array(done))
    print(f"saved {args.out} after {done} steps in {time.time() - started:.0f}s")


if __name__ == "__main__":
    main()
