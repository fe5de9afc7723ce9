"""Converts the real football-players-detection set (YOLO labels) into the dataset.py format.

The set (CC BY 4.0, see ../MODEL_CARD.md for the attribution) lives beside the
repository in ../shared/datasets/football-players-detection: 1920x1080 JPEG
frames and YOLO labels `class cx cy w h` (normalised) with class ids
0 ball, 1 goalkeeper, 2 player, 3 referee. They are remapped to the detector's
order (0 player, 1 goalkeeper, 2 referee, 3 ball). Frames are split by match
(the file-name prefix before the first `_`) as split.json says; nothing of the
set is written into the repository.

Output folder (same as dataset.py):
    images.npy   uint8 [N, 1080, 1920, 3], RGB
    labels.npy   float32 [M, 7]: frame, class, x1, y1, x2, y2 (pixels), visibility (1)
    meta.json    matches, file names

Usage:
    python real_dataset.py --src ../../../../../shared/datasets/football-players-detection \
        --part train --out /tmp/player-detector/real-train
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np
from PIL import Image

# Dataset class id -> detector class id (0 player, 1 goalkeeper, 2 referee, 3 ball).
CLASS_MAP = {0: 3, 1: 1, 2: 0, 3: 2}
SPLIT = json.loads((Path(__file__).parent / "split.json").read_text())


def match_of(name: str) -> str:
    return name.split("_", 1)[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--src", required=True, type=Path)
    ap.add_argument("--part", required=True, choices=["train", "validation"])
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args()
    images_dir, labels_dir = args.src / "images", args.src / "labels"
    if not images_dir.is_dir() or not labels_dir.is_dir():
        raise SystemExit(f"no images/ and labels/ under {args.src}")
    matches = set(SPLIT["train_matches" if args.part == "train" else "validation_matches"])
    files = sorted(p for p in images_dir.glob("*.jpg") if match_of(p.name) in matches)
    if not files:
        raise SystemExit(f"no frames of matches {sorted(matches)} in {images_dir}")
    with Image.open(files[0]) as first:
        width, height = first.size
    args.out.mkdir(parents=True, exist_ok=True)
    tmp = args.out / "images.npy.partial"
    images = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.uint8, shape=(len(files), height, width, 3))
    labels = []
    for f, path in enumerate(files):
        with Image.open(path) as im:
            if im.size != (width, height):
                raise SystemExit(f"{path.name}: {im.size}, expected {(width, height)}")
            images[f] = np.asarray(im.convert("RGB"))
        rows = np.loadtxt(labels_dir / (path.stem + ".txt"), ndmin=2)
        for c, cx, cy, w, h in rows:
            labels.append([f, CLASS_MAP[int(c)], (cx - w / 2) * width, (cy - h / 2) * height,
                           (cx + w / 2) * width, (cy + h / 2) * height, 1.0])
    images.flush()
    del images
    os.replace(tmp, args.out / "images.npy")
    np.save(args.out / "labels.npy", np.asarray(labels, np.float32))
    (args.out / "meta.json").write_text(json.dumps({
        "source": "football-players-detection (CC BY 4.0)", "part": args.part, "matches": sorted(matches),
        "frames": len(files), "boxes": len(labels), "width": width, "height": height,
        "files": [p.name for p in files],
    }, indent=2))
    print(f"{args.part}: {len(files)} frames, {len(labels)} boxes -> {args.out}")


if __name__ == "__main__":
    main()
