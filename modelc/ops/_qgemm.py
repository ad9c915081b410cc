"""The call of one integer ``qlinear`` kernel, shared by the quantized products that lower
to it (``qlinear``; ``qconv2d`` on its im2col rows): the operands pushed in the ABI row's
order, the weight packed at compile time by ``wasm_kernels.pack_quantized``."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from wasm_kernels import abi
from wasm_kernels.pack_quantized import (
    pack_qlinear_weight,
    packs_mixed,
    packs_wide,
    qlinear_scratch_floats,
)

from ._quantized import Push, per_channel

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Shape, Value


def symmetric(weight: Value, zero_point: Value, channels: int, op: str) -> bool:
    """Whether the constant ``weight`` is int8 with zero point 0, the weights the integer
    kernels take (onnxruntime and ``modelc.quantize`` make them so)."""
    return weight.dtype == "int8" and not np.any(per_channel(zero_point, channels, "int32", op))


def scratch_shapes(rows: Shape, k: int) -> tuple[Shape, Shape]:
    """The kernel's scratch ``wa`` and ``ws`` (float32 units,
    ``pack_quantized.qlinear_scratch_floats``) for ``rows`` rows of A of length ``k``.
    With symbolic rows, ``ws`` holds ``ceil(static / QSPLIT_ROWS)`` panels per value of
    their symbolic product (at least ``ceil(rows / QSPLIT_ROWS)``)."""
    static = math.prod(d for d in rows if isinstance(d, int))
    symbolic = tuple(d for d in rows if not isinstance(d, int))
    wa, ws = qlinear_scratch_floats(static, k)
    return (*symbolic, wa), (*symbolic, ws)


def call_qlinear(ctx: LowerContext, named: dict[str, Value], a: Push, c: Push,
                 scratch: tuple[Push, Push], rows: Shape, weight: np.ndarray, activation: str,
                 dtype: str, op: str) -> None:
    """``c = finish((a - input_zero_point) @ weight.T + bias)`` over ``rows`` rows, with the
    kernel's scratch (of ``scratch_shapes(rows, k)``): ``named``
    holds the op's input scale and zero point, weight scale, optional bias and optional
    output pair (requantized when present, else dequantized to float32); ``dtype`` is
    ``a``'s, ``op`` the op lowered (``qconv2d`` calls the ``qconv`` rows) and named in
    errors. A ``qlinear`` of a few static rows takes the ``qlinear_wide`` rows when the
    weight packed wide fits (``pack_quantized.packs_wide``): twice its bytes among the
    weights; the ``qlinear_mixed`` rows instead when its panels of 7-bit columns, which
    the relaxed module's relaxed dot takes, are enough (``pack_quantized.packs_mixed``).

    Raises:
        CompileError: the weight scale is computed at run time.
    """
    n, k = weight.shape
    static = op == "qlinear" and all(isinstance(d, int) for d in rows)
    mixed = static and packs_mixed(math.prod(rows), weight)
    wide = static and not mixed and packs_wide(math.prod(rows), n, k)
    bias = named.get("bias")
    a()
    ctx.address(named["input_scale"])
    ctx.address(named["input_zero_point"])
    ctx.constant(pack_qlinear_weight(weight, wide, mixed))
    ctx.constant(per_channel(named["weight_scale"], n, "float32", op))
    if bias is not None and bias.dtype == "int32":
        ctx.address(bias)
    else:
        ctx.constant(np.zeros(n, np.int32))
    requantize = "output_scale" in named
    if requantize:
        ctx.address(named["output_scale"])
        ctx.address(named["output_zero_point"])
    elif bias is not None and bias.dtype == "float32":
        ctx.address(bias)
    else:
        ctx.constant(np.zeros(n, np.float32))
    c()
    for push in scratch:
        push()
    ctx.numel(rows)
    ctx.push(k)
    ctx.push(n)
    epilogue = ("requantize" if requantize else "dequantize",) + ((activation,) if
                                                                  activation else ())
    kernel = ("qconv" if op == "qconv2d" else "qlinear_mixed" if mixed else
              "qlinear_wide" if wide else "qlinear")
    ctx.call(abi.find("qlinear", kernel, epilogue, dtype).name)
