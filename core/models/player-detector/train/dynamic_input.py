"""Rewrites an exported detector (fixed 720 x 1280 input, constant cell grid) into the graph
`export_onnx.build` writes now: symbolic input height and width (multiples of 8) and the cell grid
computed from the feature map's size. The weights and every output at the old size are unchanged.

Usage (done once for player-detector 2.1 -> 2.2; exports from then on are written this way):
    python dynamic_input.py --model ../player-detector.onnx --out ../player-detector.onnx
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

from onnx_grid import cell_grid_nodes


def convert(model: onnx.ModelProto) -> onnx.ModelProto:
    graph = model.graph
    names = {i.name for i in graph.initializer}
    if "grid" not in names or "out_shape" not in names:
        raise SystemExit("not a fixed-size export: no constant `grid` / `out_shape` to replace")
    kept = [i for i in graph.initializer if i.name not in ("grid", "out_shape")]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    graph.initializer.append(numpy_helper.from_array(np.array([1, channels_of(model), -1], np.int64), "out_shape"))
    grid_nodes, grid_inits = cell_grid_nodes("raw", "grid")
    graph.initializer.extend(grid_inits)
    nodes = list(graph.node)
    head = next(k for k, node in enumerate(nodes) if "raw" in node.output)
    del graph.node[:]
    graph.node.extend(nodes[: head + 1] + grid_nodes + nodes[head + 1 :])
    dims = graph.input[0].type.tensor_type.shape.dim
    dims[2].Clear()
    dims[2].dim_param = "height"
    dims[3].Clear()
    dims[3].dim_param = "width"
    out = graph.output[0].type.tensor_type.shape.dim
    out[2].Clear()
    out[2].dim_param = "cells"
    onnx.checker.check_model(model)
    return model


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, type=Path)
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args()
    before = ort.InferenceSession(str(args.model), providers=["CPUExecutionProvider"])
    model = convert(onnx.load(str(args.model)))
    after = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(0).random((1, 3, 720, 1280), dtype=np.float32)
    want = before.run(None, {"images": x})[0]
    diff = (np.abs(after.run(None, {"images": x})[0] - want) / (1 + np.abs(want))).max()
    small = after.run(None, {"images": x[:, :, :472, :]})[0]
    print(f"720x1280: max relative difference {diff:.1e}; 472x1280 runs: output {small.shape}")
    # Not bit-identical: onnxruntime picks other convolution kernels for a symbolic shape (~1e-7 relative).
    if diff > 1e-5 or small.shape != (1, channels_of(model), 59 * 160):
        raise SystemExit("converted model does not match")
    tmp = args.out.with_suffix(".onnx.partial")
    onnx.save(model, tmp)
    tmp.replace(args.out)
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes)")


def channels_of(model: onnx.ModelProto) -> int:
    return model.graph.output[0].type.tensor_type.shape.dim[1].dim_value


if __name__ == "__main__":
    main()
