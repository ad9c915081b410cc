"""The host kernels of the window families: conv2d (direct and as a gemm), depthwise conv,
transposed conv and pooling, each over ``sliding_window_view``s of the padded input."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from wasm_kernels import abi
from wasm_kernels.pack import packed_conv_floats, unpack_conv_transpose_weight, unpack_conv_weight
from wasm_kernels.pack_im2col import unpack_im2col_weight

from .intrinsic import HostContext
from .kernel_limits import OperandFault, check_bytes
from .kernel_math import activate
from .kernel_operands import F32, operand
from .kernels_quantized import BYTES, saturate


def _windows(ctx: HostContext, x: np.ndarray, kernel: tuple[int, int],
             stride: tuple[int, int], pad: tuple[int, int], dilation: tuple[int, int],
             out: tuple[int, int], fill: float) -> np.ndarray:
    """Views (..., oh, ow, kh, kw) of the last two axes of ``x`` padded with ``fill``: the
    padding runs past the input as far as the ``out`` windows reach (ceil_mode)."""
    widths = [(0, 0)] * (x.ndim - 2)
    for axis in range(2):
        reach = (out[axis] - 1) * stride[axis] + dilation[axis] * (kernel[axis] - 1) + 1
        widths.append((pad[axis], max(reach - x.shape[x.ndim - 2 + axis] - pad[axis], 0)))
    padded_shape = [size + low + high for size, (low, high) in zip(x.shape, widths)]
    check_bytes(ctx, math.prod(padded_shape) * x.itemsize, "the padded input")
    padded = np.pad(x, widths, constant_values=fill)
    spans = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
    views = np.lib.stride_tricks.sliding_window_view(padded, spans, axis=(-2, -1))
    return views[..., :(out[0] - 1) * stride[0] + 1:stride[0],
                 :(out[1] - 1) * stride[1] + 1:stride[1], ::dilation[0], ::dilation[1]]


def _conv(spec: abi.KernelSpec) -> Callable[..., None]:
    activation = spec.activations
    gemm = spec.family == "conv_gemm"

    def conv(ctx: HostContext, *args: int) -> None:
        arg = dict(zip(spec.params, args))
        memory = ctx.memory
        n, c, o, groups = arg["n"], arg["c"], arg["o"], arg["groups"]
        kh, kw, oh, ow = arg["kh"], arg["kw"], arg["oh"], arg["ow"]
        x = operand(memory, arg["x"], (n, groups, c // groups, arg["h"], arg["w"]))
        # the pixels computed: all, or (f32_conv2d_gemm) first .. first + pixels, with Y and R
        # moved to pixel first
        first, pixels = (arg["first_bytes"] // 4, arg["pixels"]) if gemm else (0, oh * ow)
        rows = (np.arange(n * o)[:, None] * (oh * ow) + np.arange(pixels)).ravel()
        y = operand(memory, arg["y"], (int(rows[-1]) + 1,))  # NOTE: checked before computing
        if gemm:
            packed = operand(memory, arg["weight"], (o * (c // groups) * kh * kw,))
            unpacked = unpack_im2col_weight(packed, o, c // groups, kh, kw, groups)
        else:
            packed = operand(memory, arg["weight"],
                             (packed_conv_floats(o, c // groups, kh, kw, groups),))
            unpacked = unpack_conv_weight(packed, o, c // groups, kh, kw, groups)
        weight = unpacked.reshape(groups, o // groups, c // groups, kh, kw)
        views = _windows(ctx, x, (kh, kw), (arg["sh"], arg["sw"]), (arg["ph"], arg["pw"]),
                         (arg["dh"], arg["dw"]), (oh, ow), 0.0)
        out = np.einsum("ngchwij,gocij->ngohw", views, weight, optimize=True)
        out = (out.reshape(n, o, oh * ow)[:, :, first:first + pixels]
               + operand(memory, arg["bias"], (o,))[:, None])
        if "r" in arg:
            out += operand(memory, arg["r"], y.shape)[rows].reshape(out.shape)
        for op in activation:
            out = activate(out, op)
        y[rows] = out.ravel()

    return conv


def _depthwise(spec: abi.KernelSpec) -> Callable[..., None]:
    quantized = spec.dtypes[0] != "float32"
    element = BYTES[spec.dtypes[0]] if quantized else F32

    def depthwise(ctx: HostContext, *args: int) -> None:
        arg = dict(zip(spec.params, args))
        memory = ctx.memory
        n, c, o, oh, ow = arg["n"], arg["c"], arg["o"], arg["oh"], arg["ow"]
        kernel, stride, pad, dilation = ((arg[a], arg[b]) for a, b in (
            ("kh", "kw"), ("sh", "sw"), ("ph", "pw"), ("dh", "dw")))
        _check_depthwise(arg)
        x = operand(memory, arg["x"], (n, c, 1, arg["h"], arg["w"]), element)
        y = operand(memory, arg["y"], (n, c, o // c, oh, ow), element)  # NOTE: checked first
        operand(memory, arg["scratch"], (abi.depthwise_scratch_floats(
            arg["h"], arg["w"], oh, ow, *kernel, *stride, *pad, *dilation),))
        weight = operand(memory, arg["weight"], (c, o // c) + kernel)
        if quantized:  # dequantize_linear's float32(x - x_zero) * x_scale
            zero = operand(memory, arg["x_zero"], (1,), element).astype(np.int32)
            x = (x.astype(np.int32) - zero).astype(np.float32) * operand(
                memory, arg["x_scale"], (1,))
        views = _windows(ctx, x, kernel, stride, pad, dilation, (oh, ow), 0.0)
        out = np.einsum("nczhwij,cmij->ncmhw", views, weight, optimize=True)
        out = out + operand(memory, arg["bias"], (c, o // c))[:, :, None, None]
        for op in spec.activations:
            out = activate(out, op)
        if quantized:  # quantize_linear's saturate(rint(out / y_scale) + y_zero)
            zero = operand(memory, arg["y_zero"], (1,), element).astype(np.float32)
            out = saturate(np.rint(out.astype(np.float32) / operand(
                memory, arg["y_scale"], (1,))) + zero, spec.dtypes[0])
        y[...] = out

    return depthwise


_BAD_GEOMETRY = "unreachable"  # NOTE: the code the wasm depthwise kernels trap with


def _check_depthwise(arg: dict[str, int]) -> None:
    """The wasm kernel's traps: sizes it was not given a scratch or tiles for."""
    if 0 in (arg["kh"], arg["kw"], arg["sh"], arg["sw"], arg["dh"], arg["dw"], arg["c"]):
        raise OperandFault(_BAD_GEOMETRY, "a zero kernel size, stride, dilation or channel count")
    if arg["o"] % arg["c"]:
        raise OperandFault(_BAD_GEOMETRY, f"o = {arg['o']} is not a multiple of c = {arg['c']}")
    for size, out, k, s, p, d in (("h", "oh", "kh", "sh", "ph", "dh"),
                                  ("w", "ow", "kw", "sw", "pw", "dw")):
        span = arg[size] + 2 * arg[p] - arg[d] * (arg[k] - 1) - 1
        if span < 0 or arg[out] != span // arg[s] + 1:
            raise OperandFault(_BAD_GEOMETRY, f"{out} = {arg[out]} is not the output size of "
                                           f"{size} = {arg[size]} (span {span})")


def _conv_transpose(ctx: HostContext, *args: int) -> None:
    arg = dict(zip(abi.CONV_TRANSPOSE.params, args))
    memory = ctx.memory
    n, c, h, w, o, groups = (arg[k] for k in ("n", "c", "h", "w", "o", "groups"))
    kh, kw, oh, ow = arg["kh"], arg["kw"], arg["oh"], arg["ow"]
    sh, sw, ph, pw, dh, dw = (arg[k] for k in ("sh", "sw", "ph", "pw", "dh", "dw"))
    x = operand(memory, arg["x"], (n, groups, c // groups, h, w))
    weight = unpack_conv_transpose_weight(
        operand(memory, arg["weight"], (groups, c // groups, kh, kw, o // groups)))
    full_shape = (n, groups, o // groups, max((h - 1) * sh + dh * (kh - 1) + 1, ph + oh),
                  max((w - 1) * sw + dw * (kw - 1) + 1, pw + ow))
    check_bytes(ctx, 4 * max(n * o * kh * kw * h * w, math.prod(full_shape)),
                "the scattered columns")
    cols = np.einsum("ngchw,gcoij->ngoijhw", x,
                     weight.reshape(groups, c // groups, o // groups, kh, kw), optimize=True)
    full = np.zeros(full_shape, np.float32)
    for i in range(kh):
        for j in range(kw):
            full[..., i * dh:i * dh + (h - 1) * sh + 1:sh,
                 j * dw:j * dw + (w - 1) * sw + 1:sw] += cols[:, :, :, i, j]
    out = full.reshape(n, o, *full.shape[-2:])[:, :, ph:ph + oh, pw:pw + ow]
    operand(memory, arg["y"], (n, o, oh, ow))[...] = (
        out + operand(memory, arg["bias"], (o,))[:, None, None])


def _adaptive_avg_pool(ctx: HostContext, x: int, y: int, planes: int, h: int, w: int,
                       oh: int, ow: int) -> None:
    data = operand(ctx.memory, x, (planes, h, w))
    out = operand(ctx.memory, y, (planes, oh, ow))  # NOTE: bounds the loops below
    rows = [(i * h // oh, -(-(i + 1) * h // oh)) for i in range(oh)]
    cols = [(j * w // ow, -(-(j + 1) * w // ow)) for j in range(ow)]
    out[...] = np.stack(
        [np.stack([data[:, r0:r1, c0:c1].mean(axis=(1, 2)) for c0, c1 in cols], -1)
         for r0, r1 in rows], -2)


def _pool(spec: abi.KernelSpec) -> Callable[..., None]:
    if spec is abi.ADAPTIVE_AVG_POOL:
        return _adaptive_avg_pool
    average = "scale" in spec.params

    def pool(ctx: HostContext, *args: int) -> None:
        arg = dict(zip(spec.params, args))
        memory = ctx.memory
        out = (arg["oh"], arg["ow"])
        x = operand(memory, arg["x"], (arg["planes"], arg["h"], arg["w"]))
        y = operand(memory, arg["y"], (arg["planes"],) + out)  # NOTE: checked first
        views = _windows(ctx, x, (arg["kh"], arg["kw"]), (arg["sh"], arg["sw"]),
                         (arg["ph"], arg["pw"]), (arg["dh"], arg["dw"]), out,
                         0.0 if average else -np.inf)
        if average:
            result = views.sum(axis=(-2, -1)) * operand(memory, arg["scale"], out)
        else:
            result = views.max(axis=(-2, -1))
        y[...] = result

    return pool


FAMILIES: dict[str, Callable[[abi.KernelSpec], Callable[..., None]]] = {
    "conv": _conv, "conv_gemm": _conv, "pool": _pool, "depthwise": _depthwise,
    "conv_transpose": lambda spec: _conv_transpose,
}
"""The window families, merged into ``kernels.FAMILIES``."""
