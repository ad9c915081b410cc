"""The elementwise binary family with numpy broadcasting over a rank-4 output.

The three outer dimensions are plain loops; the inner one runs one register at a time when
both operands are contiguous or one is broadcast along it (stride 0, read once and
splatted), and one float at a time with arbitrary strides otherwise.

A transpose (a permute is a ``mul`` by a broadcast 1.0) reads ``a`` across its inner axis
and contiguously along the one before (``as2 == 1``, ``b`` broadcast over both): there a
vector ISA takes four output rows at once (``_rows_of_four``), loading four contiguous
floats per column and transposing 4x4 blocks with shuffles, or, for rows of two (the
interleave of a strided conv_transpose's phases), zipping two columns into eight
contiguous outputs.
"""

from __future__ import annotations

from collections.abc import Callable

from ..abi import BROADCAST_RANK, KernelSpec
from ..wasm import Code, FuncType
from . import activations, expr
from .conv_tiles import EVEN_LANES
from .expr import Expr
from .isa import ISAS, Isa
from .loops import strided_loop
from .rows import row_map, splat_scalar

BinaryFn = Callable[[Expr, Expr], Expr]


def emit(spec: KernelSpec, isa_name: str) -> tuple[FuncType, Code]:
    """Generate binary kernel ``spec`` (its ``formula`` in ``a`` and ``b``) for ``isa_name``."""
    fn = activations.binary(spec.formula)
    isa = ISAS[isa_name]
    c = Code(spec.param_types)
    arg = {p: i for i, p in enumerate(spec.params)}
    last = BROADCAST_RANK - 1
    # Pointers to the current inner row of a, b and y.
    rows = {t: c.local("i32") for t in "aby"}
    index = [c.local("i32") for _ in range(last)]
    c.emit("local.get", arg["y"]).emit("local.set", rows["y"])

    def row_pointers() -> None:
        for t in "ab":
            c.emit("local.get", arg[t])
            for depth in range(last):
                c.emit("local.get", index[depth]).emit("local.get", arg[f"{t}s{depth}"])
                c.emit("i32.mul").emit("i32.const", 2).emit("i32.shl").emit("i32.add")
            c.emit("local.set", rows[t])

    def leaf(depth: int) -> None:
        if depth == last:
            row_pointers()
            _inner(c, isa, fn, arg, rows)
            c.emit("local.get", rows["y"]).emit("local.get", arg[f"d{last}"])
            c.emit("i32.const", 2).emit("i32.shl").emit("i32.add").emit("local.set", rows["y"])
            return
        c.emit("i32.const", 0).emit("local.set", index[depth])
        if isa.vector and depth == last - 1:
            def four() -> None:
                row_pointers()
                _rows_of_four(c, isa, fn, arg, rows)
            # as2 == 1, as3 != 1, bs2 == bs3 == 0: rows of four while they fit
            c.emit("local.get", arg["as2"]).emit("i32.const", 1).emit("i32.eq")
            c.emit("local.get", arg["as3"]).emit("i32.const", 1).emit("i32.ne").emit("i32.and")
            c.emit("local.get", arg["bs2"]).emit("local.get", arg["bs3"]).emit("i32.or")
            c.emit("i32.eqz").emit("i32.and").emit("if")
            strided_loop(c, index[depth], 4, arg[f"d{depth}"], four)
            c.emit("end")
        strided_loop(c, index[depth], 1, arg[f"d{depth}"], lambda: leaf(depth + 1))

    leaf(0)
    return FuncType(spec.param_types, spec.results), c


def _inner(c: Code, isa: Isa, fn: BinaryFn, arg: dict[str, int], rows: dict[str, int]) -> None:
    """One inner row of d3 outputs, choosing the loop by the operands' inner strides."""
    n, sa, sb = arg["d3"], arg["as3"], arg["bs3"]
    def binary(e: list[Expr]) -> Expr:
        return fn(e[0], e[1])

    c.emit("local.get", sa).emit("i32.const", 1).emit("i32.eq")
    c.emit("local.get", sb).emit("i32.const", 1).emit("i32.eq").emit("i32.and").emit("if")
    row_map(c, isa, [rows["a"], rows["b"]], rows["y"], n, binary)
    c.emit("else")
    c.emit("local.get", sa).emit("i32.eqz").emit("local.get", sb).emit("i32.const", 1)
    c.emit("i32.eq").emit("i32.and").emit("if")
    c.emit("local.get", rows["a"]).emit("f32.load", 2)
    row_map(c, isa, [rows["b"]], rows["y"], n, lambda e: fn(e[1], e[0]),
            {1: splat_scalar(c, isa)})
    c.emit("else")
    c.emit("local.get", sa).emit("i32.const", 1).emit("i32.eq").emit("local.get", sb)
    c.emit("i32.eqz").emit("i32.and").emit("if")
    c.emit("local.get", rows["b"]).emit("f32.load", 2)
    row_map(c, isa, [rows["a"]], rows["y"], n, binary, {1: splat_scalar(c, isa)})
    c.emit("else")
    _strided(c, isa, fn, arg, rows)
    c.emit("end").emit("end").emit("end")


ZIP_LOW = bytes(4 * lane + byte for lane in (0, 4, 1, 5) for byte in range(4))
ZIP_HIGH = bytes(4 * lane + byte for lane in (2, 6, 3, 7) for byte in range(4))
"""The ``i8x16.shuffle``s interleaving the low (high) halves of two f32x4 registers."""
LOW_PAIRS = bytes(4 * lane + byte for lane in (0, 1, 4, 5) for byte in range(4))
HIGH_PAIRS = bytes(4 * lane + byte for lane in (2, 3, 6, 7) for byte in range(4))
"""The shuffles joining the low (high) pairs of lanes of two registers."""


def _rows_of_four(c: Code, isa: Isa, fn: BinaryFn, arg: dict[str, int],
                  rows: dict[str, int]) -> None:
    """Output rows r = 0..3 from the row pointers on: y[r, i] = fn(a[r + i * as3], b) (``a``
    contiguous along the rows, ``b`` one float), then ``rows["y"]`` past the four rows.

    Column ``i`` of the four rows is one load at ``a + i * as3``. Rows of two: columns 0 and 1
    zipped are rows 0-1 and 2-3, eight contiguous outputs. Otherwise 4x4 blocks: four
    columns, transposed by two rounds of shuffles into four row registers; the columns past
    the last whole block go float by float."""
    n, step = arg["d3"], c.local("i32")
    column, out, i = c.local("i32"), c.local("i32"), c.local("i32")
    v = [c.local("v128") for _ in range(4)]
    t = [c.local("v128") for _ in range(4)]
    b = c.local("v128")
    c.emit("local.get", rows["b"]).emit("f32.load", 2).emit("f32x4.splat").emit("local.set", b)
    c.emit("local.get", arg["as3"]).emit("i32.const", 2).emit("i32.shl").emit("local.set", step)

    def apply(register: int) -> None:
        expr.emit(c, isa, fn(Expr.input(0), Expr.input(1)), {0: register, 1: b})

    def load(k: int) -> None:
        # v[k] = the four rows' floats of column ``column + k``
        c.emit("local.get", column)
        if k:
            c.emit("local.get", step).emit("i32.const", k).emit("i32.mul").emit("i32.add")
        isa.load(c)
        c.emit("local.set", v[k])

    def shuffled(x: int, y: int, lanes: bytes) -> None:
        c.emit("local.get", x).emit("local.get", y).emit("i8x16.shuffle", lanes)

    c.emit("local.get", rows["a"]).emit("local.set", column)
    c.emit("local.get", rows["y"]).emit("local.set", out)
    c.emit("local.get", n).emit("i32.const", 2).emit("i32.eq").emit("if")
    for k in range(2):
        load(k)
    for half, lanes in enumerate((ZIP_LOW, ZIP_HIGH)):
        c.emit("local.get", out)
        shuffled(v[0], v[1], lanes)
        c.emit("local.set", v[2])
        apply(v[2])
        isa.store(c, 16 * half)
    c.emit("else")
    c.emit("i32.const", 0).emit("local.set", i)

    def block() -> None:
        for k in range(4):
            load(k)
        # t0, t1: rows 0-1 of columns 0-1 and 2-3; t2, t3: rows 2-3; then row r's four
        for target, (x, y, lanes) in zip(t, ((v[0], v[1], ZIP_LOW), (v[2], v[3], ZIP_LOW),
                                             (v[0], v[1], ZIP_HIGH), (v[2], v[3], ZIP_HIGH))):
            shuffled(x, y, lanes)
            c.emit("local.set", target)
        for r, (x, y, lanes) in enumerate(((t[0], t[1], LOW_PAIRS), (t[0], t[1], HIGH_PAIRS),
                                           (t[2], t[3], LOW_PAIRS), (t[2], t[3], HIGH_PAIRS))):
            c.emit("local.get", out)
            if r:
                c.emit("local.get", n).emit("i32.const", 4 * r).emit("i32.mul").emit("i32.add")
            shuffled(x, y, lanes)
            _apply_to_stack(c, isa, fn, b)
            isa.store(c)
        c.emit("local.get", column).emit("local.get", step).emit("i32.const", 4)
        c.emit("i32.mul").emit("i32.add").emit("local.set", column)
        c.emit("local.get", out).emit("i32.const", 16).emit("i32.add").emit("local.set", out)

    strided_loop(c, i, 4, n, block)

    def tail() -> None:
        for r in range(4):
            c.emit("local.get", out)
            if r:
                c.emit("local.get", n).emit("i32.const", 4 * r).emit("i32.mul").emit("i32.add")
            c.emit("local.get", column).emit("f32.load", 2, 4 * r).emit("f32x4.splat")
            _apply_to_stack(c, isa, fn, b)
            c.emit("f32x4.extract_lane", 0).emit("f32.store", 2)
        c.emit("local.get", column).emit("local.get", step).emit("i32.add")
        c.emit("local.set", column)
        c.emit("local.get", out).emit("i32.const", 4).emit("i32.add").emit("local.set", out)

    strided_loop(c, i, 1, n, tail)
    c.emit("end")
    c.emit("local.get", rows["y"]).emit("local.get", n).emit("i32.const", 4).emit("i32.mul")
    c.emit("i32.const", 2).emit("i32.shl").emit("i32.add").emit("local.set", rows["y"])


def _apply_to_stack(c: Code, isa: Isa, fn: BinaryFn, b: int) -> None:
    """Replace the register on the stack by ``fn(it, b)``."""
    held = c.local("v128")
    c.emit("local.set", held)
    expr.emit(c, isa, fn(Expr.input(0), Expr.input(1)), {0: held, 1: b})


def _every_other(c: Code, isa: Isa, fn: BinaryFn, arg: dict[str, int], rows: dict[str, int],
                 i: int) -> None:
    """y[i] = fn(a[2i], b) one register at a time from ``i`` = 0 (a stride-2 slice, YOLO's
    Focus): two loads and their even lanes. It stops one float early, so the second load
    never reads past the row's last float."""
    last, pointer, out, b = c.local("i32"), c.local("i32"), c.local("i32"), c.local("v128")
    a = c.local("v128")
    c.emit("local.get", rows["b"]).emit("f32.load", 2).emit("f32x4.splat").emit("local.set", b)
    c.emit("local.get", rows["a"]).emit("local.set", pointer)
    c.emit("local.get", rows["y"]).emit("local.set", out)
    # last = d3 - 1, or 0 for an empty row (the loop bound is unsigned)
    c.emit("local.get", arg["d3"]).emit("i32.const", 1).emit("i32.sub").emit("i32.const", 0)
    c.emit("local.get", arg["d3"]).emit("select").emit("local.set", last)

    def body() -> None:
        c.emit("local.get", pointer)
        isa.load(c)
        c.emit("local.get", pointer)
        isa.load(c, 16)
        c.emit("i8x16.shuffle", EVEN_LANES).emit("local.set", a)
        c.emit("local.get", out)
        expr.emit(c, isa, fn(Expr.input(0), Expr.input(1)), {0: a, 1: b})
        isa.store(c)
        for local, step in ((pointer, 32), (out, 16)):
            c.emit("local.get", local).emit("i32.const", step).emit("i32.add")
            c.emit("local.set", local)

    strided_loop(c, i, isa.lanes, last, body)


def _strided(c: Code, isa: Isa, fn: BinaryFn, arg: dict[str, int],
             rows: dict[str, int]) -> None:
    """The general inner row: y[i] = fn(a[i * as3], b[i * bs3]), one float at a time, after
    ``_every_other`` where ``as3 == 2`` and ``b`` is broadcast on a vector ISA."""
    scalar = ISAS["scalar"]
    i, a, b = c.local("i32"), c.local("f32"), c.local("f32")
    c.emit("i32.const", 0).emit("local.set", i)
    if isa.vector:
        c.emit("local.get", arg["as3"]).emit("i32.const", 2).emit("i32.eq")
        c.emit("local.get", arg["bs3"]).emit("i32.eqz").emit("i32.and").emit("if")
        _every_other(c, isa, fn, arg, rows, i)
        c.emit("end")

    def body() -> None:
        for t, local in (("a", a), ("b", b)):
            c.emit("local.get", rows[t]).emit("local.get", i).emit("local.get", arg[f"{t}s3"])
            c.emit("i32.mul").emit("i32.const", 2).emit("i32.shl").emit("i32.add")
            c.emit("f32.load", 2).emit("local.set", local)
        c.emit("local.get", rows["y"]).emit("local.get", i).emit("i32.const", 2).emit("i32.shl")
        c.emit("i32.add")
        expr.emit(c, scalar, fn(Expr.input(0), Expr.input(1)), {0: a, 1: b})
        c.emit("f32.store", 2)

    strided_loop(c, i, 1, arg["d3"], body)
