"""The gemm family: C(m, n) = epilogue(A(m, k) @ B(k, n) [+ bias] [+ R]), row-major f32.

``f32_gemm`` runs the linear driver (which packs A's rows into ``wa``) over B's whole panels
of ``PANEL`` columns, copied ``CHUNK`` tiles' panels at a time into its scratch ``ws`` in the
layout ``f32_linear`` reads its packed weight in (``wasm_kernels.pack``) just before the
first row block multiplies them, so that block reads them from cache. Read in place, a
panel's step of k is a new cache line, and from n = 1024 a new page, so the panels of a
large B were bound by cache and TLB misses (0.11x numpy at 1024^3, against the linear
kernel's 0.3-0.4x). The columns past the last whole panel (n % 8) are read in place.

Read in place, a tile's step of k is one row of B, ``width`` floats, and the next step is a
row stride further. That driver walks column panels of ``NR`` columns, then one register of
columns, then single columns; within each, row blocks of ``MR`` rows, then single rows, so
every ``m, k, n`` is exact and no load reads past B's last row. The batched kernels, whose B
is one attention head (n <= 128: a panel's k steps stay in cache), read every column so.

Rows of the family: ``f32_gemm[_bias][_add][_<epilogue>...]`` and the batched ``f32_bmm`` and
``f32_bmm_bias``, which loop the same body over ``batch`` with per-operand batch strides.
"""

from __future__ import annotations

from functools import partial

from ..abi import KernelSpec
from ..pack import PANEL
from ..wasm import Code, FuncType
from . import linear
from .dense_tile import DenseFrame, tile
from .isa import ISAS, Isa
from .loops import strided_loop

TILES: dict[str, tuple[int, int]] = {"relaxed": (4, 8), "simd128": (4, 8), "scalar": (4, 2)}
"""(MR, NR): rows and columns of the tiles that read A and B in place, per ISA (see
``dense_tile.QUAD_ROWS``: two rows load four steps at a time, the other two one step at a
time; 8 accumulators, where 3x8's 6 left the FMA pipes idle a quarter of the time)."""

CHUNK = 4
"""Tiles' columns of B packed at once, row by row of B, just before the first row block uses
them: 4 panels for the relaxed tile, 12 for simd128's tiles of 3 panels (``linear.WIDE``;
1.02-1.10x its speed with 3 panels a chunk, bench/README.md)."""


def variant(isa: str) -> str:
    """The variant suffix of gemm kernels for ``isa``, e.g. ``relaxed_4x8``."""
    mr, nr = TILES[isa]
    return f"{isa}_{mr}x{nr}"


def emit(spec: KernelSpec, isa_name: str) -> tuple[FuncType, Code]:
    """Generate gemm or bmm kernel ``spec`` for ``isa_name``."""
    c = Code(spec.param_types)
    arg = {p: i for i, p in enumerate(spec.params)}
    if "batch" in arg:
        f = DenseFrame(c, ISAS[isa_name], arg, spec.activations,
                       *(c.local("i32") for _ in range(5)))
        # lda = k * 4, ldb = ldc = n * 4 (byte strides).
        c.emit("local.get", arg["k"]).emit("i32.const", 2).emit("i32.shl")
        c.emit("local.set", f.lda)
        c.emit("local.get", arg["n"]).emit("i32.const", 2).emit("i32.shl")
        c.emit("local.tee", f.ldc).emit("local.set", f.ldb)
        _batched(f)
    else:
        _packed(c, isa_name, arg, spec.activations)
    return FuncType(spec.param_types, spec.results), c


def _packed(c: Code, isa_name: str, arg: dict[str, int], epilogue: tuple[str, ...]) -> None:
    """B's whole panels packed into ``ws`` as the linear driver's first row block reaches
    them and multiplied by it, then the columns past them read in place."""
    f = linear.frame(c, isa_name, dict(arg, w=arg["ws"]), epilogue)
    linear.row_blocks(f, edge=False, fill=partial(_pack_first, f))
    tail = DenseFrame(c, f.isa, arg, epilogue, f.i, f.j, f.lda, f.ldc, f.ldc)
    widths = [(f.isa, f.isa.lanes)] if f.isa.vector else []
    _columns(tail, widths + [(ISAS["scalar"], 1)])


def _pack_first(f: linear._Frame) -> None:
    """In the first row block (``ib = 0``), at every ``CHUNK``-th tile's column, copy B's
    columns from ``j`` to the next ``CHUNK`` tiles' whole panels' end to ``ws``, row by row
    of B (read in order), where the driver reads them: panel ``p``'s step ``kk`` at float
    ``p * PANEL * k + kk * PANEL``. The block's tiles then read them from cache."""
    c, arg, isa = f.c, f.arg, f.isa
    row, column, end, src, dst = (c.local("i32") for _ in range(5))
    chunk = CHUNK * linear.WIDE.get(isa.name, 1) * PANEL
    c.emit("local.get", f.ib).emit("local.get", f.j)
    if chunk & (chunk - 1):
        c.emit("i32.const", chunk).emit("i32.rem_u")
    else:
        c.emit("i32.const", chunk - 1).emit("i32.and")
    c.emit("i32.or").emit("i32.eqz").emit("if")
    # end = min(j + chunk, n)
    c.emit("local.get", f.j).emit("i32.const", chunk).emit("i32.add")
    c.emit("local.tee", end).emit("local.get", arg["n"]).emit("local.get", end)
    c.emit("local.get", arg["n"]).emit("i32.lt_u").emit("select").emit("local.set", end)

    def copy_row() -> None:
        # src = b + row * n * 4 + j * 4, dst = ws + j * k * 4 + row * PANEL * 4
        c.emit("local.get", arg["b"]).emit("local.get", row).emit("local.get", f.ldc)
        c.emit("i32.mul").emit("i32.add").emit("local.get", f.j).emit("i32.const", 2)
        c.emit("i32.shl").emit("i32.add").emit("local.set", src)
        c.emit("local.get", arg["ws"]).emit("local.get", f.j).emit("local.get", f.lda)
        c.emit("i32.mul").emit("i32.add").emit("local.get", row).emit("i32.const", 4 * PANEL)
        c.emit("i32.mul").emit("i32.add").emit("local.set", dst)
        c.emit("local.get", f.j).emit("local.set", column)
        strided_loop(c, column, PANEL, end, copy_panel)

    def copy_panel() -> None:
        for v in range(PANEL // isa.lanes):
            c.emit("local.get", dst).emit("local.get", src)
            isa.load(c, 4 * isa.lanes * v)
            isa.store(c, 4 * isa.lanes * v)
        # src += PANEL floats; dst += one panel (PANEL * k floats)
        c.emit("local.get", src).emit("i32.const", 4 * PANEL).emit("i32.add")
        c.emit("local.set", src)
        c.emit("local.get", dst).emit("local.get", f.lda).emit("i32.const", PANEL)
        c.emit("i32.mul").emit("i32.add").emit("local.set", dst)

    c.emit("i32.const", 0).emit("local.set", row)
    strided_loop(c, row, 1, arg["k"], copy_row)
    c.emit("end")


def _batched(f: DenseFrame) -> None:
    """``for batch: gemm; a += a_stride; b += b_stride; c += m * n``, strides in floats; a
    bias row advances by n floats after every ``bias_every`` batches."""
    c, arg = f.c, f.arg
    if "bias" in arg:
        left = c.local("i32")  # batches until the bias moves to its next row
        c.emit("local.get", arg["bias_every"]).emit("local.set", left)
    c.emit("block").emit("loop")
    c.emit("local.get", arg["batch"]).emit("i32.eqz").emit("br_if", 1)
    in_place(f)
    for pointer, stride in (("a", "a_stride"), ("b", "b_stride")):
        c.emit("local.get", arg[pointer]).emit("local.get", arg[stride]).emit("i32.const", 2)
        c.emit("i32.shl").emit("i32.add").emit("local.set", arg[pointer])
    for pointer in ("c",) + (("r",) if "r" in arg else ()):
        c.emit("local.get", arg[pointer]).emit("local.get", arg["m"]).emit("local.get", f.ldc)
        c.emit("i32.mul").emit("i32.add").emit("local.set", arg[pointer])
    if "bias" in arg:
        c.emit("local.get", left).emit("i32.const", 1).emit("i32.sub").emit("local.tee", left)
        c.emit("i32.eqz").emit("if")
        c.emit("local.get", arg["bias"]).emit("local.get", f.ldc).emit("i32.add")
        c.emit("local.set", arg["bias"])
        c.emit("local.get", arg["bias_every"]).emit("local.set", left)
        c.emit("end")
    c.emit("local.get", arg["batch"]).emit("i32.const", 1).emit("i32.sub")
    c.emit("local.set", arg["batch"])
    c.emit("br", 0).emit("end").emit("end")


def in_place(f: DenseFrame) -> None:
    """C = A @ B, both read in place with ``f``'s strides: column panels of NR columns,
    then one register, then single columns."""
    nr = TILES[f.isa.name][1]
    widths = [(f.isa, nr)] + ([(f.isa, f.isa.lanes)] if f.isa.vector else [])
    f.c.emit("i32.const", 0).emit("local.set", f.j)
    _columns(f, widths + [(ISAS["scalar"], 1)])


def _columns(f: DenseFrame, widths: list[tuple[Isa, int]]) -> None:
    """From column ``j`` on, panels of each of ``widths`` in turn; within each, row blocks of
    MR rows, then single rows."""
    mr = TILES[f.isa.name][0]
    c = f.c
    for isa, width in widths:
        def panel(isa: Isa = isa, width: int = width) -> None:
            c.emit("i32.const", 0).emit("local.set", f.i)
            for rows in (mr, 1):
                strided_loop(c, f.i, rows, f.arg["m"],
                             partial(tile, f, isa, rows, width, partial(_column, f)))

        strided_loop(c, f.j, width, f.arg["n"], panel)


def _column(f: DenseFrame) -> None:
    """Push the address of B's column ``j``: ``b + j * 4``."""
    f.c.emit("local.get", f.arg["b"]).emit("local.get", f.j).emit("i32.const", 2)
    f.c.emit("i32.shl").emit("i32.add")
