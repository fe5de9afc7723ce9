"""The detector graph's cell grid, computed from the feature map's runtime size (shared by
`export_onnx.py` and `dynamic_input.py`; onnx only, no JAX)."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def cell_grid_nodes(feature: str, out: str) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto]]:
    """Nodes computing the cell centres [1, 2, h, w] (x = j + 0.5, y = i + 0.5, in cells) of the
    feature map `feature` [1, C, h, w] from its runtime shape, so the graph runs at any input size."""
    inits = [
        numpy_helper.from_array(np.array(2, np.int64), "grid_h_axis"),
        numpy_helper.from_array(np.array(3, np.int64), "grid_w_axis"),
        numpy_helper.from_array(np.array(0, np.int64), "grid_zero_i"),
        numpy_helper.from_array(np.array(1, np.int64), "grid_one_i"),
        numpy_helper.from_array(np.array(0.5, np.float32), "grid_half"),
        numpy_helper.from_array(np.array(0.0, np.float32), "grid_zero_f"),
        numpy_helper.from_array(np.array([1, 1, -1, 1], np.int64), "grid_column_shape"),
        numpy_helper.from_array(np.array([1, 1, 1, -1], np.int64), "grid_row_shape"),
    ]
    n = helper.make_node
    nodes = [
        n("Shape", [feature], ["grid_shape"], name="grid_shape"),
        n("Gather", ["grid_shape", "grid_h_axis"], ["grid_h"], axis=0, name="grid_h"),
        n("Gather", ["grid_shape", "grid_w_axis"], ["grid_w"], axis=0, name="grid_w"),
        n("Range", ["grid_zero_i", "grid_h", "grid_one_i"], ["grid_i"], name="grid_i"),
        n("Range", ["grid_zero_i", "grid_w", "grid_one_i"], ["grid_j"], name="grid_j"),
        n("Cast", ["grid_i"], ["grid_i_f"], to=TensorProto.FLOAT, name="grid_i_f"),
        n("Cast", ["grid_j"], ["grid_j_f"], to=TensorProto.FLOAT, name="grid_j_f"),
        n("Add", ["grid_i_f", "grid_half"], ["grid_y_1d"], name="grid_y_1d"),
        n("Add", ["grid_j_f", "grid_half"], ["grid_x_1d"], name="grid_x_1d"),
        n("Reshape", ["grid_y_1d", "grid_column_shape"], ["grid_y_col"], name="grid_y_col"),
        n("Reshape", ["grid_x_1d", "grid_row_shape"], ["grid_x_row"], name="grid_x_row"),
        # Broadcast each to [1, 1, h, w] by adding the other times zero.
        n("Mul", ["grid_y_col", "grid_zero_f"], ["grid_y_zero"], name="grid_y_zero"),
        n("Mul", ["grid_x_row", "grid_zero_f"], ["grid_x_zero"], name="grid_x_zero"),
        n("Add", ["grid_x_row", "grid_y_zero"], ["grid_x"], name="grid_x"),
        n("Add", ["grid_y_col", "grid_x_zero"], ["grid_y"], name="grid_y"),
        n("Concat", ["grid_x", "grid_y"], [out], axis=1, name="grid"),
    ]
    return nodes, inits
