"""Resize (opsets 10-19) and Upsample (opset 9) from ONNX, compiled to wasm and run on every
kernel provider against onnxruntime: every mode, coordinate transformation and nearest
rounding, with scales and with sizes, antialiased, cropped by roi (``tf_crop_and_resize``);
a torch-exported upsampling decoder; the refusals."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from single_node import Run, r, single_node

import modelc
from modelc.errors import CompileError

TRANSFORMS = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
              "tf_half_pixel_for_nn", "half_pixel_symmetric")
ROUNDINGS = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
X = r(2, 3, 5, 6)
X9 = r(2, 3, 9, 10)
_MODES = ("nearest", "linear", "cubic")


def f32s(*values: float) -> np.ndarray:
    return np.array(values, np.float32)


def i64s(*values: int) -> np.ndarray:
    return np.array(values, np.int64)


def _resize(mode: str, transform: str, *, scales=None, sizes=None, x=X, opset=19,
            **attrs) -> tuple:
    operands = [Run(x), None, scales, sizes]
    return ("Resize", operands, {"mode": mode, "coordinate_transformation_mode": transform,
                                 **attrs}, opset)


# id: (op, operands, attrs, opset), as test_ops.CASES
CASES: dict[str, tuple] = {
    **{f"nearest_{t}_{rounding}": _resize("nearest", t, scales=f32s(1, 1, 1.5, 0.75),
                                          nearest_mode=rounding)
       for t in TRANSFORMS for rounding in ROUNDINGS},
    **{f"nearest_{t}_sizes": _resize("nearest", t, sizes=i64s(2, 3, 3, 13))
       for t in TRANSFORMS},
    **{f"linear_{t}_scales": _resize("linear", t, scales=f32s(1, 1, 2.5, 0.5))
       for t in TRANSFORMS},
    **{f"linear_{t}_sizes": _resize("linear", t, sizes=i64s(2, 3, 8, 4)) for t in TRANSFORMS},
    **{f"cubic_{t}": _resize("cubic", t, scales=f32s(1, 1, 1.6, 0.7)) for t in TRANSFORMS},
    "cubic_exclude_outside_a_half": _resize("cubic", "half_pixel", sizes=i64s(2, 3, 9, 4),
                                            exclude_outside=1, cubic_coeff_a=-0.5),
    "nearest_integer_upsample": _resize("nearest", "asymmetric", scales=f32s(1, 1, 2, 2),
                                        nearest_mode="floor"),
    "linear_axes_opset18": ("Resize", [Run(X), None, None, i64s(7, 4)],
                            {"mode": "linear", "axes": [2, -1]}, 18),
    "nearest_not_larger_opset18": ("Resize", [Run(X), None, None, i64s(9, 9)],
                                   {"axes": [2, 3], "keep_aspect_ratio_policy": "not_larger"},
                                   18),
    "linear_not_smaller_opset18": ("Resize", [Run(X), None, None, i64s(9, 9)],
                                   {"mode": "linear", "axes": [2, 3],
                                    "keep_aspect_ratio_policy": "not_smaller"}, 18),
    "linear_1d": _resize("linear", "half_pixel", scales=f32s(1, 1, 2.5), x=r(2, 3, 7)),
    "nearest_5d": _resize("nearest", "asymmetric", scales=f32s(1, 1, 2, 0.5, 1.5),
                          x=r(1, 2, 3, 4, 5)),
    "resize_opset11_empty_scales": ("Resize", [Run(X), f32s(), f32s(), i64s(2, 3, 10, 3)],
                                    {"mode": "nearest"}, 11),
    "resize_opset10_nearest_down": ("Resize", [Run(X), f32s(1, 1, 0.6, 0.5)],
                                    {"mode": "nearest"}, 10),
    "resize_opset10_linear": ("Resize", [Run(X), f32s(1, 1, 2, 1.5)], {"mode": "linear"}, 10),
    "upsample_nearest": ("Upsample", [Run(X), f32s(1, 1, 2, 3)], {"mode": "nearest"}, 9),
    "upsample_linear": ("Upsample", [Run(X), f32s(1, 1, 1.5, 2)], {"mode": "linear"}, 9),
    **{f"antialias_{mode}_{t}": _resize(mode, t, scales=f32s(1, 1, 0.4, 0.7), x=X9, opset=18,
                                        antialias=1)
       for mode in ("linear", "cubic") for t in ("half_pixel", "asymmetric", "align_corners")},
    "antialias_linear_grows_one_axis": _resize("linear", "half_pixel", x=X9, opset=18,
                                               scales=f32s(1, 1, 1.5, 0.3), antialias=1),
    "antialias_cubic_sizes_exclude_outside": _resize(
        "cubic", "half_pixel", sizes=i64s(2, 3, 4, 3), x=X9, opset=18, antialias=1,
        exclude_outside=1, cubic_coeff_a=-0.5),
    **{f"crop_{mode}": ("Resize", [Run(X9), f32s(0, 0, 0.2, -0.1, 1, 1, 0.9, 1.3), None,
                                   i64s(2, 3, 5, 7)],
                        {"mode": mode, "coordinate_transformation_mode": "tf_crop_and_resize",
                         "extrapolation_value": -3.0}, 13) for mode in _MODES},
    "crop_cubic_scales_inside": ("Resize", [Run(X9), f32s(0, 0, 0.2, 0.1, 1, 1, 0.9, 0.8),
                                            f32s(1, 1, 0.8, 0.6)],
                                 {"mode": "cubic",
                                  "coordinate_transformation_mode": "tf_crop_and_resize"}, 13),
    "crop_axes_one_row": ("Resize", [Run(X9), f32s(0.2, -0.1, 0.9, 1.3), None, i64s(1, 7)],
                          {"mode": "linear", "axes": [2, 3],
                           "coordinate_transformation_mode": "tf_crop_and_resize"}, 18),
    "crop_antialias": ("Resize", [Run(X9), f32s(0, 0, 0.2, -0.1, 1, 1, 0.9, 1.3), None,
                                  i64s(2, 3, 3, 2)],
                       {"mode": "linear", "antialias": 1, "extrapolation_value": 1.5,
                        "coordinate_transformation_mode": "tf_crop_and_resize"}, 18),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_resize_in_wasm_matches_onnxruntime(case, check_wasm_against_ort):
    check_wasm_against_ort(*single_node(*CASES[case]))


def test_symbolic_batch_resizes(check_wasm_against_ort, compare_with_ort):
    runtime = pytest.importorskip("runtime")
    model, _ = single_node(*_resize("linear", "half_pixel", scales=f32s(1, 1, 2, 2)))
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    wasm = modelc.export(modelc.from_onnx(model))
    with runtime.load(wasm) as session:
        for batch in (1, 3):
            inputs = {"in0": r(batch, 3, 5, 6)}
            compare_with_ort(session.run(inputs), model, inputs, f"batch {batch}")


@pytest.mark.parametrize("attrs, operands, match", [
    ({"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize"},
     [None, f32s(1, 1, 2, 2)], r"'tf_crop_and_resize' needs roi with a start and an end per "
                               r"resized axis \(8 values\), got None"),
    ({"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize"},
     [f32s(0, 1), f32s(1, 1, 2, 2)], r"\(8 values\), got \[0.0, 1.0\]"),
    ({"mode": "area"}, [None, f32s(1, 1, 2, 2)], r"unknown mode 'area'"),
    ({"antialias": 1}, [None, f32s(1, 1, 0.5, 0.5)],
     "antialias=1 applies to modes 'linear' and 'cubic', not 'nearest'"),
    ({"mode": "nearest", "nearest_mode": "up"}, [None, f32s(1, 1, 2, 2)],
     "unknown nearest rounding 'up'"),
    ({"coordinate_transformation_mode": "sideways"}, [None, f32s(1, 1, 2, 2)],
     "unknown coordinate_transformation_mode 'sideways'"),
    ({}, [None, f32s(1, 1, 2, 2), i64s(2, 3, 10, 12)], "exactly one of scales and sizes"),
    ({}, [None, f32s(2, 2)], r"scales \[2.0, 2.0\] must have one entry per resized axis"),
    ({}, [None, f32s(1, 1, -2, 2)], "must be positive"),
    ({}, [None, f32s(1, 1, 0.1, 1)], "axis 2 would have size 0; expected a positive int"),
    ({"keep_aspect_ratio_policy": "fit"}, [None, None, i64s(2, 3, 4, 4)],
     "unknown keep_aspect_ratio_policy 'fit'"),
])
def test_resize_refusals_name_the_node(attrs, operands, match):
    from onnx import TensorProto, helper, numpy_helper

    # NOTE: built by hand, since onnx's shape inference refuses some of these models itself.
    names = ["x", *("" if o is None else f"in{i}" for i, o in enumerate(operands, 1))]
    inits = [numpy_helper.from_array(o, f"in{i}") for i, o in enumerate(operands, 1)
             if o is not None]
    node = helper.make_node("Resize", names, ["y"], name="the_resize", **attrs)
    graph = helper.make_graph([node], "case", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, X.shape)], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    with pytest.raises(CompileError, match=rf"the_resize.*{match}"):
        modelc.from_onnx(model)


def test_cubic_upsample_before_opset_11_is_refused():
    model, _ = single_node("Upsample", [Run(X), f32s(1, 1, 2, 2)], {"mode": "linear"}, 9)
    model.graph.node[0].attribute[0].s = b"cubic"
    with pytest.raises(CompileError, match="mode 'cubic' needs Resize at opset 11 or later"):
        modelc.from_onnx(model)


def test_resize_of_a_symbolic_spatial_axis_is_refused():
    model, _ = single_node(*_resize("nearest", "asymmetric", scales=f32s(1, 1, 2, 2)))
    model.graph.input[0].type.tensor_type.shape.dim[2].dim_param = "height"
    with pytest.raises(CompileError, match="axis 2 of the input has the symbolic size "
                                           "'height'.*input_shapes"):
        modelc.from_onnx(model)


@pytest.mark.parametrize("opset", [9, 11, 17])
def test_torch_upsampling_net_in_wasm_matches_onnxruntime(opset, torch_to_onnx,
                                                          check_wasm_against_ort):
    """A feature-pyramid-like net: nearest x2 (Upsample at opset 9, Resize after), bilinear
    to a fixed size and bicubic by a scale, as torch exports them."""
    torch = pytest.importorskip("torch")
    tnn = torch.nn
    torch.manual_seed(0)

    class Net(tnn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = tnn.Conv2d(3, 4, 3, padding=1)
            self.up = tnn.Upsample(scale_factor=2)

        def forward(self, x):  # type: ignore[no-untyped-def]
            y = self.up(torch.relu(self.conv(x)))
            if opset >= 11:
                y = y + tnn.functional.interpolate(x.mean(1, keepdim=True), size=(10, 12),
                                                   mode="bilinear")
                y = tnn.functional.interpolate(y, scale_factor=0.7, mode="bicubic")
            return y

    x = r(1, 3, 5, 6)
    model = torch_to_onnx(Net(), (torch.from_numpy(x),), ["x"], ["y"], opset=opset)
    check_wasm_against_ort(model, {"x": x})


def test_torch_resize_to_sizes_with_a_dynamic_batch(torch_to_onnx, compare_with_ort):
    """torch exports a resize to a fixed size over a dynamic batch as sizes concatenated
    from Shape(x)[:2] (a symbolic batch) and the constant size."""
    torch = pytest.importorskip("torch")
    runtime = pytest.importorskip("runtime")

    class Net(torch.nn.Module):
        def forward(self, x):  # type: ignore[no-untyped-def]
            return torch.nn.functional.interpolate(x, size=(9, 4), mode="bilinear",
                                                   align_corners=True)

    x = r(2, 3, 5, 6)
    model = torch_to_onnx(Net(), (torch.from_numpy(x),), ["x"], ["y"],
                          dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}}, opset=13)
    wasm = modelc.export(modelc.from_onnx(model))
    with runtime.load(wasm) as session:
        for batch in (1, 3):
            inputs = {"x": r(batch, 3, 5, 6)}
            compare_with_ort(session.run(inputs), model, inputs, f"batch {batch}")
