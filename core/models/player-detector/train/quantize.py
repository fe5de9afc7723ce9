"""Writes the int8 rendition of the player detector for CPU workers (static post-training quantization).

onnxruntime's static quantization (`onnxruntime.quantization.quantize_static`, QDQ format,
https://onnxruntime.ai/docs/performance/model-optimizations/quantization.html): weights int8 per
output channel, activations uint8 per tensor with ranges from MinMax calibration on training
frames. The backbone after its first layer (convolutions, ReLUs and the residual add before the
head) is quantized. Float32 stay: the first convolution (3 input channels at the full input
resolution: in int8 it needs the whole image quantized first, and was both slower — 34 against
31 ms per 3456x480 strip — and a worse tracker input on the synthetic demo, HOTA 78.6 against
78.9, fp32 79.1), the 1x1 head and the in-graph box decoding (exp, sigmoid, cell grid), so scores
and box sizes are not rounded to 256 levels. The input height and width stay symbolic.

Calibration frames are training frames only (never the validation matches): real frames of
real_dataset.py's `train` part and synthetic renders of dataset.py, each letterboxed into the
detect stage's typical fitted tile (480 x 1280) at the scales the stage feeds them (1080p at 2/3
and smaller; synthetic renders up to 1.2x, blurred by the bilinear upscale as the panorama's tiles
are), grey 114 padding, RGB / 255 like the stage.

The script then compares the rendition with the float model on validation frames (cells above the
card's `high` score in both, mean score difference) and records the rendition in the model card
(`renditions` in metrics.json: file, precision, sha256, source sha256, that agreement), which is
how the tracker knows the card's thresholds apply to the rendition's detections too.

Usage:
    python quantize.py --model ../player-detector.onnx --out ../player-detector-int8.onnx \
        --data /tmp/player-detector/real-train --data /tmp/player-detector/train \
        --check /tmp/player-detector/real-val --card ../metrics.json
"""
from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnxruntime.quantization import CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType, quantize_static
from PIL import Image

TILE_HEIGHT, TILE_WIDTH = 480, 1280
PAD = 114


def letterbox(rgb: np.ndarray, scale: float) -> np.ndarray:
    """One frame (uint8 HxWx3, RGB) scaled by `scale` x the fit to the tile, centred on grey 114: float32 [1,3,H,W] / 255."""
    h, w = rgb.shape[:2]
    s = min(TILE_WIDTH / w, TILE_HEIGHT / h) * scale
    nw, nh = max(1, round(w * s)), max(1, round(h * s))
    img = np.asarray(Image.fromarray(rgb).resize((nw, nh), Image.BILINEAR))
    out = np.full((TILE_HEIGHT, TILE_WIDTH, 3), PAD, np.uint8)
    ch, cw = min(nh, TILE_HEIGHT), min(nw, TILE_WIDTH)
    y0, x0 = (TILE_HEIGHT - ch) // 2, (TILE_WIDTH - cw) // 2
    out[y0 : y0 + ch, x0 : x0 + cw] = img[:ch, :cw]
    return np.ascontiguousarray((out.astype(np.float32) / 255).transpose(2, 0, 1)[None])


def calibration_inputs(folders: list[Path], frames_per_set: int, scales: list[float]) -> list[np.ndarray]:
    """`frames_per_set` frames spread over each folder's images.npy, each at one of `scales` in turn."""
    inputs = []
    for folder in folders:
        images = np.load(folder / "images.npy", mmap_mode="r")
        picks = np.linspace(0, len(images) - 1, num=min(frames_per_set, len(images))).round().astype(int)
        for i, frame in enumerate(picks):
            inputs.append(letterbox(np.asarray(images[frame]), scales[i % len(scales)]))
    return inputs


class Frames(CalibrationDataReader):
    def __init__(self, inputs: list[np.ndarray], name: str) -> None:
        self._it = iter([{name: x} for x in inputs])

    def get_next(self):
        return next(self._it, None)


def backbone_nodes(model: onnx.ModelProto, keep_float: set[str]) -> list[str]:
    """Every Conv, Relu and Add before the head convolution (the graph's node order is topological), but `keep_float`."""
    names = []
    for node in model.graph.node:
        if node.op_type == "Conv" and node.name == "head":
            break
        if node.op_type in ("Conv", "Relu", "Add") and node.name not in keep_float:
            names.append(node.name)
    return names


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def agreement(float_path: Path, int8_path: Path, inputs: list[np.ndarray], high: float) -> dict[str, float]:
    """Cells whose best person score is >= `high`: in the float model, in the rendition, in both; mean |score difference| there."""
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    a = ort.InferenceSession(str(float_path), opts, providers=["CPUExecutionProvider"])
    b = ort.InferenceSession(str(int8_path), opts, providers=["CPUExecutionProvider"])
    name = a.get_inputs()[0].name
    n_float = n_int8 = n_both = 0
    diffs = []
    for x in inputs:
        pa = a.run(None, {name: x})[0][0][4:7].max(0)
        pb = b.run(None, {name: x})[0][0][4:7].max(0)
        ma, mb = pa >= high, pb >= high
        n_float += int(ma.sum())
        n_int8 += int(mb.sum())
        n_both += int((ma & mb).sum())
        if (ma | mb).any():
            diffs.append(float(np.abs(pa - pb)[ma | mb].mean()))
    return {
        "cells_float": n_float,
        "cells_int8": n_int8,
        "cells_both": n_both,
        "mean_abs_score_diff": round(float(np.mean(diffs)), 4) if diffs else 0.0,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, type=Path)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--data", action="append", required=True, type=Path, help="training folder(s) with images.npy")
    ap.add_argument("--frames", type=int, default=40, help="calibration frames per --data folder")
    ap.add_argument("--scales", default="1.0,0.67,0.45,1.2", help="tile scales, relative to the fit")
    ap.add_argument("--calibration", choices=["minmax", "percentile", "entropy"], default="minmax")
    ap.add_argument("--keep-float", default="conv0,relu0", help="backbone nodes left in float32, comma-separated")
    ap.add_argument("--check", type=Path, help="validation folder (images.npy) for the agreement check")
    ap.add_argument("--card", type=Path, help="metrics.json to record the rendition in")
    args = ap.parse_args()

    model = onnx.load(args.model)
    name = model.graph.input[0].name
    scales = [float(s) for s in args.scales.split(",")]
    inputs = calibration_inputs(args.data, args.frames, scales)
    print(f"calibration: {len(inputs)} tiles of {TILE_WIDTH}x{TILE_HEIGHT} from {len(args.data)} folder(s)")
    quantize_static(
        str(args.model),
        str(args.out),
        Frames(inputs, name),
        quant_format=QuantFormat.QDQ,
        per_channel=True,
        activation_type=QuantType.QUInt8,
        weight_type=QuantType.QInt8,
        nodes_to_quantize=backbone_nodes(model, set(filter(None, args.keep_float.split(",")))),
        calibrate_method={
            "minmax": CalibrationMethod.MinMax,
            "percentile": CalibrationMethod.Percentile,
            "entropy": CalibrationMethod.Entropy,
        }[args.calibration],
    )
    # Keep the float model's metadata (names, stride, licence …) and say what this file is.
    out = onnx.load(args.out)
    del out.metadata_props[:]
    for prop in model.metadata_props:
        out.metadata_props.add(key=prop.key, value=prop.value)
    out.metadata_props.add(key="precision", value="int8 (static QDQ: backbone int8, head and decoding float32)")
    out.metadata_props.add(key="source_sha256", value=sha256(args.model))
    onnx.save(out, args.out)
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes)")

    card = json.loads(args.card.read_text()) if args.card else {}
    high = card.get("tracker", {}).get("high", 0.5)
    check = None
    if args.check:
        check = agreement(args.model, args.out, calibration_inputs([args.check], 20, [1.0, 0.67]), high)
        print(f"agreement on {args.check} at score >= {high}: {check}")
    if args.card:
        rendition = {
            "file": args.out.name,
            "precision": "int8",
            "sha256": sha256(args.out),
            "source_sha256": sha256(args.model),
            **({"agreement": {"score": high, **check}} if check else {}),
        }
        others = [r for r in card.get("renditions", []) if r.get("precision") != "int8"]
        card["renditions"] = [*others, rendition]
        args.card.write_text(json.dumps(card, indent=2) + "\n")
        print(f"recorded in {args.card}")


if __name__ == "__main__":
    main()
