"""The host kernel provider: the kernel ABI implemented with numpy, as an intrinsic module.

It is declared from the same data-only table as the wasm kernel module
(``wasm_kernels.abi``), so both export exactly the same names and signatures. It serves as
an oracle for the wasm kernels and as a fast path when the host is trusted with the math.
Each family implements every row of that family, reading its arguments by parameter name
and its semantics from the row: elementwise rows evaluate their ``formula`` with numpy
(``kernel_math``), the others read ``op``, ``epilogue`` and ``dtypes``; the window and
quantized families live in ``kernels_conv`` and ``kernels_quantized``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from wasm_kernels import abi, formula
from wasm_kernels.pack import packed_linear_floats, unpack_linear_weight
from wasm_kernels.wasm import FuncType

from .intrinsic import HostContext, IntrinsicModule
from .kernel_limits import OperandFault, guarded
from .kernel_math import NUMPY_FUNCTIONS, activate, unary
from .kernel_operands import element_dtype, operand, strided_operand
from .kernel_qrescale import qrescale
from .kernels_conv import FAMILIES as CONV_FAMILIES
from .kernels_detection import FAMILIES as DETECTION_FAMILIES
from .kernels_quantized import FAMILIES as QUANTIZED_FAMILIES
from .kernels_quantized import dynamic_quantize
from .kernels_winograd import FAMILIES as WINOGRAD_FAMILIES


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
                out = activate(out, op)
            c[...] = out

    return gemm


def _unary(spec: abi.KernelSpec) -> Callable[..., None]:
    def run(ctx: HostContext, x: int, y: int, n: int) -> None:
        memory = ctx.memory
        operand(memory, y, (n,))[...] = activate(operand(memory, x, (n,)), spec.op)

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


def _attention(spec: abi.KernelSpec) -> Callable[..., None]:
    def attention(ctx: HostContext, *args: int) -> None:
        arg = dict(zip(spec.params, args))
        memory = ctx.memory
        heads, t, rows, src, d = (arg[k] for k in ("heads", "t", "rows", "src", "d"))
        for b in range(arg["batch"]):
            q = operand(memory, arg["q"] + 4 * b * t * heads * d, (rows, heads, d))
            kt = operand(memory, arg["kt"] + 4 * b * heads * d * src, (heads, d, src))
            v = operand(memory, arg["v"] + 4 * b * src * heads * d, (src, heads, d))
            y = operand(memory, arg["y"] + 4 * b * t * heads * d, (rows, heads, d))
            scores = q.transpose(1, 0, 2) @ kt  # (heads, rows, src)
            if "mask" in arg:  # one row for every query row (bias), or one each (add)
                shape = (rows, src) if "add" in spec.epilogue else (src,)
                scores += operand(memory, arg["mask"] + 4 * b * arg["mask_stride"], shape)
            e = np.exp(scores - scores.max(axis=2, keepdims=True))
            y[...] = ((e / e.sum(axis=2, keepdims=True)) @ v.transpose(1, 0, 2)).transpose(
                1, 0, 2)

    return attention

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


def _lstm_step(spec: abi.KernelSpec) -> Callable[..., None]:
    def step(ctx: HostContext, *args: int) -> None:
        arg = dict(zip(spec.params, args))
        rows, hidden = arg["rows"], arg["hidden"]
        gates = operand(ctx.memory, arg["gates"], (rows, 4, hidden))
        c, h, c_out = (operand(ctx.memory, arg[k], (rows, hidden)) for k in ("c", "h", "c_out"))
        for b in range(rows):
            row = {"c": c[b].copy(), "h": h[b]}
            _cell_update(abi.BY_NAME["f32_lstm_cell"], gates[b], np.zeros_like(gates[b]), row)
            c_out[b] = row["c"]
        if "q" in arg:
            dynamic_quantize(ctx, arg["h"], arg["q"], arg["scale"], arg["zero_point"],
                             rows * hidden)

    return step


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
    "cast": _cast, "gather": _gather,
    "movement": lambda spec: _copy(spec) if spec.op == "copy" else _where(spec),
    "norm": lambda spec: _group_norm,
    "compare": _broadcast,
    "recurrent": lambda spec: _lstm_step(spec) if spec.op == "lstm_step" else _cell(spec),
    "resample": lambda spec: _resample,
    "integer": _broadcast, "topk": _topk, "qrescale": qrescale, "attention": _attention,
    **QUANTIZED_FAMILIES, **CONV_FAMILIES, **WINOGRAD_FAMILIES, **DETECTION_FAMILIES,
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
