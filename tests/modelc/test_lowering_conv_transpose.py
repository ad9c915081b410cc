"""conv_transpose2d, the border pad modes and uneven adaptive_avg_pool2d through the whole
path (nn model -> modelc.export -> runtime.load -> run) against torch within 1e-4 relative,
on every kernel provider; and the compile errors for attributes they cannot take."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from executors import PROVIDERS, Lambda

import modelc
import nn
import runtime
from nn import functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

def _r(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed + sum(shape)).standard_normal(shape).astype(np.float32)


def _conv_transpose(input_shape: tuple[int, ...], out: int, kernel: tuple[int, int],
                    bias: bool = True, **attrs: object) -> tuple:
    """(ours, torch's, input, dynamic) for one transposed conv with seeded weights."""
    groups = int(attrs.get("groups", 1))  # type: ignore[call-overload]
    weight = _r(input_shape[1], out // groups, *kernel, seed=1)
    b = _r(out, seed=2) if bias else None
    tb = torch.from_numpy(b) if bias else None
    ours = lambda x: F.conv_transpose2d(x, weight, b, **attrs)
    theirs = lambda x: TF.conv_transpose2d(x, torch.from_numpy(weight), tb, **attrs)
    return ours, theirs, _r(*input_shape)


def _same(name: str, *args: object, **kwargs: object) -> tuple:
    """(ours, torch's) for an ``nn.functional`` op of the same name and arguments."""
    return (lambda x: getattr(F, name)(x, *args, **kwargs),
            lambda x: getattr(TF, name)(x, *args, **kwargs))


# name: (ours, torch's, example input, {axis: (dim, min, max)} for input0)
CASES: dict[str, tuple] = {
    "ct_3x3": (*_conv_transpose((1, 3, 7, 9), 5, (3, 3), padding=1), {}),
    "ct_stride2_output_padding": (*_conv_transpose((2, 4, 5, 7), 6, (3, 3), stride=2,
                                                   padding=1, output_padding=1),
                                  {0: ("batch", 1, 3)}),
    "ct_stride3_uneven": (*_conv_transpose((1, 5, 4, 9), 7, (4, 3), stride=(3, 2),
                                           padding=(0, 2), output_padding=(2, 1)), {}),
    "ct_dilation2": (*_conv_transpose((1, 4, 6, 5), 6, (3, 3), dilation=2, padding=(1, 3),
                                      output_padding=1), {}),
    "ct_groups2_no_bias": (*_conv_transpose((3, 6, 5, 11), 10, (3, 2), bias=False, stride=2,
                                            groups=2, dilation=(1, 3)), {}),
    "ct_depthwise": (*_conv_transpose((2, 6, 9, 13), 6, (4, 4), stride=2, padding=1,
                                      groups=6), {}),
    "ct_depthwise_multiplier": (*_conv_transpose((1, 3, 6, 7), 6, (3, 3), stride=(1, 2),
                                                 padding=1, output_padding=(0, 1), groups=3),
                                {}),
    "ct_padding_limit": (*_conv_transpose((1, 2, 5, 6), 3, (3, 3), padding=2), {}),
    "ct_padding_beyond_kernel": (*_conv_transpose((1, 3, 5, 6), 4, (2, 2), stride=3,
                                                  padding=(2, 3), output_padding=(1, 2)), {}),
    "ct_1x1_stride2": (*_conv_transpose((1, 8, 3, 5), 4, (1, 1), stride=2,
                                        output_padding=1), {}),
    "ct_wide_rows": (*_conv_transpose((1, 2, 2, 37), 17, (2, 5), padding=(0, 2)), {}),
    "pad_reflect_2d": (*_same("pad", (2, 1, 3, 0), mode="reflect"), _r(2, 3, 5, 7),
                       {0: ("batch", 1, 3)}),
    "pad_reflect_limit": (*_same("pad", (4, 4, 3, 3), mode="reflect"), _r(1, 2, 4, 5), {}),
    "pad_reflect_1d": (*_same("pad", (3, 1), mode="reflect"), _r(2, 4, 9), {}),
    "pad_replicate_wide": (*_same("pad", (6, 1, 0, 9), mode="replicate"), _r(1, 3, 4, 3),
                           {}),
    "pad_replicate_3d": (*_same("pad", (1, 2, 2, 1, 1, 1), mode="replicate"),
                         _r(1, 2, 3, 4, 5), {}),
    "pad_circular_limit": (*_same("pad", (5, 2, 1, 4), mode="circular"), _r(2, 2, 4, 5), {}),
    "adaptive_uneven": (*_same("adaptive_avg_pool2d", (3, 4)), _r(2, 3, 7, 9),
                        {0: ("batch", 1, 3)}),
    "adaptive_upsample": (*_same("adaptive_avg_pool2d", (5, 7)), _r(1, 2, 3, 4), {}),
    "adaptive_keep_width": (*_same("adaptive_avg_pool2d", (2, None)), _r(1, 4, 5, 6), {}),
    "adaptive_global": (*_same("adaptive_avg_pool2d", 1), _r(2, 5, 3, 7), {}),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def compiled(request):  # type: ignore[no-untyped-def]
    ours, theirs, x, dynamic = CASES[request.param]
    wasm = modelc.export(Lambda(ours), (x,), dynamic={"input0": dynamic} if dynamic else None)
    return wasm, theirs, x, dynamic


@pytest.mark.parametrize("kernels", PROVIDERS)
def test_lowered_op_matches_torch(compiled, kernels: str) -> None:  # type: ignore[no-untyped-def]
    wasm, theirs, x, dynamic = compiled
    inputs = [x] + ([np.concatenate([x, x[:1] * 0.5])] if dynamic else [])
    with runtime.load(wasm, kernels=kernels) as session:
        for data in inputs:
            got = session.run({"input0": data})["output0"]
            want = theirs(torch.from_numpy(data)).numpy()
            assert got.shape == want.shape
            assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()


@pytest.mark.parametrize(("fn", "x", "message"), [
    (lambda x: F.pad(x, (1, 4), mode="reflect"), _r(1, 2, 4),
     r"pad: reflect padding \[1, 4\] of axis 2 \(size 4\) must be between 0 and 3"),
    (lambda x: F.pad(x, (0, 0, 3, 0), mode="circular"), _r(1, 2, 2, 5),
     r"pad: circular padding \[0, 0, 3, 0\] of axis 2 \(size 2\) must be between 0 and 2"),
    (lambda x: F.pad(x, (-1, 2), mode="replicate"), _r(2, 6),
     r"pad: replicate padding \[-1, 2\] of axis 1 \(size 6\) must be between 0 and"),
])
def test_invalid_border_padding_is_a_compile_error(fn: Callable[..., object], x: np.ndarray,
                                                   message: str) -> None:
    with pytest.raises(modelc.CompileError, match=message):
        modelc.export(Lambda(fn), (x,))


def test_conv_transpose_output_padding_too_large_is_a_compile_error() -> None:
    graph = modelc.trace(Lambda(lambda x: F.conv_transpose2d(x, _r(2, 3, 3, 3), stride=2)),
                         (_r(1, 2, 4, 4),))
    (node,) = [n for n in graph.nodes if n.op == "conv_transpose2d"]
    node.attrs["output_padding"] = (2, 0)
    with pytest.raises(modelc.CompileError, match=r"output_padding \(2, 0\) must be smaller "
                                                  r"than either stride \(2, 2\) or dilation"):
        modelc.export(graph)


def test_conv_transpose_weight_computed_at_run_time_is_a_compile_error() -> None:
    class Tied(nn.Module):
        def forward(self, x, w):  # type: ignore[no-untyped-def]
            return F.conv_transpose2d(x, w, stride=2)

    with pytest.raises(modelc.CompileError, match="conv_transpose2d with a weight computed at "
                                                  "run time is not supported"):
        modelc.export(Tied(), (_r(1, 2, 4, 4), _r(2, 3, 3, 3)))
