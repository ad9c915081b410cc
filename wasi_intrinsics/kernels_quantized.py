"""The host provider's quantized families (``quantize``, ``qlinear``, ``qconv``): numpy
written from the ABI rows' text, an oracle independent of both the wasm templates and
``nn.functional``."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from wasm_kernels import abi
from wasm_kernels.pack_quantized import packed_qlinear_bytes, unpack_qlinear_weight

from .intrinsic import HostContext
from .kernel_operands import operand

F32, I32 = np.dtype("<f4"), np.dtype("<i4")
BYTES = {"uint8": np.dtype("u1"), "int8": np.dtype("i1")}
RANGES = {"uint8": (0, 255), "int8": (-128, 127)}


def saturate(values: np.ndarray, dtype: str) -> np.ndarray:
    low, high = RANGES[dtype]
    return np.clip(np.nan_to_num(values, nan=0.0), low, high).astype(BYTES[dtype])


def _quantize(ctx: HostContext, x: int, scale: int, zero_point: int, y: int, outer: int,
              channels: int, inner: int, signed: int) -> None:
    dtype = "int8" if signed else "uint8"
    memory = ctx.memory
    values = operand(memory, x, (outer, channels, inner))
    scales = operand(memory, scale, (channels, 1))
    zeros = operand(memory, zero_point, (channels, 1), BYTES[dtype]).astype(np.float32)
    operand(memory, y, (outer, channels, inner), BYTES[dtype])[...] = saturate(
        np.rint(values / scales) + zeros, dtype)


def _dequantize(spec: abi.KernelSpec) -> Callable[..., None]:
    source = BYTES[spec.dtypes[0]]

    def run(ctx: HostContext, x: int, scale: int, zero_point: int, y: int, outer: int,
            channels: int, inner: int) -> None:
        memory = ctx.memory
        values = operand(memory, x, (outer, channels, inner), source).astype(np.int32)
        zeros = operand(memory, zero_point, (channels, 1), source).astype(np.int32)
        operand(memory, y, (outer, channels, inner))[...] = (
            (values - zeros).astype(np.float32) * operand(memory, scale, (channels, 1)))

    return run


def dynamic_quantize(ctx: HostContext, x: int, y: int, scale: int, zero_point: int,
                     n: int) -> None:
    """``f32_dynamic_quantize_linear`` of the n floats at ``x``."""
    memory = ctx.memory
    values = operand(memory, x, (n,))
    low = min(np.float32(0), values.min(initial=np.float32(0)))
    high = max(np.float32(0), values.max(initial=np.float32(0)))
    step = np.float32((high - low) / np.float32(255)) if high > low else np.float32(1)
    zero = saturate(np.rint(np.float32(0) - low / step), "uint8")
    operand(memory, scale, (1,))[0] = step
    operand(memory, zero_point, (1,), BYTES["uint8"])[0] = zero
    operand(memory, y, (n,), BYTES["uint8"])[...] = saturate(
        np.rint(values / step) + np.float32(zero), "uint8")


def _qlinear(spec: abi.KernelSpec) -> Callable[..., None]:
    source, target = spec.dtypes
    activation = spec.activations[0] if spec.activations else ""

    def run(ctx: HostContext, *args: int) -> None:
        arg = dict(zip(spec.params, args))
        memory = ctx.memory
        m, k, n = arg["m"], arg["k"], arg["n"]
        a = operand(memory, arg["a"], (m, k), BYTES[source]).astype(np.int64)
        a_zero = int(operand(memory, arg["a_zero_point"], (1,), BYTES[source])[0])
        wide, mixed = spec.op == "qlinear_wide", spec.op == "qlinear_mixed"
        packed = operand(memory, arg["w"], (packed_qlinear_bytes(n, k, wide, mixed),),
                         BYTES["uint8"])
        w = unpack_qlinear_weight(packed, n, k, wide, mixed).astype(np.int64)
        acc = ((a - a_zero) @ w.T + operand(memory, arg["bias"], (n,), I32)).astype(np.int32)
        scale = operand(memory, arg["a_scale"], (1,))[0] * operand(memory, arg["w_scale"], (n,))
        if "fbias" in arg:
            out = acc.astype(np.float32) * scale + operand(memory, arg["fbias"], (n,))
            if activation:
                out = np.clip(out, 0, 6 if activation == "relu6" else None)
            operand(memory, arg["c"], (m, n))[...] = out
            return
        c_scale = operand(memory, arg["c_scale"], (1,))[0]
        zero = int(operand(memory, arg["c_zero_point"], (1,), BYTES[target])[0])
        q = np.rint(acc.astype(np.float32) * (scale / c_scale).astype(np.float32)) + zero
        low, high = RANGES[target]
        if activation:
            low = max(low, zero)
        if activation == "relu6":
            high = min(high, int(np.rint(np.float32(6) / c_scale)) + zero)
        operand(memory, arg["c"], (m, n), BYTES[target])[...] = np.clip(q, low, high)

    return run


def _quantize_family(spec: abi.KernelSpec) -> Callable[..., None]:
    if spec.op == "dequantize_linear":
        return _dequantize(spec)
    return _quantize if spec.op == "quantize_linear" else dynamic_quantize


def _im2col(ctx: HostContext, x: int, zero_point: int, a: int, n: int, c: int, h: int,
            w: int, oh: int, ow: int, kh: int, kw: int, sh: int, sw: int, pt: int, pl: int,
            dh: int, dw: int) -> None:
    memory = ctx.memory
    zero = operand(memory, zero_point, (1,), BYTES["uint8"])[0]
    rows = np.arange(oh)[:, None] * sh - pt + np.arange(kh)[None, :] * dh  # (oh, kh)
    cols = np.arange(ow)[:, None] * sw - pl + np.arange(kw)[None, :] * dw  # (ow, kw)
    padded = np.full((n, h + 2, w + 2, c), zero, np.uint8)
    padded[:, 1:-1, 1:-1] = operand(memory, x, (n, h, w, c), BYTES["uint8"])
    # an index outside x reads the border of zero points
    rows, cols = np.clip(rows + 1, 0, h + 1), np.clip(cols + 1, 0, w + 1)
    taps = padded[:, rows[:, None, :, None], cols[None, :, None, :]]  # n oh ow kh kw c
    operand(memory, a, (n * oh * ow, kh * kw * c), BYTES["uint8"])[...] = (
        taps.reshape(n * oh * ow, kh * kw * c))


def _transpose(spec: abi.KernelSpec) -> Callable[..., None]:
    dtype = np.dtype(spec.dtypes[0])

    def run(ctx: HostContext, x: int, y: int, outer: int, rows: int, cols: int) -> None:
        operand(ctx.memory, y, (outer, cols, rows), dtype)[...] = operand(
            ctx.memory, x, (outer, rows, cols), dtype).transpose(0, 2, 1)

    return run


def _qconv_family(spec: abi.KernelSpec) -> Callable[..., None]:
    return _im2col if spec.op == "im2col" else _transpose(spec)


FAMILIES: dict[str, Callable[[abi.KernelSpec], Callable[..., None]]] = {
    "quantize": _quantize_family, "qlinear": _qlinear, "qconv": _qconv_family,
}
"""The quantized families, merged into ``kernels.FAMILIES``."""
