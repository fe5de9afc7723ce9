"""Precision and recall of the exported ONNX detector on a held-out dataset.

Runs onnxruntime (CPU) on every frame of a dataset made by dataset.py (use
seeds not used for training), letterboxes each frame to the model input
(grey 114, centred), keeps per class the boxes scoring at least --score,
applies per-class non-maximum suppression (IoU 0.5), and matches detections
greedily by score to ground-truth boxes of the same class at IoU >= --iou.
Ground-truth boxes with visibility < 0.25 (mostly hidden) are "ignore":
they count neither as misses nor, when matched, as false positives. For the
ball, whose boxes are 3-6 px wide, a second criterion is reported too: a
detection matches when its centre is within 4 px of the true centre.

Usage:
    python evaluate.py --model ../player-detector.onnx --data data/heldout --out metrics.json
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort

from model import CLASS_NAMES

MIN_VISIBILITY = 0.25
BALL_CENTRE_PX = 4


def letterbox(img: np.ndarray, height: int, width: int) -> tuple[np.ndarray, float, float, float]:
    h, w, _ = img.shape
    scale = min(width / w, height / h)
    nw, nh = round(w * scale), round(h * scale)
    if (nw, nh) != (w, h):
        ys = np.minimum((np.arange(nh) / scale).astype(int), h - 1)
        xs = np.minimum((np.arange(nw) / scale).astype(int), w - 1)
        img = img[ys][:, xs]
    out = np.full((height, width, 3), 114, np.uint8)
    px, py = (width - nw) // 2, (height - nh) // 2
    out[py : py + nh, px : px + nw] = img
    return out, scale, px, py


def iou(box: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    x1 = np.maximum(box[0], boxes[:, 0])
    y1 = np.maximum(box[1], boxes[:, 1])
    x2 = np.minimum(box[2], boxes[:, 2])
    y2 = np.minimum(box[3], boxes[:, 3])
    inter = np.clip(x2 - x1, 0, None) * np.clip(y2 - y1, 0, None)
    a = (box[2] - box[0]) * (box[3] - box[1])
    b = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    return inter / np.maximum(a + b - inter, 1e-9)


def nms(boxes: np.ndarray, scores: np.ndarray, threshold: float) -> list[int]:
    order = np.argsort(-scores)
    keep: list[int] = []
    while len(order):
        i = int(order[0])
        keep.append(i)
        if len(order) == 1:
            break
        rest = order[1:]
        order = rest[iou(boxes[i], boxes[rest]) < threshold]
    return keep


def detect(session: ort.InferenceSession, frame: np.ndarray, score: float) -> list[tuple[int, float, np.ndarray]]:
    """Detections (class, score, x1 y1 x2 y2 in frame pixels) of one RGB frame."""
    _, _, height, width = session.get_inputs()[0].shape
    img, scale, px, py = letterbox(frame, height, width)
    x = (img.astype(np.float32) / 255.0).transpose(2, 0, 1)[None]
    out = session.run(None, {"images": x})[0][0]  # [4 + C, N]
    cx, cy, w, h = out[:4]
    scores = out[4:]
    xyxy = np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], 1)
    xyxy[:, [0, 2]] = (xyxy[:, [0, 2]] - px) / scale
    xyxy[:, [1, 3]] = (xyxy[:, [1, 3]] - py) / scale
    dets = []
    for c in range(scores.shape[0]):
        sel = np.nonzero(scores[c] >= score)[0]
        if len(sel) == 0:
            continue
        for k in nms(xyxy[sel], scores[c, sel], 0.5)[:100]:
            dets.append((c, float(scores[c, sel[k]]), xyxy[sel[k]]))
    return dets


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, type=Path)
    ap.add_argument("--data", required=True, type=Path)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--score", type=float, default=0.3)
    ap.add_argument("--iou", type=float, default=0.5)
    args = ap.parse_args()
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    session = ort.InferenceSession(str(args.model), opts, providers=["CPUExecutionProvider"])
    images = np.load(args.data / "images.npy", mmap_mode="r")
    labels = np.load(args.data / "labels.npy")
    C = len(CLASS_NAMES)
    tp = np.zeros(C, int)
    fp = np.zeros(C, int)
    fn = np.zeros(C, int)
    ball_centre = {"tp": 0, "fp": 0, "fn": 0}
    started = time.time()
    for f in range(len(images)):
        gt = labels[labels[:, 0] == f]
        dets = detect(session, np.asarray(images[f]), args.score)
        for c in range(C):
            g = gt[gt[:, 1] == c]
            gboxes = g[:, 2:6]
            ignore = g[:, 6] < MIN_VISIBILITY
            used = np.zeros(len(g), bool)
            for _, _, box in sorted([d for d in dets if d[0] == c], key=lambda d: -d[1]):
                if len(g) == 0:
                    fp[c] += 1
                    continue
                ious = iou(box, gboxes)
                ious[used] = -1
                k = int(np.argmax(ious))
                if ious[k] >= args.iou:
                    used[k] = True
                    if not ignore[k]:
                        tp[c] += 1
                elif not (ignore.any() and np.any(iou(box, gboxes[ignore]) >= args.iou)):
                    fp[c] += 1
            fn[c] += int(np.sum(~used & ~ignore))
            if CLASS_NAMES[c] == "ball":
                # Secondary criterion for the 3-6 px ball: centre within BALL_CENTRE_PX of the truth.
                centres = (gboxes[:, :2] + gboxes[:, 2:]) / 2
                taken = np.zeros(len(g), bool)
                for _, _, box in sorted([d for d in dets if d[0] == c], key=lambda d: -d[1]):
                    dist = np.hypot(*(centres - (box[:2] + box[2:]) / 2).T) if len(g) else np.zeros(0)
                    dist[taken] = np.inf
                    k = int(np.argmin(dist)) if len(g) else -1
                    if k >= 0 and dist[k] <= BALL_CENTRE_PX:
                        taken[k] = True
                        ball_centre["tp"] += int(not ignore[k])
                    else:
                        ball_centre["fp"] += 1
                ball_centre["fn"] += int(np.sum(~taken & ~ignore))
    elapsed = time.time() - started
    per_class = {
        name: {
            "precision": float(tp[c] / max(tp[c] + fp[c], 1)),
            "recall": float(tp[c] / max(tp[c] + fn[c], 1)),
            "tp": int(tp[c]), "fp": int(fp[c]), "fn": int(fn[c]),
        }
        for c, name in enumerate(CLASS_NAMES)
    }
    T, F, N = tp.sum(), fp.sum(), fn.sum()
    result = {
        "model": args.model.name,
        "data": str(args.data),
        "frames": len(images),
        "score_threshold": args.score,
        "iou_threshold": args.iou,
        "overall": {"precision": float(T / max(T + F, 1)), "recall": float(T / max(T + N, 1)), "tp": int(T), "fp": int(F), "fn": int(N)},
        "per_class": per_class,
        f"ball_centre_within_{BALL_CENTRE_PX}px": {
            "precision": ball_centre["tp"] / max(ball_centre["tp"] + ball_centre["fp"], 1),
            "recall": ball_centre["tp"] / max(ball_centre["tp"] + ball_centre["fn"], 1),
            **ball_centre,
        },
        "ms_per_frame": 1000 * elapsed / max(len(images), 1),
    }
    print(json.dumps(result, indent=2))
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
