"""Exports trained parameters (train.py) to ONNX with the box decoding in the graph.

Input  `images`: float32 [1, 3, H, W], RGB, values 0..1 (pixel / 255), H and W
       any multiples of 8 (symbolic `height`, `width`): the graph is fully
       convolutional and builds its cell grid from the feature map's size. The
       nominal size (default 720 x 1280, metadata `imgsz`) is the one the tiling
       rule plans tiles for; a tile smaller than it may be fed at its own size,
       rounded up to a multiple of 8, instead of letterboxed into 720 x 1280.
Output `output0`: float32 [1, 4 + C, N], YOLOv8 export layout: rows cx, cy,
       w, h (input pixels), then C class scores (sigmoid, no objectness);
       N = (H / 8) * (W / 8) cells in row-major order.

Usage:
    python export_onnx.py --params work/params.npz --out ../player-detector.onnx
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from model import CLASS_NAMES, LAYERS, NUM_CLASSES, RESIDUAL_DILATIONS, STRIDE, residual_blocks, residual_prefix
from onnx_grid import cell_grid_nodes


def build(params: dict[str, np.ndarray], height: int, width: int) -> onnx.ModelProto:
    """The detector graph for `params`; `height` x `width` is the nominal input (metadata `imgsz`)."""
    if height % STRIDE or width % STRIDE:
        raise SystemExit(f"input size {width}x{height} must be a multiple of {STRIDE}")
    inits = []
    nodes = []

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    x = "images"
    for k, (_, _, stride, dilation) in enumerate(LAYERS):
        w = const(f"conv{k}.weight", params[f"conv{k}_w"].transpose(3, 2, 0, 1).astype(np.float32))
        b = const(f"conv{k}.bias", params[f"conv{k}_b"].astype(np.float32))
        nodes.append(helper.make_node(
            "Conv", [x, w, b], [f"conv{k}"], kernel_shape=[3, 3], strides=[stride, stride],
            pads=[dilation] * 4, dilations=[dilation, dilation], name=f"conv{k}",
        ))
        nodes.append(helper.make_node("Relu", [f"conv{k}"], [f"relu{k}"], name=f"relu{k}"))
        x = f"relu{k}"
    # Bottleneck residual blocks (model.RESIDUAL): relu(x + conv1x1(relu(conv3x3(x)))); block 0's node names are
    # those of version 2 (res_a, res_b, res_add, res_out), block k's carry its prefix res{k}.
    for block in range(residual_blocks(params)):
        pre, d = residual_prefix(block), RESIDUAL_DILATIONS[block]
        for part, kernel, pad, dil, src in (("a", 3, d, d, x), ("b", 1, 0, 1, f"{pre}_a_relu")):
            name = f"{pre}_{part}"
            w = const(f"{name}.weight", params[f"{name}_w"].transpose(3, 2, 0, 1).astype(np.float32))
            b = const(f"{name}.bias", params[f"{name}_b"].astype(np.float32))
            nodes.append(helper.make_node(
                "Conv", [src, w, b], [name], kernel_shape=[kernel, kernel], pads=[pad] * 4,
                dilations=[dil, dil], name=name,
            ))
            if part == "a":
                nodes.append(helper.make_node("Relu", [name], [f"{name}_relu"], name=f"{name}_relu"))
        nodes += [
            helper.make_node("Add", [x, f"{pre}_b"], [f"{pre}_sum"], name=f"{pre}_add"),
            helper.make_node("Relu", [f"{pre}_sum"], [f"{pre}_out"], name=f"{pre}_relu"),
        ]
        x = f"{pre}_out"
    hw = const("head.weight", params["head_w"].transpose(3, 2, 0, 1).astype(np.float32))
    hb = const("head.bias", params["head_b"].astype(np.float32))
    nodes.append(helper.make_node("Conv", [x, hw, hb], ["raw"], kernel_shape=[1, 1], name="head"))
    # Decode: split channels into offsets (2), log sizes (2), class logits (C).
    const("split", np.array([2, 2, NUM_CLASSES], np.int64))
    nodes.append(helper.make_node("Split", ["raw", "split"], ["offsets", "logsize", "logits"], axis=1, name="split"))
    grid_nodes, grid_inits = cell_grid_nodes("raw", "grid")
    nodes += grid_nodes
    inits += grid_inits
    const("stride", np.array(STRIDE, np.float32))
    nodes += [
        helper.make_node("Add", ["offsets", "grid"], ["centre_cells"], name="add_grid"),
        helper.make_node("Mul", ["centre_cells", "stride"], ["centre"], name="centre_px"),
        helper.make_node("Exp", ["logsize"], ["size_cells"], name="exp_size"),
        helper.make_node("Mul", ["size_cells", "stride"], ["size"], name="size_px"),
        helper.make_node("Sigmoid", ["logits"], ["scores"], name="scores"),
        helper.make_node("Concat", ["centre", "size", "scores"], ["decoded"], axis=1, name="concat"),
    ]
    const("out_shape", np.array([1, 4 + NUM_CLASSES, -1], np.int64))
    nodes.append(helper.make_node("Reshape", ["decoded", "out_shape"], ["output0"], name="flatten"))
    graph = helper.make_graph(
        nodes, "polyvision-player-detector",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 3, "height", "width"])],
        [helper.make_tensor_value_info("output0", TensorProto.FLOAT, [1, 4 + NUM_CLASSES, "cells"])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="polyvision-train")
    model.ir_version = 8
    names = {str(i): n for i, n in enumerate(CLASS_NAMES)}
    return with_metadata(model, {
        "names": repr(names),
        "stride": str(STRIDE),
        "imgsz": repr([height, width]),
        "task": "detect",
        "layout": "[1, 4 + C, N]: cx, cy, w, h (input pixels), class scores (sigmoid)",
        "normalisation": "RGB, pixel / 255, NCHW; letterbox with grey 114 to the input size",
        "licence": "CC BY 4.0 (trained on Polyvision synthetic data and on the CC BY 4.0 "
        "football-players-detection set; see MODEL_CARD.md for the attribution)",
    })


def with_metadata(model: onnx.ModelProto, metadata: dict[str, str]) -> onnx.ModelProto:
    """`model` with `metadata` in its metadata_props, checked by onnx.checker."""
    for key, value in metadata.items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    onnx.checker.check_model(model)
    return model


def check(model: onnx.ModelProto, params: dict[str, np.ndarray], height: int, width: int) -> None:
    """Runs the ONNX graph in onnxruntime and the JAX model on the same random image; they must agree."""
    import jax.numpy as jnp
    import onnxruntime as ort

    from model import decode, forward

    x = np.random.default_rng(0).random((1, height, width, 3), dtype=np.float32)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    got = session.run(None, {"images": x.transpose(0, 3, 1, 2)})[0][0]
    raw = np.asarray(forward({k: jnp.asarray(v) for k, v in params.items()}, jnp.asarray(x)))[0]
    boxes, scores = decode(raw)
    want = np.concatenate([boxes, scores], 1).T
    err = np.abs(got - want) / (1 + np.abs(want))
    print(f"onnxruntime vs JAX: output {got.shape}, max relative difference {err.max():.2e}")
    if got.shape != (4 + NUM_CLASSES, (height // STRIDE) * (width // STRIDE)) or err.max() > 1e-3:
        raise SystemExit("exported model does not match the trained one")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--params", required=True, type=Path)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--height", type=int, default=720)
    ap.add_argument("--width", type=int, default=1280)
    args = ap.parse_args()
    loaded = np.load(args.params)
    params = {k: loaded[k] for k in loaded.files if k != "steps_done"}
    model = build(params, args.height, args.width)
    check(model, params, args.height, args.width)
    save(model, args.out)


def save(model: onnx.ModelProto, out: Path) -> None:
    """Writes `model` to `out` through a temporary name (no half-written model under the final name)."""
    tmp = out.with_suffix(".onnx.partial")
    onnx.save(model, tmp)
    tmp.replace(out)
    print(f"wrote {out} ({out.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
