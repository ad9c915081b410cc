"""The host kernel provider: the kernel ABI implemented with numpy, as an intrinsic module.

It is declared from the same data-only table as the wasm kernel module
(``wasm_kernels.abi``), so both export exactly the same names and signatures. It serves as
an oracle for the wasm kernels and as a fast path when the host is trusted with the math.
Each family implements every row of that family, reading its arguments by parameter name
and its semantics from the row: elementwise rows evaluate their ``formula`` with numpy
(``NUMPY_FUNCTIONS``), the others read ``op``, ``epilogue`` and ``dtypes``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from wasm_kernels import abi, formula
from wasm_kernels.pack import (
    packed_conv_floats,
    packed_linear_floats,
    unpack_conv_transpose_weight,
    unpack_conv_weight,
    unpack_linear_weight,
)
from wasm_kernels.pack_im2col import unpack_im2col_weight
from wasm_kernels.wasm import FuncType

from .intrinsic import HostContext, IntrinsicModule
from .kernel_limits import OperandFault, check_bytes, guarded
from .kernel_operands import F32, element_dtype, operand, strided_operand
from .kernel_qrescale import qrescale
from .kernels_quantized import BYTES, saturate
from .kernels_quantized import FAMILIES as QUANTIZED_FAMILIES


def _special(name: str) -> Callable[[np.ndarray], np.ndarray]:
    """``erf`` or ``erfc`` in float64: scipy's when installed, else ``math``'s per element."""
    try:
        from scipy import special
    except ImportError:
        return np.vectorize(getattr(math, name), otypes=[np.float64])
    return getattr(special, name)


NUMPY_FUNCTIONS: dict[str, Callable[..., np.ndarray]] = {
    "max": np.maximum, "min": np.minimum, "abs": np.abs, "sqrt": np.sqrt, "exp": np.exp,
    "log": np.log, "tanh": np.tanh, "erf": lambda x: _special("erf")(x),
    "erfc": lambda x: _special("erfc")(x), "floor": np.floor, "ceil": np.ceil,
    "round": np.round, "sin": np.sin, "cos": np.cos,
}
"""The formula language's functions (``wasm_kernels.formula``) on numpy arrays."""


def unary(op: str, x: np.ndarray) -> np.ndarray:
    """The ABI's unary op ``op`` of ``x``, computed in float64 (the reference the wasm
    kernels are measured against)."""
    with np.errstate(all="ignore"):
        return formula.evaluate(abi.UNARY_OPS[op], {"x": x.astype(np.float64)},
                                NUMPY_FUNCTIONS)


def _activate(x: np.ndarray, op: str) -> np.ndarray:
    with np.errstate(over="ignore"):
        return unary(op, x).astype(np.float32)


def _gemm(spec: abi.KernelSpec) -> Callable[..., None]:
    activation = spec.activations

    def gemm(ctx: HostContext, *args: int) -> None:
        arg = dict(zip(spec.params, args))
        m, k, n = arg["m"], arg["k"], arg["n"]
        memory = ctx.memory
        batch = arg.get("batch", 1)
        for i in range(batch):
            a = operand(memory, arg["a"] + 4 * i * arg.get("a_stride", 0), (m, k))
            if "w" in arg:  # the linear family: W is (n, k), packed
                packed = operand(memory, arg["w"], (packed_linear_floats(n, k),))
                b = unpack_linear_weight(packed, n, k).T
            else:
                b = operand(memory, arg["b"] + 4 * i * arg.get("b_stride", 0), (k, n))
            c = operand(memory, arg["c"] + 4 * i * m * n, (m, n))  # NOTE: checked before a @ b
            out = a @ b
            if "bias" in arg:  # f32_bmm_bias: row i // bias_every of the bias rows
                row = i // arg["bias_every"] if "bias_every" in arg else 0
                out += operand(memory, arg["bias"] + 4 * n * row, (n,))
            if "r" in arg:
                out += operand(memory, arg["r"], (m, n))
            for op in activation:
                out = _activate(out, op)
            c[...] = out

    return gemm


def _unary(spec: abi.KernelSpec) -> Callable[..., None]:
    def run(ctx: HostContext, x: int, y: int, n: int) -> None:
        memory = ctx.memory
        operand(memory, y, (n,))[...] = _activate(operand(memory, x, (n,)), spec.op)

    return run


def _broadcast(spec: abi.KernelSpec) -> Callable[..., None]:
    """The binary and compare families: ``spec.formula`` of the broadcast operands ``a`` and
    ``b`` (of ``spec.dtypes[0]``), stored as ``spec.dtypes[1]``."""
    rank = abi.BROADCAST_RANK
    in_dtype, out_dtype = (element_dtype(d) for d in spec.dtypes)

    def run(ctx: HostContext, *args: int) -> None:
        arg = dict(zip(spec.params, args))
        memory = ctx.memory
        dims = tuple(arg[f"d{i}"] for i in range(rank))
        a = strided_operand(ctx, arg["a"], dims, tuple(arg[f"as{i}"] for i in range(rank)),
                     in_dtype)
        b = strided_operand(ctx, arg["b"], dims, tuple(arg[f"bs{i}"] for i in range(rank)),
                     in_dtype)
        with np.errstate(all="ignore"):
            out = formula.evaluate(spec.formula, {"a": a, "b": b}, NUMPY_FUNCTIONS)
        operand(memory, arg["y"], dims, out_dtype)[...] = out

    return run


def _reduce(spec: abi.KernelSpec) -> Callable[..., None]:
    op = getattr(np, spec.op)  # sum, mean, max

    def reduce(ctx: HostContext, x: int, y: int, outer: int, n: int, inner: int) -> None:
        memory = ctx.memory
        operand(memory, y, (outer, inner))[...] = op(operand(memory, x, (outer, n, inner)),
                                                     axis=1)

    return reduce


def _softmax(ctx: HostContext, x: int, y: int, rows: int, n: int) -> None:
    data = operand(ctx.memory, x, (rows, n))
    e = np.exp(data - data.max(axis=1, keepdims=True))
    operand(ctx.memory, y, (rows, n))[...] = e / e.sum(axis=1, keepdims=True)


def _layer_norm(ctx: HostContext, x: int, gamma: int, beta: int, y: int, rows: int, n: int,
                eps: float) -> None:
    memory = ctx.memory
    data = operand(memory, x, (rows, n))
    mean = data.mean(axis=1, keepdims=True)
    var = ((data - mean) ** 2).mean(axis=1, keepdims=True)
    operand(memory, y, (rows, n))[...] = ((data - mean) / np.sqrt(var + np.float32(eps))
                                          * operand(memory, gamma, (n,))
                                          + operand(memory, beta, (n,)))


ROWWISE: dict[str, Callable[..., None]] = {"softmax": _softmax, "layer_norm": _layer_norm}

def _cast(spec: abi.KernelSpec) -> Callable[..., None]:
    source, target = (element_dtype(d) for d in spec.dtypes)
    bool_source, bool_target = (d == "bool" for d in spec.dtypes)

    def cast(ctx: HostContext, x: int, y: int, n: int) -> None:
        values = operand(ctx.memory, x, (n,), source)
        if bool_source or bool_target:  # a bool byte on either side: any nonzero is true
            values = values != 0
        elif source.kind == "f" and target.itemsize >= 4 and target.kind == "i":
            # toward zero, saturating, NaN -> 0, as i64.trunc_sat_f32_s / i32.trunc_sat_f32_s
            info = np.iinfo(target)
            wide = np.nan_to_num(np.trunc(values.astype(np.float64)), nan=0.0)
            clipped = np.clip(wide, info.min, np.nextafter(float(info.max) + 1, 0))
            values = np.where(wide >= float(info.max) + 1, info.max, clipped.astype(target))
        elif source.kind == "f":
            # toward zero to int32, the smallest one outside its range or for NaN (x86's
            # conversion), then the low bits
            wide = np.trunc(values.astype(np.float64))
            inside = np.abs(wide) < 2.0 ** 31
            values = np.where(inside, np.where(inside, wide, 0).astype(np.int32),
                              np.int32(-(2 ** 31))).astype(target)
        elif target.kind != "f":
            values = values.astype(target)  # sign- or zero-extends, or wraps to the low bits
        operand(ctx.memory, y, (n,), target)[...] = values

    return cast


_BAD_INDEX = "unreachable"  # NOTE: the code the wasm f32_gather traps with (its bounds check)


def _gather(spec: abi.KernelSpec) -> Callable[..., None]:
    element = element_dtype(spec.dtypes[0])

    def gather(ctx: HostContext, table: int, index: int, y: int, count: int, rows: int,
               dim: int) -> None:
        indices = operand(ctx.memory, index, (count,), np.dtype("<i8"))
        bad = (indices < 0) | (indices >= rows)
        if bad.any():
            raise OperandFault(_BAD_INDEX, f"index {int(indices[bad][0])} is outside "
                                           f"[0, {rows})")
        out = operand(ctx.memory, y, (count, dim), element)  # NOTE: checked before the copy
        out[...] = operand(ctx.memory, table, (rows, dim), element)[indices]

    return gather


def _resample(ctx: HostContext, x: int, index: int, weight: int, y: int, outer: int, n: int,
              on: int, inner: int, taps: int) -> None:
    rows = operand(ctx.memory, index, (taps, on), np.dtype("<i4")).T
    bad = (rows < 0) | (rows >= n)
    if bad.any():
        raise OperandFault("out_of_bounds", f"f32_resample: row {int(rows[bad][0])} is outside "
                           f"[0, {n})")
    weights = operand(ctx.memory, weight, (taps, on)).T[None, :, :, None]
    gathered = operand(ctx.memory, x, (outer, n, inner))[:, rows, :]  # (outer, on, taps, inner)
    operand(ctx.memory, y, (outer, on, inner))[...] = (gathered * weights).sum(axis=2)


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
            out = _activate(out, op)
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
            out = _activate(out, op)
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


def _copy(spec: abi.KernelSpec) -> Callable[..., None]:
    rank = abi.BROADCAST_RANK
    element = np.dtype(f"<u{element_dtype(spec.dtypes[0]).itemsize}")  # NOTE: bit for bit

    def copy(ctx: HostContext, *args: int) -> None:
        arg = dict(zip(spec.params, args))
        dims = tuple(arg[f"d{i}"] for i in range(rank))
        source = strided_operand(ctx, arg["x"], dims, tuple(arg[f"xs{i}"] for i in range(rank)),
                                 element)
        target = strided_operand(ctx, arg["y"], dims, tuple(arg[f"ys{i}"] for i in range(rank)),
                                 element, writeable=True)
        target[...] = source.copy()

    return copy


def _where(spec: abi.KernelSpec) -> Callable[..., None]:
    rank = abi.BROADCAST_RANK
    # NOTE: elements move bit for bit, as the wasm kernel's loads and select do.
    dtype = np.dtype(f"<u{element_dtype(spec.dtypes[0]).itemsize}")

    def where(ctx: HostContext, *args: int) -> None:
        arg = dict(zip(spec.params, args))
        dims = tuple(arg[f"d{i}"] for i in range(rank))
        strides = {t: tuple(arg[f"{t}s{i}"] for i in range(rank)) for t in "cab"}
        cond = strided_operand(ctx, arg["cond"], dims, strides["c"], np.dtype("u1"))
        a = strided_operand(ctx, arg["a"], dims, strides["a"], dtype)
        b = strided_operand(ctx, arg["b"], dims, strides["b"], dtype)
        operand(ctx.memory, arg["y"], dims, dtype)[...] = np.where(cond != 0, a, b)

    return where


def _group_norm(ctx: HostContext, x: int, gamma: int, beta: int, y: int, n: int,
                groups: int, channels: int, spatial: int, eps: float) -> None:
    memory = ctx.memory
    data = operand(memory, x, (n, groups, channels * spatial))
    mean = data.mean(axis=-1, keepdims=True)
    var = ((data - mean) ** 2).mean(axis=-1, keepdims=True)
    normal = ((data - mean) / np.sqrt(var + np.float32(eps))).reshape(n, groups * channels,
                                                                      spatial)
    operand(memory, y, (n, groups * channels, spatial))[...] = (
        normal * operand(memory, gamma, (groups * channels, 1))
        + operand(memory, beta, (groups * channels, 1)))


def _cell_update(spec: abi.KernelSpec, x: np.ndarray, hw: np.ndarray,
                 row: dict[str, np.ndarray]) -> None:
    """One batch row of a recurrent cell: ``row`` holds that row of each state operand."""
    def sigmoid(v: np.ndarray) -> np.ndarray:
        return unary("sigmoid", v)

    gates, recurrent = x.reshape(-1, row["h"].size), hw.reshape(-1, row["h"].size)
    if spec.op == "lstm_cell":
        i, f, g, o = gates + recurrent
        row["c"][...] = sigmoid(f) * row["c"] + sigmoid(i) * unary("tanh", g)
        row["h"][...] = sigmoid(o) * unary("tanh", row["c"])
    elif spec.op == "gru_reset":
        row["rh"][...] = sigmoid(gates[0] + recurrent[0]) * row["h"]
    elif spec.op in ("gru_cell", "gru_update"):
        z = sigmoid(gates[1] + recurrent[1])
        if spec.op == "gru_cell":
            n = unary("tanh", gates[2] + sigmoid(gates[0] + recurrent[0]) * recurrent[2])
        else:
            n = unary("tanh", gates[2] + row["hn"])
        row["h"][...] = (1 - z) * n + z * row["h"]
    else:
        row["h"][...] = unary(spec.activations[0], gates[0] + recurrent[0])


def _cell(spec: abi.KernelSpec) -> Callable[..., None]:
    operands, x_gates, hw_gates, _ = abi.RECURRENT_CELLS[spec.op]

    def cell(ctx: HostContext, *args: int) -> None:
        arg = dict(zip(spec.params, args))
        batch, hidden, step, steps = (arg[k] for k in ("batch", "hidden", "step", "steps"))
        memory = ctx.memory
        x = operand(memory, arg["x"], (steps, batch, x_gates * hidden))
        hw = operand(memory, arg["hw"], (batch, hw_gates * hidden))
        views = {name: operand(memory, arg[name], (steps, batch, hidden) if name == "y"
                               else (batch, hidden)) for name in operands}
        lengths = (operand(memory, arg["lengths"], (batch,), np.dtype("<i4")) if arg["lengths"]
                   else np.full(batch, steps))
        for b, length in enumerate(lengths):
            if step >= length:
                if "y" in views:
                    views["y"][step, b] = 0
                continue
            t = length - 1 - step if arg["reverse"] else step
            _cell_update(spec, x[t, b], hw[b], {n: v[b] for n, v in views.items() if n != "y"})
            if "y" in views:
                views["y"][t, b] = views["h"][b]

    return cell


def _topk(spec: abi.KernelSpec) -> Callable[..., None]:
    dtype = element_dtype(spec.dtypes[0])

    def topk(ctx: HostContext, x: int, values: int, indices: int, outer: int, n: int,
             inner: int, k: int, largest: int) -> None:
        data = operand(ctx.memory, x, (outer, n, inner), dtype)
        # NOTE: ~x orders integers backwards without -x's overflow at the smallest one
        key = (-data if dtype.kind == "f" else ~data) if largest else data
        order = np.argsort(key, axis=1, kind="stable")[:, :k]
        operand(ctx.memory, indices, (outer, k, inner), np.dtype("<i8"))[...] = order
        operand(ctx.memory, values, (outer, k, inner), dtype)[...] = np.take_along_axis(
            data, order, 1)

    return topk


FAMILIES: dict[str, Callable[[abi.KernelSpec], Callable[..., None]]] = {
    "gemm": _gemm, "linear": _gemm, "unary": _unary, "binary": _broadcast, "reduce": _reduce,
    "rowwise": lambda spec: ROWWISE[spec.op],
    "cast": _cast, "gather": _gather, "conv": _conv, "conv_gemm": _conv,
    "pool": _pool, "depthwise": _depthwise,
    "movement": lambda spec: _copy(spec) if spec.op == "copy" else _where(spec),
    "norm": lambda spec: _group_norm, "conv_transpose": lambda spec: _conv_transpose,
    "compare": _broadcast, "recurrent": _cell, "resample": lambda spec: _resample,
    "integer": _broadcast, "topk": _topk, "qrescale": qrescale,
    **QUANTIZED_FAMILIES,
}


def provider() -> IntrinsicModule:
    """The host provider: one host function per row of ``wasm_kernels.abi.KERNELS``. Bad
    operands raise ``KernelFault``; instantiate it with a ``KernelState`` as its state for
    the caller's time and memory limits to hold."""
    module = IntrinsicModule(abi.MODULE)
    for spec in abi.KERNELS:
        module.define_function(spec.name, FuncType(spec.param_types, spec.results),
                               guarded(abi.MODULE, spec.name, FAMILIES[spec.family](spec)))
    return module
