"""Lowerings of embedding, cast, where, concat, split, slice, pad, group_norm, batch_norm,
pooling, softmax along inner axes, pow by constants and rsqrt: small models compiled to
wasm against eager nn on every kernel provider."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import modelc
import nn
import runtime
from nn import functional as F

PROVIDERS = ["relaxed", "simd128", "scalar", "host"]


class Lambda(nn.Module):
    def __init__(self, fn: Callable[..., object]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args):  # type: ignore[no-untyped-def]
        return self.fn(*args)


RNG = np.random.default_rng(0)
TABLE = RNG.standard_normal((11, 6)).astype(np.float32)
GAMMA = RNG.standard_normal(6).astype(np.float32)
BETA = RNG.standard_normal(6).astype(np.float32)
MEAN = RNG.standard_normal(6).astype(np.float32)
VAR = RNG.uniform(0.5, 2, 6).astype(np.float32)


def _x(*shape: int) -> np.ndarray:
    return np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32)


# name: (function, example inputs, {input: {axis: (dim, min, max)}})
CASES: dict[str, tuple[Callable[..., object], tuple[np.ndarray, ...], dict]] = {
    "embedding": (lambda ids: F.embedding(ids, TABLE) * 2.0,
                  (np.array([[1, 0, 10], [3, 3, 7]], np.int64),), {}),
    "cast_i64_f32": (lambda ids: F.cast(ids, np.float32) + 0.5,
                     (np.array([[5, -3, 30521]], np.int64),), {}),
    "cast_bool_f32": (lambda m: F.cast(m, np.float32) * 3.0,
                      (np.array([[True, False, True]]),), {}),
    "where": (lambda m, x: F.where(m, x, -1.5), (np.array([[True, False, True]]), _x(2, 3)),
              {}),
    "concat": (lambda x: F.concat([F.relu(x), x, F.neg(x)], 1), (_x(2, 3, 4),),
               {"input0": {0: ("batch", 1, 3)}}),
    "split_slice": (lambda x: F.split(x, [1, 3], 2)[1] + F.slice(x, 2, 1, None, 1),
                    (_x(2, 3, 4, 5),), {}),
    "slice_last": (lambda x: F.slice(x, -1, 1, 7, 3), (_x(3, 8),),
                   {"input0": {0: ("rows", 1, 4)}}),
    "pad_crop": (lambda x: F.pad(x, (2, -1, 1, 0), value=0.25), (_x(2, 3, 4, 5),), {}),
    "group_norm": (lambda x: F.group_norm(x, 3, GAMMA, BETA), (_x(2, 6, 4, 3),),
                   {"input0": {0: ("batch", 1, 3)}}),
    "instance_norm": (lambda x: F.instance_norm(x), (_x(2, 6, 5),), {}),
    "batch_norm": (lambda x: F.batch_norm(F.relu(x), MEAN, VAR, GAMMA, BETA),
                   (_x(2, 6, 3, 3),), {}),
    "avg_pool": (lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
                 (_x(1, 2, 7, 8),), {}),
    "max_pool": (lambda x: F.max_pool2d(x, 3, 2, 1), (_x(2, 2, 9, 9),), {}),
    "adaptive_pool": (lambda x: F.adaptive_avg_pool2d(x, (2, 3)), (_x(1, 2, 4, 9),), {}),
    "softmax_inner_axes": (lambda x: F.softmax(x, 1) + F.softmax(x, 0) * F.softmax(x, -1),
                           (_x(3, 4, 5),), {"input0": {0: ("batch", 1, 3)}}),
    "pow_constants": (lambda x: F.pow(x, 2) - F.pow(x, 3) + F.pow(F.abs(x) + 0.5, -1.5)
                      + F.pow(F.abs(x) + 0.1, 0.3) + F.pow(x, -2) * 1e-3, (_x(2, 9),), {}),
    "rms_norm": (lambda x: x * F.rsqrt(F.mean(F.pow(x, 2), -1, keepdim=True) + 1e-6),
                 (_x(2, 3, 8),), {"input0": {0: ("batch", 1, 4)}}),
    # A mask row per batch element, shared by its heads: matmul + add fuse into f32_bmm_bias.
    "matmul_mask_rows": (lambda q, k, mask: F.matmul(q, k) + mask,
                         (_x(2, 3, 5, 4), _x(2, 3, 4, 6), _x(2, 1, 1, 6)), {}),
    "matmul_shared_b_bias": (lambda q, k, bias: F.relu(F.matmul(q, k) + bias),
                             (_x(2, 3, 5, 4), _x(4, 7), _x(7)), {}),
    "compare_masks": (lambda x, y: F.cast(F.lt(x, y), np.float32) + F.cast(F.ge(x, 0.25),
                                                                           np.float32) * 2.0,
                      (_x(2, 3, 5), _x(5)), {}),
    "cast_i64_bool": (lambda ids: F.where(F.cast(ids, np.bool_), 1.5, -0.5),
                      (np.array([[0, 3, -1, 0, 2 ** 40]], np.int64),), {}),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def compiled(request):  # type: ignore[no-untyped-def]
    fn, inputs, dynamic = CASES[request.param]
    model = Lambda(fn)
    return model, modelc.export(model, inputs, dynamic=dynamic), inputs


@pytest.mark.parametrize("kernels", PROVIDERS)
def test_lowered_op_matches_eager(compiled, kernels: str) -> None:  # type: ignore[no-untyped-def]
    model, wasm, inputs = compiled
    expected = model(*inputs)
    with runtime.load(wasm, kernels=kernels) as session:
        got = session.run({f"input{i}": x for i, x in enumerate(inputs)})["output0"]
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_embedding_index_out_of_range_traps() -> None:
    model = Lambda(lambda ids: F.embedding(ids, TABLE))
    wasm = modelc.export(model, (np.zeros((1, 2), np.int64),))
    with runtime.load(wasm, kernels="simd128") as session, \
            pytest.raises(runtime.Trap, match="unreachable"):
        session.run({"input0": np.array([[1, 11]], np.int64)})


def test_unsupported_cast_names_the_available_ones() -> None:
    model = Lambda(lambda x: F.cast(x, np.int16))
    with pytest.raises(modelc.CompileError, match="cast float32 -> int16 is not lowered; "
                                                  "available: .*int64 -> float32"):
        modelc.export(model, (np.zeros(3, np.float32),))


@pytest.mark.parametrize("fn, message", [
    (lambda x, y: F.pow(x, y), "constant scalar exponent other than 0, got a tensor"),
    (lambda x, y: F.pow(x, 0.0) + y, "constant scalar exponent other than 0, got 0.0"),
])
def test_pow_that_cannot_lower_says_why(fn, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(modelc.CompileError, match=message):
        modelc.export(Lambda(fn), (np.ones(3, np.float32), np.ones(3, np.float32)))


def test_every_abi_unary_op_has_an_op_file_and_a_reference() -> None:
    from modelc import ops
    from modelc.ops._families import Unary
    from nn import functional as F
    from wasm_kernels import abi

    for op in abi.UNARY_OPS:
        assert isinstance(ops.get(op), Unary), op
        assert ops.get(op).kernel == f"f32_{op}"
        assert callable(getattr(F, op)), op
    kernel_backed = {op for op in ops.available()
                     if isinstance(ops.get(op), Unary) and ops.get(op).kernel}
    assert kernel_backed == set(abi.UNARY_OPS)


def test_gemm_like_ops_fuse_what_their_kernel_family_fuses() -> None:
    from modelc import ops
    from wasm_kernels import abi

    assert ops.get("linear").epilogues == abi.fusable("linear")
    assert ops.get("conv2d").epilogues == abi.fusable("conv")
    for op in ops.available():
        kernel = getattr(ops.get(op), "kernel", "")
        if isinstance(kernel, str) and kernel:
            assert kernel in abi.BY_NAME, (op, kernel)
