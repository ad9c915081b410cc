"""The qconv family: the layout steps around the integer conv's qlinear product.

``x8_im2col`` writes the window rows of a quantized NCHW input, one byte per tap, with the
input's zero point standing for padding (so padded taps add nothing once the zero point is
subtracted). Bounds are checked once per kernel row of taps: a row of ``kw`` taps entirely
inside the input is copied with plain loads (``memory.copy`` when the taps are adjacent),
only rows that cross an edge test each tap. ``x{8,32}_transpose`` moves the product's
(pixels, channels) rows to NCHW, one element at a time. The same code serves every ISA: the
product (``templates/qlinear.py``) dominates the time.
"""

from __future__ import annotations

from ..abi import KernelSpec
from ..wasm import Code, FuncType
from .loops import strided_loop


def _tap_row(c: Code, row: int, source: int, target: int, column: int, tap: int) -> None:
    """Write one kernel row of ``kw`` taps at ``target``: ``source`` is the address of the
    first tap's byte (column ``column`` of input row ``row``, which may lie outside x)."""
    c.get(row).get("h").emit("i32.lt_u")
    c.get(column).emit("i32.const", 0).emit("i32.ge_s").emit("i32.and")
    # column + (kw - 1) * dw < w: the last tap is inside too
    c.get("kw").emit("i32.const", 1).emit("i32.sub").get("dw").emit("i32.mul").get(column)
    c.emit("i32.add").get("w").emit("i32.lt_s").emit("i32.and")
    c.emit("if")
    c.get("dw").emit("i32.const", 1).emit("i32.eq").emit("if")
    c.get(target).get(source).get("kw").emit("memory.copy")
    c.emit("else")
    c.emit("i32.const", 0).set(tap)
    strided_loop(c, tap, 1, c.names["kw"], lambda: _copy_tap(c, source, target, tap))
    c.emit("end")
    c.emit("else")
    c.emit("i32.const", 0).set(tap)
    strided_loop(c, tap, 1, c.names["kw"], lambda: _checked_tap(c, row, source, target,
                                                                 column, tap))
    c.emit("end")


def _copy_tap(c: Code, source: int, target: int, tap: int) -> None:
    c.get(target, tap).emit("i32.add")
    c.get(source, tap).get("dw").emit("i32.mul").emit("i32.add").emit("i32.load8_u", 0, 0)
    c.emit("i32.store8", 0, 0)


def _checked_tap(c: Code, row: int, source: int, target: int, column: int, tap: int) -> None:
    c.get(target, tap).emit("i32.add")
    # inside: row < h and 0 <= column + tap * dw < w (unsigned compares catch negatives)
    c.get(row).get("h").emit("i32.lt_u")
    c.get(column, tap).get("dw").emit("i32.mul").emit("i32.add").get("w").emit("i32.lt_u")
    c.emit("i32.and").emit("if", "i32")
    c.get(source, tap).get("dw").emit("i32.mul").emit("i32.add").emit("i32.load8_u", 0, 0)
    c.emit("else").get("zero_point").emit("i32.load8_u", 0, 0).emit("end")
    c.emit("i32.store8", 0, 0)


def _im2col(spec: KernelSpec) -> Code:
    c = Code(spec.param_types, names=[p.split(":")[0] for p in spec.params])
    pixel, channel, kernel_row, tap = (c.local("i32") for _ in range(4))
    y, x, row, column, target, plane, source, pixels, image = (c.local("i32")
                                                              for _ in range(9))
    # pixels = n * oh * ow, each a row of c * kh * kw taps written in order from a
    c.get("n", "oh").emit("i32.mul").get("ow").emit("i32.mul").set(pixels)
    c.get("a").set(target)
    c.emit("i32.const", 0).set(pixel)

    def each_pixel() -> None:
        # image = pixel / (oh * ow); y, x = divmod(pixel % (oh * ow), ow)
        c.get(pixel).get("oh").get("ow").emit("i32.mul").emit("i32.div_u").set(image)
        c.get(pixel).get("ow").emit("i32.div_u").get("oh").emit("i32.rem_u").set(y)
        c.get(pixel).get("ow").emit("i32.rem_u").set(x)
        c.get(x).get("sw").emit("i32.mul").get("pl").emit("i32.sub").set(column)
        c.emit("i32.const", 0).set(channel)

        def each_channel() -> None:
            # plane = x + (image * c + channel) * h * w
            c.get(image).get("c").emit("i32.mul").get(channel).emit("i32.add")
            c.get("h").emit("i32.mul").get("w").emit("i32.mul").get("x").emit("i32.add")
            c.set(plane)
            c.emit("i32.const", 0).set(kernel_row)

            def each_kernel_row() -> None:
                c.get(y).get("sh").emit("i32.mul").get("pt").emit("i32.sub")
                c.get(kernel_row).get("dh").emit("i32.mul").emit("i32.add").set(row)
                c.get(plane).get(row).get("w").emit("i32.mul").emit("i32.add").get(column)
                c.emit("i32.add").set(source)
                _tap_row(c, row, source, target, column, tap)
                c.get(target).get("kw").emit("i32.add").set(target)

            strided_loop(c, kernel_row, 1, c.names["kh"], each_kernel_row)

        strided_loop(c, channel, 1, c.names["c"], each_channel)

    strided_loop(c, pixel, 1, pixels, each_pixel)
    return c


def _transpose(spec: KernelSpec) -> Code:
    c = Code(spec.param_types, names=[p.split(":")[0] for p in spec.params])
    size = 1 if spec.dtypes[0] == "uint8" else 4
    load, store = ("i32.load8_u", "i32.store8") if size == 1 else ("i32.load", "i32.store")
    align = size.bit_length() - 1
    block, i, j, source, target, count = (c.local("i32") for _ in range(6))
    c.get("rows", "cols").emit("i32.mul").set(count)
    c.emit("i32.const", 0).set(block)

    def element() -> None:
        # y[block, j, i] = x[block, i, j]
        c.get(target).get(j).get("rows").emit("i32.mul").get(i).emit("i32.add")
        c.emit("i32.const", size).emit("i32.mul").emit("i32.add")
        c.get(source).get(j).emit("i32.const", size).emit("i32.mul").emit("i32.add")
        c.emit(load, align, 0).emit(store, align, 0)

    def each_row() -> None:
        c.emit("i32.const", 0).set(j)
        strided_loop(c, j, 1, c.names["cols"], element)
        c.get(source).get("cols").emit("i32.const", size).emit("i32.mul").emit("i32.add")
        c.set(source)

    def each_block() -> None:
        c.get(block).get(count).emit("i32.mul").emit("i32.const", size).emit("i32.mul")
        c.tee(source).get("y").emit("i32.add").set(target)
        c.get(source).get("x").emit("i32.add").set(source)
        c.emit("i32.const", 0).set(i)
        strided_loop(c, i, 1, c.names["rows"], each_row)

    strided_loop(c, block, 1, c.names["outer"], each_block)
    return c


def emit(spec: KernelSpec, isa_name: str) -> tuple[FuncType, Code]:
    """Generate qconv kernel ``spec``; the same code for every ISA."""
    code = _im2col(spec) if spec.op == "im2col" else _transpose(spec)
    return FuncType(spec.param_types, spec.results), code
