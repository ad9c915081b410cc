"""The linear family: C(m, n) = epilogue(A(m, k) @ W(n, k).T [+ bias] [+ R]), row-major f32.

W is ``nn.Linear``'s weight, packed at compile time (``wasm_kernels.pack``) in panels of
``PANEL`` rows, a step of k's ``PANEL`` weights adjacent: W.T in the panel layout the
outer-product tile of ``dense_tile`` reads at constant offsets. The last panel is padded
with zero rows, so every tile is ``PANEL`` columns wide; the one past ``n`` stores only its
columns before ``n``.

The driver blocks A by rows so a block stays in L2 (``BLOCK_BYTES``): each panel of W stays
in L1 (for k up to ~1000) while the block's row tiles (``MR`` rows, then single rows) stream
past it. Blocking W instead (panels innermost) measured ~10% slower.

Rows of the family: ``f32_linear[_bias][_add][_<activation>]``.
"""


from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from ..abi import KernelSpec
from ..pack import PANEL
from ..wasm import Code, FuncType
from .dense_tile import DenseFrame, tile
from .isa import ISAS
from .loops import strided_loop

MR = {"relaxed": 3, "simd128": 3, "scalar": 1}
"""Rows of A per tile, by ISA (see ``dense_tile``); the scalar reference keeps its ``PANEL``
accumulators in registers with one row."""

BLOCK_BYTES = 1 << 17
"""Bytes of A per block: a quarter of a 512 KiB L2, so it stays there while W streams by."""


@dataclass
class _Frame(DenseFrame):
    """A dense frame with the block of A the driver is in: its first row ``ib``, its end
    ``iend`` and its height ``mb``."""

    ib: int
    iend: int
    mb: int


def variant(isa: str) -> str:
    """The variant suffix of linear kernels for ``isa``, e.g. ``relaxed_4x8``."""
    return f"{isa}_{MR[isa]}x{PANEL}"


def emit(spec: KernelSpec, isa_name: str) -> tuple[FuncType, Code]:
    """Generate linear kernel ``spec`` for ``isa_name``."""
    c = Code(spec.param_types)
    f = frame(c, isa_name, {p: i for i, p in enumerate(spec.params)}, spec.activations)
    row_blocks(f, edge=True)
    return FuncType(spec.param_types, spec.results), c


def frame(c: Code, isa_name: str, arg: dict[str, int], epilogue: tuple[str, ...]) -> _Frame:
    """The frame of a linear driver over ``arg``'s ``a``, ``w`` (packed panels), ``c``,
    ``m``, ``k`` and ``n``, with its strides and block height computed."""
    i, j, lda, ldc, ib, iend, mb = (c.local("i32") for _ in range(7))
    f = _Frame(c, ISAS[isa_name], arg, epilogue, i, j, lda, ldc, None, ib, iend, mb)
    # lda = k * 4, ldc = n * 4: the byte strides of A's and C's rows.
    c.emit("local.get", arg["k"]).emit("i32.const", 2).emit("i32.shl").emit("local.set", f.lda)
    c.emit("local.get", arg["n"]).emit("i32.const", 2).emit("i32.shl").emit("local.set", f.ldc)
    # mb = max(MR, BLOCK_BYTES / lda rounded down to MR): rows of A per block (| 1 avoids 0).
    mr = MR[isa_name]
    c.emit("i32.const", BLOCK_BYTES).emit("local.get", f.lda).emit("i32.const", 1).emit("i32.or")
    c.emit("i32.div_u").emit("local.tee", f.mb).emit("local.get", f.mb).emit("i32.const", mr)
    c.emit("i32.rem_u").emit("i32.sub").emit("local.tee", f.mb)
    c.emit("i32.const", mr).emit("local.get", f.mb).emit("i32.const", mr).emit("i32.gt_u")
    c.emit("select").emit("local.set", f.mb)
    return f


def row_blocks(f: _Frame, edge: bool) -> None:
    """C's columns in whole panels (and with ``edge`` the padded last one) against A's row
    blocks; ``f.j`` ends at the first column not computed."""
    c, arg = f.c, f.arg

    def block() -> None:
        # iend = min(ib + mb, m): the block's rows end
        c.emit("local.get", f.ib).emit("local.get", f.mb).emit("i32.add").emit("local.tee", f.iend)
        c.emit("local.get", arg["m"]).emit("local.get", f.iend).emit("local.get", arg["m"])
        c.emit("i32.lt_u").emit("select").emit("local.set", f.iend)
        c.emit("i32.const", 0).emit("local.set", f.j)
        strided_loop(c, f.j, PANEL, arg["n"], partial(_column_tiles, f, False))
        if edge:
            c.emit("local.get", f.j).emit("local.get", arg["n"]).emit("i32.lt_u").emit("if")
            _column_tiles(f, True)
            c.emit("end")
        c.emit("local.get", f.ib).emit("local.get", f.mb).emit("i32.add").emit("local.set", f.ib)

    c.emit("i32.const", 0).emit("local.set", f.ib)
    c.emit("block").emit("loop")
    c.emit("local.get", f.ib).emit("local.get", arg["m"]).emit("i32.ge_u").emit("br_if", 1)
    block()
    c.emit("br", 0).emit("end").emit("end")


def _column_tiles(f: _Frame, edge: bool) -> None:
    """Columns ``j .. j+PANEL`` of C (an ``edge`` panel ends past ``n``) against the block's
    rows: tiles of ``MR`` rows, then single rows."""
    c = f.c
    c.emit("local.get", f.ib).emit("local.set", f.i)
    for rows in sorted({MR[f.isa.name], 1}, reverse=True):
        strided_loop(c, f.i, rows, f.iend,
                     partial(tile, f, f.isa, rows, PANEL, partial(_panel, f), edge))


def _panel(f: _Frame) -> None:
    """Push the address of the packed panel of column ``j``: ``w + j * k * 4``."""
    f.c.emit("local.get", f.arg["w"]).emit("local.get", f.j).emit("local.get", f.lda)
    f.c.emit("i32.mul").emit("i32.add")
