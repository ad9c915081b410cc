"""The qrescale family: int8 tensors moved between (scale, zero point) pairs in integers only,
TFLite's way (``wasm_kernels.fixed_point``): ``qs8_qadd`` (8-bit Add), ``qs8_rescale_rows``
and ``qs8_copy_rows`` (the inputs of a Concat). One element at a time for every ISA: these
run once per residual or concat, between integer gemms that dominate the time.

The fixed-point rescale of an i32 ``v`` by ``(mult, shift)``: ``v << left`` (wrapping), the
saturating rounding doubling high multiply by ``mult`` in i64 (``mult`` is in ``[0, 2**31)``,
so the one saturating case ``v == mult == INT32_MIN`` cannot occur), then the rounding
divide by ``2**right``; ``left = max(shift, 0)`` and ``right = max(-shift, 0)`` are computed
once per call.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..abi import KernelSpec
from ..fixed_point import ADD_LEFT_SHIFT
from ..wasm import Code, FuncType
from .loops import strided_loop


@dataclass(frozen=True)
class Rescale:
    """The locals of one rescale: its multiplier parameter and the per-call constants."""

    mult: int
    left: int
    right: int
    mask: int


def _rescale_locals(c: Code, mult: str, shift: str) -> Rescale:
    """Compute ``left``, ``right`` and the remainder mask ``2**right - 1`` of one rescale."""
    left, right, mask = (c.local("i32") for _ in range(3))
    c.get(shift).emit("i32.const", 0).get(shift).emit("i32.const", 0).emit("i32.gt_s")
    c.emit("select").set(left)
    c.emit("i32.const", 0).get(shift).emit("i32.sub").emit("i32.const", 0)
    c.get(shift).emit("i32.const", 0).emit("i32.lt_s").emit("select").set(right)
    c.emit("i32.const", 1).get(right).emit("i32.shl").emit("i32.const", 1).emit("i32.sub")
    c.set(mask)
    return Rescale(c.names[mult], left, right, mask)


def _rescale(c: Code, r: Rescale, wide: int, value: int) -> None:
    """Replace the i32 on top of the stack by its rescale (``wide`` an i64 scratch local,
    ``value`` an i32 one)."""
    c.get(r.left).emit("i32.shl").emit("i64.extend_i32_s")
    c.get(r.mult).emit("i64.extend_i32_s").emit("i64.mul").set(wide)
    # NOTE: gemmlowp's nudge, then i64.div_s truncating toward zero as C does: ties round up.
    c.get(wide).emit("i64.const", 1 << 30).emit("i64.const", 1 - (1 << 30))
    c.get(wide).emit("i64.const", 0).emit("i64.ge_s").emit("select").emit("i64.add")
    c.emit("i64.const", 1 << 31).emit("i64.div_s").emit("i32.wrap_i64").set(value)
    c.get(value).get(r.right).emit("i32.shr_s")
    c.get(value).get(r.mask).emit("i32.and")
    c.get(r.mask).emit("i32.const", 1).emit("i32.shr_s")
    c.get(value).emit("i32.const", 0).emit("i32.lt_s").emit("i32.add")
    c.emit("i32.gt_s").emit("i32.add")


def _clamp_store(c: Code, value: int) -> None:
    """Store clamp(the i32 on top of the stack, lo, hi) as one byte at the address below it."""
    c.set(value)
    c.get(value).get("lo").get(value).get("lo").emit("i32.gt_s").emit("select").set(value)
    c.get(value).get("hi").get(value).get("hi").emit("i32.lt_s").emit("select")
    c.emit("i32.store8", 0)


def _qadd(spec: KernelSpec) -> Code:
    c = Code(spec.param_types, names=[p.split(":")[0] for p in spec.params])
    a, b, y = (_rescale_locals(c, f"{t}_mult", f"{t}_shift") for t in ("a", "b", "y"))
    i, value, total = c.local("i32"), c.local("i32"), c.local("i32")
    wide = c.local("i64")
    c.emit("i32.const", 0).set(i)

    def body() -> None:
        c.get("y", i).emit("i32.add")
        for t, rescale in (("a", a), ("b", b)):
            c.get(t, i).emit("i32.add").emit("i32.load8_s", 0).get(f"{t}_zp").emit("i32.sub")
            c.emit("i32.const", ADD_LEFT_SHIFT).emit("i32.shl")
            _rescale(c, rescale, wide, value)
        c.emit("i32.add")
        _rescale(c, y, wide, value)
        c.get("y_zp").emit("i32.add")
        _clamp_store(c, total)

    strided_loop(c, i, 1, c.names["n"], body)
    return c


def _rows(spec: KernelSpec, rescaled: bool) -> Code:
    c = Code(spec.param_types, names=[p.split(":")[0] for p in spec.params])
    rescale = _rescale_locals(c, "mult", "shift") if rescaled else None
    row, j, source, target, value = (c.local("i32") for _ in range(5))
    wide = c.local("i64")
    c.emit("i32.const", 0).set(row).get("x").set(source).get("y").set(target)

    def element() -> None:
        c.get(target, j).emit("i32.add")
        c.get(source, j).emit("i32.add").emit("i32.load8_s", 0)
        if rescale is None:
            c.emit("i32.store8", 0)
            return
        c.get("x_zp").emit("i32.sub")
        _rescale(c, rescale, wide, value)
        c.get("y_zp").emit("i32.add")
        _clamp_store(c, value)

    def each_row() -> None:
        c.emit("i32.const", 0).set(j)
        strided_loop(c, j, 1, c.names["n"], element)
        c.get(source, "n").emit("i32.add").set(source)
        c.get(target, "y_stride").emit("i32.add").set(target)

    strided_loop(c, row, 1, c.names["rows"], each_row)
    return c


def emit(spec: KernelSpec, isa_name: str) -> tuple[FuncType, Code]:
    """Generate qrescale kernel ``spec``; the same code for every ISA."""
    code = _qadd(spec) if spec.op == "qadd" else _rows(spec, spec.op == "rescale_rows")
    return FuncType(spec.param_types, spec.results), code
