"""interpolate / nn.Upsample compiled to wasm (one f32_resample per resized axis) against
eager nn and torch on every kernel provider, with a symbolic batch axis; eager nn itself is
checked against torch for every mode in tests/nn/test_functional.py."""

from __future__ import annotations

import numpy as np
import pytest

import modelc
import nn
import runtime
from nn import functional as F

PROVIDERS = ["relaxed", "simd128", "scalar", "host"]
BATCH = {"input0": {0: ("batch", 1, 4)}}


def _x(*shape: int) -> np.ndarray:
    return np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32)


# name: (layer, example input)
CASES = {
    "nearest_x2": (nn.Upsample(scale_factor=2), _x(2, 3, 5, 6)),
    "nearest_sizes": (nn.Upsample(size=(7, 4)), _x(2, 3, 5, 6)),
    "nearest_exact": (nn.Upsample(scale_factor=(1.5, 0.5), mode="nearest-exact"),
                      _x(2, 3, 5, 6)),
    "bilinear": (nn.Upsample(scale_factor=2.5, mode="bilinear"), _x(2, 3, 5, 6)),
    "bilinear_align_corners": (nn.Upsample(size=(9, 3), mode="bilinear", align_corners=True),
                               _x(2, 3, 5, 6)),
    "bicubic": (nn.Upsample(size=(8, 5), mode="bicubic"), _x(2, 3, 5, 6)),
    "linear_1d": (nn.Upsample(scale_factor=3, mode="linear"), _x(2, 4, 9)),
    "trilinear": (nn.Upsample(size=(4, 3, 7), mode="trilinear"), _x(2, 2, 3, 4, 5)),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def compiled(request):  # type: ignore[no-untyped-def]
    layer, x = CASES[request.param]
    return layer, modelc.export(layer, (x,), dynamic=BATCH), x


@pytest.mark.parametrize("kernels", PROVIDERS)
def test_upsample_in_wasm_matches_eager_and_torch(compiled, kernels: str) -> None:  # type: ignore[no-untyped-def]
    torch = pytest.importorskip("torch")
    layer, wasm, x = compiled
    with runtime.load(wasm, kernels=kernels) as session:
        for batch in (1, 3):
            inputs = np.concatenate([x] * 2)[:batch]
            got = session.run({"input0": inputs})["output0"]
            want = torch.nn.Upsample(layer.size, layer.scale_factor, layer.mode,
                                     layer.align_corners)(torch.from_numpy(inputs)).numpy()
            np.testing.assert_allclose(got, layer(inputs), rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_resample_lowers_with_the_axis_order_that_moves_least() -> None:
    graph = modelc.optimize(modelc.trace(nn.Upsample(scale_factor=2, mode="bilinear"),
                                         (_x(1, 2, 4, 4),)))
    dims = [n.attrs["dim"] for n in graph.nodes if n.op == "resample"]
    assert dims == [3, 2], "growing: the last axis (scalar gathers) first, while smallest"
    graph = modelc.optimize(modelc.trace(nn.Upsample(scale_factor=0.5, mode="bilinear"),
                                         (_x(1, 2, 4, 4),)))
    assert [n.attrs["dim"] for n in graph.nodes if n.op == "resample"] == [2, 3]


@pytest.mark.parametrize("call, message", [
    (lambda x: F.interpolate(x, scale_factor=2, mode="area"), "unknown mode 'area'"),
    (lambda x: F.interpolate(x, scale_factor=2, mode="linear"),
     r"mode 'linear' expects 3-D input, got shape \(1, 2, 4, 4\)"),
    (lambda x: F.interpolate(x), "only one of size or scale_factor should be defined"),
    (lambda x: F.interpolate(x, scale_factor=0.5, antialias=True),
     "antialias=True is not supported"),
    (lambda x: F.interpolate(x, size=(2, 3, 4)), "same number of spatial dimensions"),
    (lambda x: F.interpolate(x, scale_factor=2, align_corners=True),
     "align_corners option can only be set with the interpolating modes"),
    (lambda x: F.resample(x, 3, np.zeros((2, 1), np.int32), np.ones((2, 2), np.float32)),
     r"index \(2, 1\) and weight \(2, 2\) must both be \(out, taps\)"),
    (lambda x: F.resample(x, 3, np.full((2, 1), 4, np.int32), np.ones((2, 1), np.float32)),
     r"rows outside \[0, 4\) of axis 3"),
])
def test_interpolate_errors_name_the_offending_argument(call, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=message):
        call(_x(1, 2, 4, 4))


def test_unknown_table_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown resample mode 'area'; expected 'nearest', "
                                         "'linear' or 'cubic'"):
        F.resize.resample_tables(np.zeros(2, np.float32), 3, "area")


@pytest.mark.parametrize("index, weight, message", [
    (np.zeros((2, 1), np.int32), np.ones((2, 2), np.float32),
     r"index \[2, 1\] and weight \[2, 2\] must both be \(out, taps\)"),
    (np.zeros((2, 1), np.float32), np.ones((2, 1), np.float32),
     "resample expects a float32 input and integer indices, got float32 and float32"),
])
def test_resample_op_checks_its_tables(index, weight, message) -> None:  # type: ignore[no-untyped-def]
    from modelc import ops

    with pytest.raises(modelc.CompileError, match=message):
        ops.get("resample").infer([(1, 4), index.shape, weight.shape],
                                  ["float32", str(index.dtype), "float32"], {"dim": 1})


def test_resample_with_run_time_weights_does_not_lower() -> None:
    class Weighted(nn.Module):
        def forward(self, x, weight):  # type: ignore[no-untyped-def]
            return F.resample(x, 1, np.zeros((3, 1), np.int32), weight)

    with pytest.raises(modelc.CompileError, match="resample lowers constant index and weight "
                                                  "tables only"):
        modelc.export(Weighted(), (_x(2, 4), np.ones((3, 1), np.float32)))


def test_symbolic_resized_axis_is_refused() -> None:
    with pytest.raises(ValueError, match="spatial axis 2 has the symbolic size 'height'"):
        modelc.trace(nn.Upsample(scale_factor=2), (_x(1, 2, 4, 4),),
                     dynamic={"input0": {2: ("height", 1, 8)}})
