"""The qlinear family: C = finish((A - a_zero_point) @ W.T + bias) with int32 accumulation,
A (m, k) int8 or uint8, W (n, k) int8 packed by ``pack_quantized.pack_qlinear_weight``.

``finish`` dequantizes (``float32(acc) * a_scale * w_scale[j] + fbias[j]``, then relu or
relu6) or requantizes (``round(float32(acc) * a_scale * w_scale[j] / c_scale) +
c_zero_point``, clamped to the output range narrowed by relu or relu6), as the ABI rows say.
The zero point of A is subtracted once per column, ``a_zero_point * sum_k W[j, k]``, with the
column sums stored after the packed panels.

Rows: ``q{u,s}8_{qlinear,qconv}_{dequantize,requantize}[_relu|_relu6]``; the ``qconv`` rows
are the same product built with the tile ``TILE_ISA`` names.
"""

from __future__ import annotations

from functools import partial

from ..abi import KernelSpec
from ..pack_quantized import DIRECT_ROWS, QBLOCK_BYTES, QPANEL
from ..wasm import Code, FuncType
from .isa import ISAS
from .loops import strided_loop
from .qlinear_frame import QFrame, frame, scalar_element
from .qlinear_pack import MIXED_ROWS, PACKED_SHIFT, pack_rows, widen_panel, widen_seven_panel
from .qlinear_tile import Tile

MR = {"relaxed": 4, "simd128": 2}
"""Rows of A per SIMD tile. simd128: 2 rows by 8 columns keep 8 i32x4 accumulators, W's 4
widened registers and A's in the 16 XMM registers (3 rows ran MiniLM's shapes 0.80-0.96x as
fast, 4 with W reloaded per row 0.71-0.86x: cranelift spills). relaxed: 4 rows (16
accumulators, lo and hi parts: some spill) measured 1.04-1.21x the relaxed f32 linear
against 1.00-1.21x at 3 rows and 0.93-1.00x at 2 (bench/kernels.py --only int8, load
10-12): W's registers and A's split then serve more rows."""


SEVEN_MR = 4
"""Rows of A per tile of the relaxed module's 7-bit weights' tile: 8 accumulators, W's 2
registers and A's (bench/int8_tiles.py measured its k loop 1.26-1.29x the simd128 tile's)."""




TILE_ISA = {("qconv", "relaxed"): "simd128", ("qlinear", "relaxed"): "simd128"}
"""The tile a row builds in another ISA's module. On x86 the relaxed dot lowers to three
instructions (``pmaddubsw``, ``pmaddwd``, ``paddd``; wasmtime 50's cranelift emits them on an
Intel CPU with AVX-VNNI and AVX512-VNNI too: no ``vpdpbusd``, nor ``vpdpwssd`` for
``i32x4.dot_i16x8_s`` and an add) and the exact 7-bit split of A needs two of them per 16
products, where the simd128 tile's widening i16 dot needs two (``pmaddwd``, ``paddd``) per 8
(its operands widened in scratch beforehand): on MiniLM's linear shapes the simd128 tile ran
1.68-1.76x the relaxed f32 linear, the relaxed tile 0.90-0.93x (``bench/kernels.py --only
int8``, Intel Xeon). The relaxed tile stays for engines that lower the relaxed dot to one
instruction (VNNI, Arm's dot product): ``emit(..., tile_isa="relaxed")`` builds it, and its
tests keep it exact."""


def emit(spec: KernelSpec, isa_name: str, tile_isa: str | None = None
         ) -> tuple[FuncType, Code]:
    """Generate qlinear kernel ``spec`` for ``isa_name`` with the tile of ISA ``tile_isa``
    (default: ``TILE_ISA``'s choice, else ``isa_name``'s own; in a module with relaxed SIMD
    the default also holds the relaxed-dot tile that 7-bit weights take, ``SEVEN_MR``)."""
    c = Code(spec.param_types)
    f = frame(c, spec)
    seven = ISAS[isa_name].fma and tile_isa is None and not f.wide
    relaxed_module = ISAS[isa_name].fma
    if f.wide:
        # NOTE: wide weights take the i16 dot tile alone, whatever the module's ISA
        isa_name = "scalar" if isa_name == "scalar" else "simd128"
    else:
        isa_name = tile_isa or TILE_ISA.get((spec.op, isa_name), isa_name)
    i, j = c.local("i32"), c.local("i32")
    c.emit("i32.const", 0).emit("local.set", i)
    if isa_name == "scalar":
        def row() -> None:
            c.emit("i32.const", 0).emit("local.set", j)
            strided_loop(c, j, 1, f.arg["n"], lambda: scalar_element(f, i, j))

        strided_loop(c, i, 1, f.arg["m"], row)
        return FuncType(spec.param_types, spec.results), c
    isa = ISAS[isa_name]
    if isa.fma and spec.dtypes[0] == "int8":
        # NOTE: the relaxed tile reads int8 A as uint8 A + 128 (its sign bit flipped).
        c.emit("local.get", f.a_zero).emit("i32.const", 128).emit("i32.add")
        c.emit("local.set", f.a_zero)
    tiles = [(rows, Tile(f, isa, rows, i, j)) for rows in (MR[isa_name], 1)]
    if f.wide:
        if not f.mixed:
            _blocks(f, tiles, i, j)
            return FuncType(spec.param_types, spec.results), c
        # NOTE: 7-bit panels take the relaxed dot in the relaxed module; elsewhere the i16
        # dot on their bytes (decode) for a few rows, else on the panel widened into ws
        # (where decoding W in the k loop costs more than once per panel); the rest of the
        # panels take the wide tile
        if relaxed_module:
            _blocks(f, tiles, i, j, sevens=[(rows, Tile(f, ISAS["relaxed"], rows, i, j,
                                                        seven=True)) for rows in (MIXED_ROWS, 1)])
            return FuncType(spec.param_types, spec.results), c
        c.emit("local.get", f.arg["m"]).emit("i32.const", DIRECT_ROWS).emit("i32.lt_u")
        c.emit("if")
        _blocks(f, tiles, i, j, sevens=[(rows, Tile(f, isa, rows, i, j, decode=True))
                                        for rows in (MR[isa_name], 1)])
        c.emit("else")
        _blocks(f, tiles, i, j, sevens=[(rows, Tile(f, isa, rows, i, j, from_ws=True))
                                        for rows in (MR[isa_name], 1)])
        c.emit("end")
        return FuncType(spec.param_types, spec.results), c
    if tiles[0][1].packed:
        direct = [(rows, Tile(f, isa, rows, i, j, direct=True)) for rows in (MR[isa_name], 1)]
        if seven:
            # NOTE: weights the packer marked 7-bit take the relaxed dot (qlinear_tile.py);
            # A goes in as int8, uint8 A minus 128, so its zero point drops by 128
            c.emit("local.get", f.masks).emit("i32.const", 4).emit("i32.sub")
            c.emit("i32.load", 2, 0).emit("if")
            if spec.dtypes[0] == "uint8":
                c.emit("local.get", f.a_zero).emit("i32.const", 128).emit("i32.sub")
                c.emit("local.set", f.a_zero)
            _blocks(f, [(rows, Tile(f, isa, rows, i, j, seven=True))
                        for rows in (SEVEN_MR, 1)], i, j, seven=True)
            c.emit("else")
        # a few rows widen W on the fly instead of a panel at a time (DIRECT_ROWS)
        c.emit("local.get", f.arg["m"]).emit("i32.const", DIRECT_ROWS).emit("i32.lt_u")
        c.emit("if")
        _blocks(f, direct, i, j, direct=True)
        c.emit("else")
        _blocks(f, tiles, i, j)
        c.emit("end")
        if seven:
            c.emit("end")
        return FuncType(spec.param_types, spec.results), c
    for rows, tile in tiles:

        def columns(tile: Tile = tile) -> None:
            c.emit("i32.const", 0).emit("local.set", j)
            strided_loop(c, j, QPANEL, f.arg["n"], lambda: tile.emit(edge=False))
            c.emit("local.get", j).emit("local.get", f.arg["n"]).emit("i32.lt_u").emit("if")
            tile.emit(edge=True)
            c.emit("end")

        strided_loop(c, i, rows, f.arg["m"], columns)
    return FuncType(spec.param_types, spec.results), c


def _blocks(f: QFrame, tiles: list[tuple[int, Tile]], i: int, j: int,
            seven: bool = False, direct: bool = False,
            sevens: list[tuple[int, Tile]] | None = None) -> None:
    """The packed product, a block of A's rows at a time (``pack_quantized.qblock_rows``):
    the block widened into ``wa``, then per column panel of W, the panel widened into ``ws``
    and every row of the block; then a, c and m move past the block. With ``seven`` (the
    7-bit weights' tile) a block also holds at most ``panel_bytes / 4`` rows: their sums of A
    go in ``ws`` after the panel, within the ``4 * round_up(k, 4)`` floats it has; with
    ``direct`` (tiles that widen W as they load it) no panel is widened. With ``sevens``
    (a mixed packing's 7-bit panels' tiles) each panel takes ``sevens`` or ``tiles`` as its
    flag says; ``sevens`` that read the panel widened into ``ws`` (``from_ws``) have it
    widened first, the others have the block's rows (at most ``MIXED_ROWS``) stored as int8
    steps in ``ws`` with their sums (``pack_rows(mixed=True)``)."""
    c, arg = f.c, f.arg
    most, count = c.local("i32"), c.local("i32")
    # most = max(2, (QBLOCK_BYTES / row_bytes) & ~1), row_bytes = panel_bytes >> 1
    c.emit("i32.const", QBLOCK_BYTES).emit("local.get", f.panel_bytes)
    c.emit("i32.const", PACKED_SHIFT).emit("i32.shr_u").emit("i32.div_u")
    c.emit("i32.const", -2).emit("i32.and").emit("local.tee", most)
    c.emit("i32.const", 2).emit("local.get", most).emit("i32.const", 2).emit("i32.gt_u")
    c.emit("select").emit("local.set", most)
    stored = sevens is not None and not sevens[0][1].from_ws  # A's int8 steps in ws
    if stored:
        c.emit("i32.const", MIXED_ROWS).emit("local.set", most)
    if seven:  # most = min(most, panel_bytes / 4)
        c.emit("local.get", most).emit("local.get", f.panel_bytes).emit("i32.const", 2)
        c.emit("i32.shr_u").emit("local.tee", count).emit("local.get", most)
        c.emit("local.get", count).emit("i32.lt_u").emit("select").emit("local.set", most)
    c.emit("block").emit("loop")
    c.emit("local.get", arg["m"]).emit("i32.eqz").emit("br_if", 1)
    c.emit("local.get", most).emit("local.get", arg["m"]).emit("local.get", most)
    c.emit("local.get", arg["m"]).emit("i32.lt_u").emit("select").emit("local.set", count)
    pack_rows(f, count, seven)
    if stored:
        pack_rows(f, count, seven=True, mixed=True)

    def rows(tiles: list[tuple[int, Tile]], edge: bool) -> None:
        c.emit("i32.const", 0).emit("local.set", i)
        for height, tile in tiles:
            strided_loop(c, i, height, count, partial(tile.emit, edge))

    def panel(edge: bool) -> None:
        if not direct and not f.wide:
            widen_panel(f, j, seven)
        if sevens is None:
            rows(tiles, edge)
            return
        # the panel's flag: flags + (j / QPANEL) * 4
        c.emit("local.get", f.flags).emit("local.get", j).emit("i32.const", 1)
        c.emit("i32.shr_u").emit("i32.add").emit("i32.load", 2, 0).emit("if")
        if not stored:
            widen_seven_panel(f, j)
        rows(sevens, edge)
        c.emit("else")
        rows(tiles, edge)
        c.emit("end")

    c.emit("i32.const", 0).emit("local.set", j)
    strided_loop(c, j, QPANEL, arg["n"], partial(panel, False))
    c.emit("local.get", j).emit("local.get", arg["n"]).emit("i32.lt_u").emit("if")
    panel(True)
    c.emit("end")
    for pointer, size in (("a", arg["k"]), ("c", None)):
        c.emit("local.get", arg[pointer]).emit("local.get", count)
        if size is None:
            c.emit("local.get", arg["n"]).emit("i32.mul")
            if not f.requantize:
                c.emit("i32.const", 2).emit("i32.shl")
        else:
            c.emit("local.get", size).emit("i32.mul")
        c.emit("i32.add").emit("local.set", arg[pointer])
    c.emit("local.get", arg["m"]).emit("local.get", count).emit("i32.sub")
    c.emit("local.set", arg["m"])
    c.emit("br", 0).emit("end").emit("end")
