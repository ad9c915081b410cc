"""The row-wise family: softmax and layer_norm along the last axis of x(rows, n), built
from ``rows.row_fold`` and ``rows.row_map`` (one register at a time, then a scalar tail)."""

from __future__ import annotations

from collections.abc import Callable

from ..abi import KernelSpec
from ..wasm import Code, FuncType
from . import vmath
from .isa import ISAS, Isa
from .rows import row_fold, row_map, splat_scalar


def _softmax(c: Code, isa: Isa, arg: dict[str, int]) -> None:
    """max, then y = exp(x - max) summed in the same pass, then y *= 1 / sum.

    exp(x - max) is ``vmath.decay(max - x)`` (its argument is never negative): terms below
    e**-87.7 of the largest come out 0 rather than denormal.
    NOTE: the max may skip a NaN (``pmax``); the NaN still reaches the sum through its own
    exp, so the whole row comes out NaN, as numpy's softmax does."""
    x, y, n = arg["x"], arg["y"], arg["n"]
    row_fold(c, isa, [x], n, "pmax", lambda e: e[0])
    top = splat_scalar(c, isa)
    row_fold(c, isa, [x], n, "add", lambda e: vmath.decay(e[1] - e[0]), {1: top}, dst=y)
    c.emit("local.set", top[1]).emit("f32.const", 1.0).emit("local.get", top[1]).emit("f32.div")
    scale = splat_scalar(c, isa)
    row_map(c, isa, [y], y, n, lambda e: e[0] * e[1], {1: scale})


def _layer_norm(c: Code, isa: Isa, arg: dict[str, int]) -> None:
    """mean, var = mean((x - mean)**2), y = (x - mean) / sqrt(var + eps) * gamma + beta."""
    x, y, n = arg["x"], arg["y"], arg["n"]
    inv_n = c.local("f32")
    c.emit("f32.const", 1.0).emit("local.get", n).emit("f32.convert_i32_u").emit("f32.div")
    c.emit("local.set", inv_n)
    row_fold(c, isa, [x], n, "add", lambda e: e[0])
    c.emit("local.get", inv_n).emit("f32.mul")
    mean = splat_scalar(c, isa)
    row_fold(c, isa, [x], n, "add", lambda e: (e[0] - e[1]) * (e[0] - e[1]), {1: mean})
    c.emit("local.get", inv_n).emit("f32.mul").emit("local.get", arg["eps"]).emit("f32.add")
    c.emit("f32.sqrt").emit("local.set", inv_n)
    c.emit("f32.const", 1.0).emit("local.get", inv_n).emit("f32.div")
    rstd = splat_scalar(c, isa)
    row_map(c, isa, [x, arg["gamma"], arg["beta"]], y, n,
            lambda e: (e[0] - e[3]) * e[4] * e[1] + e[2], {3: mean, 4: rstd})


ROWS: dict[str, Callable[[Code, Isa, dict[str, int]], None]] = {
    "softmax": _softmax, "layer_norm": _layer_norm,
}


def emit(spec: KernelSpec, isa_name: str) -> tuple[FuncType, Code]:
    """Generate row-wise kernel ``spec`` for ``isa_name``: one row at a time."""
    isa = ISAS[isa_name]
    c = Code(spec.param_types)
    arg = {p.split(":")[0]: i for i, p in enumerate(spec.params)}
    row_bytes = c.local("i32")
    c.emit("local.get", arg["n"]).emit("i32.const", 2).emit("i32.shl").emit("local.set", row_bytes)
    c.emit("block").emit("loop")
    c.emit("local.get", arg["rows"]).emit("i32.eqz").emit("br_if", 1)
    ROWS[spec.op](c, isa, arg)
    for pointer in ("x", "y"):
        c.emit("local.get", arg[pointer]).emit("local.get", row_bytes).emit("i32.add")
        c.emit("local.set", arg[pointer])
    c.emit("local.get", arg["rows"]).emit("i32.const", 1).emit("i32.sub")
    c.emit("local.set", arg["rows"])
    c.emit("br", 0).emit("end").emit("end")
    return FuncType(spec.param_types, spec.results), c
