"""Hard negatives: where a detector fires on a dataset's frames with nothing labelled there.

Runs an exported detector (evaluate.py's `Model`: letterboxed to its nominal input, onnxruntime CPU)
on every frame of a dataset (dataset.py / real_dataset.py format), keeps the people and ball boxes
scoring >= --min-score after NMS (evaluate.py's `detections`; `people` by default, `--groups people,ball`
for the ball's false boxes too), and writes those whose IoU with every labelled box of the frame is below
--max-iou to `negatives.npy` in the dataset folder:
float32 [K, 6] = frame, x1, y1, x2, y2 (frame pixels), score.

train.py (`--negatives P`) centres that share of its crops of such a source on one of these boxes,
so that what the model mistakes for a person or a ball (on the real training matches: the letters of
a broadcaster's watermark, turf lettering, advertising boards; unlabelled people such as coaches are
mined too and stay background, as the labels have them) is seen as background far more often than
uniform crops would show it (hard-negative mining, Felzenszwalb et al. 2010; Shrivastava et al. 2016).

Usage:
    python mine_negatives.py --model ../player-detector.onnx --data $WORK/real-train
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from evaluate import Model, detections, iou

def mine(
    model: Model, images: np.ndarray, labels: np.ndarray, min_score: float, max_iou: float, groups: list[str]
) -> np.ndarray:
    """[K, 6] (frame, x1, y1, x2, y2, score) of `groups` detections >= min_score overlapping no label by max_iou
    or more."""
    rows = []
    for f in range(len(images)):
        truth = labels[labels[:, 0] == f][:, 2:6]
        xyxy, scores = model.raw(np.asarray(images[f]))
        found = detections(xyxy, scores, min_score)
        for group in groups:
            for score, box in found[group]:
                overlap = iou(box, truth).max() if len(truth) else 0.0
                if overlap < max_iou:
                    rows.append([f, *box.tolist(), score])
    return np.asarray(rows, np.float32).reshape(-1, 6)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, type=Path)
    ap.add_argument("--data", required=True, type=Path, help="dataset folder; negatives.npy is written there")
    ap.add_argument("--min-score", type=float, default=0.3)
    ap.add_argument("--max-iou", type=float, default=0.1)
    ap.add_argument(
        "--groups", default="people",
        help="evaluate.py groups whose false boxes are mined, comma-separated (people, ball, or a class); the "
        "ball's were tried for 3.2 and cost the ball track on held-out samples",
    )
    args = ap.parse_args()
    images = np.load(args.data / "images.npy", mmap_mode="r")
    labels = np.load(args.data / "labels.npy")
    negatives = mine(Model(args.model), images, labels, args.min_score, args.max_iou, args.groups.split(","))
    np.save(args.data / "negatives.npy", negatives)
    frames = len(np.unique(negatives[:, 0])) if len(negatives) else 0
    print(f"{len(negatives)} hard negatives >= {args.min_score} in {frames} of {len(images)} frames -> {args.data}")


if __name__ == "__main__":
    main()
