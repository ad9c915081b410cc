"""The qconv family: the layout steps around the integer conv's qlinear product.

``qu8_im2col`` writes the window rows of a channels-last quantized input: each tap of a
window is a run of ``c`` adjacent bytes, copied 16 at a time (``v128``) with a byte tail,
or filled with the input's zero point where the tap falls in the padding (so padded taps
add nothing once the zero point is subtracted). ``qu8_transpose`` and ``f32_transpose``
move NCHW inputs to channels-last and the product's (pixels, channels) rows back to NCHW:
bytes in 16 x 16 squares of v128 shuffles, the edges and floats one element at a time.
The ``scalar`` ISA copies byte by byte; the product (``templates/qlinear.py``) dominates.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from ..abi import KernelSpec
from ..wasm import Code, FuncType
from .loops import strided_loop


def _run(c: Code, offset: int, wide: Callable[[], object] | None,
         narrow: Callable[[], object]) -> None:
    """``offset`` over the ``c`` bytes of one tap: ``wide`` 16 bytes at a time (None: the
    scalar ISA, no SIMD), then ``narrow`` one at a time."""
    c.emit("i32.const", 0).set(offset)
    for step, body in ((16, wide), (1, narrow)):
        if body is not None:
            strided_loop(c, offset, step, c.names["c"], partial(_discard, body))


def _discard(emit: Callable[[], object]) -> None:
    emit()


def _tap(c: Code, inside: int, source: int, target: int, offset: int,
         zeros: int | None) -> None:
    """One tap's ``c`` bytes at ``target``: copied from ``source`` when ``inside``, else the
    zero point (``zeros``, None without SIMD, holds it in every byte)."""
    def at(base: int | str, load: str) -> Code:
        return c.get(target, offset).emit("i32.add").get(base, offset).emit("i32.add")\
            .emit(load, 0, 0)

    def fill_wide(register: int) -> Code:
        return c.get(target, offset).emit("i32.add").get(register).emit("v128.store", 0, 0)

    c.get(inside).emit("if")
    _run(c, offset, None if zeros is None else lambda: at(source, "v128.load").emit(
        "v128.store", 0, 0), lambda: at(source, "i32.load8_u").emit("i32.store8", 0, 0))
    c.emit("else")
    _run(c, offset, None if zeros is None else partial(fill_wide, zeros),
         lambda: c.get(target, offset).emit("i32.add").get("zero_point")
         .emit("i32.load8_u", 0, 0).emit("i32.store8", 0, 0))
    c.emit("end")


def _im2col(spec: KernelSpec, simd: bool) -> Code:
    c = Code(spec.param_types, names=[p.split(":")[0] for p in spec.params])
    i, j, offset, inside = (c.local("i32") for _ in range(4))
    image, y, x, row, column, target, source = (c.local("i32") for _ in range(7))
    zeros = c.local("v128") if simd else None
    if zeros is not None:
        c.get("zero_point").emit("i32.load8_u", 0, 0).emit("i8x16.splat").set(zeros)
    c.get("a").set(target)

    def each_tap() -> None:
        # column = x * sw - pl + j * dw; inside = row < h and column < w (unsigned)
        c.get(x).get("sw").emit("i32.mul").get("pl").emit("i32.sub").get(j).get("dw")
        c.emit("i32.mul").emit("i32.add").set(column)
        c.get(row).get("h").emit("i32.lt_u").get(column).get("w").emit("i32.lt_u")
        c.emit("i32.and").set(inside)
        # source = x + ((image * h + row) * w + column) * c
        c.get(image).get("h").emit("i32.mul").get(row).emit("i32.add").get("w")
        c.emit("i32.mul").get(column).emit("i32.add").get("c").emit("i32.mul").get("x")
        c.emit("i32.add").set(source)
        _tap(c, inside, source, target, offset, zeros)
        c.get(target).get("c").emit("i32.add").set(target)

    def each_kernel_row() -> None:
        c.get(y).get("sh").emit("i32.mul").get("pt").emit("i32.sub")
        c.get(i).get("dh").emit("i32.mul").emit("i32.add").set(row)
        c.emit("i32.const", 0).set(j)
        strided_loop(c, j, 1, c.names["kw"], each_tap)

    def each_pixel() -> None:
        c.emit("i32.const", 0).set(i)
        strided_loop(c, i, 1, c.names["kh"], each_kernel_row)

    def each_row() -> None:
        c.emit("i32.const", 0).set(x)
        strided_loop(c, x, 1, c.names["ow"], each_pixel)

    def each_image() -> None:
        c.emit("i32.const", 0).set(y)
        strided_loop(c, y, 1, c.names["oh"], each_row)

    c.emit("i32.const", 0).set(image)
    strided_loop(c, image, 1, c.names["n"], each_image)
    return c


LOW = bytes(b for k in range(8) for b in (k, 16 + k))
HIGH = bytes(b for k in range(8, 16) for b in (k, 16 + k))
"""Byte interleaves of two v128 (their low halves, their high halves): four rounds of them
between registers r and r + 8 transpose a 16 x 16 block of bytes (a perfect shuffle)."""


def _square(c: Code, registers: list[int], source: int, target: int, pointer: int) -> None:
    """Transpose the 16 x 16 bytes at ``source`` (row stride ``cols``) to ``target`` (row
    stride ``rows``) through 32 v128 ``registers`` (a round reads 16, writes the others)."""
    c.get(source).set(pointer)
    for register in registers[:16]:
        c.get(pointer).emit("v128.load", 0, 0).set(register)
        c.get(pointer).get("cols").emit("i32.add").set(pointer)
    current, spare = registers[:16], registers[16:]
    for _ in range(4):
        for k in range(8):
            for half, pattern in enumerate((LOW, HIGH)):
                c.get(current[k]).get(current[k + 8]).emit("i8x16.shuffle", pattern)
                c.set(spare[2 * k + half])
        current, spare = spare, current
    c.get(target).set(pointer)
    for register in current:
        c.get(pointer).get(register).emit("v128.store", 0, 0)
        c.get(pointer).get("rows").emit("i32.add").set(pointer)


def _transpose(spec: KernelSpec, simd: bool) -> Code:
    c = Code(spec.param_types, names=[p.split(":")[0] for p in spec.params])
    size = 1 if spec.dtypes[0] == "uint8" else 4
    load, store = ("i32.load8_u", "i32.store8") if size == 1 else ("i32.load", "i32.store")
    align = size.bit_length() - 1
    block, i, j, source, target, count, pointer = (c.local("i32") for _ in range(7))
    rows16, cols16, corner, destination = (c.local("i32") for _ in range(4))
    squares = simd and size == 1
    registers = [c.local("v128") for _ in range(32)] if squares else []
    c.get("rows", "cols").emit("i32.mul").set(count)
    for limit, local in (("rows", rows16), ("cols", cols16)):
        if squares:
            c.get(limit).emit("i32.const", -16).emit("i32.and").set(local)
        else:
            c.emit("i32.const", 0).set(local)
    c.emit("i32.const", 0).set(block)

    def element() -> None:
        # y[block, j, i] = x[block, i, j]
        c.get(target).get(j).get("rows").emit("i32.mul").get(i).emit("i32.add")
        c.emit("i32.const", size).emit("i32.mul").emit("i32.add")
        c.get(source).get(j).emit("i32.const", size).emit("i32.mul").emit("i32.add")
        c.emit(load, align, 0).emit(store, align, 0)

    def each_row() -> None:
        # the columns the 16 x 16 squares left: from cols16 in their rows, all below them
        c.get(cols16).emit("i32.const", 0).get(i).get(rows16).emit("i32.lt_u").emit("select")
        c.set(j)
        strided_loop(c, j, 1, c.names["cols"], element)
        c.get(source).get("cols").emit("i32.const", size).emit("i32.mul").emit("i32.add")
        c.set(source)

    def each_square() -> None:
        # x + i * cols + j -> y + j * rows + i
        c.get(source).get(i).get("cols").emit("i32.mul").emit("i32.add").get(j)
        c.emit("i32.add").set(corner)
        c.get(target).get(j).get("rows").emit("i32.mul").emit("i32.add").get(i)
        c.emit("i32.add").set(destination)
        _square(c, registers, corner, destination, pointer)

    def each_band() -> None:
        c.emit("i32.const", 0).set(j)
        strided_loop(c, j, 16, cols16, each_square)

    def each_block() -> None:
        c.get(block).get(count).emit("i32.mul").emit("i32.const", size).emit("i32.mul")
        c.tee(source).get("y").emit("i32.add").set(target)
        c.get(source).get("x").emit("i32.add").set(source)
        if squares:
            c.emit("i32.const", 0).set(i)
            strided_loop(c, i, 16, rows16, each_band)
        c.emit("i32.const", 0).set(i)
        strided_loop(c, i, 1, c.names["rows"], each_row)

    strided_loop(c, block, 1, c.names["outer"], each_block)
    return c


def emit(spec: KernelSpec, isa_name: str) -> tuple[FuncType, Code]:
    """Generate qconv kernel ``spec`` for ``isa_name`` (``scalar``: no SIMD)."""
    simd = isa_name != "scalar"
    code = _im2col(spec, simd) if spec.op == "im2col" else _transpose(spec, simd)
    return FuncType(spec.param_types, spec.results), code
