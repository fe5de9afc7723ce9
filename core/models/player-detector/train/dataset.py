"""Builds a detector dataset from the TypeScript synthetic match generator.

For each seed it runs `pnpm polyvision synth-match` (through
`node deploy/src/cli/main.ts`, so Node 24 must be first on PATH) with rig
parameters varied by seed, decodes every camera MP4 with ffmpeg into raw
RGB frames, and reads the MOTChallenge ground truth (gt/camera-<i>.mot.txt).

Output folder:
    images.npy   uint8 [N, H, W, 3], RGB, memory-mapped
    labels.npy   float32 [M, 7]: frame index, class (0 player, 1 goalkeeper,
                 2 referee, 3 ball), x1, y1, x2, y2 (pixels), visibility
    meta.json    seeds, rig parameters, sizes

Usage:
    python dataset.py --out data/train --seeds 100-111
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[4]


def parse_seeds(text: str) -> list[int]:
    seeds: list[int] = []
    for part in text.split(","):
        if "-" in part:
            a, b = part.split("-")
            seeds.extend(range(int(a), int(b) + 1))
        else:
            seeds.append(int(part))
    return seeds


def rig_for_seed(seed: int) -> dict[str, int]:
    """Varies the rig with the seed so that the detector sees several focal lengths and angles."""
    return {
        "cameras": 2 + seed % 3,
        "rig_height": 15 + (seed * 7) % 11,
        "rig_setback": 20 + (seed * 13) % 21,
    }


def generate_clip(seed: int, out: Path, args: argparse.Namespace) -> dict[str, int]:
    rig = rig_for_seed(seed)
    cmd = [
        "node", str(REPO / "deploy/src/cli/main.ts"), "synth-match",
        "--cameras", str(rig["cameras"]), "--duration", str(args.duration), "--fps", str(args.fps),
        "--width", str(args.width), "--height", str(args.height), "--seed", str(seed),
        "--rig-height", str(rig["rig_height"]), "--rig-setback", str(rig["rig_setback"]),
        "--out", str(out), "--quiet",
    ]
    subprocess.run(cmd, check=True, cwd=REPO)
    return rig


def decode(video: Path, width: int, height: int) -> np.ndarray:
    raw = subprocess.run(
        ["ffmpeg", "-v", "error", "-i", str(video), "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
        check=True, capture_output=True,
    ).stdout
    return np.frombuffer(raw, np.uint8).reshape(-1, height, width, 3)


def read_mot(path: Path) -> np.ndarray:
    """MOT rows -> [K, 7]: frame (0-based), class (0-based), x1, y1, x2, y2, visibility."""
    rows = np.loadtxt(path, delimiter=",", ndmin=2)
    out = np.zeros((len(rows), 7), np.float32)
    out[:, 0] = rows[:, 0] - 1
    out[:, 1] = rows[:, 7] - 1
    out[:, 2] = rows[:, 2]
    out[:, 3] = rows[:, 3]
    out[:, 4] = rows[:, 2] + rows[:, 4]
    out[:, 5] = rows[:, 3] + rows[:, 5]
    out[:, 6] = rows[:, 8]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--seeds", required=True)
    ap.add_argument("--duration", type=float, default=20)
    ap.add_argument("--fps", type=int, default=2)
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--height", type=int, default=720)
    args = ap.parse_args()
    seeds = parse_seeds(args.seeds)
    args.out.mkdir(parents=True, exist_ok=True)
    frames_per_cam = max(1, round(args.duration * args.fps))
    total = sum(rig_for_seed(s)["cameras"] for s in seeds) * frames_per_cam
    tmp_images = args.out / "images.npy.partial"
    images = np.lib.format.open_memmap(tmp_images, mode="w+", dtype=np.uint8, shape=(total, args.height, args.width, 3))
    labels: list[np.ndarray] = []
    rigs = {}
    n = 0
    with tempfile.TemporaryDirectory(prefix="pv-dataset-") as tmp:
        for seed in seeds:
            clip = Path(tmp) / f"seed-{seed}"
            rigs[seed] = generate_clip(seed, clip, args)
            for cam in range(rigs[seed]["cameras"]):
                frames = decode(clip / f"camera-{cam}.mp4", args.width, args.height)
                if len(frames) != frames_per_cam:
                    raise SystemExit(f"seed {seed} camera {cam}: {len(frames)} frames, expected {frames_per_cam}")
                images[n : n + len(frames)] = frames
                mot = read_mot(clip / "gt" / f"camera-{cam}.mot.txt")
                mot[:, 0] += n
                labels.append(mot)
                n += len(frames)
            print(f"seed {seed}: {rigs[seed]} -> {n}/{total} frames", flush=True)
    images.flush()
    del images
    os.replace(tmp_images, args.out / "images.npy")
    np.save(args.out / "labels.npy", np.concatenate(labels))
    (args.out / "meta.json").write_text(json.dumps({
        "seeds": seeds, "rigs": rigs, "frames": n, "width": args.width, "height": args.height,
        "fps": args.fps, "duration_s": args.duration,
    }, indent=2))


if __name__ == "__main__":
    main()
