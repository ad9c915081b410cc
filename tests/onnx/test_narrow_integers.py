"""int8, uint8, int16, uint16 and bool tensors end to end (issue #19): graph inputs and
outputs, initializers and Constants of those dtypes, Cast between every pair of dtypes, the
data-movement ops, comparisons, Where, logic and integer arithmetic, each a one-node model
run in wasm on every kernel provider and equal to onnxruntime exactly."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from executors import PROVIDERS

sys.path.insert(0, str(Path(__file__).parent))
from single_node import Run, single_node, wasm_and_onnxruntime

import modelc
import runtime

onnx = pytest.importorskip("onnx")
from onnx import helper, numpy_helper

_rng = np.random.default_rng(8)
NARROW = ("int8", "uint8", "int16", "uint16")
DTYPES = ("float32", "int64", "int32", *NARROW, "bool")


def values(dtype: str, *shape: int) -> np.ndarray:
    """Elements of ``dtype`` from a few values (so ties occur), its extremes among them."""
    if dtype == "bool":
        return _rng.random(shape) < 0.5
    if dtype == "float32":
        return _rng.choice(np.array([0.0, -0.0, 0.5, -1.9, 127.9, 200.7, -129.0, 40000.0,
                                     -70000.0, 255.5, 3e9, -3e9, np.nan, np.inf],
                                    np.float32), shape)
    info = np.iinfo(dtype)
    return _rng.choice(np.array(sorted({int(info.min), int(info.min) + 1, 0, 1, 2, 5, 127,
                                        int(info.max) - 1, int(info.max)}), dtype), shape)


def _cast_source(source: str, target: str) -> np.ndarray:
    x = values(source, 3, 5)
    if source == "float32" and target in ("int32", "int64"):
        # NOTE: outside the int32/int64 range ONNX leaves the result undefined; wasm's
        # conversion saturates where x86's (onnxruntime's) gives the smallest integer.
        x = np.where(np.abs(x) < 2 ** 31, x, 7.0).astype(np.float32)
    return x


def _to(dtype: str) -> int:
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def _cases(dtype: str) -> dict[str, tuple]:
    """id: (op, operands, attrs, opset[, outputs]) of ``dtype`` tensors."""
    i64 = lambda *v: np.array(v, np.int64)  # noqa: E731
    cases = {
        "identity": ("Identity", [Run(values(dtype, 2, 3))], {}, 13),
        "reshape": ("Reshape", [Run(values(dtype, 2, 6)), i64(3, -1)], {}, 14),
        "transpose": ("Transpose", [Run(values(dtype, 2, 3, 5))], {"perm": [2, 0, 1]}, 13),
        "transpose_inner": ("Transpose", [Run(values(dtype, 3, 4, 5, 2))],
                            {"perm": [0, 1, 3, 2]}, 13),
        "slice_step": ("Slice", [Run(values(dtype, 4, 9)), i64(1, 8), i64(4, 0), i64(0, 1),
                                 i64(1, -3)], {}, 13),
        "concat": ("Concat", [Run(values(dtype, 2, 3)), Run(values(dtype, 2, 5)),
                              values(dtype, 2, 1)], {"axis": 1}, 13),
        "split": ("Split", [Run(values(dtype, 5, 3)), i64(2, 3)], {}, 13, 2),
        "gather_known_indices": ("Gather", [Run(values(dtype, 4, 3)), i64(3, 0, 3)],
                                 {"axis": 0}, 13),
        "gather_known_table": ("Gather", [values(dtype, 7, 3),
                                          Run(np.array([[6, 0], [2, 2]], np.int64))],
                               {"axis": 0}, 13),
        "gather_known_column": ("Gather", [values(dtype, 9),
                                           Run(np.array([8, 0, 3, 3, 1], np.int32))],
                                {"axis": 0}, 13),
        "squeeze": ("Squeeze", [Run(values(dtype, 3, 1, 4)), i64(1)], {}, 13),
        "unsqueeze": ("Unsqueeze", [Run(values(dtype, 3, 4)), i64(0, 3)], {}, 13),
        "expand": ("Expand", [Run(values(dtype, 3, 1)), i64(2, 3, 4)], {}, 13),
        "tile": ("Tile", [Run(values(dtype, 2, 3)), i64(2, 2)], {}, 13),
        "pad": ("Pad", [Run(values(dtype, 2, 3)), i64(0, 1, 1, 2)], {}, 13),
        "where": ("Where", [Run(values("bool", 2, 3)), Run(values(dtype, 2, 3)),
                            values(dtype, 3)], {}, 16),
        "equal": ("Equal", [Run(values(dtype, 2, 3)), Run(values(dtype, 3))], {}, 13),
    }
    if dtype != "bool":
        cases.update({
            "less": ("Less", [Run(values(dtype, 2, 3)), Run(values(dtype, 3))], {}, 13),
            "greater_or_equal": ("GreaterOrEqual", [Run(values(dtype, 2, 3)),
                                                    values(dtype, 1)], {}, 16),
            "add_wraps": ("Add", [Run(values(dtype, 2, 3)), Run(values(dtype, 3))], {}, 14),
            "sub_wraps": ("Sub", [Run(values(dtype, 2, 3)), values(dtype, 2, 1)], {}, 14),
            "mul_wraps": ("Mul", [Run(values(dtype, 2, 3)), Run(values(dtype, 2, 3))], {}, 14),
        })
    else:
        cases.update({
            "not": ("Not", [Run(values(dtype, 2, 3))], {}, 13),
            "and": ("And", [Run(values(dtype, 2, 3)), Run(values(dtype, 3))], {}, 13),
            "or": ("Or", [Run(values(dtype, 2, 3)), Run(values(dtype, 3))], {}, 13),
            "xor": ("Xor", [Run(values(dtype, 2, 3)), values(dtype, 2, 1)], {}, 13),
        })
    return cases


CASES = {f"{name}_{dtype}": case for dtype in (*NARROW, "bool")
         for name, case in _cases(dtype).items()}
CASES.update({f"{name}_{dtype}": case for dtype in ("int8", "uint8", "int32", "int64")
              for name, case in {
                  "max": ("Max", [Run(values(dtype, 2, 3)), Run(values(dtype, 3))], {}, 13),
                  "min": ("Min", [Run(values(dtype, 2, 3)), values(dtype, 2, 1)], {}, 13),
                  "clip": ("Clip", [Run(values(dtype, 3, 4)), np.array(0, dtype),
                                    np.array(5, dtype)], {}, 13)}.items()})
CASTS = {f"cast_{s}_to_{t}": ("Cast", [Run(_cast_source(s, t))], {"to": _to(t)}, 13)
         for s in DTYPES for t in DTYPES if s != t}


ORT_LACKS = {"pad_int16", "pad_uint16", "where_bool", "where_int16", "where_uint16"}
"""Cases onnxruntime has no CPU kernel for: onnx's reference evaluator is the oracle."""


@pytest.mark.parametrize("kernels", PROVIDERS)
@pytest.mark.parametrize("case", sorted(set(CASES) - ORT_LACKS) + sorted(CASTS))
def test_narrow_op_equals_onnxruntime(case: str, kernels: str) -> None:
    spec = CASES.get(case) or CASTS[case]
    for got, want in wasm_and_onnxruntime(spec, kernels):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("kernels", PROVIDERS)
@pytest.mark.parametrize("case", sorted(ORT_LACKS))
def test_narrow_op_equals_the_onnx_reference(case: str, kernels: str) -> None:
    from onnx.reference import ReferenceEvaluator

    model, feeds = single_node(*CASES[case])
    wants = ReferenceEvaluator(model).run(None, feeds)
    with runtime.load(modelc.export(modelc.from_onnx(model)), kernels=kernels) as session:
        gots = list(session.run(feeds).values())
    for got, want in zip(gots, wants, strict=True):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_pixels_in_a_mask_out_through_a_constant(compare_with_ort) -> None:  # type: ignore[no-untyped-def]
    """An image model's front and back: uint8 pixels cast to float and scaled by a uint8
    Constant, a bool mask and an int16 output."""
    nodes = [
        helper.make_node("Constant", [], ["scale"], value=numpy_helper.from_array(
            np.array([2, 3, 4], np.uint8).reshape(1, 3, 1, 1))),
        helper.make_node("Mul", ["pixels", "scale"], ["scaled"]),
        helper.make_node("Cast", ["scaled"], ["x"], to=_to("float32")),
        helper.make_node("Greater", ["x", "half"], ["mask"]),
        helper.make_node("Cast", ["x"], ["wide"], to=_to("int16")),
    ]
    graph = helper.make_graph(nodes, "pixels", [
        helper.make_tensor_value_info("pixels", _to("uint8"), ["n", 3, 2, 4])], [
        helper.make_tensor_value_info("mask", _to("bool"), None),
        helper.make_tensor_value_info("wide", _to("int16"), None)],
        [numpy_helper.from_array(np.array(300.0, np.float32), "half")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    wasm = modelc.export(modelc.from_onnx(model, dynamic={"pixels": {0: ("n", 1, 4)}}))
    for kernels in PROVIDERS:
        with runtime.load(wasm, kernels=kernels) as session:
            assert [(i.name, i.dtype) for i in session.inputs] == [("pixels", "uint8")]
            assert [(o.name, o.dtype) for o in session.outputs] == [("mask", "bool"),
                                                                    ("wide", "int16")]
            for n in (1, 3):
                feeds = {"pixels": _rng.integers(0, 256, (n, 3, 2, 4)).astype(np.uint8)}
                got = session.run(feeds)
                assert got["mask"].dtype == bool and got["wide"].dtype == np.int16
                compare_with_ort(got, model, feeds, kernels)


def test_a_wrong_input_dtype_is_named() -> None:
    model, feeds = single_node("Cast", [Run(values("uint8", 4))], {"to": _to("float32")}, 13)
    with runtime.load(modelc.export(modelc.from_onnx(model))) as session:
        with pytest.raises(TypeError, match=r"'in0'.*uint8.*float32"):
            session.run({"in0": np.zeros(4, np.float32)})


def _narrow_pairs(dtype: type) -> tuple[np.ndarray, np.ndarray]:
    """Every int8 / uint8 pair with a nonzero divisor; for 16 bits, a seeded 50,000 with
    the extremes."""
    info = np.iinfo(dtype)
    if info.bits == 8:
        a, b = np.meshgrid(np.arange(info.min, info.max + 1), np.arange(info.min, info.max + 1))
    else:
        a, b = (_rng.integers(info.min, info.max + 1, 50_000) for _ in range(2))
        a[:4], b[:4] = [info.min, info.max, info.min, info.max], [1, 1, -1 % (info.max + 1), 7]
    keep = b.ravel() != 0
    return a.ravel()[keep].astype(dtype), b.ravel()[keep].astype(dtype)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16])
@pytest.mark.parametrize("op, attrs", [("Div", {}), ("Mod", {"fmod": 0}), ("Mod", {"fmod": 1})])
def test_narrow_integer_division_at_run_time_is_exact_in_wasm(dtype, op, attrs):
    """Through float32, against numpy's integer arithmetic (Div truncates toward zero)."""
    a, b = _narrow_pairs(dtype)
    wide_a, wide_b = a.astype(np.int64), b.astype(np.int64)
    if op == "Div":
        want = (np.abs(wide_a) // np.abs(wide_b) * np.sign(wide_a) * np.sign(wide_b))
    else:
        want = np.fmod(wide_a, wide_b) if attrs["fmod"] else np.mod(wide_a, wide_b)
    model, feeds = single_node(op, [Run(a), Run(b)], attrs, 13)
    with runtime.load(modelc.export(modelc.from_onnx(model))) as session:
        (got,) = session.run(feeds).values()
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, want.astype(dtype))
