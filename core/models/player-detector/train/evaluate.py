"""Precision and recall of exported ONNX detectors on held-out datasets, side by side.

Runs onnxruntime (CPU, 2 threads) on every frame of each dataset (dataset.py /
real_dataset.py format; use frames not used for training). Each frame is
letterboxed to the model input with an area filter (as the detect stage's
ffmpeg `scale=...:flags=area`), grey 114. Detections are kept from score
--min-score up, with per-class non-maximum suppression at IoU 0.5, and matched
greedily by score to ground truth of the same class at IoU >= --iou.
Ground-truth boxes with visibility < 0.25 (mostly hidden, synthetic only) are
"ignore": they count neither as misses nor, when matched, as false positives.

Reported per class, for **people** (player + goalkeeper + referee merged: the
person score of a cell is 1 - (1 - p_player)(1 - p_goalkeeper)(1 - p_referee),
as the detect stage scores a person (core/src/workers/detect/decode/cell-score.ts;
`--person-score max` for the best single role, the rule before player-detector
2.1), NMS is class-agnostic, any person box matches any person truth) and for the ball
(single frame; also with "centre within 4 px" instead of IoU for the tiny
ball), at the score threshold --score, plus precision-recall sweeps and AP50.
Greedy matching by descending score makes one low-threshold pass exact for
every higher threshold, so the sweeps need no re-run.

Tracker thresholds (written under `tracker`): `high` = the lowest person
score at which people precision is still >= 0.9 on the first dataset (real
validation; >= 0.95 on scores fused with a person verifier, VERIFIED_HIGH_PRECISION), `low` = the score that keeps recall within 0.01 of its maximum
at precision >= 0.5 (ByteTrack's second association, Zhang et al. 2022),
`ball` = the ball track's candidate floor: the lowest ball score at which the real
validation frames carry at most 2 false ball boxes each (centre > 4 px from
the ball; `ball_track_floor`); `ball_best_f1` = the single-frame best-F1 score
(the `ball` of cards before 2026-11-29).

With `--verifier` / `--ball-verifier` (verifier.py) the people / the ball are the
detector's candidates from the verifier's floor up, rescored and moved as the
detect stage does it (windows from the letterboxed frame the detector saw), and
the card gets `verifier` / `ball_verifier` entries (file, sha256, the detector's
sha256, weight, window, candidate floor; the person verifier's also the
thresholds on the detector's own scores, `tracker_unverified`).

YOLOX-Nano (COCO, `--yolox`) is run for comparison: BGR 0..255 input,
top-left letterbox, grid decoding as the detect stage's `decodeYolox`;
its class 0 (person) is compared with people, class 32 (sports ball) with the ball.

Usage:
    python evaluate.py --model new=../player-detector.onnx --model old=/tmp/old.onnx \
        --yolox /path/yolox_nano.onnx --data real=$WORK/real-val --data synthetic=$WORK/heldout \
        --out ../metrics.json
"""
from __future__ import annotations

import argparse
import ast
import hashlib
import json
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort
from PIL import Image

from classes import CLASS_NAMES
from verifier_window import SPECS, sample, window

MIN_VISIBILITY = 0.25
BALL_CENTRE_PX = 4
PEOPLE = (0, 1, 2)
BALL = 3
YOLOX_STRIDES = (8, 16, 32)


def letterbox(img: np.ndarray, height: int, width: int, centre: bool = True) -> tuple[np.ndarray, float, float, float]:
    h, w, _ = img.shape
    scale = min(width / w, height / h)
    nw, nh = round(w * scale), round(h * scale)
    if (nw, nh) != (w, h):
        img = np.asarray(Image.fromarray(np.ascontiguousarray(img)).resize((nw, nh), Image.Resampling.BOX))
    out = np.full((height, width, 3), 114, np.uint8)
    px, py = ((width - nw) // 2, (height - nh) // 2) if centre else (0, 0)
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


class Model:
    """An ONNX detector returning, per frame, candidate boxes (x1 y1 x2 y2, frame px) and class scores."""

    def __init__(self, path: Path, yolox: bool = False):
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 2
        self.path = path
        self.session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        self.input = self.session.get_inputs()[0].name
        _, _, self.height, self.width = self.session.get_inputs()[0].shape
        if not isinstance(self.height, int) or not isinstance(self.width, int):
            # Symbolic height and width (player-detector 2.2 on): evaluate at the nominal size, metadata `imgsz`.
            self.height, self.width = ast.literal_eval(self.session.get_modelmeta().custom_metadata_map["imgsz"])
        self.yolox = yolox
        self.seconds = 0.0
        self.frames = 0
        self.verifier: Verifier | None = None
        self.candidate_floor: float | None = None
        self.ball_verifier: Verifier | None = None
        # The last frame as the model saw it: letterboxed input (uint8 HxWx3), scale, pad x, pad y.
        self.last_input: tuple[np.ndarray, float, float, float] | None = None

    def raw(self, frame: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        img, scale, px, py = letterbox(frame, self.height, self.width, centre=not self.yolox)
        self.last_input = (img, scale, px, py)
        if self.yolox:
            x = img[..., ::-1].astype(np.float32).transpose(2, 0, 1)[None]
        else:
            x = (img.astype(np.float32) / 255.0).transpose(2, 0, 1)[None]
        started = time.perf_counter()
        out = self.session.run(None, {self.input: x})[0][0]
        self.seconds += time.perf_counter() - started
        self.frames += 1
        if self.yolox:
            grids, strides = [], []
            for s in YOLOX_STRIDES:
                gy, gx = np.meshgrid(np.arange(self.height // s), np.arange(self.width // s), indexing="ij")
                grids.append(np.stack([gx.ravel(), gy.ravel()], 1))
                strides.append(np.full(gx.size, s))
            grid, stride = np.concatenate(grids), np.concatenate(strides)[:, None]
            cxcy = (out[:, :2] + grid) * stride
            wh = np.exp(out[:, 2:4]) * stride
            scores = out[:, 4:5] * out[:, 5:]
            # person -> people columns, sports ball -> ball column, in this model's class order.
            scores = np.stack([scores[:, 0], np.zeros(len(out)), np.zeros(len(out)), scores[:, 32]], 1)
        else:
            cxcy, wh, scores = out[:2].T, out[2:4].T, out[4:].T
        xyxy = np.concatenate([cxcy - wh / 2, cxcy + wh / 2], 1)
        xyxy[:, [0, 2]] = (xyxy[:, [0, 2]] - px) / scale
        xyxy[:, [1, 3]] = (xyxy[:, [1, 3]] - py) / scale
        return xyxy, scores


def refine_box(box: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """`box` (x1, y1, x2, y2) moved by R-CNN deltas (dx, dy in box widths / heights, log width / height ratio)."""
    w, h = box[2] - box[0], box[3] - box[1]
    cx, cy = (box[0] + box[2]) / 2 + delta[0] * w, (box[1] + box[3]) / 2 + delta[1] * h
    nw, nh = w * np.exp(delta[2]), h * np.exp(delta[3])
    return np.array([cx - nw / 2, cy - nh / 2, cx + nw / 2, cy + nh / 2])


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class Verifier:
    """A verifier (verifier.py): rescores the person (or ball: its first output's name) boxes from windows of
    the frame the detector saw."""

    def __init__(self, path: Path):
        self.path = path
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 2
        self.session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        self.spec = SPECS[self.session.get_outputs()[0].name]

    def rescore(
        self, model: Model, found: list[tuple[float, np.ndarray]], floors: tuple[float, ...] = (0.0,)
    ) -> dict[float, list[tuple[float, np.ndarray]]]:
        """Per floor, `found` (score, box in frame px) of the model's last frame scoring >= that floor, with fused
        scores detector ** (1 - weight) * verifier ** weight and moved boxes, after NMS, best first. The
        verifier runs once, on every candidate of the lowest floor."""
        found = [d for d in found if d[0] >= min(floors)]
        if not found or model.last_input is None:
            return {floor: [d for d in found if d[0] >= floor] for floor in floors}
        img, scale, px, py = model.last_input
        windows = []
        for _, box in found:
            x0, y0, x1, y1 = window(box * scale + np.array([px, py, px, py]), self.spec)
            windows.append(sample(img, x0, y0, x1, y1, self.spec))
        x = (np.floor(np.stack(windows) + 0.5) / 255.0).astype(np.float32).transpose(0, 3, 1, 2)
        outputs = self.session.run(None, {"windows": x})
        p = outputs[0][:, 0]
        boxes = np.array([box for _, box in found])
        if len(outputs) > 1:
            # Each box moved by its regressed deltas, then NMS again: two candidates may land on one person.
            boxes = np.array([refine_box(box, delta) for box, delta in zip(boxes, outputs[1])])
        detector = np.array([s for s, _ in found])
        fused = detector ** (1 - self.spec.weight) * p ** self.spec.weight
        out = {}
        for floor in floors:
            candidates = np.nonzero(detector >= floor)[0]
            keep = nms(boxes[candidates], fused[candidates], 0.5)
            out[floor] = [(float(fused[candidates[k]]), boxes[candidates[k]]) for k in keep]
        return out

PERSON_SCORE = "noisy-or"
# Detector scores from which the person verifier may look at the candidates (`candidate_floor`): the highest
# that keeps the verified recall at precision 0.9 and 0.95 of verifying every candidate (within RECALL_SLACK).
# The tracker's `high` on verified scores: the precision at which the verifier keeps ~0.93 of the real people
# (the detector alone kept 0.91 at 0.9, its `high`): a stricter confident tier for the same people.
VERIFIED_HIGH_PRECISION = 0.95
CANDIDATE_FLOORS = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35)
RECALL_SLACK = 0.002
# The ball verifier looks at every ball candidate from its training's mining floor (verifier.MINE_SCORE): a
# frame has a few dozen and its window costs ~3 MMAC.
BALL_CANDIDATE_FLOOR = 0.1


def people_score(scores: np.ndarray) -> np.ndarray:
    """A cell's person score: noisy-OR over the person classes (or their max, `--person-score max`)."""
    p = np.clip(scores[:, list(PEOPLE)], 0, 1)
    return p.max(1) if PERSON_SCORE == "max" else 1 - np.prod(1 - p, axis=1)


def detections(xyxy: np.ndarray, scores: np.ndarray, min_score: float) -> dict[str, list[tuple[float, np.ndarray]]]:
    """Per group ("player", ..., "people"): (score, box) after NMS at IoU 0.5, best first."""
    groups = {name: scores[:, c] for c, name in enumerate(CLASS_NAMES)}
    groups["people"] = people_score(scores)
    out = {}
    for name, s in groups.items():
        sel = np.nonzero(s >= min_score)[0]
        sel = sel[np.argsort(-s[sel])[:2000]]  # bounds the NMS cost of a model that fires everywhere
        kept = nms(xyxy[sel], s[sel], 0.5)[:300] if len(sel) else []
        out[name] = [(float(s[sel[k]]), xyxy[sel[k]]) for k in kept]
    return out


def match(dets: list[tuple[float, np.ndarray]], gt: np.ndarray, ignore: np.ndarray, iou_min: float, centre_px: float = 0):
    """Greedy by score. Returns per detection 1 (TP), 0 (FP) or -1 (matched an ignored truth), and the truth count."""
    used = np.zeros(len(gt), bool)
    status = []
    centres = (gt[:, :2] + gt[:, 2:]) / 2 if len(gt) else np.zeros((0, 2))
    for _, box in dets:
        if len(gt) == 0:
            status.append(0)
            continue
        if centre_px:
            q = -np.hypot(*(centres - (box[:2] + box[2:]) / 2).T)
            ok = -centre_px
        else:
            q = iou(box, gt)
            ok = iou_min
        q[used] = -np.inf
        k = int(np.argmax(q))
        if q[k] >= ok:
            used[k] = True
            status.append(-1 if ignore[k] else 1)
        elif not centre_px and ignore.any() and np.any(iou(box, gt[ignore]) >= iou_min):
            status.append(-1)
        else:
            status.append(0)
    return status, int((~ignore).sum())


def pr_table(scores: np.ndarray, status: np.ndarray, positives: int) -> dict:
    """Precision/recall at every score (descending), AP50 (all-point interpolation, as VOC 2010+)."""
    keep = status >= 0
    s, t = scores[keep], status[keep]
    order = np.argsort(-s, kind="stable")
    s, t = s[order], t[order]
    tp = np.cumsum(t == 1)
    fp = np.cumsum(t == 0)
    precision = tp / np.maximum(tp + fp, 1)
    recall = tp / max(positives, 1)
    envelope = np.maximum.accumulate(precision[::-1])[::-1] if len(precision) else precision
    ap = float(np.sum(np.diff(np.concatenate([[0], recall])) * envelope)) if len(recall) else 0.0
    return {"scores": s, "precision": precision, "recall": recall, "ap50": ap}


def at_threshold(table: dict, positives: int, threshold: float) -> dict:
    n = int(np.sum(table["scores"] >= threshold))
    tp = int(round(table["recall"][n - 1] * positives)) if n else 0
    fp = n - tp
    return {
        "precision": tp / max(n, 1), "recall": tp / max(positives, 1),
        "tp": tp, "fp": fp, "fn": positives - tp,
    }


def evaluate(model: Model, images: np.ndarray, labels: np.ndarray, min_score: float, iou_min: float) -> dict:
    groups = list(CLASS_NAMES) + ["people", "ball_centre_within_4px"]
    if model.verifier:
        groups += ["people_unverified"] + [f"people_from_{floor}" for floor in CANDIDATE_FLOORS]
    if model.ball_verifier:
        groups += ["ball_unverified", "ball_unverified_centre_within_4px"]
    acc = {g: ([], [], 0) for g in groups}
    for f in range(len(images)):
        gt = labels[labels[:, 0] == f]
        dets = detections(*model.raw(np.asarray(images[f])), min_score)
        if model.verifier:
            dets["people_unverified"] = dets["people"]
            for floor, verified in model.verifier.rescore(model, dets["people"], CANDIDATE_FLOORS).items():
                dets[f"people_from_{floor}"] = verified
            dets["people"] = dets[f"people_from_{CANDIDATE_FLOORS[0]}"]
        if model.ball_verifier:
            dets["ball_unverified"] = dets["ball"]
            dets["ball"] = model.ball_verifier.rescore(model, dets["ball"], (BALL_CANDIDATE_FLOOR,))[BALL_CANDIDATE_FLOOR]
        for g in groups:
            if g.startswith("people"):
                sel = np.isin(gt[:, 1], PEOPLE)
                d = dets[g]
            elif g.endswith("_centre_within_4px"):
                sel = gt[:, 1] == BALL
                d = dets[g.removesuffix("_centre_within_4px")]
            elif g == "ball_unverified":
                sel = gt[:, 1] == BALL
                d = dets[g]
            else:
                sel = gt[:, 1] == CLASS_NAMES.index(g)
                d = dets[g]
            status, positives = match(
                d, gt[sel, 2:6], gt[sel, 6] < MIN_VISIBILITY, iou_min,
                BALL_CENTRE_PX if g.endswith("_centre_within_4px") else 0,
            )
            s, t, p = acc[g]
            acc[g] = (s + [x[0] for x in d], t + status, p + positives)
    return {g: (pr_table(np.array(s), np.array(t), p), p) for g, (s, t, p) in acc.items()}


SWEEP = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)


def summarise(tables: dict, score: float) -> dict:
    out = {}
    for g, (table, positives) in tables.items():
        out[g] = {**at_threshold(table, positives, score), "ap50": table["ap50"]}
        if g in ("people", "people_unverified"):
            out[g]["recall_at_precision"] = {
                str(p): round(recall_at_precision(table, p), 4) for p in (0.9, 0.95)
            }
        if g.startswith("ball"):
            out[g]["recall_at_precision"] = {"0.6": round(recall_at_precision(table, 0.6), 4)}
        if g in ("people", "ball", "ball_centre_within_4px"):
            out[g]["sweep"] = {
                str(t): {k: round(v, 4) for k, v in at_threshold(table, positives, t).items() if k in ("precision", "recall")}
                for t in SWEEP
            }
    return out


def candidate_floor(tables: dict) -> float:
    """The highest of CANDIDATE_FLOORS from which verified people keep the recall at precision 0.9 and 0.95 of
    verifying every candidate (within RECALL_SLACK): the verifier's cost is per candidate."""
    every = tables[f"people_from_{CANDIDATE_FLOORS[0]}"][0]
    best = CANDIDATE_FLOORS[0]
    for floor in CANDIDATE_FLOORS:
        table = tables[f"people_from_{floor}"][0]
        if all(recall_at_precision(table, p) >= recall_at_precision(every, p) - RECALL_SLACK for p in (0.9, 0.95)):
            best = floor
        else:
            break
    return best


def recall_at_precision(table: dict, precision: float) -> float:
    """The highest recall at any score whose precision is still >= `precision` (0 if none)."""
    ok = np.nonzero(table["precision"] >= precision)[0]
    return float(table["recall"][ok[-1]]) if len(ok) else 0.0


def tracker_thresholds(table: dict, high_precision: float = 0.9) -> dict:
    """ByteTrack's `high` (the lowest score with people precision >= `high_precision`) and `low`."""
    s, p, r = table["scores"], table["precision"], table["recall"]
    ok = np.nonzero(p >= high_precision)[0]
    high = float(s[ok[-1]]) if len(ok) else float(s[0])
    usable = np.nonzero(p >= 0.5)[0]
    best = r[usable].max() if len(usable) else 0
    low_idx = usable[np.nonzero(r[usable] >= best - 0.01)[0][0]] if len(usable) else 0
    low = float(s[low_idx]) if len(s) else 0.0
    return {"high": round(high, 3), "low": round(min(low, high), 3)}


def best_f1_score(table: dict) -> float:
    """The score at which single-frame F1 is highest (the ball's threshold before 2026-11-29; kept for reference)."""
    p, r = table["precision"], table["recall"]
    if not len(p):
        return 1.0
    f1 = 2 * p * r / np.maximum(p + r, 1e-9)
    return round(float(table["scores"][int(np.argmax(f1))]), 3)


BALL_FALSE_PER_FRAME = 2.0


def ball_track_floor(table: dict, frames: int, false_per_frame: float = BALL_FALSE_PER_FRAME) -> float:
    """The ball track's candidate floor: the lowest score at which the frames carry at most `false_per_frame`
    false ball boxes each on average (centre more than 4 px from every ball). The ball track sorts the ball
    out of a few false candidates a frame by their motion (core/src/workers/track/ball/ball-tracker.ts);
    a single-frame threshold (best F1) leaves it too few balls to follow (bench/README.md, the ball track's
    candidate floor). Rounded up to 3 decimals, so the rounding never lets more boxes in."""
    s, p = table["scores"], table["precision"]
    if not len(s):
        return 1.0
    false = np.arange(1, len(s) + 1) * (1 - p)
    ok = np.nonzero(false <= false_per_frame * frames + 1e-9)[0]
    if not len(ok):
        return 1.0
    return float(np.ceil(float(s[ok[-1]]) * 1000) / 1000)


def verifier_card(verifier: Verifier, detector: Path) -> dict:
    """A verifier's entry in the model card: its file, sha256, the detector it was trained on, fusion, window."""
    spec = verifier.spec
    return {
        "file": verifier.path.name,
        "sha256": sha256_of(verifier.path),
        "detector_sha256": sha256_of(detector),
        "weight": spec.weight,
        "window": {"width": spec.width, "height": spec.height, "context": spec.context, "min_extent": spec.min_extent},
    }


def speed(models: dict[str, Model], repeats: int) -> dict[str, float]:
    """Median ms of onnxruntime's run per 1280x720 frame (letterboxed to each model's input), interleaved."""
    frame = np.random.default_rng(0).integers(0, 256, (720, 1280, 3), np.uint8)
    times: dict[str, list[float]] = {k: [] for k in models}
    for _ in range(repeats):
        for name, m in models.items():
            before = m.seconds
            m.raw(frame)
            times[name].append(1000 * (m.seconds - before))
    return {k: float(np.median(v)) for k, v in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", action="append", required=True, help="NAME=PATH of a Polyvision-layout model")
    ap.add_argument("--yolox", type=Path, help="also run this YOLOX (COCO) model")
    ap.add_argument("--data", action="append", required=True, help="NAME=PATH of a dataset folder")
    ap.add_argument("--score", type=float, default=0.3, help="score threshold of the summary tables")
    ap.add_argument("--min-score", type=float, default=0.05)
    ap.add_argument("--iou", type=float, default=0.5)
    ap.add_argument("--speed-repeats", type=int, default=15)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--person-score", choices=("noisy-or", "max"), default="noisy-or")
    ap.add_argument("--version", help="the first model's version label (DETECT_MODEL_VERSION), written to the card")
    ap.add_argument("--verifier", action="append", default=[],
                    help="NAME=PATH: rescore model NAME's people with this person verifier (verifier.py)")
    ap.add_argument("--ball-verifier", action="append", default=[],
                    help="NAME=PATH: rescore model NAME's ball with this ball verifier (verifier.py --target ball)")
    args = ap.parse_args()
    global PERSON_SCORE
    PERSON_SCORE = args.person_score
    models = {k: Model(Path(v)) for k, v in (m.split("=", 1) for m in args.model)}
    for spec in args.verifier:
        name, path = spec.split("=", 1)
        models[name].verifier = Verifier(Path(path))
    for spec in args.ball_verifier:
        name, path = spec.split("=", 1)
        models[name].ball_verifier = Verifier(Path(path))
    if args.yolox:
        models["yolox_nano"] = Model(args.yolox, yolox=True)
    first_name, first_path = args.model[0].split("=", 1)
    result: dict = {
        # What the detect stage reads besides the thresholds: the file, its version label, its nominal input.
        "model": Path(first_path).name,
        **({"version": args.version} if args.version else {}),
        "input": [1, 3, models[first_name].height, models[first_name].width],
        "person_score": args.person_score, "iou_threshold": args.iou, "score_threshold": args.score, "min_score": args.min_score,
        "models": {k: str(Path(v).name) for k, v in (m.split("=", 1) for m in args.model)}, "datasets": {},
    }
    first_tables = {}
    for spec in args.data:
        dname, path = spec.split("=", 1)
        images = np.load(Path(path) / "images.npy", mmap_mode="r")
        labels = np.load(Path(path) / "labels.npy")
        result["datasets"][dname] = {"path": path, "frames": len(images), "results": {}}
        for mname, model in models.items():
            started = time.time()
            tables = evaluate(model, images, labels, args.min_score, args.iou)
            if model.verifier:
                # What the stage writes: the verified candidates from the card's floor (set on the first dataset).
                model.candidate_floor = model.candidate_floor or candidate_floor(tables)
                tables["people"] = tables[f"people_from_{model.candidate_floor}"]
            entry = summarise(tables, args.score)
            entry["tracker_thresholds"] = {
                **tracker_thresholds(tables["people"][0], VERIFIED_HIGH_PRECISION if model.verifier else 0.9),
                "ball": ball_track_floor(tables["ball_centre_within_4px"][0], len(images)),
                "ball_best_f1": best_f1_score(tables["ball"][0]),
                "person_score": args.person_score,
            }
            result["datasets"][dname]["results"][mname] = entry
            first_tables.setdefault(mname, tables)
            p = entry["people"]
            b = entry["ball_centre_within_4px"]
            print(
                f"{dname:10s} {mname:11s} people P {p['precision']:.3f} R {p['recall']:.3f} AP50 {p['ap50']:.3f} "
                f"R@P0.9 {p['recall_at_precision']['0.9']:.3f} R@P0.95 {p['recall_at_precision']['0.95']:.3f} | "
                f"ball (4 px) P {b['precision']:.3f} R {b['recall']:.3f} AP {b['ap50']:.3f} "
                f"R@P0.6 {b.get('recall_at_precision', {}).get('0.6', 0):.3f} | {time.time() - started:.0f}s",
                flush=True,
            )
    # The card's tracker thresholds: the first model on the first dataset (the real validation matches).
    first_data = next(iter(result["datasets"].values()))
    first_model = next(iter(first_data["results"]))
    result["tracker"] = {
        **first_data["results"][first_model]["tracker_thresholds"],
        "source": f"{first_model} on {next(iter(result['datasets']))} ({first_data['path']}); see MODEL_CARD.md",
    }
    first_model_obj = models[first_model]
    tables = first_tables[first_model]
    frames = first_data["frames"]
    # Thresholds on the detector's own scores (DETECT_VERIFIER=off): the people's and the ball's.
    unverified = {
        **tracker_thresholds((tables.get("people_unverified") or tables["people"])[0]),
        "ball": ball_track_floor((tables.get("ball_unverified_centre_within_4px") or tables["ball_centre_within_4px"])[0], frames),
    }
    if first_model_obj.verifier:
        # The card's person verifier: `tracker` above is on its fused score of the candidates from
        # `candidate_floor` up (what the stage writes), `tracker_unverified` on the detector's own.
        result["verifier"] = {
            **verifier_card(first_model_obj.verifier, first_model_obj.path),
            "candidate_floor": first_model_obj.candidate_floor,
            "tracker_unverified": unverified,
        }
    if first_model_obj.ball_verifier:
        # The ball verifier: `tracker.ball` is on its fused score of the ball candidates from its floor up.
        result["ball_verifier"] = {
            **verifier_card(first_model_obj.ball_verifier, first_model_obj.path),
            "candidate_floor": BALL_CANDIDATE_FLOOR,
        }
    result["ms_per_1280x720_frame"] = speed(models, args.speed_repeats)
    print("ms per 1280x720 frame (onnxruntime run, 2 threads):", result["ms_per_1280x720_frame"])
    print(json.dumps(result, indent=2))
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
