"""The linear family: C(m, n) = epilogue(A(m, k) @ W(n, k).T [+ bias] [+ R]), row-major f32.

W is ``nn.Linear``'s weight, packed at compile time (``wasm_kernels.pack``) in panels of
``PANEL`` rows, a step of k's ``PANEL`` weights adjacent: W.T in the panel layout the
outer-product tile of ``dense_tile`` reads at constant offsets. The last panel is padded
with zero rows, so every tile is ``PANEL`` columns wide; the one past ``n`` stores only its
columns before ``n``.

The driver blocks W by panels so a block stays in L2 (``BLOCK_BYTES``): within a block, row
tiles of A (``MR`` rows, then single rows) stay in L1 while the block's panels stream past
them.

Rows of the family: ``f32_linear[_bias][_add][_<activation>]``.
"""


from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from ..abi import KernelSpec
from ..pack import PANEL
from ..wasm import Code, FuncType
from . import activations, dense_tile
from .dense_tile import DenseFrame, tile
from .isa import ISAS
from .loops import strided_loop

MR = {"relaxed": 4, "simd128": 4, "scalar": 1}
"""Rows of A per tile, by ISA. 4 x ``PANEL`` is 8 f32x4 accumulators; the scalar reference
keeps its ``PANEL`` accumulators in registers with one row."""

OPT_LEVEL = dense_tile.OPT_LEVEL
"""Compiled at the opt level its unrolled tile is written for."""

BLOCK_BYTES = 1 << 17
"""Bytes of W per block: a quarter of a 512 KiB L2, so it stays there while A streams by."""


@dataclass
class _Frame(DenseFrame):
    """A dense frame with the block of W the driver is in: its first column ``jb``, its end
    ``jend`` and its width ``nb``."""

    jb: int
    jend: int
    nb: int


def variant(isa: str) -> str:
    """The variant suffix of linear kernels for ``isa``, e.g. ``relaxed_4x8``."""
    return f"{isa}_{MR[isa]}x{PANEL}"


def emit(spec: KernelSpec, isa_name: str) -> tuple[FuncType, Code]:
    """Generate linear kernel ``spec`` for ``isa_name``."""
    c = Code(spec.param_types)
    arg = {p: i for i, p in enumerate(spec.params)}
    i, j, lda, ldc, jb, jend, nb = (c.local("i32") for _ in range(7))
    f = _Frame(c, ISAS[isa_name], arg, activations.epilogue_of(spec), i, j, lda, ldc, None,
               jb, jend, nb)
    # lda = k * 4, ldc = n * 4: the byte strides of A's and C's rows.
    c.emit("local.get", arg["k"]).emit("i32.const", 2).emit("i32.shl").emit("local.set", f.lda)
    c.emit("local.get", arg["n"]).emit("i32.const", 2).emit("i32.shl").emit("local.set", f.ldc)
    # nb = max(PANEL, BLOCK_BYTES / lda rounded down to PANEL): W rows per block (| 1 avoids 0).
    c.emit("i32.const", BLOCK_BYTES).emit("local.get", f.lda).emit("i32.const", 1).emit("i32.or")
    c.emit("i32.div_u").emit("i32.const", -PANEL).emit("i32.and").emit("local.tee", f.nb)
    c.emit("i32.const", PANEL).emit("local.get", f.nb).emit("i32.const", PANEL).emit("i32.gt_u")
    c.emit("select").emit("local.set", f.nb)

    def block() -> None:
        # jend = min(jb + nb, n)
        c.emit("local.get", f.jb).emit("local.get", f.nb).emit("i32.add").emit("local.tee", f.jend)
        c.emit("local.get", arg["n"]).emit("local.get", f.jend).emit("local.get", arg["n"])
        c.emit("i32.lt_u").emit("select").emit("local.set", f.jend)
        c.emit("i32.const", 0).emit("local.set", f.i)
        for rows in sorted({MR[isa_name], 1}, reverse=True):
            strided_loop(c, f.i, rows, arg["m"], partial(_row_tiles, f, rows))
        c.emit("local.get", f.jb).emit("local.get", f.nb).emit("i32.add").emit("local.set", f.jb)

    c.emit("i32.const", 0).emit("local.set", f.jb)
    c.emit("block").emit("loop")
    c.emit("local.get", f.jb).emit("local.get", arg["n"]).emit("i32.ge_u").emit("br_if", 1)
    block()
    c.emit("br", 0).emit("end").emit("end")
    return FuncType(spec.param_types, spec.results), c


def _row_tiles(f: _Frame, rows: int) -> None:
    """Rows ``i .. i+rows`` of C against columns ``jb .. jend``: whole panels, then the
    padded panel that ends past ``n``, if any."""
    c = f.c
    c.emit("local.get", f.jb).emit("local.set", f.j)
    whole = partial(tile, f, f.isa, rows, PANEL, partial(_panel, f))
    strided_loop(c, f.j, PANEL, f.jend, whole)
    c.emit("local.get", f.j).emit("local.get", f.jend).emit("i32.lt_u").emit("if")
    tile(f, f.isa, rows, PANEL, partial(_panel, f), edge=True)
    c.emit("end")


def _panel(f: _Frame) -> None:
    """Push the address of the packed panel of column ``j``: ``w + j * k * 4``."""
    f.c.emit("local.get", f.arg["w"]).emit("local.get", f.j).emit("local.get", f.lda)
    f.c.emit("i32.mul").emit("i32.add")
