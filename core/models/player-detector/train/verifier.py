"""The person verifier: a second look at each person box the detector writes (player-detector 3.3).

The detector (162 k parameters, one stride-8 scale) scores whole, clear players in striped shade at
0.5-0.6 while a few letters of a broadcaster's watermark, centre-circle arcs and board spots score as
high: at precision 0.95 it keeps only 79 % of the real validation people. The verifier looks again at
each candidate person box through a window of its own, at a size fixed in box units, and the detect
stage writes the fused score

    score = detector_score ** (1 - w) * verifier_probability ** w        (w = WEIGHT, 0.3)

a cascade's second stage (Viola & Jones 2001; the rescoring of R-CNN's region classifier, Girshick
et al. 2014) on the candidates the one-stage detector already found.

Window (`window`): centred on the box, `CONTEXT` x max(box height, 2 x box width) tall and half as
wide, sampled to WIDTH x HEIGHT (32 x 64) RGB pixels by bilinear interpolation at output pixel centres
from the frame the detector saw (the decoded frame: a 1920 x 1080 camera analysed at one tile is
decoded at 1280 x 720), grey 114 outside the frame. core/src/workers/detect/verify/window.ts samples
exactly this way; a test there checks it against numbers from this file's `sample`.

Network: five 3x3 convolutions with ReLU (16, 32, 48, 64, 64 channels; strides 1, 2, 2, 2, 2; padding
1), global mean and max pooling concatenated (128), one linear unit, sigmoid. ~83 k parameters,
~6 MMAC a window.

Data: the detector's own candidates (people after NMS, score >= MINE_SCORE) on the real training
matches (split.json: the validation matches never) and on the synthetic training renders, labelled 1
where IoU >= 0.5 with a labelled person, 0 where < 0.3 (between: not used), plus every labelled
person (visibility >= 0.25) as a positive. Half of each batch positives, half negatives (60 % of
those from the real frames). Augmentations: the box jittered (centre by 6 % / 5 % of its width /
height, size by 8 %), the frame decoded smaller (area filter, x0.45-1 on real frames, x0.8-1 on
synthetic ones, 80 % of windows), horizontal flip, and augment.py's photometric jitter, noise, blur
and JPEG re-compression. Binary cross-entropy, AdamW (weight decay 1e-4), warm-up + cosine from 2e-3,
batch 128.

Usage:
    python verifier.py --detector ../player-detector.onnx --data $WORK/real-train --data $WORK/train:4 \
        --steps 4000 --out ../person-verifier.onnx
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
from evaluate import PEOPLE, Model, detections, iou
from verifier_window import CONTEXT, HEIGHT, WEIGHT, WIDTH, crop

MINE_SCORE = 0.15
# (in, out, stride) of each 3x3 convolution (padding 1).
LAYERS = [(3, 16, 1), (16, 32, 2), (32, 48, 2), (48, 64, 2), (64, 64, 2)]
POOLED = 2 * LAYERS[-1][1]


def init_params(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    params = {}
    for k, (cin, cout, _) in enumerate(LAYERS):
        params[f"conv{k}_w"] = rng.normal(0, np.sqrt(2 / (9 * cin)), (3, 3, cin, cout)).astype(np.float32)
        params[f"conv{k}_b"] = np.zeros(cout, np.float32)
    params["fc_w"] = rng.normal(0, 0.01, (POOLED, 1)).astype(np.float32)
    params["fc_b"] = np.zeros(1, np.float32)
    return params


def forward(params, x):
    """Logits [N] of NHWC windows (RGB, 0..1)."""
    for k, (_, _, stride) in enumerate(LAYERS):
        x = jax.lax.conv_general_dilated(
            x, params[f"conv{k}_w"], (stride, stride), ((1, 1), (1, 1)), dimension_numbers=("NHWC", "HWIO", "NHWC")
        )
        x = jax.nn.relu(x + params[f"conv{k}_b"])
    pooled = jnp.concatenate([x.mean((1, 2)), x.max((1, 2))], -1)
    return (pooled @ params["fc_w"] + params["fc_b"])[:, 0]


def mine(model: Model, path: Path, every: int) -> list[tuple[int, np.ndarray, int]]:
    """(frame, box, label) of the detector's person candidates on every `every`th frame of a dataset, and
    every labelled person as a positive."""
    images, labels = np.load(path / "images.npy", mmap_mode="r"), np.load(path / "labels.npy")
    items = []
    for f in range(0, len(images), every):
        truth = labels[(labels[:, 0] == f) & np.isin(labels[:, 1], PEOPLE)]
        for _, box in detections(*model.raw(np.asarray(images[f])), MINE_SCORE)["people"]:
            overlap = iou(box, truth[:, 2:6]) if len(truth) else np.zeros(1)
            k = int(np.argmax(overlap))
            if overlap[k] >= 0.5 and truth[k, 6] >= 0.25:
                items.append((f, box, 1))
            elif overlap[k] < 0.3:
                items.append((f, box, 0))
        items += [(f, t[2:6], 1) for t in truth if t[6] >= 0.25]
    return items


class Windows:
    """Balanced, augmented training batches of windows from the mined sources."""

    def __init__(self, sources: list[tuple[np.ndarray, list, bool]], seed: int):
        self.rng = np.random.default_rng(seed)
        self.positives = [(img, f, b, real) for img, items, real in sources for f, b, y in items if y == 1]
        self.real_negatives = [(img, f, b, real) for img, items, real in sources if real for f, b, y in items if y == 0]
        self.negatives = [(img, f, b, real) for img, items, real in sources for f, b, y in items if y == 0]

    def batch(self, size: int) -> tuple[np.ndarray, np.ndarray]:
        xs, ys = [], []
        for _ in range(size):
            positive = self.rng.random() < 0.5
            pool = self.positives if positive else (self.real_negatives if self.rng.random() < 0.6 else self.negatives)
            images, f, box, real = pool[self.rng.integers(len(pool))]
            jitter = (self.rng.normal(0, 0.06), self.rng.normal(0, 0.05), self.rng.normal(0, 0.08))
            low = np.log(0.45) if real else np.log(0.8)
            decode = float(np.exp(self.rng.uniform(low, 0))) if self.rng.random() < 0.8 else 1.0
            window_px = crop(np.asarray(images[f]), box, decode, jitter)
            if self.rng.random() < 0.5:
                window_px = window_px[:, ::-1]
            xs.append(photometric(window_px, self.rng))
            ys.append(float(positive))
        return np.stack(xs).astype(np.float32), np.array(ys, np.float32)


def train(windows: Windows, steps: int, seed: int) -> dict[str, np.ndarray]:
    params = init_params(seed)
    schedule = optax.warmup_cosine_decay_schedule(0, 2e-3, 200, steps, 1e-5)
    opt = optax.adamw(schedule, weight_decay=1e-4)
    state = opt.init(params)

    @jax.jit
    def step(params, state, x, y):
        loss, grads = jax.value_and_grad(lambda p: optax.sigmoid_binary_cross_entropy(forward(p, x), y).mean())(params)
        updates, state = opt.update(grads, state, params)
        return optax.apply_updates(params, updates), state, loss

    started, ema = time.time(), None
    for i in range(steps):
        x, y = windows.batch(128)
        params, state, loss = step(params, state, x, y)
        ema = float(loss) if ema is None else 0.98 * ema + 0.02 * float(loss)
        if i % 250 == 0 or i == steps - 1:
            print(f"step {i}: loss {ema:.4f} ({time.time() - started:.0f} s)", flush=True)
    return {k: np.asarray(v) for k, v in params.items()}


def build(params: dict[str, np.ndarray]) -> onnx.ModelProto:
    """ONNX graph: input `windows` float32 [N, 3, HEIGHT, WIDTH] (RGB, pixel / 255), output `person` [N, 1]
    (probability)."""
    inits, nodes = [], []

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    x = "windows"
    for k, (_, _, stride) in enumerate(LAYERS):
        w = const(f"conv{k}_w", params[f"conv{k}_w"].transpose(3, 2, 0, 1))
        b = const(f"conv{k}_b", params[f"conv{k}_b"])
        nodes.append(helper.make_node("Conv", [x, w, b], [f"c{k}"], kernel_shape=[3, 3], strides=[stride, stride], pads=[1, 1, 1, 1]))
        nodes.append(helper.make_node("Relu", [f"c{k}"], [f"r{k}"]))
        x = f"r{k}"
    nodes += [
        helper.make_node("GlobalAveragePool", [x], ["mean"]),
        helper.make_node("GlobalMaxPool", [x], ["max"]),
        helper.make_node("Concat", ["mean", "max"], ["pooled4"], axis=1),
        helper.make_node("Flatten", ["pooled4"], ["pooled"], axis=1),
        helper.make_node("Gemm", ["pooled", const("fc_w", params["fc_w"]), const("fc_b", params["fc_b"])], ["logit"]),
        helper.make_node("Sigmoid", ["logit"], ["person"]),
    ]
    graph = helper.make_graph(
        nodes, "person-verifier",
        [helper.make_tensor_value_info("windows", TensorProto.FLOAT, ["n", 3, HEIGHT, WIDTH])],
        [helper.make_tensor_value_info("person", TensorProto.FLOAT, ["n", 1])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="polyvision")
    model.ir_version = 8
    for key, value in {
        "task": "verify",
        "window": f"{WIDTH}x{HEIGHT}, centred on the box, {CONTEXT} x max(box height, 2 x box width) tall, "
        "bilinear at output pixel centres, grey 114 outside the frame",
        "fusion": f"score = detector ** {1 - WEIGHT:g} * verifier ** {WEIGHT:g}",
        "licence": "CC BY 4.0 (trained on Polyvision synthetic data and on the CC BY 4.0 "
        "football-players-detection set; see MODEL_CARD.md for the attribution)",
    }.items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    onnx.checker.check_model(model)
    return model


def check(model: onnx.ModelProto, params: dict[str, np.ndarray]) -> None:
    """onnxruntime on the graph against the JAX forward on random windows; they must agree."""
    import onnxruntime as ort

    x = np.random.default_rng(0).random((5, HEIGHT, WIDTH, 3), dtype=np.float32)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    got = session.run(None, {"windows": x.transpose(0, 3, 1, 2)})[0][:, 0]
    want = np.asarray(jax.nn.sigmoid(forward({k: jnp.asarray(v) for k, v in params.items()}, jnp.asarray(x))))
    err = float(np.abs(got - want).max())
    print(f"onnxruntime vs JAX: {got.shape}, max difference {err:.2e}")
    if err > 1e-4:
        raise SystemExit("exported verifier does not match the trained one")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--detector", required=True, type=Path, help="the exported detector whose candidates to verify")
    ap.add_argument("--data", action="append", required=True,
                    help="PATH[:EVERY] of a dataset (dataset.py / real_dataset.py format); every EVERYth frame mined")
    ap.add_argument("--steps", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args()
    detector = Model(args.detector)
    sources = []
    for spec in args.data:
        path, _, every = spec.partition(":")
        items = mine(detector, Path(path), int(every or 1))
        # Real frames (real_dataset.py writes `matches`) are decoded smaller by the stage than renders are.
        real = "matches" in json.loads((Path(path) / "meta.json").read_text())
        print(f"{path}: {sum(y for *_, y in items)} positives, {sum(1 - y for *_, y in items)} negatives", flush=True)
        sources.append((np.load(Path(path) / "images.npy", mmap_mode="r"), items, real))
    params = train(Windows(sources, args.seed), args.steps, args.seed)
    model = build(params)
    check(model, params)
    tmp = args.out.with_suffix(".onnx.partial")
    onnx.save(model, tmp)
    tmp.replace(args.out)
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
