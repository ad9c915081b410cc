"""The top-k family: for each column of x(outer, n, inner), the k largest (or smallest)
entries along n, sorted, and their indices, for float32, int32 and int64 elements. One
element at a time for every ISA: slot j takes the best entry that comes after slot j - 1's
in the order (larger value first, then lower index), so no scratch memory is needed;
O(n * k) per column (k is small in practice: detections kept, classes reported)."""

from __future__ import annotations

import math

from ..abi import KernelSpec
from ..wasm import Code, FuncType
from .loops import strided_loop

# dtype: (wasm type, log2 of the element size, less than, greater than, the largest value)
_TYPES: dict[str, tuple[str, int, str, str, float | int]] = {
    "float32": ("f32", 2, "lt", "gt", math.inf),
    "int32": ("i32", 2, "lt_s", "gt_s", 2 ** 31 - 1),
    "int64": ("i64", 3, "lt_s", "gt_s", 2 ** 63 - 1),
}


def emit(spec: KernelSpec, isa_name: str) -> tuple[FuncType, Code]:
    """Generate ``<dtype>_topk`` (the same code for every ISA)."""
    t, shift, lt, gt, top = _TYPES[spec.dtypes[0]]
    c = Code(spec.param_types)
    x, values, indices, outer, n, inner, k, largest = range(8)
    o, i, j, m, base, prev_i, best_i, slot = (c.local("i32") for _ in range(8))
    prev_v, best_v, v = (c.local(t) for _ in range(3))

    def ordered(a: int, b: int, first: str, second: str) -> None:
        """Push ``a <first> b`` when largest, else ``a <second> b`` (comparisons swap, so
        no negation: it overflows on the smallest integer)."""
        c.emit("local.get", a).emit("local.get", b).emit(f"{t}.{first}")
        c.emit("local.get", a).emit("local.get", b).emit(f"{t}.{second}")
        c.emit("local.get", largest).emit("select")

    def candidate() -> None:
        """``v = x[base + m * inner]``; it becomes the best when it comes after the previous
        slot's entry and before the best so far."""
        c.emit("local.get", base).emit("local.get", m).emit("local.get", inner).emit("i32.mul")
        c.emit("i32.const", shift).emit("i32.shl").emit("i32.add").emit(f"{t}.load", shift)
        c.emit("local.set", v)
        ordered(v, prev_v, lt, gt)
        c.emit("local.get", v).emit("local.get", prev_v).emit(f"{t}.eq")
        c.emit("local.get", m).emit("local.get", prev_i).emit("i32.gt_s").emit("i32.and")
        c.emit("i32.or")
        c.emit("local.get", best_i).emit("i32.const", 0).emit("i32.lt_s")
        ordered(v, best_v, gt, lt)
        c.emit("i32.or").emit("i32.and").emit("if")
        c.emit("local.get", v).emit("local.set", best_v)
        c.emit("local.get", m).emit("local.set", best_i)
        c.emit("end")

    def slot_j() -> None:
        c.emit("i32.const", -1).emit("local.set", best_i)
        c.emit("i32.const", 0).emit("local.set", m)
        strided_loop(c, m, 1, n, candidate)
        # slot = (o * k + j) * inner + i
        c.emit("local.get", o).emit("local.get", k).emit("i32.mul").emit("local.get", j)
        c.emit("i32.add").emit("local.get", inner).emit("i32.mul").emit("local.get", i)
        c.emit("i32.add").emit("local.set", slot)
        c.emit("local.get", values).emit("local.get", slot).emit("i32.const", shift)
        c.emit("i32.shl").emit("i32.add").emit("local.get", best_v).emit(f"{t}.store", shift)
        c.emit("local.get", indices).emit("local.get", slot).emit("i32.const", 3)
        c.emit("i32.shl").emit("i32.add").emit("local.get", best_i).emit("i64.extend_i32_s")
        c.emit("i64.store", 3)
        c.emit("local.get", best_v).emit("local.set", prev_v)
        c.emit("local.get", best_i).emit("local.set", prev_i)

    def column() -> None:
        # base = x + (o * n * inner + i) << shift
        c.emit("local.get", x).emit("local.get", o).emit("local.get", n).emit("i32.mul")
        c.emit("local.get", inner).emit("i32.mul").emit("local.get", i).emit("i32.add")
        c.emit("i32.const", shift).emit("i32.shl").emit("i32.add").emit("local.set", base)
        # NOTE: before the first slot, every entry comes after the extreme at index -1.
        c.emit(f"{t}.const", top).emit(f"{t}.const", -top if t == "f32" else -top - 1)
        c.emit("local.get", largest).emit("select").emit("local.set", prev_v)
        c.emit("i32.const", -1).emit("local.set", prev_i)
        c.emit("i32.const", 0).emit("local.set", j)
        strided_loop(c, j, 1, k, slot_j)

    def row() -> None:
        c.emit("i32.const", 0).emit("local.set", i)
        strided_loop(c, i, 1, inner, column)

    c.emit("i32.const", 0).emit("local.set", o)
    strided_loop(c, o, 1, outer, row)
    return FuncType(spec.param_types, spec.results), c
