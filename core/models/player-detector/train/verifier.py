"""The verifiers: a second look at each person box (player-detector 3.3) and each ball box (3.4) the
detector writes.

The detector (162 k parameters, one stride-8 scale) scores whole, clear players in striped shade at
0.5-0.6 while a few letters of a broadcaster's watermark, centre-circle arcs and board spots score as
high: at precision 0.95 it keeps only 79 % of the real validation people. Its ball scores are worse: line
crossings, boots and board spots score as high as the ball (single-frame ball AP 0.6 on the real
validation matches). A verifier looks again at each candidate box of its class through a window of its
own, at a size fixed in box units, and the detect stage writes the fused score

    score = detector_score ** (1 - w) * verifier_probability ** w        (w: 0.3 people, 0.5 the ball)

a cascade's second stage (Viola & Jones 2001; the rescoring of R-CNN's region classifier, Girshick
et al. 2014) on the candidates the one-stage detector already found. It also moves each box: R-CNN's
box regression (Girshick et al. 2014, appendix C) from the same window, so that a box on half a player
(the detector's commonest false person that is a person) lands on the whole player.

Windows (verifier_window.py `window`, `Spec`): centred on the box, sampled by bilinear interpolation at
output pixel centres from the frame the detector saw (the decoded frame: a 1920 x 1080 camera analysed at
one tile is decoded at 1280 x 720), grey 114 outside the frame. People (`--target person`): 32 x 64 RGB
pixels, 1.6 x max(box height, 2 x box width) tall, half as wide. The ball (`--target ball`): 32 x 32,
a square 6 x max(box height, box width, 6 frame px) on a side, so that the window holds the grass, the
lines and the boots around the ball. core/src/workers/detect/verify/window.ts samples exactly this way;
a test there checks it against numbers from verifier_window.py.

Network: five 3x3 convolutions with ReLU (16, 32, 48, 64, 64 channels; strides 1, 2, 2, 2, 2; padding
1), global mean and max pooling concatenated (128), one linear layer of 5: the class logit (sigmoid:
output `person` or `ball` [N, 1]) and the box deltas dx, dy (box widths / heights), log w, log h ratios
(output `box_delta` [N, 4], trained divided by DELTA_SCALE). ~83 k parameters, ~6 MMAC a person window,
~3 MMAC a ball window.

Data: the detector's own candidates of the target class (people after NMS, score >= 0.15; the ball >=
0.1: MINE_SCORE) on the real training matches (split.json: the validation matches never) and on the
synthetic training renders. People are labelled 1 where IoU >= 0.5 with a labelled person, 0 where
< 0.3; a ball candidate 1 where its centre is within 4 px of a labelled ball, 0 where further than 10 px
(source px at 1080p); every labelled one (visibility >= 0.25) is a positive too. Candidates near a
labelled one (IoU >= REGRESS_IOU; the ball within 10 px) learn the deltas onto it (those between the
positive and negative bounds only that). Batches of 128: 45 % positives, 10 % boxes to move only, 45 %
negatives (60 % of those from the real frames). Augmentations: the box jittered (centre by 6 % / 5 % of
its width / height, size by 8 %; the deltas are the jittered box's), the frame decoded smaller (area
filter, x0.45-1 on real frames, x0.8-1 on synthetic ones, 80 % of windows), horizontal flip (dx negated),
and augment.py's photometric jitter, noise, blur and JPEG re-compression. Binary cross-entropy + smooth
L1 (Huber, delta 1) of the scaled deltas, AdamW (weight decay 1e-4), warm-up + cosine from 2e-3.

Usage:
    python verifier.py --detector ../player-detector.onnx --data $WORK/real-train --data $WORK/train:4 \
        --steps 4000 --out ../person-verifier.onnx
    python verifier.py --target ball --detector ../player-detector.onnx --data $WORK/real-train \
        --data $WORK/train:4 --steps 2500 --out ../ball-verifier.onnx
    python verifier.py --combine $WORK/person-verifier-s0.onnx $WORK/person-verifier-s1.onnx \
        --out ../person-verifier.onnx

Shipped verifiers (player-detector 3.4) are two networks each, trained with --seed 0 and 1 and combined
(`--combine`: one graph, their logits and box deltas averaged; `--mirrored` would add each network's answer on
the mirrored window, flip test-time augmentation inside the graph).
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import onnx
import optax
from onnx import TensorProto, helper, numpy_helper
from augment import photometric
from evaluate import BALL, BALL_CENTRE_PX, PEOPLE, Model, detections, iou
from export_onnx import save, with_metadata
from verifier_window import DELTA_SCALE, SPECS, Spec, crop

# The detector score from which candidates are mined, per target.
MINE_SCORE = {"person": 0.15, "ball": 0.1}
# Candidates overlapping a labelled person by this much or more learn to move their box onto it.
REGRESS_IOU = 0.3
# A ball candidate whose centre is further than this from every labelled ball (source px; a ball is ~11 px
# at 1080p) is a negative; nearer than BALL_CENTRE_PX a positive; between, it only learns to move.
BALL_NEGATIVE_PX = 10
# (in, out, stride) of each 3x3 convolution (padding 1).
LAYERS = [(3, 16, 1), (16, 32, 2), (32, 48, 2), (48, 64, 2), (64, 64, 2)]
POOLED = 2 * LAYERS[-1][1]


def init_params(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    params = {}
    for k, (cin, cout, _) in enumerate(LAYERS):
        params[f"conv{k}_w"] = rng.normal(0, np.sqrt(2 / (9 * cin)), (3, 3, cin, cout)).astype(np.float32)
        params[f"conv{k}_b"] = np.zeros(cout, np.float32)
    params["fc_w"] = rng.normal(0, 0.01, (POOLED, 5)).astype(np.float32)
    params["fc_b"] = np.zeros(5, np.float32)
    return params


def forward(params, x):
    """[N, 5] of NHWC windows (RGB, 0..1): the class logit, then the box deltas / DELTA_SCALE."""
    for k, (_, _, stride) in enumerate(LAYERS):
        x = jax.lax.conv_general_dilated(
            x, params[f"conv{k}_w"], (stride, stride), ((1, 1), (1, 1)), dimension_numbers=("NHWC", "HWIO", "NHWC")
        )
        x = jax.nn.relu(x + params[f"conv{k}_b"])
    pooled = jnp.concatenate([x.mean((1, 2)), x.max((1, 2))], -1)
    return pooled @ params["fc_w"] + params["fc_b"]


def mine(model: Model, path: Path, every: int, target: str) -> list[tuple[int, np.ndarray, int, np.ndarray | None]]:
    """(frame, box, label, truth) of the detector's `target` candidates ("person" or "ball") on every
    `every`th frame of a dataset: label 1 when it is on a labelled one (people: IoU >= 0.5; the ball: centre
    within BALL_CENTRE_PX), 0 when clearly off (IoU under 0.3; centre further than BALL_NEGATIVE_PX), -1
    between (not a classification sample); `truth` the labelled box it should move onto (IoU >= REGRESS_IOU;
    centre within BALL_NEGATIVE_PX), else None. Every labelled one (visibility >= 0.25) is a positive too,
    its own truth."""
    images, labels = np.load(path / "images.npy", mmap_mode="r"), np.load(path / "labels.npy")
    classes = PEOPLE if target == "person" else (BALL,)
    group = "people" if target == "person" else "ball"
    items = []
    for f in range(0, len(images), every):
        truth = labels[(labels[:, 0] == f) & np.isin(labels[:, 1], classes)]
        for _, box in detections(*model.raw(np.asarray(images[f])), MINE_SCORE[target])[group]:
            if target == "person":
                near = iou(box, truth[:, 2:6]) if len(truth) else np.zeros(1)
                on, off, moves = near >= 0.5, near < 0.3, near >= REGRESS_IOU
            else:
                centres = (truth[:, 2:4] + truth[:, 4:6]) / 2 if len(truth) else np.full((1, 2), np.inf)
                distance = np.hypot(*(centres - (box[:2] + box[2:]) / 2).T)
                near = -distance
                on, off, moves = distance <= BALL_CENTRE_PX, distance > BALL_NEGATIVE_PX, distance <= BALL_NEGATIVE_PX
            k = int(np.argmax(near))
            visible = len(truth) and truth[k, 6] >= 0.25
            target_box = truth[k, 2:6] if visible and moves[k] else None
            if on[k] and visible:
                items.append((f, box, 1, target_box))
            elif off[k]:
                items.append((f, box, 0, None))
            elif target_box is not None:
                items.append((f, box, -1, target_box))
        items += [(f, t[2:6], 1, t[2:6]) for t in truth if t[6] >= 0.25]
    return items


def box_deltas(box: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """R-CNN box regression targets of `truth` from `box` (Girshick et al. 2014, appendix C): centre shift in
    box widths / heights, log size ratio; divided by DELTA_SCALE (Faster R-CNN's normalisation)."""
    w, h = box[2] - box[0], box[3] - box[1]
    gw, gh = truth[2] - truth[0], truth[3] - truth[1]
    return np.array([
        ((truth[0] + truth[2]) - (box[0] + box[2])) / 2 / w,
        ((truth[1] + truth[3]) - (box[1] + box[3])) / 2 / h,
        np.log(gw / w), np.log(gh / h),
    ]) / DELTA_SCALE


class Windows:
    """Augmented training batches of windows from the mined sources: half positives, half negatives for the
    person score, and every box with a truth near it (positives and the ambiguous ones) for the box."""

    def __init__(self, sources: list[tuple[np.ndarray, list, bool]], spec: Spec, seed: int):
        self.rng = np.random.default_rng(seed)
        self.spec = spec
        entries = [(img, f, b, y, t, real) for img, items, real in sources for f, b, y, t in items]
        self.positives = [e for e in entries if e[3] == 1]
        self.ambiguous = [e for e in entries if e[3] == -1]
        self.real_negatives = [e for e in entries if e[3] == 0 and e[5]]
        self.negatives = [e for e in entries if e[3] == 0]

    def batch(self, size: int):
        xs, ys, scored, deltas, regressed = [], [], [], [], []
        for _ in range(size):
            draw = self.rng.random()
            if draw < 0.45:
                pool = self.positives
            elif draw < 0.55:
                pool = self.ambiguous
            else:
                pool = self.real_negatives if self.rng.random() < 0.6 else self.negatives
            images, f, box, label, truth, real = pool[self.rng.integers(len(pool))]
            # The candidate as the window sees it: moved by 6 % / 5 % of its width / height, scaled by 8 %.
            w, h = box[2] - box[0], box[3] - box[1]
            cx = (box[0] + box[2]) / 2 + self.rng.normal(0, 0.06) * w
            cy = (box[1] + box[3]) / 2 + self.rng.normal(0, 0.05) * h
            k = float(np.exp(self.rng.normal(0, 0.08)))
            seen = np.array([cx - k * w / 2, cy - k * h / 2, cx + k * w / 2, cy + k * h / 2])
            low = np.log(0.45) if real else np.log(0.8)
            decode = float(np.exp(self.rng.uniform(low, 0))) if self.rng.random() < 0.8 else 1.0
            window_px = crop(np.asarray(images[f]), seen, decode, spec=self.spec)
            target = box_deltas(seen, truth) if truth is not None else np.zeros(4)
            if self.rng.random() < 0.5:
                window_px = window_px[:, ::-1]
                target[0] = -target[0]
            xs.append(photometric(window_px, self.rng))
            ys.append(float(label == 1))
            scored.append(float(label != -1))
            deltas.append(target)
            regressed.append(float(truth is not None))
        return tuple(np.array(a, np.float32) for a in (xs, ys, scored, deltas, regressed))


def loss_fn(params, x, y, scored, deltas, regressed):
    """Binary cross-entropy of the person score (where `scored`) + smooth L1 of the box deltas (where
    `regressed`), each averaged over its own samples."""
    out = forward(params, x)
    bce = optax.sigmoid_binary_cross_entropy(out[:, 0], y)
    l1 = optax.huber_loss(out[:, 1:], deltas, delta=1.0).sum(-1)
    return (bce * scored).sum() / jnp.maximum(scored.sum(), 1) + (l1 * regressed).sum() / jnp.maximum(regressed.sum(), 1)


def train(windows: Windows, steps: int, seed: int) -> dict[str, np.ndarray]:
    params = init_params(seed)
    schedule = optax.warmup_cosine_decay_schedule(0, 2e-3, 200, steps, 1e-5)
    opt = optax.adamw(schedule, weight_decay=1e-4)
    state = opt.init(params)

    @jax.jit
    def step(params, state, *batch):
        loss, grads = jax.value_and_grad(loss_fn)(params, *batch)
        updates, state = opt.update(grads, state, params)
        return optax.apply_updates(params, updates), state, loss

    started, ema = time.time(), None
    for i in range(steps):
        params, state, loss = step(params, state, *windows.batch(128))
        ema = float(loss) if ema is None else 0.98 * ema + 0.02 * float(loss)
        if i % 250 == 0 or i == steps - 1:
            print(f"step {i}: loss {ema:.4f} ({time.time() - started:.0f} s)", flush=True)
    return {k: np.asarray(v) for k, v in params.items()}


def build(members: list[dict[str, np.ndarray]], spec: Spec, mirrored: bool = False) -> onnx.ModelProto:
    """ONNX graph: input `windows` float32 [N, 3, height, width] (RGB, pixel / 255), outputs `person` (or
    `ball`: the spec's name) [N, 1], the probability, and `box_delta` [N, 4]. With several `members` (networks
    trained from other seeds) and / or `mirrored` (each also run on the mirrored window, its dx negated), their
    logits and deltas are averaged: a seed ensemble with flip test-time augmentation, in one graph, so the
    detect stage runs it unchanged."""
    inits, nodes = [], []

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    views = ["windows"]
    if mirrored:
        nodes.append(helper.make_node(
            "Slice", ["windows", const("flip_start", np.array([-1], np.int64)), const("flip_end", np.array([-(2**62)], np.int64)),
                      const("flip_axis", np.array([3], np.int64)), const("flip_step", np.array([-1], np.int64))], ["mirror"],
        ))
        views.append("mirror")
        # A mirrored window's answer mapped back: its dx negated (logit, dx, dy, log w, log h).
        mirror_sign = const("mirror_sign", np.array([[1, -1, 1, 1, 1]], np.float32))
    logits = []
    for m, params in enumerate(members):
        tag = f"m{m}_" if len(members) > 1 else ""
        weights = []
        for k in range(len(LAYERS)):
            weights.append((const(f"{tag}conv{k}_w", params[f"conv{k}_w"].transpose(3, 2, 0, 1)),
                            const(f"{tag}conv{k}_b", params[f"conv{k}_b"])))
        fc = (const(f"{tag}fc_w", params["fc_w"]), const(f"{tag}fc_b", params["fc_b"]))
        for v, view in enumerate(views):
            at = f"{tag}v{v}_" if len(views) > 1 else tag
            x = view
            for k, (_, _, stride) in enumerate(LAYERS):
                nodes.append(helper.make_node("Conv", [x, *weights[k]], [f"{at}c{k}"], kernel_shape=[3, 3], strides=[stride, stride], pads=[1, 1, 1, 1]))
                nodes.append(helper.make_node("Relu", [f"{at}c{k}"], [f"{at}r{k}"]))
                x = f"{at}r{k}"
            nodes += [
                helper.make_node("GlobalAveragePool", [x], [f"{at}mean"]),
                helper.make_node("GlobalMaxPool", [x], [f"{at}max"]),
                helper.make_node("Concat", [f"{at}mean", f"{at}max"], [f"{at}pooled4"], axis=1),
                helper.make_node("Flatten", [f"{at}pooled4"], [f"{at}pooled"], axis=1),
                helper.make_node("Gemm", [f"{at}pooled", *fc], [f"{at}head"]),
            ]
            if view == "mirror":
                nodes.append(helper.make_node("Mul", [f"{at}head", mirror_sign], [f"{at}head_back"]))
                logits.append(f"{at}head_back")
            else:
                logits.append(f"{at}head")
    if len(logits) > 1:
        nodes += [
            helper.make_node("Sum", logits, ["head_sum"]),
            helper.make_node("Mul", ["head_sum", const("members", np.array(1 / len(logits), np.float32))], ["head"]),
        ]
    elif logits[0] != "head":
        nodes.append(helper.make_node("Identity", logits, ["head"]))
    nodes += [
        helper.make_node("Split", ["head", const("split", np.array([1, 4], np.int64))], ["logit", "deltas"], axis=1),
        helper.make_node("Sigmoid", ["logit"], [spec.name]),
        helper.make_node("Mul", ["deltas", const("delta_scale", np.array(DELTA_SCALE, np.float32)[None])], ["box_delta"]),
    ]
    graph = helper.make_graph(
        nodes, f"{spec.name}-verifier",
        [helper.make_tensor_value_info("windows", TensorProto.FLOAT, ["n", 3, spec.height, spec.width])],
        [
            helper.make_tensor_value_info(spec.name, TensorProto.FLOAT, ["n", 1]),
            helper.make_tensor_value_info("box_delta", TensorProto.FLOAT, ["n", 4]),
        ],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="polyvision")
    model.ir_version = 8
    return with_metadata(model, {
        "task": "verify",
        "window": f"{spec.width}x{spec.height}, centred on the box, {spec.context} x max(box height, "
        f"{spec.height / spec.width:g} x box width, {spec.min_extent:g} px) tall, bilinear at output pixel centres, "
        "grey 114 outside the frame",
        "fusion": f"score = detector ** {1 - spec.weight:g} * verifier ** {spec.weight:g}",
        "members": f"{len(members)} network(s){', each also on the mirrored window' if mirrored else ''}, logits averaged",
        "licence": "CC BY 4.0 (trained on Polyvision synthetic data and on the CC BY 4.0 "
        "football-players-detection set; see MODEL_CARD.md for the attribution)",
    })


def params_of(path: Path) -> dict[str, np.ndarray]:
    """The weights of a single-network verifier file this script wrote (its convolutions back to HWIO)."""
    found = {t.name: numpy_helper.to_array(t) for t in onnx.load(str(path)).graph.initializer}
    params = {"fc_w": found["fc_w"], "fc_b": found["fc_b"]}
    for k in range(len(LAYERS)):
        if f"conv{k}_w" not in found:
            raise SystemExit(f"{path}: not a single-network verifier (no conv{k}_w)")
        params[f"conv{k}_w"] = found[f"conv{k}_w"].transpose(2, 3, 1, 0)
        params[f"conv{k}_b"] = found[f"conv{k}_b"]
    return params


def check(model: onnx.ModelProto, members: list[dict[str, np.ndarray]], spec: Spec, mirrored: bool = False) -> None:
    """onnxruntime on the graph against the JAX forward (averaged over members and views) on random windows;
    they must agree."""
    import onnxruntime as ort

    x = np.random.default_rng(0).random((5, spec.height, spec.width, 3), dtype=np.float32)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    score, box_delta = session.run(None, {"windows": x.transpose(0, 3, 1, 2)})
    outs = []
    for params in members:
        p = {k: jnp.asarray(v) for k, v in params.items()}
        outs.append(np.asarray(forward(p, jnp.asarray(x))))
        if mirrored:
            outs.append(np.asarray(forward(p, jnp.asarray(x[:, :, ::-1]))) * np.array([1, -1, 1, 1, 1], np.float32))
    out = np.mean(outs, axis=0)
    err = max(float(np.abs(score[:, 0] - 1 / (1 + np.exp(-out[:, 0]))).max()),
              float(np.abs(box_delta - out[:, 1:] * DELTA_SCALE).max()))
    print(f"onnxruntime vs JAX: {score.shape} {box_delta.shape}, max difference {err:.2e}")
    if err > 1e-4:
        raise SystemExit("exported verifier does not match the trained one")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--detector", type=Path, help="the exported detector whose candidates to verify")
    ap.add_argument("--data", action="append", default=[],
                    help="PATH[:EVERY] of a dataset (dataset.py / real_dataset.py format); every EVERYth frame mined")
    ap.add_argument("--combine", nargs="+", type=Path, default=[],
                    help="instead of training: one graph averaging these verifier files (trained with other seeds)")
    ap.add_argument("--mirrored", action="store_true", help="each network also looks at the mirrored window (averaged)")
    ap.add_argument("--target", choices=tuple(SPECS), default="person", help="the class the verifier looks at")
    ap.add_argument("--steps", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args()
    spec = SPECS[args.target]
    if args.combine:
        members = [params_of(path) for path in args.combine]
        model = build(members, spec, args.mirrored)
        check(model, members, spec, args.mirrored)
        save(model, args.out)
        return
    if not args.detector or not args.data:
        ap.error("--detector and --data are required to train")
    detector = Model(args.detector)
    sources = []
    for source in args.data:
        path, _, every = source.partition(":")
        items = mine(detector, Path(path), int(every or 1), args.target)
        # Real frames (real_dataset.py writes `matches`) are decoded smaller by the stage than renders are.
        real = "matches" in json.loads((Path(path) / "meta.json").read_text())
        counts = {label: sum(1 for _, _, y, _ in items if y == label) for label in (1, 0, -1)}
        print(f"{path}: {counts[1]} positives, {counts[0]} negatives, {counts[-1]} boxes to move only", flush=True)
        sources.append((np.load(Path(path) / "images.npy", mmap_mode="r"), items, real))
    params = train(Windows(sources, spec, args.seed), args.steps, args.seed)
    model = build([params], spec, args.mirrored)
    check(model, [params], spec, args.mirrored)
    save(model, args.out)


if __name__ == "__main__":
    main()
