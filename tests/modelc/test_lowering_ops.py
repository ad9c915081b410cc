"""Lowering errors and traps, and the compiler's ops checked against the kernel ABI. The
op cases themselves (every op on every provider) are rows of ``tests/cases/ops.py``."""

from __future__ import annotations

import numpy as np
import pytest
from executors import Lambda

import modelc
import runtime
from nn import functional as F

TABLE = np.random.default_rng(0).standard_normal((11, 6)).astype(np.float32)


def test_embedding_index_out_of_range_traps() -> None:
    model = Lambda(lambda ids: F.embedding(ids, TABLE))
    wasm = modelc.export(model, (np.zeros((1, 2), np.int64),))
    with runtime.load(wasm, kernels="simd128") as session, \
            pytest.raises(runtime.Trap, match="unreachable"):
        session.run({"input0": np.array([[1, 11]], np.int64)})


def test_unsupported_cast_names_the_available_ones() -> None:
    model = Lambda(lambda x: F.cast(F.cast(x, np.uint32), np.float32))
    with pytest.raises(modelc.CompileError, match="cast float32 -> uint32 is not lowered; "
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
