"""paddle2onnx's ``set_value`` (``ScatterElements`` at a ``Range`` whose bounds are known only
at run time, over the ``Shape`` of a ``Slice``) folded into ``SetSlice``: in a wasm loop at
the step counter, as PaddleOCR's table recognizer writes each decoder step, and at the top
level; compared with onnxruntime on the interpreter and on every kernel provider. Near
misses keep their refusal."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import modelc

sys.path.insert(0, str(Path(__file__).parent))
from test_control_flow import F, info, model

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper

I64 = TensorProto.INT64
ROWS, COLUMNS = 6, 3


def set_value_nodes(buffer: str, row: str, start: str, width: str, out: str,
                    delta: int = 1) -> tuple[list, list]:
    """paddle2onnx's nodes for ``buffer[:, start:start + width] = row`` (``row`` of shape
    (1, 1, COLUMNS)), ``start`` of shape (1,): the nodes and their initializers."""
    p = f"{out}_"
    inits = [numpy_helper.from_array(np.array(v, np.int64), p + name) for name, v in (
        ("axis", [1]), ("one", [1]), ("delta", [delta]), ("to", [1, -1, 1]), ("first", [0]),
        ("second", [1]), ("third", [2]), ("end", [3]), ("dim", 1))]
    nodes = [
        helper.make_node("Add", [start, width], [p + "stop"]),
        helper.make_node("Shape", [buffer], [p + "shape"]),
        helper.make_node("Gather", [p + "shape", p + "dim"], [p + "size"], axis=0),
        helper.make_node("Min", [p + "size", p + "stop"], [p + "bound"]),
        helper.make_node("Slice", [buffer, start, p + "bound", p + "axis", p + "one"],
                         [p + "sliced"]),
        helper.make_node("Shape", [p + "sliced"], [p + "sliced_shape"]),
        helper.make_node("Expand", [row, p + "sliced_shape"], [p + "updates"]),
        helper.make_node("Squeeze", [start], [p + "a"]),
        helper.make_node("Squeeze", [p + "bound"], [p + "b"]),
        helper.make_node("Squeeze", [p + "delta"], [p + "step"]),
        helper.make_node("Range", [p + "a", p + "b", p + "step"], [p + "range"]),
        helper.make_node("Reshape", [p + "range", p + "to"], [p + "column"]),
        helper.make_node("Slice", [p + "sliced_shape", p + "first", p + "second"],
                         [p + "lead"]),
        helper.make_node("Slice", [p + "sliced_shape", p + "third", p + "end"], [p + "tail"]),
        helper.make_node("Concat", [p + "lead", p + "one", p + "tail"], [p + "repeats"],
                         axis=0),
        helper.make_node("Tile", [p + "column", p + "repeats"], [p + "indices"]),
        helper.make_node("ScatterElements", [buffer, p + "indices", p + "updates"], [out],
                         axis=1)]
    return nodes, inits


def decoder_loop(width: int) -> onnx.ModelProto:
    """A loop run ``trip`` times (a graph input) whose step ``k`` (carried, from ``k0``)
    writes ``row * k + k`` into rows ``k .. k + width`` of a (1, ROWS, COLUMNS) buffer."""
    writes, inits = set_value_nodes("buf_in", "row_k", "k_in", "width", "buf_out")
    body = helper.make_graph([
        helper.make_node("Identity", ["c_in"], ["c_out"]),
        helper.make_node("Cast", ["k_in"], ["fk"], to=F),
        helper.make_node("Mul", ["row", "fk"], ["scaled"]),
        helper.make_node("Add", ["scaled", "fk"], ["row_k"]),
        *writes,
        helper.make_node("Add", ["k_in", "step_one"], ["k_out"])], "body",
        [info("i", I64, []), info("c_in", TensorProto.BOOL, []), info("k_in", I64, [1]),
         info("buf_in", F, [1, ROWS, COLUMNS])],
        [info("c_out", TensorProto.BOOL, []), info("k_out", I64, [1]),
         info("buf_out", F, [1, ROWS, COLUMNS])],
        [*inits, numpy_helper.from_array(np.array([1], np.int64), "step_one"),
         numpy_helper.from_array(np.array([width], np.int64), "width")])
    return model([helper.make_node("Loop", ["trip", "", "k0", "buf0"], ["k", "buf"],
                                   body=body)],
                 [info("trip", I64, []), info("k0", I64, [1]),
                  info("buf0", F, [1, ROWS, COLUMNS]), info("row", F, [1, 1, COLUMNS])],
                 [info("k", I64, [1]), info("buf", F, [1, ROWS, COLUMNS])])


def top_level(width: int, delta: int = 1, row: tuple[int, ...] = (1, 1, COLUMNS)
              ) -> onnx.ModelProto:
    """The writes of ``row`` at a run-time ``start`` (a graph input), outside any loop."""
    nodes, inits = set_value_nodes("buf0", "row", "start", "width", "buf", delta)
    return model(nodes, [info("start", I64, [1]), info("buf0", F, [1, ROWS, COLUMNS]),
                         info("row", F, list(row))],
                 [info("buf", F, [1, ROWS, COLUMNS])],
                 [*inits, numpy_helper.from_array(np.array([width], np.int64), "width")])


def _buffers(rng: np.random.Generator, row: tuple[int, ...] = (1, 1, COLUMNS)
             ) -> dict[str, np.ndarray]:
    return {"buf0": rng.standard_normal((1, ROWS, COLUMNS)).astype(np.float32),
            "row": rng.standard_normal(row).astype(np.float32)}


@pytest.mark.parametrize("width", [1, 2])
@pytest.mark.parametrize("trip,k0", [(4, 0), (3, 2), (7, 0), (0, 1)])
def test_set_value_in_a_run_time_loop_matches_onnxruntime(width: int, trip: int, k0: int,
                                                          check_against_ort,
                                                          check_wasm_against_ort) -> None:
    """At the loop's counter, past the buffer's end too (Min clamps, the last writes are
    empty) and with no iteration."""
    proto = decoder_loop(width)
    inputs = {"trip": np.array(trip, np.int64), "k0": np.array([k0], np.int64),
              **_buffers(np.random.default_rng(trip))}
    check_against_ort(proto, [inputs])
    check_wasm_against_ort(proto, inputs)


@pytest.mark.parametrize("start", [0, 3, 5, 6, 9])
def test_set_value_at_a_run_time_start_matches_onnxruntime(start: int,
                                                           check_wasm_against_ort) -> None:
    inputs = {"start": np.array([start], np.int64), **_buffers(np.random.default_rng(start))}
    check_wasm_against_ort(top_level(2), inputs)


def test_set_value_becomes_one_node_and_its_leftovers_go() -> None:
    from modelc.onnx.set_value import DOMAIN, fold_set_value

    folded = fold_set_value(decoder_loop(1))
    body = folded.graph.node[0].attribute[0].g
    kinds = [node.op_type for node in body.node]
    assert "SetSlice" in kinds and body.node[kinds.index("SetSlice")].domain == DOMAIN
    assert not {"ScatterElements", "Range", "Slice", "Tile", "Expand"} & set(kinds)


def test_a_range_of_another_step_is_not_folded_and_stays_refused() -> None:
    with pytest.raises(modelc.CompileError, match="Slice.*must be known at import time"):
        modelc.from_onnx(top_level(2, delta=2))


def test_values_longer_than_one_along_the_axis_are_refused_by_name() -> None:
    with pytest.raises(modelc.CompileError, match=r"SetSlice.*one long along axis 1.*\[1, 2, 3\]"):
        modelc.from_onnx(top_level(2, row=(1, 2, COLUMNS)))
